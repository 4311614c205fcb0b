"""HTTP documents and `FixtureTransport`, the record/replay transport for httpx and httpx2.

A request becomes the HTTP request document that keys it (see `request_document`);
a response becomes a small JSON document: the status, an allowlist of headers and the
body as parsed JSON, text or base64, already decoded from gzip/deflate/br. A
server-sent-event stream is kept event by event, so its boundaries survive and a
secret the server split across events can be redacted as one value.

What is dropped on purpose: every header outside the allowlist, so cookies, request
ids, organisation and project ids, rate limits, dates, cf-ray and processing times
never reach a fixture; content-encoding and content-length, because the stored body
is already decoded.
"""

from __future__ import annotations

import base64
import codecs
import functools
import json
import re
import sys
import threading
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, overload

from ._canonical import to_json
from ._errors import (
    CanonicalizationError,
    FixtureFormatError,
    MissingFixtureError,
    UsageError,
    raised_at_entry,
)
from ._replay import ModelFixtures

if TYPE_CHECKING:
    import httpx
    import httpx2

    from ._keys import KeySpec
    from ._redact import Redactor
    from ._replay import Mode
    from ._store import FixtureStore

__all__ = [
    "KIND",
    "RESPONSE_HEADERS",
    "FixtureTransport",
    "SSEParser",
    "body_bytes",
    "body_document",
    "event_bytes",
    "head_document",
    "is_environment_failure",
    "is_event_stream",
    "iter_events",
    "request_document",
    "response_document",
]

KIND: Final = "http"
"""The fixture kind of every call the transport records."""

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


def _is_json_type(content_type: str | None) -> bool:
    mime = _mime(content_type)
    return mime == "application/json" or mime.endswith("+json")


def is_event_stream(content_type: str | None) -> bool:
    """True when a content type announces server-sent events."""
    return _mime(content_type) == "text/event-stream"


def _json_value(text: str | bytes) -> tuple[bool, JSON]:
    """Parse JSON that canonical JSON can hold (no NaN, no huge integers), else (False, None)."""
    try:
        return True, to_json(json.loads(text))
    except (ValueError, CanonicalizationError):
        return False, None


def _dumps(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _merge_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name, value in headers:
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
    if _is_json_type(content_type):
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
        return _dumps(document["json"]).encode("utf-8")
    if "text" in document:
        return str(document["text"]).encode("utf-8")
    if "base64" in document:
        return base64.b64decode(str(document["base64"]))
    return b""


_MULTIPART_BOUNDARY: Final = "redactkey-boundary"


def _stable_multipart(headers: dict[str, str], body: bytes) -> bytes:
    """Replace a random multipart boundary by a fixed one so that uploads key stably."""
    content_type = headers.get("content-type", "")
    match = re.search(r"boundary=\"?([^\";]+)\"?", content_type)
    if _mime(content_type) != "multipart/form-data" or match is None:
        return body
    boundary = match.group(1)
    headers["content-type"] = content_type.replace(boundary, _MULTIPART_BOUNDARY)
    return body.replace(boundary.encode("latin-1"), _MULTIPART_BOUNDARY.encode("ascii"))


def request_document(
    method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes
) -> dict[str, JSON]:
    """The HTTP request document keyed for kind ``"http"``.

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
    lines: list[str] = []
    for field in ("event", "id", "retry"):
        if field in event:
            lines.append(f"{field}: {event[field]}")
    if "json" in event:
        lines.append("data: " + _dumps(event["json"]))
    elif "data" in event:
        lines.extend("data: " + line for line in str(event["data"]).split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


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


def iter_events(chunks: Iterable[bytes]) -> Iterator[dict[str, JSON]]:
    """Server-sent events from a byte stream cut anywhere."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.finish()


# -- the transport --------------------------------------------------------------------

# Not meaningful once the body is stored decoded (or rebuilt from a fixture).
_HOP_HEADERS: Final = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)

# The SDKs pass their own errors through untouched and never retry them. A replay miss
# that is also one of those surfaces as itself, at once, instead of being wrapped in a
# connection error and retried with back-off (see docs/decisions/0031).
_SDK_ERRORS: Final = (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))


class _Live:
    """A live response as it came off the wire (body decoded, when it was read)."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        self.status = status
        self.headers = headers
        self.body = body


class _EnvironmentFailure(Exception):
    """Carries a response the fixtures must not keep (401, 429, 5xx…) past the record layer."""

    def __init__(self, live: _Live) -> None:
        super().__init__(f"HTTP {live.status} is the environment's failure; not recorded")
        self.live = live


def _library(request: Any) -> ModuleType:
    """httpx or httpx2: the library whose request this is, which builds the response."""
    name = type(request).__module__.split(".", 1)[0]
    module = sys.modules.get(name)
    if name not in ("httpx", "httpx2") or module is None:
        raise UsageError(
            f"FixtureTransport serves httpx and httpx2 clients, not a {type(request).__name__} "
            f"from {name!r}; pass it as `transport=` to an httpx or httpx2 client"
        )
    return module


def _transport_bases() -> tuple[type, ...]:
    bases: list[type] = []
    for name in ("httpx", "httpx2"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        bases += [module.BaseTransport, module.AsyncBaseTransport]
    return tuple(bases) or (object,)


if TYPE_CHECKING:

    class _TransportBase(  # type: ignore[misc]
        httpx.BaseTransport,
        httpx.AsyncBaseTransport,
        httpx2.BaseTransport,
        httpx2.AsyncBaseTransport,
    ):
        pass

else:
    _TransportBase = type("_TransportBase", _transport_bases(), {"__slots__": ()})


@functools.cache
def _stream_types(library: ModuleType) -> tuple[type, type]:
    """The library's sync and async byte-stream classes for a response fed from chunks."""

    class SyncStream(library.SyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, pieces: Iterator[bytes], close: Callable[[], None]) -> None:
            self._pieces = pieces
            self._close = close

        def __iter__(self) -> Iterator[bytes]:
            yield from self._pieces

        def close(self) -> None:
            self._close()

    class AsyncStream(library.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(
            self, pieces: AsyncIterator[bytes], close: Callable[[], Awaitable[None]]
        ) -> None:
            self._pieces = pieces
            self._close = close

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self._pieces:
                yield piece

        async def aclose(self) -> None:
            await self._close()

    return SyncStream, AsyncStream


@functools.cache
def _miss_type(bases: tuple[type, ...]) -> type[MissingFixtureError]:
    return type(
        "MissingFixtureError",
        bases,
        {"__module__": bases[0].__module__, "__doc__": bases[0].__doc__},
    )


def _shown_url(url: str, redactor: Redactor | None) -> str:
    if redactor is not None:
        return redactor.redact_url(url)
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    query = "?…" if parts.query else ""
    return f"{parts.scheme}://{host}{port}{parts.path}{query}"


def _sdk_miss(
    miss: MissingFixtureError, document: Mapping[str, JSON], redactor: Redactor | None
) -> MissingFixtureError:
    """The miss, named by method and URL, and also an error of every SDK that is loaded."""
    sdk_errors: list[type] = []
    for module_name, error_name in _SDK_ERRORS:
        module = sys.modules.get(module_name)
        sdk_error = getattr(module, error_name, None) if module is not None else None
        if isinstance(sdk_error, type) and not isinstance(miss, sdk_error):
            sdk_errors.append(sdk_error)
    cls = _miss_type((type(miss), *sdk_errors)) if sdk_errors else type(miss)
    named = cls.__new__(cls)
    named.__dict__.update(miss.__dict__)
    named.args = (f"{document['method']} {_shown_url(str(document['url']), redactor)}: {miss}",)
    return named


def _wants_stream(document: Mapping[str, JSON]) -> bool:
    body = document.get("json")
    if isinstance(body, Mapping) and body.get("stream") is True:
        return True
    accept = str(document.get("headers", {}).get("accept", ""))
    return "text/event-stream" in accept


def _live_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name.lower() not in _HOP_HEADERS]


def _chunk_events(head: Mapping[str, JSON], pieces: Iterable[bytes]) -> Iterator[JSON]:
    content_type = head["headers"].get("content-type")
    if is_event_stream(content_type):
        yield from iter_events(pieces)
    else:
        yield body_document(content_type, b"".join(pieces))


async def _achunk_events(
    head: Mapping[str, JSON], pieces: AsyncIterator[bytes]
) -> AsyncIterator[JSON]:
    content_type = head["headers"].get("content-type")
    if is_event_stream(content_type):
        parser = SSEParser()
        async for piece in pieces:
            for event in parser.feed(piece):
                yield event
        for event in parser.finish():
            yield event
    else:
        yield body_document(content_type, b"".join([piece async for piece in pieces]))


class FixtureTransport(_TransportBase):
    """Record and replay the HTTP calls of an httpx or httpx2 client, sync or async.

    ``httpx2.Client(transport=FixtureTransport(FixtureDir("tests/fixtures")))`` (or
    `httpx.Client`, `AsyncClient`) hands every request to `ModelFixtures` as a call
    of kind ``"http"``: replayed from the store, or sent through `inner` (by default
    the request library's own HTTP transport) and recorded, depending on `mode`
    (`None` reads ``REDACTKEY_MODE``, and ``REDACTKEY_MODEL_MODE`` unless
    ``model=False``, for APIs that are not models). Responses to credential, quota and
    server failures (401, 403, 429, 5xx…) and transport errors pass through unrecorded.
    `spec` changes what counts toward the key (default: the "http" `KeySpec`);
    `response_headers` is the allowlist of response headers a fixture keeps;
    `how_to_record` replaces the advice a replay miss ends with.
    """

    def __init__(
        self,
        store: FixtureStore,
        *,
        mode: Mode | None = None,
        redactor: Redactor | None = None,
        inner: Any = None,
        spec: KeySpec | None = None,
        model: bool = True,
        response_headers: Iterable[str] = RESPONSE_HEADERS,
        how_to_record: str | None = None,
    ) -> None:
        self._store = store
        self._fixtures = ModelFixtures(
            store, mode=mode, redactor=redactor, spec=spec, model=model,
            how_to_record=how_to_record,
        )
        # ModelFixtures supplies a default Redactor; URLs in errors and SSE answers use it too.
        self._redactor: Redactor = self._fixtures.redactor  # type: ignore[assignment]
        self._spec = spec
        self._inner = inner
        self._keep = frozenset(name.lower() for name in response_headers)
        self._owned: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FixtureTransport({self._store!r}, mode={self._fixtures.mode!r})"

    @property
    def mode(self) -> str:
        """The resolved mode: "live", "record", "replay" or "auto"."""
        return str(self._fixtures.mode)

    @property
    def _records(self) -> bool:
        return self.mode in ("record", "auto")

    # -- inner transports --------------------------------------------------------------

    def _inner_for(self, library: ModuleType, *, is_async: bool) -> Any:
        if self._inner is not None:
            other = sys.modules.get("httpx2" if library.__name__ == "httpx" else "httpx")
            if other is not None and isinstance(
                self._inner, (other.BaseTransport, other.AsyncBaseTransport)
            ):
                raise UsageError(
                    f"inner transport {type(self._inner).__name__} is from {other.__name__}, "
                    f"but the request is from {library.__name__}; pass an inner transport "
                    "of the client's own library"
                )
            return self._inner
        with self._lock:
            inner = self._owned.get((library.__name__, is_async))
            if inner is None:
                factory = library.AsyncHTTPTransport if is_async else library.HTTPTransport
                inner = self._owned[(library.__name__, is_async)] = factory()
            return inner

    def close(self) -> None:
        """Close the inner transports that serve sync clients."""
        with self._lock:
            owned = [t for (_, is_async), t in self._owned.items() if not is_async]
        for transport in owned:
            transport.close()
        if self._inner is not None and hasattr(self._inner, "close"):
            self._inner.close()

    async def aclose(self) -> None:
        """Close the inner transports that serve async clients."""
        with self._lock:
            owned = [t for (_, is_async), t in self._owned.items() if is_async]
        for transport in owned:
            await transport.aclose()
        if self._inner is not None and hasattr(self._inner, "aclose"):
            await self._inner.aclose()

    # -- documents ---------------------------------------------------------------------

    def _document(self, live: _Live) -> dict[str, JSON]:
        document = response_document(live.status, live.headers, live.body, self._keep)
        if "events" in document:
            # A secret split across events is found only when the events are seen together.
            document["events"] = self._redactor.redact_stream(document["events"])
        return document

    def _head(self, head: JSON, document: Mapping[str, JSON]) -> tuple[int, dict[str, str]]:
        status = head.get("status") if isinstance(head, Mapping) else None
        headers = head.get("headers") if isinstance(head, Mapping) else None
        if (
            not isinstance(status, int)
            or not 100 <= status <= 599
            or not isinstance(headers, Mapping)
            or not all(isinstance(v, str) for v in headers.values())
        ):
            from ._keys import request_key

            key = request_key(KIND, document, spec=self._spec, redactor=self._redactor)
            raise FixtureFormatError(
                str(self._store.path_for(KIND, key)),
                "the recorded HTTP response needs an integer 'status' and string 'headers'",
            )
        return status, {str(k): v for k, v in headers.items()}

    def _from_live(self, library: ModuleType, request: Any, live: _Live) -> Any:
        return library.Response(
            live.status, headers=_live_headers(live.headers), content=live.body, request=request
        )

    def _from_document(
        self, library: ModuleType, request: Any, answer: JSON, document: Mapping[str, JSON]
    ) -> Any:
        status, headers = self._head(answer, document)
        if "events" in answer:
            content = b"".join(event_bytes(event) for event in answer["events"])
        else:
            content = body_bytes(answer)
        return library.Response(
            status, headers=list(headers.items()), content=content, request=request
        )

    # -- sync --------------------------------------------------------------------------

    @overload
    def handle_request(self, request: httpx.Request) -> httpx.Response: ...
    @overload
    def handle_request(self, request: httpx2.Request) -> httpx2.Response: ...

    @raised_at_entry
    def handle_request(self, request: Any) -> Any:
        """Answer one request of a sync httpx or httpx2 client."""
        library = _library(request)
        document = request_document(
            request.method, str(request.url), request.headers.multi_items(), request.read()
        )
        try:
            if _wants_stream(document):
                return self._stream(library, request, document)
            return self._call(library, request, document)
        except MissingFixtureError as miss:
            raise _sdk_miss(miss, document, self._redactor) from None

    def _capture(self, seen: list[_Live], response: Any, body: bytes) -> JSON:
        """The live answer as a response document; an environment failure is never recorded."""
        captured = _Live(response.status_code, response.headers.multi_items(), body)
        if is_environment_failure(captured.status):
            raise _EnvironmentFailure(captured)
        seen.append(captured)
        return self._document(captured)

    def _respond(
        self, library: ModuleType, request: Any, answer: JSON,
        document: Mapping[str, JSON], seen: list[_Live],
    ) -> Any:
        """The live response when one was made (byte-exact), else the replayed one."""
        if seen:
            return self._from_live(library, request, seen[-1])
        return self._from_document(library, request, answer, document)

    def _call(self, library: ModuleType, request: Any, document: dict[str, JSON]) -> Any:
        seen: list[_Live] = []

        def live() -> JSON:
            response = self._inner_for(library, is_async=False).handle_request(request)
            try:
                body = response.read()
            finally:
                response.close()
            return self._capture(seen, response, body)

        try:
            answer = self._fixtures.call(KIND, document, live)
        except _EnvironmentFailure as failure:
            return self._from_live(library, request, failure.live)
        return self._respond(library, request, answer, document, seen)

    def _stream(self, library: ModuleType, request: Any, document: dict[str, JSON]) -> Any:
        seen: list[_Live] = []
        opened: list[Any] = []

        def live() -> Iterator[JSON]:
            response = self._inner_for(library, is_async=False).handle_request(request)
            opened.append(response)
            try:
                captured = _Live(response.status_code, response.headers.multi_items())
                if is_environment_failure(captured.status):
                    captured.body = response.read()
                    raise _EnvironmentFailure(captured)
                seen.append(captured)
                head = head_document(captured.status, captured.headers, self._keep)
                yield head
                yield from _chunk_events(head, response.iter_bytes())
            finally:
                response.close()

        chunks = iter(self._fixtures.stream(KIND, document, live))
        try:
            head = next(chunks)
        except _EnvironmentFailure as failure:
            return self._from_live(library, request, failure.live)
        except StopIteration:
            head = None
        status, headers = self._head(head, document)
        events = is_event_stream(headers.get("content-type"))
        pieces = ((event_bytes if events else body_bytes)(chunk) for chunk in chunks)

        def close() -> None:
            try:
                if self._records:
                    # A consumer may stop at its end marker ("[DONE]") before the stream
                    # ends; the rest is read so the recording is complete and written.
                    for _ in chunks:
                        pass
                closer = getattr(chunks, "close", None)
                if closer is not None:
                    closer()
            finally:
                for response in opened:
                    response.close()

        sync_stream, _ = _stream_types(library)
        return library.Response(
            status,
            headers=_live_headers(seen[0].headers) if seen else list(headers.items()),
            stream=sync_stream(pieces, close),
            request=request,
        )

    # -- async -------------------------------------------------------------------------

    @overload
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response: ...
    @overload
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response: ...

    @raised_at_entry
    async def handle_async_request(self, request: Any) -> Any:
        """Answer one request of an async httpx or httpx2 client."""
        library = _library(request)
        document = request_document(
            request.method, str(request.url), request.headers.multi_items(), await request.aread()
        )
        try:
            if _wants_stream(document):
                return await self._astream(library, request, document)
            return await self._acall(library, request, document)
        except MissingFixtureError as miss:
            raise _sdk_miss(miss, document, self._redactor) from None

    async def _acall(self, library: ModuleType, request: Any, document: dict[str, JSON]) -> Any:
        seen: list[_Live] = []

        async def live() -> JSON:
            inner = self._inner_for(library, is_async=True)
            response = await inner.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            return self._capture(seen, response, body)

        try:
            answer = await self._fixtures.acall(KIND, document, live)
        except _EnvironmentFailure as failure:
            return self._from_live(library, request, failure.live)
        return self._respond(library, request, answer, document, seen)

    async def _astream(self, library: ModuleType, request: Any, document: dict[str, JSON]) -> Any:
        seen: list[_Live] = []
        opened: list[Any] = []

        async def live() -> AsyncIterator[JSON]:
            inner = self._inner_for(library, is_async=True)
            response = await inner.handle_async_request(request)
            opened.append(response)
            try:
                captured = _Live(response.status_code, response.headers.multi_items())
                if is_environment_failure(captured.status):
                    captured.body = await response.aread()
                    raise _EnvironmentFailure(captured)
                seen.append(captured)
                head = head_document(captured.status, captured.headers, self._keep)
                yield head
                async for chunk in _achunk_events(head, response.aiter_bytes()):
                    yield chunk
            finally:
                await response.aclose()

        chunks = aiter(self._fixtures.astream(KIND, document, live))
        try:
            head = await anext(chunks)
        except _EnvironmentFailure as failure:
            return self._from_live(library, request, failure.live)
        except StopAsyncIteration:
            head = None
        status, headers = self._head(head, document)
        events = is_event_stream(headers.get("content-type"))

        async def pieces() -> AsyncIterator[bytes]:
            async for chunk in chunks:
                yield (event_bytes if events else body_bytes)(chunk)

        async def close() -> None:
            try:
                if self._records:
                    async for _ in chunks:
                        pass
                closer = getattr(chunks, "aclose", None)
                if closer is not None:
                    await closer()
            finally:
                for response in opened:
                    await response.aclose()

        _, async_stream = _stream_types(library)
        return library.Response(
            status,
            headers=_live_headers(seen[0].headers) if seen else list(headers.items()),
            stream=async_stream(pieces(), close),
            request=request,
        )
