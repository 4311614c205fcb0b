"""Edits of a JSON or YAML text in place: every byte outside the scalars that change stays.

A new value that is the old one with spans replaced by placeholders is written as those
spans alone, each found in the scalar's own source (a secret needs no escaping, so it is
there as it is); any other is written whole, in the scalar's style where that can hold
it (a base64 block keeps its tag, indentation and width). The edited text is loaded
again and must hold exactly the new values, else `NotInPlace`.
"""

from __future__ import annotations

import base64
import bisect
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml

from ..keys._canonical import pointer_join
from ..recordings._streams import json_string_end

__all__ = ["NotInPlace", "Target", "applied", "changes_between", "edit_in_place", "gaps",
           "json_container"]

Target = tuple[str, bool]  # (JSON pointer, whether it is the member name at it)
_Edit = tuple[int, int, str]  # (start, end, text) in the file's text

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A node's anchor and tag come before its scalar and stay as they are.
# A scalar with more different pieces to replace is written whole: each piece is looked
# for along the whole scalar, so their number bounds the work per byte.
_MOST_PIECES = 64
_PROPERTIES = re.compile(r"(?:[&!]\S*\s+)*")
# What a plain scalar may not start with, hold on any line, or (in a flow collection) hold.
_PLAIN_START = re.compile(r"[\s\-?:,\[\]{}#&*!|>'\"%@`]")
_PLAIN_INSIDE = re.compile(r": |\s#|^\s*$")
_FLOW_INDICATOR = re.compile(r"[,\[\]{}]")
# A text a single-quoted scalar holds on one line as it is.
_SINGLE_QUOTABLE = re.compile(r"[\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")
# A JSON token but a string's body (`json_string_end` finds where a string ends: in bounded
# memory, as a regular expression's repeat over a 3 MB string is not)
_JSON_TOKEN = re.compile(r'"|[{}\[\],:]|[^\s{}\[\],:"]+')


class NotInPlace(ValueError):
    """A change that cannot be written into the text as it is (the shape differs, or the
    edited text does not load back to the new values); `pointer` says where."""

    def __init__(self, pointer: str) -> None:
        super().__init__("cannot be edited in place")  # (a member name may be a secret)
        self.pointer = pointer


def changes_between(before: Any, after: Any, pointer: str = "",
                    out: dict[Target, tuple[Any, Any]] | None = None
                    ) -> dict[Target, tuple[Any, Any]]:
    """(old, new) of every scalar and member name that differs between two documents of
    the same shape; `NotInPlace` where the shapes differ (a member added, a list longer)."""
    out = {} if out is None else out
    if type(before) is dict and type(after) is dict:
        if len(before) != len(after):
            raise NotInPlace(pointer)
        for (key, value), (new_key, new_value) in zip(before.items(), after.items(),
                                                      strict=True):
            child = pointer_join(pointer, key)
            if key != new_key:
                out[(child, True)] = (key, new_key)
            changes_between(value, new_value, child, out)
    elif type(before) is list and type(after) is list:
        if len(before) != len(after):
            raise NotInPlace(pointer)
        for index, (value, new_value) in enumerate(zip(before, after, strict=True)):
            changes_between(value, new_value, pointer_join(pointer, index), out)
    elif before != after or type(before) is not type(after):
        if not isinstance(before, (str, bytes)) or not isinstance(after, (str, bytes)):
            raise NotInPlace(pointer)
        out[(pointer, False)] = (before, after)
    return out


def gaps(old: str, new: str, marks: re.Pattern[str]) -> list[_Edit] | None:
    """Where `new` is `old` with spans replaced by runs of placeholders (`marks`): those
    spans as (start, end, placeholders), spans that already were the placeholders left
    out; None when `new` is not such an edit of `old`."""
    runs = list(marks.finditer(new))
    if not runs:
        return None
    literals = [new[:runs[0].start()]]
    literals += [new[a.end():b.start()] for a, b in itertools.pairwise(runs)]
    literals.append(new[runs[-1].end():])
    if not old.startswith(literals[0]):
        return None
    out: list[_Edit] = []
    start = len(literals[0])
    for run, literal in zip(runs, literals[1:], strict=True):
        if run is runs[-1]:
            end = len(old) - len(literal)
            if end <= start or not old.endswith(literal):
                return None
        else:
            end = old.find(literal, start + 1)
            if end < 0:
                return None
        if old[start:end] != run.group():
            out.append((start, end, run.group()))
        start = end + len(literal)
    return out


def json_container(text: str) -> Any:
    """The JSON object or array a text holds, else None."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


def edit_in_place(text: str, is_json: bool, before: Any,
                  changes: Mapping[Target, tuple[Any, Any]], load: Callable[[str], Any],
                  marks: re.Pattern[str]) -> str:
    """`text` (whose document is `before`) with each scalar at `changes` going from its old
    value to its new one; `NotInPlace` when that cannot be written and verified."""
    if not changes:
        return text
    places = (_json_spans if is_json else _yaml_spans)(text, before, set(changes))
    for whole in (False, True):  # spans first; where they do not load back, scalars whole
        edits: dict[tuple[int, int], str] = {}
        for target, (old, new) in changes.items():
            start, end, style = places[target]
            found = None if whole else _spans(text, start, end, style, old, new, marks)
            for at, stop, piece in found or [_whole(text, start, end, style, old, new, whole)]:
                if edits.setdefault((at, stop), piece) != piece:  # one scalar, two values
                    raise NotInPlace(target[0])
        edited = applied(text, [(a, b, piece) for (a, b), piece in edits.items()])
        try:
            if changes_between(before, load(edited)) == changes:
                return edited
        except (NotInPlace, ValueError, yaml.YAMLError):
            continue
    raise NotInPlace(min(target[0] for target in changes))


def applied(text: str, edits: Iterable[_Edit]) -> str:
    """`text` with each (start, end, piece) written over its span."""
    pieces: list[str] = []
    at = 0
    for start, end, piece in sorted(edits):
        if start < at:
            raise NotInPlace("")  # two edits overlap: not one scalar each
        pieces += [text[at:start], piece]
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


def _spans(text: str, start: int, end: int, style: str, old: Any, new: Any,
           marks: re.Pattern[str]) -> list[_Edit] | None:
    """The placeholders of `new` written over the spans of `old` they replace, each span
    found in the scalar's source `text[start:end]` (the same occurrence of its text)."""
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    found = gaps(old, new, marks) or _line_edits(old, new)
    pieces = {old[at:stop] for at, stop, _ in found or ()}
    if not found or "" in pieces or len(pieces) > _MOST_PIECES:
        return None  # (many different pieces: the scalar is written whole, in one pass)
    places: dict[str, tuple[list[int], list[int]]] = {}
    for piece in pieces:
        mine, theirs = _occurrences(old, piece, 0, len(old)), _occurrences(text, piece, start, end)
        if len(mine) != len(theirs):
            return None  # escaped or folded in the source: the scalar is written whole
        places[piece] = mine, theirs
    out: list[_Edit] = []
    for at, stop, placeholder in found:
        piece = old[at:stop]
        mine, theirs = places[piece]
        # the same occurrence of the piece in the source as in the value
        nth = bisect.bisect_right(mine, at - len(piece))
        if nth >= len(theirs):
            return None
        place = theirs[nth]
        if style == "'":
            placeholder = placeholder.replace("'", "''")
        elif style in ('"', "json"):
            placeholder = json.dumps(placeholder, ensure_ascii=False)[1:-1]
        out.append((place - start, place - start + len(piece), placeholder))
    if style in ("", "{") and not _plain(applied(text[start:end], out), style):
        return None
    return [(a + start, b + start, piece) for a, b, piece in out]


def _occurrences(text: str, piece: str, start: int, end: int) -> list[int]:
    """Where `piece` occurs in `text[start:end]`, left to right without overlaps (as
    `str.count` counts)."""
    out: list[int] = []
    at = text.find(piece, start, end)
    while at >= 0:
        out.append(at)
        at = text.find(piece, at + len(piece), end)
    return out


def _line_edits(old: str, new: str) -> list[_Edit] | None:
    """The middle of each line that differs, for texts of as many lines (a stream whose
    events changed: the rest of a key split across events is taken out, not replaced)."""
    before, after = old.split("\n"), new.split("\n")
    if len(before) != len(after):
        return None
    out: list[_Edit] = []
    at = 0
    for line, changed in zip(before, after, strict=True):
        if line != changed:
            head = _common(line, changed)
            tail = _common(line[head:][::-1], changed[head:][::-1])
            out.append((at + head, at + len(line) - tail, changed[head:len(changed) - tail]))
        at += len(line) + 1
    return out


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of two texts."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))


def _plain(source: str, style: str) -> bool:
    """Whether `source` reads as the plain scalar it says, in a block (`""`) or flow
    (`"{"`) collection; a text that could read otherwise is quoted."""
    lines = source.split("\n")
    return (_PLAIN_START.match(source) is None and not source.endswith((" ", ":"))
            and all(_PLAIN_INSIDE.search(line) is None for line in lines)
            and (style != "{" or _FLOW_INDICATOR.search(source) is None))


def _whole(text: str, start: int, end: int, style: str, old: Any, new: Any,
           quoted: bool) -> _Edit:
    """The scalar at `text[start:end]` written again whole with the value `new`: in its
    style where that can hold it (`quoted`: double-quoted, which holds any text)."""
    if style == "json":
        token = text[start:end]
        return start, end, json.dumps(new, ensure_ascii=token.isascii() and not old.isascii())
    properties = _PROPERTIES.match(text, start)
    start = properties.end() if properties is not None else start
    block = style in ("|", ">")
    if block:  # the header line stays; the trailing line breaks too
        header = text.index("\n", start) + 1
        end = header + len(text[header:end].rstrip())
    if isinstance(new, bytes):
        encoded = base64.b64encode(new).decode("ascii")
        if not block:
            quote = style if style in ("'", '"') else ""
            return start, end, quote + encoded + quote
        first = next((line for line in text[header:end].splitlines() if line.strip()), "")
        indent = first[:len(first) - len(first.lstrip())]
        width = len(first.strip()) or 76
        lines = [indent + encoded[i:i + width] for i in range(0, len(encoded), width)]
        newline = "\r\n" if "\r\n" in text[header:end] else "\n"
        return header, end, newline.join(lines or [indent])
    if not quoted and style in ("", "{") and _plain(new, style) and "\n" not in new:
        return start, end, new
    if not quoted and style != '"' and _SINGLE_QUOTABLE.fullmatch(new):
        return start, end, "'" + new.replace("'", "''") + "'"
    double = yaml.safe_dump(new, default_style='"', allow_unicode=True, width=1 << 30)
    return start, end, double.rstrip("\n")


def _yaml_spans(text: str, before: Any, targets: set[Target]) -> dict[Target, tuple[int, int, str]]:
    """Where each target's scalar is in a YAML text: (start, end, style). The document
    `before` (loaded from the same text) names the members; an alias leads to its anchor's
    node, so a shared value is one place."""
    root = yaml.compose(text, Loader=_LOADER)
    out: dict[Target, tuple[int, int, str]] = {}
    for target in targets:
        pointer, is_key = target
        node, data, name_node, flow = root, before, None, False
        for raw in pointer.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            flow = flow or bool(getattr(node, "flow_style", False))
            if isinstance(node, yaml.MappingNode) and isinstance(data, dict) and token in data \
                    and len(node.value) == len(data):  # (merged or repeated keys: no)
                name_node, node = node.value[list(data).index(token)]
                data = data[token]
            elif isinstance(node, yaml.SequenceNode) and isinstance(data, list) \
                    and token.isdigit() and int(token) < len(node.value):
                name_node, node, data = None, node.value[int(token)], data[int(token)]
            else:
                raise NotInPlace(pointer)
        chosen = name_node if is_key else node
        if not isinstance(chosen, yaml.ScalarNode):
            raise NotInPlace(pointer)
        style = chosen.style or ("{" if flow else "")  # "{": plain, in a flow collection
        out[target] = (chosen.start_mark.index, chosen.end_mark.index, style)
    return out


def _json_spans(text: str, before: Any, targets: set[Target]) -> dict[Target, tuple[int, int, str]]:
    """Where each target's token is in a JSON text, in one pass over its tokens; only the
    containers on the way to a target have their members' pointers built."""
    wanted = {pointer for pointer, _ in targets}
    ways = {pointer[:at] for pointer in wanted for at, c in enumerate(pointer) if c == "/"}
    out: dict[Target, tuple[int, int, str]] = {}
    # per open container: [is an object, its pointer (None: off every way), index or name]
    stack: list[list[Any]] = []
    naming = False
    match = _JSON_TOKEN.search(text)
    while match is not None:
        first = text[match.start()]
        span = (match.start(), json_string_end(text, match.start()) if first == '"'
                else match.end())
        match = _JSON_TOKEN.search(text, span[1])
        if first in ",:}]":
            if first == "," and stack and not stack[-1][0]:
                stack[-1][2] += 1
            elif first in "}]":
                stack.pop()
            naming = first == "," and bool(stack) and stack[-1][0]
            continue
        here: str | None = ""
        if stack:
            parent = stack[-1][1]
            here = None if parent not in ways else pointer_join(parent, stack[-1][2])
        if naming:
            stack[-1][2] = name = json.loads(text[span[0]:span[1]])
            child = None if stack[-1][1] not in ways else pointer_join(stack[-1][1], name)
            if child is not None and (child, True) in targets:
                out[(child, True)] = (*span, "json")
            naming = False
        elif first in "{[":
            stack.append([first == "{", here, 0])
            naming = first == "{"
        elif here is not None and (here, False) in targets:
            out[(here, False)] = (*span, "json")
    missing = targets - set(out)
    if missing:
        raise NotInPlace(min(pointer for pointer, _ in missing))
    return out
