"""Request keys: the versioned key material of a call (`{"kind", "request": <projection>,
"scheme"}`) and the SHA-256 of its RFC 8785 bytes, as docs/keys.md describes them. Keys
change only when KEY_SCHEME_VERSION does.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import orjson

from .._errors import CanonicalizationError, UsageError, raised_at_entry
from ._canonical import (
    ORJSON_CANONICAL,
    JSONValue,
    canonical_if_plain,
    canonicalize,
    pointer_join,
    to_json,
)
from ._spec import (
    DEFAULT_PORTS,
    HTTP_DROPPED_QUERY,
    MODEL_FIELDS,
    MODEL_NEVER,
    KeySpec,
    Normalizer,
    default_spec,
)
from ._volatile import DropKeys, ReplaceVolatile, VolatileValue, find_volatile

__all__ = [
    "HTTP_DROPPED_QUERY",
    "KEY_SCHEME_VERSION",
    "MODEL_FIELDS",
    "MODEL_NEVER",
    "DropKeys",
    "KeySpec",
    "Normalizer",
    "Redacts",
    "ReplaceVolatile",
    "VolatileValue",
    "counted_part",
    "default_spec",
    "find_volatile",
    "key_from_material",
    "key_material",
    "material_and_key",
    "redacted_material_and_key",
    "request_key",
    "stored_request",
]

KEY_SCHEME_VERSION = 2
"""Bumped whenever the key of an unchanged request would change (2: an HTTP text body
that is a JSON document or a form is keyed by its meaning, docs/keys.md)."""


class Redacts(Protocol):
    """What the key layer needs of a redactor: a pure `redact(value)` of the same type."""

    def redact(self, value: Any) -> Any: ...


# --- projection ------------------------------------------------------------------


_OMITTED_TYPES: Final = frozenset({"NotGiven", "Omit"})


def _is_omitted(value: Any) -> bool:
    # SDK sentinels for "not given" (openai.NOT_GIVEN, anthropic's Omit) and None mean
    # "use the default": `f(temperature=None)` and `f()` are the same call.
    return value is None or type(value).__name__ in _OMITTED_TYPES


def _as_mapping(request: Any) -> Any:
    model_dump = getattr(request, "model_dump", None)
    if model_dump is not None and hasattr(type(request), "model_fields"):
        return model_dump(mode="json")
    return request


def _as_is(value: Any, pointer: str = "") -> Any:
    return value


def _project_fields(request: Any, spec: KeySpec, plain: Callable[..., Any] = to_json) -> JSONValue:
    request = _as_mapping(request)
    if not isinstance(request, Mapping):
        # A bare prompt or a tool's positional payload: all of it counts.
        return plain(request)
    out: dict[str, JSONValue] = {}
    for name, item in request.items():
        if not isinstance(name, str) or not spec.counts(name) or _is_omitted(item):
            continue
        out[name] = plain(item, pointer_join("", name)) if plain is to_json else item
    return out


def _query_dropped(name: str, patterns: tuple[str, ...]) -> bool:
    # Case-insensitive, and "-" and "_" are the same ("api-key" drops "API_KEY").
    folded = name.lower().replace("-", "_")
    return any(fnmatch.fnmatchcase(folded, pattern.replace("-", "_")) for pattern in patterns)


def _project_http(request: Any, spec: KeySpec, plain: Callable[..., Any] = to_json) -> JSONValue:
    request = _as_mapping(request)
    if not isinstance(request, Mapping):
        raise CanonicalizationError(
            "", f"an HTTP request is a mapping, not a {type(request).__name__}",
            'pass {"method": ..., "url": ..., "headers": {...}, "json"|"text"|"base64": ...}',
        )
    method = request.get("method")
    url = request.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise CanonicalizationError(
            "", "an HTTP request needs string 'method' and 'url' members",
            "pass the request document described in docs/keys.md",
        )
    projected = _projected_url(url, spec.hosts)
    query = projected[1]
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True) if query else []
    if "query" in request:  # (a projection read back from a fixture)
        pairs += _projected_query(request["query"])
    projection: dict[str, JSONValue] = {
        "method": method.upper(),
        "url": projected[0],
        "query": sorted(
            [name, value] for name, value in pairs if not _query_dropped(name, spec.drop_query)
        ),
    }
    projection["body"] = _http_body(request, plain)
    if spec.headers:
        headers = request.get("headers") or {}
        if not isinstance(headers, Mapping):
            raise CanonicalizationError(
                "/headers", "headers must be a mapping of names to values",
                "pass a dict of lower-case header names",
            )
        projection["headers"] = {
            str(name).lower(): plain(value, pointer_join("/headers", str(name)))
            for name, value in headers.items()
            if str(name).lower() in spec.headers
        }
    return {name: item for name, item in projection.items() if spec.counts(name)}


def _projected_url(url: str, hosts: Any) -> tuple[str, str]:
    """`scheme://host[:port]/path` of `url` as its key counts it (lower-case scheme and
    host, no default port, `hosts` aliases applied), and its query string."""
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError as exc:
        raise CanonicalizationError("/url", f"the url cannot be parsed ({exc})",
                                    "pass an absolute http(s) URL") from None
    scheme = parts.scheme.lower()
    if not scheme or not host:
        raise CanonicalizationError("/url", "the url is not absolute (no scheme or host)",
                                    "pass an absolute URL such as https://host/path")
    if ":" in host:
        host = f"[{host}]"  # IPv6 literal
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    canonical = dict(hosts).get(host) if hosts else None
    if canonical is not None:
        scheme, host = canonical.split("://", 1)
    return f"{scheme}://{host}{parts.path or '/'}", parts.query


def _projected_query(query: Any) -> list[tuple[str, str]]:
    """The `query` member of a projection read back from a fixture: [[name, value], ...].

    Keying a projection again gives the same key, so a request taken from a fixture
    file keys to that file's key (`redact key`)."""
    if query is None:
        return []
    if not isinstance(query, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        for pair in query
    ):
        raise CanonicalizationError(
            "/query", "query must be a list of [name, value] string pairs",
            "put the query in the url, or pass the projection as a fixture stores it",
        )
    return [(name, value) for name, value in query]


def _projected_body(body: Any) -> JSONValue:
    """The `body` member of a projection read back from a fixture, checked and kept."""
    if body is None:
        return None
    if isinstance(body, Mapping) and set(body) == {"json"}:
        return {"json": to_json(body["json"], "/body/json")}
    if (
        isinstance(body, Mapping) and set(body) == {"sha256"} and isinstance(body["sha256"], str)
        and re.fullmatch(r"[0-9a-f]{64}", body["sha256"])
    ):
        return {"sha256": body["sha256"]}
    if isinstance(body, Mapping) and set(body) == {"form"}:
        return {"form": [list(pair) for pair in _projected_query(body["form"])]}
    raise CanonicalizationError(
        "/body", 'a projected body is null, {"json": ...}, {"form": [[name, value], ...]} '
        'or {"sha256": "<64 hex>"}',
        "pass the body as 'json', 'text' or 'base64' instead",
    )


# A form body: `name=value` pairs joined by `&`, nothing else (no blank, no bare name).
_FORM: Final = re.compile(r"[^\s&=]+=[^\s&]*(?:&[^\s&=]+=[^\s&]*)*")


def _text_meaning(text: str) -> JSONValue:
    """A text body keyed by what it means, whatever the content type said (docs/keys.md,
    the `body` row): a JSON object or array, or a form; None for any other text."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return {"json": to_json(json.loads(text))}
        except (ValueError, RecursionError, CanonicalizationError):
            return None
    if _FORM.fullmatch(text):
        pairs = sorted(urllib.parse.parse_qsl(text, keep_blank_values=True),
                       key=lambda pair: pair[0])
        return {"form": [[name, value] for name, value in pairs]}
    return None


def _http_body(request: Mapping[str, Any], plain: Callable[..., Any] = to_json) -> JSONValue:
    present = [name for name in ("json", "text", "base64", "body") if name in request]
    if len(present) > 1:
        raise CanonicalizationError(
            "", f"an HTTP request has at most one body field, not {present}",
            "keep one of 'json', 'text' or 'base64'",
        )
    if not present:
        return None
    if present == ["body"]:
        return _projected_body(request["body"])
    name = present[0]
    body = request[name]
    pointer = pointer_join("", name)
    if name == "json":
        return {"json": plain(body, pointer)}
    if not isinstance(body, str):
        raise CanonicalizationError(
            pointer, f"the {name} body must be a string, not a {type(body).__name__}",
            "decode the body first",
        )
    if name == "text":
        to_json(body, pointer)  # lone surrogates cannot be hashed as UTF-8
        meaning = _text_meaning(body)
        if meaning is not None:
            return meaning
        data = body.encode("utf-8")
    else:
        try:
            data = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise CanonicalizationError(
                pointer, "the base64 body is not valid base64", "encode the body bytes as base64",
            ) from None
    return {"sha256": sha256_hex(data)}


# --- keys ------------------------------------------------------------------------


def _projection(request: Any, spec: KeySpec, plain: Callable[..., Any]) -> JSONValue:
    if spec.shape == "http":
        return _project_http(request, spec, plain)
    return _project_fields(request, spec, plain)


# "query" and "body" are read too: a projection read back from a fixture keys again.
_HTTP_MEMBERS: Final = frozenset({"method", "url", "json", "text", "base64", "query", "body"})


def counted_part(request: Any, spec: KeySpec) -> Any:
    """The members of a request that can reach the key, so that only they are redacted.

    Each member of a mapping is redacted on its own, so redacting the part equals taking
    the part of the redacted whole. Names the redactor would rewrite (a secret used as a
    member name) never match a field name, so only whole-request specs keep them all.
    """
    if type(request) is not dict:
        return request
    if spec.shape == "http":
        wanted = _HTTP_MEMBERS | {"headers"} if spec.headers else _HTTP_MEMBERS
        return {name: item for name, item in request.items() if name in wanted}
    if spec.fields is None:
        return request
    return {name: item for name, item in request.items() if name in spec.fields}


def material_and_key(
    kind: str, request: Any, *, spec: KeySpec | None = None, redactor: Redacts | None = None
) -> tuple[dict[str, JSONValue], str]:
    """`key_material` and its key, computed together (what record and replay use; the
    fast path for plain JSON is docs/performance.md's "Key material and key in one pass").
    """
    if not isinstance(kind, str) or not kind:
        raise UsageError(f"kind must be a non-empty string, not {kind!r}")
    if spec is None:
        spec = default_spec(kind)
    if redactor is None:
        return _checked_material_and_key(kind, request, spec)
    return redacted_material_and_key(kind, redactor.redact(counted_part(request, spec)), spec)


def redacted_material_and_key(
    kind: str, redacted: Any, spec: KeySpec, *, orjson_canonical: bool = False
) -> tuple[dict[str, JSONValue], str]:
    """`material_and_key` of the counted part of a request, already redacted (the material
    may hold it as it is). `orjson_canonical` says it is plain JSON holding no float and
    only ASCII member names: orjson's sorted bytes of the material are then RFC 8785's.
    """
    if not spec.normalizers:
        material = {
            "kind": kind,
            "request": _projection(redacted, spec, _as_is),
            "scheme": KEY_SCHEME_VERSION,
        }
        data = None
        # (counted header names would be member names the redactor's walk did not see, and
        # a text body read as JSON here may hold floats it did not see either; an integer
        # beyond 2**53 is refused by orjson and then named by the scan's path)
        if orjson_canonical and not (spec.shape == "http" and (
                spec.headers or "text" in redacted)):
            try:
                data = orjson.dumps(material, option=ORJSON_CANONICAL)
            except orjson.JSONEncodeError:  # (a try costs less than a suppress context)
                data = None
        if data is None:
            data = canonical_if_plain(material)
        if data is not None:
            return material, sha256_hex(data)
    return _checked_material_and_key(kind, redacted, spec)


def _checked_material_and_key(
    kind: str, request: Any, spec: KeySpec
) -> tuple[dict[str, JSONValue], str]:
    projection = _projection(request, spec, to_json)
    for normalizer in spec.normalizers:
        projection = normalizer(projection)
    material = {"kind": kind, "request": to_json(projection), "scheme": KEY_SCHEME_VERSION}
    return material, key_from_material(material)


@raised_at_entry
def key_material(
    kind: str, request: Any, *, spec: KeySpec | None = None, redactor: Redacts | None = None
) -> dict[str, JSONValue]:
    """The versioned document a key is the hash of: scheme version, kind, projection.

    The request is redacted first (when a redactor is given), then projected through
    `spec` (default: `default_spec(kind)`), then passed through its normalizers.
    Raises `CanonicalizationError` naming the JSON pointer of a value JSON cannot hold.
    """
    return material_and_key(kind, request, spec=spec, redactor=redactor)[0]


def stored_request(kind: str, value: Any) -> Any:
    """The request inside key material as a fixture stores it, else `value` itself.

    A fixture's `request` member is its key material (`{"kind", "request", "scheme"}`);
    keying that document's projection again gives the fixture's key.
    """
    if not (isinstance(value, Mapping) and set(value) == {"kind", "request", "scheme"}):
        return value
    if value["scheme"] != KEY_SCHEME_VERSION:
        raise CanonicalizationError(
            "/scheme", f"key scheme {value['scheme']!r} is not this version's "
            f"{KEY_SCHEME_VERSION}", "re-record the fixture",
        )
    if value["kind"] != kind:
        raise CanonicalizationError(
            "/kind", f"the key material is of kind {value['kind']!r}, not {kind!r}",
            f"pass --kind {value['kind']}",
        )
    return value["request"]


def sha256_hex(data: bytes) -> str:
    """SHA-256 of `data`, 64 lowercase hex characters."""
    return hashlib.sha256(data).hexdigest()


def key_from_material(material: Mapping[str, JSONValue]) -> str:
    """The key (SHA-256, 64 lowercase hex characters) of key material as stored."""
    return sha256_hex(canonicalize(material))


@raised_at_entry
def request_key(
    kind: str, request: Any, *, spec: KeySpec | None = None, redactor: Redacts | None = None
) -> str:
    """The key of a call: SHA-256 hex of the RFC 8785 bytes of its key material."""
    return material_and_key(kind, request, spec=spec, redactor=redactor)[1]
