"""The redactor: nothing of a credential survives, in any encoding.

Three layers find what to take out of a string; every hit is a `Span` and overlapping
spans are merged before one placeholder replaces each:

1. known values: every variant of every collected secret (`RunSecrets`), one
   Aho-Corasick automaton, rebuilt lazily when the secrets change;
2. sensitive keys: JSON keys, headers, query and form parameters whose value is a
   credential by name (redacted whole), also inside text (`"api_key": "..."`,
   `Authorization: ...` lines, `?token=...&`);
3. detectors (`_detectors`): provider key shapes, JWTs, PEM private keys, `Bearer`/`Basic`
   credentials, URL passwords; entropy only under credential-named fields.

Strings that hold a JSON document, a base64-encoded text body or a server-sent-event
stream are opened, redacted inside and closed again (only when something changed, so
clean data comes through byte-identical). The placeholder never depends on the value.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import itertools
import json
import re
import string
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from pydantic import BaseModel, SecretBytes, SecretStr

from .._errors import UsageError, pointer_join
from ..scan._detectors import (
    DEFAULT_RULES,
    NEAR_MISS_RULES,
    Detectors,
    Literals,
    Rule,
    Span,
    grows_linearly,
    looks_high_entropy,
    matches_near,
)
from ..secrets._run_secrets import RunSecrets, mask

__all__ = [
    "DEFAULT_PLACEHOLDER",
    "LABELLED_PLACEHOLDER",
    "SENSITIVE_KEYS",
    "SENSITIVE_QUERY_KEYS",
    "Finding",
    "Redactor",
]

DEFAULT_PLACEHOLDER = "[REDACTED]"
LABELLED_PLACEHOLDER = "[REDACTED:{label}]"

#: Names whose value is a credential, compared case-insensitively with `_` and `-` alike.
SENSITIVE_KEYS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "apikey",
        "x-goog-api-key",
        "ocp-apim-subscription-key",
        "cookie",
        "set-cookie",
        "password",
        "passwd",
        "client-secret",
        "access-token",
        "refresh-token",
        "id-token",
        "api-token",
        "auth-token",
        "x-auth-token",
        "x-access-token",
        "x-api-token",
        "private-token",
        "x-subscription-token",
        "x-functions-key",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-credential",
        "aws-secret-access-key",
        "secret-access-key",
        "session-token",
        "secret",
        "secret-key",
        "private-key",
        "client-assertion",
        "x-vault-token",
        "x-goog-iam-authorization-token",
        "bearer-token",
        "cf-access-client-secret",
        "webhook-secret",
        "signing-secret",
        "x-csrf-token",
        "x-xsrf-token",
        "openai-api-key",
        "anthropic-api-key",
    }
)
#: Extra names that are credentials only as URL query parameters (`?key=AIza...`).
SENSITIVE_QUERY_KEYS: frozenset[str] = frozenset(
    {"key", "token", "sig", "signature", "auth", "access-key", "code-verifier"}
)

_FUZZY_CREDENTIAL = re.compile(
    r"(?:^|-)(?:secret|token|password|passwd|pwd|api-?key|access-?key|private-?key"
    r"|credentials?|auth)(?:-|$)"
)


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _looks_redacted(value: str, ours: Callable[[str], bool]) -> bool:
    """`_placeholders.looks_redacted`, imported the first time a credential is judged: a
    run that learns none never loads the placeholder styles."""
    from ..scan._placeholders import looks_redacted

    return looks_redacted(value, ours)


_POINTER_DETECTORS: list[Detectors] = []


class _TextRedactor(Protocol):
    def redact_text(self, text: str) -> str: ...


def shown_pointer(
    pointer: str, redactor: _TextRedactor | None = None, *, min_length: int = 8
) -> str:
    """`pointer` as it may be printed: a member name that holds a credential (a token map
    keyed by the token) is masked to `sk-p…`. The real pointer stays on the object.

    A name is masked when it is at least `min_length` characters, not an array index,
    and looks like a credential (high entropy or a detector's match), or when
    `redactor` (which knows the run's secrets) would change it.
    """
    if not pointer:
        return pointer
    if not _POINTER_DETECTORS:
        _POINTER_DETECTORS.append(Detectors())
    detectors = _POINTER_DETECTORS[0]
    tokens = pointer.split("/")
    changed = False
    for index, token in enumerate(tokens[1:], 1):
        if len(token) < min_length or token.isdigit():
            continue
        name = token.replace("~1", "/").replace("~0", "~")
        if (
            looks_high_entropy(name)
            or detectors.spans(name)
            or (redactor is not None and redactor.redact_text(name) != name)
        ):
            tokens[index] = mask(name).replace("~", "~0").replace("/", "~1")
            changed = True
    return "/".join(tokens) if changed else pointer


@dataclass(frozen=True, repr=False)
class Finding:
    """One thing the redactor takes out: where, found by what, and a masked preview.

    `pointer` is the JSON pointer of the string (or `""` for a bare string); `start`
    and `end` are offsets inside that string. `slot` names the run secret for a known
    value (`rule == "known-value"`); `preview` never shows more than 4 characters.
    """

    pointer: str
    rule: str
    slot: str | None
    preview: str
    start: int = 0
    end: int = 0

    def __repr__(self) -> str:
        return (f"Finding(pointer={shown_pointer(self.pointer)!r}, rule={self.rule!r}, "
                f"slot={self.slot!r}, preview={self.preview!r}, start={self.start}, "
                f"end={self.end})")


# --- text structure rules keyed by name -------------------------------------------------

# "key": "value" (also 'key': 'value', key=value in configs, and \"key\": \"value\")
_QUOTED_KV = re.compile(
    r"(?P<kq>\\{0,7}[\"'])(?P<key>[A-Za-z0-9_.\-]{2,64})(?P=kq)\s*(?::|=>?)\s*"
    r"(?P<vq>\\{0,7}[\"'])(?P<val>[^\"'\\\r\n]{1,8192})(?P=vq)"
)
# Authorization: Bearer ... (a header line, a YAML line; a line may end in CRLF)
_LINE_KV = re.compile(
    r"(?m)^[ \t]*(?:-[ \t]+)?(?P<key>[A-Za-z0-9_\-]{2,64})[ \t]*:[ \t]+(?P<val>[^\r\n]*?)[ \t]*\r?$"
)
# key=value in a query string or a form body
_QUERY_KV = re.compile(
    r"(?:(?<=^)|(?<=[?&;\s]))(?P<key>[A-Za-z0-9_.\-%\[\]]{1,64})=(?P<val>[^&\s#;\"'<>]+)"
)

# The three patterns above match only at a few kinds of places: a quote (after up to 7
# backslashes), the start of a line holding a colon, the start of the run of key
# characters before an "=". `_tried` runs a pattern at those places alone, in order,
# skipping places inside the last match: the matches `finditer` gives over the whole text
# (which tries every position), found at the cost of the places (str.find runs at memory
# speed). A short text, or one dense with places (JSON, code, YAML), goes to `finditer`,
# which is cheaper there: a text is read whole when its first 4 KB, or the places found
# so far, hold more per KB than `_PER_KB` allows (what trying a place costs against
# `finditer` reading 1 KB, measured).
_PLACES_FROM = 1024
_HEAD = 4096
_PER_KB = {"quoted": 64, "line": 6, "query": 32}
_QUERY_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-%[]")


def _tried(pattern: re.Pattern[str], text: str, places: list[int]) -> Iterator[re.Match[str]]:
    """The matches of `pattern.finditer(text)`, when every match starts at one of the
    ascending `places` (and no match is empty)."""
    end = 0
    for place in places:
        if place >= end:
            match = pattern.match(text, place)
            if match is not None:
                yield match
                end = match.end()


def _limit(text: str, kind: str, chars: str) -> int:
    """How many places `text` may have for `kind` before `finditer` is the cheaper read
    (-1: read it with `finditer` at once: a short text, or one dense from its start)."""
    if len(text) < _PLACES_FROM:
        return -1
    per_kb = _PER_KB[kind]
    head = min(len(text), _HEAD)
    if sum(text.count(char, 0, head) for char in chars) * 1024 > per_kb * head:
        return -1
    return len(text) * per_kb // 1024


def _found(text: str, chars: str, limit: int) -> list[int] | None:
    """Where `chars` occur in `text`, ascending; None past `limit` occurrences."""
    out: list[int] = []
    for char in chars:
        at = text.find(char)
        while at >= 0:
            if len(out) >= limit:
                return None
            out.append(at)
            at = text.find(char, at + 1)
    out.sort()
    return out


def _quoted_pairs(text: str) -> Iterable[re.Match[str]]:
    """`_QUOTED_KV.finditer(text)`: a match starts on its key's opening quote or on one of
    the (up to 7) backslashes right before it."""
    places = _found(text, "\"'", _limit(text, "quoted", "\"'"))
    if places is None:
        return _QUOTED_KV.finditer(text)
    if "\\" in text:
        escaped: list[int] = []
        for at in places:
            back = at
            while back > 0 and at - back < 7 and text[back - 1] == "\\":
                back -= 1
                escaped.append(back)
        places += escaped
        places.sort()
    return _tried(_QUOTED_KV, text, places)


def _line_pairs(text: str) -> Iterable[re.Match[str]]:
    """`_LINE_KV.finditer(text)`: a match starts a line (the text, or after a newline) and
    holds a colon before the line ends."""
    limit = _limit(text, "line", ":")
    places: list[int] = []
    at = text.find(":")
    while at >= 0:
        if len(places) >= limit:
            return _LINE_KV.finditer(text)
        places.append(text.rfind("\n", 0, at) + 1)
        line_end = text.find("\n", at)
        if line_end < 0:
            break
        at = text.find(":", line_end)
    return _tried(_LINE_KV, text, places)


def _query_pairs(text: str) -> Iterable[re.Match[str]]:
    """`_QUERY_KV.finditer(text)`: a match starts where the run of key characters before
    one of its "=" starts (the character before is a separator, which is no key character)."""
    equals = _found(text, "=", _limit(text, "query", "="))
    if equals is None:
        return _QUERY_KV.finditer(text)
    places: list[int] = []
    for at in equals:
        start = at
        while start > 0 and at - start <= 64 and text[start - 1] in _QUERY_KEY_CHARS:
            start -= 1
        if start < at:
            places.append(start)
    return _tried(_QUERY_KV, text, places)


_B64_TEXT = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_\-]{16,}={0,2}")
_SSE_LINE = re.compile(r"(?m)^data:[ ]?(?P<payload>[^\r\n]*)(?=\r?$)")
_MAX_DEPTH = 8
# JSON held in a string is opened only up to this nesting; deeper is scanned as text (the
# walk is recursive, and no recorded request or answer nests anywhere near this deep).
MAX_NESTING = 100


def nesting_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether JSON-like `value` nests deeper than `limit` (iterative: no recursion)."""
    # one level of containers at a time; scalars are never kept
    level: list[Any] = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        if depth >= limit:
            return True
        deeper: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            deeper.extend([child for child in children if isinstance(child, (dict, list))])
        level = deeper
        depth += 1
    return False


_MAX_PASSES = 8
_ALNUM = re.compile(r"[A-Za-z0-9]")
_SCALARS = frozenset({int, float, bool, type(None)})


_Searched = tuple["_Known", list[tuple[int, int, int]]]
"""A text's search: the literals searched and their hits in it."""


_PASSED_OVER_MAX = 256  # stand-in credentials a redactor remembers passing over
_HEADER_NAMES_MAX = 4096  # header names a redactor remembers the class of


class _Known:
    """What the redactor searches for one generation of the run secrets, in one pass: the
    detectors' keywords, then every variant of every secret, then the mask marks, then
    the start of a server-sent event's `data:` line (`sse`: its number, -1 when the
    automaton is the detectors' alone).

    Built on an earlier `_Known` (`base`, e.g. the run's secrets before a test added
    one), it keeps the base's automaton and searches only the variants that automaton
    lacks with a small one of their own: adding a secret never rebuilds the large one.
    """

    __slots__ = ("added", "added_slots", "core", "first", "generation", "literals", "marks",
                 "patterns", "slots", "sse", "values")

    added: Literals | None  # the variants `literals` lacks, when built on a base
    added_slots: tuple[str, ...]
    core: dict[str, str]  # variant -> slot of what `literals` searches
    slots: tuple[str, ...]
    marks: int  # past `marks`: a mask mark, after which a shown part is looked for
    sse: int
    literals: Literals

    def __init__(self, detectors: Detectors, secrets: RunSecrets,
                 base: _Known | None = None) -> None:
        self.generation = secrets.generation  # read first: a later add makes it stale
        # Values long enough that 8 shown characters are only part of them.
        self.values: list[tuple[str, str]] = [
            (slot, value) for slot, value in secrets.values() if len(value) >= 12
        ]
        patterns = secrets.patterns()
        self.patterns: dict[str, str] = dict(patterns)  # variant -> slot
        self.first = len(detectors.keywords)
        self.added, self.added_slots = None, ()
        if base is not None and _extends(self.patterns, base.core):
            # Every variant the base automaton searches keeps its slot: it still serves.
            self.core, self.slots = base.core, base.slots
            self.marks, self.literals, self.sse = base.marks, base.literals, base.sse
            extra = [(variant, slot) for variant, slot in patterns if variant not in base.core]
            if extra:
                words = [variant for variant, _ in extra]
                if not base.core:  # the detectors' automaton alone: no mask marks in it
                    words.extend(_MASK_MARKS)
                self.added = Literals(words)
                self.added_slots = tuple(slot for _, slot in extra)
            return
        self.core = self.patterns
        self.slots = tuple(slot for _, slot in patterns)
        self.marks = self.first + len(patterns)
        self.sse = self.marks + len(_MASK_MARKS) if patterns else -1
        self.literals = (
            _literals(detectors, tuple(variant for variant, _ in patterns))
            if patterns else detectors.literals
        )


def _extends(patterns: Mapping[str, str], base: Mapping[str, str]) -> bool:
    """Whether `patterns` holds every variant of `base` under the same slot."""
    if len(patterns) < len(base):
        return False
    return all(patterns.get(variant) == slot for variant, slot in base.items())


@functools.lru_cache(maxsize=16)
def _literals(detectors: Detectors, variants: tuple[str, ...]) -> Literals:
    """The one automaton of `detectors`' keywords, these secret variants, the mask marks
    and the SSE line start.

    Shared by every redactor over the same secrets (one per test under the pytest plugin,
    each with a copy of the run's secrets): only a new set of secrets builds another.
    """
    return Literals(detectors.keywords + variants + _MASK_MARKS + (_SSE_MARK,))


# The one search over many texts (docs/performance.md): the texts joined by a character no
# literal holds, each one after it, so that a text's start is a literal too.
_SEP = "\x00"
_OPENS = (*(_SEP + c for c in "{[ \t\r\n"), _SEP + "data:")
_KEY_ENDS = ("\"", "'", "\\", " ", "\t", ":", "=")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_GATED_LENGTH = 4096  # longer texts are read alone: their own search is their only one
_GATED_DEPTH = 64
_LONG_NAME: Final = 1  # (`_plain_name`'s codes)
_NON_ASCII_NAME: Final = 2
_UNSEEN_NAME: Final = -2
_PLAIN_NAMES_MAX: Final = 65536
_UNMARKED_LENGTH: Final = 512  # (`_remember_unmarked`)
_UNMARKED_MAX: Final = 4096
# Credential names whose value is read as a text of pairs, not taken whole as one value.
_READ_AS_TEXT: Final = ("cookie", "set-cookie")


@functools.lru_cache(maxsize=16)
def _gate_of(literals: Literals) -> Literals:
    """`literals` with the start of an event line and the starts of a text that `_str`
    opens or reads as a stream (cached by the automaton's identity)."""
    return Literals(tuple(dict.fromkeys((*literals.patterns, _SSE_MARK, *_OPENS))))


def _hit_texts(
    hits: list[tuple[int, int, int]],
    texts: list[str],
    conditions: Mapping[int, tuple[tuple[str, ...], ...]] | None = None,
) -> set[int]:
    """The indexes of `texts` (joined as `_SEP + _SEP.join(texts)`) where `hits` start; a
    hit of a literal in `conditions` counts only in a text holding every literal one of
    its alternatives names."""
    starts = []
    at = 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    out = set()
    for number, start, _ in hits:
        index = bisect.bisect_right(starts, start) - 1
        needs = conditions.get(number) if conditions else None
        if needs is None or _meets(needs, texts[index]):
            out.add(index)
    return out


def _meets(needs: tuple[tuple[str, ...], ...], text: str) -> bool:
    """Whether `text` holds every literal of one of the alternatives in `needs`."""
    for need in needs:  # (loops, not generators: most hits are of an unmet condition)
        for literal in need:
            if literal not in text:
                break
        else:
            return True
    return False


def _unmet_dropped(
    hits: list[tuple[int, int, int]],
    conditions: Mapping[int, tuple[tuple[str, ...], ...]],
    joined: str,
) -> list[tuple[int, int, int]]:
    """`hits`, or none when every one is of a literal whose every alternative in
    `conditions` needs a literal that `joined` (all the texts) holds nowhere: no single
    text can hold it then (every URL holds `://`, few hold the `@` it needs)."""
    for number, _, _ in hits:
        needs = conditions.get(number)
        if needs is None or _meets(needs, joined):
            return hits  # (met somewhere: `_hit_texts` tells in which text)
    return []


@functools.lru_cache(maxsize=16)
def _gate_conditions(
    gate: Literals, detectors: Detectors
) -> dict[int, tuple[tuple[str, ...], ...]]:
    """`detectors.conditions` as numbers of `gate`, which starts with the detectors'
    keywords; a keyword that is also another of the gate's literals (a secret's variant
    spelled the same) is left out: its hits count whatever the text holds."""
    keywords = detectors.keywords
    later = set(gate.patterns[len(keywords):])
    return {
        number: needs for number, needs in detectors.conditions.items()
        if gate.patterns[number] == keywords[number] and keywords[number] not in later
    }


def _extra_rules(patterns: Mapping[str, str | re.Pattern[str]]) -> tuple[Rule, ...]:
    """A user's own detectors: rule name -> regular expression; the whole match is the secret."""
    rules = []
    for name, pattern in sorted(patterns.items()):
        try:
            compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        except re.error as exc:
            raise UsageError(
                f"extra pattern {name!r} is not a valid regular expression: {exc}"
            ) from None
        if compiled.match(""):
            raise UsageError(f"extra pattern {name!r} matches the empty string; it would "
                             "redact everything")
        if not grows_linearly(compiled):
            raise UsageError(
                f"extra pattern {name!r} is too slow on long input: its cost grows faster "
                "than linearly with the text (nested or overlapping repeats such as `(a+)+` "
                "or `[a-z]*x`); start it with a literal and bound each repeat, e.g. "
                "`acme_[0-9a-f]{16,64}`"
            )
        rules.append(Rule(name, compiled, ()))
    return tuple(rules)

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
        self._detect = detectors
        extra = {_norm(k) for k in sensitive_keys}
        safe = {_norm(k) for k in safe_keys}
        self._sensitive = (SENSITIVE_KEYS | extra) - safe
        self._sensitive_query = (SENSITIVE_QUERY_KEYS | self._sensitive) - safe
        self._safe = safe
        self._key_classes: dict[str, int] = {}
        # What `_plain_texts` makes of each member name it met (`_plain_name`).
        self._plain_names: dict[str, int] = {}
        # Short texts holding ':' or '=' in which a search found no credential-name mark.
        self._unmarked: set[str] = set()
        ours = re.escape(placeholder).replace(re.escape("{label}"), r"[A-Za-z0-9_.:\-]*")
        self._placeholder_re = re.compile(
            "|".join(
                sorted({ours, re.escape(DEFAULT_PLACEHOLDER), r"\[REDACTED:[A-Za-z0-9_.:\-]*\]"})
            )
        )
        self._placeholders_re = re.compile(f"(?:{self._placeholder_re.pattern})+")
        rules = (DEFAULT_RULES if detectors else ()) + _extra_rules(extra_patterns or {})
        self._detectors = _compiled_detectors(
            tuple((rule, rule.validate) for rule in rules),
            frozenset(self._sensitive),
            frozenset(self._sensitive_query - self._sensitive),
        )
        self._lock = threading.Lock()
        self._known: _Known | None = None
        # (slot, value) pairs `learn` passed over (short, or redacted-looking): a client
        # sends the same stand-in key on every call, judged once.
        self._passed_over: set[tuple[str, str]] = set()
        # (name, value) of credentials sent by name that `learn` has judged: every call of
        # a client sends the same key, and what was learned or passed over stays so.
        self._judged: set[tuple[str, str]] = set()
        # Header names `learn` has classed: all of them, and those that send a credential
        # by name. A client sends the same names on every call; the classes depend on the
        # configured names alone, so redactors `over` other secrets share them.
        self._header_names: set[str] = set()
        self._credential_headers: set[str] = set()
        self._gate_names = frozenset(self._sensitive | self._sensitive_query)
        # The default placeholders pass with the default rules and names (the test suite
        # checks it); reading them anyway would load detect-secrets for a rule that one of
        # them fires ("AC" in "REDACTED"), which a run may otherwise never need.
        if (placeholder not in (DEFAULT_PLACEHOLDER, LABELLED_PLACEHOLDER) or extra_patterns
                or extra):
            self._check_placeholder()

    def _check_placeholder(self) -> None:
        for label in ("X", "OPENAI_API_KEY", "authorization"):
            sample = self._placeholder_for(label)
            if self._raw_spans(sample, query=True):
                raise UsageError(
                    "Redactor(placeholder=...) must not look like a secret itself; "
                    "choose a plain marker such as [REDACTED]"
                )

    def over(self, secrets: RunSecrets) -> Redactor:
        """This redactor's settings over other run secrets (a test's copy of the run's).

        Nothing is compiled again: the detectors, placeholders and credential names are
        shared, and so is the known-value automaton while `secrets` holds exactly the
        values it was built from; a value added to `secrets` later rebuilds it for the
        new redactor alone.
        """
        if not isinstance(secrets, RunSecrets):
            raise UsageError(
                f"Redactor.over(...) takes a RunSecrets, not a {type(secrets).__name__}"
            )
        # This redactor's automaton, built now if it is not yet: every redactor over these
        # secrets or a copy of them shares it.
        known = self._current()
        other = object.__new__(Redactor)
        other.__dict__.update(self.__dict__)
        other._secrets = secrets  # the lock is shared too: none holds it while calling another
        other._judged = set()  # what is held depends on the secrets: judged anew over these
        # Shared while `secrets` holds the same values (a copy nobody has added to yet);
        # otherwise built at the first string it scans, on top of this one.
        other._known = known
        return other

    def __repr__(self) -> str:
        slots = 0 if self._secrets is None else len(self._secrets)
        return (
            f"Redactor(slots={slots}, placeholder={self.placeholder!r}, detectors={self._detect})"
        )

    # -- public helpers ---------------------------------------------------------------

    def is_sensitive_key(self, name: str) -> bool:
        """Whether a field, header or query parameter name holds a credential by name."""
        return self._key_class(name) == 1

    def is_placeholder(self, text: str) -> bool:
        """Whether `text` is one of our placeholders (labelled or not)."""
        return self._placeholder_re.fullmatch(text) is not None

    def _redacted(self, text: str) -> bool:
        """Whether `text` holds nothing but placeholders, spaces and punctuation (a field
        redacted in pieces): taking it out again would only relabel it."""
        if self._placeholders_re.fullmatch(text) is not None:
            return True
        if not self._placeholder_re.search(text):
            return False
        return _ALNUM.search(self._placeholder_re.sub("", text)) is None

    def redact(self, value: Any) -> Any:
        """A redacted copy of `value`: JSON-like data (keys and values), `str` or `bytes`."""
        try:
            return self._value(value, "", None, 0)
        except UsageError:
            # The fast walk does not track pointers; walk again to name where the bad value is.
            return self._value(value, "", [], 0)

    def findings(self, value: Any) -> list[Finding]:
        """What `redact(value)` would take out, by JSON pointer; values are masked."""
        found: list[Finding] = []
        self._value(value, "", found, 0)
        return sorted(
            set(found), key=lambda f: (f.pointer, f.start, f.end, f.rule, f.slot or "", f.preview)
        )

    def redact_text(self, text: str) -> str:
        """Redact one string (prose, a body, a URL, an SSE stream, embedded JSON)."""
        return self._str(text, "", None, 0)

    def redact_url(self, url: str) -> str:
        """Redact userinfo, credential query parameters and known values in a URL."""
        return self._str(url, "", None, 0, query=True)

    def learn(self, request: Any) -> int:
        """Take the credentials a request sends by name into the run's secrets.

        The value of every credential-named header, query parameter and field
        (`Authorization`, `x-api-key`, `api-key`, `x-goog-api-key`, `?key=`, `"api_key"`,
        a URL's password; a `Bearer`/`Token`/`Basic` scheme is taken off, a `Basic`
        credential decoded) joins the run secrets under the slot `learned:<name>`, with
        all its encoded variants, so an answer that echoes it is redacted like an
        environment variable's value. Placeholders and values shorter than the secrets'
        minimum length are passed over. Returns how many new values were learned.
        """
        found: list[tuple[str, str]] = []
        texts: list[str] = []
        # One walk takes the credentials sent by name and sets the texts aside; the texts
        # are read one by one only where one search over them all finds what a credential
        # in text needs (docs/performance.md). Otherwise they hold none, and `found` is
        # what the walk reading each text would have found, in the same order.
        self._credentials(self._named_headers_only(request), found, 0, texts)
        if texts and not self._texts_hold_no_credentials(texts):
            found = []
            self._credentials(request, found, 0)
        return self._learn_found(found)

    def learn_and_redact_kept(self, request: Any, part: Any) -> tuple[Any, bool]:
        """`learn(request)`, then `redact_kept(part)`, where `part` holds some members of
        the dict `request` as they are (`counted_part`): the members in `part` are walked
        once for both (docs/performance.md).

        When `part` is plain JSON data with no credential-named member or pair, what
        `learn` would find in it is only what its texts hold in text, and the texts
        `redact_kept` reads are those `learn` reads (and member names): the rest of
        `request` is walked as `learn` walks it, and one look at all the texts proves
        they hold no credential, or `learn` walks the whole request after all.
        """
        texts: list[str] = []
        marks: list[bool] = []
        if (type(request) is not dict or type(part) is not dict
                or not self._plain_texts(part, texts, 0, marks)):
            self.learn(request)
            return self.redact_kept(part)
        found: list[tuple[str, str]] = []
        read = texts
        if len(part) < len(request):
            rest = {name: item for name, item in request.items() if name not in part}
            named = self._named_headers_only(rest)
            if named is not rest and len(named) == 1 and self._sent_by_name(named, found):
                pass  # (the headers alone, each sending a credential by name)
            else:
                found.clear()
                rest_texts: list[str] = []
                self._credentials(named, found, 0, rest_texts)
                if rest_texts:
                    read = rest_texts + texts
        if read and not self._texts_hold_no_credentials(read):
            found = []
            self._credentials(request, found, 0)
        self._learn_found(found)
        return self._kept_texts(part, texts, marks)

    def _sent_by_name(self, named: dict[str, Any], found: list[tuple[str, str]]) -> bool:
        """Append what `_credentials` finds in `named` (`_named_headers_only`'s headers
        alone, each credential-named, every value a string): the headers as they are,
        where no cookie is among them (a cookie's value is read as a text) and `headers`
        itself names no credential; else False."""
        headers = named.get("headers")
        if type(headers) is not dict or self._key_class("headers") == 1:
            return False
        for name, value in headers.items():
            if _norm(name) in _READ_AS_TEXT:
                return False
            found.append((name, value))
        return True

    def _learn_found(self, found: list[tuple[str, str]]) -> int:
        """Take the (name, value) credentials `found` into the run's secrets (`learn`)."""
        judged = self._judged
        for pair in found:
            if pair not in judged:
                break
        else:  # (none, or each judged before: a client sends its key on every call)
            return 0
        secrets = self._secrets
        if secrets is None:
            with self._lock:
                if self._secrets is None:
                    self._secrets = RunSecrets({})
                secrets = self._secrets
        before = secrets.version
        passed_over = self._passed_over
        for name, value in found:
            if (name, value) in judged:
                continue  # every credential in it is held or passed over (secrets only grow)
            slot = f"learned:{_norm(name)}"
            for credential in _credential_values(value):
                if (slot, credential) in passed_over or secrets.holds(slot, credential):
                    continue  # judged before (every call of a client sends its key)
                if len(credential) < secrets.min_length or _looks_redacted(
                    credential, self.is_placeholder
                ) or self._redacted(credential):
                    if len(passed_over) < _PASSED_OVER_MAX:
                        passed_over.add((slot, credential))
                    continue
                secrets.learn(slot, credential)
            if len(judged) < _PASSED_OVER_MAX:
                judged.add((name, value))
        return secrets.version - before

    def _named_headers_only(self, request: Any) -> Any:
        """`request` with only its headers that send a credential by name, when one look
        at all the header values proves none of them holds a credential in text (as
        `_texts_hold_no_credentials` reasons: no value opens as a document or holds `@`
        or `%`, and where one holds `:` or `=`, no credential name is found in them);
        else `request` itself. The walk then finds what it would find with every header
        there, in the same order, without a step per header."""
        if type(request) is not dict:
            return request
        headers = request.get("headers")
        if type(headers) is not dict or len(headers) < 2:
            return request
        names = headers.keys()
        if not names <= self._header_names:
            for name in names - self._header_names:
                if type(name) is not str or len(self._header_names) >= _HEADER_NAMES_MAX:
                    return request
                if self._key_class(name) == 1:
                    self._credential_headers.add(name)
                self._header_names.add(name)
        try:
            joined = _SEP.join(headers.values())
        except TypeError:  # a value that is not a string: walked as it is
            return request
        if (len(joined) > _GATED_LENGTH or "@" in joined or "%" in joined
                or joined[:1] in ("{", "[") or _SEP + "{" in joined or _SEP + "[" in joined):
            return request
        if ":" in joined or "=" in joined:
            # Where only the host value holds ':' (a port) and no value holds '=', it is
            # the one value that could pair a name with a value: one already searched
            # and found to hold no credential name is not searched again.
            host = headers.get("host")
            host = host if type(host) is str else ""
            alone = "=" not in joined and joined.count(":") == host.count(":")
            if not alone or host not in self._unmarked:
                marks = self._name_marks()
                if marks is None or marks.find(_SEP + joined.lower()):
                    return request
                if alone:
                    self._remember_unmarked(host)
        named = names & self._credential_headers
        if len(named) > 1:
            kept = {name: value for name, value in headers.items() if name in named}
        else:
            kept = {name: headers[name] for name in named}
        return {**request, "headers": kept}

    def _credentials(
        self, value: Any, found: list[tuple[str, str]], depth: int,
        texts: list[str] | None = None,
    ) -> None:
        """(name, value) of every credential sent by name in a request. With `texts`, the
        texts that would be read for credentials are appended there instead."""
        if depth > MAX_NESTING:
            return
        kind = type(value)
        if kind is str:  # the common leaf, told apart without the abstract-class checks
            if len(value) >= 8:
                if texts is None:
                    self._text_credentials(value, found, depth)
                else:
                    texts.append(value)
            return
        if kind in _SCALARS:
            return
        if kind is dict or (kind is not list and isinstance(value, Mapping)):
            classes = self._key_classes
            for key, item in value.items():
                if type(key) is str:
                    klass = classes.get(key)
                    if klass is None:
                        klass = self._key_class(key)
                    sensitive = klass == 1
                else:
                    sensitive = isinstance(key, str) and self.is_sensitive_key(key)
                if sensitive and _norm(key) not in _READ_AS_TEXT:
                    if type(item) is str:  # (a header's: no generator for the one leaf)
                        found.append((key, item))
                    else:
                        found.extend((key, leaf) for leaf in _string_leaves(item))
                elif type(item) is str:  # the common leaf, read (or set aside) here
                    if len(item) >= 8 and depth < MAX_NESTING:
                        if texts is None:
                            self._text_credentials(item, found, depth + 1)
                        else:
                            texts.append(item)
                else:
                    self._credentials(item, found, depth + 1, texts)
        elif isinstance(value, (list, tuple)):
            if (len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str)
                    and self.is_sensitive_key(value[0])):
                found.append((value[0], value[1]))
                return
            for item in value:
                self._credentials(item, found, depth + 1, texts)
        elif isinstance(value, str) and len(value) >= 8:
            if texts is None:
                self._text_credentials(value, found, depth)
            else:
                texts.append(value)

    def _texts_hold_no_credentials(self, texts: list[str]) -> bool:
        """Whether `_text_credentials` finds nothing in any of `texts` (False: maybe it does).

        A credential in text needs one of: a JSON document to open (the text starts with
        `{` or `[`), a URL's userinfo (`@`), or a credential name followed by what ends a
        key in a quoted, line or query pair (a quote, a backslash, a space, a tab, `:` or
        `=`), in a text holding `:` or `=`; a percent escape could spell any name. Only the
        texts with one of those are read as the walk reads them; no name at all found in
        one search of the rest proves they hold none.
        """
        names = self._name_marks()
        if names is None:
            return False
        suspects: list[str] = []
        paired: list[str] = []
        unmarked = self._unmarked
        for text in texts:
            if text[0] in "{[" or "@" in text or "%" in text:
                suspects.append(text)
            elif ":" in text or "=" in text:
                if text in unmarked:
                    continue  # searched before (a client's URL): no credential name in it
                # a long text is read alone at once: the pair searches cost less than a
                # second pass of it lower-cased through the names
                (suspects if len(text) > _GATED_LENGTH else paired).append(text)
        if paired:
            # A key in text is ASCII, lower-cased by _norm as lower() lower-cases it here
            # (each text alone: lower() may change the length of a non-ASCII one).
            lowered = [text.lower() for text in paired]
            hits = names.find(_SEP + _SEP.join(lowered))
            marked = _hit_texts(hits, lowered) if hits else set()
            if marked:
                suspects.extend(paired[i] for i in sorted(marked))
            for i, text in enumerate(paired):
                if i not in marked:
                    self._remember_unmarked(text)
        for text in suspects:
            found: list[tuple[str, str]] = []
            self._text_credentials(text, found, 0)
            if found:
                return False
        return True

    def _remember_unmarked(self, text: str) -> None:
        """Remember that a search of the credential-name marks found none in `text` (a
        short ASCII one: a client sends the same URL and host on every call)."""
        if (len(text) <= _UNMARKED_LENGTH and text.isascii()
                and len(self._unmarked) < _UNMARKED_MAX):
            self._unmarked.add(text)

    def _name_marks(self) -> Literals | None:
        """Every spelling of every credential name (lower case, `-` or `_` between its
        parts) followed by each character that can end a key in text; None when a name has
        too many parts to spell out. Built once per set of names (`_names_gate_of`)."""
        return _names_gate_of(self._gate_names)

    def redact_lean(self, value: Any) -> Any:
        """`redact(value)`, or `value` itself (no copy) when redacting it changes nothing.

        For plain JSON data (exact dicts with string keys, lists, strings, numbers, bools,
        None) that holds no credential-named member or pair, one search over all its
        strings at once proves which of them redaction can change; only those are read one
        by one (docs/performance.md). Anything else is redacted as `redact` does.
        """
        return self.redact_kept(value)[0]

    def redact_kept(self, value: Any) -> tuple[Any, bool]:
        """`redact_lean(value)`, and whether it is `value` itself, unchanged, holding no
        float and only ASCII member names: data orjson's sorted output writes as RFC 8785
        does (the canonical scan then has nothing to find in it)."""
        texts: list[str] = []
        marks: list[bool] = []  # a float or a non-ASCII member name was met
        if not self._plain_texts(value, texts, 0, marks):
            return self.redact(value), False
        return self._kept_texts(value, texts, marks)

    def _kept_texts(self, value: Any, texts: list[str], marks: list[bool]) -> tuple[Any, bool]:
        """`redact_kept(value)` for plain `value`, whose texts and marks `_plain_texts`
        took."""
        for text in self._suspect_texts(texts) if texts else ():
            if self._str(text, "", None, 0) != text:
                return self.redact(value), False
        return value, not marks

    def _plain_texts(self, value: Any, texts: list[str], depth: int, marks: list[bool]) -> bool:
        """Append the strings of `value` that redaction reads (keys and values of 8 or more
        characters), and to `marks` when a float or a non-ASCII member name occurs; False
        when `value` is not plain JSON data or holds a credential-named member or pair,
        which the walk treats apart."""
        kind = type(value)
        if kind is not dict and kind is not list:  # (the walk reads its own leaves)
            if kind is str:
                if len(value) >= 8:
                    texts.append(value)
                return True
            if kind in _SCALARS:
                if kind is float:
                    marks.append(True)
                return True
            return False
        if depth > _GATED_DEPTH:
            return False
        items: Iterable[Any]
        if kind is dict:
            names = self._plain_names
            for key in value:
                code = names.get(key, _UNSEEN_NAME) if type(key) is str else -1
                if code:  # (a name that is new, long, not ASCII or not plain: rare)
                    if code == _UNSEEN_NAME:
                        code = self._plain_name(key)
                    if code < 0:
                        return False
                    if code & _LONG_NAME:
                        texts.append(key)
                    if code & _NON_ASCII_NAME:
                        marks.append(True)
            items = value.values()
        elif len(value) == 2 and type(value[0]) is str and self._key_class(value[0]) == 1:
            return False  # a [name, value] pair of a credential
        else:
            items = value
        for item in items:  # (the members' values, or the list's items)
            kind = type(item)
            if kind is str:
                if len(item) >= 8:
                    texts.append(item)
            elif kind is float:
                marks.append(True)
            elif kind not in _SCALARS and not self._plain_texts(item, texts, depth + 1, marks):
                return False
        return True

    def _plain_name(self, key: str) -> int:
        """What `_plain_texts` makes of a member name: -1 when it names a credential (or
        may: class 2), else `_LONG_NAME` when it is read as a text and `_NON_ASCII_NAME`
        when it is not ASCII. Remembered per name (a client sends the same few)."""
        if self._key_class(key):
            return -1
        code = (_LONG_NAME if len(key) >= 8 else 0) | (0 if key.isascii() else _NON_ASCII_NAME)
        if len(self._plain_names) < _PLAIN_NAMES_MAX:
            self._plain_names[key] = code
        return code

    def _suspect_texts(self, texts: list[str]) -> list[str]:
        """The texts whose redaction may differ from them: those in which one search over
        all the short ones finds a detector keyword, a secret's variant, a mask mark or the
        start of a server-sent event, or that start as a document to open (`{`, `[`,
        white space, base64) or an event (`data:`), or hold a percent escape; and every
        long text (its own search in `_str` is the one search it gets)."""
        if not self._detectors.keyed_only:
            return texts  # a rule without keywords reads every text
        suspects: list[str] = []
        short: list[str] = []
        for text in texts:
            if len(text) > _GATED_LENGTH or (
                # a base64 text is opened when its decoded text would change (a text
                # with a space is none: prose is told apart without the regex)
                len(text) >= 16 and " " not in text and _B64_TEXT.fullmatch(text)
                and self._open_b64(text, "", None, 0) is not None
            ):
                suspects.append(text)
            else:
                short.append(text)
        if not short:
            return suspects
        joined = _SEP + _SEP.join(short)
        known = self._current()
        literals = known.literals if known is not None else self._detectors.literals
        gate = _gate_of(literals)
        hits = gate.find(joined)
        conditions = _gate_conditions(gate, self._detectors)
        if hits and conditions:
            hits = _unmet_dropped(hits, conditions, joined)
        flagged = _hit_texts(hits, short, conditions) if hits else set()
        if known is not None and known.added is not None:
            more = known.added.find(joined)
            if more:
                flagged |= _hit_texts(more, short)
        if "%" in joined:
            flagged.update(i for i, text in enumerate(short) if _ESCAPE.search(text))
        if flagged:
            suspects.extend(short[i] for i in sorted(flagged))
        return suspects

    def _text_credentials(self, text: str, found: list[tuple[str, str]], depth: int) -> None:
        if text[:1] in ("{", "[") and depth < _MAX_DEPTH:
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                data = None
            if isinstance(data, (dict, list)):
                self._credentials(data, found, depth + 1)
                return
        if "@" in text and "://" in text:  # "@" first: one byte is found at memory speed
            for match in _URL_USERINFO.finditer(text):
                found.append(("url-password", _unquote(match.group(1))))
        if "=" in text or ":" in text:
            for span in self._keyed_spans(text, query=True):
                if span.slot not in _READ_AS_TEXT:
                    found.append((span.slot or "credential", _unquote(text[span.start:span.end])))

    def redact_headers(self, headers: Mapping[str, Any]) -> dict[str, Any]:
        """Redact a header map: credential-named headers whole, any other value as text."""
        return {
            str(name): self._value(value, pointer_join("", str(name)), None, 0)
            if not self.is_sensitive_key(str(name))
            else self._whole(value, pointer_join("", str(name)), None, str(name))
            for name, value in headers.items()
        }

    def redact_stream(self, chunks: Sequence[Any]) -> list[Any]:
        """Redact recorded stream chunks, including secrets split across consecutive chunks.

        Chunks are JSON values (the same field of consecutive chunk objects, e.g.
        `choices[0].delta.content`, is read as one text) or SSE texts/bytes (consecutive
        `data:` events are read the same way).
        """
        previous = list(chunks)
        out = self._stream_once(previous)
        # Taking one span out can join text that now reads as another (a newline inside a
        # key-value pair, say); repeat until stable so redact_stream is idempotent. A clean
        # stream comes back equal after the first pass and costs no second one.
        for _ in range(_MAX_PASSES):
            if out == previous:
                break
            previous, out = out, self._stream_once(out)
        return out

    def stream_findings(self, chunks: Sequence[Any]) -> list[Finding]:
        """What `redact_stream(chunks)` would take out, by `/<chunk index><pointer>`: each
        chunk's own findings and the secrets split across consecutive chunks (a split one
        is reported in every chunk it runs through, from where it starts)."""
        found: list[Finding] = []
        # each chunk is read as it is after the split secrets were taken out (as
        # `redact_stream` does): the start of a split key alone is no finding of its own
        values = self._stream_pass(list(chunks), "", found)
        for index, chunk in enumerate(values):
            self._value(chunk, pointer_join("", index), found, 0)
        return sorted(
            set(found), key=lambda f: (f.pointer, f.start, f.end, f.rule, f.slot or "", f.preview)
        )

    def _stream_once(self, chunks: list[Any]) -> list[Any]:
        textual = all(isinstance(c, (str, bytes)) for c in chunks)
        if chunks and textual and any(_looks_sse(_as_text(c)) for c in chunks):
            # Split secrets first, on the original text: redacting chunk by chunk could
            # take out half a key and leave the other half unrecognisable.
            joined = self._sse_pass([_as_text(c) for c in chunks])
            rejoined: list[Any] = [
                joined[i].encode("utf-8", "surrogateescape") if isinstance(c, bytes) else joined[i]
                for i, c in enumerate(chunks)
            ]
            return [self.redact(c) for c in rejoined]
        return [self.redact(c) for c in self._stream_pass(chunks)]

    # -- the known-value automaton ----------------------------------------------------

    def _current(self) -> _Known | None:
        """The literals to search for the run secrets as they are now (None: no secrets)."""
        secrets = self._secrets
        if secrets is None:
            return None
        known = self._known
        if known is None or known.generation is not secrets.generation:
            with self._lock:
                known = self._known
                if known is None or known.generation is not secrets.generation:
                    known = self._known = _Known(self._detectors, secrets, known)
        return known

    # -- placeholders -----------------------------------------------------------------

    def _placeholder_for(self, label: str | None) -> str:
        if not self._labelled:
            return self.placeholder
        clean = re.sub(r"[^A-Za-z0-9_.:\-]", "_", label or "secret")
        if label and (self._raw_spans(label) or self._raw_spans(clean)):
            clean = "secret"  # a member name that is itself a secret never labels its value
        return self.placeholder.replace("{label}", clean)

    # -- walking data -----------------------------------------------------------------

    def _value(self, value: Any, pointer: str, found: list[Finding] | None, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            return self._str(value, pointer, found, depth)
        if kind in _SCALARS:
            return value
        if kind is dict or (kind is not list and isinstance(value, Mapping)):
            return self._mapping(value, pointer, found, depth)
        if kind is list or isinstance(value, (list, tuple)):
            return self._sequence(value, pointer, found, depth)
        if isinstance(value, str):
            return self._str(str(value), pointer, found, depth)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("utf-8", "surrogateescape")
            redacted = self._str(text, pointer, found, depth)
            out = redacted.encode("utf-8", "surrogateescape")
            return out if isinstance(value, bytes) else bytearray(out)
        if isinstance(value, (SecretStr, SecretBytes)):
            self._note(found, pointer, 0, 0, "secret-type", None, "")
            return self._placeholder_for("secret")
        if isinstance(value, BaseModel):
            return self._value(value.model_dump(mode="json"), pointer, found, depth)
        raise UsageError(
            f"cannot redact a {type(value).__name__} at {shown_pointer(pointer) or '(root)'}: "
            "pass JSON-like "
            "data (dict, list, str, number, bool, None), str or bytes"
        )

    def _sequence(
        self, value: Sequence[Any], pointer: str, found: list[Finding] | None, depth: int
    ) -> list[Any] | tuple[Any, ...]:
        track = found is not None
        items = [
            item
            if type(item) in _SCALARS
            else self._value(item, f"{pointer}/{i}" if track else "", found, depth)
            for i, item in enumerate(value)
        ]
        if len(items) == 2 and isinstance(value, list) and self._pair_is_sensitive(items):
            child = pointer_join(pointer, 1) if track else ""
            items[1] = self._whole(value[1], child, found, items[0])
        return items if isinstance(value, list) else tuple(items)

    def _key_class(self, key: str) -> int:
        """0: an ordinary name, 1: a credential by name, 2: credential-ish (entropy applies)."""
        cached = self._key_classes.get(key)
        if cached is None:
            norm = _norm(key)
            if norm in self._sensitive:
                cached = 1
            elif norm not in self._safe and _FUZZY_CREDENTIAL.search(norm):
                cached = 2
            else:
                cached = 0
            if len(self._key_classes) < 65536:
                self._key_classes[key] = cached
        return cached

    def _mapping(
        self, value: Mapping[Any, Any], pointer: str, found: list[Finding] | None, depth: int
    ) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        track = found is not None
        for key, item in value.items():
            if not track:
                child = ""
            elif type(key) is str and "~" not in key and "/" not in key:
                child = f"{pointer}/{key}"  # nothing to escape (pointer_join's result)
            else:
                child = pointer_join(pointer, str(key))
            if type(key) is not str:
                out[key] = (
                    item if type(item) in _SCALARS else self._value(item, child, found, depth)
                )
                continue
            new_key = key
            if len(key) >= 8:
                new_key = self._str(key, child, found, depth)
                if new_key != key and new_key in out:
                    n = 2
                    while f"{new_key}~{n}" in out:
                        n += 1
                    new_key = f"{new_key}~{n}"
            klass = self._key_class(key)
            if klass == 1:
                out[new_key] = self._whole(item, child, found, key)
            elif (
                klass == 2
                and self._detect
                and type(item) is str
                and not self._redacted(item)
                and looks_high_entropy(item)
            ):
                self._note(found, child, 0, len(item), "high-entropy", None, item)
                out[new_key] = self._placeholder_for(_norm(key))
            elif type(item) in _SCALARS:
                out[new_key] = item
            else:
                out[new_key] = self._value(item, child, found, depth)
        return out

    def _pair_is_sensitive(self, items: list[Any]) -> bool:
        first = items[0]
        return isinstance(first, str) and self.is_sensitive_key(first)

    def _whole(self, value: Any, pointer: str, found: list[Finding] | None, key: str) -> Any:
        """The value of a credential-named field: every non-empty leaf becomes a placeholder."""
        if isinstance(value, str):
            if not value or self._redacted(value):
                return value
            self._note(found, pointer, 0, len(value), "sensitive-key", None, value)
            return self._placeholder_for(_norm(key))
        if isinstance(value, (bytes, bytearray)):
            if not value:
                return value
            self._note(found, pointer, 0, len(value), "sensitive-key", None, "")
            return self._placeholder_for(_norm(key)).encode()
        if isinstance(value, Mapping):
            # Values go whole; the keys (cookie names, say) are ordinary text to scan.
            out: dict[Any, Any] = {}
            for k, v in value.items():
                child = pointer_join(pointer, str(k))
                new_key = self._str(k, child, found, 0) if type(k) is str else k
                out[new_key] = self._whole(v, child, found, key)
            return out
        if isinstance(value, (list, tuple)):
            items = [
                self._whole(v, pointer_join(pointer, i), found, key) for i, v in enumerate(value)
            ]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._note(found, pointer, 0, 0, "sensitive-key", None, "")
            return self._placeholder_for(_norm(key))
        return self._value(value, pointer, found, 0)

    def _note(
        self,
        found: list[Finding] | None,
        pointer: str,
        start: int,
        end: int,
        rule: str,
        slot: str | None,
        secret: str,
    ) -> None:
        if found is not None:
            found.append(Finding(pointer, rule, slot, mask(secret), start, end))

    # -- strings ----------------------------------------------------------------------

    def _str(
        self,
        text: str,
        pointer: str,
        found: list[Finding] | None,
        depth: int,
        *,
        query: bool = False,
    ) -> str:
        if len(text) < 8:
            return text
        if depth < _MAX_DEPTH and (text[0] in "{[ \t\r\n" or _B64_TEXT.fullmatch(text)):
            opened = self._open(text, pointer, found, depth)
            if opened is not None:
                text = opened
        searched: _Searched | None = None
        if depth < _MAX_DEPTH:
            # The one search of the text also tells whether it is a server-sent-event
            # stream; the first scan below reuses it when the stream pass changed nothing.
            known = self._current()
            if known is None or known.sse < 0:
                sse = _looks_sse(text)
            else:
                hits = known.literals.find(text)
                searched = (known, hits)
                at = known.sse
                sse = text.startswith("data:") or any(hit[0] == at for hit in hits)
            if sse:
                streamed = self._sse_pass([text], pointer, found)[0]
                if streamed is not text:
                    text, searched = streamed, None
        # A redaction can free its neighbour: a key glued to another one only stands alone
        # once the first became a placeholder. Rescan until nothing changes (a fixpoint,
        # so redact() is idempotent); placeholders are never redacted again.
        for _ in range(_MAX_PASSES):
            spans = self._scan(text, query=query, searched=searched)
            searched = None
            if not spans:
                break
            text = self._apply(text, spans, pointer, found)
        return text

    def _open(self, text: str, pointer: str, found: list[Finding] | None, depth: int) -> str | None:
        """Redact inside a JSON document or a base64 text held in a string; None if neither."""
        head = text.lstrip()[:1]
        if head in ("{", "["):
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):  # nested too deeply to open: scan as text
                return None
            if not isinstance(data, (dict, list)) or (
                # a text with fewer brackets than the limit cannot nest deeper than it
                text.count("{") + text.count("[") > MAX_NESTING and nesting_exceeds(data)
            ):
                return None
            redacted = self._value(data, pointer, found, depth + 1)
            if redacted == data:
                return text
            compact = ", " not in text and ": " not in text
            return json.dumps(
                redacted,
                ensure_ascii=False,
                separators=(",", ":") if compact else None,
                indent=_indent_of(text),
            )
        if _B64_TEXT.fullmatch(text):
            return self._open_b64(text, pointer, found, depth)
        return None

    def _open_b64(
        self, text: str, pointer: str, found: list[Finding] | None, depth: int
    ) -> str | None:
        urlsafe = "-" in text or "_" in text
        body = text.rstrip("=")
        try:
            raw = (base64.urlsafe_b64decode if urlsafe else base64.b64decode)(
                body + "=" * (-len(body) % 4)
            )
            decoded = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            return None
        if len(decoded) < 8 or not all(c.isprintable() or c in "\r\n\t" for c in decoded):
            return None
        redacted = self._str(decoded, pointer, None, depth + 1)
        if redacted == decoded:
            return None
        self._note(found, pointer, 0, len(text), "base64-text", None, "")
        encoded = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(redacted.encode())
        out = encoded.decode("ascii")
        return out if text.endswith("=") or len(body) % 4 == 0 else out.rstrip("=")

    def _raw_spans(
        self, text: str, *, query: bool = False, searched: _Searched | None = None
    ) -> list[Span]:
        if searched is None:
            known = self._current()
            hits = known.literals.find(text) if known is not None else []
        else:
            known, hits = searched
        if known is None:
            found, hinted = self._detectors.scan(text)
            spans = found
        elif (not hits and known.added is None and self._detectors.keyed_only
              and "%" not in text):
            # No keyword, known value or mask mark occurs, every rule is gated on its
            # keywords and there is no percent-decoded view to read: nothing can match.
            return []
        else:
            # One pass finds the detectors' keywords, the known values and the mask marks.
            spans = []
            first, marks, sse, slots = known.first, known.marks, known.sse, known.slots
            masked: list[int] = []
            for index, start, end in hits:
                if index >= first:
                    if index < marks:
                        spans.append(Span(start, end, "known-value", slots[index - first]))
                    elif index != sse:
                        masked.append(start)
            if known.added is not None:
                # The secrets added since the large automaton was built (past them, the
                # mask marks when that automaton has none).
                added = known.added_slots
                for index, start, end in known.added.find(text):
                    if index < len(added):
                        spans.append(Span(start, end, "known-value", added[index]))
                    else:
                        masked.append(start)
            if masked and known.values:
                spans.extend(self._masked_parts(text, known.values, masked))
            found, hinted = self._detectors.scan(text, hits)
            if found:
                spans.extend(found)
        if hinted:
            spans.extend(self._keyed_spans(text, query=query))
        return spans

    @staticmethod
    def _masked_parts(text: str, values: list[tuple[str, str]], marks: list[int]) -> list[Span]:
        """The first or last 8+ characters of a known secret shown next to an ellipsis or a
        mask (`sk-…abcd1234`, `****abcd1234`, `sk-proj-abcd…`): a preview is still a part.
        `marks` are where the mask marks occur: only around them is the text read."""
        out: list[Span] = []
        for match in matches_near(_MASKED_TAIL, text, marks, _MASK_MARKS):
            shown, start = match.group(1), match.start(1)
            for slot, value in values:
                for length in range(min(len(shown), len(value) - 1), 7, -1):
                    if value.endswith(shown[:length]):
                        out.append(Span(start, start + length, "known-value", slot))
                        break
        heads = [at for at in marks if _shown_before(text, at)]
        for match in matches_near(_MASKED_HEAD, text, heads, _MASK_MARKS) if heads else ():
            shown, start = match.group(1), match.start(1)
            for slot, value in values:
                for skip in range(0, len(shown) - 7):
                    if len(shown) - skip < len(value) and value.startswith(shown[skip:]):
                        out.append(Span(start + skip, match.end(1), "known-value", slot))
                        break
        return out

    def _scan(
        self, text: str, *, query: bool = False, searched: _Searched | None = None
    ) -> list[Span]:
        spans = self._raw_spans(text, query=query, searched=searched)
        if not spans:
            return spans
        if "[REDACTED" in text or self._labelled or self.placeholder != DEFAULT_PLACEHOLDER:
            marks = [m.span() for m in self._placeholder_re.finditer(text)]
            if marks:
                spans = [
                    s
                    for s in spans
                    if not any(a <= s.start and s.end <= b for a, b in marks)
                    and not self._redacted(text[s.start : s.end])
                ]
        return spans

    def _keyed_spans(self, text: str, *, query: bool) -> list[Span]:
        out: list[Span] = []
        for match in _quoted_pairs(text):
            if self.is_sensitive_key(match.group("key")):
                out.append(self._val_span(match, "sensitive-key"))
        for match in _line_pairs(text):
            if self.is_sensitive_key(match.group("key")) and match.group("val"):
                out.append(self._val_span(match, "sensitive-key"))
        for match in _query_pairs(text):
            key = _norm(_unquote(match.group("key")))
            in_query = match.start() > 0 and text[match.start() - 1] in "?&;"
            names = self._sensitive_query if (in_query or query) else self._sensitive
            if key in names:
                out.append(self._val_span(match, "sensitive-key"))
        return [s for s in out if s.end > s.start and not self._redacted(text[s.start : s.end])]

    @staticmethod
    def _val_span(match: re.Match[str], rule: str) -> Span:
        start, end = match.span("val")
        return Span(start, end, rule, _norm(match.group("key")))

    def _apply(
        self, text: str, spans: list[Span], pointer: str, found: list[Finding] | None
    ) -> str:
        spans.sort(key=lambda s: (s.start, -s.end, s.rule, s.slot or ""))
        merged: list[Span] = []
        for span in spans:
            if merged and span.start < merged[-1].end:
                last = merged[-1]
                rule, slot = last.rule, last.slot
                if rule in NEAR_MISS_RULES and span.rule not in NEAR_MISS_RULES:
                    rule, slot = span.rule, span.slot  # a near miss is the weakest reason
                if span.end > last.end or rule != last.rule:
                    merged[-1] = Span(last.start, max(span.end, last.end), rule, slot)
                continue
            merged.append(span)
        parts: list[str] = []
        cursor = 0
        for span in merged:
            parts.append(text[cursor : span.start])
            label = span.slot if span.slot is not None else span.rule
            parts.append(self._placeholder_for(label))
            self._note(
                found,
                pointer,
                span.start,
                span.end,
                span.rule,
                span.slot if span.rule == "known-value" else None,
                text[span.start : span.end],
            )
            cursor = span.end
        parts.append(text[cursor:])
        return "".join(parts)

    # -- streams ----------------------------------------------------------------------

    def _stream_pass(
        self, chunks: list[Any], pointer: str = "", found: list[Finding] | None = None
    ) -> list[Any]:
        """Find secrets that only appear when a field is read across consecutive chunks.

        Runs on the original chunks (before each is redacted alone): a key cut in two can
        only be recognised whole. Only spans that cross a chunk boundary are applied here.
        """
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
            spans = self._scan(joined)
            if not spans:
                continue
            bounds: list[int] = []
            offset = 0
            for _, text in pieces:
                bounds.append(offset)
                offset += len(text)
            crossing = _merged(
                [s for s in spans if any(s.start < b < s.end for b in bounds[1:])]
            )
            if not crossing:
                continue
            for k, (index, text) in enumerate(pieces):
                lo = bounds[k]
                hi = lo + len(text)
                # One placeholder, in the piece where the secret starts; the pieces it runs
                # on into lose their share, so the pieces joined read like the whole text
                # redacted (docs/decisions/0013).
                local = [
                    Span(s.start - lo, min(s.end, hi) - lo, s.rule, s.slot)
                    for s in crossing
                    if lo <= s.start < hi
                ]
                tail = [s for s in crossing if s.start < lo < s.end]
                if not local and not tail:
                    continue
                where = pointer or _pointer_of((index, *path))
                cut = 0
                if tail:  # merged spans: at most one runs on into this piece
                    cut = min(tail[0].end, hi) - lo
                    label = tail[0].slot if tail[0].rule == "known-value" else None
                    self._note(found, where, 0, cut, tail[0].rule, label, text[:cut])
                applied = self._apply(text, local, where, found) if local else text
                edits.setdefault(index, {})[path] = applied[cut:]
        if not edits:
            return chunks
        return [
            _replace_leaves(chunk, (), edits[index]) if index in edits else chunk
            for index, chunk in enumerate(chunks)
        ]

    def _sse_pass(
        self, texts: list[str], pointer: str = "", found: list[Finding] | None = None
    ) -> list[str]:
        """The stream pass over the `data:` events of SSE texts, rewriting changed events."""
        events: list[tuple[int, int, int, Any, bool]] = []
        for index, text in enumerate(texts):
            for match in _SSE_LINE.finditer(text):
                payload = match.group("payload")
                is_json = False
                value: Any = payload
                if payload[:1] in ("{", "["):
                    try:
                        value = json.loads(payload)
                        is_json = not nesting_exceeds(value)
                    except (ValueError, RecursionError):
                        value = payload
                    if not is_json:
                        value = payload
                start, end = match.span("payload")
                events.append((index, start, end, value, is_json))
        if len(events) < 2:
            return texts
        values = [e[3] for e in events]
        local: list[Finding] | None = None if found is None else []
        redacted = self._stream_pass(values, "", local)
        if redacted is values:
            return texts
        if found is not None and local:
            # Offsets of a split secret point at the payload of the event it starts in.
            for finding in local:
                event = events[int(finding.pointer.split("/")[1])]
                found.append(
                    Finding(pointer, finding.rule, finding.slot, finding.preview, *event[1:3])
                )
        out = list(texts)
        for (index, start, end, value, is_json), new in reversed(
            list(zip(events, redacted, strict=False))
        ):
            if new == value:
                continue
            payload = json.dumps(new, ensure_ascii=False, separators=(",", ":")) if is_json else new
            out[index] = out[index][:start] + payload + out[index][end:]
        return out


# Each alternative opens with its character alone (`\.\.{2,7}` is `\.{3,8}`), so that `re`
# skips ahead to the next mask character instead of trying every alternative at every
# position: about nine times faster over text with few of them.
_MASK = r"(?:…|\.\.{2,7}|\*\*{2,63}|••{1,63}|xx{3,63}|XX{3,63})"
# Marks that show a value was cut or masked: only next to one is a shown part looked for.
_MASK_MARKS = ("…", "...", "***", "••", "xxxx", "XXXX")
# Where a server-sent event's data line starts (a stream held in one string); one starting
# the text itself is seen with `str.startswith`.
_SSE_MARK = "\ndata:"
_MASKED_TAIL = re.compile(_MASK + r"([A-Za-z0-9_\-+/=]{8,256})")
_MASKED_HEAD = re.compile(r"(?<![A-Za-z0-9_\-+/=])([A-Za-z0-9_\-+/=]{8,256}?)" + _MASK)
_SHOWN_EIGHT = re.compile(r"[A-Za-z0-9_\-+/=]{8}")
# How far before a mark its mask can start (the mask's longest run less the mark's length).
_MASK_BEFORE = {".": 8 - 3, "*": 64 - 3, "•": 64 - 2}
_URL_USERINFO = re.compile(r"://[^\s/?#@:\"'<>]{0,256}:([^\s/?#\"'<>]{1,256})@")
_SCHEMED = re.compile(r"^\s*(?P<scheme>[A-Za-z][A-Za-z0-9_\-]{0,20})\s+(?P<cred>\S+)\s*$")
# AWS SigV4: `AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/<service>/…,
# SignedHeaders=…, Signature=…`; the access key id is the credential that travels.
_SIGV4 = re.compile(r"^\s*AWS4-[A-Z0-9\-]{1,32}\s+Credential=(?P<cred>[^/,\s]{1,256})/")


def _shown_before(text: str, at: int) -> bool:
    """Whether the mask mark at `at` can end a shown part (`_MASKED_HEAD`): eight shown
    characters before the mask that holds it. A `.`, `*` or `•` mask starts where its run
    does, at most `_MASK_BEFORE` before the mark; an `x` or `X` mask may start past shown
    x's, so the eight characters before the mark itself are what counts, as for `…`.
    Every match of `_MASKED_HEAD` holds a mark this passes, so only those need windows."""
    mark = text[at]
    end = at
    reach = _MASK_BEFORE.get(mark)
    if reach is not None:
        while end > 0 and text[end - 1] == mark:
            end -= 1
            if at - end > reach:
                return False  # the mask of a shown part starts later, at another mark
    return end >= 8 and _SHOWN_EIGHT.fullmatch(text, end - 8, end) is not None


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _string_leaves(item)]
    return []


def _credential_values(value: str) -> list[str]:
    """The secret parts of a credential as sent: without its auth scheme; a `Basic`
    credential decoded to its password (its base64 forms are among the variants); the
    access key id of an AWS SigV4 `Authorization`."""
    value = value.strip()
    signed = _SIGV4.match(value)
    if signed is not None:
        return [signed.group("cred")]
    match = _SCHEMED.match(value)
    if match is None:
        return [value] if value and not any(c.isspace() for c in value) else []
    scheme, credential = match.group("scheme"), match.group("cred")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credential + "=" * (-len(credential) % 4), validate=True)
        except (binascii.Error, ValueError):
            return [credential]
        _user, colon, password = decoded.decode("utf-8", "surrogateescape").partition(":")
        return [password, credential] if colon and password else [credential]
    return [credential]


# --- helpers ----------------------------------------------------------------------------


def _merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans as one each (the first one's rule and label), in order."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end, s.rule, s.slot or "")):
        if out and span.start < out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, span.end), last.rule, last.slot)
        else:
            out.append(span)
    return out


@functools.lru_cache(maxsize=32)
def _names_gate_of(names: frozenset[str]) -> Literals | None:
    """The automaton of `Redactor._name_marks` for these credential names.

    Shared by every redactor with the same names, as the detectors are (one redactor per
    test under the pytest plugin): building it costs milliseconds, a test far less.
    """
    words: list[str] = []
    for name in sorted(names):
        parts = name.split("-")
        if len(parts) > 9:
            return None
        for seps in itertools.product("-_", repeat=len(parts) - 1):
            tail = zip(seps, parts[1:], strict=True)
            spelled = parts[0] + "".join(sep + part for sep, part in tail)
            words.extend(spelled + end for end in _KEY_ENDS)
    return Literals(words)


@functools.lru_cache(maxsize=32)
def _compiled_detectors(
    rules: tuple[tuple[Rule, Callable[[str], bool] | None], ...],
    sensitive: frozenset[str],
    query_only: frozenset[str],
) -> Detectors:
    """The detector automaton for these rules and credential names, built once per run.

    A `Detectors` is immutable and thread-safe after it is built, so every `Redactor`
    with the same rules and names (one per test under the pytest plugin) shares it.
    The key holds each rule's `validate` too, which rule equality leaves out. Names
    only, never secret values, are in the key.
    """
    return Detectors(
        tuple(rule for rule, _ in rules),
        hints=_hint_words(sensitive) + _hint_words(n + "=" for n in query_only),
    )


def _hint_words(names: Iterable[str]) -> list[str]:
    """Literals that must occur for a credential name to be in a text, in common spellings."""
    words: set[str] = set()
    for name in names:
        parts = [p for p in re.split(r"[-_]", name) if p]
        for sep in ("-", "_", ""):
            for form in (
                sep.join(parts),
                sep.join(p.upper() for p in parts),
                sep.join(p.capitalize() for p in parts),
                parts[0] + "".join(p.capitalize() for p in parts[1:]),
            ):
                words.add(form)
    return sorted(w for w in words if len(w) >= 3)


def _unquote(text: str) -> str:
    if "%" not in text:
        return text
    from urllib.parse import unquote

    return unquote(text)


def _as_text(chunk: Any) -> str:
    return chunk.decode("utf-8", "surrogateescape") if isinstance(chunk, bytes) else str(chunk)


def _looks_sse(text: str) -> bool:
    return text.startswith("data:") or _SSE_MARK in text


def _indent_of(text: str) -> int | None:
    match = re.match(r"[\[{]\r?\n( +)", text.lstrip())
    return len(match.group(1)) if match else None


def _pointer_of(path: tuple[Any, ...]) -> str:
    pointer = ""
    for token in path:
        pointer = pointer_join(pointer, token)
    return pointer


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


def _replace_leaves(value: Any, path: tuple[Any, ...], edits: Mapping[tuple[Any, ...], str]) -> Any:
    if isinstance(value, str):
        return edits.get(path, value)
    if isinstance(value, Mapping):
        return {key: _replace_leaves(item, (*path, key), edits) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_leaves(item, (*path, i), edits) for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return tuple(_replace_leaves(item, (*path, i), edits) for i, item in enumerate(value))
    return value
