"""Volatile values in key material, and the normalizers that rewrite them before keying.

A UUID, a timestamp or an epoch time in a request makes a key that never hits again:
`find_volatile` names them, `ReplaceVolatile` and `DropKeys` are `KeySpec.normalizers`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .._errors import UsageError
from ._canonical import JSONValue, pointer_join

__all__ = ["DropKeys", "ReplaceVolatile", "VolatileValue", "find_volatile"]

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
