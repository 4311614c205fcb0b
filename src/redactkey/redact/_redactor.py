"""The redactor: nothing of a credential survives, in any encoding.

The scan (`redactkey.scan`) finds the spans: run secrets in every variant, credential-named
pairs in text and detector rules. The redactor applies them: it walks data (`_walk`),
takes credential-named members whole, opens documents held in strings (JSON, base64 text,
server-sent events) and closes them again only when something changed, reads the chunks of
a stream together (`_streams`), and replaces each span with a placeholder that never
depends on the value. It does not search a text twice.
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._errors import UsageError, pointer_join
from ..scan._engine import Scanner, Span
from ..scan._names import SENSITIVE_KEYS, SENSITIVE_QUERY_KEYS, Names, norm
from ..scan._placeholders import AUTH_SCHEMES
from ..scan._rules import DEFAULT_RULES, Rule, custom_rules
from ..secrets._run_secrets import RunSecrets, mask
from . import _learn, _streams
from ._findings import Finding, shown_pointer
from ._streams import MAX_NESTING, nesting_exceeds
from ._walk import Walk, kept_as_is, take_whole

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "LABELLED_PLACEHOLDER",
    "MAX_NESTING",
    "SENSITIVE_KEYS",
    "SENSITIVE_QUERY_KEYS",
    "Finding",
    "Redactor",
    "nesting_exceeds",
    "shown_pointer",
]

DEFAULT_PLACEHOLDER = "[REDACTED]"
LABELLED_PLACEHOLDER = "[REDACTED:{label}]"
_ALNUM = re.compile(r"[A-Za-z0-9]")
_PASSES = 4  # reads of a text that taking spans out keeps changing (`_settled`)


@functools.lru_cache(maxsize=32)
def _names(extra: frozenset[str], safe: frozenset[str]) -> Names:
    return Names(extra, safe)


@functools.lru_cache(maxsize=64)
def _scanner_of(rules: tuple[Rule, ...], names: Names | None,
                variants: tuple[tuple[str, str], ...], values: tuple[tuple[str, str], ...]
                ) -> Scanner:
    """One scanner per configuration and set of secrets, shared by every redactor over them
    (one per test under the pytest plugin, each with a copy of the run's secrets)."""
    return Scanner(rules, names, variants, values)


def default_scanner() -> Scanner:
    """The scanner of the default rules and names, without secrets."""
    return _scanner_of(DEFAULT_RULES, _names(frozenset(), frozenset()), (), ())


class Redactor:
    """Redact run secrets, credential-named fields and detected keys from data and text.

    `redact(value)` returns a redacted copy of the same type (JSON-like data, `str`,
    `bytes`); it is pure and idempotent. `placeholder` may hold `{label}` (or pass
    `labelled=True`) to name the slot, rule or field: `[REDACTED:OPENAI_API_KEY]`.
    `extra_patterns` adds your own detectors (rule name -> regular expression, the whole
    match is the secret), e.g. `[[tool.redactkey.detectors]]` from the configuration.
    """

    def __init__(
        self,
        secrets: RunSecrets | None = None,
        *,
        placeholder: str = DEFAULT_PLACEHOLDER,
        detectors: bool = True,
        labelled: bool = False,
        sensitive_keys: Iterable[str] = (),
        safe_keys: Iterable[str] = (),
        extra_patterns: Mapping[str, str | re.Pattern[str]] | None = None,
    ) -> None:
        if secrets is not None and not isinstance(secrets, RunSecrets):
            raise UsageError(
                f"Redactor(secrets=...) takes a RunSecrets, not a {type(secrets).__name__}; "
                "build one with collect_run_secrets(...) or RunSecrets.from_env()"
            )
        if labelled and placeholder == DEFAULT_PLACEHOLDER:
            placeholder = LABELLED_PLACEHOLDER
        if not isinstance(placeholder, str) or not placeholder.strip():
            raise UsageError("Redactor(placeholder=...) must be a non-empty str")
        self._secrets = secrets
        self.placeholder = placeholder
        self._labelled = "{label}" in placeholder
        self.detects = detectors
        self._names = _names(frozenset(norm(k) for k in sensitive_keys),
                             frozenset(norm(k) for k in safe_keys))
        self._rules = (DEFAULT_RULES if detectors else ()) + custom_rules(extra_patterns or {})
        ours = re.escape(placeholder).replace(re.escape("{label}"), r"[A-Za-z0-9_.:\-]*")
        self._placeholder_re = re.compile("|".join(sorted(
            {ours, re.escape(DEFAULT_PLACEHOLDER), r"\[REDACTED:[A-Za-z0-9_.:\-]*\]"})))
        self._placeholders_re = re.compile(f"(?:{self._placeholder_re.pattern})+")
        self._lock = threading.Lock()
        # (the secrets' generation, the scanner over them): rebuilt when a secret is added
        self._scan: tuple[object, Scanner] | None = None
        # (name, value) sent by a request -> what learning it takes (`_learn.learn`)
        self._learnable: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        if placeholder not in (DEFAULT_PLACEHOLDER, LABELLED_PLACEHOLDER) or extra_patterns:
            for label in ("X", "OPENAI_API_KEY", "authorization"):
                if self._spans(self._placeholder_for(label), query=True):
                    raise UsageError(
                        "Redactor(placeholder=...) must not look like a secret itself; "
                        "choose a plain marker such as [REDACTED]"
                    )

    def over(self, secrets: RunSecrets) -> Redactor:
        """This redactor's settings over other run secrets (a test's copy of the run's);
        nothing is compiled again while they hold the same values."""
        if not isinstance(secrets, RunSecrets):
            raise UsageError(
                f"Redactor.over(...) takes a RunSecrets, not a {type(secrets).__name__}")
        other = object.__new__(Redactor)
        other.__dict__.update(self.__dict__)
        other._secrets = secrets
        other._lock = threading.Lock()
        return other

    def __repr__(self) -> str:
        slots = 0 if self._secrets is None else len(self._secrets)
        return (
            f"Redactor(slots={slots}, placeholder={self.placeholder!r}, detectors={self.detects})"
        )

    # -- public ---------------------------------------------------------------------------

    def is_sensitive_key(self, name: str) -> bool:
        """Whether a field, header or query parameter name holds a credential by name."""
        return self._names.key_class(name) == 1

    def key_class(self, name: str) -> int:
        """0: an ordinary name, 1: a credential by name, 2: credential-ish (entropy applies)."""
        return self._names.key_class(name)

    def is_placeholder(self, text: str) -> bool:
        """Whether `text` is one of our placeholders (labelled or not)."""
        return self._placeholder_re.fullmatch(text) is not None

    def redact(self, value: Any) -> Any:
        """A redacted copy of `value`: JSON-like data (keys and values), `str` or `bytes`."""
        return self._walked(value)[0]

    def _walked(self, value: Any) -> tuple[Any, Walk]:
        """`value` redacted, and its walk; a walk that fails goes again with pointers, so
        that the error names the place of the bad value."""
        walk = Walk(self, None)
        try:
            return walk.run(value), walk
        except UsageError:
            Walk(self, []).run(value)
            raise

    def findings(self, value: Any) -> list[Finding]:
        """What `redact(value)` would take out, by JSON pointer; values are masked."""
        found: list[Finding] = []
        Walk(self, found).run(value)
        return _ordered(found)

    def redact_text(self, text: str) -> str:
        """Redact one string (prose, a body, a URL, an SSE stream, embedded JSON)."""
        out: str = Walk(self, None).run(text)
        return out

    def redact_url(self, url: str) -> str:
        """Redact userinfo, credential query parameters and known values in a URL."""
        out: str = Walk(self, None, query=True).run(url)
        return out

    def redact_headers(self, headers: Mapping[str, Any]) -> dict[str, Any]:
        """Redact a header map: credential-named headers whole, any other value as text."""
        return {
            str(name): take_whole(self, value, pointer_join("", str(name)), None, str(name))
            if self.is_sensitive_key(str(name)) else self.redact(value)
            for name, value in headers.items()
        }

    def redact_kept(self, value: Any) -> tuple[Any, bool]:
        """`redact_lean(value)`, and whether it is `value` itself, unchanged, plain JSON data
        holding no float and only ASCII member names (orjson then writes it canonically)."""
        out, walk = self._walked(value)
        if walk.changed:
            return out, False
        return value, walk.plain and type(value) in (dict, list)

    def redact_lean(self, value: Any) -> Any:
        """`redact(value)`, or `value` itself (no copy) when redacting it changes nothing."""
        return self.redact_kept(value)[0]

    def learn(self, request: Any) -> int:
        """Take the credentials a request sends by name into the run's secrets (headers,
        query parameters and fields named as credentials, a URL's password), so an answer
        that echoes one is redacted like an environment variable's value. Placeholders and
        values shorter than the secrets' minimum length are passed over. Returns how many
        new values were learned."""
        found = _learn.credentials_of(self, request)
        return _learn.learn(self, found) if found else 0

    def learn_and_redact_kept(self, request: Any, part: Any) -> tuple[Any, bool]:
        """`learn(request)`, then `redact_kept(part)`, where `part` holds some members of
        `request` as they are (`counted_part`). When the structure of `part` changes
        nothing and one search finds nothing in its texts, `part` sends no credential and
        comes back as it is: only the other members are walked, to learn what they send
        (docs/performance.md, "Redacting a request")."""
        texts: list[str] = []
        plain = kept_as_is(self, part, texts) if type(part) is dict else None
        found = None if type(request) is not dict or plain is None else _learn.credentials_of(
            self, {name: item for name, item in request.items() if name not in part}, texts)
        if found is None or plain is None:
            self.learn(request)
            return self.redact_kept(part)
        if found and _learn.learn(self, found):
            return self.redact_kept(part)  # (a value learned now may be echoed in `part`)
        return part, plain

    def redact_stream(self, chunks: Sequence[Any]) -> list[Any]:
        """Redact recorded stream chunks, including secrets split across consecutive chunks:
        chunks are JSON values (the same field of consecutive chunk objects is read as one
        text) or SSE texts/bytes (consecutive `data:` events are read the same way)."""
        previous = list(chunks)
        out = self._stream_once(previous)
        # as `_settled` for one text: what taking spans out of the chunks joined anew is
        # read again, a bounded few times, so `redact_stream` is idempotent
        for _ in range(_PASSES - 1):
            if out == previous:
                break
            previous, out = out, self._stream_once(out)
        return out

    def _stream_once(self, chunks: list[Any]) -> list[Any]:
        if chunks and all(isinstance(c, (str, bytes)) for c in chunks) and any(
                _streams.looks_sse(_as_text(c)) for c in chunks):
            joined = _streams.sse_pass(self, [_as_text(c) for c in chunks])
            rejoined = [joined[i].encode("utf-8", "surrogateescape") if isinstance(c, bytes)
                        else joined[i] for i, c in enumerate(chunks)]
            return [self.redact(c) for c in rejoined]
        return [self.redact(c) for c in _streams.stream_pass(self, chunks)]

    def stream_findings(self, chunks: Sequence[Any]) -> list[Finding]:
        """What `redact_stream(chunks)` would take out, by `/<chunk index><pointer>`: each
        chunk's own findings and the secrets split across consecutive chunks (a split one
        is reported in every chunk it runs through, from where it starts)."""
        found: list[Finding] = []
        values = _streams.stream_pass(self, list(chunks), "", found)
        for index, chunk in enumerate(values):
            Walk(self, found).run(chunk, pointer_join("", index))
        return _ordered(found)

    # -- the scan and its spans -------------------------------------------------------------

    def _own_secrets(self) -> RunSecrets:
        with self._lock:
            if self._secrets is None:
                self._secrets = RunSecrets({})
            return self._secrets

    def _scanner(self, *, across: bool = False) -> Scanner:
        """The scan of this configuration over the run secrets as they are now; `across`:
        only the rules whose matches run across JSON syntax (a document's whole text)."""
        if across:
            return _scanner_of(tuple(r for r in self._rules if r.across), None, (), ())
        secrets = self._secrets
        generation = secrets.generation if secrets is not None else None
        scan = self._scan
        if scan is None or scan[0] is not generation:
            known = secrets if secrets is not None else RunSecrets({})
            scan = self._scan = (generation, _scanner_of(
                self._rules, self._names, tuple(known.patterns()), tuple(known.values())))
        return scan[1]

    def _spans(self, text: str, *, query: bool = False) -> list[Span]:
        return self._scanner().scan(text, query=query)

    def _placeholder_for(self, label: str | None) -> str:
        if not self._labelled:
            return self.placeholder
        clean = re.sub(r"[^A-Za-z0-9_.:\-]", "_", label or "secret")
        if label and any(span.rule != "sensitive-key"
                         for text in {label, clean} for span in self._spans(text)):
            clean = "secret"  # a member name that is itself a secret never labels its value
        return self.placeholder.replace("{label}", clean)

    def _redacted(self, text: str) -> bool:
        """Whether `text` holds nothing but placeholders, spaces and punctuation (a field
        redacted in pieces, or an auth scheme's placeholder such as `Bearer [REDACTED]`):
        taking it out again would only relabel it."""
        if self._placeholders_re.fullmatch(text) is not None:
            return True
        if text[:1].isalpha():
            text = AUTH_SCHEMES.sub("", text, count=1)
        if not self._placeholder_re.search(text):
            return False
        return _ALNUM.search(self._placeholder_re.sub("", text)) is None

    def _note(self, found: list[Finding] | None, pointer: str, start: int, end: int,
              rule: str, slot: str | None, secret: str) -> None:
        if found is not None:
            found.append(Finding(pointer, rule, slot, mask(secret), start, end))

    def _settled(self, text: str, spans: list[Span], pointer: str,
                 found: list[Finding] | None, *, query: bool, across: bool) -> str:
        """`text` with `spans` applied, then read again while that changed it (at most
        `_PASSES` times): a placeholder can free what the span it replaced held apart (a
        quote glued to an escape, a key glued to the secret before it). A text with
        nothing to take out is read once; what is changed is read a bounded few times."""
        new = self._apply(text, spans, pointer, found)
        for _ in range(_PASSES - 1):
            if new == text:
                break
            text = new
            spans = self._scanner(across=across).scan(text, query=query)
            new = self._apply(text, spans, pointer, found) if spans else text
        return new

    def _apply(self, text: str, spans: list[Span], pointer: str,
               found: list[Finding] | None, *, filtered: bool = False) -> str:
        """`text` with each span (overlapping ones merged) replaced by a placeholder; spans
        inside a placeholder already there, or holding only placeholders, are passed over."""
        if not filtered:
            starts: list[int] = []  # the placeholders already in the text, in order
            ends: list[int] = []
            if "[REDACTED" in text or self._labelled or self.placeholder != DEFAULT_PLACEHOLDER:
                for mark in self._placeholder_re.finditer(text):
                    starts.append(mark.start())
                    ends.append(mark.end())
            spans = [s for s in spans if s.end > s.start
                     and not _inside(starts, ends, s.start, s.end)
                     and not self._redacted(text[s.start:s.end])]
        parts: list[str] = []
        cursor = 0
        for span in _streams.merged(spans):
            parts.append(text[cursor:span.start])
            parts.append(self._placeholder_for(span.slot if span.slot is not None else span.rule))
            self._note(found, pointer, span.start, span.end, span.rule,
                       span.slot if span.rule == "known-value" else None,
                       text[span.start:span.end])
            cursor = span.end
        parts.append(text[cursor:])
        return "".join(parts)


def _inside(starts: list[int], ends: list[int], start: int, end: int) -> bool:
    """Whether [start, end) lies within one of the (ordered, disjoint) placeholders."""
    at = bisect.bisect_right(starts, start) - 1
    return at >= 0 and end <= ends[at]


def _ordered(found: list[Finding]) -> list[Finding]:
    return sorted(set(found), key=lambda f: (f.pointer, f.start, f.end, f.rule, f.slot or "",
                                             f.preview))


def _as_text(chunk: Any) -> str:
    return chunk.decode("utf-8", "surrogateescape") if isinstance(chunk, bytes) else str(chunk)
