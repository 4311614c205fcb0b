from __future__ import annotations

import redactkey


def test_all_is_sorted_and_complete() -> None:
    """`__all__` is sorted (constants first, as ruff's isort-style order) and every name in
    it exists."""
    assert redactkey.__all__ == sorted(redactkey.__all__, key=lambda n: (not n.isupper(), n))
    for name in redactkey.__all__:
        assert hasattr(redactkey, name), name


def test_contract_names_are_exported() -> None:
    """The names DESIGN.md promises are importable from `redactkey`."""
    promised = {
        "canonicalize",
        "request_key",
        "KeySpec",
        "RunSecrets",
        "collect_run_secrets",
        "Redactor",
        "FixtureDir",
        "ModelFixtures",
        "FixtureTransport",
        "RequestsAdapter",
        "aiohttp_session",
        "use_botocore",
        "Recorder",
        "CanonicalizationError",
        "DriftError",
        "MissingFixtureError",
        "RedactkeyError",
        "StaleFixtureError",
    }
    assert promised <= set(redactkey.__all__)


def test_what_the_recorder_replaced_is_not_exported() -> None:
    """Names a `Recorder` face stands for left the public face (CHANGELOG.md gives their
    new spelling): `rec.tools`, `rec.vcr_hooks()`, `Recorder.from_config().mode`, the
    type `ModelFixtures.adapt` returns, the ages a Recorder's faces share."""
    moved = {"ToolFixtures", "VcrHooks", "resolve_mode", "ClientAdapter", "FixtureAges"}
    assert moved.isdisjoint(redactkey.__all__)


def test_errors_share_one_root() -> None:
    """Every exported exception derives from `RedactkeyError`."""
    for name in redactkey.__all__:
        obj = getattr(redactkey, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, redactkey.RedactkeyError), name


def test_warnings_for_users_are_exported() -> None:
    """The warnings a user may filter are importable from `redactkey`."""
    assert {"DummySecretWarning", "VolatileValueWarning"} <= set(redactkey.__all__)


def test_extension_points_are_exported() -> None:
    """Host aliases, forwarding and answer normalizers need no private import."""
    assert {"ForwardingTransport", "PROVIDER_ANSWERS", "PinFields", "DropFields"} <= set(
        redactkey.__all__)


def test_names_the_docs_need_are_exported() -> None:
    """What the docs show users is importable from `redactkey`, never a private module."""
    needed = {"KEY_SCHEME_VERSION", "MODEL_FIELDS", "SENSITIVE_KEYS", "NetworkRefusedError",
              "load_config", "Config"}
    assert needed <= set(redactkey.__all__)
    assert issubclass(redactkey.NetworkRefusedError, redactkey.RedactkeyError)
