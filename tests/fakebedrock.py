"""A small local fake of the Amazon Bedrock runtime API for the botocore tests.

It listens on 127.0.0.1 (random port) and answers, for ``/model/<id>/``:
``converse`` (JSON), ``converse-stream`` (binary ``application/vnd.amazon.eventstream``
frames, written in small pieces so frames are cut across reads) and ``invoke``
(the request's own JSON shape answered in the Anthropic messages form).

A prompt holding ``ECHO:<token>`` gets an answer that repeats the token; streamed,
the answer is cut into 4-character deltas, so the token is split across frames.
Model ids ``throttled`` (429 ThrottlingException) and ``denied`` (403
AccessDeniedException) fail the way the environment does. Every response carries
headers that fixtures must not keep (``x-amzn-requestid``, a date). The frames are
encoded here by hand, independently of redactkey's own codec.
"""

from __future__ import annotations

import json
import re
import secrets
import struct
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeBedrock", "encode_frame"]

_ECHO = re.compile(r"ECHO:(\S+)")


def encode_frame(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    """One event-stream frame with string headers (prelude, CRCs, headers, payload)."""
    raw_headers = b""
    for name, value in headers:
        raw_name, raw_value = name.encode(), value.encode()
        raw_headers += struct.pack(">B", len(raw_name)) + raw_name
        raw_headers += struct.pack(">BH", 7, len(raw_value)) + raw_value
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + raw_headers + payload
    return message + struct.pack(">I", zlib.crc32(message) & 0xFFFFFFFF)


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    headers = [(":event-type", kind), (":content-type", "application/json"),
               (":message-type", "event")]
    return encode_frame(headers, json.dumps(payload, separators=(",", ":")).encode())


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _texts(item)]
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    return []


def _reply(body: Any) -> str:
    match = _ECHO.search(" ".join(_texts(body)))
    if match:
        return f"Your token is {match.group(1)} as requested."
    return "Hello from the fake Bedrock."


@dataclass(frozen=True)
class Seen:
    """One request as the fake received it."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeBedrock:
    """The fake; use as a context manager, then pass `.url` as ``endpoint_url``."""

    delta_size: int = 4
    write_size: int = 23
    seen: list[Seen] = field(default_factory=list)
    frames_sent: list[bytes] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the fake is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeBedrock:
        fake = self

        class Handler(_Handler):
            provider = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    provider: FakeBedrock
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw) if raw else None
        with self.provider._lock:
            self.provider.seen.append(
                Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        match = re.fullmatch(r"/model/([^/]+)/(converse|converse-stream|invoke)", self.path)
        if match is None:
            self._json(404, {"message": f"no route {self.path}"}, "UnknownOperationException")
            return
        model, operation = match.groups()
        if model == "throttled":
            self._json(429, {"message": "Too many requests"}, "ThrottlingException")
            return
        if model == "denied":
            self._json(403, {"message": "Access denied"}, "AccessDeniedException")
            return
        if model == "invalid":
            self._json(400, {"message": "The model is invalid"}, "ValidationException")
            return
        text = _reply(body)
        usage = {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}
        if operation == "converse":
            self._json(200, {
                "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                "stopReason": "end_turn", "usage": usage, "metrics": {"latencyMs": 12},
            })
        elif operation == "invoke":
            self._json(200, {
                "id": "msg_fake1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 11, "output_tokens": 7},
            })
        else:
            self._stream(text, usage)

    def _common(self) -> None:
        self.send_header("x-amzn-requestid", secrets.token_hex(16))
        self.send_header("date", "Tue, 01 Dec 2026 00:00:00 GMT")

    def _json(self, status: int, payload: Any, error: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if error is not None:
            self.send_header("x-amzn-errortype", f"{error}:http://internal.amazon.com/coral/")
        self._common()
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, text: str, usage: dict[str, int]) -> None:
        size = self.provider.delta_size
        frames = [_event("messageStart", {"role": "assistant"})]
        frames += [
            _event("contentBlockDelta",
                   {"contentBlockIndex": 0, "delta": {"text": text[i:i + size]}})
            for i in range(0, len(text), size)
        ]
        frames.append(_event("contentBlockStop", {"contentBlockIndex": 0}))
        frames.append(_event("messageStop", {"stopReason": "end_turn"}))
        frames.append(_event("metadata", {"usage": usage, "metrics": {"latencyMs": 12}}))
        with self.provider._lock:
            self.provider.frames_sent.extend(frames)
        raw = b"".join(frames)
        self.send_response(200)
        self.send_header("content-type", "application/vnd.amazon.eventstream")
        self.send_header("transfer-encoding", "chunked")
        self._common()
        self.end_headers()
        step = self.provider.write_size
        for start in range(0, len(raw), step):
            piece = raw[start:start + step]
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
