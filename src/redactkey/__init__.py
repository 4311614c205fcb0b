"""redactkey: recorded model and tool calls that are safe to commit and stable to replay."""

from __future__ import annotations

from ._canonical import canonicalize
from ._errors import (
    CanonicalizationError,
    ConfigError,
    FixtureError,
    FixtureFormatError,
    InputError,
    MissingFixtureError,
    RecordedError,
    RedactkeyError,
    SecretError,
    StaleFixtureError,
    StructuredOutputError,
    UsageError,
    VolatileValueWarning,
)
from ._format import Fixture
from ._keys import DropKeys, KeySpec, ReplaceVolatile, find_volatile, key_material, request_key
from ._redact import Finding, Redactor
from ._replay import ClientAdapter, ModelFixtures, ToolFixtures, resolve_mode
from ._report import RunReport
from ._secrets import RunSecrets, collect_run_secrets
from ._store import CassetteStore, FixtureDir, FixtureStore

__all__ = [
    "CanonicalizationError",
    "CassetteStore",
    "ClientAdapter",
    "ConfigError",
    "DropKeys",
    "Finding",
    "Fixture",
    "FixtureDir",
    "FixtureError",
    "FixtureFormatError",
    "FixtureStore",
    "InputError",
    "KeySpec",
    "MissingFixtureError",
    "ModelFixtures",
    "RecordedError",
    "RedactkeyError",
    "Redactor",
    "ReplaceVolatile",
    "RunReport",
    "RunSecrets",
    "SecretError",
    "StaleFixtureError",
    "StructuredOutputError",
    "ToolFixtures",
    "UsageError",
    "VolatileValueWarning",
    "canonicalize",
    "collect_run_secrets",
    "find_volatile",
    "key_material",
    "request_key",
    "resolve_mode",
]

__version__ = "0.1.0"
