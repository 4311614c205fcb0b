"""instructor over openai (sync and async clients) through `FixtureTransport`.

instructor wraps every failure of a call in `InstructorRetryException`; a miss arrives
as that, after one attempt, with the `MissingFixtureError` as its `__cause__`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import instructor
import openai
import pydantic
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
    redactor_for,
    replay_main,
    user_turn,
)

# instructor wraps the openai SDK, whose row (test_sdk_openai.py) runs everywhere;
# this row is slow to import and record: it runs in CI.
pytestmark = pytest.mark.slow


class Echo(pydantic.BaseModel):
    text: str


async def _async(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with openai.AsyncOpenAI(api_key=key, base_url=f"{url}/v1",
                                  http_client=httpx2.AsyncClient(transport=transport)) as raw:
        client = instructor.from_openai(raw)
        plain = await client.chat.completions.create(
            model="gpt-fake", response_model=Echo, messages=user_turn(prompt(key, "async")))
        partials = [p async for p in client.chat.completions.create_partial(
            model="gpt-fake", response_model=Echo, messages=user_turn(prompt(key, "async stream")))]
    return {"async": plain.text, "async_stream": partials[-1].text}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
    with openai.OpenAI(api_key=key, base_url=f"{url}/v1",
                       http_client=httpx2.Client(transport=transport)) as raw:
        client = instructor.from_openai(raw)
        plain = client.chat.completions.create(
            model="gpt-fake", response_model=Echo, messages=user_turn(prompt(key, "sync")))
        partials = list(client.chat.completions.create_partial(
            model="gpt-fake", response_model=Echo, messages=user_turn(prompt(key, "sync stream"))))
    out = {"sync": plain.text, "sync_stream": partials[-1].text}
    out.update(asyncio.run(_async(transport, url, key)))
    return out


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for is_async in (False, True):
        transport = counting = counting_transport(store, key)
        kwargs: Any = {"api_key": key, "base_url": f"{url}/v1"}
        raw: Any = (
            openai.AsyncOpenAI(**kwargs, http_client=httpx2.AsyncClient(transport=transport))
            if is_async
            else openai.OpenAI(**kwargs, http_client=httpx2.Client(transport=transport))
        )
        client = instructor.from_openai(raw)
        found.append(miss_report(
            "instructor-async" if is_async else "instructor", counting,
            lambda c=client: c.chat.completions.create(
                model="gpt-fake", response_model=Echo, messages=user_turn("never recorded"))))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("instructor"),
                                  fake.url, key_prefix="sk-proj-")


class TestInstructor(SdkChecks):
    """instructor records and replays offline; a miss is InstructorRetryException caused by
    the MissingFixtureError, after one attempt."""

    min_files = 4
    miss_raises = ("instructor.InstructorRetryException",)

    def test_the_miss_is_the_cause(self, recording: Recording) -> None:
        """The wrapper's __cause__ is the MissingFixtureError itself."""
        assert all(m["cause_is_missing_fixture"] for m in recording.replayed["misses"])


if __name__ == "__main__":
    replay_main(scenarios, misses)
