"""FixtureTransport with the real openai and anthropic SDKs against the local fake provider.

One recording (every scenario of tests/sdk_scenarios.py through httpx2 and httpx
clients, sync and async) is replayed in a fresh process that has no network and
other API keys; the tests below compare the two runs and read the fixture files.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# httpx imports httpcore lazily and caches httpcore's exception classes on first use. If
# that first use happens inside a pytester in-process run, pytester drops httpcore from
# sys.modules afterwards, and a later fresh import no longer matches httpx's cache (a raw
# httpcore.ConnectError escapes). Importing it at collection keeps one httpcore.
import httpcore  # noqa: F401
import httpx
import httpx2
import openai
import pytest

from conftest import ROOT
from fakeprovider import FakeProvider
from redactkey import (
    FixtureDir,
    FixtureFormatError,
    FixtureTransport,
    MissingFixtureError,
    UsageError,
)
from redactkey.fixtures import _store
from sdk_scenarios import FLAVOURS, redactor_for, run

PLACEHOLDER = "[REDACTED]"
# Distinct calls per flavour: 9 through openai; 5 through anthropic (httpx2) or 2 raw (httpx).
CALLS = {"openai": 9, "httpx2": 9 + 5, "httpx": 9 + 2}


@dataclass(frozen=True)
class Recording:
    store: Path
    keys: dict[str, str]
    token: str
    leaks: list[str]
    recorded: dict[str, Any]
    replayed: dict[str, Any]
    rate_limited: int
    url: str


def _keys() -> dict[str, str]:
    return {
        "openai": "sk-proj-" + secrets.token_hex(4) + "A1b2" * 12,
        "anthropic": "sk-ant-api03-" + secrets.token_hex(4) + "Z9y8" * 20,
    }


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """Record everything live, then replay it in a fresh, network-less process."""
    store = tmp_path_factory.mktemp("fixtures")
    keys = _keys()
    token = "tooltok-" + secrets.token_hex(10)
    with FakeProvider() as fake:
        recorded = run(mode="record", store=store, base_url=fake.url, keys=keys, token=token)
        url = fake.url
        leaks = [*keys.values(), token, *fake.secrets_sent()]
        rate_limited = sum(
            1 for r in fake.seen
            if isinstance(r.body, dict) and r.body.get("model") == "rate-limited-once"
        )
    other_keys = _keys()
    other_token = "tooltok-" + secrets.token_hex(10)
    env = {
        **os.environ,
        "OPENAI_API_KEY": other_keys["openai"],
        "ANTHROPIC_API_KEY": other_keys["anthropic"],
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        "REDACTKEY_MODE": "replay",
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "sdk_scenarios.py"), "replay", str(store), url,
         other_token],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    replayed = json.loads(result.stdout)
    return Recording(
        store, keys, token, leaks, _normal(recorded, token), replayed, rate_limited, url
    )


def _normal(summary: Any, token: str) -> Any:
    """The token as replay sees it: redacted, one placeholder however many events it spans."""
    text = json.dumps(summary).replace(token, PLACEHOLDER)
    return json.loads(re.sub(r"(\[REDACTED\])+", PLACEHOLDER, text))


class TestRecordThenReplay:
    """Record with the real SDKs, replay in a fresh process without network."""

    def test_replay_reached_no_network(self, recording: Recording) -> None:
        """The replay process never opened a socket connection."""
        assert recording.replayed["connects"] == []

    @pytest.mark.parametrize("flavour", FLAVOURS)
    def test_answers_and_chunk_counts_equal(self, recording: Recording, flavour: str) -> None:
        """Every answer, tool call, structured output and stream chunk count is the same."""
        replayed = _normal(recording.replayed["summary"][flavour], "[REDACTED]")
        assert replayed == recording.recorded[flavour]

    def test_scenarios_really_ran(self, recording: Recording) -> None:
        """The recording holds real answers: tool calls, structured output, streams."""
        first = recording.recorded["httpx2-sync"]
        assert first["chat_tool"] == [["get_weather", {"city": "example", "unit": "celsius"}]]
        assert first["chat_structured"] == {"city": "example", "temperature_c": 21}
        assert first["messages_structured"] == {"city": "example", "temperature_c": 21}
        assert first["chat_stream"][1] > 10
        assert PLACEHOLDER in first["chat_stream"][0]

    def test_fixture_files_hold_no_secret(self, recording: Recording) -> None:
        """No file holds an API key, the tool token, a cookie or an organisation id."""
        files = list(recording.store.glob("*/*.json"))
        assert len(files) == 2 * CALLS["httpx2"] + 2 * CALLS["httpx"]
        for path in files:
            text = path.read_text(encoding="utf-8")
            for leak in recording.leaks:
                assert leak not in text, path.name

    def test_keys_do_not_depend_on_the_client(self, recording: Recording) -> None:
        """httpx and httpx2, sync and async record the same calls under the same keys."""
        names = {f: {p.name for p in (recording.store / f).iterdir()} for f in FLAVOURS}
        assert names["httpx2-sync"] == names["httpx2-async"]
        assert len(names["httpx2-sync"]) == CALLS["httpx2"]
        assert names["httpx-sync"] == names["httpx-async"]
        assert len(names["httpx-sync"]) == CALLS["httpx"]
        assert len(names["httpx2-sync"] & names["httpx-sync"]) == CALLS["openai"]

    def test_split_token_is_not_in_any_stream(self, recording: Recording) -> None:
        """The token the answer echoed across stream events is gone from the joined events."""
        streamed = 0
        for path in recording.store.glob("*/*.json"):
            document = json.loads(path.read_text(encoding="utf-8"))
            if "chunks" not in document:
                continue
            streamed += 1
            joined = "".join(_strings(document["chunks"]))
            assert recording.token not in joined, path.name
            assert recording.token[-6:] not in joined, path.name
        assert streamed == 2 * 4 + 2 * 3  # httpx2: 2 openai + 2 anthropic; httpx: 2 + 1 raw

    def test_transport_files_are_http_fixtures(self, recording: Recording) -> None:
        """Every file is an "http" fixture with a status and only allowlisted headers."""
        for path in recording.store.glob("*/*.json"):
            document = json.loads(path.read_text(encoding="utf-8"))
            assert document["kind"] == "http"
            head = document["answer"] if "answer" in document else document["chunks"][0]
            assert set(head["headers"]) <= {"content-type", "retry-after", "retry-after-ms"}

    def test_rate_limit_then_retry_records_the_200(self, recording: Recording) -> None:
        """A 429 answered by the SDK's retry leaves one fixture, holding the 200."""
        found = []
        for path in recording.store.glob("*/*.json"):
            document = json.loads(path.read_text(encoding="utf-8"))
            if document["request"]["request"].get("body", {}).get("json", {}).get("model") == (
                "rate-limited-once"
            ):
                found.append(document["answer"]["status"])
        assert found == [200] * len(FLAVOURS)
        assert recording.rate_limited == len(FLAVOURS) + 1  # the first try got the 429

    def test_unrecorded_request_fails_by_name(self, recording: Recording) -> None:
        """A miss is MissingFixtureError naming method and URL, sent once, in well under 1s."""
        misses = recording.replayed["misses"]
        assert len(misses) == 6
        for miss in misses:
            assert miss["is_missing_fixture"], miss
            assert miss["raised"] == "MissingFixtureError", miss
            path = "/v1/chat/completions" if miss["sdk"] == "openai" else "/v1/messages"
            assert f"POST {recording.url}{path}: no recorded" in miss["message"]
            assert "to record it:" in miss["message"]
            assert miss["attempts"] == 1, miss
            assert miss["seconds"] < 1.0, miss


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


class TestEnvironmentFailures:
    """Credential, server and transport failures are never recorded."""

    @pytest.mark.parametrize(
        ("model", "error"),
        [
            ("unauthorized", openai.AuthenticationError),
            ("forbidden", openai.PermissionDeniedError),
            ("server-error", openai.InternalServerError),
        ],
    )
    def test_status_failures_record_nothing(
        self, tmp_path: Path, model: str, error: type[Exception]
    ) -> None:
        """401, 403 and 500 reach the SDK as its own errors; the store stays empty."""
        with FakeProvider() as fake:
            transport = FixtureTransport(FixtureDir(tmp_path), mode="record")
            with openai.OpenAI(
                api_key="sk-test-" + "x1" * 10, base_url=f"{fake.url}/v1",
                http_client=httpx2.Client(transport=transport), max_retries=1,
            ) as client, pytest.raises(error):
                client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": "x"}]
                )
            assert fake.attempts() == (2 if model == "server-error" else 1)
        assert list(tmp_path.iterdir()) == []

    def test_transport_error_records_nothing(self, tmp_path: Path) -> None:
        """A refused connection is the SDK's connection error; nothing is written."""
        with FakeProvider() as fake:
            url = fake.url
        transport = FixtureTransport(FixtureDir(tmp_path), mode="record")
        with openai.OpenAI(
            api_key="sk-test-" + "x1" * 10, base_url=f"{url}/v1",
            http_client=httpx.Client(transport=transport), max_retries=0,
        ) as client, pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert list(tmp_path.iterdir()) == []


class TestCompressedResponses:
    """gzip, deflate and br bodies are stored decoded and replayed plain."""

    @pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
    @pytest.mark.parametrize("encoding", ["gzip", "deflate", "br"])
    def test_stored_decoded(self, tmp_path: Path, encoding: str, library: Any) -> None:
        """The fixture holds the JSON answer, and replay gives the SDK the same answer."""
        token = "tooltok-" + secrets.token_hex(10)
        messages = [{"role": "user", "content": f"ECHO:{token}"}]
        answers = []
        with FakeProvider(encoding=encoding) as fake:
            for mode in ("record", "replay"):
                transport = FixtureTransport(
                    FixtureDir(tmp_path), mode=mode, redactor=redactor_for(token)
                )
                with openai.OpenAI(
                    api_key="sk-test-" + "x1" * 10, base_url=f"{fake.url}/v1",
                    http_client=library.Client(transport=transport),
                ) as client:
                    answer = client.chat.completions.create(model="m", messages=messages)
                answers.append(answer.choices[0].message.content)
            assert fake.attempts() == 1
            assert fake.encoded == 1  # the live answer really was compressed
        (path,) = tmp_path.iterdir()
        document = json.loads(path.read_text(encoding="utf-8"))
        assert document["answer"]["json"]["object"] == "chat.completion"
        assert answers == [
            f"Your token is {token} as requested.",
            "Your token is [REDACTED] as requested.",
        ]


class TestMissWithoutSDK:
    """A replay miss from a bare client."""

    def test_plain_client_gets_missing_fixture_error(self, tmp_path: Path) -> None:
        """httpx raises MissingFixtureError itself, naming method and URL."""
        transport = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        with httpx.Client(transport=transport) as client, pytest.raises(
            MissingFixtureError, match=r"GET https://api\.example\.test/v1/models"
        ) as caught:
            client.get("https://api.example.test/v1/models?api_key=" + "k" * 20)
        assert "k" * 20 not in str(caught.value)


def _sse_handler(pieces: list[bytes]) -> Any:
    def handler(request: Any) -> Any:
        library = httpx2 if isinstance(request, httpx2.Request) else httpx
        return library.Response(
            200, headers={"content-type": "text/event-stream", "x-request-id": "req_9"},
            content=iter(pieces),
        )

    return handler


class TestTransportOptions:
    """Inner transports, modes and misuse."""

    @pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
    def test_events_cut_mid_line_record_and_replay(self, tmp_path: Path, library: Any) -> None:
        """A live stream in 3-byte pieces is stored event by event and replayed whole."""
        raw = b'event: a\ndata: {"text":"h\xc3\xa9llo"}\n\nevent: b\r\ndata: [DONE]\r\n\r\n'
        pieces = [raw[i : i + 3] for i in range(0, len(raw), 3)]
        body = {"stream": True, "model": "m"}
        lines = []
        for mode in ("record", "replay"):
            inner = library.MockTransport(_sse_handler(pieces))
            transport = FixtureTransport(FixtureDir(tmp_path), mode=mode, inner=inner)
            with library.Client(transport=transport) as client, client.stream(
                "POST", "https://api.example.test/v1/x", json=body
            ) as response:
                lines.append([line for line in response.iter_lines() if line])
        (path,) = tmp_path.iterdir()
        chunks = json.loads(path.read_text(encoding="utf-8"))["chunks"]
        assert chunks[1:] == [{"event": "a", "json": {"text": "héllo"}},
                              {"event": "b", "data": "[DONE]"}]
        assert chunks[0] == {"status": 200, "headers": {"content-type": "text/event-stream"}}
        assert lines[1] == ["event: a", 'data: {"text":"héllo"}', "event: b", "data: [DONE]"]

    def test_replay_reads_its_fixture_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A request that does not say whether it streams is replayed from one read of its
        fixture: the read that decided "whole or streamed" is the one replayed. (A repeat
        first looks for a later answer of the request, `http.<key>.2.json`, once.)"""
        answer = httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": 1}))
        record = FixtureTransport(FixtureDir(tmp_path), mode="record", inner=answer)
        with httpx2.Client(transport=record) as client:
            client.post("https://api.example.test/v1/x", json={"q": 1})
        reads: list[str] = []
        read = _store._read_bytes

        def counted(path: str) -> Any:
            data = read(path)
            if data is not None:
                reads.append(path)
            return data

        monkeypatch.setattr(_store, "_read_bytes", counted)
        replay = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        with httpx2.Client(transport=replay) as client:
            assert client.post("https://api.example.test/v1/x", json={"q": 1}).json() == {"ok": 1}
            assert len(reads) == 1
            client.post("https://api.example.test/v1/x", json={"q": 1})
        assert len(reads) == 2

    @pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
    def test_replayed_stream_is_one_piece_of_the_same_bytes(
        self, tmp_path: Path, library: Any
    ) -> None:
        """A replayed stream's events are all at hand: they go out as one piece, the bytes
        the live stream sent."""
        raw = b'data: {"a":1}\n\nevent: x\ndata: {"b":[2]}\n\ndata: [DONE]\n\n'
        pieces = [raw[i : i + 5] for i in range(0, len(raw), 5)]
        received = []
        for mode in ("record", "replay"):
            inner = library.MockTransport(_sse_handler(pieces))
            transport = FixtureTransport(FixtureDir(tmp_path), mode=mode, inner=inner)
            with library.Client(transport=transport) as client, client.stream(
                "POST", "https://api.example.test/v1/x", json={"stream": True}
            ) as response:
                received.append(list(response.iter_raw()))
        assert b"".join(received[0]) == raw
        assert len(received[0]) > 1
        assert received[1] == [raw]

    @pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
    def test_replayed_events_go_out_from_their_lines(
        self, tmp_path: Path, library: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Events of JSON data are sent from the lines of their file without being parsed
        and written again: the same bytes, sync and async."""
        raw = b'data: {"a":1,"b":"x"}\n\ndata: [1,"two"]\n\ndata: [DONE]\n\n'
        pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)]
        url = "https://api.example.test/v1/x"
        inner = library.MockTransport(_sse_handler(pieces))
        transport = FixtureTransport(FixtureDir(tmp_path), mode="record", inner=inner)
        with library.Client(transport=transport) as client, client.stream(
            "POST", url, json={"stream": True}
        ) as response:
            assert response.read() == raw
        (path,) = tmp_path.iterdir()
        lines = b'    {"json":{"a":1,"b":"x"}},\n    {"json":[1,"two"]},\n    {"data":"[DONE]"}\n'
        assert lines in path.read_bytes()  # (one line per chunk)

        def parsed(*args: Any) -> bytes:
            raise AssertionError("the stored events were parsed and written again")

        monkeypatch.setattr("redactkey.record._exchange.stream_bytes", parsed)
        transport = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        with library.Client(transport=transport) as client, client.stream(
            "POST", url, json={"stream": True}
        ) as response:
            assert list(response.iter_raw()) == [raw]

        async def replay_async() -> list[bytes]:
            transport = FixtureTransport(FixtureDir(tmp_path), mode="replay")
            async with library.AsyncClient(transport=transport) as client, client.stream(
                "POST", url, json={"stream": True}
            ) as response:
                return [piece async for piece in response.aiter_raw()]

        assert asyncio.run(replay_async()) == [raw]

    def test_events_edited_by_hand_are_parsed(self, tmp_path: Path) -> None:
        """A file whose lines are not all events of JSON data alone (a retry written in by
        hand) is replayed by parsing them, and gives what they say."""
        raw = b'data: {"a":1}\n\ndata: {"b":2}\n\n'
        url = "https://api.example.test/v1/x"
        inner = httpx2.MockTransport(_sse_handler([raw]))
        with httpx2.Client(transport=FixtureTransport(
            FixtureDir(tmp_path), mode="record", inner=inner
        )) as client:
            assert client.post(url, json={"stream": True}).content == raw
        (path,) = tmp_path.iterdir()
        path.write_bytes(path.read_bytes().replace(b'{"json":{"b":2}}',
                                                   b'{"json":{"b":2},"retry":5}'))
        with httpx2.Client(transport=FixtureTransport(FixtureDir(tmp_path))) as client:
            replayed = client.post(url, json={"stream": True}).content
        assert replayed == b'data: {"a":1}\n\nretry: 5\ndata: {"b":2}\n\n'

    def test_stream_read_to_its_end_marker_is_recorded(self, tmp_path: Path) -> None:
        """A consumer that stops at [DONE] and closes still leaves a complete recording."""
        raw = b"data: 1\n\ndata: [DONE]\n\ndata: trailing\n\n"
        inner = httpx2.MockTransport(_sse_handler([raw[:12], raw[12:]]))
        transport = FixtureTransport(FixtureDir(tmp_path), mode="record", inner=inner)
        with httpx2.Client(transport=transport) as client, client.stream(
            "POST", "https://api.example.test/v1/x", json={"stream": True}
        ) as response:
            for line in response.iter_lines():
                if line == "data: [DONE]":
                    break
        (path,) = tmp_path.iterdir()
        assert len(json.loads(path.read_text(encoding="utf-8"))["chunks"]) == 4

    def test_model_false_ignores_the_model_override(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """REDACTKEY_MODEL_MODE applies to the transport unless model=False."""
        monkeypatch.setenv("REDACTKEY_MODE", "replay")
        monkeypatch.setenv("REDACTKEY_MODEL_MODE", "record")
        store = FixtureDir("unused")
        assert FixtureTransport(store).mode == "record"
        assert FixtureTransport(store, model=False).mode == "replay"

    def test_inner_of_the_other_library_is_refused(self, tmp_path: Path) -> None:
        """An httpx inner transport under an httpx2 client is a UsageError naming both."""
        inner = httpx.MockTransport(_sse_handler([b""]))
        transport = FixtureTransport(FixtureDir(tmp_path), mode="record", inner=inner)
        with httpx2.Client(transport=transport) as client, pytest.raises(
            UsageError, match="from httpx, but the request is from httpx2"
        ):
            client.get("https://api.example.test/")

    def test_not_an_httpx_request_is_refused(self, tmp_path: Path) -> None:
        """Anything but an httpx or httpx2 request is a UsageError."""
        transport = FixtureTransport(FixtureDir(tmp_path), mode="record")
        with pytest.raises(UsageError, match="serves httpx and httpx2 clients"):
            transport.handle_request(object())  # type: ignore[call-overload]

    def test_how_to_record_is_the_callers(self, tmp_path: Path) -> None:
        """`how_to_record` replaces the advice at the end of a miss."""
        transport = FixtureTransport(
            FixtureDir(tmp_path), mode="replay", how_to_record="run with --redactkey-mode=record"
        )
        with httpx2.Client(transport=transport) as client, pytest.raises(
            MissingFixtureError, match="to record it: run with --redactkey-mode=record"
        ):
            client.get("https://api.example.test/")

    @pytest.mark.parametrize(
        "edit",
        [
            pytest.param(lambda answer: answer.pop("status"), id="no-status"),
            pytest.param(lambda answer: answer.update(status="200"), id="status-a-string"),
            pytest.param(lambda answer: answer.update(status=True), id="status-a-bool"),
            pytest.param(lambda answer: answer.update(status=99), id="status-out-of-range"),
            pytest.param(lambda answer: answer.update(headers=[["a", "b"]]), id="headers-a-list"),
            pytest.param(lambda answer: answer["headers"].update(a=1), id="header-a-number"),
        ],
    )
    def test_a_response_without_status_is_a_format_error(
        self, tmp_path: Path, edit: Any
    ) -> None:
        """A hand-edited answer without a usable status or headers is FixtureFormatError
        naming the file."""
        inner = httpx2.MockTransport(lambda request: httpx2.Response(200, json={"a": 1}))
        with httpx2.Client(
            transport=FixtureTransport(FixtureDir(tmp_path), mode="record", inner=inner)
        ) as client:
            client.get("https://api.example.test/")
        (path,) = tmp_path.iterdir()
        document = json.loads(path.read_text(encoding="utf-8"))
        edit(document["answer"])
        path.write_text(json.dumps(document), encoding="utf-8")
        with httpx2.Client(
            transport=FixtureTransport(FixtureDir(tmp_path), mode="replay")
        ) as client, pytest.raises(FixtureFormatError, match=path.name):
            client.get("https://api.example.test/")
