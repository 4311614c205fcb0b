"""mistralai (one client, sync and async slots) through `FixtureTransport`, against the fake."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mistralai.client import Mistral

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


def _client(url: str, key: str, sync: httpx2.Client, asynchronous: httpx2.AsyncClient) -> Mistral:
    # Both slots: `client` serves the sync methods, `async_client` the *_async ones. A
    # client the caller supplies is the caller's to close.
    return Mistral(api_key=key, server_url=url, client=sync, async_client=asynchronous)


def _streamed(events: Any) -> str:
    return "".join(e.data.choices[0].delta.content or "" for e in events if e.data.choices)


async def _async(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(transport=transport) as http:
        client = _client(url, key, httpx2.Client(transport=transport), http)
        plain = await client.chat.complete_async(model="mistral-fake",
                                                 messages=user_turn(prompt(key, "async")))
        stream = await client.chat.stream_async(model="mistral-fake",
                                                messages=user_turn(prompt(key, "async stream")))
        events = [e async for e in stream]
    return {"async": plain.choices[0].message.content, "async_stream": _streamed(events)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = transport_for(FixtureDir(store), mode, key)
    with httpx2.Client(transport=transport) as http:
        client = _client(url, key, http, httpx2.AsyncClient(transport=transport))
        plain = client.chat.complete(model="mistral-fake", messages=user_turn(prompt(key, "sync")))
        events = list(client.chat.stream(model="mistral-fake",
                                         messages=user_turn(prompt(key, "sync stream"))))
    out = {"sync": plain.choices[0].message.content, "sync_stream": _streamed(events)}
    out.update(asyncio.run(_async(transport, url, key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        client = _client(url, key, httpx2.Client(transport=transport),
                         httpx2.AsyncClient(transport=transport))
        method = client.chat.complete_async if is_async else client.chat.complete
        call = functools.partial(method, model="mistral-fake", messages=user_turn("never recorded"))
        found.append(miss_report("mistral-async" if is_async else "mistral", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("mistral"),
                                  fake.url, key_prefix="")


class TestMistral(SdkChecks):
    """mistralai records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
