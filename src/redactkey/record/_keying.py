"""Keying a call: learn the credentials it sends, redact it, project it, hash it."""

from __future__ import annotations

from typing import Any

from ..fixtures._format import Fixture
from ..fixtures._store import check_kind
from ..keys._canonical import JSONValue
from ..keys._keys import KeySpec, counted_part, material_and_key, redacted_material_and_key
from ..redact._redactor import Redactor
from ._codec import StreamRedactor, copy_json
from ._config import Config

__all__ = ["UNREAD", "Call", "Keying"]

UNREAD: Any = object()
"""A call's fixture before the store was asked for it."""


class Call:
    """One call's kind, key material and key; and its fixture, once the store was read."""

    __slots__ = ("fixture", "key", "kind", "material")

    def __init__(self, kind: str, material: dict[str, JSONValue], key: str) -> None:
        self.kind = kind
        self.material = material
        self.key = key
        self.fixture: Fixture | None = UNREAD


class Keying:
    """The key of a call, as `redact key` computes it: the configuration's key spec of
    its kind (or `spec` for every kind), over the redacted request."""

    def __init__(self, redactor: StreamRedactor, config: Config, spec: KeySpec | None,
                 copies: bool) -> None:
        self.redactor = redactor
        self.config = config
        self.spec = spec
        self.copies = copies  # whether key material may be written (and must be our own)
        self._specs: dict[str, KeySpec] = {}

    def spec_for(self, kind: str) -> KeySpec:
        """The key spec of `kind`: `spec` when given, else the configuration's; a kind that
        cannot name a fixture file is refused before anything else."""
        spec = self._specs.get(kind) if isinstance(kind, str) else None
        if spec is None:
            check_kind(kind)
            spec = self._specs[kind] = self.spec or self.config.key_spec(kind)
        return spec

    def key(self, kind: str, request: Any, spec: KeySpec | None = None) -> Call:
        """Key `request`. Credentials it sends by name (a key from a config file, not only
        the environment) join the run secrets first, so an answer echoing one loses it;
        in replay too, so a stand-in key echoed into a prompt keys as the live one did."""
        spec = self.spec_for(kind) if spec is None else spec
        redactor = self.redactor
        if type(redactor) is not Redactor:  # (a subclass may redact its own way)
            redactor.learn(request)
            return Call(kind, *material_and_key(kind, request, spec=spec, redactor=redactor))
        # Only the part of the request that counts is redacted; when redaction changes
        # nothing it comes back as it is, and orjson may write it canonically as it is.
        part = counted_part(request, spec)
        redacted, canonical = redactor.learn_and_redact_kept(request, part)
        material, key = redacted_material_and_key(kind, redacted, spec,
                                                  orjson_canonical=canonical)
        if redacted is part and self.copies:
            material = copy_json(material)  # it holds the caller's data: copy what is written
        return Call(kind, material, key)
