"""`use_botocore`: record and replay the calls of a boto3 / botocore client.

botocore emits ``before-send`` after a request is signed and before it is sent; a
handler that returns a response answers the request itself. `use_botocore` registers
one such handler on the client's own event system (nothing global is touched): in
replay it answers from the store, in record it sends the request through the client's
own HTTP session and records the answer. Fixtures are the same kind ``"http"``
documents the httpx transport writes, through the same record/replay step
(`redactkey.record._exchange`); an AWS event stream (Bedrock's ``converse_stream``) is kept
frame by frame. SigV4 headers are request headers, which never count toward the key of
an HTTP call nor reach a file (docs/clients.md, "boto3 and Amazon Bedrock").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from .._errors import UsageError
from ..http._documents import RESPONSE_HEADERS, request_document
from ..record._exchange import HttpFixtures
from ..record._wire import LiveResponse, LiveStream, RawBody, Reply, StreamReply, sent_bytes

if TYPE_CHECKING:
    from ..fixtures._store import FixtureStore
    from ..record._modes import Mode
    from ..redact._redactor import Redactor

__all__ = ["BOTOCORE_RESPONSE_HEADERS", "use_botocore"]

BOTOCORE_RESPONSE_HEADERS: Final = RESPONSE_HEADERS | {"x-amzn-errortype"}
"""Response headers a botocore fixture keeps: botocore reads the error code of a
JSON protocol error from ``x-amzn-errortype``."""

_UNIQUE_ID: Final = "redactkey-use-botocore"


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _headers(headers: Any) -> list[tuple[str, str]]:
    return [(_text(name), _text(value)) for name, value in headers.items()]


def _request_body(body: Any) -> bytes:
    if not hasattr(body, "read"):
        return sent_bytes(body)
    # A file-like upload: read it for the key, then rewind it for the live send.
    start = body.tell()
    data = sent_bytes(body)
    body.seek(start)
    return data


class _BotocoreHook:
    """The ``before-send`` handler: replay, or send live and record, per the mode."""

    def __init__(self, client: Any, http: HttpFixtures) -> None:
        self._client = client
        self._http = http

    def _send(self, request: Any) -> Any:
        # The client's own HTTP session: its proxies, TLS settings and timeouts apply.
        return self._client._endpoint.http_session.send(request)

    def _event_stream(self, event_name: str) -> bool:
        operation = event_name.rsplit(".", 1)[-1]
        model = self._client.meta.service_model
        if operation not in model.operation_names:
            return False
        return bool(model.operation_model(operation).has_event_stream_output)

    def __call__(self, request: Any, event_name: str = "", **_: Any) -> Any:
        __tracebackhide__ = True
        document = request_document(
            request.method, request.url, _headers(request.headers), _request_body(request.body)
        )
        if self._event_stream(event_name):
            return self._stream(request, document)
        return self._call(request, document)

    @staticmethod
    def _response(request: Any, reply: Reply | StreamReply) -> Any:
        from botocore.awsrequest import AWSResponse

        return AWSResponse(request.url, reply.status, dict(reply.headers), RawBody.of(reply))

    def _call(self, request: Any, document: dict[str, Any]) -> Any:
        def send() -> LiveResponse:
            response = self._send(request)
            return LiveResponse(response.status_code, _headers(response.headers),
                                response.content)

        return self._response(request, self._http.call(document, send))

    def _stream(self, request: Any, document: dict[str, Any]) -> Any:
        def open_stream() -> LiveStream:
            response = self._send(request)
            return LiveStream(response.status_code, _headers(response.headers),
                              response.raw.stream(), response.raw.close)

        return self._response(request, self._http.stream(document, open_stream))


def use_botocore(
    client: Any,
    store: FixtureStore,
    *,
    mode: Mode | None = None,
    redactor: Redactor | None = None,
    response_headers: Iterable[str] = BOTOCORE_RESPONSE_HEADERS,
    **options: Any,
) -> Any:
    """Record and replay every call of a boto3 / botocore `client`; returns the client.

    Calls are answered from `store` or sent and recorded, per `mode` (`None` reads
    ``REDACTKEY_MODE``, and ``REDACTKEY_MODEL_MODE`` unless ``model=False``), as kind
    ``"http"`` fixtures that any redactkey transport replays; the other keyword arguments
    are `FixtureTransport`'s. A second call on the same client replaces the first
    registration. `Recorder.boto3_client(service)` builds the client too, and in replay
    needs no credentials.
    """
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is None or not hasattr(client, "_endpoint"):
        raise UsageError(
            f"use_botocore takes a boto3 / botocore client, not {type(client).__name__}; "
            'pass boto3.client("bedrock-runtime", ...)'
        )
    http = HttpFixtures(store, mode=mode, redactor=redactor,
                        response_headers=response_headers, **options)
    event = f"before-send.{client.meta.service_model.service_id.hyphenize()}"
    events.unregister(event, unique_id=_UNIQUE_ID)
    events.register(event, _BotocoreHook(client, http), unique_id=_UNIQUE_ID)
    return client
