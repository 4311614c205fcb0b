"""`redactkey.clients`: SDK clients built with every HTTP slot on one transport."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest

from fakeprovider import FakeProvider
from redactkey import FixtureDir, FixtureTransport, MissingFixtureError, UsageError, clients

KEY = "sk-test-" + "x1" * 10
MESSAGES: Any = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeProvider() as provider:
        yield provider


def _files(path: Path) -> int:
    return len(list(path.glob("http.*.json")))


class TestPairs:
    """Sync and async clients over one transport: both record, both replay."""

    def test_openai_pair_records_and_replays_both(self, fake: FakeProvider, tmp_path: Path) -> None:
        """The async client of the pair records too; replay serves both without the fake."""
        answers = []
        for mode in ("record", "replay"):
            sync, asynchronous = clients.openai(FixtureDir(tmp_path), mode=mode, api_key=KEY,
                                                base_url=f"{fake.url}/v1")

            async def run(client: Any = asynchronous) -> Any:
                async with client:
                    return await client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "async"}])

            with sync:
                answers.append(sync.chat.completions.create(model="m", messages=MESSAGES)
                               .choices[0].message.content)
            answers.append(asyncio.run(run()).choices[0].message.content)
        assert answers[:2] == answers[2:]
        assert _files(tmp_path) == 2

    def test_a_ready_transport_is_used_as_it_is(self, tmp_path: Path) -> None:
        """Passing the plugin's transport (or any FixtureTransport) shares it."""
        transport = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        sync, asynchronous = clients.http_clients(transport)
        assert isinstance(sync, httpx2.Client)
        assert isinstance(asynchronous, httpx2.AsyncClient)
        with sync, pytest.raises(MissingFixtureError):
            sync.get("https://api.example.test/")

    def test_mode_with_a_transport_is_refused(self, tmp_path: Path) -> None:
        """Settings belong to the transport once it is built."""
        transport = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        with pytest.raises(UsageError, match="when building the FixtureTransport"):
            clients.openai(transport, mode="record", api_key=KEY)

    def test_unknown_library_is_refused(self, tmp_path: Path) -> None:
        """Only httpx and httpx2 have clients to build."""
        with pytest.raises(UsageError, match="'httpx' or 'httpx2'"):
            clients.http_clients(FixtureDir(tmp_path), library="requests")


class TestOneClientBothSlots:
    """SDKs with one client and two slots get both filled."""

    @pytest.mark.parametrize("sdk", ["mistral", "langchain_openai", "google_genai"])
    def test_async_calls_replay(self, fake: FakeProvider, tmp_path: Path, sdk: str) -> None:
        """An async call recorded through the helper's client replays with no server."""
        for mode in ("record", "replay"):
            transport = FixtureTransport(FixtureDir(tmp_path), mode=mode)  # type: ignore[arg-type]
            if sdk == "mistral":
                client = clients.mistral(transport, api_key=KEY, server_url=fake.url)
                call = client.chat.complete_async(model="m", messages=MESSAGES)
            elif sdk == "langchain_openai":
                client = clients.langchain_openai(transport, model="m", api_key=KEY,
                                                  base_url=f"{fake.url}/v1")
                call = client.ainvoke("hello")
            else:
                client = clients.google_genai(transport, api_key=KEY,
                                              http_options={"base_url": fake.url,
                                                            "api_version": "v1beta"})
                call = client.aio.models.generate_content(model="m", contents="hello")

            async def go(call: Any = call, transport: FixtureTransport = transport) -> Any:
                try:
                    return await call
                finally:
                    await transport.aclose()  # the pools of this loop

            assert asyncio.run(go()) is not None
        assert _files(tmp_path) == 1

    @pytest.mark.parametrize("sdk", ["anthropic", "groq", "cohere"])
    def test_pairs_of_other_sdks_use_the_transport(self, tmp_path: Path, sdk: str) -> None:
        """Each client of the pair reaches the transport: in replay, a miss."""
        sync, asynchronous = getattr(clients, sdk)(FixtureDir(tmp_path), mode="replay",
                                                   api_key=KEY, base_url="http://127.0.0.1:9")
        calls = {
            "anthropic": lambda: sync.messages.create(model="m", max_tokens=5, messages=MESSAGES),
            "groq": lambda: sync.chat.completions.create(model="m", messages=MESSAGES),
            "cohere": lambda: sync.chat(model="m", messages=MESSAGES),
        }
        with pytest.raises(MissingFixtureError):
            calls[sdk]()
        assert asynchronous is not None
