"""redactkey: recorded model and tool calls that are safe to commit and stable to replay."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from .fixtures._answers import PROVIDER_ANSWERS, DropFields, PinFields
from .fixtures._format import Fixture
from .fixtures._store import CassetteStore, FixtureDir, FixtureStore
from .keys._canonical import canonicalize
from .keys._keys import (
    KEY_SCHEME_VERSION,
    MODEL_FIELDS,
    DropKeys,
    KeySpec,
    ReplaceVolatile,
    find_volatile,
    key_material,
    request_key,
)
from .record._config import Config, load_config
from .redact._redactor import SENSITIVE_KEYS, Finding, Redactor
from .secrets._run_secrets import DeclaresSecrets, RunSecrets, collect_run_secrets

if TYPE_CHECKING:
    from .clients._aiohttp import aiohttp_session
    from .clients._botocore import use_botocore
    from .clients._guard import NetworkRefusedError
    from .clients._httpx import FixtureTransport, ForwardingTransport
    from .clients._recorder import Recorder
    from .clients._requests import RequestsAdapter
    from .clients._vcr import use_redactkey
    from .fixtures._verify import VerifyRules
    from .record._replay import ModelFixtures
    from .record._report import RunReport

# Loaded on first use so `import redactkey` (and every `redact` command) stays light:
# the faces import their client libraries, the replay layer jsonschema.
_LAZY = {
    "FixtureTransport": ".clients._httpx",
    "ForwardingTransport": ".clients._httpx",
    "ModelFixtures": ".record._replay",
    "NetworkRefusedError": ".clients._guard",
    "Recorder": ".clients._recorder",
    "RequestsAdapter": ".clients._requests",
    "RunReport": ".record._report",
    "VerifyRules": ".fixtures._verify",
    "aiohttp_session": ".clients._aiohttp",
    "use_botocore": ".clients._botocore",
    "use_redactkey": ".clients._vcr",
}

__all__ = [
    "KEY_SCHEME_VERSION",
    "MODEL_FIELDS",
    "PROVIDER_ANSWERS",
    "SENSITIVE_KEYS",
    "CanonicalizationError",
    "CassetteStore",
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
    "Recorder",
    "RedactkeyError",
    "Redactor",
    "ReplaceVolatile",
    "RequestsAdapter",
    "RunReport",
    "RunSecrets",
    "SecretError",
    "StaleFixtureError",
    "StructuredOutputError",
    "UsageError",
    "VerifyRules",
    "VolatileValueWarning",
    "aiohttp_session",
    "canonicalize",
    "collect_run_secrets",
    "find_volatile",
    "key_material",
    "load_config",
    "request_key",
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
