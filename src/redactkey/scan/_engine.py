"""The scan: every literal of every rule, name and secret found in one pass, then each
candidate checked on a bounded window around it, so the work per text is linear
(docs/decisions/0073-one-linear-scan.md says how and why).

`Scanner.scan(text)` runs one compiled literal database over the text and turns what it
found into `Span`s; `scan_many` searches many texts with one call (joined with a character
no literal holds).
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import hyperscan

from ._names import KEY_CHARS, Names
from ._rules import Rule
from ._validators import is_known_id

__all__ = ["MASK_MARKS", "Scanner", "Span"]


class Span(NamedTuple):
    """A half-open range of text to redact, the rule that found it and its label."""

    start: int
    end: int
    rule: str
    slot: str | None


# Marks that show a value was cut or masked: only next to one is a shown part looked for.
MASK_MARKS = ("…", "...", "***", "••", "xxxx", "XXXX")
# The fewest of each mask character that make a mask.
_MASK_SHORTEST = {"…": 1, ".": 3, "*": 3, "•": 2, "x": 4, "X": 4}
_SHOWN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=")
_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HEXCHARS = frozenset("0123456789abcdefABCDEF")
# One long base64 run (an image, `encrypted_content`): a key can only be the whole of it
# or start it; anything found inside is chance.
_BLOB = re.compile(r"(?:data:[\w/+.\-]+;base64,)?[A-Za-z0-9+/_\-]{256,}={0,2}")
# Only escapes of ASCII characters are decoded: each is one character of the view.
_PCT = re.compile(r"%([0-7][0-9A-Fa-f])")
_SEP = b"\x00"  # between joined texts: no literal holds it
# Short texts a search found literals in but no span (a URL's `://`, a header line): a
# run sends the same few on every call, so each scanner remembers this many of them
# (under 200 KB a scanner; a run keeps at most 64 scanners).
_QUIET_LENGTH = 256
_QUIET = 512
# A hit is one int, not a tuple: a line that yields a literal every three bytes yields a
# million of them per 3 MB (as tuples ~300 MB at once, packed ~90 MB). The search gives
# `end << _ID | literal` (bytes); `_as_chars` gives `start << _AT | length << _ID | literal`
# (characters), which sorts by start; a rule's candidate is `start << _ID | rule`.
_ID = 20
_AT = 44
_LOW = (1 << _ID) - 1
_LENGTH = (1 << (_AT - _ID)) - 1


@dataclass
class _Entry:
    """What one literal of the database stands for (it may stand for several things)."""

    rules: list[int] = field(default_factory=list)
    name: bool | None = None  # a credential name: query-only or not
    slot: str | None = None  # a secret's variant
    mask: bool = False


class _Database:
    """A compiled literal database; one scratch space per thread."""

    def __init__(self, literals: Sequence[tuple[str, bool]]) -> None:
        self.lengths = [len(text.encode("utf-8", "surrogatepass")) for text, _ in literals]
        if len(literals) > _LOW or max(self.lengths, default=0) > _LENGTH:
            raise ValueError(f"{len(literals)} literals, the longest {max(self.lengths)} bytes: "
                             f"a scan holds at most {_LOW} of at most {_LENGTH} bytes")
        self._db: Any = None
        if literals:
            self._db = hyperscan.Database()
            self._db.compile(
                expressions=[text.encode("utf-8", "surrogatepass") for text, _ in literals],
                ids=list(range(len(literals))), elements=len(literals), literal=True,
                flags=[hyperscan.HS_FLAG_CASELESS if caseless else 0 for _, caseless in literals],
            )
        self._local = threading.local()

    def find(self, data: bytes) -> list[int]:
        """`end << _ID | literal` (the byte offset of its end) of every occurrence,
        overlapping ones too."""
        hits: list[int] = []
        if self._db is None or not data:
            return hits
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        self._db.scan(data, match_event_handler=_collect, context=hits, scratch=scratch)
        return hits


def _collect(literal: int, _start: int, end: int, _flags: int, hits: list[int]) -> None:
    hits.append(end << _ID | literal)


@functools.lru_cache(maxsize=16)
def _compiled(literals: tuple[tuple[str, bool], ...]) -> _Database:
    """The database of these literals, compiled once per process (a run's redactors share
    it while their rules, names and secrets are the same)."""
    return _Database(literals)


class Scanner:
    """One configuration's scan: rules, credential names and the run's secrets as they were
    when it was built. Pure and thread-safe."""

    def __init__(self, rules: Sequence[Rule], names: Names | None,
                 variants: Sequence[tuple[str, str]] = (),
                 values: Sequence[tuple[str, str]] = ()) -> None:
        """`variants`: (encoded form, slot) of every run secret (`RunSecrets.patterns()`);
        `values`: (slot, value) of each (`RunSecrets.values()`), for masked previews."""
        self.rules = tuple(rules)
        self.names = names
        entries: dict[tuple[str, bool], _Entry] = {}
        for index, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                entries.setdefault((keyword, rule.caseless), _Entry()).rules.append(index)
        for mark, query_only in names.marks() if names is not None else ():
            entry = entries.setdefault((mark, True), _Entry())
            entry.name = query_only if entry.name is None else entry.name and query_only
        for hint in names.hints() if names is not None else ():  # (for `touches` alone)
            entries.setdefault((hint, True), _Entry())
        for variant, slot in variants:
            entries.setdefault((variant, False), _Entry()).slot = slot
        # values long enough that 8 shown characters are only part of them
        self.values = [(slot, value) for slot, value in values if len(value) >= 12]
        for mark in MASK_MARKS if self.values else ():
            entries.setdefault((mark, False), _Entry()).mask = True
        literals = tuple(entries)
        self._entries = [entries[literal] for literal in literals]
        self._db = _compiled(literals)
        # (a rule without keywords reads every text)
        self._always = [i for i, rule in enumerate(self.rules) if not rule.keywords]
        self._quiet: dict[tuple[str, bool], None] = {}

    # -- searching ----------------------------------------------------------------------

    def touches(self, text: str) -> bool:
        """Whether any literal of this scan occurs in `text`: a rule's keyword, a credential
        name or a credential-ish one, a secret's variant, a mask mark."""
        return bool(self._db.find(text.encode("utf-8", "surrogatepass")))

    def scan(self, text: str, *, query: bool = False) -> list[Span]:
        """Every span to redact in `text`, in order (overlapping ones included)."""
        return self.scan_many([text], query=query)[0]

    def scan_many(self, texts: Sequence[str], *, query: bool = False) -> list[list[Span]]:
        """`scan` of each text, with one search over them all."""
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        starts: list[int] = []
        at = 0
        for data in encoded:
            starts.append(at)
            at += len(data) + 1
        lengths = self._db.lengths
        found: dict[int, list[int]] = {}
        hits = self._db.find(_SEP.join(encoded))
        if len(texts) == 1:
            if hits:
                found[0] = hits
        else:
            for hit in hits:
                end = hit >> _ID
                index = bisect.bisect_right(starts, end - 1) - 1
                found.setdefault(index, []).append((end - starts[index]) << _ID | hit & _LOW)
        del hits
        out: list[list[Span]] = []
        quiet = self._quiet
        for index, text in enumerate(texts):
            raw = found.pop(index, None)
            if raw is None and not self._always and "%" not in text:
                out.append([])
                continue
            short = len(text) <= _QUIET_LENGTH
            if short and (text, query) in quiet:
                out.append([])
                continue
            # (one reference to each list of hits at a time: each goes when it is used)
            spans = self._spans(text, _as_chars(text, encoded[index], raw, lengths), query)
            if short and not spans:
                if len(quiet) >= _QUIET:
                    quiet.clear()
                quiet[text, query] = None
            out.append(spans)
        return out

    def _spans(self, text: str, hits: list[int], query: bool, *, view: bool = False
               ) -> list[Span]:
        known: list[Span] = []
        marks: list[int] = []
        candidates: list[int] = []
        names: list[int] = []
        entries = self._entries
        for hit in hits:
            entry = entries[hit & _LOW]
            if entry.rules:
                start = hit >> _AT
                candidates.extend(start << _ID | rule for rule in entry.rules)
            if view or (entry.slot is None and not entry.mask and entry.name is None):
                continue
            start = hit >> _AT
            end = start + (hit >> _ID & _LENGTH)
            if entry.slot is not None:
                known.append(Span(start, end, "known-value", entry.slot))
            if entry.mask:
                marks.append(start)
            if entry.name is not None and (query or not entry.name
                                           or _after_query_mark(text, start)):
                names.append(end - 1)
        del hits
        spans = list(known)
        if marks:
            spans.extend(self._masked(text, marks))
        if candidates or self._always:
            spans.extend(self._rules(text, candidates, known))
        if names and self.names is not None:
            tried: dict[tuple[str, int], int] = {}
            names.sort()
            for at in names:
                spans.extend(Span(pair.start, pair.end, "sensitive-key", pair.name)
                             for pair in self.names.pairs_at(text, at, query, tried)
                             if pair.end > pair.start)
        if not view and "%" in text:
            spans.extend(self._percent_view(text, query))
        return sorted(set(spans))

    # -- rules ----------------------------------------------------------------------------

    def _rules(self, text: str, candidates: list[int], known: list[Span]) -> list[Span]:
        out: list[Span] = []
        ends = {span.end for span in known}
        known_starts = sorted(span.start for span in known)
        blob = len(text) >= 256 and _BLOB.fullmatch(text) is not None
        last_end: dict[int, int] = {}
        absent: dict[int, bool] = {}  # a rule whose `also` literals the text lacks
        candidates.sort()  # (nearly in order already: the hits are)
        for candidate in candidates:
            start, index = candidate >> _ID, candidate & _LOW
            rule = self.rules[index]
            if start < last_end.get(index, 0) or (blob and start > 0):
                continue
            if rule.also:
                if index not in absent:
                    absent[index] = not all(literal in text for literal in rule.also)
                if absent[index]:
                    continue
            if rule.lead and start > 0 and start not in ends and _glued_before(
                    text, start, rule.lead_glue):
                continue
            span, reached = self._try(rule, text, start, known_starts, ends)
            if span is not None:
                out.append(span)
                ends.add(span.end)
            if reached:  # (as `finditer`: a keyword inside the last match is passed over)
                last_end[index] = reached
        for index in self._always:
            rule = self.rules[index]
            for match in rule.regex.finditer(text):
                if match.end() > match.start():
                    out.append(Span(*match.span(), rule.name, None))
        return out

    def _try(self, rule: Rule, text: str, at: int, known_starts: list[int], ends: set[int]
             ) -> tuple[Span | None, int]:
        """The rule's match at the keyword at `at`, on a bounded window, if it counts, and
        where the pattern's match ended (0: none). When it is glued to a secret's variant
        that follows it, the window ends there."""
        limit = min(len(text), at + rule.width + 8)
        span, reached = self._match(rule, text, at, limit, ends, known_starts)
        if span is None:
            nearest = bisect.bisect_right(known_starts, at)
            if nearest < len(known_starts) and known_starts[nearest] < limit:
                clipped, end = self._match(rule, text, at, known_starts[nearest], ends,
                                           known_starts)
                if clipped is not None:
                    return clipped, end
        return span, reached

    def _match(self, rule: Rule, text: str, at: int, limit: int, ends: set[int],
               known_starts: list[int]) -> tuple[Span | None, int]:
        if at < rule.before:
            return None, 0
        match = rule.regex.match(text, at - rule.before, limit)
        if match is None:
            return None, 0
        group = rule.group if rule.group <= rule.regex.groups else 0
        start, end = match.span(group)
        secret = text[start:end]
        if start < 0 or end <= start or (not rule.ids and is_known_id(secret)):
            return None, match.end()
        validate = rule.validate
        if (validate is not None and not validate(secret)) or (not rule.bounded and (
            (start > 0 and start not in ends and _glued_before(text, start, _TOKEN))
            or (end < len(text) and text[end] in _TOKEN and not _holds(known_starts, end))
        )):
            return None, match.end()
        return Span(start, end, rule.name, None), match.end()

    # -- percent-encoded text -------------------------------------------------------------

    def _percent_view(self, text: str, query: bool) -> list[Span]:
        """Rule matches in `text` with its ASCII percent escapes decoded (`Bearer%20…`, a
        PEM block or a webhook URL inside a query value), mapped back onto `text`."""
        parts: list[str] = []
        escapes: list[int] = []
        last = 0
        for match in _PCT.finditer(text):
            parts.append(text[last:match.start()])
            escapes.append(match.start() - 2 * len(escapes))
            parts.append(chr(int(match.group(1), 16)))
            last = match.end()
        if not escapes:
            return []
        parts.append(text[last:])
        view = "".join(parts)
        data = view.encode("utf-8", "surrogatepass")
        hits = _as_chars(view, data, self._db.find(data), self._db.lengths)
        out = []
        for span in self._spans(view, hits, query, view=True):
            first = span.start + 2 * bisect.bisect_left(escapes, span.start)
            last_char = span.end - 1
            k = bisect.bisect_left(escapes, last_char)
            end = last_char + 2 * k + (3 if k < len(escapes) and escapes[k] == last_char else 1)
            out.append(Span(first, end, span.rule, span.slot))
        return out

    # -- masked previews ------------------------------------------------------------------

    def _masked(self, text: str, marks: list[int]) -> list[Span]:
        """The first or last 8+ characters of a secret shown next to an ellipsis or a mask
        (`sk-…abcd1234`, `****abcd1234`, `sk-proj-abcd…`): a preview is still a part. Each
        run of a mask character is read once, with at most 256 shown characters each side."""
        out: list[Span] = []
        done = 0
        for at in sorted(marks):
            if at < done:
                continue
            char = text[at]
            head = at
            while head > done and text[head - 1] == char:
                head -= 1
            tail = at
            while tail < len(text) and text[tail] == char:
                tail += 1
            done = tail
            if tail - head < _MASK_SHORTEST[char]:
                continue
            end = tail
            while end < len(text) and end - tail < 256 and text[end] in _SHOWN:
                end += 1
            out.extend(self._shown_tail(text[tail:end], tail))
            begin = head
            while begin > 0 and head - begin <= 256 and text[begin - 1] in _SHOWN:
                begin -= 1
            if 8 <= head - begin <= 256:
                out.extend(self._shown_head(text[begin:head], begin))
        return out

    def _shown_tail(self, shown: str, at: int) -> list[Span]:
        """The longest start of `shown` that ends a secret (but is not all of it)."""
        out = []
        for slot, value in self.values if len(shown) >= 8 else ():
            i = value.find(shown[:8], 1)
            while i >= 0:
                if shown.startswith(value[i:]):
                    out.append(Span(at, at + len(value) - i, "known-value", slot))
                    break
                i = value.find(shown[:8], i + 1)
        return out

    def _shown_head(self, shown: str, at: int) -> list[Span]:
        """The longest end of `shown` that starts a secret (but is not all of it)."""
        out = []
        for slot, value in self.values:
            j = shown.find(value[:8])
            while 0 <= j <= len(shown) - 8:
                if len(shown) - j < len(value) and value.startswith(shown[j:]):
                    out.append(Span(at + j, at + len(shown), "known-value", slot))
                    break
                j = shown.find(value[:8], j + 1)
        return out


def _holds(ordered: list[int], value: int) -> bool:
    at = bisect.bisect_left(ordered, value)
    return at < len(ordered) and ordered[at] == value


def _after_query_mark(text: str, start: int) -> bool:
    """Whether a query-only name (`key=`, `token=`) at `start` follows `?`, `&` or `;`."""
    begin = start
    while begin > 0 and start - begin < 64 and text[begin - 1] not in "?&;":
        if text[begin - 1] not in KEY_CHARS:
            return False
        begin -= 1
    return begin > 0 and text[begin - 1] in "?&;"


def _glued_before(text: str, at: int, glue: frozenset[str]) -> bool:
    """Whether the character before `at` glues it to a longer token; a percent escape
    (`%3D`) or a JSON escape (`\\n`, `\\u0020`) in front counts as a break."""
    before = text[at - 1]
    if before not in glue:
        return False
    if at >= 3 and text[at - 3] == "%" and before in _HEXCHARS and text[at - 2] in _HEXCHARS:
        return False
    if at >= 2 and text[at - 2] == "\\" and before in "nrtbf":
        return False
    return not (at >= 6 and text[at - 6:at - 4] == "\\u"
                and all(c in _HEXCHARS for c in text[at - 4:at]))


def _as_chars(text: str, data: bytes, hits: list[int] | None, lengths: list[int]
              ) -> list[int]:
    """`start << _AT | length << _ID | literal` in characters of `text`, in order of their
    starts, for the hits (`end << _ID | literal`, bytes) of its UTF-8 `data`."""
    if not hits:
        return []
    if len(data) == len(text):
        out = [((hit >> _ID) - lengths[hit & _LOW]) << _AT | lengths[hit & _LOW] << _ID
               | hit & _LOW for hit in hits]
    else:
        # UTF-8 synchronises: a literal's bytes only match where its characters start and
        # end, so every offset a hit names is a character boundary.
        offsets = sorted({o for hit in hits
                          for o in ((hit >> _ID) - lengths[hit & _LOW], hit >> _ID)})
        chars: dict[int, int] = {}
        count = last = 0
        for offset in offsets:
            count += len(data[last:offset].decode("utf-8", "surrogatepass"))
            chars[offset] = count
            last = offset
        out = []
        for hit in hits:
            end = hit >> _ID
            start = chars[end - lengths[hit & _LOW]]
            out.append(start << _AT | (chars[end] - start) << _ID | hit & _LOW)
    hits.clear()  # (the caller's list: its memory goes before the spans are built)
    out.sort()
    return out
