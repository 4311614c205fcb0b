"""langchain-openai's ChatOpenAI (both slots of one model) through `FixtureTransport`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from langchain_openai import ChatOpenAI

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

# langchain-openai wraps the openai SDK, whose row (test_sdk_openai.py) runs everywhere;
# this row is slow to import and record: it runs in CI.
pytestmark = pytest.mark.slow


def _model(transport: FixtureTransport, url: str, key: str, *, sync: Any = None,
           asynchronous: Any = None) -> ChatOpenAI:
    # Both slots: `http_client` serves invoke/stream, `http_async_client` ainvoke/astream.
    return ChatOpenAI(
        model="gpt-fake", api_key=key, base_url=f"{url}/v1",  # type: ignore[arg-type]
        http_client=sync or httpx2.Client(transport=transport),
        http_async_client=asynchronous or httpx2.AsyncClient(transport=transport),
    )


async def _async(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(transport=transport) as http:
        model = _model(transport, url, key, asynchronous=http)
        plain = await model.ainvoke(prompt(key, "async"))
        chunks = [c.content async for c in model.astream(prompt(key, "async stream"))]
    return {"async": plain.content, "async_stream": "".join(map(str, chunks))}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
    with httpx2.Client(transport=transport) as http:
        model = _model(transport, url, key, sync=http)
        plain = model.invoke(prompt(key, "sync"))
        chunks = [c.content for c in model.stream(prompt(key, "sync stream"))]
    out = {"sync": plain.content, "sync_stream": "".join(map(str, chunks))}
    out.update(asyncio.run(_async(transport, url, key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        model = _model(transport, url, key)
        model.max_retries = 2  # the default: the miss must not be retried anyway
        call: Any = (lambda m=model: m.ainvoke("never recorded")) if is_async else (
            lambda m=model: m.invoke("never recorded"))
        found.append(miss_report("langchain-async" if is_async else "langchain", counting, call))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("langchain"),
                                  fake.url, key_prefix="sk-proj-")


class TestLangchainOpenAI(SdkChecks):
    """ChatOpenAI records and replays offline; a miss is MissingFixtureError at once."""

    min_files = 4


if __name__ == "__main__":
    replay_main(scenarios, misses)
