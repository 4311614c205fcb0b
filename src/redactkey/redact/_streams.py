"""Secrets split across the chunks of a stream: the same field of consecutive chunks is
read as one text, and only the spans that cross a chunk boundary are applied here
(docs/decisions/0013-split-secrets-on-original-chunks.md).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import pointer_join
from ..scan._engine import Span
from ..scan._rules import NEAR_MISS_RULES
from ._findings import Finding

if TYPE_CHECKING:
    from ._redactor import Redactor

__all__ = ["looks_sse", "merged", "nesting_exceeds", "sse_pass", "stream_pass"]

_SSE_LINE = re.compile(r"(?m)^data:[ ]?(?P<payload>[^\r\n]*)(?=\r?$)")
# JSON held in a string is opened only up to this nesting; deeper is scanned as text.
MAX_NESTING = 100


def nesting_exceeds(value: Any) -> bool:
    """Whether JSON-like `value` nests deeper than `MAX_NESTING` (iterative: no recursion)."""
    level: list[Any] = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        if depth >= MAX_NESTING:
            return True
        deeper: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            deeper.extend([child for child in children if isinstance(child, (dict, list))])
        level = deeper
        depth += 1
    return False


def looks_sse(text: str) -> bool:
    return text.startswith("data:") or "\ndata:" in text


def stream_pass(redactor: Redactor, chunks: list[Any], pointer: str = "",
                found: list[Finding] | None = None) -> list[Any]:
    """`chunks` with the secrets that cross chunk boundaries taken out (see the module)."""
    by_path: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
    for index, chunk in enumerate(chunks):
        for path, text in _leaves(chunk):
            by_path.setdefault(path, []).append((index, text))
    edits: dict[int, dict[tuple[Any, ...], str]] = {}
    for path, pieces in by_path.items():
        if len(pieces) < 2:
            continue
        first = pieces[0][1]
        if all(text == first for _, text in pieces):
            continue  # ids, models, roles: repeated verbatim, nothing is split
        joined = "".join(text for _, text in pieces)
        if len(joined) < 8:
            continue
        bounds: list[int] = []
        offset = 0
        for _, text in pieces:
            bounds.append(offset)
            offset += len(text)
        crossing = merged([s for s in redactor._spans(joined)
                            if any(s.start < b < s.end for b in bounds[1:])])
        if not crossing:
            continue
        for k, (index, text) in enumerate(pieces):
            lo = bounds[k]
            hi = lo + len(text)
            local = [Span(s.start - lo, min(s.end, hi) - lo, s.rule, s.slot)
                     for s in crossing if lo <= s.start < hi]
            tail = [s for s in crossing if s.start < lo < s.end]
            if not local and not tail:
                continue
            where = pointer or functools.reduce(pointer_join, (index, *path), "")
            cut = 0
            if tail:  # merged spans: at most one runs on into this piece
                cut = min(tail[0].end, hi) - lo
                label = tail[0].slot if tail[0].rule == "known-value" else None
                if found is not None:
                    redactor._note(found, where, 0, cut, tail[0].rule, label, text[:cut])
            applied = redactor._apply(text, local, where, found, filtered=True) if local else text
            edits.setdefault(index, {})[path] = applied[cut:]
    if not edits:
        return chunks
    return [_replace_leaves(chunk, (), edits[index]) if index in edits else chunk
            for index, chunk in enumerate(chunks)]


def sse_pass(redactor: Redactor, texts: list[str], pointer: str = "",
             found: list[Finding] | None = None) -> list[str]:
    """The stream pass over the `data:` events of SSE texts, rewriting changed events."""
    events: list[tuple[int, int, int, Any, bool]] = []
    for index, text in enumerate(texts):
        for match in _SSE_LINE.finditer(text):
            payload = match.group("payload")
            value: Any = payload
            is_json = False
            if payload[:1] in ("{", "["):
                try:
                    value = json.loads(payload)
                    is_json = not nesting_exceeds(value)
                except (ValueError, RecursionError):
                    pass
                if not is_json:
                    value = payload
            start, end = match.span("payload")
            events.append((index, start, end, value, is_json))
    if len(events) < 2:
        return texts
    values = [event[3] for event in events]
    local: list[Finding] | None = None if found is None else []
    redacted = stream_pass(redactor, values, "", local)
    if redacted is values:
        return texts
    if found is not None and local:
        # offsets of a split secret point at the payload of the event it starts in
        for finding in local:
            event = events[int(finding.pointer.split("/")[1])]
            found.append(Finding(pointer, finding.rule, finding.slot, finding.preview,
                                 *event[1:3]))
    out = list(texts)
    for (index, start, end, value, is_json), new in reversed(
            list(zip(events, redacted, strict=False))):
        if new == value:
            continue
        payload = json.dumps(new, ensure_ascii=False, separators=(",", ":")) if is_json else new
        out[index] = out[index][:start] + payload + out[index][end:]
    return out


def merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one each, in order, named by the first one's rule and label
    unless that is a near miss and a later one's is not (a near miss is the weakest
    reason)."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end, s.rule, s.slot or "")):
        if out and span.start < out[-1].end:
            last = out[-1]
            stronger = last.rule in NEAR_MISS_RULES and span.rule not in NEAR_MISS_RULES
            named = span if stronger else last
            out[-1] = Span(last.start, max(last.end, span.end), named.rule, named.slot)
        else:
            out.append(span)
    return out


def _leaves(value: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Every string leaf of JSON-like data with its path (dict keys and list indexes)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if type(item) is str:
            out.append((path, item))
        elif isinstance(item, Mapping):
            stack.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend(((*path, i), child) for i, child in enumerate(item))
    out.reverse()
    return out


def _replace_leaves(value: Any, path: tuple[Any, ...], edits: Mapping[tuple[Any, ...], str]
                    ) -> Any:
    """`value` with the string leaves at the paths of `edits` replaced (iteratively deep
    data is no concern: stream chunks are the provider's small documents)."""
    if isinstance(value, str):
        return edits.get(path, value)
    if isinstance(value, Mapping):
        return {key: _replace_leaves(item, (*path, key), edits) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_leaves(item, (*path, i), edits) for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return tuple(_replace_leaves(item, (*path, i), edits) for i, item in enumerate(value))
    return value
