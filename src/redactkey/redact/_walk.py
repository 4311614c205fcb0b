"""One walk over JSON-like data: the redacted copy, its findings, and one scan for all of it;
the documents held in its strings, opened and closed again; credential-named values taken whole.

The walk copies containers as it meets them and decides at once what the structure
decides (a credential-named member goes whole, a random value under a credential-ish name
goes, a `[name, value]` header pair goes). Every string it meets is set aside with the
place it came from; at the end one search (`Scanner.scan_many`) reads them all, and only
the strings in which it found something are rewritten in place. A string that holds a
document of its own (JSON, base64 text, a server-sent-event stream) is opened first, by a
walk of its own, and then read with the others as the text it has become.

Pointers are kept as a chain of (parent, token) pairs and written out only for a finding.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, SecretBytes, SecretStr

from .._errors import UsageError, pointer_join
from ..scan._names import norm
from ..scan._validators import looks_high_entropy
from . import _streams
from ._findings import Finding, shown_pointer

if TYPE_CHECKING:
    from ._redactor import Redactor

__all__ = ["MAX_DEPTH", "Path", "Walk", "kept_as_is", "open_held", "rendered", "take_whole"]

# Documents held in strings are opened up to this depth; deeper ones are read as text.
MAX_DEPTH = 8
_SCALARS = frozenset({int, float, bool, type(None)})
B64_TEXT = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_\-]{16,}={0,2}")
_OPENS = frozenset("{[ \t\r\n")

#: A JSON pointer as the walk keeps it: "" (the root), a written pointer, or (parent, token).
Path = str | tuple[Any, Any]


def rendered(path: Path) -> str:
    """The JSON pointer of a kept path."""
    tokens: list[Any] = []
    while isinstance(path, tuple):
        path, token = path
        tokens.append(token)
    return functools.reduce(pointer_join, reversed(tokens), path)


class Walk:
    """One redaction of one value (see the module docstring). `changed` tells whether the
    copy differs from the value; `plain` whether the value was plain JSON data holding no
    float and only ASCII member names (orjson then writes it as RFC 8785 does)."""

    def __init__(self, redactor: Redactor, found: list[Finding] | None, depth: int = 0,
                 *, query: bool = False) -> None:
        self.redactor = redactor
        self.found = found
        self.depth = depth
        self.query = query  # strings are URLs: `?key=` and the like count as credentials
        self.changed = False
        self.plain = True
        self._places: list[tuple[Any, Any, Path, bool]] = []  # (container, key, path, is_key)
        self._texts: list[str] = []
        # documents opened as JSON: their strings were read one by one, so the text as a
        # whole is read only by the rules that run across its syntax
        self._documents: list[tuple[Any, Any, Path, bool]] = []
        self._document_texts: list[str] = []

    def run(self, value: Any, pointer: Path = "") -> Any:
        if type(value) is str:
            holder = [value]
            self._string(holder, 0, value, pointer)
            self._flush()
            self.changed = holder[0] != value
            return holder[0]
        out = self._value(value, pointer)
        self._flush()
        return out

    # -- containers ---------------------------------------------------------------------

    def _value(self, value: Any, path: Path) -> Any:
        kind = type(value)
        if kind is dict or kind is list or (kind is not str and isinstance(value, (Mapping,
                                                                                  list))):
            if kind is not dict and kind is not list:
                self.plain = False
            if isinstance(value, Mapping):
                return self._mapping(value, path)
            return self._list(value, path)
        if kind in _SCALARS:
            if kind is float:
                self.plain = False
            return value
        self.plain = False
        if isinstance(value, tuple):
            return tuple(self._sub(item, (path, i)) for i, item in enumerate(value))
        if isinstance(value, str):
            return self._sub(str(value), path)
        if isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("utf-8", "surrogateescape")
            redacted = self._sub(text, path)
            if redacted == text:
                return value
            out = redacted.encode("utf-8", "surrogateescape")
            return out if isinstance(value, bytes) else bytearray(out)
        if isinstance(value, (SecretStr, SecretBytes)):
            self.note(path, 0, 0, "secret-type", None, "")
            self.changed = True
            return self.redactor._placeholder_for("secret")
        if isinstance(value, BaseModel):
            return self._value(value.model_dump(mode="json"), path)
        raise UsageError(
            f"cannot redact a {type(value).__name__} at "
            f"{shown_pointer(rendered(path)) or '(root)'}: "
            "pass JSON-like data (dict, list, str, number, bool, None), str or bytes"
        )

    def _sub(self, value: Any, path: Path) -> Any:
        """`value` redacted by a walk of its own (no place to rewrite it in later)."""
        walk = Walk(self.redactor, self.found, self.depth)
        out = walk.run(value, path)
        self.changed |= walk.changed
        self.plain &= walk.plain
        return out

    def _mapping(self, value: Mapping[Any, Any], path: Path) -> dict[Any, Any]:
        redactor = self.redactor
        out: dict[Any, Any] = {}
        for key, item in value.items():
            child = (path, key)
            if type(key) is not str:
                self.plain = False
                out[key] = item if type(item) in _SCALARS else self._value(item, child)
                continue
            klass = redactor.key_class(key)
            if not key.isascii():
                self.plain = False
            if klass == 1:
                whole = take_whole(redactor, item, child, self.found, key)
                self.changed |= whole is not item
                out[key] = whole
            elif (klass == 2 and redactor.detects and type(item) is str
                  and not redactor._redacted(item) and looks_high_entropy(item)):
                self.note(child, 0, len(item), "high-entropy", None, item)
                out[key] = redactor._placeholder_for(key)
                self.changed = True
            elif type(item) is str:
                out[key] = item
                if len(item) >= 8:
                    self._string(out, key, item, child)
            elif type(item) in _SCALARS:
                if type(item) is float:
                    self.plain = False
                out[key] = item
            else:
                out[key] = self._value(item, child)
            if len(key) >= 8:
                self._places.append((out, key, child, True))
                self._texts.append(key)
        return out

    def _list(self, value: list[Any], path: Path) -> list[Any]:
        out: list[Any] = []
        pair = (len(value) == 2 and type(value[0]) is str
                and self.redactor.key_class(value[0]) == 1)
        for index, item in enumerate(value):
            if pair and index == 1 and type(item) not in _SCALARS:
                whole = take_whole(self.redactor, item, (path, 1), self.found, value[0])
                self.changed |= whole is not item
                out.append(whole)
            elif type(item) is str:
                out.append(item)
                if len(item) >= 8:
                    self._string(out, index, item, (path, index))
            elif type(item) in _SCALARS:
                if type(item) is float:
                    self.plain = False
                out.append(item)
            else:
                out.append(self._value(item, (path, index)))
        return out

    # -- strings ------------------------------------------------------------------------

    def _string(self, container: Any, key: Any, text: str, path: Path) -> None:
        """Set `text` aside for the one search, opening a document it holds first."""
        if len(text) < 8:
            return
        opened, document = open_held(self.redactor, text, path, self.found, self.depth)
        if opened is not text:
            container[key] = opened
            self.changed |= opened != text
            text = opened
        if document:
            self._documents.append((container, key, path, False))
            self._document_texts.append(text)
            return
        self._places.append((container, key, path, False))
        self._texts.append(text)

    def _flush(self) -> None:
        """Scan every string set aside, in one search, and rewrite those it found in."""
        redactor = self.redactor
        if self._texts:
            self._rewrite(self._places, self._texts,
                          redactor._scanner().scan_many(self._texts, query=self.query))
        if self._document_texts:
            self._rewrite(self._documents, self._document_texts,
                          redactor._scanner(across=True).scan_many(self._document_texts))

    def _rewrite(self, places: list[tuple[Any, Any, Path, bool]], texts: list[str],
                 scans: list[list[Any]]) -> None:
        redactor = self.redactor
        renamed: dict[int, tuple[MutableMapping[Any, Any], dict[Any, Any]]] = {}
        for (container, key, path, is_key), text, spans in zip(places, texts, scans,
                                                                strict=True):
            if not spans:
                continue
            pointer = rendered(path) if self.found is not None else ""
            new = redactor._settled(text, spans, pointer, self.found, query=self.query,
                                    across=places is self._documents)
            if new == text:
                continue
            self.changed = True
            if is_key:
                renamed.setdefault(id(container), (container, {}))[1][key] = new
            else:
                container[key] = new
        for container, names in renamed.values():
            _rename(container, names)

    def note(self, path: Path, start: int, end: int, rule: str, slot: str | None,
             secret: str) -> None:
        if self.found is not None:
            self.redactor._note(self.found, rendered(path), start, end, rule, slot, secret)


_ITEM: Any = object()  # (`kept_as_is`: the place of a list item's member name)


def kept_as_is(redactor: Redactor, value: dict[Any, Any], texts: list[str]) -> bool | None:
    """Whether a `Walk` of `value` keeps it as it is as far as its structure decides: no
    credential-named member or pair, no random value under a credential-ish name, no string
    holding a document, only JSON types. The strings and member names the walk would scan
    go to `texts`; when the scan finds nothing in them either, the walk changes nothing.
    Returns the walk's `plain`, or None when the structure may change something."""
    plain = True
    stack: list[Any] = [value]
    while stack:
        container = stack.pop()
        if type(container) is dict:
            items: Any = container.items()
        else:
            if (len(container) == 2 and type(container[0]) is str
                    and redactor.key_class(container[0]) == 1):
                return None
            items = ((_ITEM, item) for item in container)
        for key, item in items:
            if key is not _ITEM:
                klass = redactor.key_class(key) if type(key) is str else 1
                if klass == 1:  # (a member named by no string is no plain JSON either)
                    return None
                plain &= key.isascii()
                if len(key) >= 8:
                    texts.append(key)
                if (klass == 2 and type(item) is str and redactor.detects
                        and not redactor._redacted(item) and looks_high_entropy(item)):
                    return None
            kind = type(item)
            if kind is str:
                if len(item) >= 8:
                    opened, document = open_held(redactor, item, "", None, 0)
                    if document or opened is not item:
                        return None
                    texts.append(item)
            elif kind is dict or kind is list:
                stack.append(item)
            elif kind is float:
                plain = False
            elif kind not in _SCALARS:
                return None
    return plain


# -- documents held in strings, and credential-named values --------------------------------

_FROM_URLSAFE = str.maketrans("-_", "+/")
_LINE_BREAKS = str.maketrans("", "", "\r\n\t")
# a JSON string that is one base64 run (it may hold a text to open)
_QUOTED_B64 = re.compile(r'"([A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_\-]{16,}={0,2})"')


def open_held(redactor: Redactor, text: str, path: Path, found: list[Finding] | None,
           depth: int) -> tuple[str, bool]:
    """`text` with the document it holds redacted inside (JSON, base64 text, the events
    of a stream), or `text` itself; and whether it held a JSON document, whose strings
    were then read one by one. Documents nested deeper than `MAX_DEPTH` are not opened."""
    if depth >= MAX_DEPTH:
        return text, False
    if text[0] in _OPENS or (len(text) >= 16 and " " not in text and B64_TEXT.fullmatch(text)):
        opened = _open(redactor, text, path, found, depth)
        if opened is not None:
            return opened, text.lstrip()[:1] in ("{", "[")
    if _streams.looks_sse(text):
        text = _streams.sse_pass(redactor, [text], rendered(path) if found is not None else "",
                                 found)[0]
    return text, False

def _open(redactor: Redactor, text: str, path: Path, found: list[Finding] | None,
          depth: int) -> str | None:
    """Redact inside a JSON document or a base64 text held in a string; None if neither."""
    if text.lstrip()[:1] in ("{", "["):
        if _holds_nothing(redactor, text):
            return text
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # nested too deeply to open: read as text
            return None
        if not isinstance(data, (dict, list)) or _streams.nesting_exceeds(data):
            return None
        walk = Walk(redactor, found, depth + 1)
        redacted = walk.run(data, path)
        if not walk.changed:
            return text
        compact = ", " not in text and ": " not in text
        indent = re.match(r"[\[{]\r?\n( +)", text.lstrip())
        return json.dumps(redacted, ensure_ascii=False,
                          separators=(",", ":") if compact else None,
                          indent=len(indent.group(1)) if indent else None)
    return _open_b64(redactor, text, path, found, depth)

def _holds_nothing(redactor: Redactor, text: str) -> bool:
    """Whether the JSON document `text` holds nothing to redact, seen from its text: no
    literal of the scan occurs in it (so none occurs in any of its strings, which it
    holds as they are), and none of its strings opens a document of its own or is read
    percent-decoded. Its strings are then not read one by one."""
    if "\\" in text or "%" in text or "data:" in text or '"{' in text or '"[' in text:
        return False  # (an escape could hide a literal; a nested document; a stream)
    if redactor._scanner().touches(text):
        return False
    for match in _QUOTED_B64.finditer(text):
        if _open_b64(redactor, match.group(1), "", None, MAX_DEPTH - 1) is not None:
            return False
    return True

def _open_b64(redactor: Redactor, text: str, path: Path, found: list[Finding] | None,
              depth: int) -> str | None:
    urlsafe = "-" in text or "_" in text
    body = text.rstrip("=")
    try:  # (binascii itself: an id that is no base64 of a text fails at its first bytes)
        raw = binascii.a2b_base64((body.translate(_FROM_URLSAFE) if urlsafe else body)
                                  + "=" * (-len(body) % 4))
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if len(decoded) < 8 or not decoded.translate(_LINE_BREAKS).isprintable():
        return None
    redacted = Walk(redactor, None, depth + 1).run(decoded, path)
    if redacted == decoded:
        return None
    if found is not None:
        redactor._note(found, rendered(path), 0, len(text), "base64-text", None, "")
    encoded = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(redacted.encode())
    out = encoded.decode("ascii")
    return out if text.endswith("=") or len(body) % 4 == 0 else out.rstrip("=")

def take_whole(redactor: Redactor, value: Any, path: Path, found: list[Finding] | None,
               key: str) -> Any:
    """The value of a credential-named field: every non-empty leaf becomes a placeholder."""
    label = norm(key)
    if isinstance(value, str) and (not value or redactor._redacted(value)):
        return value
    pointer = rendered(path) if found is not None else ""
    if isinstance(value, str):
        redactor._note(found, pointer, 0, len(value), "sensitive-key", None, value)
        return redactor._placeholder_for(label)
    if isinstance(value, (bytes, bytearray)):
        if not value:
            return value
        redactor._note(found, pointer, 0, len(value), "sensitive-key", None, "")
        return redactor._placeholder_for(label).encode()
    if isinstance(value, Mapping):
        # values go whole; the keys (cookie names, say) are ordinary text to scan
        out: dict[Any, Any] = {}
        for k, v in value.items():
            new_key = Walk(redactor, found).run(k, (path, k)) if type(k) is str else k
            out[new_key] = take_whole(redactor, v, (path, k), found, key)
        return out
    if isinstance(value, (list, tuple)):
        items = [take_whole(redactor, v, (path, i), found, key) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        redactor._note(found, pointer, 0, 0, "sensitive-key", None, "")
        return redactor._placeholder_for(label)
    return Walk(redactor, found).run(value, path)


def _rename(mapping: MutableMapping[Any, Any], names: dict[Any, Any]) -> None:
    """Rename members of `mapping` in place, keeping their order; a new name that is taken
    gets `~2`, `~3`, … (two secrets as member names cannot merge)."""
    items = list(mapping.items())
    mapping.clear()
    for key, item in items:
        new = names.get(key, key)
        if new != key and new in mapping:
            n = 2
            while f"{new}~{n}" in mapping:
                n += 1
            new = f"{new}~{n}"
        mapping[new] = item
