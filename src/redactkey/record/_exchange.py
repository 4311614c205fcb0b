"""One HTTP exchange recorded or replayed, whatever the client library sends it.

`HttpFixtures` is the record/replay step every HTTP face shares (the httpx/httpx2
transport, the requests adapter, the aiohttp session, the botocore hook): the face
builds the request document (`redactkey.http._documents.request_document`) and hands it
here with a callable that sends the request through its library. docs/architecture.md
("One replayed call") follows a call through it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from .._errors import DriftError, FixtureFormatError, MissingFixtureError
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
    stream_bytes,
    wants_stream,
)
from ..redact._redactor import Redactor
from ._keying import Call
from ._replay import ModelFixtures
from ._wire import (
    AsyncLiveStream,
    AsyncStreamReply,
    EnvironmentFailure,
    LiveResponse,
    LiveStream,
    Reply,
    StreamReply,
    amarked,
    aread_whole,
    marked,
    read_whole,
    sdk_miss,
    whole,
)

__all__ = ["HttpFixtures", "LiveResponse", "LiveStream"]

JSON = Any

# The modes in which a live stream is read to its end although the client stopped early:
# it is written ("record", "auto") or compared with its recording ("verify").
_READ_TO_THE_END = ("record", "auto", "verify")


class HttpFixtures:
    """Record and replay of HTTP exchanges (kind ``"http"``) through a fixture store.

    `response_headers` is the allowlist of response headers a stored response keeps;
    every other keyword argument is `ModelFixtures`'s, which records and replays.
    """

    def __init__(self, store: Any, *, response_headers: Iterable[str] = RESPONSE_HEADERS,
                 **options: Any) -> None:
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
        return str(self.fixtures.mode)

    def _bad(self, call: Call, problem: str) -> FixtureFormatError:
        lookup = self.fixtures.lookup
        where = lookup.where(KIND, call.key) if call.key else lookup.store.location
        return FixtureFormatError(where, problem)

    def _head(self, head: JSON, call: Call) -> tuple[int, dict[str, str]]:
        if isinstance(head, dict):
            status, headers = head.get("status"), head.get("headers")
            if (type(status) is int and 100 <= status <= 599 and isinstance(headers, dict)
                    and all(type(value) is str for value in headers.values())):
                return status, headers
        raise self._bad(call, "the recorded HTTP response needs an integer 'status' and "
                        "string 'headers'")

    def _capture(self, seen: list[LiveResponse], live: LiveResponse) -> JSON:
        """The live answer as a response document; an environment failure is never recorded."""
        if is_environment_failure(live.status):
            raise EnvironmentFailure(live)
        seen.append(live)
        document = response_document(live.status, live.headers, live.body, self.keep)
        if "events" in document:
            # A secret split across events is found only when the events are seen together.
            document["events"] = self.redactor.redact_stream(document["events"])
        return document

    def _reply(self, answer: JSON, call: Call, seen: list[LiveResponse]) -> Reply:
        """The live response when one was made (byte-exact), else the replayed one."""
        if seen:
            return whole(seen[-1])
        status, headers = self._head(answer, call)
        content = self._wire(call, lambda: (
            stream_bytes("text/event-stream", answer["events"]) if "events" in answer
            else body_bytes(answer)), "a recorded response")
        return Reply(status, list(headers.items()), content)

    def _replayed(self, call: Call, content_type: str | None, chunks: Iterable[JSON]) -> bytes:
        """A replayed stream's stored chunks back as the one body they make (one read for
        the client instead of one per event); server-sent events still in the lines of
        their file go out as they stand."""
        if isinstance(chunks, ChunkLinesIterator) and is_event_stream(content_type):
            lines = chunks.unread()
            as_they_stand = event_lines_bytes(lines) if lines is not None else None
            if as_they_stand is not None:
                return as_they_stand
        return self._wire(call, lambda: stream_bytes(content_type, chunks))

    def _wire(self, call: Call, encode: Callable[[], bytes],
              what: str = "a recorded stream chunk") -> bytes:
        """Stored data back on the wire; a malformed fixture names its file."""
        try:
            return encode()
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise self._bad(call, f"{what}: {exc}") from None

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

    def exchange(self, document: dict[str, JSON], open_stream: Callable[[], LiveStream],
                 call: Call | None = None) -> Reply | StreamReply:
        """The response to a request document, streamed or whole as the request, else its
        recording, else the live response's content type says (so Ollama's NDJSON, which
        the request does not announce, passes on as it arrives). `open_stream` sends the
        request and returns the response unread."""
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            streams = self._streams(document, call)
            if streams is True:
                return self.stream(document, open_stream, call)
            if streams is False:
                return self.call(document, lambda: read_whole(open_stream()), call)
            opened = marked(open_stream)()
            taken: list[bool] = []

            def take() -> LiveStream:
                taken.append(True)
                return opened

            try:
                if is_stream_type(content_type_of(opened.headers)):
                    return self.stream(document, take, call)
                return self.call(document, lambda: read_whole(take()), call)
            finally:
                if not taken:  # replayed after all (a repeat in record mode): not needed
                    opened.close()

    def call(self, document: dict[str, JSON], send: Callable[[], LiveResponse],
             call: Call | None = None) -> Reply:
        """The whole response to a request document: replayed, or from `send` (recorded)."""
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            seen: list[LiveResponse] = []
            try:
                answer = self.fixtures.call_keyed(call, lambda: self._capture(seen, marked(send)()))
            except EnvironmentFailure as failure:
                return whole(failure.live)
            except (MissingFixtureError, DriftError) as miss:
                raise sdk_miss(miss, document, self.redactor) from None
            return self._reply(answer, call, seen)

    def stream(self, document: dict[str, JSON], open_stream: Callable[[], LiveStream],
               call: Call | None = None) -> Reply | StreamReply:
        """The streamed response to a request document: replayed chunk by chunk, or read
        from `open_stream` as the client reads it (recorded once read to its end). A
        live environment failure comes back whole, as a `Reply`."""
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            open_stream = marked(open_stream)
            opened: list[LiveStream] = []

            def live() -> Iterator[JSON]:
                response = open_stream()
                opened.append(response)
                try:
                    if is_environment_failure(response.status):
                        raise EnvironmentFailure(read_whole(response))
                    head = head_document(response.status, response.headers, self.keep)
                    yield head
                    yield from chunk_documents(head, response.pieces)
                finally:
                    response.close()

            try:
                chunks = iter(self.fixtures.stream_keyed(call, live))
                head = next(chunks, None)
            except EnvironmentFailure as failure:
                return whole(failure.live)
            except (MissingFixtureError, DriftError) as miss:
                raise sdk_miss(miss, document, self.redactor) from None
            status, headers = self._head(head, call)
            content_type = headers.get("content-type")
            pieces = ((self._wire(call, functools.partial(chunk_bytes, content_type, chunk))
                       for chunk in chunks) if opened
                      else iter([self._replayed(call, content_type, chunks)]))

            def close() -> None:
                try:
                    if self.mode in _READ_TO_THE_END:
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

    async def aexchange(self, document: dict[str, JSON],
                        open_stream: Callable[[], Awaitable[AsyncLiveStream]],
                        call: Call | None = None) -> Reply | AsyncStreamReply:
        """Async twin of `exchange`."""
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            streams = self._streams(document, call)
            if streams is True:
                return await self.astream(document, open_stream, call)
            if streams is False:
                return await self.acall(document, lambda: aread_whole(open_stream()), call)
            opened = await amarked(open_stream)()
            taken: list[bool] = []

            async def take() -> AsyncLiveStream:
                taken.append(True)
                return opened

            try:
                if is_stream_type(content_type_of(opened.headers)):
                    return await self.astream(document, take, call)
                return await self.acall(document, lambda: aread_whole(take()), call)
            finally:
                if not taken:
                    await opened.aclose()

    async def acall(self, document: dict[str, JSON],
                    send: Callable[[], Awaitable[LiveResponse]],
                    call: Call | None = None) -> Reply:
        """Async twin of `call`: `send` returns an awaitable `LiveResponse`."""
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            seen: list[LiveResponse] = []

            async def live() -> JSON:
                return self._capture(seen, await amarked(send)())

            try:
                answer = await self.fixtures.acall_keyed(call, live)
            except EnvironmentFailure as failure:
                return whole(failure.live)
            except (MissingFixtureError, DriftError) as miss:
                raise sdk_miss(miss, document, self.redactor) from None
            return self._reply(answer, call, seen)

    async def astream(self, document: dict[str, JSON],
                      open_stream: Callable[[], Awaitable[AsyncLiveStream]],
                      call: Call | None = None) -> Reply | AsyncStreamReply:
        """Async twin of `stream`: `open_stream` returns an awaitable `AsyncLiveStream`."""
        call = call or self.fixtures.key(KIND, document)
        with self._nth(call):
            open_stream = amarked(open_stream)
            opened: list[AsyncLiveStream] = []

            async def live() -> AsyncIterator[JSON]:
                response = await open_stream()
                opened.append(response)
                try:
                    if is_environment_failure(response.status):
                        body = b"".join([piece async for piece in response.pieces])
                        raise EnvironmentFailure(
                            LiveResponse(response.status, response.headers, body))
                    head = head_document(response.status, response.headers, self.keep)
                    yield head
                    async for chunk in achunk_documents(head, aiter(response.pieces)):
                        yield chunk
                finally:
                    await response.aclose()

            try:
                chunks = aiter(self.fixtures.astream_keyed(call, live))
                head = await anext(chunks, None)
            except EnvironmentFailure as failure:
                return whole(failure.live)
            except (MissingFixtureError, DriftError) as miss:
                raise sdk_miss(miss, document, self.redactor) from None
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
                    if self.mode in _READ_TO_THE_END:
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
