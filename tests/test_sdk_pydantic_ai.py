"""pydantic-ai (an OpenAI chat model; async only) through `FixtureTransport`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

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


def _agent(http: httpx2.AsyncClient, url: str, key: str) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=f"{url}/v1", api_key=key, http_client=http)
    return Agent(OpenAIChatModel("gpt-fake", provider=provider))


async def _run(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(transport=transport) as http:
        agent = _agent(http, url, key)
        plain = await agent.run(prompt(key, "run"))
        async with agent.run_stream(prompt(key, "run stream")) as streamed:
            pieces = [piece async for piece in streamed.stream_text(delta=True)]
    return {"run": plain.output, "run_stream": "".join(pieces)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
    return asyncio.run(_run(transport, url, key))


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    transport = counting = counting_transport(store, key)

    async def run() -> Any:
        async with httpx2.AsyncClient(transport=transport) as http:
            return await _agent(http, url, key).run("never recorded")

    return [miss_report("pydantic-ai", counting, run)]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("pydantic_ai"),
                                  fake.url, key_prefix="sk-proj-")


class TestPydanticAI(SdkChecks):
    """pydantic-ai records and replays offline; a miss is MissingFixtureError at once."""


if __name__ == "__main__":
    replay_main(scenarios, misses)
