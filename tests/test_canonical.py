"""RFC 8785 canonicalisation: vectors, the differential proof against rfc8785, errors."""

from __future__ import annotations

import collections
import enum
import hashlib
import json
import math
import random
import struct
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SHARED
from redactkey import CanonicalizationError, canonicalize
from redactkey.keys._canonical import (
    _DIGITS,
    _fast,
    _NotFast,
    canonical_if_plain,
    long_digit_run,
    pointer_join,
    to_json,
)

JCS = "vectors/jcs"
VECTOR_NAMES = ["arrays", "french", "structures", "unicode", "values", "weird"]


def _double(u: int) -> float:
    value: float = struct.unpack(">d", struct.pack(">Q", u))[0]
    return value


def _tsv_rows(name: str) -> list[Any]:
    """Rows of a vector TSV for parametrisation; one skipping row where ../shared is absent."""
    path = SHARED / JCS / name
    if not path.is_file():
        return [pytest.param(None, None, id="shared-absent")]
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    return [pytest.param(h, e, id=h) for h, e in rows]


def _es6_sequence(directory: Path) -> Iterator[int]:
    """The deterministic ES6 number test sequence described in the vectors' README."""
    yield from (int(line, 16) for line in
                (directory / "es6_static_u64.txt").read_text(encoding="ascii").split())
    yield from (0x0010000000000000 + k for k in range(2000))
    block = bytes(32)
    while True:
        block = hashlib.sha256(block).digest()
        for i in range(4):
            u = int.from_bytes(block[i * 8:(i + 1) * 8], "little")
            number = _double(u)
            if number == 0.0 or math.isnan(number) or math.isinf(number):
                continue
            yield u


class TestVectors:
    @pytest.mark.parametrize("name", VECTOR_NAMES)
    def test_file_pair(self, shared_dir: Path, name: str) -> None:
        """Each input file canonicalises to its output file byte for byte."""
        directory = shared_dir / JCS
        value = json.loads((directory / "input" / f"{name}.json").read_bytes())
        expected = (directory / "output" / f"{name}.json").read_bytes()
        assert canonicalize(value) == expected

    @pytest.mark.parametrize("name", VECTOR_NAMES)
    def test_outhex_matches_output(self, shared_dir: Path, name: str) -> None:
        """The hex dumps and the output files agree (the vectors are intact)."""
        directory = shared_dir / JCS
        hex_text = (directory / "outhex" / f"{name}.txt").read_text(encoding="ascii")
        assert bytes.fromhex(hex_text) == (directory / "output" / f"{name}.json").read_bytes()

    @pytest.mark.parametrize(("ieee_hex", "expected"), _tsv_rows("numbers.tsv"))
    def test_appendix_b_number(
        self, shared_dir: Path, ieee_hex: str, expected: str
    ) -> None:
        """RFC 8785 Appendix B: each double has its text; NaN and Infinity are errors."""
        number = struct.unpack(">d", bytes.fromhex(ieee_hex))[0]
        if expected:
            assert canonicalize(number) == expected.encode()
            assert canonicalize([number]) == f"[{expected}]".encode()
        else:
            with pytest.raises(CanonicalizationError, match="not a JSON number"):
                canonicalize(number)

    @pytest.mark.parametrize(("u_hex", "expected"), _tsv_rows("numbers_es6testfile_sample.tsv"))
    def test_es6_sample_line(self, shared_dir: Path, u_hex: str, expected: str) -> None:
        """The sample lines of the ES6 number test file."""
        assert canonicalize(_double(int(u_hex, 16))) == expected.encode()

    def test_es6_sequence_to_100000_lines(self, shared_dir: Path) -> None:
        """The first 1,000 / 10,000 / 100,000 lines of the ES6 sequence hash as published."""
        published = dict(
            line.split("\t") for line in
            (shared_dir / JCS / "es6_sequence_sha256.tsv").read_text().splitlines()[1:]
        )
        digest = hashlib.sha256()
        checked = []
        for count, u in enumerate(_es6_sequence(shared_dir / JCS), start=1):
            digest.update(f"{u:x},{canonicalize(_double(u)).decode()}\n".encode())
            if str(count) in published:
                assert digest.hexdigest() == published[str(count)], count
                checked.append(count)
            if count == 100_000:
                break
        assert checked == [1000, 10_000, 100_000]

    def test_es6_sequence_as_one_array(self, shared_dir: Path) -> None:
        """The first 20,000 sequence numbers in one array equal the reference bytes."""
        numbers = []
        for u in _es6_sequence(shared_dir / JCS):
            numbers.append(_double(u))
            if len(numbers) == 20_000:
                break
        assert canonicalize(numbers) == rfc8785.dumps(numbers)


# --- the differential proof --------------------------------------------------------

# Characters where implementations differ: controls, quotes, the private-use area
# (sorts above non-BMP characters by UTF-16 code units, below them by code points),
# non-BMP (including supplementary private use), and lone surrogates.
SPECIAL_CHARS = st.sampled_from(
    ["\x00", "\x07", "\x08", "\t", "\n", "\x0b", "\x0c", "\r", "\x1f", "\x7f", '"', "\\",
     "/", "é", "\u2028", "\ud7ff", "\ue000", "\uf8ff", "\ufeff", "\uffff", "\U00010000",
     "\U0001f600", "\U000f0000", "\U0010ffff", "a", "b", "\ud800", "\udfff"]
)
ANY_CHAR = st.characters(exclude_categories=())  # every code point, surrogates included
TEXT = st.text(st.one_of(SPECIAL_CHARS, ANY_CHAR), max_size=8)
KEYS = st.text(st.one_of(SPECIAL_CHARS, SPECIAL_CHARS, ANY_CHAR), max_size=4)
FLOATS = st.one_of(
    st.floats(),  # every magnitude, subnormals, +-0.0, NaN, +-inf
    st.floats(min_value=1e-7, max_value=1e-4),
    st.floats(min_value=1e15, max_value=1e22),
    st.integers(-(2**60), 2**60).map(float),
)
INTS = st.one_of(st.integers(-(2**53) - 2, 2**53 + 2), st.integers())
SCALARS = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(KEYS, children, max_size=5)
    ),
    max_leaves=30,
)


def _outcome(fn: Any, value: Any) -> bytes | str:
    """The bytes, or "error" for any refusal (rfc8785 raises several exception types)."""
    try:
        result: bytes = fn(value)
    except Exception:
        return "error"
    return result


class TestDifferential:
    @pytest.mark.slow  # 600 arbitrary JSON values against the reference
    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(JSON)
    def test_same_bytes_or_both_fail(self, value: Any) -> None:
        """Over arbitrary JSON, canonicalize gives rfc8785's bytes, or both refuse."""
        expected = _outcome(rfc8785.dumps, value)
        if isinstance(expected, bytes):
            assert canonicalize(value) == expected
        else:
            with pytest.raises(CanonicalizationError):
                canonicalize(value)

    @settings(max_examples=1000, deadline=None)
    @given(FLOATS)
    def test_every_float(self, number: float) -> None:
        """A float alone, in an array and as a member value canonicalises like rfc8785."""
        for value in (number, [number, 1.0], {"k": number}):
            assert _outcome(canonicalize, value) == _outcome(rfc8785.dumps, value)

    @settings(max_examples=400, deadline=None)
    @given(st.dictionaries(KEYS, st.integers(0, 9), max_size=8))
    def test_key_order(self, value: dict[str, int]) -> None:
        """Member order is by UTF-16 code units, as rfc8785 sorts, for any keys."""
        assert _outcome(canonicalize, value) == _outcome(rfc8785.dumps, value)


def _cycle_list_fast() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


class TestFastPathBoundaries:
    @pytest.mark.parametrize(
        "number",
        [0.0, -0.0, 1.0, -1.0, 0.1, 1e-4, 0.00009999999999999999, 1e-5,
         math.nextafter(1e-5, 0), 1e-6, math.nextafter(1e-6, 0), 1e-7, 5e-324,
         2.0**53 - 1, 2.0**53, 2.0**53 + 2, 2.0**60, 1e20, math.nextafter(1e21, 0), 1e21,
         1.7976931348623157e308, -1.5e-6, 123456789012345.6, 9007199254740993.0],
    )
    def test_boundary_floats(self, number: float) -> None:
        """Floats at every switch of the fast path match the reference."""
        for value in (number, [number], {"a": [number, {"b": number}]}):
            assert canonicalize(value) == rfc8785.dumps(value)

    @pytest.mark.parametrize(
        "value",
        [
            {"\U0001f600": 1, "\ue000": 2},
            {"a": [{"\U00010000": 1, "\uffff": 2, "z": 3}]},
            {"\U0001f600": 1, "a": 2, "é": 3},
            ["\U0001f600", {"\ue000": "\U0001f600"}],
        ],
    )
    def test_non_bmp_keys_sort_by_utf16(self, value: Any) -> None:
        """Non-BMP keys sort by UTF-16 code units, unlike plain code point order."""
        assert canonicalize(value) == rfc8785.dumps(value)

    @pytest.mark.parametrize(
        "value",
        [{"messages": [{"content": "rain 🌧️ ☔ " * 50}], "top_p": 1.0}, ["😀"], "😀", 2.5],
    )
    def test_plain_values_give_their_bytes(self, value: Any) -> None:
        """Plain JSON data (emoji in values included) is proven in one pass."""
        assert canonical_if_plain(value) == rfc8785.dumps(value)

    @pytest.mark.parametrize(
        "value",
        [{"stop": ("a",)}, ("a",), {"x": float("nan")}, {"\U0001f600": 1, "\ue000": 2},
         {"k": b"x"}, {"n": 2**53}],
    )
    def test_values_to_json_would_change_are_not_plain(self, value: Any) -> None:
        """A tuple, bytes, NaN or unproven bytes: not plain, the converting path decides."""
        assert canonical_if_plain(value) is None

    def test_rewrites_do_not_touch_the_input(self) -> None:
        """Integral floats are rewritten in a copy; the caller's value is unchanged."""
        value = {"top_p": 1.0, "nested": [{"x": 2.0}], "t": (3.0,)}
        assert canonicalize(value) == b'{"nested":[{"x":2}],"t":[3],"top_p":1}'
        assert value == {"top_p": 1.0, "nested": [{"x": 2.0}], "t": (3.0,)}
        assert type(value["top_p"]) is float

    @pytest.mark.parametrize(
        "value",
        [
            {"model": "m", "temperature": 0.2, "top_p": 1.0, "stop": ("a",), "n": None},
            {"messages": [{"role": "user", "content": "Grüße 😀 \x01"}], "seed": 2**53 - 1},
            [1e-7, 1e-5, 0.5, 2.0**53 - 1, 1e21, 1e300, -0.0],
        ],
    )
    def test_common_shapes_take_the_fast_path(self, value: Any) -> None:
        """Ordinary requests never fall back to the reference (and still match it)."""
        assert _fast(value) == rfc8785.dumps(value)

    @pytest.mark.parametrize(
        "value",
        [1.5e-6, {"k": [3e-6]}, 2.0**60, [-1e20], {"\U0001f600": 1, "\ue000": 2}, {"x": "\ud800"},
         {"n": 2**53}, {1: 2}, {"t": b"x"}, _cycle_list_fast()],
    )
    def test_unproven_shapes_leave_the_fast_path(self, value: Any) -> None:
        """Values whose bytes the fast path cannot vouch for are handed on."""
        with pytest.raises(_NotFast):
            _fast(value)

    @pytest.mark.parametrize(
        "value",
        [
            {"a": 1.0, "b": "x", "c": 2.0, "d": [3.0, "y", 4.0, {"e": 5.0, "f": 6.0}]},
            [{"a": 1}, 1.0, [2.0, 2.0], (3.0,), {"z": 0.5, "y": -0.0}],
        ],
    )
    def test_every_float_in_a_container_is_rewritten(self, value: Any) -> None:
        """After the first rewrite in an object or array, later ones are rewritten too."""
        assert _fast(value) == rfc8785.dumps(value)

    def test_control_characters_escape_like_jcs(self) -> None:
        """Controls use the short escapes or lowercase \\u00xx; DEL and U+2028 stay raw."""
        text = "".join(chr(i) for i in range(0x20)) + '"\\/\x7f\u2028'
        assert canonicalize(text) == rfc8785.dumps(text)
        assert b"\\u001f" in canonicalize(text)


# --- Python values brought to JSON -----------------------------------------------


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Point(pydantic.BaseModel):
    x: float
    label: str


class Shouty(str):
    def __str__(self) -> str:
        return "SHOUT"


class TestConversion:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (Point(x=1.5, label="p"), b'{"label":"p","x":1.5}'),
            ({"p": [Point(x=2.0, label="q")]}, b'{"p":[{"label":"q","x":2}]}'),
            (types.MappingProxyType({"b": 1, "a": 2}), b'{"a":2,"b":1}'),
            (collections.UserDict({"k": (1, 2)}), b'{"k":[1,2]}'),
            (collections.OrderedDict([("b", 1), ("a", 2)]), b'{"a":2,"b":1}'),
            ((1, "two", None), b'[1,"two",null]'),
            ({"c": Colour.RED, "l": Level.HIGH, Colour.RED: 1}, b'{"c":"red","l":3,"red":1}'),
            (Shouty("quiet"), b'"quiet"'),
            (True, b"true"),
            (None, b"null"),
        ],
    )
    def test_python_values(self, value: Any, expected: bytes) -> None:
        """Pydantic models, mappings, tuples and str/int enums become JSON."""
        assert canonicalize(value) == expected


# --- errors --------------------------------------------------------------------------


class Plain(enum.Enum):
    A = 1.5


def _cycle_dict() -> dict[str, Any]:
    value: dict[str, Any] = {"a": {"b": []}}
    value["a"]["b"].append(value)
    return value


def _cycle_list() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


class TestErrors:
    @pytest.mark.parametrize(
        ("value", "pointer", "problem"),
        [
            ({"a": float("nan")}, "/a", "nan is not a JSON number"),
            ({"a": [float("inf")]}, "/a/0", "inf is not a JSON number"),
            ([0, -math.inf], "/1", "-inf is not a JSON number"),
            ({"n": 2**53}, "/n", "integer beyond"),
            ({"n": [-(2**53)]}, "/n/0", "integer beyond"),
            ({"n": 10**30}, "/n", "integer beyond"),
            ({"b": b"raw"}, "/b", "bytes are not JSON"),
            ({"b": [bytearray(b"x")]}, "/b/0", "bytes are not JSON"),
            ({"s": {1, 2}}, "/s", "a set has no order"),
            ({"s": frozenset()}, "/s", "a set has no order"),
            ({"o": {1: "x"}}, "/o/1", "object key 1 is a int"),
            ({"o": {("t",): "x"}}, "/o/('t',)", "is a tuple"),
            (_cycle_dict(), "/a/b/0", "cycle"),
            (_cycle_list(), "/1", "cycle"),
            ({"t": "ok \ud800"}, "/t", "lone surrogate (U+D800)"),
            ({"t": ["\udfff"]}, "/t/0", "lone surrogate (U+DFFF)"),
            ({"k": {"bad\ud83d": 1}}, "/k/bad\ud83d", "object key holds a lone surrogate"),
            ({"e": Plain.A}, "/e", "neither a str nor an int enum"),
            ({"x": object()}, "/x", "a object is not JSON"),
            ({"a/b": {"~": float("nan")}}, "/a~1b/~0", "nan"),
        ],
    )
    def test_error_names_pointer(self, value: Any, pointer: str, problem: str) -> None:
        """Each value JSON cannot hold is a CanonicalizationError at its JSON pointer."""
        with pytest.raises(CanonicalizationError) as info:
            canonicalize(value)
        assert info.value.pointer == pointer
        assert problem in info.value.problem
        assert info.value.fix  # every error says what to do
        assert str(info.value).startswith(f"cannot canonicalize value at {pointer or '(root)'}")

    def test_root_pointer_reads_root(self) -> None:
        """An error at the root says so instead of printing an empty pointer."""
        with pytest.raises(CanonicalizationError, match=r"at \(root\)"):
            canonicalize(float("nan"))

    def test_error_is_value_error(self) -> None:
        """Callers catching ValueError keep working."""
        assert issubclass(CanonicalizationError, ValueError)


class TestToJson:
    def test_plain_copy(self) -> None:
        """`to_json` returns plain JSON types only."""
        value = to_json({"t": (1, Colour.RED), "m": types.MappingProxyType({"k": Level.HIGH})})
        assert value == {"t": [1, "red"], "m": {"k": 3}}
        assert type(value["t"][1]) is str
        assert type(value["m"]["k"]) is int

    @pytest.mark.parametrize(
        ("pointer", "token", "expected"),
        [("", "a", "/a"), ("/a", 0, "/a/0"), ("", "a/b~c", "/a~1b~0c"), ("", "", "/")],
    )
    def test_pointer_join(self, pointer: str, token: str | int, expected: str) -> None:
        """RFC 6901 escaping of `~` and `/`."""
        assert pointer_join(pointer, token) == expected


def _naive_run(data: bytes, length: int = 19) -> bool:
    return any(run and len(run) >= length for run in
               bytes(c if 0x30 <= c <= 0x39 else 0x20 for c in data).split())


class TestLongDigitRun:
    """The guard in front of orjson's reads: 19 digits in a row, wherever they are."""

    @given(st.integers(0, 3), st.integers(0, 9000), st.integers(17, 40), st.integers(0, 3))
    @settings(max_examples=150, deadline=None)
    def test_equals_a_full_read(self, seed: int, at: int, length: int, scatter: int) -> None:
        """Sampled or not, a run is found exactly where a full read finds one."""
        rng = random.Random(seed * 100_003 + at)
        data = bytearray(rng.choice(b"abc xyz,{}[]:") for _ in range(at + length + 50))
        data[at : at + length] = bytes(rng.choice(b"0123456789") for _ in range(length))
        for _ in range(scatter * 40):  # stray digits and short runs around it
            place = rng.randrange(len(data))
            data[place : place + 3] = b"123"[: len(data) - place]
        assert long_digit_run(bytes(data)) is _naive_run(bytes(data))
        assert long_digit_run(bytes(data), 16) is _naive_run(bytes(data), 16)

    @given(st.integers(0, 2**32), st.integers(1, 20), st.sampled_from([19, 16]))
    @settings(max_examples=200, deadline=None)
    def test_equals_a_full_read_among_many_numbers(self, seed: int, longest: int,
                                                   run: int) -> None:
        """Text dense with numbers of up to `longest` digits (the counts, ids and
        timestamps of a stream of events) answers as a full read does."""
        rng = random.Random(seed)
        parts = []
        for _ in range(rng.randint(20, 400)):
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, longest)))
            parts.append(rng.choice(['{"created": ', ', "index": ', "x", " ", "\n    "]))
            parts.append(digits)
        data = "".join(parts).encode()
        assert long_digit_run(data, run) is _naive_run(data, run)

    @pytest.mark.parametrize("run", [19, 16])
    def test_run_among_short_numbers_found_at_every_offset(self, run: int) -> None:
        """Among short numbers that the first sample meets a few dozen times (the read
        in pairs), a lone run is found wherever it starts; one digit less is not a run."""
        base = b"".join(b'{"created": %d, "index": %d}, ' % (n * 7919 % 100_000, n % 7)
                        for n in range(80))
        assert 8 < base[::run].translate(_DIGITS).count(1) <= 64  # (the read in pairs)
        for offset in range(2 * run):
            for length, found in ((run, True), (run - 1, False)):
                at = len(base) // 2 + offset
                data = base[:at] + b" " + b"7" * length + b" " + base[at:]
                assert long_digit_run(data, run) is found, (offset, length)

    @pytest.mark.parametrize("size", [100, 1500, 5000, 300_000])
    @pytest.mark.parametrize("where", ["start", "middle", "end"])
    def test_run_of_nineteen_found_anywhere(self, size: int, where: str) -> None:
        """A lone 19-digit number in a long text is found; 18 digits are not a run."""
        at = {"start": 0, "middle": size // 2 + 7, "end": size - 19}[where]
        for digits, found in (("9" * 19, True), ("9" * 18, False)):
            data = bytearray(b"x" * size)
            data[at : at + len(digits)] = digits.encode()
            assert long_digit_run(bytes(data)) is found

    @pytest.mark.parametrize("size", [100, 1500, 5000, 300_000])
    def test_run_of_sixteen(self, size: int) -> None:
        """Told 16, a lone 16-digit number is found anywhere; 15 digits are not a run."""
        for at in (0, size // 2 + 5, size - 16):
            for digits, found in (("9" * 16, True), ("9" * 15, False)):
                data = bytearray(b"x" * size)
                data[at : at + len(digits)] = digits.encode()
                assert long_digit_run(bytes(data), 16) is found

    def test_digits_everywhere(self) -> None:
        """A text dense with short numbers is read whole, and still answers right."""
        data = b",".join(str(n).encode() for n in range(20_000))
        assert long_digit_run(data) is False
        assert long_digit_run(data + b",1234567890123456789") is True
