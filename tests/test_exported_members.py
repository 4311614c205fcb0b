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
        "CanonicalizationError",
        "MissingFixtureError",
        "RedactkeyError",
        "StaleFixtureError",
    }
    assert promised <= set(redactkey.__all__)


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
