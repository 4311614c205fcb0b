"""Request keys: the versioned key material of a call and its SHA-256.

A call is `(kind, request)`. Its key material is a small document::

    {"scheme": KEY_SCHEME_VERSION, "kind": kind, "request": <projection>}

where the projection keeps only the request fields that decide the answer (a
`KeySpec`), after the request was redacted and before `normalizers` rewrite
volatile values. The key is the SHA-256 (64 lowercase hex characters) of the
RFC 8785 bytes of that document, so it is the same on every machine, Python
version, hash seed and dict order. Keys change only when KEY_SCHEME_VERSION does.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import fnmatch
import hashlib
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

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

Normalizer = Callable[[JSONValue], JSONValue]
"""Rewrites the projected request (plain JSON data) before keying; must be pure."""


class Redacts(Protocol):
    """What the key layer needs of a redactor: a pure `redact(value)` of the same type."""

    def redact(self, value: Any) -> Any: ...


# Model calls: the fields that decide the answer (OpenAI chat/responses, Anthropic
# messages, Gemini and plain `prompt=` callables use these names).
MODEL_FIELDS: frozenset[str] = frozenset({
    "audio",
    "contents",
    "frequency_penalty",
    "generation_config",
    "input",
    "instructions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_output_tokens",
    "max_tokens",
    "messages",
    "modalities",
    "model",
    "n",
    "output_schema",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt",
    "reasoning",
    "reasoning_effort",
    "response_format",
    "response_schema",
    "schema",
    "seed",
    "stop",
    "stop_sequences",
    "stream",
    "system",
    "system_instruction",
    "temperature",
    "text",
    "thinking",
    "tool_choice",
    "tool_config",
    "tools",
    "top_k",
    "top_logprobs",
    "top_p",
})

# Documented "never" list: fields that must not reach a model key even when a user
# widens the spec to every field (`KeySpec.model().widen_all()` keeps them out).
MODEL_NEVER: frozenset[str] = frozenset({
    "api_key",
    "cancellation",
    "cancellation_token",
    "extra_headers",
    "extra_query",
    "headers",
    "idempotency_key",
    "max_retries",
    "metadata",
    "request_id",
    "service_tier",
    "signal",
    "store",
    "stream_options",
    "timeout",
    "user",
})

# Query parameters that never count for kind "http": credentials by name and values
# that change on every call. Shell patterns, case-insensitive, "-" and "_" alike.
HTTP_CREDENTIAL_QUERY: tuple[str, ...] = (
    "access_token",
    "api-key",
    "api_key",
    "apikey",
    "auth",
    "client_secret",
    "id_token",
    "key",
    "password",
    "refresh_token",
    "secret",
    "sig",
    "signature",
    "token",
    "x-amz-*",
    "x-goog-*",
)
HTTP_VOLATILE_QUERY: tuple[str, ...] = (
    "_",
    "cache_buster",
    "cachebuster",
    "cb",
    "expires",
    "nonce",
    "request_id",
    "requestid",
    "timestamp",
    "ts",
)
HTTP_DROPPED_QUERY: tuple[str, ...] = HTTP_CREDENTIAL_QUERY + HTTP_VOLATILE_QUERY

HTTP_FIELDS: frozenset[str] = frozenset({"body", "headers", "method", "query", "url"})

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class KeySpec:
    """Which request fields count toward a key; immutable, widen or narrow to a copy.

    `fields` are the top-level fields that count (`None`: every field except `ignore`).
    For kind "http" the fields are those of the projection: "method", "url" (scheme,
    host, port, path), "query" and "body"; `headers` names the (lower-case) request
    headers that count, none by default; `drop_query` are query parameter patterns
    that never count. `normalizers` rewrite the projection before keying.
    """

    fields: frozenset[str] | None
    ignore: frozenset[str] = frozenset()
    shape: Literal["model", "http"] = "model"
    headers: frozenset[str] = frozenset()
    drop_query: tuple[str, ...] = ()
    normalizers: tuple[Normalizer, ...] = ()
    hosts: Mapping[str, str] | tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # Accept any iterables, store immutable, comparable, lower-cased forms.
        for name in ("fields", "ignore", "headers", "drop_query"):
            if isinstance(getattr(self, name), str):
                raise UsageError(
                    f"KeySpec.{name} is a collection of names, not the string "
                    f"{getattr(self, name)!r}; wrap it in a tuple"
                )
        if self.shape not in ("model", "http"):
            raise UsageError(f"KeySpec.shape is 'model' or 'http', not {self.shape!r}")
        if self.fields is not None:
            object.__setattr__(self, "fields", frozenset(self.fields))
        object.__setattr__(self, "ignore", frozenset(self.ignore))
        object.__setattr__(self, "headers", frozenset(h.lower() for h in self.headers))
        object.__setattr__(self, "drop_query", tuple(p.lower() for p in self.drop_query))
        object.__setattr__(self, "normalizers", tuple(self.normalizers))
        object.__setattr__(self, "hosts", _host_aliases(self.hosts))
        for normalizer in self.normalizers:
            if not callable(normalizer):
                raise UsageError(f"KeySpec.normalizers holds {normalizer!r}, not a callable")

    @classmethod
    def model(cls) -> KeySpec:
        """The default spec of model calls (kinds "text", "structured", "chat", ...)."""
        return cls(fields=MODEL_FIELDS, ignore=MODEL_NEVER)

    @classmethod
    def http(cls) -> KeySpec:
        """The default spec of HTTP calls (kind "http")."""
        return cls(fields=HTTP_FIELDS, shape="http", drop_query=HTTP_DROPPED_QUERY)

    @classmethod
    def whole(cls) -> KeySpec:
        """Every field of the request counts (tool calls keyed on all their arguments)."""
        return cls(fields=None)

    def widen(self, *names: str) -> KeySpec:
        """Return a copy in which the named top-level fields count too."""
        added = frozenset(names)
        fields = None if self.fields is None else self.fields | added
        return dataclasses.replace(self, fields=fields, ignore=self.ignore - added)

    def widen_all(self) -> KeySpec:
        """Return a copy in which every field counts except those in `ignore`."""
        return dataclasses.replace(self, fields=None)

    def narrow(self, *names: str) -> KeySpec:
        """Return a copy in which the named top-level fields no longer count."""
        removed = frozenset(names)
        fields = None if self.fields is None else self.fields - removed
        return dataclasses.replace(self, fields=fields, ignore=self.ignore | removed)

    def with_headers(self, *names: str) -> KeySpec:
        """Return a copy in which the named request headers count (kind "http")."""
        spec = self.widen("headers") if self.shape == "http" else self
        return dataclasses.replace(
            spec, headers=self.headers | frozenset(n.lower() for n in names)
        )

    def with_drop_query(self, *patterns: str) -> KeySpec:
        """Return a copy in which query parameters matching `patterns` (shell patterns,
        case-insensitive) never count, besides those it already drops (kind "http")."""
        added = tuple(p.lower() for p in patterns if p.lower() not in self.drop_query)
        return dataclasses.replace(self, drop_query=self.drop_query + added)

    def with_hosts(self, aliases: Mapping[str, str]) -> KeySpec:
        """Return a copy in which each `host[:port]` of `aliases` keys as its canonical host
        (`"api.openai.com"`, https; or `"http://host:port"`), besides the aliases it has."""
        merged = {**dict(self.hosts), **dict(_host_aliases(aliases))}
        return dataclasses.replace(self, hosts=tuple(sorted(merged.items())))

    def only(self, *names: str) -> KeySpec:
        """Return a copy in which exactly the named top-level fields count (`ignore` and
        the rest are kept)."""
        return dataclasses.replace(self, fields=frozenset(names))

    def with_normalizers(self, *normalizers: Normalizer) -> KeySpec:
        """Return a copy that applies `normalizers` after the ones it already has."""
        return dataclasses.replace(self, normalizers=self.normalizers + tuple(normalizers))

    def counts(self, name: str) -> bool:
        """Whether the top-level field `name` counts toward the key."""
        if name in self.ignore:
            return False
        return self.fields is None or name in self.fields


_HOST = re.compile(r"^(?:(https?)://)?(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?/?$")


def _host_alias_side(text: object, what: str) -> tuple[str | None, str]:
    """(scheme or None, "host[:port]" as the projection writes it) of one side of an alias."""
    match = _HOST.match(text.strip().lower()) if isinstance(text, str) else None
    if match is None:
        raise UsageError(
            f"KeySpec.hosts: {what} {text!r} is not a host[:port] (e.g. '127.0.0.1:8765', "
            "'api.openai.com', 'http://localhost:8080')"
        )
    scheme, host, port = match.groups()
    default = _DEFAULT_PORTS.get(scheme or "https")
    if port is not None and int(port) != default:
        host = f"{host}:{int(port)}"
    return scheme, host


def _host_aliases(value: object) -> tuple[tuple[str, str], ...]:
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (tuple, list)) and all(
        isinstance(p, (tuple, list)) and len(p) == 2 for p in value
    ):
        pairs = [tuple(p) for p in value]
    else:
        raise UsageError("KeySpec.hosts is a mapping of alias host[:port] to canonical host")
    out: dict[str, str] = {}
    for alias, canonical in pairs:
        _, alias_host = _host_alias_side(alias, "alias")
        scheme, host = _host_alias_side(canonical, "canonical host")
        out[alias_host] = f"{scheme or 'https'}://{host}"
    return tuple(sorted(out.items()))


# Built once: a KeySpec is immutable, so every call of a kind shares its default.
_HTTP_SPEC: Final = KeySpec.http()
_WHOLE_SPEC: Final = KeySpec.whole()
_MODEL_SPEC: Final = KeySpec.model()


def default_spec(kind: str) -> KeySpec:
    """The spec used when none is given.

    HTTP for kind "http"; every argument for a tool call (kind "tool:<name>"), since a
    tool's answer depends on all of them and the model projection would keep none;
    the model spec for any other kind.
    """
    if kind == "http":
        return _HTTP_SPEC
    if kind.startswith("tool:"):
        return _WHOLE_SPEC
    return _MODEL_SPEC


# --- volatile values -------------------------------------------------------------

_UUID = re.compile(
    r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}"
    r"-[0-9A-Fa-f]{12}(?![0-9A-Fa-f])"
)
_ISO_TIMESTAMP = re.compile(
    r"(?<!\d)\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?(?!\d)"
)
# 2001-09-09 .. 2100-01-01: wide enough for any clock, narrow enough to skip ordinary ints.
_EPOCH_SECONDS = (1_000_000_000, 4_102_444_800)
_EPOCH_DIGITS = re.compile(r"\d{10}(?:\d{3})?(?:\.\d+)?")


@dataclass(frozen=True)
class VolatileValue:
    """A value in key material that looks different on every run.

    `pointer` is its JSON pointer inside the key material, `reason` what it looks
    like: "UUID", "ISO timestamp", "epoch seconds" or "epoch milliseconds".
    """

    pointer: str
    reason: str


def _epoch_reason(number: float) -> str | None:
    low, high = _EPOCH_SECONDS
    if low <= number < high:
        return "epoch seconds"
    if low * 1000 <= number < high * 1000:
        return "epoch milliseconds"
    return None


def _string_reasons(text: str) -> list[str]:
    reasons = []
    if _UUID.search(text):
        reasons.append("UUID")
    if _ISO_TIMESTAMP.search(text):
        reasons.append("ISO timestamp")
    if _EPOCH_DIGITS.fullmatch(text):
        reason = _epoch_reason(float(text))
        if reason is not None:
            reasons.append(reason)
    return reasons


def find_volatile(value: JSONValue) -> list[VolatileValue]:
    """Volatile-looking values (UUIDs, ISO timestamps, epoch times) in JSON data, in order."""
    found: list[VolatileValue] = []
    _find_volatile(value, "", found)
    return found


def _find_volatile(value: JSONValue, pointer: str, found: list[VolatileValue]) -> None:
    if isinstance(value, str):
        found.extend(VolatileValue(pointer, reason) for reason in _string_reasons(value))
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        reason = _epoch_reason(value)
        if reason is not None:
            found.append(VolatileValue(pointer, reason))
    elif isinstance(value, Mapping):
        for key in sorted(value):
            _find_volatile(value[key], pointer_join(pointer, key), found)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _find_volatile(item, pointer_join(pointer, index), found)


# --- normalizers -----------------------------------------------------------------


class ReplaceVolatile:
    """Normalizer: replace UUIDs and ISO timestamps inside strings, and epoch numbers.

    `reasons` limits it to some of "UUID", "ISO timestamp", "epoch seconds",
    "epoch milliseconds"; each match becomes `placeholder.format(reason=...)`.
    """

    REASONS = ("UUID", "ISO timestamp", "epoch seconds", "epoch milliseconds")

    def __init__(
        self, reasons: Iterable[str] | None = None, *, placeholder: str = "<{reason}>"
    ) -> None:
        chosen = tuple(self.REASONS if reasons is None else reasons)
        unknown = sorted(set(chosen) - set(self.REASONS))
        if unknown:
            raise UsageError(
                f"ReplaceVolatile: unknown reasons {unknown}; use some of {list(self.REASONS)}"
            )
        self.reasons = frozenset(chosen)
        self.placeholder = placeholder

    def __repr__(self) -> str:
        return f"ReplaceVolatile({sorted(self.reasons)!r}, placeholder={self.placeholder!r})"

    def __call__(self, value: JSONValue) -> JSONValue:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            reason = _epoch_reason(value)
            if reason is not None and reason in self.reasons:
                return self.placeholder.format(reason=reason)
            return value
        if isinstance(value, Mapping):
            return {key: self(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(item) for item in value]
        return value

    def _text(self, text: str) -> str:
        if "UUID" in self.reasons:
            text = _UUID.sub(self.placeholder.format(reason="UUID"), text)
        if "ISO timestamp" in self.reasons:
            text = _ISO_TIMESTAMP.sub(self.placeholder.format(reason="ISO timestamp"), text)
        if _EPOCH_DIGITS.fullmatch(text):
            reason = _epoch_reason(float(text))
            if reason is not None and reason in self.reasons:
                return self.placeholder.format(reason=reason)
        return text


class DropKeys:
    """Normalizer: remove object members with the given names at any depth.

    For hints that never change an answer but sit inside counted fields, such as
    Anthropic's `cache_control` on messages and tools.
    """

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return f"DropKeys(*{sorted(self.names)!r})"

    def __call__(self, value: JSONValue) -> JSONValue:
        if isinstance(value, Mapping):
            return {k: self(v) for k, v in value.items() if k not in self.names}
        if isinstance(value, (list, tuple)):
            return [self(item) for item in value]
        return value


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
    if type(request) is not dict:  # (a plain dict, the common request, is a mapping as is)
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
    if type(request) is not dict:  # (a plain dict, the common request, is a mapping as is)
        request = _as_mapping(request)
    if type(request) is not dict and not isinstance(request, Mapping):
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
        ) if pairs else [],
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
    if not spec.ignore and (spec.fields is None or spec.fields.issuperset(projection)):
        return projection  # every member counts (the default spec's case)
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
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
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
    """A text body keyed by what it means: a JSON object or array as its value, a form as
    its `[name, value]` pairs (percent-decoded, by name; the values of one name keep
    their order), whatever the content type said; None for any other text."""
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
    if "json" in request and "text" not in request and "base64" not in request and (
        "body" not in request
    ):  # the common body, told at once
        return {"json": plain(request["json"], "/json")}
    present = [name for name in ("json", "text", "base64") if name in request]
    if present and "body" in request:
        raise CanonicalizationError(
            "", f"an HTTP request has at most one body field, not {[*present, 'body']}",
            "keep one of 'json', 'text' or 'base64'",
        )
    if "body" in request:
        return _projected_body(request["body"])
    if len(present) > 1:
        raise CanonicalizationError(
            "", f"an HTTP request has at most one body field, not {present}",
            "keep one of 'json', 'text' or 'base64'",
        )
    if not present:
        return None
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
    """`key_material` and its key, computed together (what record and replay use).

    The common request is plain JSON data already (a parsed body, the redactor's
    copy): then one pass proves it (the canonical fast path) and gives the bytes to
    hash, with no copy. Anything else (tuples, models, enums, normalizers, a value JSON
    cannot hold) takes the checked path, which converts and names the bad pointer.
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
    """`material_and_key` of the counted part of a request, already redacted: a fresh copy,
    or (from ModelFixtures) the request's own part when redaction changed nothing, copied
    later if it may be written; the material may hold it as it is.

    `orjson_canonical` says the redacted part is plain JSON holding no float and only
    ASCII member names (the redactor's walk saw it): orjson's sorted bytes of the material
    are then RFC 8785's, with no scan to prove it.
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
