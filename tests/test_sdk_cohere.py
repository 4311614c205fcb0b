"""cohere v2 (sync and async clients) through `FixtureTransport`, against the local fake."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import cohere
import httpx
import pytest

from fakeprovider import FakeProvider
from redactkey import FixtureDir, FixtureTransport
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
    return "".join(e.delta.message.content.text for e in events if e.type == "content-delta")


async def _async(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with httpx.AsyncClient(transport=transport) as http:
        client = cohere.AsyncClientV2(api_key=key, base_url=url, httpx_client=http)
        plain = await client.chat(model="command-fake", messages=user_turn(prompt(key, "async")))
        events = [e async for e in client.chat_stream(
            model="command-fake", messages=user_turn(prompt(key, "async stream")))]
    return {"async": plain.message.content[0].text, "async_stream": _streamed(events)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = transport_for(FixtureDir(store), mode, key)
    with httpx.Client(transport=transport) as http:
        client = cohere.ClientV2(api_key=key, base_url=url, httpx_client=http)
        plain = client.chat(model="command-fake", messages=user_turn(prompt(key, "sync")))
        events = list(client.chat_stream(model="command-fake",
                                         messages=user_turn(prompt(key, "sync stream"))))
    out = {"sync": plain.message.content[0].text, "sync_stream": _streamed(events)}
    out.update(asyncio.run(_async(transport, url, key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        client: Any = (
            cohere.AsyncClientV2(api_key=key, base_url=url,
                                 httpx_client=httpx.AsyncClient(transport=transport))
            if is_async
            else cohere.ClientV2(api_key=key, base_url=url,
                                 httpx_client=httpx.Client(transport=transport))
        )
        call = functools.partial(client.chat, model="command-fake",
                                 messages=user_turn("never recorded"))
        found.append(miss_report("cohere-async" if is_async else "cohere", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("cohere"),
                                  fake.url, key_prefix="co-")


class TestCohere(SdkChecks):
    """cohere records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
