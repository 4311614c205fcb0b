"""RFC 8785 (JCS) canonicalisation of JSON-like Python values.

`canonicalize(value)` first brings a Python value to plain JSON (pydantic models,
mappings, tuples, str/int enums), naming the JSON pointer of anything JSON cannot
hold, then serialises it byte-identically to RFC 8785. The `rfc8785` package is
the reference implementation.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any

import rfc8785

from ._errors import CanonicalizationError

__all__ = ["JSONValue", "canonicalize", "pointer_join", "to_json"]

JSONValue = Any  # dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None

MAX_SAFE_INTEGER = 2**53 - 1


def pointer_join(pointer: str, token: str | int) -> str:
    """Append one reference token to a JSON pointer (RFC 6901 escaping)."""
    text = str(token).replace("~", "~0").replace("/", "~1")
    return f"{pointer}/{text}"


def _check_str(text: str, pointer: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalizationError(
            pointer,
            f"{what} holds a lone surrogate (U+{ord(text[exc.start]):04X}) "
            "that UTF-8 cannot encode",
            "decode the text with errors='replace' or fix its source",
        ) from None


def to_json(value: Any, pointer: str = "") -> JSONValue:
    """Return `value` as plain JSON data, or raise `CanonicalizationError` naming the pointer."""
    return _to_json(value, pointer, set())


def _to_json(value: Any, pointer: str, active: set[int]) -> JSONValue:
    # Order matters: bool is an int, str/int enums are str/int.
    if value is None or value is True or value is False:
        return value
    if isinstance(value, enum.Enum):
        if isinstance(value, (str, int)):
            return _to_json(value.value, pointer, active)
        raise CanonicalizationError(
            pointer, f"enum {type(value).__name__} is neither a str nor an int enum",
            "pass its value instead",
        )
    if isinstance(value, str):
        _check_str(value, pointer, "string")
        return str(value)
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise CanonicalizationError(
                pointer, "integer beyond +-(2**53-1) cannot be represented exactly in JSON",
                "send it as a string",
            )
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise CanonicalizationError(
                pointer, f"{value!r} is not a JSON number", "replace it with null or a string",
            )
        return float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise CanonicalizationError(
            pointer, "bytes are not JSON", "decode them to text or encode them as base64 first",
        )
    if isinstance(value, (set, frozenset)):
        raise CanonicalizationError(
            pointer, "a set has no order and is not JSON", "pass a sorted list instead",
        )
    model_dump = getattr(value, "model_dump", None)
    if model_dump is not None and hasattr(type(value), "model_fields"):
        return _to_json(model_dump(mode="json"), pointer, active)
    if isinstance(value, (Mapping, list, tuple)):
        ident = id(value)
        if ident in active:
            raise CanonicalizationError(
                pointer, "the value contains itself (a cycle)", "break the cycle",
            )
        active.add(ident)
        try:
            if isinstance(value, Mapping):
                out: dict[str, JSONValue] = {}
                for key, item in value.items():
                    if isinstance(key, enum.Enum) and isinstance(key, str):
                        key = key.value
                    if not isinstance(key, str):
                        raise CanonicalizationError(
                            pointer_join(pointer, str(key)),
                            f"object key {key!r} is a {type(key).__name__}, not a string",
                            "convert the keys to strings",
                        )
                    child = pointer_join(pointer, key)
                    _check_str(key, child, "object key")
                    out[str(key)] = _to_json(item, child, active)
                return out
            return [
                _to_json(item, pointer_join(pointer, i), active) for i, item in enumerate(value)
            ]
        finally:
            active.discard(ident)
    raise CanonicalizationError(
        pointer, f"a {type(value).__name__} is not JSON", "convert it to JSON data first",
    )


def canonicalize(value: Any) -> bytes:
    """Return the RFC 8785 (JCS) bytes of a JSON-like value."""
    result: bytes = rfc8785.dumps(to_json(value))
    return result
