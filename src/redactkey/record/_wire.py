"""What an HTTP face and the exchange hand each other: the live response or stream a face
sends for, the reply it turns back into its library's response, and a replay miss
named by method and URL as an error of every loaded SDK. A face's own live sends are
marked (`sending_live`), so the pytest plugin's network guard lets them through."""

from __future__ import annotations

import contextvars
import functools
import io
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

from .._errors import FixtureError
from ..http._documents import live_headers, shown_url
from ..redact._redactor import Redactor

__all__ = [
    "AsyncLiveStream",
    "AsyncStreamReply",
    "EnvironmentFailure",
    "LiveResponse",
    "LiveStream",
    "RawBody",
    "Reply",
    "StreamReply",
    "amarked",
    "aread_whole",
    "marked",
    "read_whole",
    "sdk_miss",
    "sending_live",
    "sent_bytes",
    "whole",
]

JSON = Any
T = TypeVar("T")
Pairs = Iterable[tuple[str, str]]

# The SDKs pass their own errors through untouched and never retry them. A replay miss
# that is also one of those surfaces as itself, at once, instead of being wrapped in a
# connection error and retried with back-off (see docs/decisions/0031).
_SDK_ERRORS: Final = (("openai", "OpenAIError"), ("anthropic", "AnthropicError"))


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
                 aclose: Callable[[], Awaitable[None]]) -> None:
        self.status, self.headers, self.pieces = status, list(headers), pieces
        self.aclose = aclose


class Reply:
    """A whole response to hand the client: status, headers and body bytes (a live one's
    headers less hop-by-hop ones, its body decoded)."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


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


class RawBody:
    """A reply's `raw` body (the shape of urllib3's response, which requests and botocore
    read) fed from byte pieces: read as they come, closed at their end.

    `stream(chunk_size)` (requests' `iter_content`, `iter_lines`, `.content`; botocore's
    event streams) and `read(n)` hand out each piece as soon as it is there, so a stream
    passed through while recording reaches the caller as it arrives.
    """

    def __init__(self, pieces: Iterable[bytes], close: Callable[[], None] = lambda: None) -> None:
        self._pieces = iter(pieces)
        self._close = close
        self._buffer = b""
        self._done = False
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @classmethod
    def of(cls, reply: Reply | StreamReply) -> RawBody:
        """The body of a whole or a streamed reply."""
        if isinstance(reply, Reply):
            return cls([reply.body])
        return cls(reply.pieces, reply.close)

    def readable(self) -> bool:
        return True

    def _next(self) -> bytes:
        if self._buffer:
            piece, self._buffer = self._buffer, b""
            return piece
        if self._done:
            return b""
        for piece in self._pieces:
            if piece:
                return piece
        self._done = True
        self.close()  # the end of the body: a recorded stream is written now
        return b""

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        while piece := self._next():
            if amt is not None and len(piece) > amt:
                piece, self._buffer = piece[:amt], piece[amt:]
            yield piece

    def read(self, amt: int | None = None, decode_content: bool | None = None,
             cache_content: bool = False) -> bytes:
        out = io.BytesIO()
        while amt is None or out.tell() < amt:
            piece = self._next()
            if not piece:
                break
            if amt is not None and out.tell() + len(piece) > amt:
                cut = amt - out.tell()
                piece, self._buffer = piece[:cut], piece[cut:]
            out.write(piece)
        return out.getvalue()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()


def sent_bytes(body: Any) -> bytes:
    """A request body as bytes: bytes, text, a file (read) or an iterable of pieces."""
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    read = getattr(body, "read", None)
    pieces: Iterable[Any] = [read()] if read is not None else body
    return b"".join(p.encode("utf-8") if isinstance(p, str) else bytes(p) for p in pieces)


class EnvironmentFailure(Exception):
    """Carries a response the fixtures must not keep (401, 429, 5xx…) past the record layer."""

    def __init__(self, live: LiveResponse) -> None:
        super().__init__(f"HTTP {live.status} is the environment's failure; not recorded")
        self.live = live


@functools.cache
def _miss_type(bases: tuple[type, ...]) -> type[FixtureError]:
    return type(bases[0].__name__, bases,
                {"__module__": bases[0].__module__, "__doc__": bases[0].__doc__})


def sdk_miss(miss: FixtureError, document: Mapping[str, JSON],
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


# Set while a redactkey face sends a request live, so that the pytest plugin's network
# guard can tell a face's own connections from a client that bypassed it.
_SENDING: Final = contextvars.ContextVar("redactkey_sending", default=False)


def sending_live() -> bool:
    """True while a redactkey face sends a live request (in this thread or task): the
    connections it opens are its own, not a bypass."""
    return _SENDING.get()


def marked(send: Callable[[], T]) -> Callable[[], T]:
    def marked() -> T:
        token = _SENDING.set(True)
        try:
            return send()
        finally:
            _SENDING.reset(token)

    return marked


def amarked(send: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    async def marked() -> T:
        token = _SENDING.set(True)
        try:
            return await send()
        finally:
            _SENDING.reset(token)

    return marked


def read_whole(live: LiveStream) -> LiveResponse:
    try:
        body = b"".join(live.pieces)
    finally:
        live.close()
    return LiveResponse(live.status, live.headers, body)


async def aread_whole(opening: Awaitable[AsyncLiveStream]) -> LiveResponse:
    live = await opening
    try:
        body = b"".join([piece async for piece in live.pieces])
    finally:
        await live.aclose()
    return LiveResponse(live.status, live.headers, body)


def whole(live: LiveResponse) -> Reply:
    return Reply(live.status, live_headers(live.headers), live.body)
