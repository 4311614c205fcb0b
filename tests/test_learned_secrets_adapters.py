"""Secrets learned from the wire, through the requests, aiohttp and botocore adapters.

Each client gets its credential only in code (no environment variable, no declared slot,
an empty `RunSecrets`) and talks to a local fake server that echoes the credential it
received (the `x-api-key` or `api-key` header, a `?key=` query value, the access key id
of a SigV4 `Authorization` header and the `X-Amz-Security-Token`) into its answer, whole,
as a masked preview and cut across stream events. The fixtures keep no 8-character piece
of any credential, `redact audit` finds nothing, and a fresh client with other
credentials replays the recording with the server gone.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import string
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import requests
from botocore.config import Config

from fakebedrock import encode_frame
from redactkey import (
    FixtureDir,
    Redactor,
    RequestsAdapter,
    RunSecrets,
    aiohttp_session,
    use_botocore,
)
from redactkey.commands._cli import main

ALNUM = string.ascii_letters + string.digits
CHAT = "/v1/chat/completions"


def _random(n: int, alphabet: str = ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _sent(headers: Any, path: str) -> list[str]:
    """The credentials a request carried, as the server reads them."""
    out = []
    authorization = headers.get("authorization", "")
    if authorization.startswith("AWS4-"):
        out.append(authorization.split("Credential=", 1)[1].split("/", 1)[0])
    for name in ("x-api-key", "api-key", "x-amz-security-token"):
        if headers.get(name):
            out.append(headers[name])
    out.extend(parse_qs(urlsplit(path).query).get("key", []))
    return out


def _frame(kind: str, payload: dict[str, Any]) -> bytes:
    headers = [(":event-type", kind), (":content-type", "application/json"),
               (":message-type", "event")]
    return encode_frame(headers, json.dumps(payload).encode())


class _Echo(BaseHTTPRequestHandler):
    """Chat completions (JSON or server-sent events) and Bedrock `converse` /
    `converse-stream` answers that repeat the caller's credentials."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw) if raw else {}
        keys = _sent(self.headers, self.path)
        text = f"You called me with {' and '.join(keys)}; yours ends …{keys[0][-8:]}."
        pieces = [text[i:i + 5] for i in range(0, len(text), 5)]
        path = urlsplit(self.path).path
        if path.endswith("/converse-stream"):
            frames = [_frame("messageStart", {"role": "assistant"})]
            frames += [_frame("contentBlockDelta", {"contentBlockIndex": 0,
                                                    "delta": {"text": piece}})
                       for piece in pieces]
            frames.append(_frame("messageStop", {"stopReason": "end_turn"}))
            self._send("application/vnd.amazon.eventstream", b"".join(frames))
        elif path.endswith("/converse"):
            self._send("application/json", json.dumps({
                "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                "stopReason": "end_turn", "metrics": {"latencyMs": 3},
                "usage": {"inputTokens": 3, "outputTokens": 9, "totalTokens": 12},
            }).encode())
        elif body.get("stream"):
            events = [{"id": "chatcmpl-echo", "object": "chat.completion.chunk",
                       "choices": [{"index": 0, "delta": {"content": piece}}]}
                      for piece in pieces]
            self._send("text/event-stream", b"".join(
                b"data: " + json.dumps(event).encode() + b"\n\n" for event in events
            ) + b"data: [DONE]\n\n")
        else:
            self._send("application/json", json.dumps({
                "id": "chatcmpl-echo", "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
            }).encode())

    def _send(self, content_type: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server:
    """The echo server on 127.0.0.1; `stop()` before replaying proves nothing is sent."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._stopped = False

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    try:
        yield running
    finally:
        running.stop()


def _redactor() -> Redactor:
    # Nothing known in advance: the credentials are in no variable and no declared slot.
    return Redactor(RunSecrets({}))


# --- the three clients: each returns the texts the program saw ---------------------------

def _with_requests(store: Path, url: str, mode: str, credentials: dict[str, str]) -> list[str]:
    body = {"model": "echo-1", "messages": [{"role": "user", "content": "hello"}]}
    with requests.Session() as session:
        session.mount("http://", RequestsAdapter(FixtureDir(store), mode=mode,  # type: ignore[arg-type]
                                                 redactor=_redactor()))
        answer = session.post(url + CHAT, json=body, headers=credentials, timeout=10)
        texts = [answer.json()["choices"][0]["message"]["content"]]
        with session.post(url + CHAT, json={**body, "stream": True}, headers=credentials,
                          stream=True, timeout=10) as streamed:
            deltas = [json.loads(line[6:])["choices"][0]["delta"]["content"]
                      for line in streamed.iter_lines(decode_unicode=True)
                      if line.startswith("data: {")]
    return [*texts, "".join(deltas)]


def _with_aiohttp(store: Path, url: str, mode: str, credentials: dict[str, str]) -> list[str]:
    body = {"model": "echo-1", "messages": [{"role": "user", "content": "hello"}]}
    params = {"key": credentials["key"]} if "key" in credentials else None
    headers = {k: v for k, v in credentials.items() if k != "key"}

    async def run() -> list[str]:
        async with aiohttp_session(FixtureDir(store), mode=mode,  # type: ignore[arg-type]
                                   redactor=_redactor()) as session:
            async with session.post(url + CHAT, json=body, params=params,
                                    headers=headers) as answer:
                texts = [(await answer.json())["choices"][0]["message"]["content"]]
            deltas = []
            async with session.post(url + CHAT, json={**body, "stream": True}, params=params,
                                    headers=headers) as streamed:
                async for line in streamed.content:
                    if line.startswith(b"data: {"):
                        deltas.append(json.loads(line[6:])["choices"][0]["delta"]["content"])
        return [*texts, "".join(deltas)]

    return asyncio.run(run())


def _with_botocore(store: Path, url: str, mode: str, credentials: dict[str, str]) -> list[str]:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=url,
        aws_access_key_id=credentials["access"], aws_secret_access_key=credentials["secret"],
        aws_session_token=credentials["session"],
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    client = use_botocore(client, FixtureDir(store), mode=mode, redactor=_redactor())  # type: ignore[arg-type]
    messages = [{"role": "user", "content": [{"text": "hello"}]}]
    answer = client.converse(modelId="echo-1", messages=messages)
    streamed = client.converse_stream(modelId="echo-1", messages=messages)
    deltas = [event["contentBlockDelta"]["delta"]["text"] for event in streamed["stream"]
              if "contentBlockDelta" in event]
    return [answer["output"]["message"]["content"][0]["text"], "".join(deltas)]


def _api_key(header: str) -> Callable[[], dict[str, str]]:
    return lambda: {header: _random(32)}


def _aws() -> dict[str, str]:
    # An access key id without a provider prefix: only learning can find it.
    return {"access": _random(20, string.ascii_uppercase + string.digits),
            "secret": _random(40), "session": _random(80, ALNUM + "/+")}


CLIENTS: dict[str, tuple[Callable[[Path, str, str, dict[str, str]], list[str]],
                         Callable[[], dict[str, str]]]] = {
    "requests-x-api-key": (_with_requests, _api_key("x-api-key")),
    "aiohttp-api-key": (_with_aiohttp, _api_key("api-key")),
    "aiohttp-query-key": (_with_aiohttp, _api_key("key")),
    "botocore-sigv4": (_with_botocore, _aws),
}


def _sent_values(credentials: dict[str, str]) -> list[str]:
    return [v for k, v in credentials.items() if k != "secret"]


def _pieces(value: str) -> list[str]:
    return [value[i:i + 8] for i in range(len(value) - 7)]


@pytest.mark.parametrize("client", sorted(CLIENTS))
class TestEchoedCredentials:
    """A credential given in code and echoed by the server never reaches a fixture."""

    def test_fixtures_hold_no_piece_and_audit_is_clean(
        self, client: str, tmp_path: Path, server: _Server,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """The program sees the echo live; the files keep no 8 characters of it."""
        call, credentials_for = CLIENTS[client]
        credentials = credentials_for()
        texts = call(tmp_path, server.url, "record", credentials)
        for value in _sent_values(credentials):
            assert all(value in text for text in texts), "the live answer echoes it"
        files = sorted(tmp_path.rglob("*.json"))
        assert len(files) == 2
        for path in files:
            text = path.read_text(encoding="utf-8")
            for value in credentials.values():
                assert [p for p in _pieces(value) if p in text] == [], path.name
        assert main(["audit", str(tmp_path)]) == 0, capsys.readouterr().out

    def test_replay_with_other_credentials_and_no_server(
        self, client: str, tmp_path: Path, server: _Server,
    ) -> None:
        """A fresh client with other credentials hits the recording, server stopped."""
        call, credentials_for = CLIENTS[client]
        call(tmp_path, server.url, "record", credentials_for())
        server.stop()
        other = credentials_for()
        texts = call(tmp_path, server.url, "replay", other)
        assert len(texts) == 2
        for text in texts:
            assert "You called me with [REDACTED]" in text
            assert not any(value in text for value in other.values())
