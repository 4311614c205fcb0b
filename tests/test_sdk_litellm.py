"""litellm (completion and acompletion with an openai client) through `FixtureTransport`.

litellm turns every failure into its own exception: a miss arrives as
`litellm.InternalServerError`, whose message holds the miss text and whose
`__context__` chain holds the `MissingFixtureError` (docs/clients.md).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

# litellm fetches a model price list from the internet on import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import httpx2
import litellm
import openai
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

# litellm's own code, under the pydantic of the test extra: models over TypedDicts with
# ReadOnly items, and `model_computed_fields` read from an instance while streaming.
pytestmark = [
    # litellm is slow to import (seconds) and wraps the openai SDK, whose row
    # (test_sdk_openai.py) runs everywhere: this row runs in CI.
    pytest.mark.slow,
    pytest.mark.filterwarnings(
        "ignore:Items? .* on TypedDict class .* using the `ReadOnly` qualifier:UserWarning"
    ),
    pytest.mark.filterwarnings(
        "ignore:Accessing the 'model_(computed_)?fields' attribute on the instance is deprecated"
        ":pydantic.warnings.PydanticDeprecatedSince211"
    ),
]


def _streamed(chunks: list[Any]) -> str:
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


async def _async(transport: FixtureTransport, url: str, key: str) -> dict[str, Any]:
    async with openai.AsyncOpenAI(api_key=key, base_url=f"{url}/v1",
                                  http_client=httpx2.AsyncClient(transport=transport)) as client:
        kwargs: Any = {"model": "openai/gpt-fake", "client": client}
        plain = await litellm.acompletion(messages=user_turn(prompt(key, "async")), **kwargs)
        stream = await litellm.acompletion(messages=user_turn(prompt(key, "async stream")),
                                           stream=True, **kwargs)
        chunks = [c async for c in stream]
    return {"async": plain.choices[0].message.content, "async_stream": _streamed(chunks)}


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
    with openai.OpenAI(api_key=key, base_url=f"{url}/v1",
                       http_client=httpx2.Client(transport=transport)) as client:
        kwargs: Any = {"model": "openai/gpt-fake", "client": client}
        plain = litellm.completion(messages=user_turn(prompt(key, "sync")), **kwargs)
        chunks = list(litellm.completion(messages=user_turn(prompt(key, "sync stream")),
                                         stream=True, **kwargs))
    out = {"sync": plain.choices[0].message.content, "sync_stream": _streamed(chunks)}
    out.update(asyncio.run(_async(transport, url, key)))
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
        complete: Any = litellm.acompletion if is_async else litellm.completion
        found.append(miss_report("litellm-async" if is_async else "litellm", counting,
                                 lambda c=client, f=complete: f(
                                     model="openai/gpt-fake", client=c,
                                     messages=user_turn("never recorded"))))
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    with FakeProvider() as fake:
        return record_then_replay(__file__, scenarios, tmp_path_factory.mktemp("litellm"),
                                  fake.url, key_prefix="sk-proj-",
                                  env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"})


class TestLitellm(SdkChecks):
    """litellm records and replays offline; a miss is litellm's InternalServerError holding
    the MissingFixtureError, after one attempt."""

    min_files = 4
    miss_raises = ("litellm.InternalServerError",)


if __name__ == "__main__":
    replay_main(scenarios, misses)
