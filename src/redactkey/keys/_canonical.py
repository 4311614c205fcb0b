"""RFC 8785 (JCS) canonicalisation of JSON-like Python values.

`canonicalize(value)` first brings a Python value to plain JSON (pydantic models,
mappings, tuples, str/int enums), naming the JSON pointer of anything JSON cannot
hold, then serialises it byte-identically to RFC 8785. The `rfc8785` package is
the reference implementation. The fast path (one pass that rewrites the floats orjson
writes otherwise, then orjson) and the classes it leaves to the reference are in
docs/decisions/0001-canonical-fast-path.md.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any, Final

import orjson
import rfc8785

from .._errors import CanonicalizationError, pointer_join, raised_at_entry

__all__ = [
    "ORJSON_CANONICAL",
    "JSONValue",
    "canonical_if_plain",
    "canonicalize",
    "long_digit_run",
    "pointer_join",
    "to_json",
]

JSONValue = Any  # dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None

MAX_SAFE_INTEGER = 2**53 - 1


# Digits become 1, anything else 0 (bytes.translate runs in C, a byte at a time).
_DIGITS: Final = bytes(1 if 0x30 <= b <= 0x39 else 0 for b in range(256))
_RUN: Final = 19
_LONG_RUN: Final = b"\x01" * _RUN
_SAMPLED_FROM: Final = 512
_MAX_PLACES: Final = 64
_FEW_PLACES: Final = 8
_PAIR: Final = b"\x01\x01"


def long_digit_run(data: bytes, run: int = _RUN) -> bool:
    """Whether `data` holds `run` (19 unless told) or more ASCII digits in a row.

    Only such JSON text can hold an integer orjson reads as a float (below -2**63 or from
    2**64 on, i.e. 19 digits and up); text without one, orjson reads exactly as `json`
    does. With `run` 16, text without one holds no integer beyond 2**53 (16 digits) either.
    A long text is sampled first (docs/performance.md, "The digit guard"): a run of `run`
    digits covers one of every `run`-th bytes, and two side by side of every `step`-th.
    """
    marks = _LONG_RUN if run == _RUN else b"\x01" * run
    if len(data) < _SAMPLED_FROM or run < 4:
        return marks in data.translate(_DIGITS)
    step = run
    sample = data[::run].translate(_DIGITS)
    mark = b"\x01"
    places = sample.count(mark)
    if _FEW_PLACES < places <= _MAX_PLACES:
        step = run // 2
        sample = data[::step].translate(_DIGITS)
        mark = _PAIR
        places = sample.count(mark)
    if not places:
        return False
    if places > _MAX_PLACES:  # digits everywhere (numbers, ids): read it all
        return marks in data.translate(_DIGITS)
    at = sample.find(mark)
    while at >= 0:
        middle = at * step
        # Any run through `middle` has all its digits in this window.
        window = data[max(0, middle - run + 1) : middle + run]
        if marks in window.translate(_DIGITS):
            return True
        at = sample.find(mark, at + 1)
    return False


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
        return str.__str__(value)  # the content, even if a subclass overrides __str__
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise CanonicalizationError(
                pointer, "integer beyond +-(2**53-1) cannot be represented exactly in JSON",
                "send it as a string",
            )
        return int.__int__(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise CanonicalizationError(
                pointer, f"{value!r} is not a JSON number", "replace it with null or a string",
            )
        return float.__float__(value)
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
                    out[str.__str__(key)] = _to_json(item, child, active)
                return out
            return [
                _to_json(item, pointer_join(pointer, i), active) for i, item in enumerate(value)
            ]
        finally:
            active.discard(ident)
    raise CanonicalizationError(
        pointer, f"a {type(value).__name__} is not JSON", "convert it to JSON data first",
    )


@raised_at_entry
def canonicalize(value: Any) -> bytes:
    """Return the RFC 8785 (JCS) bytes of a JSON-like value.

    Raises `CanonicalizationError` (with `.pointer`) for anything JSON cannot hold.
    """
    try:
        return _fast(value)
    except _NotFast:
        pass
    try:
        plain = to_json(value)  # raises, naming the pointer, for anything not JSON
        try:
            return _fast(plain)
        except _NotFast:
            return rfc8785.dumps(plain)
    except RecursionError:
        raise CanonicalizationError(
            "", "the value nests deeper than Python's recursion limit allows",
            "flatten it (no request or answer needs hundreds of levels)",
        ) from None


def canonical_if_plain(value: Any) -> bytes | None:
    """The RFC 8785 bytes of `value` when it is plain JSON data already (exact dict, list,
    str, int, float, bool, None; what `to_json` would return unchanged), else None."""
    try:
        return _fast(value, list)  # a tuple is not what to_json returns: not plain
    except (_NotFast, RecursionError):
        return None


# --- the fast path ---------------------------------------------------------------


class _NotFast(Exception):
    """The fast path cannot prove its bytes for this value; take the slow one."""


#: The options the fast path writes with: sorted keys, integers within 53 bits.
ORJSON_CANONICAL: Final = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER
_TWO_53 = 9007199254740992.0


def _fast(value: Any, seq: type = tuple) -> bytes:
    """Canonical bytes by orjson, or `_NotFast`. Lists, and `seq` (tuple, or list again to
    accept lists only), are arrays."""
    try:
        replaced: Any
        if type(value) is dict or type(value) is list or type(value) is seq:
            replaced = _scan(value, seq)
        else:
            replaced = _scan([value], seq)
            if replaced is not None:
                replaced = replaced[0]
        if replaced is not None:
            value = replaced
        out: bytes = orjson.dumps(value, option=ORJSON_CANONICAL)
    except (orjson.JSONEncodeError, RecursionError):
        # Lone surrogates, integers beyond 2**53, non-str keys, cycles, depth > 254.
        raise _NotFast from None
    return out


def _float(number: float) -> int | None:
    """The int to write instead of `number`, or None when orjson writes it as JCS does."""
    if number.is_integer():
        if -_TWO_53 < number < _TWO_53:
            return int(number)  # ES6 prints integral values below 1e21 without ".0"
        if number <= -1e21 or number >= 1e21:
            return None  # "1e+21" and up: orjson and ES6 agree
        # In between, ES6 prints rounded digits (2**60 -> "1152921504606847000"), an
        # integer orjson's 53-bit mode refuses: rare enough for the reference.
        raise _NotFast
    magnitude = -number if number < 0 else number
    if 1e-5 <= magnitude < math.inf or 0 < magnitude < 1e-6:
        return None
    # NaN and inf fail every comparison above; [1e-6, 1e-5) is where orjson writes
    # "1e-6" forms and ES6 writes "0.000001" forms.
    raise _NotFast


# The scans return None when orjson may write the value as it is, else a copy with
# the floats rewritten (copying only the containers on the way to a rewrite). They
# read values first and go back for keys or indices only once something changes,
# which keeps the common, float-free request at one cheap pass.


def _keys_sort_differently(value: dict[Any, Any]) -> bool:
    """Whether an object's keys sort differently by UTF-16 code units (RFC 8785) than by
    code points (orjson). Only a key above U+FFFF can make them differ: `_scan` asks only
    then, after one C-speed join of the keys."""
    names = list(value)
    try:
        return sorted(names) != sorted(names, key=lambda name: name.encode("utf-16-be"))
    except UnicodeEncodeError:
        raise _NotFast from None  # a lone surrogate: the slow path names it


def _scan(value: Any, seq: type) -> Any:
    """A dict, list or `seq` scanned (see above). Items are dispatched here, not through
    a helper: one call fewer for each of the dozens of containers a chat request holds."""
    items: Any = value
    if type(value) is dict:
        try:
            keys = "".join(value)
        except TypeError:
            raise _NotFast from None  # a non-str key: the slow path names it
        if not keys.isascii() and max(keys) > "\uffff" and _keys_sort_differently(value):
            raise _NotFast
        items = value.values()
    for item in items:
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict or kind is list or kind is seq:
            new = _scan(item, seq)
        elif kind is float:
            new = _float(item)
        else:
            raise _NotFast
        if new is not None:
            return _rewritten(value, item, new, seq)
    return None


def _rewritten(value: Any, first: Any, new: Any, seq: type) -> Any:
    """A copy of a dict, list or `seq` (as a list) with `first` replaced by `new` and the
    items after it scanned and rewritten."""
    out = dict(value) if type(value) is dict else list(value)
    items = iter(value.items() if type(value) is dict else enumerate(value))
    for place, item in items:
        if item is first:  # values() and items() share one order: this is the one
            out[place] = new
            break
    for place, item in items:
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict or kind is list or kind is seq:
            new = _scan(item, seq)
        elif kind is float:
            new = _float(item)
        else:
            raise _NotFast
        if new is not None:
            out[place] = new
    return out
