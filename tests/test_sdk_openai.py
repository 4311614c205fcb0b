"""openai (sync and async clients) through `FixtureTransport`, against the local fake.

The wider openai scenarios (tools, structured output, responses API, httpx and
httpx2) are in test_transport_sdk.py; this module is openai's row of the SDK matrix.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import httpx2
import openai
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


def _streamed(chunks: list[Any]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


async def _async(client: openai.AsyncOpenAI, key: str) -> dict[str, Any]:
    async with client:
        plain = await client.chat.completions.create(model="gpt-fake",
                                                     messages=user_turn(prompt(key, "async")))
        stream = await client.chat.completions.create(
            model="gpt-fake", stream=True, messages=user_turn(prompt(key, "async stream")))
        chunks = [c async for c in stream]
    return {"async": plain.choices[0].message.content, "async_stream": _streamed(chunks)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = transport_for(FixtureDir(store), mode, key)
    with openai.OpenAI(api_key=key, base_url=f"{url}/v1",
                       http_client=httpx2.Client(transport=transport)) as client:
        plain = client.chat.completions.create(
            model="gpt-fake", messages=user_turn(prompt(key, "s")))
        chunks = list(client.chat.completions.create(
            model="gpt-fake", stream=True, messages=user_turn(prompt(key, "sync stream"))))
    out = {"sync": plain.choices[0].message.content, "sync_stream": _streamed(chunks)}
    out.update(asyncio.run(_async(openai.AsyncOpenAI(
        api_key=key, base_url=f"{url}/v1", http_client=httpx2.AsyncClient(transport=transport)
    ), key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        kwargs: Any = {"api_key": key, "base_url": f"{url}/v1"}
        client: Any = (
            openai.AsyncOpenAI(**kwargs, http_client=httpx2.AsyncClient(transport=transport))
            if is_async
            else openai.OpenAI(**kwargs, http_client=httpx2.Client(transport=transport))
        )
        call = functools.partial(client.chat.completions.create, model="gpt-fake",
                                 messages=user_turn("never recorded"))
        found.append(miss_report("openai-async" if is_async else "openai", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("openai"),
                                  fake.url, key_prefix="sk-proj-")


class TestOpenAI(SdkChecks):
    """openai records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
