"""The fixture file format: pydantic models, canonical bytes, the exported JSON Schema.

A fixture file is data only. It holds the format version, the key, the kind of
call, the redacted key material of the request, and exactly one outcome:

    answer   any JSON value (a model's answer, a tool's result, an HTTP response)
    chunks   a list of JSON values (a stream, in order)
    error    {type, message, data?} (a failure that belongs to the callee)

Files are written as `json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)`
plus a newline, except that a stream's chunks are written one per line, compact (see
`dump_fixture_document`); no timestamps, so an unchanged call re-records to the same bytes.
The version is checked on load before anything else.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, cast

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from pydantic.config import JsonDict

from ._canonical import long_digit_run, pointer_join
from ._errors import FixtureFormatError

__all__ = [
    "CHUNK_LINE_SEPARATOR",
    "FORMAT_VERSION",
    "HTTP_KIND",
    "KEY_PATTERN",
    "KIND_PATTERN",
    "NAME_PATTERN",
    "OUTCOMES",
    "TOOL_PREFIX",
    "Cassette",
    "ChunkLines",
    "ChunkLinesIterator",
    "Fixture",
    "RecordedErrorBody",
    "cassette_json_schema",
    "dump_document",
    "dump_fixture_document",
    "export_schemas",
    "fixture_json_schema",
    "is_canonical_fixture",
    "parse_cassette",
    "parse_fixture",
]

FORMAT_VERSION = 1
"""Version of the fixture and cassette file format; a file with another version is refused."""

HTTP_KIND = "http"
"""The kind of every recorded HTTP call, whatever the client library."""

KEY_PATTERN = r"^[0-9a-f]{64}$"
# A kind or tool name becomes part of a file name: letters, digits, `_`, `-` and
# single inner dots, starting with a letter, digit or `_`, so no name can climb out
# of the directory, hide as a dot file or start with the reserved `@`. A tool's kind
# is "tool:<name>".
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*"
NAME_PATTERN = rf"^{_NAME}$"
KIND_PATTERN = rf"^(?:tool:)?{_NAME}$"
TOOL_PREFIX = "tool:"
NAME_MAX_LENGTH = 100
OUTCOMES = ("answer", "chunks", "error")

_KEY_RE = re.compile(KEY_PATTERN)
_NAME_RE = re.compile(NAME_PATTERN)
_KIND_RE = re.compile(KIND_PATTERN)

_EXACTLY_ONE_OUTCOME: JsonDict = {
    "oneOf": [
        {"required": ["answer"]},
        {"required": ["chunks"]},
        {"required": ["error"]},
    ]
}


def is_valid_name(name: str) -> bool:
    """True when `name` can be used as a kind or tool name inside a file name."""
    return (
        0 < len(name) <= NAME_MAX_LENGTH
        and _NAME_RE.fullmatch(name) is not None
    )


def is_valid_key(key: str) -> bool:
    """True when `key` is 64 lowercase hex characters (a SHA-256 request key)."""
    return _KEY_RE.fullmatch(key) is not None


class RecordedErrorBody(BaseModel):
    """A recorded failure of the callee: its type name, a redacted message, optional data."""

    # Each model's validator is built the first time it validates: a replayed fixture
    # is read by the trusted path (`_parsed_fixture`), so most runs never need one.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    type: str = Field(min_length=1, description="Error type, e.g. 'StructuredOutputError'.")
    message: str = Field(description="The redacted error message.")
    data: JsonValue = Field(default=None, description="Optional JSON detail of the failure.")


def _outcome_fields(data: Any) -> list[str]:
    return [name for name in OUTCOMES if isinstance(data, dict) and name in data]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    key: str = Field(pattern=KEY_PATTERN, description="SHA-256 hex of the canonical request.")
    kind: str = Field(
        pattern=KIND_PATTERN,
        max_length=NAME_MAX_LENGTH + len(TOOL_PREFIX),
        description="Kind of call: a model kind ('text', 'chat'), 'http', or 'tool:<name>'.",
    )
    request: JsonValue = Field(
        description="The redacted key material the key was computed from."
    )
    answer: JsonValue = Field(default=None, description="The recorded answer (any JSON).")
    chunks: list[JsonValue] | None = Field(
        default=None, description="A recorded stream: its chunks in order."
    )
    error: RecordedErrorBody | None = Field(
        default=None, description="A recorded failure that belongs to the callee."
    )

    @model_validator(mode="before")
    @classmethod
    def _exactly_one_outcome(cls, data: Any) -> Any:
        present = _outcome_fields(data)
        if len(present) != 1:
            found = ", ".join(present) if present else "none"
            raise ValueError(f"needs exactly one of answer, chunks, error (found: {found})")
        if "chunks" in data and data["chunks"] is None:
            raise ValueError("chunks must be a list")
        if "error" in data and data["error"] is None:
            raise ValueError("error must be an object")
        return data

    @property
    def outcome(self) -> str:
        """Which outcome the entry holds: 'answer', 'chunks' or 'error'."""
        for name in OUTCOMES:
            if name in self.model_fields_set:
                return name
        raise AssertionError("validated entries hold one outcome")  # pragma: no cover

    def entry_document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"key": self.key, "kind": self.kind, "request": self.request}
        outcome = self.outcome
        if outcome == "answer":
            doc["answer"] = self.answer
        elif outcome == "chunks":
            doc["chunks"] = self.chunks
        else:
            assert self.error is not None
            err: dict[str, Any] = {"type": self.error.type, "message": self.error.message}
            if "data" in self.error.model_fields_set:
                err["data"] = self.error.data
            doc["error"] = err
        return doc


class Fixture(_Entry):
    """One recorded call: version, key, kind, redacted request, and one outcome."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        title="redactkey fixture",
        json_schema_extra=_EXACTLY_ONE_OUTCOME,
        defer_build=True,
    )

    version: int = Field(
        default=FORMAT_VERSION,
        ge=FORMAT_VERSION,
        le=FORMAT_VERSION,
        description="Fixture format version.",
    )

    def document(self) -> dict[str, Any]:
        """The file's JSON document (only the outcome that is present)."""
        doc = self.entry_document()
        doc["version"] = self.version
        return doc

    def dumps(self) -> bytes:
        """The canonical bytes of the file."""
        return dump_fixture_document(self.document())


class CassetteEntry(_Entry):
    """One call inside a cassette file (a fixture without its own version)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="cassette entry",
        json_schema_extra=_EXACTLY_ONE_OUTCOME, defer_build=True,
    )

    @classmethod
    def from_fixture(cls, fixture: Fixture) -> CassetteEntry:
        return cls.model_validate(fixture.entry_document())

    def to_fixture(self) -> Fixture:
        return Fixture.model_validate({**self.entry_document(), "version": FORMAT_VERSION})


class Cassette(BaseModel):
    """A single-file store: the format version and entries sorted by key."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="redactkey cassette", defer_build=True
    )

    version: int = Field(
        default=FORMAT_VERSION, ge=FORMAT_VERSION, le=FORMAT_VERSION,
        description="Cassette format version.",
    )
    entries: list[CassetteEntry] = Field(default_factory=list)

    def document(self) -> dict[str, Any]:
        entries = sorted(self.entries, key=lambda e: (e.key, e.kind))
        return {"version": self.version, "entries": [e.entry_document() for e in entries]}

    def dumps(self) -> bytes:
        return dump_document(self.document())


_INDENTED: Final = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_FLOATLESS_LEAVES: Final = frozenset({str, int, bool, type(None)})


def dump_document(doc: Any) -> bytes:
    """Canonical file bytes: sorted keys, 2-space indent, UTF-8, trailing newline.

    These are `json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)`'s bytes.
    orjson writes exactly those for exact dicts (string keys), lists, strings, integers
    up to 64 bits, booleans and None, so such a document (a run report, most fixtures)
    is written by orjson; a float (whose digits the two write differently) or anything
    else takes the standard library.
    """
    return _written(doc, _INDENTED, indent=2) + b"\n"


def _written(doc: Any, option: int, **layout: Any) -> bytes:
    """`doc` as orjson writes it with `option` (sorted keys) where that is what the
    standard library writes with `layout`, else as the standard library writes it."""
    if _floatless(doc):
        try:
            return orjson.dumps(doc, option=option)
        except orjson.JSONEncodeError:
            pass  # an integer beyond 64 bits, a lone surrogate: as the standard library does
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=False, **layout)
    return text.encode("utf-8")


# A fixture whose outcome is a stream holds its chunks one per line, between these (the
# chunks member comes first: its name sorts before every other top-level name).
_CHUNKS_OPEN: Final = b'{\n  "chunks": [\n    '
CHUNK_LINE_SEPARATOR: Final = b",\n    "
"""What comes before each chunk's line after the first in a fixture file."""
_CHUNKS_CLOSE: Final = b'\n  ],\n  "key": '


def dump_fixture_document(doc: Mapping[str, Any]) -> bytes:
    """A fixture file's canonical bytes: `dump_document`'s, except that a stream's chunks
    are written one per line, each compact with sorted keys (no line break can occur
    inside one: JSON escapes them in strings). A 110-event answer is then 110 lines that a
    review reads event by event, and replay can send them without parsing them (decision
    0182)."""
    chunks = doc.get("chunks")
    if type(chunks) is not list or not chunks:
        return dump_document(doc)
    rest = dump_document({name: value for name, value in doc.items() if name != "chunks"})
    lines = CHUNK_LINE_SEPARATOR.join([_chunk_line(chunk) for chunk in chunks])
    return _CHUNKS_OPEN + lines + b"\n  ],\n" + rest[2:]  # rest[2:]: after its "{\n"


def is_canonical_fixture(data: bytes, doc: Mapping[str, Any]) -> bool:
    """Whether `data` are the canonical bytes of the fixture document `doc`: the writer's,
    or those it wrote before streams were laid out one chunk per line (still read, and
    left as they are: recording the call again rewrites them)."""
    return data == dump_fixture_document(doc) or (
        type(doc.get("chunks")) is list and data == dump_document(doc)
    )


def _chunk_line(chunk: Any) -> bytes:
    """One chunk as its line: what orjson writes with sorted keys, or for a float (whose
    digits the two write differently) or anything else orjson refuses, the standard
    library's compact form, as `dump_document` decides."""
    return _written(chunk, orjson.OPT_SORT_KEYS, separators=(",", ":"))


def _floatless(doc: Any) -> bool:
    """Whether `doc` is made of exact dicts with string keys, lists, strings, integers,
    booleans and None only (walked without recursion: any depth is fine)."""
    leaves = _FLOATLESS_LEAVES
    todo = [doc]
    while todo:
        value = todo.pop()
        kind = type(value)
        if kind is dict:
            for key, item in value.items():
                if type(key) is not str:
                    return False
                if type(item) not in leaves:
                    todo.append(item)
        elif kind is list:
            todo.extend(item for item in value if type(item) not in leaves)
        elif kind not in leaves:
            return False
    return True


def _load_json(path: str, data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FixtureFormatError(path, f"not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise FixtureFormatError(path, problem) from None
    except RecursionError:
        raise FixtureFormatError(path, "JSON nested too deeply") from None


def _shown_version(version: object) -> str:
    """The version as it may be printed: numbers as they are, anything else only by type
    (a hand-edited file can hold any text there, a secret included)."""
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        return repr(version)
    if isinstance(version, str) and len(version) <= 4:  # too short to be a credential
        return repr(version)
    return f"of type {type(version).__name__}"


def _check_version(path: str, doc: Any, what: str) -> None:
    if not isinstance(doc, dict):
        raise FixtureFormatError(path, f"a {what} file must hold a JSON object")
    if "version" not in doc:
        raise FixtureFormatError(path, f"no format version (this {what} was not written by "
                                 "redactkey)", pointer="/version")
    version = doc["version"]
    if type(version) is not int or version != FORMAT_VERSION:
        raise FixtureFormatError(
            path,
            f"format version {_shown_version(version)} is not supported (this redactkey "
            "reads version "
            f"{FORMAT_VERSION})",
            pointer="/version",
        )


def _validation_error(path: str, exc: ValidationError, prefix: str = "") -> FixtureFormatError:
    first = exc.errors(include_url=False, include_input=False)[0]
    pointer = prefix
    for token in first["loc"]:
        # pydantic adds the model-validator's name and union members to `loc`; keep
        # only the real path into the document.
        if isinstance(token, str) and "[" in token:
            continue
        pointer = pointer_join(pointer, token)
    message = first["msg"].removeprefix("Value error, ")
    return FixtureFormatError(path, f"schema-invalid: {message}", pointer=pointer)


_TRUSTED_OUTCOMES: Final = ("answer", "chunks")


def _parsed_fixture(
    data: bytes, kind: str | None = None, key: str | None = None
) -> Fixture | None:
    """The fixture in `data` by the cheap path, or None to take the validating one.

    orjson's output is JSON data by construction (it refuses NaN, lone surrogates and
    invalid UTF-8, and the digit guard keeps away integers it would read as floats),
    so what the model adds is the top level: the version, a valid key and kind,
    exactly one outcome, no other member. Those are checked here (a key and kind equal
    to the valid ones the caller expects need no second check); an error outcome, or
    anything unusual, goes through pydantic, which names the problem.
    """
    doc = _trusted_json(data)
    if type(doc) is not dict or len(doc) != 5:
        return None
    version, found_key, found_kind = doc.get("version"), doc.get("key"), doc.get("kind")
    if (
        type(version) is not int
        or version != FORMAT_VERSION
        or type(found_key) is not str
        or (found_key != key and not is_valid_key(found_key))
        or type(found_kind) is not str
        or (found_kind != kind and (
            len(found_kind) > NAME_MAX_LENGTH + len(TOOL_PREFIX)
            or _KIND_RE.fullmatch(found_kind) is None
        ))
        or "request" not in doc
    ):
        return None
    return _with_trusted_outcome(doc)


def _trusted_json(data: bytes) -> Any:
    """`data` as orjson reads it, where that is what `json` reads (no digit run orjson
    would read as a float); None otherwise."""
    if long_digit_run(data):
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _with_trusted_outcome(doc: dict[str, Any]) -> Fixture | None:
    """The fixture of `doc`, all of whose other members are checked, when its outcome is
    an answer or chunks (a list); None for anything else."""
    for outcome in _TRUSTED_OUTCOMES:
        if outcome in doc:
            if outcome == "chunks" and type(doc[outcome]) is not list:
                return None
            return _constructed(doc)
    return None


# How the writer lays out a fixture's top level (sorted keys, two-space indent): the
# request is the last member before the version, on a line of its own. A string never
# holds a raw line break and nested members are indented deeper, so this marks the
# top-level member only.
_REQUEST_MEMBER: Final = b'\n  "request": '
_VERSION_TAIL: Final = b',\n  "version": %d\n}\n' % FORMAT_VERSION


_FIRST_STEP: Final = 4096


def _member_at(data: bytes, member: bytes) -> int:
    """Where `member`, which the writer's layout holds once, starts in `data` (-1: nowhere).

    The request member sits between the outcome and the version, so either can be long
    (a stream of events, a long prompt): the file is searched from both ends at once, in
    steps that grow fourfold, and costs about twice the shorter way to the member."""
    step, low, high = _FIRST_STEP, 0, len(data)  # data[low:high]: where no search looked
    reach = len(member) - 1  # a member starting in a part may end beyond it
    while low < high:
        start = max(low, high - step)
        at = data.rfind(member, start, high + reach)
        if at >= 0:
            return at
        high = start
        if low >= high:
            break
        stop = min(high, low + step)
        at = data.find(member, low, stop + reach)
        if at >= 0:
            return at
        low = stop
        step *= 4
    return -1


def _replayed_fixture(data: bytes, kind: str, key: str, path: str = "") -> Fixture | None:
    """The fixture in `data` with its request left unread (None), or None to read the
    whole file: only a file in the writer's own layout, whose outcome is an answer or
    chunks and whose key and kind are the ones asked for, is read this way. Chunks
    written one per line are left as their lines (`ChunkLines`)."""
    if not data.endswith(_VERSION_TAIL):
        return None
    at = data.rfind(_REQUEST_MEMBER, -_FIRST_STEP)  # (the common file: a short request)
    if at < 0:
        at = _member_at(data, _REQUEST_MEMBER)
    if at <= 0 or data[at - 1] != 44:  # 44: the comma that ends the member before it
        return None
    if data.startswith(_CHUNKS_OPEN):
        fixture = _replayed_lines(data, at, kind, key, path)
        if fixture is not None:
            return fixture
    doc = _trusted_json(data[: at - 1] + b"\n}")
    if type(doc) is not dict or len(doc) != 3:
        return None
    if doc.get("key") != key or doc.get("kind") != kind:
        return None
    return _with_trusted_outcome({**doc, "request": None, "version": FORMAT_VERSION})


def _replayed_lines(data: bytes, at: int, kind: str, key: str, path: str) -> Fixture | None:
    """The fixture of a stream written one chunk per line (`dump_fixture_document`), its
    first chunk parsed and the others left as their lines, or None when the file is not
    laid out so (the earlier indented layout: its first line is a lone brace)."""
    end = data.find(_CHUNKS_CLOSE, len(_CHUNKS_OPEN), at)
    if end < 0:
        return None
    region = data[len(_CHUNKS_OPEN):end]
    cut = region.find(b"\n")
    if cut < 0:
        first_line, rest = region, b""
    elif region[cut - 1] == 44:  # 44: the comma that ends a chunk's line
        first_line, rest = region[: cut - 1], region[cut - 1:]
    else:
        return None
    first = _trusted_json(first_line)
    if first is None:  # not one chunk on its line (or a JSON null, read the long way)
        return None
    meta = _trusted_json(b"{" + data[end + 5: at - 1] + b"\n}")  # 5: past "\n  ],"
    if type(meta) is not dict or len(meta) != 2 or meta.get("key") != key \
            or meta.get("kind") != kind:
        return None
    chunks = ChunkLines(first, rest, lambda: _all_chunks(path, data, region, kind, key))
    return _constructed({"chunks": chunks, "key": key, "kind": kind, "request": None,
                         "version": FORMAT_VERSION})


def _all_chunks(path: str, data: bytes, region: bytes, kind: str, key: str) -> list[Any]:
    chunks = _trusted_json(b"[" + region + b"]")
    if type(chunks) is list:
        return chunks
    # Not what the writer wrote (a line changed by hand): the whole file, validated,
    # names the problem.
    return cast(list[Any], parse_fixture(path, data, kind=kind, key=key).chunks)


class ChunkLines(Sequence[Any]):
    """The chunks of a stream replayed from a file in the writer's layout: the first
    parsed, the others kept as the lines they were written as (`rest`: each line after
    `",\n    "`) until something asks for them, when all are parsed at once.

    The HTTP exchange sends stored server-sent events straight from `rest` when the
    first chunk (the response head) is all that was taken (`ChunkLinesIterator.unread`).
    """

    __slots__ = ("_all", "_load", "first", "rest")

    def __init__(self, first: Any, rest: bytes, load: Callable[[], list[Any]]) -> None:
        self.first = first
        self.rest = rest
        self._load = load
        self._all: list[Any] | None = None

    def chunks(self) -> list[Any]:
        """Every chunk, parsed (once)."""
        if self._all is None:
            self._all = self._load()
        return self._all

    def __len__(self) -> int:
        return len(self.chunks())

    def __getitem__(self, index: Any) -> Any:
        return self.chunks()[index]

    def __iter__(self) -> ChunkLinesIterator:
        return ChunkLinesIterator(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ChunkLines):
            other = other.chunks()
        return self.chunks() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        count = self.rest.count(b"\n") + 1
        return f"ChunkLines({count} chunks)"  # (never their content)


class ChunkLinesIterator(Iterator[Any]):
    """An iteration of `ChunkLines`, sync or async: the first chunk without parsing the
    others."""

    __slots__ = ("_lines", "_taken")

    def __init__(self, lines: ChunkLines) -> None:
        self._lines = lines
        self._taken = 0

    def __next__(self) -> Any:
        taken = self._taken
        if taken == 0:
            self._taken = 1
            return self._lines.first
        chunks = self._lines.chunks()
        if taken >= len(chunks):
            raise StopIteration
        self._taken = taken + 1
        return chunks[taken]

    def __aiter__(self) -> ChunkLinesIterator:
        return self

    async def __anext__(self) -> Any:  # (async replay: every chunk is at hand)
        try:
            return next(self)
        except StopIteration:
            raise StopAsyncIteration from None

    def unread(self) -> bytes | None:
        """The lines of the chunks after the first, when only the first was taken."""
        return self._lines.rest if self._taken == 1 else None


def _construct_directly(doc: dict[str, Any]) -> Fixture:
    """What `Fixture.model_construct(_fields_set=set(doc), **doc)` builds, without its
    per-field loop: the fields in declaration order, the defaults where `doc` has none."""
    values = dict(_FIELD_DEFAULTS)
    values.update(doc)
    fixture = _new(Fixture)
    _set(fixture, "__dict__", values)
    _set(fixture, "__pydantic_fields_set__", set(doc))
    _set(fixture, "__pydantic_extra__", None)
    _set(fixture, "__pydantic_private__", None)
    return fixture


def _construct_by_pydantic(doc: dict[str, Any]) -> Fixture:
    return Fixture.model_construct(_fields_set=set(doc), **doc)


_new = object.__new__
_set = object.__setattr__
_FIELD_DEFAULTS: Final = {
    name: None if field.is_required() else field.default
    for name, field in Fixture.model_fields.items()
}


def _same_instance(one: Fixture, other: Fixture) -> bool:
    return all(
        getattr(one, attr) == getattr(other, attr)
        for attr in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__",
                     "__pydantic_private__")
    ) and list(one.__dict__) == list(other.__dict__)


def _pick_constructor() -> Callable[[dict[str, Any]], Fixture]:
    """Direct construction where it gives what pydantic's `model_construct` gives (checked
    on two fixtures at import, so another pydantic release falls back by itself)."""
    samples = [
        {"version": FORMAT_VERSION, "key": "0" * 64, "kind": "text", "request": {"a": [1]},
         "answer": {"b": None}},
        {"version": FORMAT_VERSION, "key": "1" * 64, "kind": "http", "request": None,
         "chunks": [{"c": 1.5}]},
    ]
    for sample in samples:
        if not _same_instance(_construct_directly(sample), _construct_by_pydantic(sample)):
            return _construct_by_pydantic
    return _construct_directly


_constructed: Final = _pick_constructor()


def parse_fixture(
    path: str, data: bytes, *, kind: str | None = None, key: str | None = None
) -> Fixture:
    """Parse and validate a fixture file's bytes; errors name `path` and the JSON pointer.

    `kind` and `key`, when given, are the valid kind and key the file's name says it
    holds (a store checked them): a file holding those needs no second check of them.
    """
    fixture = _parsed_fixture(data, kind, key)
    if fixture is not None:
        return fixture
    doc = _load_json(path, data)
    _check_version(path, doc, "fixture")
    try:
        return Fixture.model_validate(doc)
    except ValidationError as exc:
        raise _validation_error(path, exc) from None


def parse_replayed(path: str, data: bytes, *, kind: str, key: str) -> Fixture:
    """A fixture file's bytes as replay reads them: the outcome, key and kind, with the
    request (which replay never reads: the key stands for it) left unread as None when
    the file is in the writer's own layout. Otherwise, and for an error outcome, the
    whole file is parsed and validated as `parse_fixture` does.

    The fixture returned is for replaying its outcome only; `parse_fixture` reads it whole.
    """
    fixture = _replayed_fixture(data, kind, key, path)
    if fixture is not None:
        return fixture
    return parse_fixture(path, data, kind=kind, key=key)


def parse_cassette(path: str, data: bytes) -> Cassette:
    """Parse and validate a cassette file's bytes; errors name `path` and the JSON pointer."""
    doc = _load_json(path, data)
    _check_version(path, doc, "cassette")
    try:
        return Cassette.model_validate(doc)
    except ValidationError as exc:
        raise _validation_error(path, exc) from None


def _tidy_entry_schema(entry: dict[str, Any]) -> None:
    # On disk an outcome is present with its real type or absent; never null.
    props = entry["properties"]
    props["chunks"] = {
        "type": "array", "items": {"$ref": "#/$defs/JsonValue"},
        "description": props["chunks"]["description"], "title": "Chunks",
    }
    props["error"] = {
        "$ref": "#/$defs/RecordedErrorBody", "description": props["error"]["description"],
    }
    props["answer"].pop("default", None)
    if "version" in props:
        props["version"].pop("default", None)
        entry["required"] = sorted({*entry["required"], "version"})


def fixture_json_schema() -> dict[str, Any]:
    """The JSON Schema of a fixture file (published as docs/schema/fixture.schema.json)."""
    schema = Fixture.model_json_schema()
    _tidy_entry_schema(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://redactkey.dev/schema/fixture.schema.json"
    return schema


def cassette_json_schema() -> dict[str, Any]:
    """The JSON Schema of a cassette file (published as docs/schema/cassette.schema.json)."""
    schema = Cassette.model_json_schema()
    _tidy_entry_schema(schema["$defs"]["CassetteEntry"])
    schema["properties"]["version"].pop("default", None)
    schema["required"] = ["entries", "version"]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://redactkey.dev/schema/cassette.schema.json"
    return schema


def export_schemas(directory: str | os.PathLike[str]) -> list[Path]:
    """Write fixture.schema.json and cassette.schema.json into `directory` (canonical bytes)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in (("fixture.schema.json", fixture_json_schema()),
                         ("cassette.schema.json", cassette_json_schema())):
        path = out / name
        path.write_bytes(dump_document(schema))
        written.append(path)
    return written

