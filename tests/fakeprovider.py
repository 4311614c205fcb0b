"""A small local fake of the OpenAI and Anthropic HTTP APIs for the transport tests.

It listens on 127.0.0.1 (random port, one thread per connection) and speaks
chat completions (`POST /v1/chat/completions`), the responses API
(`POST /v1/responses`), Anthropic messages (`POST /v1/messages`) and Cohere's v2
chat (`POST /v2/chat`; groq's `/openai/v1/chat/completions` is chat completions), each
streamed (server-sent events) or not, with tool calls and structured output; also
Gemini's `POST /v1beta/models/<model>:generateContent` and
`:streamGenerateContent?alt=sse` (SSE asked for by the query, not by `Accept`), and
Ollama's `POST /api/chat` (newline-delimited JSON, streamed unless `"stream": false`).

Behaviour is chosen by the request's model name:

    "rate-limited-once"   429 the first time a given body is seen, then 200
    "unauthorized"        401            "forbidden"     403
    "server-error"        500            "bad-request"   400 (a deterministic model error)

A prompt holding ``ECHO:<token>`` gets an answer that repeats the token; streamed,
the answer is cut into `delta_size`-character deltas, so the token is split across
events. A prompt holding one of the questions of `ANSWERS` gets its fixed answer (the
docs' test examples assert on them). Every response carries the headers real providers
send and fixtures must not keep (set-cookie, organisation and project ids, request ids,
rate limits, cf-ray, processing time, date). Streams are written in `write_size`-byte
pieces, so lines are cut across reads; `pause` seconds pass before each event (time-to-first-chunk
checks) and `written` holds the time each streamed event was sent. `encoding` ("gzip"
or "deflate", or "br" when the `brotli` package is present) compresses non-streamed
bodies.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import secrets
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ANSWERS", "FakeProvider", "SeenRequest"]

_ECHO = re.compile(r"ECHO:(\S+)")
_GEMINI = re.compile(
    r"/v1beta/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)"
)
# the docs' test examples ask these and assert on the answers ("Paris", three lines, ...)
ANSWERS = {
    "Where is the Eiffel Tower?": "The Eiffel Tower is in Paris, France.",
    "Count to three.": "One, two, three.",
    "Write a haiku about fixtures.": (
        "Recorded just once\nsecrets masked, the answers kept\nreplayed without keys"
    ),
}
_FAILURES = {"unauthorized": 401, "forbidden": 403, "server-error": 500, "bad-request": 400}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stops reading a stream hangs up mid-answer, as real clients do:
        # that is no error of the provider's worth a traceback.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@dataclass(frozen=True)
class SeenRequest:
    """One request as the fake provider received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeProvider:
    """The fake provider; use as a context manager, then point SDKs at `.url`."""

    delta_size: int = 4
    write_size: int = 7
    encoding: str | None = None
    pause: float = 0.0
    # A streamed answer's last event waits for this to be set (by a client that has its
    # first piece): a test that a stream is passed on as it arrives, without a clock.
    # `held_too_long` says it timed out, i.e. the client got nothing before the end.
    hold_last: threading.Event | None = None
    held_too_long: bool = False
    organization: str = field(default_factory=lambda: "org-" + secrets.token_hex(12))
    project: str = field(default_factory=lambda: "proj_" + secrets.token_hex(12))
    anthropic_organization: str = field(default_factory=lambda: secrets.token_hex(16))
    cookie: str = field(default_factory=lambda: "cfbm" + secrets.token_hex(16))
    seen: list[SeenRequest] = field(default_factory=list)
    written: list[float] = field(default_factory=list)
    encoded: int = 0
    _bodies_seen: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the fake provider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeProvider:
        provider = self

        class Handler(_Handler):
            fake = provider

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def attempts(self, path: str | None = None) -> int:
        """How many requests arrived (for `path` only, when given)."""
        return sum(1 for r in self.seen if path is None or r.path == path)

    def secrets_sent(self) -> list[str]:
        """Values the provider sent that no fixture may keep."""
        return [self.organization, self.project, self.anthropic_organization, self.cookie]

    # -- called from the handler threads ---------------------------------------------------

    def _first_time(self, body: bytes) -> bool:
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            if digest in self._bodies_seen:
                return False
            self._bodies_seen.add(digest)
            return True


class _Handler(BaseHTTPRequestHandler):
    fake: FakeProvider
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.fake._lock:
            self.fake.seen.append(SeenRequest("POST", self.path, headers, body))
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "body must be a JSON object"}})
            return
        path = self.path.split("?", 1)[0]
        gemini = _GEMINI.fullmatch(path)
        model = gemini.group("model") if gemini else str(body.get("model", ""))
        if model in _FAILURES:
            status = _FAILURES[model]
            self._json(status, _error_body(self.path, status), retry_after_ms="1")
            return
        if model == "rate-limited-once" and self.fake._first_time(raw):
            self._json(429, _error_body(self.path, 429), retry_after_ms="5")
            return
        routes = {
            "/v1/chat/completions": _chat,
            "/openai/v1/chat/completions": _chat,  # groq's path
            "/v2/chat": _cohere,
            "/v1/responses": _responses,
            "/v1/messages": _messages,
        }
        if gemini is not None:
            answer = _gemini(model, body, self.fake.delta_size)
            if gemini.group("method") == "streamGenerateContent":
                self._stream(answer.events)
            else:
                self._json(200, answer.body)
            return
        if path == "/api/chat":
            answer = _ollama(body, self.fake.delta_size)
            if body.get("stream", True):
                self._ndjson([data for _, data in answer.events])
            else:
                self._json(200, answer.body)
            return
        route = routes.get(path)
        if route is None:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        answer = route(body, self.fake.delta_size)
        if body.get("stream"):
            self._stream(answer.events)
        else:
            self._json(200, answer.body)

    def do_GET(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.fake._lock:
            self.fake.seen.append(SeenRequest("GET", self.path, headers, None))
        if self.path.startswith("/v1/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake-1", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    # -- writing ---------------------------------------------------------------------------

    def _provider_headers(self) -> None:
        fake = self.fake
        self.send_header("set-cookie", f"__cf_bm={fake.cookie}; path=/; HttpOnly")
        self.send_header("openai-organization", fake.organization)
        self.send_header("openai-project", fake.project)
        self.send_header("anthropic-organization-id", fake.anthropic_organization)
        self.send_header("x-request-id", "req_" + secrets.token_hex(12))
        self.send_header("request-id", "req_" + secrets.token_hex(12))
        self.send_header("x-ratelimit-limit-requests", "5000")
        self.send_header("x-ratelimit-remaining-requests", str(4000 + secrets.randbelow(999)))
        self.send_header("anthropic-ratelimit-tokens-remaining", str(secrets.randbelow(10**6)))
        self.send_header("cf-ray", secrets.token_hex(8) + "-AMS")
        self.send_header("openai-processing-ms", str(secrets.randbelow(900)))

    def _json(self, status: int, payload: Any, *, retry_after_ms: str | None = None) -> None:
        data = json.dumps(payload).encode()
        encoding = self.fake.encoding
        accepted = self.headers.get("accept-encoding", "")
        if encoding and encoding in accepted:
            data = _compress(data, encoding)
            with self.fake._lock:
                self.fake.encoded += 1
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if encoding and encoding in accepted:
            self.send_header("content-encoding", encoding)
        if retry_after_ms is not None:
            self.send_header("retry-after-ms", retry_after_ms)
            self.send_header("retry-after", "0")
        self._provider_headers()
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[tuple[str | None, str]]) -> None:
        self._chunked(
            "text/event-stream; charset=utf-8",
            [(f"event: {name}\n" if name else "") + f"data: {data}\n\n" for name, data in events],
        )

    def _ndjson(self, lines: list[str]) -> None:
        self._chunked("application/x-ndjson", [line + "\n" for line in lines])

    def _chunked(self, content_type: str, events: list[str]) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        self._provider_headers()
        self.end_headers()
        size = self.fake.write_size
        for index, event in enumerate(events):
            if self.fake.pause:  # (the time-to-first-chunk benchmark's provider latency)
                time.sleep(self.fake.pause)
            hold = self.fake.hold_last
            if hold is not None and index == len(events) - 1 and not hold.wait(timeout=30):
                self.fake.held_too_long = True
            raw = event.encode()
            for start in range(0, len(raw), size):
                piece = raw[start : start + size]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
            with self.fake._lock:
                self.fake.written.append(time.monotonic())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _compress(data: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data, mtime=0)
    if encoding == "deflate":
        return zlib.compress(data)
    if encoding == "br":
        import brotli  # type: ignore[import-not-found,unused-ignore]

        return bytes(brotli.compress(data))
    raise ValueError(f"unknown encoding {encoding!r}")


def _error_body(path: str, status: int) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        429: "rate_limit_error",
        500: "api_error",
    }[status]
    message = f"fake {kind} ({status})"
    if path.startswith("/v1/messages"):
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


# -- answers --------------------------------------------------------------------------------


@dataclass
class _Answer:
    body: dict[str, Any]
    events: list[tuple[str | None, str]]


def _example(schema: Any, text: str = "example") -> Any:
    """A small value that satisfies a JSON schema (object, array, scalars, enums); string
    leaves are `text`."""
    if not isinstance(schema, dict):
        return text
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _example(schema["anyOf"][0], text)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object" or "properties" in schema:
        return {name: _example(sub, text) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [_example(schema.get("items", {}), text)]
    return {"integer": 21, "number": 21.5, "boolean": True, "null": None}.get(
        str(kind), text
    )


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _reply_text(prompt: Any) -> str:
    text = " ".join(_texts(prompt))
    match = _ECHO.search(text)
    if match:
        return f"Your token is {match.group(1)} as requested."
    for question, answer in ANSWERS.items():
        if question in text:
            return answer
    return "Hello from the fake provider."


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _has_tool_result(messages: Any) -> bool:
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" or message.get("type") == "function_call_output":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") == "tool_result" for c in content
        ):
            return True
    return False


def _usage_chat() -> dict[str, int]:
    return {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def _chat(body: dict[str, Any], size: int) -> _Answer:
    model = body.get("model", "")
    messages = body.get("messages", [])
    base = {"id": "chatcmpl-fake1", "created": 1_700_000_000, "model": model}
    tools = body.get("tools") or []
    fmt = body.get("response_format") or {}
    if tools and not _has_tool_result(messages):
        function = tools[0]["function"]
        # A prompt that asks for an echo gets it in every string argument (instructor).
        echo = _reply_text(messages) if _ECHO.search(" ".join(_texts(messages))) else "example"
        arguments = json.dumps(_example(function.get("parameters", {}), echo))
        call = {"id": "call_fake1", "type": "function", "function": {"name": function["name"]}}
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**call, "function": {**call["function"], "arguments": arguments}}],
        }
        finish = "tool_calls"
        deltas: list[dict[str, Any]] = [
            {"role": "assistant", "tool_calls": [{"index": 0, **call, "function": {
                "name": function["name"], "arguments": ""}}]}
        ]
        deltas += [
            {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}
            for p in _pieces(arguments, size)
        ]
    else:
        if fmt.get("type") == "json_schema":
            text = json.dumps(_example(fmt["json_schema"].get("schema", {})))
        else:
            text = _reply_text(messages)
        message = {"role": "assistant", "content": text, "refusal": None}
        finish = "stop"
        deltas = [{"role": "assistant", "content": ""}]
        deltas += [{"content": p} for p in _pieces(text, size)]
    full = {
        **base,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage_chat(),
    }
    chunk = {**base, "object": "chat.completion.chunk"}
    events: list[tuple[str | None, str]] = [
        (None, json.dumps({**chunk, "choices": [
            {"index": 0, "delta": d, "finish_reason": None, "logprobs": None}]}))
        for d in deltas
    ]
    events.append((None, json.dumps({**chunk, "choices": [
        {"index": 0, "delta": {}, "finish_reason": finish, "logprobs": None}]})))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, json.dumps({**chunk, "choices": [], "usage": _usage_chat()})))
    events.append((None, "[DONE]"))
    return _Answer(full, events)


def _responses(body: dict[str, Any], size: int) -> _Answer:
    model = body.get("model", "")
    inputs = body.get("input", "")
    tools = body.get("tools") or []
    fmt = ((body.get("text") or {}).get("format")) or {}
    response = {
        "id": "resp_fake1",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": "in_progress",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": tools,
        "usage": None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    }
    seq = iter(range(10_000))
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
    ]
    if tools and not _has_tool_result(inputs if isinstance(inputs, list) else []):
        tool = tools[0]
        arguments = json.dumps(_example(tool.get("parameters", {})))
        item = {"type": "function_call", "id": "fc_fake1", "call_id": "call_fake1",
                "name": tool["name"], "arguments": arguments, "status": "completed"}
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": {**item, "arguments": "", "status": "in_progress"}})
        events += [{"type": "response.function_call_arguments.delta", "item_id": "fc_fake1",
                    "output_index": 0, "delta": p} for p in _pieces(arguments, size)]
        events.append({"type": "response.function_call_arguments.done", "item_id": "fc_fake1",
                       "output_index": 0, "arguments": arguments, "name": tool["name"]})
    else:
        if fmt.get("type") == "json_schema":
            text = json.dumps(_example(fmt.get("schema", {})))
        else:
            text = _reply_text(inputs)
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        item = {"type": "message", "id": "msg_fake1", "status": "completed",
                "role": "assistant", "content": [part]}
        where = {"item_id": "msg_fake1", "output_index": 0, "content_index": 0}
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": {**item, "status": "in_progress", "content": []}})
        events.append({"type": "response.content_part.added", **where,
                       "part": {**part, "text": ""}})
        events += [{"type": "response.output_text.delta", **where, "delta": p, "logprobs": []}
                   for p in _pieces(text, size)]
        events.append({"type": "response.output_text.done", **where, "text": text,
                       "logprobs": []})
        events.append({"type": "response.content_part.done", **where, "part": part})
    done = {
        **response,
        "status": "completed",
        "output": [item],
        "usage": {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    events.append({"type": "response.completed", "response": done})
    numbered = [(e["type"], json.dumps({**e, "sequence_number": next(seq)})) for e in events]
    return _Answer(done, numbered)


def _messages(body: dict[str, Any], size: int) -> _Answer:
    model = body.get("model", "")
    messages = body.get("messages", [])
    tools = body.get("tools") or []
    fmt = ((body.get("output_config") or {}).get("format")) or body.get("output_format") or {}
    usage = {"input_tokens": 11, "output_tokens": 7}
    start = {"id": "msg_fake1", "type": "message", "role": "assistant", "model": model,
             "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": 11, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    if tools and not _has_tool_result(messages):
        tool = tools[0]
        tool_input = _example(tool.get("input_schema", {}))
        block: dict[str, Any] = {"type": "tool_use", "id": "toolu_fake1", "name": tool["name"],
                                 "input": tool_input}
        stop = "tool_use"
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {**block, "input": {}}}))
        events.append(("ping", {"type": "ping"}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": p}})
                   for p in _pieces(json.dumps(tool_input), size)]
    else:
        if fmt.get("type") == "json_schema":
            text = json.dumps(_example(fmt.get("schema", {})))
        else:
            text = _reply_text(messages)
        block = {"type": "text", "text": text}
        stop = "end_turn"
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}}))
        events.append(("ping", {"type": "ping"}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": p}}) for p in _pieces(text, size)]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 7}}))
    events.append(("message_stop", {"type": "message_stop"}))
    full = {**start, "content": [block], "stop_reason": stop, "usage": usage}
    return _Answer(full, [(name, json.dumps(data)) for name, data in events])


def _gemini(model: str, body: dict[str, Any], size: int) -> _Answer:
    text = _reply_text(body.get("contents", []))
    usage = {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}

    def candidate(piece: str, finish: str | None) -> dict[str, Any]:
        found: dict[str, Any] = {"content": {"parts": [{"text": piece}], "role": "model"},
                                 "index": 0}
        if finish:
            found["finishReason"] = finish
        return found

    full = {"candidates": [candidate(text, "STOP")], "usageMetadata": usage,
            "modelVersion": model, "responseId": "fake-gemini-1"}
    pieces = _pieces(text, size)
    events: list[tuple[str | None, str]] = [
        (None, json.dumps({"candidates": [candidate(p, "STOP" if i == len(pieces) - 1 else None)],
                           "usageMetadata": usage, "modelVersion": model,
                           "responseId": "fake-gemini-1"}))
        for i, p in enumerate(pieces)
    ]
    return _Answer(full, events)


def _ollama(body: dict[str, Any], size: int) -> _Answer:
    model = body.get("model", "")
    text = _reply_text(body.get("messages", []))
    base = {"model": model, "created_at": "2024-01-01T00:00:00Z"}
    done = {"done": True, "done_reason": "stop", "total_duration": 1000, "eval_count": 7}
    full = {**base, "message": {"role": "assistant", "content": text}, **done}
    lines = [json.dumps({**base, "message": {"role": "assistant", "content": p}, "done": False})
             for p in _pieces(text, size)]
    lines.append(json.dumps({**base, "message": {"role": "assistant", "content": ""}, **done}))
    return _Answer(full, [(None, line) for line in lines])


def _cohere(body: dict[str, Any], size: int) -> _Answer:
    """Cohere's v2 chat: one JSON answer, or typed server-sent events."""
    text = _reply_text(body.get("messages", []))
    usage = {"billed_units": {"input_tokens": 11, "output_tokens": 7},
             "tokens": {"input_tokens": 11, "output_tokens": 7}}
    full = {"id": "cohere-fake1", "finish_reason": "COMPLETE",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
            "usage": usage}
    events: list[dict[str, Any]] = [
        {"type": "message-start", "id": "cohere-fake1",
         "delta": {"message": {"role": "assistant"}}},
        {"type": "content-start", "index": 0,
         "delta": {"message": {"content": {"type": "text", "text": ""}}}},
    ]
    events += [{"type": "content-delta", "index": 0,
                "delta": {"message": {"content": {"text": p}}}} for p in _pieces(text, size)]
    events.append({"type": "content-end", "index": 0})
    events.append({"type": "message-end",
                   "delta": {"finish_reason": "COMPLETE", "usage": usage}})
    return _Answer(full, [(e["type"], json.dumps(e)) for e in events])


if __name__ == "__main__":  # manual poking: python tests/fakeprovider.py
    with FakeProvider() as fake:
        print(fake.url, flush=True)
        while True:
            time.sleep(3600)
