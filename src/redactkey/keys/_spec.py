"""Key specs: which fields of a request count toward its key.

A model call counts the fields that decide its answer (`MODEL_FIELDS`) and never those
in `MODEL_NEVER`; an HTTP call counts its method, URL, query and body (`KeySpec.http`);
a tool call counts every argument. Users widen or narrow a spec to a copy.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from .._errors import UsageError
from ._canonical import JSONValue

__all__ = [
    "DEFAULT_PORTS",
    "HTTP_DROPPED_QUERY",
    "HTTP_FIELDS",
    "MODEL_FIELDS",
    "MODEL_NEVER",
    "KeySpec",
    "Normalizer",
    "default_spec",
]

Normalizer = Callable[[JSONValue], JSONValue]
"""Rewrites the projected request (plain JSON data) before keying; must be pure."""


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

DEFAULT_PORTS = {"http": 80, "https": 443}


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
    default = DEFAULT_PORTS.get(scheme or "https")
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
