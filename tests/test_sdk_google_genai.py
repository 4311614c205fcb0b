"""google-genai (one client, sync and async slots) through `FixtureTransport`.

google-genai asks for a stream with ``?alt=sse``; its async client switches to aiohttp
when aiohttp is installed, unless `httpx_async_client` is given, so both slots are
filled.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

from fakeprovider import FakeProvider
from redactkey import FixtureDir, FixtureTransport
from sdk_matrix import (
    Recording,
    SdkChecks,
    counting_transport,
    miss_report,
    prompt,
    record_then_replay,
    redactor_for,
    replay_main,
)


def _client(url: str, key: str, sync: httpx.Client, asynchronous: httpx.AsyncClient) -> Any:
    options = types.HttpOptions(base_url=url, api_version="v1beta", httpx_client=sync,
                                httpx_async_client=asynchronous)
    return genai.Client(api_key=key, http_options=options)


async def _async(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with httpx.AsyncClient(transport=transport) as http:
        client = _client(url, key, httpx.Client(transport=transport), http)
        plain = await client.aio.models.generate_content(model="gemini-fake",
                                                         contents=prompt(key, "async"))
        stream = await client.aio.models.generate_content_stream(
            model="gemini-fake", contents=prompt(key, "async stream"))
        pieces = [chunk.text async for chunk in stream]
    return {"async": plain.text, "async_stream": "".join(p or "" for p in pieces)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
    with httpx.Client(transport=transport) as http:
        client = _client(url, key, http, httpx.AsyncClient(transport=transport))
        plain = client.models.generate_content(model="gemini-fake", contents=prompt(key, "sync"))
        pieces = [chunk.text for chunk in client.models.generate_content_stream(
            model="gemini-fake", contents=prompt(key, "sync stream"))]
    out = {"sync": plain.text, "sync_stream": "".join(p or "" for p in pieces)}
    out.update(asyncio.run(_async(transport, url, key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        client = _client(url, key, httpx.Client(transport=transport),
                         httpx.AsyncClient(transport=transport))
        models = client.aio.models if is_async else client.models
        call = functools.partial(models.generate_content, model="gemini-fake",
                                 contents="never recorded")
        found.append(miss_report("genai-async" if is_async else "genai", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("genai"),
                                  fake.url, key_prefix="AIza")


class TestGoogleGenai(SdkChecks):
    """google-genai records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
