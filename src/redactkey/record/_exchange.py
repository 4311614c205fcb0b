"""One HTTP exchange recorded or replayed, whatever the client library sends it.

`HttpFixtures` is the record/replay step every HTTP surface shares (the httpx/httpx2
transport, and any adapter for another client library). The adapter builds the
request document (`redactkey.http._documents.request_document`), then hands it here with a
callable that sends the request through the library and returns what came back:

    fixtures = HttpFixtures(store, mode=mode, redactor=redactor)
    reply = fixtures.exchange(document, lambda: LiveStream(status, pairs, pieces, close))

`exchange` decides whether the call is a stream: the request says so (`wants_stream`,
`refuses_stream`), else the recorded fixture does, else the live response's content
type (`is_stream_type`), so a stream the request did not announce (Ollama's NDJSON) is
still passed on as it arrives. `stream(document, open_stream)` and
`call(document, send)` are the two paths when the adapter already knows.

The reply is a `Reply` (status, headers, whole body) or, for a stream, a
`StreamReply` (status, headers, byte pieces, `close()`); `aexchange`, `astream` and
`acall` are the async twins. The sending callable is called only when the mode and the store say
the call goes live; a live response is passed on byte for byte (decoded), a replayed
one is rebuilt from its document. Responses to credential, quota and server failures
(`is_environment_failure`) pass through and are never written. A replay miss is a
`MissingFixtureError` named by method and URL, which is also an error of each loaded
SDK (openai, anthropic) so that the SDK neither wraps nor retries it.
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
from typing import TYPE_CHECKING, Any, Final, TypeVar

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
from ._replay import ModelFixtures

if TYPE_CHECKING:
    from datetime import timedelta

    from ..fixtures._age import ExpiryAction, FixtureAges
    from ..fixtures._answers import AnswerNormalizer
    from ..fixtures._store import FixtureStore
    from ..fixtures._verify import VerifyRules
    from ..keys._keys import KeySpec
    from ..redact._redactor import Redactor
    from ._config import Config
    from ._replay import Mode

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

# The SDKs pass their own errors through untouched and never retry them. A replay miss
# that is also one of those surfaces as itself, at once, instead of being wrapped in a
# connection error and retried with back-off (see docs/decisions/0031).
_SDK_ERRORS: Final = (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))


class LiveResponse:
    """A whole live response: status, header pairs as received, and the decoded body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: Iterable[tuple[str, str]], body: bytes = b"") -> None:
        self.status = status
        self.headers = list(headers)
        self.body = body


class LiveStream:
    """A live streamed response: status, header pairs, the decoded byte pieces, and
    `close` (called once the pieces are read or abandoned; may be called twice)."""

    __slots__ = ("close", "headers", "pieces", "status")

    def __init__(
        self,
        status: int,
        headers: Iterable[tuple[str, str]],
        pieces: Iterable[bytes],
        close: Callable[[], None] = lambda: None,
    ) -> None:
        self.status = status
        self.headers = list(headers)
        self.pieces = pieces
        self.close = close


async def _nothing() -> None:
    return None


class AsyncLiveStream:
    """Async twin of `LiveStream`: async byte pieces and an async `aclose`."""

    __slots__ = ("aclose", "headers", "pieces", "status")

    def __init__(
        self,
        status: int,
        headers: Iterable[tuple[str, str]],
        pieces: AsyncIterable[bytes],
        aclose: Callable[[], Awaitable[None]] = _nothing,
    ) -> None:
        self.status = status
        self.headers = list(headers)
        self.pieces = pieces
        self.aclose = aclose


class Reply:
    """A whole response to hand the client: status, headers and body bytes.

    `live` is True when it came off the wire (then the headers are the live ones minus
    hop-by-hop headers, and the body is the decoded live body).
    """

    __slots__ = ("body", "headers", "live", "status")

    def __init__(
        self, status: int, headers: list[tuple[str, str]], body: bytes, *, live: bool
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.live = live


class StreamReply:
    """A streamed response to hand the client: status, headers, the byte pieces and
    `close()`, which the client must call when it is done (also when it stops early)."""

    __slots__ = ("close", "headers", "pieces", "status")

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        pieces: Iterator[bytes],
        close: Callable[[], None],
    ) -> None:
        self.status = status
        self.headers = headers
        self.pieces = pieces
        self.close = close


class AsyncStreamReply:
    """Async twin of `StreamReply`: async byte pieces and `aclose()`."""

    __slots__ = ("aclose", "headers", "pieces", "status")

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        pieces: AsyncIterator[bytes],
        aclose: Callable[[], Awaitable[None]],
    ) -> None:
        self.status = status
        self.headers = headers
        self.pieces = pieces
        self.aclose = aclose


class _EnvironmentFailure(Exception):
    """Carries a response the fixtures must not keep (401, 429, 5xx…) past the record layer."""

    def __init__(self, live: LiveResponse) -> None:
        super().__init__(f"HTTP {live.status} is the environment's failure; not recorded")
        self.live = live


@functools.cache
def _miss_type(bases: tuple[type, ...]) -> type[FixtureError]:
    return type(
        bases[0].__name__,
        bases,
        {"__module__": bases[0].__module__, "__doc__": bases[0].__doc__},
    )


def _sdk_miss(
    miss: FixtureError, document: Mapping[str, JSON], redactor: Redactor | None
) -> FixtureError:
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
    `raise_for_status()` raises it, rather than raised from the transport (docs/decisions/0031)."""
    headers = document.get("headers", {})
    agent = str(headers.get("user-agent", ""))
    return "x-stainless-lang" in headers and not agent.startswith(_STATUS_CHECKED_ELSEWHERE)


def miss_body(miss: Exception) -> dict[str, JSON]:
    """The JSON body of a miss answered as a response."""
    return {"error": {"type": "missing_fixture", "message": str(miss)}}


# Set while a redactkey surface sends a request live, so that the pytest plugin's network
# guard can tell the transport's own connections from a client that bypassed it.
_SENDING: Final = contextvars.ContextVar("redactkey_sending", default=False)


def sending_live() -> bool:
    """True while a redactkey transport or adapter sends a live request (in this thread or
    task): the connections it opens are its own, not a bypass."""
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
    """Count the call among identical ones while it is handled (`HttpFixtures._nth`)."""
    @functools.wraps(method)
    def counted(self: HttpFixtures, document: dict[str, JSON], *args: Any) -> Any:
        with self._nth(document):
            return method(self, document, *args)

    return counted  # type: ignore[return-value]


def _acounted(method: F) -> F:
    """`_counted` for a coroutine method."""
    @functools.wraps(method)
    async def counted(self: HttpFixtures, document: dict[str, JSON], *args: Any) -> Any:
        with self._nth(document):
            return await method(self, document, *args)

    return counted  # type: ignore[return-value]


class HttpFixtures:
    """Record and replay of HTTP exchanges (kind ``"http"``) through a fixture store.

    `mode` (None reads ``REDACTKEY_MODE``, and ``REDACTKEY_MODEL_MODE`` unless
    ``model=False``), `redactor`, `spec` (default: the "http" `KeySpec` of `config`),
    `response_headers` (the allowlist a stored response keeps) and `how_to_record`
    (the advice a replay miss ends with), `verify`, `on_drift` and `how_to_rerecord`
    (verify mode), `max_age`, `on_expiry` and `ages` mean what they mean for
    `FixtureTransport`.
    """

    def __init__(
        self,
        store: FixtureStore,
        *,
        mode: Mode | None = None,
        redactor: Redactor | None = None,
        spec: KeySpec | None = None,
        model: bool = True,
        response_headers: Iterable[str] = RESPONSE_HEADERS,
        how_to_record: str | None = None,
        verify: VerifyRules | None = None,
        on_drift: Callable[[DriftError], None] | None = None,
        how_to_rerecord: str | None = None,
        max_age: str | timedelta | None = None,
        on_expiry: ExpiryAction = "warn",
        ages: FixtureAges | None = None,
        config: Config | None = None,
        answer_normalizers: Iterable[AnswerNormalizer] | None = None,
    ) -> None:
        self.store = store
        # Identical requests keep every answer, replayed in order (docs/decisions/0022).
        self.answers = AnswerSequence(store) if isinstance(store, FixtureDir) else None
        self.fixtures = ModelFixtures(
            self.answers or store, mode=mode, redactor=redactor, spec=spec, model=model,
            how_to_record=how_to_record, verify=verify, on_drift=on_drift,
            how_to_rerecord=how_to_rerecord, copy_answers=False, max_age=max_age,
            on_expiry=on_expiry, ages=ages,
            config=config, answer_normalizers=answer_normalizers,
        )
        # ModelFixtures supplies a default Redactor; URLs in errors and SSE answers use it too.
        if self.answers is not None:
            self.answers.records = self.mode == "record"
        self.redactor: Redactor = self.fixtures.redactor  # type: ignore[assignment]
        self.spec = spec
        self.keep = frozenset(name.lower() for name in response_headers)

    def __repr__(self) -> str:
        return f"HttpFixtures({self.store!r}, mode={self.mode!r})"

    @property
    def mode(self) -> str:
        """The resolved mode: "live", "record", "replay", "auto" or "verify"."""
        return str(self.fixtures.mode)

    @property
    def records(self) -> bool:
        """True when a live stream is read to its end although the client stopped early:
        it is written ("record", "auto") or compared with its recording ("verify")."""
        return self.mode in ("record", "auto", "verify")

    def _nth(self, document: dict[str, JSON]) -> contextlib.AbstractContextManager[None]:
        """This call counted among the identical ones of this instance, so that it reads
        (and records) its own answer of the request's sequence."""
        if self.answers is None or self.mode == "live" or self.answers.counting():
            return contextlib.nullcontext()
        return self.answers.nth_call(self.fixtures.key_of(KIND, document))

    # -- documents ---------------------------------------------------------------------

    def _document(self, live: LiveResponse) -> dict[str, JSON]:
        document = response_document(live.status, live.headers, live.body, self.keep)
        if "events" in document:
            # A secret split across events is found only when the events are seen together.
            document["events"] = self.redactor.redact_stream(document["events"])
        return document

    def _head(self, head: JSON, document: Mapping[str, JSON]) -> tuple[int, dict[str, str]]:
        if type(head) is dict:  # a parsed fixture's (the abstract-class checks cost more)
            status, headers = head.get("status"), head.get("headers")
            if type(status) is int and 100 <= status <= 599 and type(headers) is dict:
                for name, value in headers.items():  # (a loop: no generator for a few)
                    if type(name) is not str or type(value) is not str:
                        break
                else:
                    return status, headers
        status = head.get("status") if isinstance(head, Mapping) else None
        headers = head.get("headers") if isinstance(head, Mapping) else None
        if (
            not isinstance(status, int)
            or not 100 <= status <= 599
            or not isinstance(headers, Mapping)
            or not all(isinstance(v, str) for v in headers.values())
        ):
            from ..keys._keys import request_key

            key = request_key(KIND, document, spec=self.fixtures.spec_for(KIND),
                              redactor=self.redactor)
            raise FixtureFormatError(
                str(self.store.path_for(KIND, key)),
                "the recorded HTTP response needs an integer 'status' and string 'headers'",
            )
        return status, {str(k): v for k, v in headers.items()}

    def _capture(self, seen: list[LiveResponse], live: LiveResponse) -> JSON:
        """The live answer as a response document; an environment failure is never recorded."""
        if is_environment_failure(live.status):
            raise _EnvironmentFailure(live)
        seen.append(live)
        return self._document(live)

    def _reply(
        self, answer: JSON, document: Mapping[str, JSON], seen: list[LiveResponse]
    ) -> Reply:
        """The live response when one was made (byte-exact), else the replayed one."""
        if seen:
            return _whole(seen[-1])
        status, headers = self._head(answer, document)
        if "events" in answer:
            content = stream_bytes("text/event-stream", answer["events"])
        else:
            content = body_bytes(answer)
        return Reply(status, list(headers.items()), content, live=False)

    def _encode(
        self, content_type: str | None, chunk: JSON, document: Mapping[str, JSON]
    ) -> bytes:
        """A stored chunk back on the wire; a malformed one names its fixture file."""
        return self._wire(lambda: chunk_bytes(content_type, chunk), document)

    def _replayed(
        self, content_type: str | None, chunks: Iterable[JSON], document: Mapping[str, JSON]
    ) -> bytes:
        """A replayed stream's stored chunks back as the one body they make: all of them
        are at hand, and one piece costs the client one read instead of one per event.
        Server-sent events still in the lines of their file are sent as they stand."""
        if type(chunks) is ChunkLinesIterator and is_event_stream(content_type):
            lines = chunks.unread()
            wire = event_lines_bytes(lines) if lines is not None else None
            if wire is not None:
                return wire
        return self._wire(lambda: stream_bytes(content_type, chunks), document)

    def _wire(self, encode: Callable[[], bytes], document: Mapping[str, JSON]) -> bytes:
        try:
            return encode()
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            from ..keys._keys import request_key

            key = request_key(KIND, document, spec=self.spec, redactor=self.redactor)
            raise FixtureFormatError(
                str(self.store.path_for(KIND, key)), f"a recorded stream chunk: {exc}"
            ) from None

    def _encoded(
        self, chunks: Iterator[JSON], content_type: str | None, document: Mapping[str, JSON]
    ) -> Iterator[bytes]:
        for chunk in chunks:
            yield self._encode(content_type, chunk, document)

    def _miss(self, miss: FixtureError, document: Mapping[str, JSON]) -> Exception:
        return _sdk_miss(miss, document, self.redactor)

    def _streams(self, document: Mapping[str, JSON]) -> bool | None:
        """Whether a call is a stream: the request says so, else its recording does;
        None when only the live response can tell."""
        if wants_stream(document):
            return True
        if refuses_stream(document):
            return False
        if self.mode in ("replay", "auto"):
            outcome = self.fixtures.recorded_outcome(KIND, document)
            if outcome is not None:
                return outcome == "chunks"
            if self.mode == "replay":
                return False  # a miss either way; `call` raises it
        return None

    # -- sync --------------------------------------------------------------------------

    @_counted
    def exchange(
        self, document: dict[str, JSON], open_stream: Callable[[], LiveStream]
    ) -> Reply | StreamReply:
        """The response to a request document, streamed or whole as the request, its
        recording or the live response says (see the module docstring). `open_stream`
        sends the request and returns the response unread."""
        if not wants_stream(document):
            replayed, answer = self.fixtures.replayed_answer(KIND, document)
            if replayed:  # the common replay: keyed and read once, no live path built
                return self._reply(answer, document, [])
        open_stream = _marked(open_stream)
        streams = self._streams(document)
        if streams is True:
            return self.stream(document, open_stream)
        if streams is False:
            return self.call(document, lambda: _read_whole(open_stream()))
        opened = open_stream()
        taken: list[bool] = []

        def take() -> LiveStream:
            taken.append(True)
            return opened

        try:
            if is_stream_type(content_type_of(opened.headers)):
                return self.stream(document, take)
            return self.call(document, lambda: _read_whole(take()))
        finally:
            if not taken:  # replayed after all (a repeat in record mode): not needed
                opened.close()

    @_counted
    def call(self, document: dict[str, JSON], send: Callable[[], LiveResponse]) -> Reply:
        """The whole response to a request document: replayed, or from `send` (recorded)."""
        send = _marked(send)
        seen: list[LiveResponse] = []
        try:
            answer = self.fixtures.call(KIND, document, lambda: self._capture(seen, send()))
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        except (MissingFixtureError, DriftError) as miss:
            raise self._miss(miss, document) from None
        return self._reply(answer, document, seen)

    @_counted
    def stream(
        self, document: dict[str, JSON], open_stream: Callable[[], LiveStream]
    ) -> Reply | StreamReply:
        """The streamed response to a request document: replayed chunk by chunk, or read
        from `open_stream` as the client reads it (recorded once read to its end). A
        live environment failure comes back whole, as a `Reply`."""
        open_stream = _marked(open_stream)
        seen: list[LiveStream] = []
        opened: list[LiveStream] = []

        def live() -> Iterator[JSON]:
            response = open_stream()
            opened.append(response)
            try:
                if is_environment_failure(response.status):
                    body = b"".join(response.pieces)
                    raise _EnvironmentFailure(
                        LiveResponse(response.status, response.headers, body)
                    )
                seen.append(response)
                head = head_document(response.status, response.headers, self.keep)
                yield head
                yield from chunk_documents(head, response.pieces)
            finally:
                response.close()

        try:
            chunks = iter(self.fixtures.stream(KIND, document, live))
        except (MissingFixtureError, DriftError) as miss:
            raise self._miss(miss, document) from None
        try:
            head = next(chunks)
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        except StopIteration:
            head = None
        status, headers = self._head(head, document)
        content_type = headers.get("content-type")
        pieces: Iterator[bytes] = (
            iter([self._replayed(content_type, chunks, document)]) if not opened
            else self._encoded(chunks, content_type, document)
        )

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

        return StreamReply(
            status,
            live_headers(seen[0].headers) if seen else list(headers.items()),
            pieces,
            close,
        )

    # -- async -------------------------------------------------------------------------

    @_acounted
    async def aexchange(
        self,
        document: dict[str, JSON],
        open_stream: Callable[[], Awaitable[AsyncLiveStream]],
    ) -> Reply | AsyncStreamReply:
        """Async twin of `exchange`."""
        if not wants_stream(document):
            replayed, answer = self.fixtures.replayed_answer(KIND, document)
            if replayed:
                return self._reply(answer, document, [])
        open_stream = _amarked(open_stream)
        streams = self._streams(document)
        if streams is True:
            return await self.astream(document, open_stream)
        if streams is False:
            return await self.acall(document, lambda: _aread_whole(open_stream()))
        opened = await open_stream()
        taken: list[bool] = []

        async def take() -> AsyncLiveStream:
            taken.append(True)
            return opened

        try:
            if is_stream_type(content_type_of(opened.headers)):
                return await self.astream(document, take)
            return await self.acall(document, lambda: _aread_whole(take()))
        finally:
            if not taken:
                await opened.aclose()

    @_acounted
    async def acall(
        self, document: dict[str, JSON], send: Callable[[], Awaitable[LiveResponse]]
    ) -> Reply:
        """Async twin of `call`: `send` returns an awaitable `LiveResponse`."""
        send = _amarked(send)
        seen: list[LiveResponse] = []

        async def live() -> JSON:
            return self._capture(seen, await send())

        try:
            answer = await self.fixtures.acall(KIND, document, live)
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        except (MissingFixtureError, DriftError) as miss:
            raise self._miss(miss, document) from None
        return self._reply(answer, document, seen)

    @_acounted
    async def astream(
        self, document: dict[str, JSON], open_stream: Callable[[], Awaitable[AsyncLiveStream]]
    ) -> Reply | AsyncStreamReply:
        """Async twin of `stream`: `open_stream` returns an awaitable `AsyncLiveStream`."""
        open_stream = _amarked(open_stream)
        seen: list[AsyncLiveStream] = []
        opened: list[AsyncLiveStream] = []

        async def live() -> AsyncIterator[JSON]:
            response = await open_stream()
            opened.append(response)
            try:
                if is_environment_failure(response.status):
                    body = b"".join([piece async for piece in response.pieces])
                    raise _EnvironmentFailure(
                        LiveResponse(response.status, response.headers, body)
                    )
                seen.append(response)
                head = head_document(response.status, response.headers, self.keep)
                yield head
                async for chunk in achunk_documents(head, aiter(response.pieces)):
                    yield chunk
            finally:
                await response.aclose()

        try:
            chunks = aiter(self.fixtures.astream(KIND, document, live))
        except (MissingFixtureError, DriftError) as miss:
            raise self._miss(miss, document) from None
        try:
            head = await anext(chunks)
        except _EnvironmentFailure as failure:
            return _whole(failure.live)
        except StopAsyncIteration:
            head = None
        status, headers = self._head(head, document)
        content_type = headers.get("content-type")

        async def pieces() -> AsyncIterator[bytes]:
            if not opened:  # replayed: the stored chunks as one body
                rest = chunks if type(chunks) is ChunkLinesIterator else [
                    chunk async for chunk in chunks]
                yield self._replayed(content_type, rest, document)
                return
            async for chunk in chunks:
                yield self._encode(content_type, chunk, document)

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

        return AsyncStreamReply(
            status,
            live_headers(seen[0].headers) if seen else list(headers.items()),
            pieces(),
            aclose,
        )
