"""One HTTP exchange recorded or replayed, whatever the client library sends it.

`HttpFixtures` is the record/replay step every HTTP face shares (the httpx/httpx2
transport, the requests adapter, the aiohttp session, the botocore hook). The face
builds the request document (`redactkey.http._documents.request_document`), then hands
it here with a callable that sends the request through the library and returns what
came back:

    fixtures = HttpFixtures(store, mode=mode, redactor=redactor)
    reply = fixtures.exchange(document, lambda: LiveStream(status, pairs, pieces, close))

`exchange` decides whether the call is a stream: the request says so (`wants_stream`,
`refuses_stream`), else the recorded fixture does, else the live response's content
type (`is_stream_type`), so a stream the request did not announce (Ollama's NDJSON) is
still passed on as it arrives. `stream(document, open_stream)` and
`call(document, send)` are the two paths when the face already knows.

The reply is a `Reply` (status, headers, whole body) or, for a stream, a
`StreamReply` (status, headers, byte pieces, `close()`); `aexchange`, `astream` and
`acall` are the async twins. The sending callable is called only when the mode and the
store say the call goes live; a live response is passed on byte for byte (decoded), a
replayed one is rebuilt from its document. Responses to credential, quota and server
failures (`is_environment_failure`) pass through and are never written. A replay miss
is a `MissingFixtureError` named by method and URL, which is also an error of each
loaded SDK (openai, anthropic) so that the SDK neither wraps nor retries it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any, Final, TypeVar

from .._errors import DriftError, FixtureError, FixtureFormatError, MissingFixtureError
from ..fixtures._format import ChunkLinesIterator
from ..fixtures._sequence import AnswerSequence
from ..fixtures._store import FixtureDir
from ..http._documents import (
    KIND,
    RESPONSE_HEADERS,
    achunk_documents,
    body_bytes,
    chunk_bytes,
    chunk_documents,
    content_type_of,
    event_lines_bytes,
    head_document,
    is_environment_failure,
    is_event_stream,
    is_stream_type,
    live_headers,
    refuses_stream,
    response_document,
    shown_url,
    stream_bytes,
    wants_stream,
)
from ..redact._redactor import Redactor
from ._keying import Call
from ._replay import ModelFixtures

__all__ = [
    "AsyncLiveStream",
    "AsyncStreamReply",
    "HttpFixtures",
    "LiveResponse",
    "LiveStream",
    "Reply",
    "StreamReply",
    "miss_body",
    "miss_needs_response",
    "sending_live",
]

JSON = Any
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
Pairs = Iterable[tuple[str, str]]

# The SDKs pass their own errors through untouched and never retry them. A replay miss
# that is also one of those surfaces as itself, at once, instead of being wrapped in a
# connection error and retried with back-off (see docs/decisions/0031).
_SDK_ERRORS: Final = (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))


async def _nothing() -> None:
    return None


class LiveResponse:
    """A whole live response: status, header pairs as received, and the decoded body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: Pairs, body: bytes = b"") -> None:
        self.status, self.headers, self.body = status, list(headers), body


class LiveStream:
    """A live streamed response: status, header pairs, the decoded byte pieces, and
    `close` (called once the pieces are read or abandoned; may be called twice)."""

    __slots__ = ("close", "headers", "pieces", "status")

    def __init__(self, status: int, headers: Pairs, pieces: Iterable[bytes],
                 close: Callable[[], None] = lambda: None) -> None:
        self.status, self.headers, self.pieces, self.close = status, list(headers), pieces, close


class AsyncLiveStream:
    """Async twin of `LiveStream`: async byte pieces and an async `aclose`."""

    __slots__ = ("aclose", "headers", "pieces", "status")

    def __init__(self, status: int, headers: Pairs, pieces: AsyncIterable[bytes],
                 aclose: Callable[[], Awaitable[None]] = _nothing) -> None:
        self.status, self.headers, self.pieces = status, list(headers), pieces
        self.aclose = aclose


class Reply:
    """A whole response to hand the client: status, headers and body bytes; `live` when
    it came off the wire (the live headers less hop-by-hop ones, the decoded live body)."""

    __slots__ = ("body", "headers", "live", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes, *,
                 live: bool) -> None:
        self.status, self.headers, self.body, self.live = status, headers, body, live


class StreamReply:
    """A streamed response to hand the client: status, headers, the byte pieces and
    `close()`, which the client must call when it is done (also when it stops early)."""

    __slots__ = ("close", "headers", "pieces", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]], pieces: Iterator[bytes],
                 close: Callable[[], None]) -> None:
        self.status, self.headers, self.pieces, self.close = status, headers, pieces, close


class AsyncStreamReply:
    """Async twin of `StreamReply`: async byte pieces and `aclose()`."""

    __slots__ = ("aclose", "headers", "pieces", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]],
                 pieces: AsyncIterator[bytes], aclose: Callable[[], Awaitable[None]]) -> None:
        self.status, self.headers, self.pieces, self.aclose = status, headers, pieces, aclose


class _EnvironmentFailure(Exception):
    """Carries a response the fixtures must not keep (401, 429, 5xx…) past the record layer."""

    def __init__(self, live: LiveResponse) -> None:
        super().__init__(f"HTTP {live.status} is the environment's failure; not recorded")
        self.live = live


@functools.cache
def _miss_type(bases: tuple[type, ...]) -> type[FixtureError]:
    return type(bases[0].__name__, bases,
                {"__module__": bases[0].__module__, "__doc__": bases[0].__doc__})


def _sdk_miss(miss: FixtureError, document: Mapping[str, JSON],
              redactor: Redactor | None) -> FixtureError:
    """The miss (or a verify drift), named by method and URL, and also an error of every
    SDK that is loaded."""
    sdk_errors: list[type] = []
    for module_name, error_name in _SDK_ERRORS:
        module = sys.modules.get(module_name)
        sdk_error = getattr(module, error_name, None) if module is not None else None
        if isinstance(sdk_error, type) and not isinstance(miss, sdk_error):
            sdk_errors.append(sdk_error)
    cls = _miss_type((type(miss), *sdk_errors)) if sdk_errors else type(miss)
    named = cls.__new__(cls)
    named.__dict__.update(miss.__dict__)
    named.args = (f"{document['method']} {shown_url(str(document['url']), redactor)}: {miss}",)
    return named


# Stainless-generated clients (they send ``x-stainless-lang``) catch every exception of
# their HTTP client's `send` and retry it as a connection error (groq), but call
# `response.raise_for_status()` outside that net. Anthropic's client checks the status
# itself and lets its own errors through, so a miss raised as an `AnthropicError`
# reaches the caller already (docs/decisions/0031).
_STATUS_CHECKED_ELSEWHERE: Final = ("Anthropic/", "AsyncAnthropic/")


def miss_needs_response(document: Mapping[str, JSON]) -> bool:
    """Whether a miss must reach this request's client as a response whose
    `raise_for_status()` raises it, rather than raised from the transport (0095)."""
    headers = document.get("headers", {})
    agent = str(headers.get("user-agent", ""))
    return "x-stainless-lang" in headers and not agent.startswith(_STATUS_CHECKED_ELSEWHERE)


def miss_body(miss: Exception) -> dict[str, JSON]:
    """The JSON body of a miss answered as a response."""
    return {"error": {"type": "missing_fixture", "message": str(miss)}}


# Set while a redactkey face sends a request live, so that the pytest plugin's network
# guard can tell a face's own connections from a client that bypassed it.
_SENDING: Final = contextvars.ContextVar("redactkey_sending", default=False)


def sending_live() -> bool:
    """True while a redactkey face sends a live request (in this thread or task): the
    connections it opens are its own, not a bypass."""
    return _SENDING.get()


def _marked(send: Callable[[], T]) -> Callable[[], T]:
    def marked() -> T:
        token = _SENDING.set(True)
        try:
            return send()
        finally:
            _SENDING.reset(token)

    return marked


def _amarked(send: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    async def marked() -> T:
        token = _SENDING.set(True)
        try:
            return await send()
        finally:
            _SENDING.reset(token)

    return marked


def _read_whole(live: LiveStream) -> LiveResponse:
    try:
        body = b"".join(live.pieces)
    finally:
        live.close()
    return LiveResponse(live.status, live.headers, body)


async def _aread_whole(opening: Awaitable[AsyncLiveStream]) -> LiveResponse:
    live = await opening
    try:
        body = b"".join([piece async for piece in live.pieces])
    finally:
        await live.aclose()
    return LiveResponse(live.status, live.headers, body)


def _whole(live: LiveResponse) -> Reply:
    return Reply(live.status, live_headers(live.headers), live.body, live=True)


def _counted(method: F) -> F:
    """Key the request (unless the caller did) and count the call among identical ones
    while it is handled (`HttpFixtures._nth`)."""
    @functools.wraps(method)
    def counted(self: HttpFixtures, document: dict[str, JSON], live: Any,
                call: Call | None = None) -> Any:
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            return method(self, document, live, call)

    return counted  # type: ignore[return-value]


def _acounted(method: F) -> F:
    """`_counted` for a coroutine method."""
    @functools.wraps(method)
    async def counted(self: HttpFixtures, document: dict[str, JSON], live: Any,
                      call: Call | None = None) -> Any:
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            return await method(self, document, live, call)

    return counted  # type: ignore[return-value]


class HttpFixtures:
    """Record and replay of HTTP exchanges (kind ``"http"``) through a fixture store.

    `response_headers` is the allowlist of response headers a stored response keeps;
    every other keyword argument is `ModelFixtures`'s (`mode`, `redactor`, `spec`,
    `model`, `how_to_record`, `config`, ...), which does the recording and replaying.
    """

    def __init__(self, store: Any, *, response_headers: Iterable[str] = RESPONSE_HEADERS,
                 **options: Any) -> None:
        self.store = store
        # Identical requests keep every answer, replayed in order (docs/decisions/0022).
        self.answers = AnswerSequence(store) if isinstance(store, FixtureDir) else None
        self.fixtures = ModelFixtures(self.answers or store, copy_answers=False, **options)
        if self.answers is not None:
            self.answers.records = self.fixtures.mode == "record"
        # ModelFixtures supplies a default Redactor; URLs in errors and SSE answers use it too.
        self.redactor: Redactor = self.fixtures.redactor  # type: ignore[assignment]
        self.keep = frozenset(name.lower() for name in response_headers)

    def __repr__(self) -> str:
        return f"HttpFixtures({self.fixtures.store!r}, mode={self.mode!r})"

    @property
    def mode(self) -> str:
        """The resolved mode: "live", "record", "replay", "auto" or "verify"."""
        return str(self.fixtures.mode)

    @property
    def records(self) -> bool:
        """True when a live stream is read to its end although the client stopped early:
        it is written ("record", "auto") or compared with its recording ("verify")."""
        return self.mode in ("record", "auto", "verify")

    # -- documents ---------------------------------------------------------------------

    def _bad(self, call: Call, problem: str) -> FixtureFormatError:
        lookup = self.fixtures.lookup
        where = lookup.where(KIND, call.key) if call.key else lookup.store.location
        return FixtureFormatError(where, problem)

    def _head(self, head: JSON, call: Call) -> tuple[int, dict[str, str]]:
        """Status and headers of a response document (parsed from a file: plain JSON)."""
        if isinstance(head, dict):
            status, headers = head.get("status"), head.get("headers")
            if type(status) is int and 100 <= status <= 599 and isinstance(headers, dict):
                for value in headers.values():
                    if type(value) is not str:
                        break
                else:
                    return status, headers
        raise self._bad(call, "the recorded HTTP response needs an integer 'status' and "
                        "string 'headers'")

    def _capture(self, seen: list[LiveResponse], live: LiveResponse) -> JSON:
        """The live answer as a response document; an environment failure is never recorded."""
        if is_environment_failure(live.status):
            raise _EnvironmentFailure(live)
        seen.append(live)
        document = response_document(live.status, live.headers, live.body, self.keep)
        if "events" in document:
            # A secret split across events is found only when the events are seen together.
            document["events"] = self.redactor.redact_stream(document["events"])
        return document

    def _reply(self, answer: JSON, call: Call, seen: list[LiveResponse]) -> Reply:
        """The live response when one was made (byte-exact), else the replayed one."""
        if seen:
            return _whole(seen[-1])
        status, headers = self._head(answer, call)
        try:
            content = (stream_bytes("text/event-stream", answer["events"]) if "events" in answer
                       else body_bytes(answer))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self._bad(call, f"a recorded response: {exc}") from None
        return Reply(status, list(headers.items()), content, live=False)

    def _replayed(self, call: Call, content_type: str | None, chunks: Iterable[JSON]) -> bytes:
        """A replayed stream's stored chunks back as the one body they make (one read for
        the client instead of one per event); server-sent events still in the lines of
        their file are sent as they stand."""
        if isinstance(chunks, ChunkLinesIterator) and is_event_stream(content_type):
            lines = chunks.unread()
            wire = event_lines_bytes(lines) if lines is not None else None
            if wire is not None:
                return wire
        return self._wire(call, lambda: stream_bytes(content_type, chunks))

    def _wire(self, call: Call, encode: Callable[[], bytes]) -> bytes:
        """Stored chunks back on the wire; a malformed fixture names its file."""
        try:
            return encode()
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self._bad(call, f"a recorded stream chunk: {exc}") from None

    def _streams(self, document: Mapping[str, JSON], call: Call) -> bool | None:
        """Whether a call is a stream: the request says so, else its recording does;
        None when only the live response can tell."""
        if wants_stream(document):
            return True
        mode = self.fixtures.mode
        if mode == "replay" or mode == "auto":
            fixture = self.fixtures.replayed(call)
            if fixture is not None:
                return fixture.outcome == "chunks"
            if mode == "replay":
                return False  # a miss either way; `call` raises it
        return False if refuses_stream(document) else None

    def _nth(self, call: Call) -> contextlib.AbstractContextManager[None]:
        """This call counted among the identical ones of this instance, so that it reads
        (and records) its own answer of the request's sequence."""
        if self.answers is None or self.fixtures.mode == "live" or self.answers.counting():
            return contextlib.nullcontext()
        return self.answers.nth_call(call.key)

    # -- sync --------------------------------------------------------------------------

    @_counted
    def exchange(self, document: dict[str, JSON], open_stream: Callable[[], LiveStream],
                 call: Call | None = None) -> Reply | StreamReply:
        """The response to a request document, streamed or whole as the request, its
        recording or the live response says (see the module docstring). `open_stream`
        sends the request and returns the response unread."""
        call = call or self.fixtures.key(KIND, document)
        streams = self._streams(document, call)
        if streams is True:
            return self.stream(document, open_stream, call)
        if streams is False:
            return self.call(document, lambda: _read_whole(open_stream()), call)
        opened = _marked(open_stream)()
        taken: list[bool] = []

        def take() -> LiveStream:
            taken.append(True)
            return opened

        try:
            if is_stream_type(content_type_of(opened.headers)):
                return self.stream(document, take, call)
            return self.call(document, lambda: _read_whole(take()), call)
        finally:
            if not taken:  # replayed after all (a repeat in record mode): not needed
                opened.close()

    @_counted
    def call(self, document: dict[str, JSON], send: Callable[[], LiveResponse],
             call: Call | None = None) -> Reply:
        """The whole response to a request document: replayed, or from `send` (recorded)."""
        call = call or self.fixtures.key(KIND, document)
        seen: list[LiveResponse] = []
        try:
            answer = self.fixtures.call_keyed(call, lambda: self._capture(seen, _marked(send)()))
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        except (MissingFixtureError, DriftError) as miss:
            raise _sdk_miss(miss, document, self.redactor) from None
        return self._reply(answer, call, seen)

    @_counted
    def stream(self, document: dict[str, JSON], open_stream: Callable[[], LiveStream],
               call: Call | None = None) -> Reply | StreamReply:
        """The streamed response to a request document: replayed chunk by chunk, or read
        from `open_stream` as the client reads it (recorded once read to its end). A
        live environment failure comes back whole, as a `Reply`."""
        call = call or self.fixtures.key(KIND, document)
        open_stream = _marked(open_stream)
        opened: list[LiveStream] = []

        def live() -> Iterator[JSON]:
            response = open_stream()
            opened.append(response)
            try:
                if is_environment_failure(response.status):
                    raise _EnvironmentFailure(_read_whole(response))
                head = head_document(response.status, response.headers, self.keep)
                yield head
                yield from chunk_documents(head, response.pieces)
            finally:
                response.close()

        try:
            chunks = iter(self.fixtures.stream_keyed(call, live))
        except (MissingFixtureError, DriftError) as miss:
            raise _sdk_miss(miss, document, self.redactor) from None
        try:
            head = next(chunks, None)
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        status, headers = self._head(head, call)
        content_type = headers.get("content-type")
        pieces = ((self._wire(call, functools.partial(chunk_bytes, content_type, chunk))
                   for chunk in chunks) if opened
                  else iter([self._replayed(call, content_type, chunks)]))

        def close() -> None:
            try:
                if self.records:
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

        shown = live_headers(opened[0].headers) if opened else list(headers.items())
        return StreamReply(status, shown, pieces, close)

    # -- async -------------------------------------------------------------------------

    @_acounted
    async def aexchange(self, document: dict[str, JSON],
                        open_stream: Callable[[], Awaitable[AsyncLiveStream]],
                        call: Call | None = None) -> Reply | AsyncStreamReply:
        """Async twin of `exchange`."""
        call = call or self.fixtures.key(KIND, document)
        streams = self._streams(document, call)
        if streams is True:
            return await self.astream(document, open_stream, call)
        if streams is False:
            return await self.acall(document, lambda: _aread_whole(open_stream()), call)
        opened = await _amarked(open_stream)()
        taken: list[bool] = []

        async def take() -> AsyncLiveStream:
            taken.append(True)
            return opened

        try:
            if is_stream_type(content_type_of(opened.headers)):
                return await self.astream(document, take, call)
            return await self.acall(document, lambda: _aread_whole(take()), call)
        finally:
            if not taken:
                await opened.aclose()

    @_acounted
    async def acall(self, document: dict[str, JSON],
                    send: Callable[[], Awaitable[LiveResponse]],
                    call: Call | None = None) -> Reply:
        """Async twin of `call`: `send` returns an awaitable `LiveResponse`."""
        call = call or self.fixtures.key(KIND, document)
        seen: list[LiveResponse] = []

        async def live() -> JSON:
            return self._capture(seen, await _amarked(send)())

        try:
            answer = await self.fixtures.acall_keyed(call, live)
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        except (MissingFixtureError, DriftError) as miss:
            raise _sdk_miss(miss, document, self.redactor) from None
        return self._reply(answer, call, seen)

    @_acounted
    async def astream(self, document: dict[str, JSON],
                      open_stream: Callable[[], Awaitable[AsyncLiveStream]],
                      call: Call | None = None) -> Reply | AsyncStreamReply:
        """Async twin of `stream`: `open_stream` returns an awaitable `AsyncLiveStream`."""
        call = call or self.fixtures.key(KIND, document)
        open_stream = _amarked(open_stream)
        opened: list[AsyncLiveStream] = []

        async def live() -> AsyncIterator[JSON]:
            response = await open_stream()
            opened.append(response)
            try:
                if is_environment_failure(response.status):
                    body = b"".join([piece async for piece in response.pieces])
                    raise _EnvironmentFailure(
                        LiveResponse(response.status, response.headers, body))
                head = head_document(response.status, response.headers, self.keep)
                yield head
                async for chunk in achunk_documents(head, aiter(response.pieces)):
                    yield chunk
            finally:
                await response.aclose()

        try:
            chunks = aiter(self.fixtures.astream_keyed(call, live))
        except (MissingFixtureError, DriftError) as miss:
            raise _sdk_miss(miss, document, self.redactor) from None
        try:
            head = await anext(chunks, None)
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        status, headers = self._head(head, call)
        content_type = headers.get("content-type")

        async def pieces() -> AsyncIterator[bytes]:
            if not opened:  # replayed: the stored chunks as one body
                rest = chunks if isinstance(chunks, ChunkLinesIterator) else [
                    chunk async for chunk in chunks]
                yield self._replayed(call, content_type, rest)
                return
            async for chunk in chunks:
                yield self._wire(call, functools.partial(chunk_bytes, content_type, chunk))

        async def aclose() -> None:
            try:
                if self.records:
                    async for _ in chunks:
                        pass
                closer = getattr(chunks, "aclose", None)
                if closer is not None:
                    await closer()
            finally:
                for response in opened:
                    await response.aclose()

        shown = live_headers(opened[0].headers) if opened else list(headers.items())
        return AsyncStreamReply(status, shown, pieces(), aclose)
