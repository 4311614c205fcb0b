"""vcrpy interop: match cassette entries on redactkey's key and redact what vcrpy records
(docs/vcrpy.md). vcrpy itself is not imported here; any object with its `VCR`
attributes works.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

from ..http._documents import (
    KIND,
    RESPONSE_HEADERS,
    SSEParser,
    content_type_of,
    decoded_body,
    event_bytes,
    header_items,
    is_event_stream,
    request_document,
)
from ..keys._canonical import to_json
from ..keys._keys import KeySpec, key_material, request_key
from ..record._wire import sent_bytes
from ..redact._redactor import Redactor

__all__ = ["MATCHER_NAME", "VcrHooks", "use_redactkey"]

MATCHER_NAME: Final = "redactkey"
"""The name `use_redactkey` registers the key matcher under (`match_on=["redactkey"]`)."""

V = TypeVar("V")


def _json_body(request: Any) -> Any:
    """The body object of an aiohttp request sent with ``json=`` (vcrpy keeps it as the
    dict or list it was given, not as bytes), else None."""
    body = request.body
    return body if isinstance(body, (Mapping, list)) else None


def _body_of(request: Any) -> bytes:
    # (vcrpy keeps an iterator body as a list of chunks, bytes or text)
    body = getattr(request, "body_bytes", None)
    return sent_bytes(request.body if body is None else body)


class VcrHooks:
    """redactkey's key and redactor in the shapes vcrpy expects.

    `match(r1, r2)` is a vcrpy matcher (raises AssertionError naming the two keys);
    `before_record_request` / `before_record_response` are vcrpy's record hooks.
    """

    def __init__(
        self,
        redactor: Redactor | None = None,
        *,
        spec: KeySpec | None = None,
        response_headers: Iterable[str] = RESPONSE_HEADERS,
    ) -> None:
        self.redactor = redactor if redactor is not None else Redactor()
        self.spec = spec
        self.response_headers = frozenset(h.lower() for h in response_headers) | {"content-type"}

    def __repr__(self) -> str:
        return f"VcrHooks({self.redactor!r})"

    def document(self, request: Any) -> dict[str, Any]:
        """The HTTP request document of a vcrpy request (the one `FixtureTransport` keys)."""
        value = _json_body(request)
        document = request_document(
            str(request.method), str(request.uri), header_items(request.headers),
            b"" if value is not None else _body_of(request),
        )
        if value is not None:
            document["json"] = to_json(value, "/json")
        return document

    def key(self, request: Any) -> str:
        """The redactkey key of a vcrpy request."""
        return request_key(KIND, self.document(request), spec=self.spec, redactor=self.redactor)

    def match(self, r1: Any, r2: Any) -> None:
        """vcrpy matcher: the two requests have the same redactkey key."""
        first = key_material(KIND, self.document(r1), spec=self.spec, redactor=self.redactor)
        second = key_material(KIND, self.document(r2), spec=self.spec, redactor=self.redactor)
        if first != second:
            fields = sorted(
                name for name in set(first["request"]) | set(second["request"])
                if first["request"].get(name) != second["request"].get(name)
            )
            raise AssertionError(f"redactkey keys differ in {', '.join(fields) or 'kind'}")

    def before_record_request(self, request: V) -> V:
        """Redact a vcrpy request's URL, headers and body before vcrpy records or matches it."""
        target: Any = request
        target.uri = self.redactor.redact_url(str(target.uri))
        target.headers = self.redactor.redact_headers(dict(target.headers))
        value = _json_body(target)
        if value is not None:
            target.body = self.redactor.redact(value)  # stays an object, as vcrpy matches it
            return request
        body = _body_of(target)
        if body:
            target.body = self._redact_body(content_type_of(header_items(target.headers)), body)
        return request

    def before_record_response(self, response: dict[str, Any]) -> dict[str, Any]:
        """Keep allowlisted headers only and redact the body of a vcrpy response."""
        headers = response.get("headers") or {}
        kept = {k: v for k, v in headers.items() if str(k).lower() in self.response_headers}
        content_type = content_type_of(header_items(kept))
        body = response.get("body") or {}
        raw = body.get("string")
        if isinstance(raw, (str, bytes)) and raw:
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            encoding = next(
                (str(v[0] if isinstance(v, list) else v) for k, v in headers.items()
                 if str(k).lower() == "content-encoding"), "identity",
            )
            data = decoded_body(data, encoding)
            redacted = self._redact_body(content_type, data)
            text = isinstance(raw, str)
            body = {**body, "string": redacted.decode("utf-8") if text else redacted}
        return {**response, "headers": kept, "body": body}

    def _redact_body(self, content_type: str, body: bytes) -> bytes:
        if is_event_stream(content_type):
            parser = SSEParser()
            events = [*parser.feed(body), *parser.finish()]
            return b"".join(event_bytes(e) for e in self.redactor.redact_stream(events))
        try:
            value = json.loads(body)
        except ValueError:
            return bytes(self.redactor.redact(body))
        redacted = self.redactor.redact(value)
        if redacted == value:
            return body
        return json.dumps(redacted, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def config(self) -> dict[str, Any]:
        """Keyword arguments for `vcr.VCR(...)` / pytest-recording's `vcr_config`
        (the matcher itself must be registered: see `use_redactkey`)."""
        return {
            "match_on": [MATCHER_NAME],
            "before_record_request": self.before_record_request,
            "before_record_response": self.before_record_response,
            "decode_compressed_response": True,
        }


def use_redactkey(
    vcr: V, redactor: Redactor | None = None, *, spec: KeySpec | None = None
) -> V:
    """Make a `vcr.VCR` match on redactkey's key and redact what it records; returns it."""
    hooks = VcrHooks(redactor, spec=spec)
    target: Any = vcr
    target.register_matcher(MATCHER_NAME, hooks.match)
    for name, value in hooks.config().items():
        setattr(target, name, value)
    return vcr
