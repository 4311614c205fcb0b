"""`RequestsAdapter`, the record/replay transport adapter for `requests` sessions.

Only the glue to requests lives here: a `PreparedRequest` becomes a request document
(`redactkey.http._documents`) and an `HttpFixtures` reply (`redactkey.record._exchange`) becomes a
`requests.Response`. Live calls go through an inner adapter, by default requests' own
`HTTPAdapter` (urllib3), so urllib3 under a session is covered by the same adapter.
"""

from __future__ import annotations

import http
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import raised_at_entry
from ..http._documents import request_document
from ..record._exchange import HttpFixtures
from ..record._wire import LiveStream, RawBody, Reply, StreamReply, sent_bytes

try:
    from requests.adapters import BaseAdapter, HTTPAdapter
    from requests.models import PreparedRequest, Response
    from requests.structures import CaseInsensitiveDict
    from requests.utils import get_encoding_from_headers
except ImportError as exc:  # pragma: no cover - exercised only without requests
    raise ImportError(
        "RequestsAdapter needs the requests package; install it with `pip install requests`"
    ) from exc

if TYPE_CHECKING:
    from ..fixtures._store import FixtureStore
    from ..record._modes import Mode
    from ..redact._redactor import Redactor

__all__ = ["RequestsAdapter"]


def _header_pairs(response: Response) -> list[tuple[str, str]]:
    """Response headers as received, a repeated header once per value."""
    raw_headers = getattr(response.raw, "headers", None)
    items = getattr(raw_headers, "iteritems", None)
    if items is not None:
        return [(str(k), str(v)) for k, v in items()]
    return [(str(k), str(v)) for k, v in response.headers.items()]


def _live_pieces(response: Response) -> Iterator[bytes]:
    """The decoded body of a live response in the pieces it arrives in."""
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if getattr(raw, "chunked", False) or read1 is None:
        yield from response.iter_content(chunk_size=None)  # one HTTP chunk at a time
        return
    while piece := read1(decode_content=True):
        yield piece


def _merged(pairs: Iterable[tuple[str, str]]) -> CaseInsensitiveDict[str]:
    headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
    for name, value in pairs:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


class RequestsAdapter(BaseAdapter):
    """Record and replay the HTTP calls of a `requests.Session` it is mounted on, through
    the same record/replay step as `FixtureTransport`, with the same keyword arguments
    (docs/http-clients.md). Live calls go through `inner` (by default a
    `requests.adapters.HTTPAdapter`); streams reach `iter_lines` / `iter_content` as
    they arrive and are written once read to their end.
    """

    def __init__(
        self,
        store: FixtureStore,
        *,
        mode: Mode | None = None,
        redactor: Redactor | None = None,
        inner: BaseAdapter | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self._http = HttpFixtures(store, mode=mode, redactor=redactor, **options)
        self._inner = inner
        self._owned: HTTPAdapter | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RequestsAdapter({self._http.fixtures.store!r}, mode={self._http.mode!r})"

    @property
    def mode(self) -> str:
        """The resolved mode: "live", "record", "replay" or "auto"."""
        return self._http.mode

    def _inner_adapter(self) -> BaseAdapter:
        if self._inner is not None:
            return self._inner
        with self._lock:
            if self._owned is None:
                self._owned = HTTPAdapter()
            return self._owned

    def close(self) -> None:
        """Close the inner adapter (its connection pools)."""
        with self._lock:
            owned, self._owned = self._owned, None
        if owned is not None:
            owned.close()
        if self._inner is not None:
            self._inner.close()

    @raised_at_entry
    def send(
        self,
        request: PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> Response:
        """Answer one prepared request: replayed, or sent through the inner adapter."""
        body = sent_bytes(request.body)
        url = str(request.url)
        document = request_document(
            str(request.method), url, [(str(k), str(v)) for k, v in request.headers.items()],
            body,
        )

        def open_stream() -> LiveStream:
            sent = request.copy()
            sent.body = body or None  # a file or generator body was read for the key
            response = self._inner_adapter().send(
                sent, stream=True, timeout=timeout, verify=verify, cert=cert,
                proxies=dict(proxies or {}),
            )
            return LiveStream(
                response.status_code, _header_pairs(response), _live_pieces(response),
                response.close,
            )

        return self._response(request, self._http.exchange(document, open_stream))

    def _response(self, request: PreparedRequest, reply: Reply | StreamReply) -> Response:
        response = Response()
        response.status_code = reply.status
        response.headers = _merged(reply.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = RawBody.of(reply)
        try:
            response.reason = http.HTTPStatus(reply.status).phrase
        except ValueError:
            response.reason = ""
        response.url = str(request.url)
        response.request = request
        response.connection = self  # type: ignore[assignment]  # auth hooks call .send
        return response
