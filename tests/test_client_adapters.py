"""RequestsAdapter, aiohttp_session and FixtureTransport beyond the shared scenario.

Streams recognised by what the provider does (NDJSON without a stream flag, `?alt=sse`
with `Accept: */*`), passed on as they arrive while recording; one fixture tree served
to every client; aiohttp `json=` bodies through vcrpy; imports stay light.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests
import vcr
from requests.adapters import HTTPAdapter

from client_scenarios import (
    as_replayed,
    calls,
    chat_body,
    headers_for,
    planted_key,
    redactor_for,
)
from fakeprovider import FakeProvider
from redactkey import (
    FixtureDir,
    FixtureTransport,
    MissingFixtureError,
    Redactor,
    RequestsAdapter,
    UsageError,
    aiohttp_session,
    use_redactkey,
)


def _lines(
    client: str, store: Path, mode: str, url: str, body: dict[str, Any],
    headers: dict[str, str], key: str, arrived: threading.Event | None = None,
) -> list[str]:
    """POST `body`, read the answer line by line; `arrived` is set at the first line."""
    redactor = redactor_for(key)
    first = arrived or threading.Event()

    def seen(lines: Iterator[str]) -> list[str]:
        out = []
        for line in lines:
            if line.strip():
                first.set()
                out.append(line.strip())
        return out

    if client == "requests":
        with requests.Session() as session:
            session.mount("http://", RequestsAdapter(FixtureDir(store), mode=mode,  # type: ignore[arg-type]
                                                     redactor=redactor))
            with session.post(url, json=body, headers=headers, stream=True) as response:
                lines = seen(line.decode() for line in response.iter_lines())
    elif client == "httpx":
        transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor)  # type: ignore[arg-type]
        with httpx.Client(transport=transport) as client_, client_.stream(
            "POST", url, json=body, headers=headers
        ) as response:
            lines = seen(response.iter_lines())
    else:
        async def run() -> list[str]:
            session = aiohttp_session(FixtureDir(store), mode=mode, redactor=redactor)  # type: ignore[arg-type]
            async with session, session.post(url, json=body, headers=headers) as response:
                out = []
                async for line in response.content:
                    if line.strip():
                        first.set()
                        out.append(line.decode().strip())
                return out

        lines = asyncio.run(run())
    return lines


def _fixture(store: Path) -> dict[str, Any]:
    (path,) = store.iterdir()
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


CLIENTS = ["requests", "httpx", "aiohttp"]


class TestStreamsByWhatTheProviderDoes:
    """A stream is a stream because the provider streams, whatever the request said."""

    @pytest.mark.parametrize("client", CLIENTS)
    def test_ndjson_without_a_stream_flag(self, tmp_path: Path, client: str) -> None:
        """Ollama streams NDJSON by default: stored line by line, replayed line for line,
        a key split across lines redacted once."""
        key = planted_key()
        body = {"model": "llama-fake", "messages": [{"role": "user", "content": f"ECHO:{key}"}]}
        with FakeProvider(hold_last=threading.Event()) as fake:
            assert fake.hold_last is not None
            recorded = _lines(client, tmp_path, "record", f"{fake.url}/api/chat", body, {},
                              key, fake.hold_last)
            url = fake.url
        # the first line was passed on before the last was sent (which waited for it)
        assert not fake.held_too_long
        chunks = _fixture(tmp_path)["chunks"]
        assert chunks[0]["headers"]["content-type"] == "application/x-ndjson"
        assert len(chunks) == 1 + len(recorded)
        other = planted_key()
        body["messages"][0]["content"] = f"ECHO:{other}"
        replayed = _lines(client, tmp_path, "replay", f"{url}/api/chat", body, {}, other)
        text = "".join(json.loads(line)["message"]["content"] for line in replayed)
        assert text == "Your token is [REDACTED] as requested."
        assert len(replayed) == len(recorded)
        assert json.loads(replayed[-1]) == json.loads(recorded[-1])

    @pytest.mark.parametrize("client", CLIENTS)
    def test_alt_sse_with_accept_any(self, tmp_path: Path, client: str) -> None:
        """google-genai asks `?alt=sse` with `Accept: */*`: passed on as it arrives, stored
        as events."""
        key = planted_key()
        body = {"contents": [{"role": "user", "parts": [{"text": f"ECHO:{key}"}]}]}
        path = "/v1beta/models/gemini-fake:streamGenerateContent?alt=sse"
        with FakeProvider(hold_last=threading.Event()) as fake:
            assert fake.hold_last is not None
            recorded = _lines(client, tmp_path, "record", fake.url + path, body,
                              {"accept": "*/*"}, key, fake.hold_last)
            url = fake.url
        assert not fake.held_too_long
        fixture = _fixture(tmp_path)
        assert fixture["chunks"][0]["headers"]["content-type"].startswith("text/event-stream")
        assert all("json" in event for event in fixture["chunks"][1:])
        replayed = _lines(client, tmp_path, "replay", url + path, body, {"accept": "*/*"}, key)
        assert len(replayed) == len(recorded)

    def test_undeclared_stream_with_a_credential_learned_from_the_request(
        self, tmp_path: Path
    ) -> None:
        """A token sent only as `x-api-key` and echoed in an NDJSON stream: replay with
        another token finds the stream (the key is computed as the call computes it)."""
        def ask(mode: str, token: str, url: str) -> list[str]:
            body = {"model": "llama-fake",
                    "messages": [{"role": "user", "content": f"ECHO:{token}"}]}
            transport = FixtureTransport(FixtureDir(tmp_path), mode=mode,  # type: ignore[arg-type]
                                         redactor=Redactor())
            with httpx.Client(transport=transport) as client, client.stream(
                "POST", f"{url}/api/chat", json=body, headers={"x-api-key": token}
            ) as response:
                return [line for line in response.iter_lines() if line]

        token = "tooltok-" + secrets.token_hex(12)
        with FakeProvider() as fake:
            recorded = ask("record", token, fake.url)
            url = fake.url
        replayed = ask("replay", "tooltok-" + secrets.token_hex(12), url)
        assert len(replayed) == len(recorded)
        text = "".join(json.loads(line)["message"]["content"] for line in replayed)
        assert text == "Your token is [REDACTED] as requested."

    def test_a_whole_answer_stays_whole(self, tmp_path: Path) -> None:
        """A JSON answer to a request that asked for no stream is stored as one answer."""
        key = planted_key()
        with FakeProvider() as fake:
            calls("requests", mode="record", store=tmp_path, url=fake.url, key=key)
        outcomes = sorted("answer" if "answer" in json.loads(p.read_text()) else "chunks"
                          for p in tmp_path.iterdir())
        assert outcomes == ["answer", "chunks"]


def test_replayed_deltas_join_to_the_final_answer(tmp_path: Path) -> None:
    """A key split across Responses-API deltas: replayed, the deltas joined equal the
    whole text the same stream carries at its end (`output_text.done`, `completed`)."""
    key = planted_key()
    body = {"model": "gpt-fake", "stream": True, "input": f"say ECHO:{key}"}

    def events(mode: str, secret: str, url: str) -> list[dict[str, Any]]:
        transport = FixtureTransport(FixtureDir(tmp_path), mode=mode,  # type: ignore[arg-type]
                                     redactor=redactor_for(secret))
        sent = {**body, "input": f"say ECHO:{secret}"}
        with httpx.Client(transport=transport) as client, client.stream(
            "POST", f"{url}/v1/responses", json=sent, headers=headers_for(secret)
        ) as response:
            return [json.loads(line[5:]) for line in response.iter_lines()
                    if line.startswith("data:")]

    with FakeProvider(delta_size=3) as fake:
        events("record", key, fake.url)
        url = fake.url
    replayed = events("replay", planted_key(), url)
    deltas = "".join(e["delta"] for e in replayed if e["type"] == "response.output_text.delta")
    (done,) = [e["text"] for e in replayed if e["type"] == "response.output_text.done"]
    (completed,) = [e["response"]["output"][0]["content"][0]["text"] for e in replayed
                    if e["type"] == "response.completed"]
    assert deltas == done == completed == "Your token is [REDACTED] as requested."


@pytest.mark.parametrize(
    ("recorder", "replayer"),
    [("requests", "httpx"), ("httpx", "requests"), ("httpx2", "aiohttp"), ("aiohttp", "httpx2")],
)
def test_one_tree_serves_every_client(tmp_path: Path, recorder: str, replayer: str) -> None:
    """What one client recorded, another replays: the same request is the same fixture."""
    key = planted_key()
    with FakeProvider() as fake:
        recorded = calls(recorder, mode="record", store=tmp_path, url=fake.url, key=key)
        url = fake.url
    other = planted_key()
    replayed = calls(replayer, mode="replay", store=tmp_path, url=url, key=other)
    assert as_replayed(replayed, other) == as_replayed(recorded, key)


class TestRequestsAdapter:
    """What is particular to the requests adapter."""

    def test_live_calls_go_through_the_inner_adapter(self, tmp_path: Path) -> None:
        """`inner=` sends the live calls (retries, pools); replay never calls it."""
        sent: list[str] = []

        class Counting(HTTPAdapter):
            def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
                sent.append(str(request.url))
                return super().send(request, *args, **kwargs)

        key = planted_key()
        with FakeProvider() as fake, requests.Session() as session:
            adapter = RequestsAdapter(FixtureDir(tmp_path), mode="auto", inner=Counting(),
                                      redactor=redactor_for(key))
            session.mount("http://", adapter)
            endpoint = f"{fake.url}/v1/chat/completions"
            first = session.post(endpoint, json=chat_body(key, "x"), headers=headers_for(key))
            again = session.post(endpoint, json=chat_body(key, "x"), headers=headers_for(key))
        assert len(sent) == 1
        assert again.json() == json.loads(json.dumps(first.json()).replace(key, "[REDACTED]"))
        assert again.status_code == 200
        assert again.headers["content-type"] == "application/json"

    def test_iter_content_reads_a_replayed_stream_in_any_size(self, tmp_path: Path) -> None:
        """`iter_content(n)` hands out pieces of at most n bytes that join to the stream."""
        key = planted_key()
        with FakeProvider() as fake:
            calls("requests", mode="record", store=tmp_path, url=fake.url, key=key)
            url = fake.url
        with requests.Session() as session:
            session.mount("http://", RequestsAdapter(FixtureDir(tmp_path), mode="replay",
                                                     redactor=redactor_for(key)))
            endpoint = f"{url}/v1/chat/completions"
            body = chat_body(key, "streamed", stream=True)
            with session.post(endpoint, json=body, stream=True) as response:
                pieces = list(response.iter_content(chunk_size=7))
            whole = session.post(endpoint, json=body).content
        assert max(len(p) for p in pieces) <= 7
        assert b"".join(pieces) == whole
        assert whole.count(b"data: ") > 10

    def test_miss_names_the_call(self, tmp_path: Path) -> None:
        """A replay miss through a session is MissingFixtureError naming method and URL."""
        with requests.Session() as session:
            session.mount("https://", RequestsAdapter(FixtureDir(tmp_path), mode="replay"))
            with pytest.raises(MissingFixtureError, match=r"GET https://api\.example\.test/v1"):
                session.get("https://api.example.test/v1/items")


class TestAiohttpSession:
    """What is particular to the aiohttp session."""

    def test_a_connector_is_refused_with_the_way_out(self, tmp_path: Path) -> None:
        """The session makes its own connector; passing one says how to pass its settings."""
        async def build() -> None:
            async with aiohttp.TCPConnector() as connector:
                aiohttp_session(FixtureDir(tmp_path), mode="replay", connector=connector)

        with pytest.raises(UsageError, match="connector_options"):
            asyncio.run(build())

    def test_replayed_response_is_a_real_client_response(self, tmp_path: Path) -> None:
        """raise_for_status, status, headers and text work on a replayed response."""
        key = planted_key()
        with FakeProvider() as fake:
            calls("aiohttp", mode="record", store=tmp_path, url=fake.url, key=key)
            url = fake.url

        async def replay() -> tuple[int, str, str]:
            session = aiohttp_session(FixtureDir(tmp_path), mode="replay",
                                      redactor=redactor_for(key))
            async with session, session.post(f"{url}/v1/chat/completions",
                                             json=chat_body(key, "plain")) as response:
                response.raise_for_status()
                assert isinstance(response, aiohttp.ClientResponse)
                return response.status, response.content_type, await response.text()

        status, content_type, text = asyncio.run(replay())
        assert (status, content_type) == (200, "application/json")
        assert "[REDACTED]" in text


def test_vcrpy_records_aiohttp_json_bodies(tmp_path: Path) -> None:
    """`use_redactkey` keys and redacts an aiohttp request sent with `json=`."""
    cassette = str(tmp_path / "chat.yaml")

    async def ask(url: str, key: str) -> str:
        async with aiohttp.ClientSession() as session, session.post(
            f"{url}/v1/chat/completions", json=chat_body(key, "vcr"), headers=headers_for(key)
        ) as response:
            answer: str = (await response.json())["choices"][0]["message"]["content"]
            return answer

    key = planted_key()
    with FakeProvider() as fake:
        with use_redactkey(vcr.VCR(), redactor_for(key)).use_cassette(cassette):
            recorded = asyncio.run(ask(fake.url, key))
        url = fake.url
    other = planted_key()
    with use_redactkey(vcr.VCR(record_mode="none"), redactor_for(other)).use_cassette(cassette):
        replayed = asyncio.run(ask(url, other))
    assert replayed == recorded.replace(key, "[REDACTED]")
    text = Path(cassette).read_text(encoding="utf-8")
    assert [key[i : i + 8] for i in range(len(key) - 7) if key[i : i + 8] in text] == []


def test_import_redactkey_does_not_load_aiohttp() -> None:
    """The aiohttp adapter loads aiohttp only when it is used. (requests is loaded anyway:
    detect-secrets, a dependency of redactkey, imports it.)"""
    probe = ("import json, sys, redactkey; redactkey.FixtureDir; "
             "print(json.dumps('aiohttp' in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=60)
    assert json.loads(result.stdout) is False
