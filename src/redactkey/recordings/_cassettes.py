"""Reading recorded-HTTP cassettes of other tools into one plain shape.

`load_cassette(path)` reads, without executing anything:

- vcrpy / pytest-recording YAML (`interactions:`), including pydantic-ai's
  `parsed_body` variant, `!!binary` bodies and header values, and gzip or
  deflate bodies inside them;
- Ruby VCR YAML (`http_interactions:`, `recorded_with: VCR x.y`), whose
  Ruby-specific tags (`!binary`, `!ruby/...`) are read as plain data;
- rVCR JSON (the Ruby VCR schema written by the Rust crate);
- pydantic-ai websocket and gRPC cassettes and anything else JSON/YAML
  (best effort: scanned as generic data, never a crash);
- our own fixture files (`kind == "fixture"`), left to the audit to validate.

The result keeps a *decoded document* (plain JSON data in which binary and
compressed bodies were replaced by their text and JSON bodies by their parsed
value) plus a line map from JSON pointers of that document to line numbers of
the file on disk, so that a finding at `/interactions/0/request/headers/...`
prints as `path:LINE`.
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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ahocorasick_rs
import yaml

from .._errors import FixtureFormatError
from ..keys._canonical import JSONValue, pointer_join
from ..redact._redactor import MAX_NESTING, nesting_exceeds
from ._limits import MAX_DECODED_BYTES, MAX_NODES, OverCap, bounded_decompress

__all__ = [
    "Interaction",
    "LineMap",
    "Message",
    "Recording",
    "decode_body_bytes",
    "load_cassette",
    "load_yaml_raw",
    "parse_text",
    "resolve_pointer",
]

# A decompressed body larger than the shared cap is kept compressed and reported (a
# gzip bomb must not take a command down); real LLM responses are far below it.
MAX_DECOMPRESSED = MAX_DECODED_BYTES

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

_SafeLoader: type[yaml.SafeLoader]
try:  # libyaml is an order of magnitude faster; both keep node marks
    _SafeLoader = yaml.CSafeLoader  # type: ignore[assignment,attr-defined,unused-ignore]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _SafeLoader = yaml.SafeLoader

_YAML_TAG = "tag:yaml.org,2002:"
# Scalar tags whose standard SafeLoader constructors we trust; everything else
# (Ruby `!ruby/...`, `!!python/...`, custom tags) is read as its plain text.
_TRUSTED_SCALAR_TAGS = frozenset(
    _YAML_TAG + name for name in ("str", "int", "float", "bool", "null", "timestamp", "binary")
)
_BINARY_TAGS = frozenset({_YAML_TAG + "binary", "!binary", "!ruby/binary"})


class LineMap:
    """JSON pointer -> 1-based line number in the file (the nearest known ancestor wins).

    Values inside a multi-line literal block (`|`) map to their own line when a text
    offset is given.
    """

    def __init__(self) -> None:
        self._lines: dict[str, int] = {}
        self._literal: set[str] = set()
        self._spans: dict[str, tuple[int, int]] = {}

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
                    return line + 1 + text.count("\n", 0, max(0, offset))
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

    def line_for(self, pointer: str, offset: int | None = None) -> int:
        """Line number in the file for a JSON pointer of `document` (and a text offset)."""
        if isinstance(self.lines, _LazyJSONLines) and self.lines.pending:
            # fast path: a string found exactly once in the file text gives its line
            found = _string_ancestor(self.document, pointer)
            if found is not None:
                for needle in {json.dumps(found[1], ensure_ascii=False),
                               json.dumps(found[1])}:
                    first = self.text.find(needle)
                    if first >= 0 and self.text.find(needle, first + 1) < 0:
                        return self._line_at(first)
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
                if any(k.tag == _YAML_TAG + "merge" for k, _ in node.value):
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
            and node.tag.startswith(_YAML_TAG + "python/")
            and len(node.value) == 1
            and isinstance(node.value[0], yaml.ScalarNode)
        ):
            # aiohttp's header names: `!!python/object/apply:multidict._multidict.istr
            # [Accept]` is the string `Accept` (read as text, never constructed)
            return str(node.value[0].value)
        return json.dumps(self.build(node, ""), sort_keys=True)

    def _scalar(self, node: yaml.ScalarNode) -> JSONValue:
        tag = node.tag
        if tag in _BINARY_TAGS:
            try:
                raw = base64.b64decode("".join(str(node.value).split()), validate=False)
            except (binascii.Error, ValueError):
                return str(node.value)
            return _Bytes(raw)
        if tag not in _TRUSTED_SCALAR_TAGS:
            return str(node.value)
        try:
            value = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError):
            return str(node.value)
        if isinstance(value, (_dt.datetime, _dt.date)):
            return value.isoformat()
        if isinstance(value, bytes):
            return _Bytes(value)
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return str(node.value)
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return str(node.value)


class _Bytes(bytes):
    """Binary scalar awaiting decoding by the format reader (never left in a document)."""


def _load_yaml(path: str, text: str) -> tuple[JSONValue, LineMap]:
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, LineMap()
        builder = _Builder(path, loader)
        return builder.build(node, ""), builder.lines
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise FixtureFormatError(path, f"not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise FixtureFormatError(path, "YAML nested too deeply") from None
    finally:
        loader.dispose()


def load_yaml_raw(path: str, text: str) -> JSONValue:
    """A YAML document as plain data with binary scalars as `bytes` (for rewriting it)."""
    document, _lines = _load_yaml(path, text)
    return _plain_bytes(document)


def _plain_bytes(value: Any) -> Any:
    if isinstance(value, _Bytes):
        return bytes(value)
    if isinstance(value, dict):
        return {k: _plain_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_bytes(v) for v in value]
    return value


# --------------------------------------------------------------------------- JSON

_JSON_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+|\n', re.DOTALL
)


def _json_lines(text: str) -> LineMap:
    """Line numbers of every value in a JSON text, by JSON pointer (a tolerant scanner)."""
    lines = LineMap()
    line = 1
    # stack of [container kind, pointer, next index or pending key]
    stack: list[list[Any]] = []
    expect_key = False
    pending_key: str | None = None

    def value_pointer() -> str:
        if not stack:
            return ""
        kind, pointer, state = stack[-1]
        if kind == "list":
            return pointer_join(pointer, state)
        return pointer_join(pointer, pending_key if pending_key is not None else "")

    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token == "\n":
            line += 1
            continue
        if token in "{[":
            pointer = value_pointer()
            lines.set(pointer, line)
            stack.append(["dict" if token == "{" else "list", pointer, 0])
            expect_key = token == "{"
            pending_key = None
            continue
        if token in "}]":
            if stack:
                stack.pop()
            expect_key = False
            continue
        if token == ",":
            if stack and stack[-1][0] == "list":
                stack[-1][2] += 1
            expect_key = bool(stack) and stack[-1][0] == "dict"
            continue
        if token == ":":
            expect_key = False
            continue
        if expect_key and token.startswith('"'):
            try:
                pending_key = json.loads(token)
            except ValueError:
                pending_key = token.strip('"')
            if stack:
                lines.set(pointer_join(stack[-1][1], pending_key), line)
            continue
        lines.set(value_pointer(), line)
    return lines


class _LazyJSONLines(LineMap):
    """A JSON line map computed only when a line is first asked for (clean files stay fast)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text: str | None = text

    @property
    def pending(self) -> bool:
        """Whether the full line map has not been computed yet."""
        return self._text is not None

    def line_for(self, pointer: str, *, text: str | None = None, offset: int | None = None) -> int:
        if self._text is not None:
            real = _json_lines(self._text)
            self._lines = real._lines
            self._text = None
        return super().line_for(pointer, text=text, offset=offset)


# --------------------------------------------------------------------------- decoding


def decode_body_bytes(raw: bytes, encoding: str = "") -> str | None:
    """Text of a recorded body: gunzip/inflate/unbrotli when compressed (within the shared
    cap), then UTF-8; None if binary or undecodable (noted with `note_problem`)."""
    try:
        data = bounded_decompress(raw, encoding)
    except OverCap as exc:
        note_problem(f"a body {exc.problem}")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def header_map(value: JSONValue) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if not isinstance(value, dict):
        return out
    for name, raw in value.items():
        items = raw if isinstance(raw, list) else [raw]
        out[str(name)] = [
            item if isinstance(item, str) else json.dumps(item) for item in items
        ]
    return out


def maybe_json(text: str) -> JSONValue:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and len(text) < 32 * 1024 * 1024:
        try:
            parsed: JSONValue = json.loads(text)
        except (ValueError, RecursionError):
            return text
        return text if nesting_exceeds(parsed) else parsed
    return text


def decode_tree(value: Any, encoding: str = "") -> JSONValue:
    """Replace binary scalars by their text (or base64 when not text), recursively."""
    if isinstance(value, _Bytes):
        text = decode_body_bytes(bytes(value), encoding)
        if text is None:
            return base64.b64encode(bytes(value)).decode("ascii")
        return text
    if isinstance(value, dict):
        return {k: decode_tree(v, encoding) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_tree(v, encoding) for v in value]
    return value


def content_encoding(headers: JSONValue) -> str:
    for name, values in header_map(decode_tree(headers)).items():
        if name.lower() == "content-encoding":
            return ",".join(values)
    return ""


def _decode_body(body: Any, encoding: str) -> tuple[JSONValue, str]:
    """(decoded body, pointer suffix of the text) for vcrpy/Ruby body shapes."""
    if isinstance(body, dict):
        for field_name in ("string", "base64_string"):
            if field_name in body:
                inner = body[field_name]
                if field_name == "base64_string" and isinstance(inner, str):
                    with contextlib.suppress(binascii.Error, ValueError):
                        inner = _Bytes(base64.b64decode("".join(inner.split())))
                decoded = decode_tree(inner, encoding)
                return (maybe_json(decoded) if isinstance(decoded, str) else decoded,
                        "/" + field_name)
        return decode_tree(body, encoding), ""
    decoded = decode_tree(body, encoding)
    if isinstance(decoded, str):
        return maybe_json(decoded), ""
    return decoded, ""


# --------------------------------------------------------------------------- formats


def http_interactions(items: list[Any], base: str) -> tuple[list[Any], list[Interaction]]:
    decoded_items: list[Any] = []
    interactions: list[Interaction] = []
    for index, item in enumerate(items):
        pointer = pointer_join(base, index)
        if not isinstance(item, dict):
            decoded_items.append(decode_tree(item))
            continue
        out = dict(item)
        raw_request = item.get("request")
        raw_response = item.get("response")
        request: dict[str, Any] = raw_request if isinstance(raw_request, dict) else {}
        response: dict[str, Any] | None = raw_response if isinstance(raw_response, dict) else None
        req_msg, req_doc = read_message(request, pointer_join(pointer, "request"))
        out["request"] = req_doc if "request" in item else item.get("request")
        resp_msg: Message | None = None
        if response is not None:
            resp_msg, resp_doc = read_message(response, pointer_join(pointer, "response"))
            out["response"] = resp_doc
        for other in item:
            if other not in ("request", "response"):
                out[other] = decode_tree(item[other])
        status_raw = response.get("status") if response is not None else None
        status: int | None = None
        if isinstance(status_raw, dict):
            code = status_raw.get("code")
            status = code if isinstance(code, int) else None
        elif isinstance(status_raw, int):
            status = status_raw
        method = request.get("method")
        uri = request.get("uri")
        interactions.append(Interaction(
            index=index,
            pointer=pointer,
            method=method.upper() if isinstance(method, str) else None,
            uri=uri if isinstance(uri, str) else None,
            request=req_msg,
            status=status,
            response=resp_msg,
        ))
        decoded_items.append(out)
    return decoded_items, interactions


def read_message(raw: Mapping[str, Any], pointer: str) -> tuple[Message, dict[str, JSONValue]]:
    doc: dict[str, JSONValue] = {}
    encoding = content_encoding(raw.get("headers"))
    body: JSONValue = None
    body_pointer: str | None = None
    for key, value in raw.items():
        if key == "headers":
            doc[key] = decode_tree(value)
        elif key in ("parsed_body", "json"):  # a body recorded already parsed
            doc[key] = decode_tree(value)
            body, body_pointer = doc[key], pointer_join(pointer, key)
        elif key == "body":
            decoded, suffix = _decode_body(value, encoding)
            if suffix:
                inner = dict(value) if isinstance(value, dict) else {}
                inner = {k: decode_tree(v) for k, v in inner.items()}
                inner[suffix[1:]] = decoded
                doc[key] = inner
            else:
                doc[key] = decoded
            if body_pointer is None or decoded not in (None, ""):
                body, body_pointer = decoded, pointer_join(pointer, key) + suffix
        else:
            doc[key] = decode_tree(value)
    headers = doc.get("headers")
    pointers: dict[str, list[str]] = {}
    if isinstance(headers, dict):
        base = pointer_join(pointer, "headers")
        for name, value in headers.items():
            child = pointer_join(base, str(name))
            pointers[str(name)] = (
                [pointer_join(child, i) for i in range(len(value))]
                if isinstance(value, list) else [child]
            )
    message = Message(
        pointer=pointer,
        headers=header_map(headers),
        body=body,
        body_pointer=body_pointer,
        header_pointers=pointers,
    )
    return message, doc


def _grpc_or_ws(items: list[Any], base: str) -> tuple[list[Any], list[Interaction]]:
    decoded: list[Any] = []
    interactions: list[Interaction] = []
    for index, item in enumerate(items):
        value = decode_tree(item)
        decoded.append(value)
        if not isinstance(value, dict):
            continue
        pointer = pointer_join(base, index)
        if "request_sample" in value or "response_sample" in value:
            req = value.get("request_sample")
            resp = value.get("response_sample")
            interactions.append(Interaction(
                index=index, pointer=pointer, method="GRPC", uri=None,
                request=Message(pointer_join(pointer, "request_sample"), {},
                                req.get("json") if isinstance(req, dict) else req,
                                pointer_join(pointer, "request_sample")),
                status=None,
                response=Message(pointer_join(pointer, "response_sample"), {},
                                 resp.get("json") if isinstance(resp, dict) else resp,
                                 pointer_join(pointer, "response_sample")),
            ))
        elif "direction" in value:
            # one websocket message per interaction; what was sent is the "request"
            message = Message(pointer, {}, value.get("data"), pointer_join(pointer, "data"))
            sent = value.get("direction") == "sent"
            interactions.append(Interaction(
                index=index, pointer=pointer, method="WS", uri=None,
                request=message if sent else Message(pointer, {}, None, None),
                status=None, response=None if sent else message,
            ))
    return decoded, interactions


def _classify(document: JSONValue, is_json: bool) -> str:
    if not isinstance(document, dict):
        return "json" if is_json else "yaml"
    if isinstance(document.get("http_interactions"), list):
        return "rvcr-json" if is_json else "ruby-vcr"
    items = document.get("interactions")
    if isinstance(items, list):
        first = next((i for i in items if isinstance(i, dict)), {})
        if "request_sample" in first or "response_sample" in first:
            return "grpc"
        if "direction" in first and "data" in first:
            return "websocket"
        return "vcrpy"
    if {"version", "key", "kind", "request"} <= set(document):
        return "fixture"
    if "version" in document and isinstance(document.get("entries"), list):
        return "store"
    return "json" if is_json else "yaml"


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


def _probe_encoded_bodies(raw: Any) -> None:
    """The fast path keeps a JSON document as parsed (the redactor opens JSON and base64
    held in strings itself); its `base64_string` bodies are still decoded within the
    cap, so that a body which cannot be read is noted as in the full reading."""
    stack: list[tuple[Any, int]] = [(raw, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            continue
        if isinstance(node, dict):
            encoded = node.get("base64_string")
            if isinstance(encoded, str) and len(encoded) > 64:
                with contextlib.suppress(binascii.Error, ValueError):
                    decode_body_bytes(base64.b64decode("".join(encoded.split())))
            stack.extend((value, depth + 1) for value in node.values()
                         if isinstance(value, (dict, list)))
        elif isinstance(node, list):
            stack.extend((value, depth + 1) for value in node if isinstance(value, (dict, list)))


def build_recording(path: Path, text: str, raw: Any, lines: LineMap, is_json: bool, *,
                    normalise: bool = True) -> Recording:
    """A `Recording` of the formats this module reads (vcrpy, Ruby VCR, rVCR, gRPC,
    websocket, redactkey fixtures, generic JSON/YAML) from a loaded document."""
    fmt = _classify(raw, is_json)
    interactions: list[Interaction] = []
    document: JSONValue
    if is_json and not normalise:
        document = raw
        if "base64_string" in text or "\\u" in text:  # else no such member to probe
            _probe_encoded_bodies(raw)
    elif fmt in ("vcrpy", "ruby-vcr", "rvcr-json"):
        list_key = "interactions" if fmt == "vcrpy" else "http_interactions"
        items, interactions = http_interactions(raw[list_key], "/" + list_key)
        document = {k: (decode_tree(v) if k != list_key else items) for k, v in raw.items()}
    elif fmt in ("grpc", "websocket"):
        items, interactions = _grpc_or_ws(raw["interactions"], "/interactions")
        document = {k: (decode_tree(v) if k != "interactions" else items)
                    for k, v in raw.items()}
    else:
        document = decode_tree(raw)
    return Recording(path=path, format=fmt, document=document, lines=lines,
                     interactions=interactions, text=text)


def parse_text(path: Path, text: str, *, normalise: bool = True) -> Recording:
    """Parse the text of a JSON or YAML file into a `Recording` (any structure is accepted).

    With `normalise=False` a JSON file's document is the parsed JSON as it is (no
    interactions are built): the fast path of `redact check`, where the redactor opens
    JSON bodies held in strings by itself.
    """
    raw, lines, is_json = load_document(path, text)
    return build_recording(path, text, raw, lines, is_json, normalise=normalise)


def read_text(path: Path) -> str:
    """A file's text: UTF-8, or Latin-1 for other bytes (secrets are ASCII either way)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FixtureFormatError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def load_cassette(path: Path | str) -> Recording:
    """Read one JSON/YAML cassette or fixture file; `FixtureFormatError` if it cannot be parsed."""
    target = Path(path)
    return parse_text(target, read_text(target))
