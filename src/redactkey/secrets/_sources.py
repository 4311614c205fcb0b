"""Where a slot's value comes from (`SecretSource`), and reading it from there.

Every error names the slot, never a value.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, Union, runtime_checkable

from pydantic import SecretBytes, SecretStr

from .._errors import SecretError, UsageError

__all__ = ["DeclaresSecrets", "SecretSource", "check_slot", "check_source", "decoded",
           "read_source"]

#: Where a slot's value comes from: `None` (the environment variable named like
#: the slot), a file path, a zero-argument callable, or a pydantic secret.
SecretSource = Union[None, "os.PathLike[str]", Callable[[], Any], SecretStr, SecretBytes]


@runtime_checkable
class DeclaresSecrets(Protocol):
    """A component that names the secret slots it reads.

    `secret_slots` is an iterable of slot names (each read from the environment
    variable of that name) or a mapping of slot name to `SecretSource`.
    """

    @property
    def secret_slots(self) -> Iterable[str] | Mapping[str, SecretSource]: ...


def decoded(slot: str, value: Any) -> str:
    """A source's value as text (bytes as UTF-8, undecodable bytes kept as surrogates)."""
    if isinstance(value, (SecretStr, SecretBytes)):
        value = value.get_secret_value()
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, str):
        return value
    raise SecretError(
        slot,
        f"its source gave a {type(value).__name__}, not str or bytes",
        "make the source return the credential as text",
    )


def check_slot(slot: object) -> None:
    if not isinstance(slot, str) or not slot:
        raise UsageError("a secret slot name must be a non-empty str")


def check_source(slot: str, source: object) -> None:
    if source is None or isinstance(source, (os.PathLike, SecretStr, SecretBytes)):
        return
    if isinstance(source, (str, bytes)):
        raise SecretError(
            slot,
            "a str or bytes source is ambiguous (a value? a path? a variable name?)",
            "pass pathlib.Path(...) for a file, a callable, a SecretStr, or None for the "
            "environment variable of that name",
        )
    if not callable(source):
        raise SecretError(
            slot,
            f"a {type(source).__name__} is not a secret source",
            "pass None, a pathlib.Path, a zero-argument callable or a SecretStr",
        )


def read_source(slot: str, source: SecretSource,
                environ: Mapping[str, str] | None) -> str | None:
    """The value `source` gives for `slot` now, or None when it has none."""
    if source is None:
        return (os.environ if environ is None else environ).get(slot)
    if isinstance(source, (SecretStr, SecretBytes)):
        return decoded(slot, source)
    if isinstance(source, os.PathLike):
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SecretError(
                slot,
                f"cannot read its file {path}: {exc.strerror or type(exc).__name__}",
                "check the path and its permissions",
            ) from None
        return decoded(slot, data).rstrip("\r\n")
    try:
        produced = source()
    except Exception as exc:
        raise SecretError(
            slot,
            f"its source callable raised {type(exc).__name__}",
            "fix the callable that provides this credential",
        ) from None
    return None if produced is None else decoded(slot, produced)
