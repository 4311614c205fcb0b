"""The HTTP document model: requests and responses as JSON documents, for every client.

Pure data code: it imports no HTTP client library, so the vcrpy hooks, the audit and
every client adapter share it (decision 0080). An adapter keys `request_document(...)`
as kind `KIND`, asks `wants_stream` / `refuses_stream` / `is_stream_type` whether the
answer is a stream, stores `response_document(...)`, or `head_document(...)` and
`chunk_documents(...)` for a stream, and replays with `body_bytes`, `chunk_bytes` and
`stream_bytes`. What a document holds, and why response headers are an allowlist, is
decision 0030 (docs/decisions/0030-http-response-document.md).
"""

from __future__ import annotations

import base64
import codecs
import json
import re
import urllib.parse
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from .._errors import CanonicalizationError, UsageError
from ..fixtures._format import CHUNK_LINE_SEPARATOR, HTTP_KIND
from ..keys._canonical import long_digit_run, to_json
from ._eventstream import EVENT_STREAM, FrameDecoder, encode_frame

if TYPE_CHECKING:
    from ..redact._redactor import Redactor

__all__ = [
    "KIND",
    "RESPONSE_HEADERS",
    "SSEParser",
    "achunk_documents",
    "body_bytes",
    "body_document",
    "chunk_bytes",
    "chunk_documents",
    "content_type_of",
    "decoded_body",
    "event_bytes",
    "event_lines_bytes",
    "frame_bytes",
    "frame_document",
    "head_document",
    "header_items",
    "is_environment_failure",
    "is_event_stream",
    "is_stream_type",
    "live_headers",
    "refuses_stream",
    "request_document",
    "response_document",
    "shown_url",
    "wants_stream",
]

KIND: Final = HTTP_KIND
"""The fixture kind of every recorded HTTP call, whatever the client library."""

RESPONSE_HEADERS: Final = frozenset(
    {
        "content-type",
        "content-disposition",
        "location",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
    }
)
"""Response headers a fixture keeps: what the SDKs read to parse an answer or a redirect."""

# 401/403/407 are credentials, 408/425/429 timing and quota, 409 the providers' lock
# timeouts; 5xx is the server. None of them says anything about the request itself.
_ENVIRONMENT_STATUSES: Final = frozenset({401, 403, 407, 408, 409, 425, 429})

_LINE_END = re.compile(r"\r\n|\r|\n")

JSON = Any


def is_environment_failure(status: int) -> bool:
    """True for statuses that belong to the environment (credentials, quota, server) and
    are therefore never recorded."""
    return status in _ENVIRONMENT_STATUSES or status >= 500


def _mime(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


_SSE_TYPE: Final = "text/event-stream"


def is_event_stream(content_type: str | None) -> bool:
    """True when a content type announces server-sent events."""
    return _mime(content_type) == _SSE_TYPE


_SAFE_RUN: Final = 16  # 2**53 has 16 digits: a shorter integer is exact in JSON


def _json_value(text: str | bytes) -> tuple[bool, JSON]:
    """Parse JSON that canonical JSON can hold (no NaN, no huge integers), else (False, None)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if not long_digit_run(data, _SAFE_RUN):
        # orjson refuses NaN, infinities and lone surrogates; with no 16 digits in a row
        # no integer reaches 2**53. What it returns is what `to_json` would return.
        try:
            return True, orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        return True, to_json(json.loads(text))
    except (ValueError, CanonicalizationError):
        return False, None


def _dumps(value: JSON) -> bytes:
    """Compact UTF-8 JSON (orjson; the standard library for integers beyond 64 bits)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _merge_headers(headers: Iterable[tuple[str, str]] | Mapping[str, str]) -> dict[str, str]:
    """Header pairs (or a map) as one map of lower-case names; a name sent twice holds
    its values joined by ", ", in the order sent."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    merged: dict[str, str] = {}
    for name, value in pairs:
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


def body_document(content_type: str | None, body: bytes) -> dict[str, JSON]:
    """The body field of a request or response document.

    ``{"json": value}`` for a JSON body, ``{"text": str}`` for other UTF-8,
    ``{"base64": str}`` for binary data and ``{}`` for no body.
    """
    if not body:
        return {}
    mime = _mime(content_type)
    if mime == "application/json" or mime.endswith("+json"):
        ok, value = _json_value(body)
        if ok:
            return {"json": value}
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


def body_bytes(document: Mapping[str, JSON]) -> bytes:
    """The bytes of a document's body field (the inverse of `body_document`)."""
    if "json" in document:
        return _dumps(document["json"])
    if "text" in document:
        return str(document["text"]).encode("utf-8")
    if "base64" in document:
        return base64.b64decode(str(document["base64"]))
    return b""


_MULTIPART_BOUNDARY: Final = "redactkey-boundary"
_BOUNDARY: Final = re.compile(r"boundary=\"?([^\";]+)\"?")


def _stable_multipart(headers: dict[str, str], body: bytes) -> bytes:
    """Replace a random multipart boundary by a fixed one so that uploads key stably."""
    content_type = headers.get("content-type", "")
    match = _BOUNDARY.search(content_type)
    if _mime(content_type) != "multipart/form-data" or match is None:
        return body
    boundary = match.group(1)
    headers["content-type"] = content_type.replace(boundary, _MULTIPART_BOUNDARY)
    return body.replace(boundary.encode("latin-1"), _MULTIPART_BOUNDARY.encode("ascii"))


def request_document(
    method: str, url: str, headers: Iterable[tuple[str, str]] | Mapping[str, str], body: bytes
) -> dict[str, JSON]:
    """The HTTP request document keyed for kind ``"http"`` (`headers`: name-value pairs,
    or a map of names to values).

    ``{"method", "url", "headers" (lower-case names), and at most one of "json" |
    "text" | "base64"}``. Which headers count toward the key is the HTTP `KeySpec`'s
    business; this keeps them all. A multipart boundary is made deterministic.
    """
    merged = _merge_headers(headers)
    body = _stable_multipart(merged, body)
    document: dict[str, JSON] = {"method": method.upper(), "url": url, "headers": merged}
    document.update(body_document(merged.get("content-type"), body))
    return document


def head_document(
    status: int, headers: Iterable[tuple[str, str]], keep: frozenset[str] = RESPONSE_HEADERS
) -> dict[str, JSON]:
    """Status and allowlisted headers of a response (content-type is always kept)."""
    merged = _merge_headers(headers)
    wanted = keep | {"content-type"}
    return {"status": status, "headers": {k: v for k, v in merged.items() if k in wanted}}


def response_document(
    status: int,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    keep: frozenset[str] = RESPONSE_HEADERS,
) -> dict[str, JSON]:
    """The stored form of a whole (already decoded) response.

    ``{"status", "headers", and one of "json" | "text" | "base64" | "events"}``, where
    "events" is the list of server-sent events (see `SSEParser`).
    """
    document = head_document(status, headers, keep)
    content_type = document["headers"].get("content-type")
    if is_event_stream(content_type):
        parser = SSEParser()
        document["events"] = [*parser.feed(body), *parser.finish()]
    else:
        document.update(body_document(content_type, body))
    return document


def event_bytes(event: Mapping[str, JSON]) -> bytes:
    """One stored server-sent event back on the wire, ending with its blank line."""
    lines: list[bytes] = []
    for field in ("event", "id", "retry"):
        if field in event:
            lines.append(f"{field}: {event[field]}".encode())
    if "json" in event:
        lines.append(b"data: " + _dumps(event["json"]))
    elif "data" in event:
        lines.extend(("data: " + line).encode() for line in str(event["data"]).split("\n"))
    return b"\n".join(lines) + b"\n\n"


class SSEParser:
    """Incremental server-sent-event parser (WHATWG event-stream interpretation).

    Feed it byte chunks cut anywhere (mid-line, mid-character, between ``\\r`` and
    ``\\n``); it returns each complete event as a dict with the fields that were
    present: "event", "id", "retry" (int), and "json" (data that is a JSON object or
    array) or "data" (any other data, as text). Comments are skipped; an event left
    unterminated at the end of the stream is dropped, as the specification says.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._fields: dict[str, JSON] = {}
        self._data: list[str] | None = None

    def feed(self, chunk: bytes) -> list[dict[str, JSON]]:
        """Events completed by this chunk."""
        self._buffer += self._decoder.decode(chunk)
        return self._lines(final=False)

    def finish(self) -> list[dict[str, JSON]]:
        """Events completed by the end of the stream."""
        self._buffer += self._decoder.decode(b"", final=True)
        events = self._lines(final=True)
        if self._buffer:
            events.extend(self._line(self._buffer))
            self._buffer = ""
        self._fields, self._data = {}, None
        return events

    def _lines(self, *, final: bool) -> list[dict[str, JSON]]:
        events: list[dict[str, JSON]] = []
        position = 0
        text = self._buffer
        for match in _LINE_END.finditer(text):
            if match.group() == "\r" and match.end() == len(text) and not final:
                break  # a "\n" may follow in the next chunk
            events.extend(self._line(text[position : match.start()]))
            position = match.end()
        self._buffer = text[position:]
        return events

    def _line(self, line: str) -> list[dict[str, JSON]]:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return []
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data = [*(self._data or []), value]
        elif name == "event":
            self._fields["event"] = value
        elif name == "id" and "\0" not in value:
            self._fields["id"] = value
        elif name == "retry" and value.isdigit():
            self._fields["retry"] = int(value)
        return []

    def _dispatch(self) -> list[dict[str, JSON]]:
        if not self._fields and self._data is None:
            return []
        event = dict(self._fields)
        if self._data is not None:
            data = "\n".join(self._data)
            ok, value = _json_value(data) if data[:1] in ("{", "[") else (False, None)
            if ok:
                event["json"] = value
            else:
                event["data"] = data
        self._fields, self._data = {}, None
        return [event]


# -- helpers every client adapter needs ------------------------------------------------

_HOP_HEADERS: Final = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)
"""Headers not meaningful once a body is stored decoded (or rebuilt from a fixture)."""


def live_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers of a live response passed on with its decoded body (hop headers dropped)."""
    return [(name, value) for name, value in headers if name.lower() not in _HOP_HEADERS]


def header_items(headers: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """(name, value) pairs of a dict-like header map whose values may be lists."""
    items: list[tuple[str, str]] = []
    for name, value in dict(headers or {}).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        items.extend((str(name), str(v)) for v in values)
    return items


def content_type_of(headers: Iterable[tuple[str, str]]) -> str:
    """The content-type among header pairs ("" when there is none)."""
    return next((v for k, v in headers if k.lower() == "content-type"), "")


def decoded_body(data: bytes, encoding: str) -> bytes:
    """A body without its content-encoding (gzip, deflate, identity), so it can be redacted."""
    encoding = encoding.strip().lower()
    if encoding in ("identity", ""):
        return data
    if encoding in ("gzip", "x-gzip", "deflate"):
        try:
            return zlib.decompress(data, zlib.MAX_WBITS | 32)  # gzip or zlib header
        except zlib.error:
            return zlib.decompress(data, -zlib.MAX_WBITS)  # raw deflate
    raise UsageError(
        f"cannot redact a {encoding!r}-encoded response body; record with "
        "decode_compressed_response=True (use_redactkey sets it) or without that encoding"
    )


# Newline-delimited JSON (Ollama's streams), under each name it goes by.
_NDJSON_TYPES: Final = frozenset(
    {
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonl",
        "application/jsonlines",
        "application/x-jsonlines",
    }
)


def is_stream_type(content_type: str | None) -> bool:
    """True when a response is a stream by its content type (server-sent events,
    newline-delimited JSON or AWS event-stream frames), whatever the request asked for."""
    mime = _mime(content_type)
    return mime in (_SSE_TYPE, EVENT_STREAM) or mime in _NDJSON_TYPES


def wants_stream(document: Mapping[str, JSON]) -> bool:
    """True when a request document asks for a streamed answer: ``"stream": true`` in a
    JSON body, ``alt=sse`` in the query or an ``Accept`` naming a stream type (decision
    0030 says which providers ask each way)."""
    body = document.get("json")
    if isinstance(body, Mapping) and body.get("stream") is True:
        return True
    url = str(document.get("url", ""))
    if "?" in url and ("alt", "sse") in urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query):
        return True
    headers = document.get("headers")
    accept = str(headers.get("accept", "")) if headers else ""
    return any(is_stream_type(part) for part in accept.split(","))


def refuses_stream(document: Mapping[str, JSON]) -> bool:
    """True when a request document says it wants one whole answer (``"stream": false``)."""
    body = document.get("json")
    return isinstance(body, Mapping) and body.get("stream") is False


def frame_document(headers: list[list[JSON]], payload: bytes) -> dict[str, JSON]:
    """The stored form of one AWS event-stream frame: ``{"headers": [[name, value]...],
    and the payload as "json" | "text" | "base64"}`` (headers in wire order)."""
    content_type = next(
        (v for n, v in headers if n == ":content-type" and isinstance(v, str)), None
    )
    document: dict[str, JSON] = {"headers": headers}
    document.update(body_document(content_type, payload))
    return document


def frame_bytes(document: Mapping[str, JSON]) -> bytes:
    """One stored frame back on the wire, as the bytes it came from (up to JSON key order);
    a malformed document is a `ValueError`."""
    return encode_frame(document.get("headers", []), body_bytes(document))


class _Chunker:
    """The stored chunks of a streamed response, each as soon as the pieces fed complete
    it: one per server-sent event, one per line of newline-delimited JSON, one per AWS
    event-stream frame, or one body document for any other content (at the end)."""

    def __init__(self, content_type: str | None) -> None:
        self._content_type = content_type
        mime = _mime(content_type)
        self._events = SSEParser() if mime == _SSE_TYPE else None
        self._frames = FrameDecoder() if mime == EVENT_STREAM else None
        self._lines = mime in _NDJSON_TYPES
        self._pending = b""  # an NDJSON line not yet ended
        self._held: list[bytes] = []  # any other content, joined at the end

    def _line(self, line: bytes) -> dict[str, JSON]:
        return body_document("application/json", line.rstrip(b"\r")) or {"text": ""}

    def feed(self, piece: bytes) -> list[JSON]:
        if self._events is not None:
            return self._events.feed(piece)
        if self._frames is not None:
            return [frame_document(headers, payload)
                    for headers, payload in self._frames.feed(piece)]
        if not self._lines:
            self._held.append(piece)
            return []
        *lines, self._pending = (self._pending + piece).split(b"\n")
        return [self._line(line) for line in lines]

    def finish(self) -> list[JSON]:
        if self._events is not None:
            return self._events.finish()
        if self._frames is not None:
            self._frames.finish()
            return []
        if self._lines:
            return [self._line(self._pending)] if self._pending else []
        return [body_document(self._content_type, b"".join(self._held))]


def chunk_documents(head: Mapping[str, JSON], pieces: Iterable[bytes]) -> Iterator[JSON]:
    """The stored chunks after `head` of a streamed response (see `_Chunker`)."""
    chunker = _Chunker(head["headers"].get("content-type"))
    for piece in pieces:
        yield from chunker.feed(piece)
    yield from chunker.finish()


async def achunk_documents(
    head: Mapping[str, JSON], pieces: AsyncIterator[bytes]
) -> AsyncIterator[JSON]:
    """Async twin of `chunk_documents`."""
    chunker = _Chunker(head["headers"].get("content-type"))
    async for piece in pieces:
        for chunk in chunker.feed(piece):
            yield chunk
    for chunk in chunker.finish():
        yield chunk


def chunk_bytes(content_type: str | None, chunk: Mapping[str, JSON]) -> bytes:
    """One stored chunk of a streamed response back as the bytes sent on the wire (the
    inverse of `chunk_documents`)."""
    mime = _mime(content_type)
    if mime == _SSE_TYPE:
        return event_bytes(chunk)
    if mime in _NDJSON_TYPES:
        return body_bytes(chunk) + b"\n"
    if mime == EVENT_STREAM:
        return frame_bytes(chunk)
    return body_bytes(chunk)


def stream_bytes(content_type: str | None, chunks: Iterable[Mapping[str, JSON]]) -> bytes:
    """Stored chunks of a streamed response back as the one body they make on the wire
    (what `chunk_bytes` gives chunk by chunk, joined)."""
    return b"".join([chunk_bytes(content_type, chunk) for chunk in chunks])


# Stored events written one per line (`dump_fixture_document`): each line a
# `{"json": ...}` event, and perhaps a last `{"data": "[DONE]"}`.
_JSON_LINE: Final = CHUNK_LINE_SEPARATOR + b'{"json":'
_BETWEEN_JSON_LINES: Final = b"}" + _JSON_LINE
_DONE_LINE: Final = CHUNK_LINE_SEPARATOR + b'{"data":"[DONE]"}'


def event_lines_bytes(lines: bytes) -> bytes | None:
    """The body that stored server-sent events make on the wire, from the lines a fixture
    file holds them in (`ChunkLinesIterator.unread`), without parsing them: when every
    line is an event of JSON data alone (the last may be ``data: [DONE]``), the lines
    are that JSON already, as `stream_bytes` would write it (a float's digits as the
    writer wrote them). None for anything else (a name, an id, a retry, text data)."""
    tail = b""
    if lines.endswith(_DONE_LINE):
        lines, tail = lines[: -len(_DONE_LINE)], b"data: [DONE]\n\n"
    if not lines:
        return tail
    # A JSON line holds no line break, so every line is an event of JSON data when the
    # lines that start so are all of them; and since each line's members are sorted,
    # anything beside the data ("retry") would follow it on its line.
    if (
        not lines.startswith(_JSON_LINE)
        or lines.count(_JSON_LINE) != lines.count(b"\n")
        or b',"retry":' in lines
    ):
        return None
    body = lines[len(_JSON_LINE): -1].replace(_BETWEEN_JSON_LINES, b"\n\ndata: ")
    return b"data: " + body + b"\n\n" + tail


def shown_url(url: str, redactor: Redactor | None) -> str:
    """A URL fit for an error message: redacted, or without userinfo and query."""
    if redactor is not None:
        return redactor.redact_url(url)
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    query = "?…" if parts.query else ""
    return f"{parts.scheme}://{host}{port}{parts.path}{query}"
