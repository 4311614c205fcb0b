"""`aiohttp_session`, an `aiohttp.ClientSession` that records and replays its calls.

Only the glue to aiohttp lives here, built on the session's own extension points and
nothing else (no aiohttp function is replaced):

- a **client middleware** (aiohttp 3.12+) turns each `ClientRequest` into a request
  document (`redactkey.http._documents`) and hands it to `HttpFixtures`
  (`redactkey.record._exchange`);
  a live call goes on through the session as usual, and the live response comes back
  with its `content` fed from what `HttpFixtures` passes on (a stream as it arrives);
- a **connector** (a `TCPConnector` subclass) answers a replayed request from memory:
  the recorded response is handed to aiohttp's own HTTP parser as if it came off a
  socket, so a replayed `ClientResponse` is a real one (`json()`, `content` iteration,
  `raise_for_status()`), and no socket is opened.
"""

from __future__ import annotations

import asyncio
import http
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ..http._documents import RESPONSE_HEADERS, request_document
from ..record._exchange import HttpFixtures
from ..record._wire import AsyncLiveStream, AsyncStreamReply, Reply

try:
    import aiohttp
    from aiohttp.base_protocol import BaseProtocol
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.connector import Connection
except ImportError as exc:  # pragma: no cover - exercised only without aiohttp
    raise ImportError(
        "aiohttp_session needs aiohttp 3.12 or later; install it with `pip install aiohttp`"
    ) from exc

if TYPE_CHECKING:
    from aiohttp.client_middlewares import ClientHandlerType
    from aiohttp.client_reqrep import ClientRequest, ClientResponse
    from aiohttp.tracing import Trace

    from ..fixtures._store import FixtureStore
    from ..keys._keys import KeySpec
    from ..record._modes import Mode
    from ..redact._redactor import Redactor

__all__ = ["aiohttp_session", "session"]

_LIMIT = 2**16


class _Wire(asyncio.Transport):
    """The in-memory end of a replayed exchange: the request aiohttp writes is dropped,
    the recorded response was already handed to the protocol."""

    def __init__(self, protocol: BaseProtocol) -> None:
        super().__init__()
        self._protocol = protocol
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview[Any]) -> None:
        return None

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview[Any]]) -> None:
        return None

    def write_eof(self) -> None:
        return None

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            asyncio.get_running_loop().call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()


def _clean(text: str) -> str:
    # A fixture is data: a header may not smuggle a line break into the parsed head.
    return text.replace("\r", " ").replace("\n", " ")


def _wire_bytes(status: int, headers: Iterable[tuple[str, str]], body: bytes) -> bytes:
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{_clean(name)}: {_clean(value)}" for name, value in headers]
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1", "replace") + body


class _Connector(aiohttp.TCPConnector):
    """A TCP connector that answers replayed requests from memory, without a socket."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._canned: weakref.WeakKeyDictionary[ClientRequest, bytes] = (
            weakref.WeakKeyDictionary()
        )

    def serve(self, request: ClientRequest, answer: bytes) -> None:
        """Answer `request`, when the session sends it next, with these response bytes."""
        self._canned[request] = answer

    async def connect(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> Connection:
        answer = self._canned.pop(req, None)
        if answer is None:
            return await super().connect(req, traces, timeout)
        loop = asyncio.get_running_loop()
        protocol = ResponseHandler(loop)
        protocol.connection_made(_Wire(protocol))
        protocol.data_received(answer)  # parsed once the session sets the response params
        return Connection(self, req.connection_key, protocol, loop)


class _Middleware:
    """The client middleware: record/replay of each request through `HttpFixtures`."""

    def __init__(self, fixtures: HttpFixtures, connector: _Connector) -> None:
        self._http = fixtures
        self._connector = connector
        self._pumps: set[asyncio.Task[None]] = set()

    async def __call__(self, req: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        body = req.body
        data = b"" if isinstance(body, bytes) else await body.as_bytes()
        document = request_document(
            req.method, str(req.url), [(str(k), str(v)) for k, v in req.headers.items()], data
        )
        sent: list[ClientResponse] = []

        async def open_stream() -> AsyncLiveStream:
            response = await handler(req)
            sent.append(response)
            pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers]
            wire = response.content

            async def abandon() -> None:
                # Read to its end, the connection went back to the pool by itself; a
                # stream left half-read must not be reused. (`response.release()` would
                # also close the content the caller reads, which is no longer `wire`.)
                connection = response.connection
                if not wire.at_eof() and connection is not None:
                    connection.close()

            return AsyncLiveStream(response.status, pairs, wire.iter_any(), abandon)

        reply = await self._http.aexchange(document, open_stream)
        if sent:
            return self._live(sent[-1], reply)
        if isinstance(reply, Reply):
            answer = reply.body
        else:
            answer = b"".join([piece async for piece in reply.pieces])
            await reply.aclose()
        self._connector.serve(req, _wire_bytes(reply.status, reply.headers, answer))
        return await handler(req)

    def _live(self, response: ClientResponse, reply: Reply | AsyncStreamReply) -> ClientResponse:
        """The live response, its content now fed from what `HttpFixtures` passes on."""
        loop = asyncio.get_running_loop()
        # Fed by us, not by a connection: its protocol sits on an in-memory wire, so flow
        # control has nothing to pause and the reader counts as connected.
        protocol = BaseProtocol(loop)
        protocol.connection_made(_Wire(protocol))
        content = aiohttp.StreamReader(protocol, _LIMIT, loop=loop)
        if isinstance(reply, Reply):
            content.feed_data(reply.body)
            content.feed_eof()
        else:
            pump = loop.create_task(self._pump(reply, content))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)
        response.content = content
        return response

    @staticmethod
    async def _pump(reply: AsyncStreamReply, content: aiohttp.StreamReader) -> None:
        # Passes each piece on as it arrives; the stream is recorded once read to its end.
        try:
            async for piece in reply.pieces:
                content.feed_data(piece)
        except BaseException as exc:
            content.set_exception(exc)
            raise
        finally:
            await reply.aclose()
        content.feed_eof()


def session(http: HttpFixtures, *, connector_options: Mapping[str, Any] | None = None,
            **session_kwargs: Any) -> aiohttp.ClientSession:
    """An `aiohttp.ClientSession` whose calls go through `http` (what `aiohttp_session`
    and `Recorder.aiohttp_session` return)."""
    if "connector" in session_kwargs:
        raise UsageError(
            "aiohttp_session makes its own connector (it answers replayed requests from "
            "memory); pass its settings as connector_options={...} instead of connector="
        )
    connector = _Connector(**dict(connector_options or {}))
    middlewares = (*session_kwargs.pop("middlewares", ()), _Middleware(http, connector))
    return aiohttp.ClientSession(connector=connector, middlewares=middlewares, **session_kwargs)


def aiohttp_session(
    store: FixtureStore,
    *,
    mode: Mode | None = None,
    redactor: Redactor | None = None,
    spec: KeySpec | None = None,
    model: bool = True,
    response_headers: Iterable[str] = RESPONSE_HEADERS,
    how_to_record: str | None = None,
    connector_options: Mapping[str, Any] | None = None,
    **session_kwargs: Any,
) -> aiohttp.ClientSession:
    """An `aiohttp.ClientSession` whose calls record and replay like `FixtureTransport`'s.

    `session_kwargs` go to `ClientSession` (your own middlewares run before
    redactkey's); the session makes its own `TCPConnector`, to which `connector_options`
    are passed. Call it inside a running event loop (docs/http-clients.md).
    """
    http = HttpFixtures(store, mode=mode, redactor=redactor, spec=spec, model=model,
                        response_headers=response_headers, how_to_record=how_to_record)
    return session(http, connector_options=connector_options, **session_kwargs)
