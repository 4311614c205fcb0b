"""anthropic (sync and async clients) through `FixtureTransport`, against the local fake.

The wider anthropic scenarios (tools, structured output, the stream helper) are in
test_transport_sdk.py; this module is anthropic's row of the SDK matrix.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from fakeprovider import FakeProvider
from redactkey import FixtureDir
from sdk_matrix import (
    Recording,
    SdkChecks,
    counting_transport,
    miss_report,
    prompt,
    record_then_replay,
    replay_main,
    transport_for,
    user_turn,
)


def _streamed(events: list[Any]) -> str:
    return "".join(e.delta.text for e in events if e.type == "content_block_delta")


async def _async(client: anthropic.AsyncAnthropic, key: str) -> dict[str, Any]:
    async with client:
        plain = await client.messages.create(model="claude-fake", max_tokens=64,
                                             messages=user_turn(prompt(key, "async")))
        stream = await client.messages.create(model="claude-fake", max_tokens=64, stream=True,
                                              messages=user_turn(prompt(key, "async stream")))
        events = [e async for e in stream]
    return {"async": plain.content[0].text, "async_stream": _streamed(events)}  # type: ignore[union-attr]


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = transport_for(FixtureDir(store), mode, key)
    with anthropic.Anthropic(api_key=key, base_url=url,
                             http_client=httpx2.Client(transport=transport)) as client:
        plain = client.messages.create(model="claude-fake", max_tokens=64,
                                       messages=user_turn(prompt(key, "sync")))
        events = list(client.messages.create(model="claude-fake", max_tokens=64, stream=True,
                                             messages=user_turn(prompt(key, "sync stream"))))
    out = {"sync": plain.content[0].text, "sync_stream": _streamed(events)}  # type: ignore[union-attr]
    out.update(asyncio.run(_async(anthropic.AsyncAnthropic(
        api_key=key, base_url=url, http_client=httpx2.AsyncClient(transport=transport)
    ), key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        client: Any = (
            anthropic.AsyncAnthropic(api_key=key, base_url=url,
                                     http_client=httpx2.AsyncClient(transport=transport))
            if is_async
            else anthropic.Anthropic(api_key=key, base_url=url,
                                     http_client=httpx2.Client(transport=transport))
        )
        call = functools.partial(client.messages.create, model="claude-fake", max_tokens=5,
                                 messages=user_turn("never recorded"))
        found.append(miss_report("anthropic-async" if is_async else "anthropic", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("anthropic"),
                                  fake.url, key_prefix="sk-ant-api03-")


class TestAnthropic(SdkChecks):
    """anthropic records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
