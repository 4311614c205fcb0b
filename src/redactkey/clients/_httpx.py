"""`FixtureTransport`, the record/replay transport for httpx and httpx2 clients.

Only the glue to the two libraries lives here: turning their requests into request
documents and `HttpFixtures` replies back into their responses. The documents are
`redactkey.http._documents`; the record/replay step shared with every other HTTP surface is
`redactkey.record._exchange`.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import urllib.parse
from collections.abc import AsyncIterator, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, overload

from .._errors import DriftError, MissingFixtureError, UsageError, raised_at_entry
from ..http._documents import request_document
from ..record._exchange import HttpFixtures
from ..record._wire import (
    AsyncLiveStream,
    AsyncStreamReply,
    LiveStream,
    Reply,
    StreamReply,
)

if TYPE_CHECKING:
    import httpx
    import httpx2

    from ..fixtures._store import FixtureStore
    from ..record._modes import Mode
    from ..redact._redactor import Redactor

__all__ = ["FixtureTransport", "ForwardingTransport"]


def _library(request: Any) -> ModuleType:
    """httpx or httpx2: the library whose request this is, which builds the response."""
    request_type = type(request)
    name = request_type.__module__.split(".", 1)[0]
    module = sys.modules.get(name)
    if name not in ("httpx", "httpx2") or module is None:
        raise UsageError(
            f"FixtureTransport serves httpx and httpx2 clients, not a {request_type.__name__} "
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
def _stream_type(library: ModuleType) -> type:
    """The library's byte stream of a streamed reply, sync or async as the reply is."""

    class ReplyStream(library.SyncByteStream, library.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self, reply: Any) -> None:
            self._reply = reply

        def __iter__(self) -> Iterator[bytes]:
            yield from self._reply.pieces

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self._reply.pieces:
                yield piece

        def close(self) -> None:
            self._reply.close()

        async def aclose(self) -> None:
            await self._reply.aclose()

    return ReplyStream


_NO_LOOP: Final = object()
"""Stands for the event loop of async code that runs without asyncio (trio)."""


def _running_loop() -> object:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return _NO_LOOP


@functools.cache
def _miss_response_type(library: ModuleType) -> type:
    class MissResponse(library.Response):  # type: ignore[misc,name-defined]
        """A replay miss as a response: `raise_for_status()` raises the miss itself."""

        miss: Exception

        def raise_for_status(self) -> Any:
            __tracebackhide__ = True
            raise self.miss.with_traceback(None)

    return MissResponse


# Stainless-generated clients (they send ``x-stainless-lang``) catch every exception of
# their HTTP client's `send` and retry it as a connection error (groq), but call
# `response.raise_for_status()` outside that net. Anthropic's client checks the status
# itself and lets its own errors through, so a miss raised as an `AnthropicError`
# reaches the caller already (docs/decisions/0031).
_STATUS_CHECKED_ELSEWHERE: Final = ("Anthropic/", "AsyncAnthropic/")


def _miss_needs_response(document: Mapping[str, Any]) -> bool:
    """Whether a miss must reach this request's client as a response whose
    `raise_for_status()` raises it, rather than raised from the transport (0095)."""
    headers = document.get("headers", {})
    agent = str(headers.get("user-agent", ""))
    return "x-stainless-lang" in headers and not agent.startswith(_STATUS_CHECKED_ELSEWHERE)


def _miss_response(library: ModuleType, request: Any, miss: Exception) -> Any:
    """A 404 that is never retried (``x-should-retry: false``), carries the miss text and
    raises the miss itself from `raise_for_status()` (docs/decisions/0031)."""
    body = {"error": {"type": "missing_fixture", "message": str(miss)}}
    response = _miss_response_type(library)(
        404, headers={"x-should-retry": "false"}, json=body, request=request
    )
    response.miss = miss
    return response


class FixtureTransport(_TransportBase):
    """Record and replay the HTTP calls of an httpx or httpx2 client, sync or async.

    Every request is a call of kind ``"http"``: replayed from the store, or sent through
    `inner` (by default the request library's own HTTP transport) and recorded, per
    `mode` (`None` reads ``REDACTKEY_MODE``, and ``REDACTKEY_MODEL_MODE`` unless
    ``model=False``). Credential, quota and server failures (401, 403, 429, 5xx…) and
    transport errors pass through unrecorded. The other keyword arguments are
    `HttpFixtures`' (docs/http-clients.md).
    """

    def __init__(
        self,
        store: FixtureStore,
        *,
        mode: Mode | None = None,
        redactor: Redactor | None = None,
        inner: Any = None,
        **options: Any,
    ) -> None:
        self._http = HttpFixtures(store, mode=mode, redactor=redactor, **options)
        if inner is not None and not (
            hasattr(inner, "handle_request") or hasattr(inner, "handle_async_request")
        ):
            raise UsageError(
                f"FixtureTransport(inner=...) takes a transport of the client's library "
                f"(httpx2.HTTPTransport(), httpx.MockTransport(handler), ...), not a "
                f"{type(inner).__name__}; to reach a local server, point the client's base "
                "URL at it and map its host with KeySpec hosts (docs/pytest.md)"
            )
        self._inner = inner
        # Sync inner transports by library; async ones by event loop, then library: an
        # async connection pool belongs to the loop that opened it, and one transport may
        # serve clients on several loops (threads, consecutive `asyncio.run`s).
        self._owned: dict[str, Any] = {}
        self._owned_async: dict[object, dict[str, Any]] = {}
        # One TLS context per library for all of them: building one loads the CA bundle
        # (tenths of a second), which a new loop's pool would otherwise pay again.
        self._tls: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FixtureTransport({self._http.fixtures.store!r}, mode={self._http.mode!r})"

    @property
    def mode(self) -> str:
        """The resolved mode: "live", "record", "replay" or "auto"."""
        return self._http.mode

    # -- inner transports --------------------------------------------------------------

    def _inner_for(self, library: ModuleType, *, is_async: bool) -> Any:
        if self._inner is not None:
            other = sys.modules.get("httpx2" if library.__name__ == "httpx" else "httpx")
            own = (library.BaseTransport, library.AsyncBaseTransport)
            if other is not None and not isinstance(self._inner, own) and isinstance(
                self._inner, (other.BaseTransport, other.AsyncBaseTransport)
            ):
                raise UsageError(
                    f"inner transport {type(self._inner).__name__} is from {other.__name__}, "
                    f"but the request is from {library.__name__}; pass an inner transport "
                    "of the client's own library"
                )
            return self._inner
        name = library.__name__
        with self._lock:
            if not is_async:
                owned = self._owned
            else:
                loop = _running_loop()
                for gone in [k for k in self._owned_async
                             if isinstance(k, asyncio.AbstractEventLoop) and k.is_closed()]:
                    del self._owned_async[gone]  # its connections died with their loop
                owned = self._owned_async.setdefault(loop, {})
            inner = owned.get(name)
            if inner is None:
                factory = library.AsyncHTTPTransport if is_async else library.HTTPTransport
                if name not in self._tls:
                    self._tls[name] = library.create_ssl_context()
                inner = owned[name] = factory(verify=self._tls[name])
            return inner

    def close(self) -> None:
        """Close the inner transports that serve sync clients (new ones open on next use)."""
        with self._lock:
            owned, self._owned = list(self._owned.values()), {}
        for transport in owned:
            transport.close()
        if self._inner is not None and hasattr(self._inner, "close"):
            self._inner.close()

    async def aclose(self) -> None:
        """Close the inner transports that serve async clients on the running event loop."""
        with self._lock:
            owned = list(self._owned_async.pop(_running_loop(), {}).values())
        for transport in owned:
            await transport.aclose()
        if self._inner is not None and hasattr(self._inner, "aclose"):
            await self._inner.aclose()

    # -- replies -----------------------------------------------------------------------

    @staticmethod
    def _response(library: ModuleType, request: Any,
                  reply: Reply | StreamReply | AsyncStreamReply) -> Any:
        if isinstance(reply, Reply):
            return library.Response(
                reply.status, headers=reply.headers, content=reply.body, request=request
            )
        return library.Response(reply.status, headers=reply.headers,
                                stream=_stream_type(library)(reply), request=request)

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

        def open_stream() -> LiveStream:
            response = self._inner_for(library, is_async=False).handle_request(request)
            return LiveStream(
                response.status_code, response.headers.multi_items(), response.iter_bytes(),
                response.close,
            )

        try:
            reply = self._http.exchange(document, open_stream)
        except (MissingFixtureError, DriftError) as miss:
            if not _miss_needs_response(document):
                raise
            return _miss_response(library, request, miss)
        return self._response(library, request, reply)

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
            request.method, str(request.url), request.headers.multi_items(),
            await request.aread(),
        )

        async def open_stream() -> AsyncLiveStream:
            inner = self._inner_for(library, is_async=True)
            response = await inner.handle_async_request(request)
            return AsyncLiveStream(
                response.status_code, response.headers.multi_items(), response.aiter_bytes(),
                response.aclose,
            )

        try:
            reply = await self._http.aexchange(document, open_stream)
        except (MissingFixtureError, DriftError) as miss:
            if not _miss_needs_response(document):
                raise
            return _miss_response(library, request, miss)
        return self._response(library, request, reply)


class ForwardingTransport(_TransportBase):
    """An inner transport that sends every request to one local server (a fake provider,
    a proxy), for httpx and httpx2, sync and async.

    ``FixtureTransport(store, inner=ForwardingTransport("http://127.0.0.1:8765"))``: the
    client keeps its real base URL, so fixtures are keyed on the real host, while live
    calls go to the server at `url` (its scheme, host and port; the path is kept).
    """

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"ForwardingTransport(url=...) takes an absolute http(s) URL such as "
                f"'http://127.0.0.1:8765', not {url!r}"
            )
        self.url = url
        self._owned: dict[tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ForwardingTransport({self.url!r})"

    def _moved(self, request: Any, *, is_async: bool) -> tuple[Any, Any]:
        library = _library(request)
        target = library.URL(self.url)
        request.url = request.url.copy_with(
            scheme=target.scheme, host=target.host, port=target.port
        )
        with self._lock:
            inner = self._owned.get((library.__name__, is_async))
            if inner is None:
                factory = library.AsyncHTTPTransport if is_async else library.HTTPTransport
                inner = self._owned[(library.__name__, is_async)] = factory()
        return inner, request

    def handle_request(self, request: Any) -> Any:
        """Send a sync client's request to the server."""
        inner, moved = self._moved(request, is_async=False)
        return inner.handle_request(moved)

    async def handle_async_request(self, request: Any) -> Any:
        """Send an async client's request to the server."""
        inner, moved = self._moved(request, is_async=True)
        return await inner.handle_async_request(moved)

    def close(self) -> None:
        with self._lock:
            owned = [t for (_, is_async), t in self._owned.items() if not is_async]
        for transport in owned:
            transport.close()

    async def aclose(self) -> None:
        with self._lock:
            owned = [t for (_, is_async), t in self._owned.items() if is_async]
        for transport in owned:
            await transport.aclose()
