"""groq (sync and async clients) through `FixtureTransport`, against the local fake provider.

groq's client retries every exception of its HTTP client as a connection error; a
replay miss still reaches the caller as `MissingFixtureError`, after one attempt
(docs/decisions/0031).
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import groq
import httpx
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
)


def _text(chunks: list[Any]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


async def _async(client: groq.AsyncGroq, key: str) -> dict[str, Any]:
    async with client:
        plain = await client.chat.completions.create(
            model="llama-fake", messages=[{"role": "user", "content": prompt(key, "async")}])
        stream = await client.chat.completions.create(
            model="llama-fake", stream=True,
            messages=[{"role": "user", "content": prompt(key, "async stream")}])
        chunks = [c async for c in stream]
    return {"async": plain.choices[0].message.content, "async_stream": _text(chunks)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = transport_for(FixtureDir(store), mode, key)
    with groq.Groq(api_key=key, base_url=url,
                   http_client=httpx.Client(transport=transport)) as client:
        plain = client.chat.completions.create(
            model="llama-fake", messages=[{"role": "user", "content": prompt(key, "sync")}])
        chunks = list(client.chat.completions.create(
            model="llama-fake", stream=True,
            messages=[{"role": "user", "content": prompt(key, "sync stream")}]))
    out = {"sync": plain.choices[0].message.content, "sync_stream": _text(chunks)}
    aclient = groq.AsyncGroq(api_key=key, base_url=url,
                             http_client=httpx.AsyncClient(transport=transport))
    out.update(asyncio.run(_async(aclient, key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    messages: Any = [{"role": "user", "content": "never recorded"}]
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        client: Any = (
            groq.AsyncGroq(api_key=key, base_url=url,
                           http_client=httpx.AsyncClient(transport=transport))
            if is_async
            else groq.Groq(api_key=key, base_url=url, http_client=httpx.Client(transport=transport))
        )
        call = functools.partial(client.chat.completions.create, model="llama-fake",
                                 messages=messages)
        found.append(miss_report("groq-async" if is_async else "groq", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("groq"),
                                  fake.url, key_prefix="gsk_")


class TestGroq(SdkChecks):
    """groq records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
