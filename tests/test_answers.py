"""Answer normalizers: re-recording an unchanged call changes no byte."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from redactkey import (
    PROVIDER_ANSWERS,
    DropFields,
    FixtureDir,
    FixtureTransport,
    ForwardingTransport,
    ModelFixtures,
    PinFields,
    Redactor,
    RunSecrets,
    UsageError,
)
from redactkey._errors import ConfigError
from redactkey.record._config import Config, load_config

API_KEY = "sk-proj-" + "Vd3x" * 12


class _Volatile(BaseHTTPRequestHandler):
    """A chat-completions server whose answers differ only in id, created, fingerprint
    and request-id headers."""

    counter = itertools.count(1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        n = next(self.counter)
        base = {"id": f"chatcmpl-{n:08x}", "created": 1_700_000_000 + n, "model": body["model"],
                "system_fingerprint": f"fp_{n:06x}"}
        self.send_response(200)
        self.send_header("x-request-id", f"req_{n}")
        self.send_header("openai-processing-ms", str(n))
        if body.get("stream"):
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for delta in ({"role": "assistant", "content": "Hel"}, {"content": "lo"}):
                chunk = {**base, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            return
        answer = {**base, "object": "chat.completion", "choices": [{
            "index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Hello", "tool_calls": [{
                "id": "call_fixed1", "type": "function",
                "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        data = json.dumps(answer).encode()
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Volatile)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _record(store: Path, server: str, **options: Any) -> dict[str, bytes]:
    transport = FixtureTransport(FixtureDir(store), mode="record",
                                 redactor=Redactor(RunSecrets({})),
                                 inner=ForwardingTransport(server), **options)
    with httpx2.Client(transport=transport) as http_client:
        client = openai.OpenAI(api_key=API_KEY, http_client=http_client, max_retries=0)
        messages = [{"role": "user", "content": "Hello?"}]
        client.chat.completions.create(model="gpt-x", messages=messages)  # type: ignore[arg-type]
        stream = client.chat.completions.create(model="gpt-x", messages=messages,  # type: ignore[arg-type]
                                                stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream) == "Hello"
    return {p.name: p.read_bytes() for p in sorted(store.iterdir())}


class TestQuietReRecord:
    """Against a server that varies only volatile fields, a re-record is byte-identical."""

    def test_preset_keeps_every_byte(self, tmp_path: Path, server: str) -> None:
        """`answer_normalizers=[PROVIDER_ANSWERS]`: two records, same files, same bytes."""
        first = _record(tmp_path, server, answer_normalizers=[PROVIDER_ANSWERS], config=Config())
        second = _record(tmp_path, server, answer_normalizers=[PROVIDER_ANSWERS],
                         config=Config())
        assert len(first) == 2
        assert first == second
        text = b"".join(first.values()).decode()
        assert '"chatcmpl-pinned"' in text
        assert "req_" not in text  # request-id headers never reach a fixture
        assert '"call_' in text  # tool call ids flow back into requests: kept

    def test_without_normalizers_files_churn(self, tmp_path: Path, server: str) -> None:
        """The same two records without normalizers rewrite the files (the test can fail)."""
        first = _record(tmp_path, server, config=Config())
        assert _record(tmp_path, server, config=Config()) != first

    def test_configuration_answers(self, tmp_path: Path, server: str) -> None:
        """`[tool.redactkey.answers] presets = ["providers"]` does the same from config."""
        (tmp_path / ".redactkey.toml").write_text(
            '[answers]\npresets = ["providers"]\ndrop = ["/usage"]\n', encoding="utf-8")
        config = load_config(tmp_path)
        store = tmp_path / "fx"
        first = _record(store, server, config=config)
        assert _record(store, server, config=config) == first
        assert b'"usage"' not in b"".join(first.values())


class TestNormalizers:
    """The normalizers themselves: what they pin, what they leave alone."""

    def test_model_layer_pins_answer_not_caller_value(self, tmp_path: Path) -> None:
        """ModelFixtures returns the live answer when recording and writes the pinned one."""
        fixtures = ModelFixtures(FixtureDir(tmp_path), mode="record",
                                 redactor=Redactor(RunSecrets({})), config=Config(),
                                 answer_normalizers=[PinFields("/meta/at")])
        live = {"text": "hi", "meta": {"at": "2026-01-01"}}
        assert fixtures.call("text", {"prompt": "x"}, lambda: live) == live
        stored = json.loads(next(tmp_path.iterdir()).read_text(encoding="utf-8"))
        assert stored["answer"] == {"text": "hi", "meta": {"at": "pinned"}}

    def test_preset_leaves_ids_that_flow_back(self) -> None:
        """A Responses API id (previous_response_id) and tool call ids are never pinned."""
        response = {"id": "resp_123", "object": "response", "created_at": 5}
        assert PROVIDER_ANSWERS(response) == response
        anthropic = {"type": "message_start", "message": {"id": "msg_01abc", "type": "message"}}
        assert PROVIDER_ANSWERS(anthropic) == {
            "type": "message_start", "message": {"id": "msg_pinned", "type": "message"}}
        gemini = {"responseId": "abc", "candidates": []}
        assert PROVIDER_ANSWERS(gemini) == {"responseId": "pinned", "candidates": []}

    def test_pointers_with_wildcards(self) -> None:
        """`*` matches one member or index; pins keep an id's prefix, numbers become 0."""
        body = {"items": [{"id": "item_9", "n": 3}, {"id": "item_8", "n": 4}]}
        assert PinFields("/items/*/id", "/items/1/n")(body) == {
            "items": [{"id": "item_pinned", "n": 3}, {"id": "item_pinned", "n": 0}]}
        assert DropFields("/items/*/n")(body) == {"items": [{"id": "item_9"}, {"id": "item_8"}]}

    def test_bad_settings_are_clear(self, tmp_path: Path) -> None:
        """An unknown preset or a pointer without '/' names the setting."""
        with pytest.raises(UsageError, match="JSON pointer"):
            PinFields("id")
        (tmp_path / ".redactkey.toml").write_text('[answers]\npresets = ["openia"]\n',
                                                  encoding="utf-8")
        with pytest.raises(ConfigError, match=r"answers.presets.*openia"):
            load_config(tmp_path)
