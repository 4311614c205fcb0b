"""redactkey: recorded model and tool calls that are safe to commit and stable to replay."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._answers import PROVIDER_ANSWERS, DropFields, PinFields
from ._canonical import canonicalize
from ._config import Config, load_config
from ._errors import (
    CanonicalizationError,
    ConfigError,
    DriftError,
    DummySecretWarning,
    ExpiredFixtureError,
    ExpiredFixtureWarning,
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
from ._keys import (
    KEY_SCHEME_VERSION,
    MODEL_FIELDS,
    DropKeys,
    KeySpec,
    ReplaceVolatile,
    find_volatile,
    key_material,
    request_key,
)
from ._redact import SENSITIVE_KEYS, Finding, Redactor
from ._secrets import DeclaresSecrets, RunSecrets, collect_run_secrets
from ._store import CassetteStore, FixtureDir, FixtureStore

if TYPE_CHECKING:
    from ._age import FixtureAges
    from ._aiohttp import aiohttp_session
    from ._botocore import use_botocore
    from ._replay import ClientAdapter, ModelFixtures, ToolFixtures, resolve_mode
    from ._report import RunReport
    from ._requests import RequestsAdapter
    from ._transport import FixtureTransport, ForwardingTransport
    from ._vcr import VcrHooks, use_redactkey
    from ._verify import VerifyRules
    from .pytest_plugin import NetworkRefusedError

# Loaded on first use so `import redactkey` (and every `redact` command) stays light:
# the transport and vcr layers import httpx and httpx2, the replay layer jsonschema.
_LAZY = {
    "ClientAdapter": "._replay",
    "FixtureAges": "._age",
    "FixtureTransport": "._transport",
    "ForwardingTransport": "._transport",
    "ModelFixtures": "._replay",
    "NetworkRefusedError": ".pytest_plugin",
    "RequestsAdapter": "._requests",
    "RunReport": "._report",
    "ToolFixtures": "._replay",
    "VcrHooks": "._vcr",
    "VerifyRules": "._verify",
    "aiohttp_session": "._aiohttp",
    "resolve_mode": "._replay",
    "use_botocore": "._botocore",
    "use_redactkey": "._vcr",
}

__all__ = [
    "KEY_SCHEME_VERSION",
    "MODEL_FIELDS",
    "PROVIDER_ANSWERS",
    "SENSITIVE_KEYS",
    "CanonicalizationError",
    "CassetteStore",
    "ClientAdapter",
    "Config",
    "ConfigError",
    "DeclaresSecrets",
    "DriftError",
    "DropFields",
    "DropKeys",
    "DummySecretWarning",
    "ExpiredFixtureError",
    "ExpiredFixtureWarning",
    "Finding",
    "Fixture",
    "FixtureAges",
    "FixtureDir",
    "FixtureError",
    "FixtureFormatError",
    "FixtureStore",
    "FixtureTransport",
    "ForwardingTransport",
    "InputError",
    "KeySpec",
    "MissingFixtureError",
    "ModelFixtures",
    "NetworkRefusedError",
    "PinFields",
    "RecordedError",
    "RedactkeyError",
    "Redactor",
    "ReplaceVolatile",
    "RequestsAdapter",
    "RunReport",
    "RunSecrets",
    "SecretError",
    "StaleFixtureError",
    "StructuredOutputError",
    "ToolFixtures",
    "UsageError",
    "VcrHooks",
    "VerifyRules",
    "VolatileValueWarning",
    "aiohttp_session",
    "canonicalize",
    "collect_run_secrets",
    "find_volatile",
    "key_material",
    "load_config",
    "request_key",
    "resolve_mode",
    "use_botocore",
    "use_redactkey",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'redactkey' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value

__version__ = "0.1.0"
