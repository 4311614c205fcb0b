"""Reading a file too large to hold whole, in bounded pieces.

A file over `MAX_FILE_BYTES` on disk is never read into memory whole. Its data is
parsed as a stream of events (JSON by ijson's C backend, fed line by line so each
event knows its line; YAML by libyaml's event parser) and built into `Piece`s: the
document's containers from the root down to where the parse is, holding what was
completed since the last piece, about `PIECE_BYTES` of text (more only by the one
string that passed it). Every string is in exactly one piece, under every key above
it, so it is judged as in the whole document, and its line is kept beside it. YAML
aliases are not followed (what one names is read where it is defined); more than
`MAX_ALIASES` are refused, as when the file is read whole.

Other text, and streams saved as files (`.sse`, `.ndjson`), are read in `windows`
cut at line ends, each starting with the last `OVERLAP` bytes of the one before, so
no secret is cut in two.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import ijson
import yaml

from ._cassettes import BINARY_TAGS, YAML_LOADER, YAML_TAG, LineMap, yaml_problem
from ._limits import MAX_ALIASES, MAX_NESTING
from .dialects._common import decode_body_bytes

__all__ = ["OVERLAP", "PIECE_BYTES", "Piece", "Refused", "json_lines", "json_pieces",
           "windows", "yaml_pieces"]

# What one piece or window holds: the redactor's work on it stays in tens of MB.
PIECE_BYTES = 4 * 1024 * 1024
# Longer than any secret a rule finds (a PEM private key is about 3 KB).
OVERLAP = 64 * 1024
_LINE = 64 * 1024  # JSON fed to the parser a line at a time, in parts of this at most

Event = tuple[str, Any, int]  # (ijson event name, value, 1-based line; < 0: a YAML literal)


class Refused(ValueError):
    """The document cannot be read in pieces (nested too deeply, too many aliases)."""


class Piece(LineMap):
    """A bounded part of a document and the lines of its members.

    `document` is the root container holding only what this piece read; `line_for`
    and `real` take JSON pointers into it."""

    def __init__(self, document: Any, lines: dict[int, list[int]],
                 chain: list[tuple[int | None, str | None]]) -> None:
        super().__init__()
        self.document = document
        self._members = lines  # id(container) -> line of each member, in order
        self._chain = chain  # open containers: (list offset or None, open member token)
        self._places: dict[int, dict[str, int]] = {}  # id(mapping) -> key -> its place

    def line_for(self, pointer: str, *, text: str | None = None,
                 offset: int | None = None) -> int:
        node, line, exact = self.document, 1, True
        for raw in pointer.split("/")[1:]:
            lines = self._members.get(id(node))
            token = raw.replace("~1", "/").replace("~0", "~")
            if lines is not None and isinstance(node, dict) and token in node:
                places = self._places.get(id(node))
                if places is None:
                    places = self._places[id(node)] = {key: i for i, key in enumerate(node)}
                index, child = places[token], node[token]
            elif lines is not None and token.isdigit() and int(token) < len(node):
                index, child = int(token), node[int(token)]
            else:  # past a string (into a JSON body it holds): the string's line
                exact = False
                break
            line, node = lines[index], child
        if line >= 0:
            return line
        # a YAML literal block: its text starts on the line after its indicator
        if exact and text is not None and offset is not None:
            return 1 - line + self.newlines_before(text, offset)
        return -line

    def real(self, pointer: str) -> str:
        """The pointer into the whole document of a pointer into this piece: the index of
        a member of a list that earlier pieces began counts what they held."""
        tokens = pointer.split("/")
        for depth, (offset, open_token) in enumerate(self._chain, 1):
            if depth >= len(tokens):
                break
            token = tokens[depth]
            if offset and token.isdigit():
                tokens[depth] = str(int(token) + offset)
            if token != open_token:
                break
        return "/".join(tokens)


@dataclass
class _Open:
    node: Any  # dict or list
    lines: list[int]
    offset: int = 0  # list members held by earlier pieces
    key: str = ""
    key_line: int = 0


@dataclass
class _Builder:
    stack: list[_Open] = field(default_factory=list)
    lines: dict[int, list[int]] = field(default_factory=dict)
    root: Any = None
    held: int = 0

    def add(self, value: Any, line: int) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if isinstance(top.node, list):
            top.node.append(value)
            top.lines.append(line)
            return
        if top.key in top.node:  # a repeated key: the last value wins, as in json.loads
            del top.lines[list(top.node).index(top.key)]
            del top.node[top.key]
        top.node[top.key] = value
        top.lines.append(-top.key_line if line < 0 else top.key_line)

    def piece(self) -> Piece:
        chain = [(item.offset if isinstance(item.node, list) else None,
                  None if depth + 1 == len(self.stack) else
                  str(len(item.node) - 1) if isinstance(item.node, list) else
                  next(reversed(item.node)).replace("~", "~0").replace("/", "~1"))
                 for depth, item in enumerate(self.stack)]
        return Piece(self.root, self.lines, chain)

    def trim(self) -> None:
        """Drop what the last piece held; each open container keeps its open member."""
        for depth, item in enumerate(self.stack):
            keep = 1 if depth + 1 < len(self.stack) else 0
            node = item.node
            if isinstance(node, list):
                item.offset += len(node) - keep
                node[:] = node[len(node) - keep:]
            else:
                kept = list(node.items())[len(node) - keep:]
                node.clear()
                node.update(kept)
            item.lines[:] = item.lines[len(item.lines) - keep:]
        self.lines = {id(item.node): item.lines for item in self.stack}
        self.held = 0


def _pieces(events: Iterable[Event], budget: float) -> Iterator[Piece]:
    build = _Builder()
    trim = False
    for event, value, line in events:
        if trim:
            build.trim()
            trim = False
        if event == "map_key":
            build.stack[-1].key, build.stack[-1].key_line = value, line
            build.held += len(value)
            continue
        if event in ("start_map", "start_array"):
            node: Any = {} if event == "start_map" else []
            build.add(node, line)
            if len(build.stack) >= MAX_NESTING:
                raise Refused(f"nested deeper than {MAX_NESTING} levels")
            build.lines[id(node)] = []
            build.stack.append(_Open(node, build.lines[id(node)]))
            continue
        if event in ("end_map", "end_array"):
            if len(build.stack) == 1:
                yield build.piece()
                return
            if build.stack[-1].offset:  # a list that earlier pieces began ends: its
                yield build.piece()  # members' places count what those held
                build.trim()
            build.stack.pop()
        else:
            build.add(value, line)
            build.held += len(value) if isinstance(value, str) else 16
        if not build.stack:
            yield build.piece()
            return
        if build.held > budget:
            yield build.piece()
            trim = True  # once the caller is done with the piece


# numbers, booleans and null hold no secret: they are read as null
_TEXT_EVENTS = frozenset({"string", "map_key", "start_map", "start_array", "end_map",
                          "end_array"})


def _json_events(handle: IO[bytes]) -> Iterator[Event]:
    events = ijson.sendable_list()
    parser = ijson.basic_parse_coro(events)
    line = 1
    first = True
    try:
        while block := handle.read(PIECE_BYTES):
            if first and block.startswith(b"\xef\xbb\xbf"):
                block = block[3:]
            first = False
            at = 0
            while at < len(block):
                # a JSON string holds no newline: the line a string ends on is its line
                end = min(block.find(b"\n", at, at + _LINE) + 1 or at + _LINE, len(block))
                parser.send(block[at:end])
                for name, value in events:
                    yield name, value if name in _TEXT_EVENTS else None, line
                del events[:]
                line += block[end - 1] == 0x0A
                at = end
        parser.close()
    except (ijson.JSONError, UnicodeDecodeError):
        # (ijson's message quotes the text around the error: it is not repeated)
        raise Refused(f"not valid JSON at line {line}") from None
    for name, value in events:
        yield name, value if name in _TEXT_EVENTS else None, line


def json_pieces(handle: IO[bytes]) -> Iterator[Piece]:
    """The pieces of a JSON file; `Refused` when it does not parse."""
    return _pieces(_json_events(handle), PIECE_BYTES)


def json_lines(text: str) -> LineMap:
    """The lines of the members of a whole JSON text (one piece of all of it), for a
    file read whole; lines 1 where it does not parse as a stream."""
    try:
        events = _json_events(io.BytesIO(text.encode("utf-8", "surrogatepass")))
        return next(_pieces(events, math.inf), LineMap())
    except Refused:  # (json.loads takes NaN and Infinity; a streaming parser does not)
        return LineMap()


_TEXT_TAGS = frozenset({YAML_TAG + "str", YAML_TAG + "timestamp"})
_KNOWN_TAGS = _TEXT_TAGS | frozenset(
    YAML_TAG + name for name in ("int", "float", "bool", "null", "merge"))


def _yaml_scalar(event: yaml.ScalarEvent, resolver: yaml.resolver.Resolver) -> Any:
    """A scalar as text (a binary one decoded, as the whole-file reader does), or None
    for a number, a boolean or null: they hold no secret."""
    tag = event.tag
    if tag is None or tag == "!":
        tag = resolver.resolve(  # type: ignore[no-untyped-call]
            yaml.ScalarNode, event.value, event.implicit)
    if tag in BINARY_TAGS:
        try:
            raw = base64.b64decode("".join(event.value.split()))
        except (binascii.Error, ValueError):
            return event.value
        text = decode_body_bytes(raw)
        return text if text is not None else base64.b64encode(raw).decode("ascii")
    return event.value if tag in _TEXT_TAGS or tag not in _KNOWN_TAGS else None


def _yaml_key(event: yaml.ScalarEvent, resolver: yaml.resolver.Resolver) -> str:
    """A scalar key as the whole-file reader names it (`null`, `true`, `1`)."""
    tag = event.tag or resolver.resolve(  # type: ignore[no-untyped-call]
        yaml.ScalarNode, event.value, event.implicit)
    if tag.endswith(":null"):
        return "null"
    return event.value.lower() if tag.endswith(":bool") else event.value


def _yaml_events(handle: IO[bytes]) -> Iterator[Event]:
    loader = YAML_LOADER(handle)
    resolver = yaml.resolver.Resolver()
    # per open collection: None for a sequence, else whether the mapping expects a key;
    # a complex key (aiohttp's `!!python/...istr [Accept]` header names) is its text
    expect: list[bool | None] = []
    key_parts: list[str] | None = None
    key_depth = 0
    aliases = documents = 0
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]
            line = event.start_mark.line + 1
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise Refused("more than one YAML document")
                continue
            if not isinstance(event, (yaml.NodeEvent, yaml.CollectionEndEvent)):
                continue
            if key_parts is not None:  # inside a complex key
                if isinstance(event, yaml.ScalarEvent):
                    key_parts.append(event.value)
                key_depth += isinstance(event, yaml.CollectionStartEvent)
                key_depth -= isinstance(event, yaml.CollectionEndEvent)
                if key_depth == 0:
                    key = key_parts[0] if len(key_parts) == 1 else json.dumps(key_parts)
                    key_parts = None
                    expect[-1] = False
                    yield "map_key", key, line
                continue
            if isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise Refused(f"more than {MAX_ALIASES} YAML aliases; aliases are not "
                                  "expanded here")
            if expect and expect[-1] and not isinstance(event, yaml.CollectionEndEvent):
                if isinstance(event, yaml.CollectionStartEvent):
                    key_parts, key_depth = [], 1
                    continue
                expect[-1] = False
                yield "map_key", _yaml_key(event, resolver) if isinstance(
                    event, yaml.ScalarEvent) else "null", line
                continue
            if isinstance(event, yaml.CollectionStartEvent):
                is_map = isinstance(event, yaml.MappingStartEvent)
                expect.append(True if is_map else None)
                yield ("start_map" if is_map else "start_array"), None, line
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                is_map = isinstance(event, yaml.MappingEndEvent)
                expect.pop()
                yield ("end_map" if is_map else "end_array"), None, line
            elif isinstance(event, yaml.ScalarEvent):
                literal = event.style == "|"
                yield "string", _yaml_scalar(event, resolver), -line if literal else line
            else:  # an alias: what it names was read where it is defined
                yield "null", None, line
            if expect and expect[-1] is False:
                expect[-1] = True  # a value ended: the mapping's next key comes
    except yaml.YAMLError as exc:
        raise Refused(yaml_problem(exc)) from None
    finally:
        loader.dispose()


def yaml_pieces(handle: IO[bytes]) -> Iterator[Piece]:
    """The pieces of a YAML file; `Refused` when it does not parse."""
    return _pieces(_yaml_events(handle), PIECE_BYTES)


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # secrets are ASCII either way


def windows(handle: IO[bytes]) -> Iterator[tuple[str, int, int]]:
    """(text, its first line, how many of its first lines ended the window before) of a
    text file, in windows of about `PIECE_BYTES` cut at line ends."""
    carry, line, overlap, held = b"", 1, 0, 0  # held: bytes of `carry` already yielded
    first = True
    while True:
        block = handle.read(PIECE_BYTES)
        if first and block.startswith(b"\xef\xbb\xbf"):
            block = block[3:]
        first = False
        data = carry + block
        if not block:
            if len(data) > held:
                yield _decoded(data), line, overlap
            return
        cut = data.rfind(b"\n") + 1
        if cut <= held and len(data) < 2 * PIECE_BYTES:
            carry = data  # no line ends past what was read: read on
            continue
        cut = cut if cut > held else len(data)  # a line longer than a window is cut
        window = data[:cut]
        yield _decoded(window), line, overlap
        # the next window starts with the whole lines in this one's last OVERLAP bytes
        # (or its last OVERLAP bytes, in a line longer than that)
        newline = window.rfind(b"\n", 0, max(0, cut - OVERLAP))
        start = newline + 1 if newline >= 0 else max(0, cut - OVERLAP)
        line += window.count(b"\n", 0, start)
        overlap = window.count(b"\n", start)
        carry, held = data[start:], cut - start
