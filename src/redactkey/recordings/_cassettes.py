"""The shape every recording is read into, and the loading its readers share.

A `Recording` keeps a *decoded document* (plain JSON data in which binary and
compressed bodies were replaced by their text and JSON bodies by their parsed value)
and a line map from JSON pointers of that document to lines of the file on disk, so
that a finding at `/interactions/0/request/headers/...` prints as `path:LINE`; its
`interactions` are the calls the dialect's reader found (`recordings.dialects`).

`load_document(path, text)` parses JSON or YAML without executing anything: YAML tags
(Ruby `!binary`, `!ruby/...`, `!!python/...`) are read as data, binary scalars kept as
`Bytes` for the readers to decode (`dialects._common.decode_tree`).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import contextlib
import contextvars
import datetime as _dt
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ahocorasick_rs
import yaml

from .._errors import FixtureFormatError
from ..keys._canonical import JSONValue, pointer_join
from ..redact._redactor import MAX_NESTING, nesting_exceeds
from ._limits import MAX_NODES, alias_problem

__all__ = [
    "BINARY_TAGS",
    "YAML_LOADER",
    "YAML_TAG",
    "Bytes",
    "Interaction",
    "LineMap",
    "Message",
    "Recording",
    "collect_problems",
    "load_document",
    "load_yaml_raw",
    "note_problem",
    "resolve_pointer",
    "yaml_problem",
]

# Bodies that could not be decoded while one file is read: (problem) in reading order.
# Set by `collect_problems` around one parse; a plain list, never shared across files.
_PROBLEMS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "redactkey_decode_problems", default=None
)


@contextlib.contextmanager
def collect_problems() -> Iterator[list[str]]:
    """Collect the bodies that could not be decoded (over the cap, corrupt) while
    reading one file."""
    found: list[str] = []
    token = _PROBLEMS.set(found)
    try:
        yield found
    finally:
        _PROBLEMS.reset(token)


def note_problem(problem: str) -> None:
    """Record a body that could not be decoded (see `collect_problems`)."""
    found = _PROBLEMS.get()
    if found is not None and len(found) < 100:
        found.append(problem)

# libyaml is an order of magnitude faster; both keep node marks
YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_TAG = "tag:yaml.org,2002:"
# Scalar tags whose standard SafeLoader constructors we trust; everything else
# (Ruby `!ruby/...`, `!!python/...`, custom tags) is read as its plain text.
_TRUSTED_SCALAR_TAGS = frozenset(
    YAML_TAG + name for name in ("str", "int", "float", "bool", "null", "timestamp")
)
BINARY_TAGS = frozenset({YAML_TAG + "binary", "!binary", "!ruby/binary"})


def yaml_problem(exc: yaml.YAMLError) -> str:
    """What a YAML parse error says: where, and the problem (never the text around it)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    return f"not valid YAML{where}: {getattr(exc, 'problem', None) or type(exc).__name__}"


class LineMap:
    """JSON pointer -> 1-based line number in the file (the nearest known ancestor wins).

    Values inside a multi-line literal block (`|`) map to their own line when a text
    offset is given.
    """

    def __init__(self) -> None:
        self._lines: dict[str, int] = {}
        self._literal: set[str] = set()
        self._spans: dict[str, tuple[int, int]] = {}
        self._counted: tuple[str, int, int] | None = None  # (text, offset, newlines before)

    def newlines_before(self, text: str, offset: int) -> int:
        """How many line breaks `text` holds before `offset`. The findings of one value
        are asked in rising order: each call counts on from the last one's offset."""
        offset = max(0, offset)
        last = self._counted
        if last is not None and last[0] is text and last[1] <= offset:
            count = last[2] + text.count("\n", last[1], offset)
        else:
            count = text.count("\n", 0, offset)
        self._counted = (text, offset, count)
        return count

    def set(self, pointer: str, line: int, *, literal: bool = False,
            span: tuple[int, int] | None = None) -> None:
        self._lines.setdefault(pointer, line)
        if literal:
            self._literal.add(pointer)
        if span is not None:
            self._spans.setdefault(pointer, span)

    def span_for(self, pointer: str) -> tuple[int, int] | None:
        """Character span in the file of the scalar at `pointer` or its nearest ancestor."""
        probe = pointer
        while True:
            span = self._spans.get(probe)
            if span is not None:
                return span
            if not probe:
                return None
            probe = probe.rpartition("/")[0]

    def __len__(self) -> int:
        return len(self._lines)

    def line_for(self, pointer: str, *, text: str | None = None, offset: int | None = None) -> int:
        """The line of `pointer` or of its nearest ancestor known to the map (1 if none)."""
        probe = pointer
        while True:
            line = self._lines.get(probe)
            if line is not None:
                if (
                    probe == pointer
                    and probe in self._literal
                    and text is not None
                    and offset is not None
                ):
                    # a literal block starts on the line after its indicator
                    return line + 1 + self.newlines_before(text, offset)
                return line
            if not probe:
                return 1
            probe = probe.rpartition("/")[0]


@dataclass(frozen=True)
class Message:
    """One side of an interaction: headers (names as recorded) and the decoded body."""

    pointer: str
    headers: dict[str, list[str]]
    body: JSONValue
    body_pointer: str | None
    # where each header value sits in the document, when not at `<pointer>/headers/<name>/<i>`
    header_pointers: dict[str, list[str]] = field(default_factory=dict)

    def header_pointer(self, name: str, index: int) -> str:
        """The JSON pointer of the `index`-th value of header `name`."""
        known = self.header_pointers.get(name)
        if known is not None and index < len(known):
            return known[index]
        return pointer_join(pointer_join(pointer_join(self.pointer, "headers"), name), index)

    def header(self, name: str) -> list[str]:
        """All values of a header, by case-insensitive name."""
        wanted = name.lower()
        out: list[str] = []
        for key, values in self.headers.items():
            if key.lower() == wanted:
                out.extend(values)
        return out


@dataclass(frozen=True)
class Interaction:
    """One recorded call: request method/uri/headers/body and response status/headers/body."""

    index: int
    pointer: str
    method: str | None
    uri: str | None
    request: Message
    status: int | None
    response: Message | None


@dataclass
class Recording:
    """A loaded file: its format, decoded document, interactions and line map."""

    path: Path
    format: str  # vcrpy | ruby-vcr | rvcr-json | websocket | grpc | fixture | store | json | yaml
    document: JSONValue
    lines: LineMap
    interactions: list[Interaction] = field(default_factory=list)
    text: str = ""  # the file's text as read
    problems: list[str] = field(default_factory=list)  # bodies that could not be decoded
    # offsets of the text's newlines, built once a file asks for many lines
    _newlines: list[int] | None = field(default=None, init=False, repr=False, compare=False)
    _asked: int = field(default=0, init=False, repr=False, compare=False)
    # the line of each string found whole in the text (a string with many findings is
    # looked for once)
    _string_lines: dict[str, int | None] = field(default_factory=dict, init=False, repr=False,
                                                 compare=False)

    def _line_at(self, offset: int) -> int:
        """1-based line of a character offset of `text`."""
        if self._newlines is None:
            self._asked += 1
            if self._asked < 8:
                return self.text.count("\n", 0, offset) + 1
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, offset) + 1

    def lines_for(self, pointers: Sequence[str],
                  strings: Sequence[str] | None = None) -> list[int]:
        """`line_for` of many pointers at once. In a JSON file not yet mapped line by line,
        the values held as plain strings are looked for in one pass over the text (each
        `line_for` call reads the text again): a string met exactly once gives its line,
        as `line_for` would; the others are asked of `line_for` one by one.

        `strings`, when the caller has them, are the strings of the document at
        `pointers`, reached through containers only (no JSON held in a string on the way):
        they are not looked up again."""
        out = [0] * len(pointers)
        if len(pointers) >= 8 and isinstance(self.lines, _LazyJSONLines) and self.lines.pending:
            wanted: dict[str, list[int]] = {}
            for index, pointer in enumerate(pointers):
                if strings is not None:
                    value: str | None = strings[index]
                else:
                    found = _string_ancestor(self.document, pointer)
                    value = found[1] if found is not None else None
                if value is not None and value.isascii():
                    wanted.setdefault(json.dumps(value), []).append(index)
            needles = list(wanted)
            try:
                hits = ahocorasick_rs.AhoCorasick(
                    needles, implementation=ahocorasick_rs.Implementation.NoncontiguousNFA
                ).find_matches_as_indexes(self.text, overlapping=True) if needles else []
            except UnicodeEncodeError:  # lone surrogates: one by one below
                hits = []
            seen = [0] * len(needles)
            first = [0] * len(needles)
            for which, start, _end in hits:
                if not seen[which]:
                    first[which] = start
                seen[which] += 1
            # lines of the strings met once, counting newlines from one to the next
            line, at = 1, 0
            for start, which in sorted((first[w], w) for w in range(len(needles)) if seen[w] == 1):
                line += self.text.count("\n", at, start)
                at = start
                for index in wanted[needles[which]]:
                    out[index] = line
        return [line or self.line_for(pointer) for line, pointer in zip(out, pointers, strict=True)]

    def _string_line(self, value: str) -> int | None:
        """The line of a JSON string met exactly once in the text, or None."""
        for needle in {json.dumps(value, ensure_ascii=False), json.dumps(value)}:
            first = self.text.find(needle)
            if first >= 0 and self.text.find(needle, first + 1) < 0:
                return self._line_at(first)
        return None

    def line_for(self, pointer: str, offset: int | None = None) -> int:
        """Line number in the file for a JSON pointer of `document` (and a text offset)."""
        if isinstance(self.lines, _LazyJSONLines) and self.lines.pending:
            # fast path: a string found exactly once in the file text gives its line
            found = _string_ancestor(self.document, pointer)
            if found is not None:
                if found[0] not in self._string_lines:
                    self._string_lines[found[0]] = self._string_line(found[1])
                known = self._string_lines[found[0]]
                if known is not None:
                    return known
        value: Any = resolve_pointer(self.document, pointer)
        if type(self.lines) is LineMap and not len(self.lines) and isinstance(value, str):
            # a format read without a line map (TOML): the value's first place in the text
            probe = value[offset:offset + 24] if offset else value[:40]
            at = self.text.find(probe) if len(probe.strip()) >= 4 else -1
            if at >= 0:
                return self._line_at(at)
        span = self.lines.span_for(pointer)
        if isinstance(value, str) and span is not None:
            # the text of the finding inside its scalar's span in the file: exact even in
            # folded or quoted multi-line strings and in JSON bodies held in them
            probe = value[offset:offset + 12] if offset is not None else value[:12]
            if len(probe.strip()) >= 4:
                at = self.text.find(probe, span[0], span[1] + 1)
                if at >= 0:
                    return self._line_at(at)
        return self.lines.line_for(
            pointer, text=value if isinstance(value, str) else None, offset=offset
        )


def resolve_pointer(document: JSONValue, pointer: str) -> JSONValue:
    """The value at a JSON pointer, descending into JSON documents held in strings; or None."""
    node = document
    if not pointer:
        return node
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, str) and node.lstrip()[:1] in ("{", "["):
            # a JSON body held in a string: the redactor reports pointers into it
            try:
                node = json.loads(node)
            except (ValueError, RecursionError):
                return None
        if isinstance(node, dict):
            if token not in node:
                return None
            node = node[token]
        elif isinstance(node, list):
            try:
                node = node[int(token)]
            except (ValueError, IndexError):
                return None
        else:
            return None
    return node


def _string_ancestor(document: JSONValue, pointer: str) -> tuple[str, str] | None:
    """(pointer, value) of the outermost string on the way to `pointer`, if any."""
    node = document
    walked = ""
    for raw in pointer.split("/")[1:]:
        if isinstance(node, str):
            return walked, node
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
        walked = walked + "/" + raw
    return (walked, node) if isinstance(node, str) else None


# --------------------------------------------------------------------------- YAML


class _Builder:
    """Turns a composed YAML node tree into JSON data, recording each node's line."""

    def __init__(self, path: str, loader: Any) -> None:
        self.path = path
        self.loader = loader
        self.lines = LineMap()
        self.count = 0
        self.active: set[int] = set()

    def build(self, node: yaml.Node, pointer: str) -> JSONValue:
        self.count += 1
        if self.count > MAX_NODES:
            raise FixtureFormatError(
                self.path, f"more than {MAX_NODES} YAML nodes (alias expansion?)"
            )
        literal = isinstance(node, yaml.ScalarNode) and node.style == "|"
        span = (node.start_mark.index, node.end_mark.index) \
            if isinstance(node, yaml.ScalarNode) else None
        self.lines.set(pointer, node.start_mark.line + 1, literal=literal, span=span)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        ident = id(node)
        if ident in self.active:  # an alias to an ancestor: a cycle, not JSON
            return None
        self.active.add(ident)
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, pointer_join(pointer, i)) for i, item in
                        enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                if any(k.tag == YAML_TAG + "merge" for k, _ in node.value):
                    self.loader.flatten_mapping(node)
                out: dict[str, JSONValue] = {}
                for key_node, value_node in node.value:
                    key = self._key(key_node)
                    child = pointer_join(pointer, key)
                    # a key line is where a finding about the key/value pair belongs
                    self.lines.set(child, key_node.start_mark.line + 1)
                    out[key] = self.build(value_node, child)
                return out
        finally:
            self.active.discard(ident)
        return None  # pragma: no cover - PyYAML has only three node kinds

    def _key(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.ScalarNode):
            value = self._scalar(node)
            if isinstance(value, str):
                return value
            if value is None:
                return "null"
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value)
        if (
            isinstance(node, yaml.SequenceNode)
            and node.tag.startswith(YAML_TAG + "python/")
            and len(node.value) == 1
            and isinstance(node.value[0], yaml.ScalarNode)
        ):
            # aiohttp's header names: `!!python/object/apply:multidict._multidict.istr
            # [Accept]` is the string `Accept` (read as text, never constructed)
            return str(node.value[0].value)
        return json.dumps(self.build(node, ""), sort_keys=True)

    def _scalar(self, node: yaml.ScalarNode) -> JSONValue:
        tag = node.tag
        if tag in BINARY_TAGS:
            try:
                raw = base64.b64decode("".join(str(node.value).split()), validate=False)
            except (binascii.Error, ValueError):
                return str(node.value)
            return Bytes(raw)
        if tag not in _TRUSTED_SCALAR_TAGS:
            return str(node.value)
        try:
            value = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError):
            return str(node.value)
        if isinstance(value, (_dt.datetime, _dt.date)):
            return value.isoformat()
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return str(node.value)
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return str(node.value)


class Bytes(bytes):
    """A binary scalar awaiting decoding by a dialect's reader (never left in a document)."""


def _load_yaml(path: str, text: str) -> tuple[JSONValue, LineMap]:
    loader = YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, LineMap()
        problem = alias_problem(node)
        if problem is not None:
            raise FixtureFormatError(path, f"not built: {problem}")
        builder = _Builder(path, loader)
        return builder.build(node, ""), builder.lines
    except yaml.YAMLError as exc:
        raise FixtureFormatError(path, yaml_problem(exc)) from None
    except RecursionError:
        raise FixtureFormatError(path, "YAML nested too deeply") from None
    finally:
        loader.dispose()


def load_yaml_raw(path: str, text: str) -> JSONValue:
    """A YAML document as plain data with binary scalars as `bytes` (for rewriting it)."""
    document, _lines = _load_yaml(path, text)
    return _plain_bytes(document)


def _plain_bytes(value: Any) -> Any:
    if isinstance(value, Bytes):
        return bytes(value)
    if isinstance(value, dict):
        return {k: _plain_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_bytes(v) for v in value]
    return value


# --------------------------------------------------------------------------- JSON

class _LazyJSONLines(LineMap):
    """A JSON line map computed only when a line is first asked for (clean files stay fast)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text: str | None = text
        self._whole = LineMap()

    @property
    def pending(self) -> bool:
        """Whether the full line map has not been computed yet."""
        return self._text is not None

    def line_for(self, pointer: str, *, text: str | None = None, offset: int | None = None) -> int:
        if self._text is not None:
            from ._pieces import json_lines  # the parse a large file is read with

            self._whole, self._text = json_lines(self._text), None
        return self._whole.line_for(pointer, text=text, offset=offset)


def load_document(path: Path, text: str) -> tuple[Any, LineMap, bool]:
    """(raw document, line map, whether it was JSON) of a JSON or YAML text; YAML tags are
    read as data, never constructed. `FixtureFormatError` when it does not parse."""
    name = str(path)
    suffix = path.suffix.lower()
    is_json = suffix in (".json", ".har") or text.lstrip()[:1] in ("{", "[")
    lines: LineMap
    if is_json:
        try:
            raw: Any = json.loads(text)
        except RecursionError:
            raise FixtureFormatError(name, "JSON nested too deeply") from None
        except ValueError as exc:
            if suffix in (".json", ".har"):
                raise FixtureFormatError(name, f"not valid JSON: {exc}") from None
            raw, lines = _load_yaml(name, text)
            is_json = False
        else:
            lines = _LazyJSONLines(text)
    else:
        raw, lines = _load_yaml(name, text)
    if nesting_exceeds(raw):
        raise FixtureFormatError(name, f"nested deeper than {MAX_NESTING} levels, which no "
                                 "recorded call needs; it is scanned as text only")
    return raw, lines, is_json
