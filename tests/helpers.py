"""Shared test helpers (imported by test modules; never a test module itself)."""

from __future__ import annotations

import copy
import json
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redactkey.commands._issues import Report

__all__ = ["AUDIT_ONLY_RULES", "ChangingProvider", "assert_one_answer", "chat_answer",
           "chat_chunks", "checksummed_token"]

# rules about a fixture tree rather than a value: the audit's alone
AUDIT_ONLY_RULES = frozenset({
    "duplicate-interaction", "volatile-request-field", "oversized-file", "duplicate-key",
    "unused-fixture", "not-canonical", "key-mismatch", "schema-invalid", "unknown-version",
    "unparsable-file", "volatile-key-material", "answer-gap"})


def assert_one_answer(reports: dict[str, Report]) -> None:
    """`check`, `audit` and `scrub` (a dry run) over the same paths: the same files read,
    the same skipped, the same rule at the same line for every value (scrub lists what it
    would rewrite: the audit's errors and warnings)."""
    files = {command: sorted(path for path, _fmt in report.read_files)
             for command, report in reports.items()}
    assert files["check"] == files["audit"] == files["scrub"]
    skipped = {command: sorted(report.skipped) for command, report in reports.items()}
    assert skipped["check"] == skipped["audit"] == skipped["scrub"]

    def by_value(report: Report, levels: tuple[str, ...]) -> set[tuple[str, int, str]]:
        return {(i.path, i.line, i.rule) for i in report.issues
                if i.level in levels and i.rule not in AUDIT_ONLY_RULES}

    everything = ("error", "warning", "note")
    assert by_value(reports["check"], everything) == by_value(reports["audit"], everything)
    assert by_value(reports["scrub"], ("error", "warning")) == \
        by_value(reports["audit"], ("error", "warning"))


_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def checksummed_token(prefix: str, body: str) -> str:
    """A GitHub- or npm-shaped token whose checksum holds: `prefix`, the 30 characters
    `body` (letters and digits), then their CRC32 in base62, 6 characters padded with
    zeros. Computed here, apart from the product's own code, so a test of the checksum
    rule is not checked against itself. Valid for nothing: the body is made up."""
    if len(body) != 30 or not body.isascii() or not body.isalnum():
        raise ValueError(f"a token body is 30 letters and digits, not {body!r}")
    number = zlib.crc32(body.encode("ascii"))
    checksum = ""
    while number:
        number, digit = divmod(number, 62)
        checksum = _BASE62[digit] + checksum
    return prefix + body + checksum.rjust(6, "0")


def chat_answer(text: str = "Hello there", **changes: Any) -> dict[str, Any]:
    """An OpenAI chat completion as the API returns it; `changes` replace top-level members."""
    answer: dict[str, Any] = {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0001",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    }
    answer.update(changes)
    return answer


def chat_chunks(text: str = "Hello there", size: int = 4, **changes: Any) -> list[dict[str, Any]]:
    """The same answer streamed: chunks of `size` characters, then the finish chunk."""
    base = {"id": "chatcmpl-abc123", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": "gpt-4o-mini", **changes}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": text[i:i + size]} for i in range(0, len(text), size)]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks


@dataclass
class ChangingProvider:
    """A local fake provider (127.0.0.1) whose answers a test changes between runs.

    `POST /v1/chat/completions` answers `answer` as JSON, or, when the request asks
    for a stream, `chunks` as server-sent events ending with ``[DONE]``; `status` is
    the HTTP status. Use it as a context manager and point clients at `url`.
    """

    answer: dict[str, Any] = field(default_factory=chat_answer)
    chunks: list[dict[str, Any]] = field(default_factory=chat_chunks)
    status: int = 200
    requests: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None, "the provider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ChangingProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw) if raw else {}
                with provider._lock:
                    provider.requests += 1
                    answer = copy.deepcopy(provider.answer)
                    chunks = copy.deepcopy(provider.chunks)
                    status = provider.status
                if isinstance(body, dict) and body.get("stream"):
                    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                    data += b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    data = json.dumps(answer).encode()
                    content_type = "application/json"
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", "req_" + str(provider.requests))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
