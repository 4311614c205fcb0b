"""The store lookup: which recorded outcome a call replays, and where a recorded one goes.

Every read and write of a call's outcome happens here: replay and auto read by the call's
key; record writes, and a repeat of a call recorded in this run replays what was written;
a miss is reported with the nearest recorded call of its kind and what differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Literal, Protocol

from .._errors import (
    ExpiredFixtureError,
    ExpiredFixtureWarning,
    MissingFixtureError,
    VolatileValueWarning,
    warn_at_caller,
)
from ..fixtures._age import ExpiryAction, FixtureAges, format_duration
from ..fixtures._answers import AnswerNormalizer, normalize_answer
from ..fixtures._format import Fixture
from ..fixtures._store import FixtureStore, replay_reader
from ..keys._canonical import pointer_join
from ..keys._keys import find_volatile
from ..redact._redactor import shown_pointer
from ._codec import StreamRedactor
from ._keying import UNREAD, Call
from ._modes import Mode

__all__ = ["CallLog", "Outcome", "StoreLookup", "format_diff", "material_diff", "preview"]

Outcome = Literal["replayed", "recorded", "missing"]

_DIFF_LINES = 12  # differences a miss shows: with the message, one screen
_WIDTH = 40  # characters of each side of a difference
_CONTEXT = 12  # characters kept before the first one that differs


class CallLog(Protocol):
    """Where calls are reported (`redactkey.RunReport` is one)."""

    def note(self, outcome: Outcome, kind: str, key: str, *, file: str, store: str,
             label: str | None = None) -> None:
        """One call: replayed from `file`, recorded to it, or missing from `store`."""


Difference = tuple[str, str, Any, Any]  # (what, JSON pointer, old, new)


def material_diff(recorded: Any, wanted: Any, pointer: str = "") -> list[Difference]:
    """Leaf-level differences between two key materials: (what, JSON pointer, old, new)."""
    if isinstance(recorded, dict) and isinstance(wanted, dict):
        names: Iterable[Any] = sorted(set(recorded) | set(wanted))
    elif isinstance(recorded, list) and isinstance(wanted, list):
        names = range(max(len(recorded), len(wanted)))
    elif type(recorded) is not type(wanted) or recorded != wanted:
        return [("changed", pointer, recorded, wanted)]
    else:
        return []
    out: list[Difference] = []
    for name in names:
        child = pointer_join(pointer, name)
        has_old = name in recorded if isinstance(recorded, dict) else name < len(recorded)
        has_new = name in wanted if isinstance(wanted, dict) else name < len(wanted)
        if not has_old:
            out.append(("added", child, None, wanted[name]))
        elif not has_new:
            out.append(("removed", child, recorded[name], None))
        else:
            out.extend(material_diff(recorded[name], wanted[name], child))
    return out


def preview(value: Any, redactor: StreamRedactor) -> str:
    """A value as short redacted JSON text: its head when it is long."""
    return _cut(_text(value, redactor), 0)


def _text(value: Any, redactor: StreamRedactor) -> str:
    return redactor.redact_text(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _cut(text: str, start: int) -> str:
    """`text` from `start`, at most `_WIDTH` characters, with "…" where it was cut."""
    shown = text[start: start + _WIDTH]
    return ("…" if start else "") + shown + ("…" if start + _WIDTH < len(text) else "")


def _changed(old: str, new: str) -> tuple[str, str]:
    """Both sides of a change, each showing where it starts to differ: a long common
    beginning (the same URL up to its last segment) is elided, not the differing tail."""
    same = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        same += 1
    start = max(0, same - _CONTEXT)
    if max(len(old), len(new)) <= _WIDTH:
        start = 0
    return _cut(old, start), _cut(new, start)


def format_diff(diff: list[Difference], redactor: StreamRedactor) -> list[str]:
    """The lines a miss shows of `diff`: every pointer with both sides of its change."""
    lines = []
    for what, raw_pointer, old, new in diff[:_DIFF_LINES]:
        # a fixture recorded before a secret was known can hold it as a member name
        pointer = shown_pointer(raw_pointer, redactor)
        if what == "added":
            lines.append(f"{pointer}: added {preview(new, redactor)}")
        elif what == "removed":
            lines.append(f"{pointer}: removed (was {preview(old, redactor)})")
        else:
            shown_old, shown_new = _changed(_text(old, redactor), _text(new, redactor))
            lines.append(f"{pointer}: {shown_old} -> {shown_new}")
    if len(diff) > _DIFF_LINES:
        lines.append(f"... and {len(diff) - _DIFF_LINES} more differences")
    return lines


class StoreLookup:
    """Reads and writes the recorded outcomes of calls in one store, for one mode: answers
    go through `normalizers` before they are written, calls are noted in `report` under
    `label`, a miss advises `how_to_record` and an expired fixture `how_to_rerecord`
    (past `max_age`, by `ages`, `on_expiry` decides)."""

    # (positional: a test builds one, and keyword arguments cost a call more than its work)
    def __init__(
        self,
        store: FixtureStore,
        mode: Mode,
        redactor: StreamRedactor,
        normalizers: tuple[AnswerNormalizer, ...],
        report: CallLog | None,
        label: str | None,
        how_to_record: str,
        how_to_rerecord: str,
        max_age: timedelta | None,
        on_expiry: ExpiryAction,
        ages: FixtureAges | None,
    ) -> None:
        self.store = store
        self.mode = mode
        self.redactor = redactor
        self.normalizers = normalizers
        self.report = report
        self.label = label
        self.how_to_record = how_to_record
        self.how_to_rerecord = how_to_rerecord
        self.max_age = max_age
        self.on_expiry = on_expiry
        self.ages = ages if ages is not None else FixtureAges()
        self._read: Callable[[str, str], Fixture | None] = replay_reader(store)
        # Written in this run by this layer (a set's `add` and `in` need no lock of ours).
        self._recorded: set[tuple[str, str]] = set()

    def where(self, kind: str, key: str) -> str:
        """The file of a call, for messages and reports."""
        return str(self.store.path_for(kind, key))

    def note(self, outcome: Outcome, call: Call) -> None:
        if self.report is not None:
            self.report.note(outcome, call.kind, call.key, file=self.where(call.kind, call.key),
                             store=self.store.location, label=self.label)

    def replayed(self, call: Call) -> Fixture | None:
        """The fixture of `call` as replaying its outcome needs it (read once per call)."""
        if call.fixture is UNREAD:
            call.fixture = self._read(call.kind, call.key)
        return call.fixture

    def find(self, call: Call, can_rerecord: bool = False) -> Fixture | None:
        """The recorded fixture to replay, or None when the call goes live; a miss in
        replay raises `MissingFixtureError`."""
        if self.mode in ("replay", "auto"):
            fixture = self.replayed(call)
            if fixture is not None:
                if self.max_age is not None and not self._fresh(call, can_rerecord):
                    return None
                self.note("replayed", call)
                return fixture
            if self.mode == "replay":
                self.note("missing", call)
                self.warn_volatile(call)
                raise self.missing(call)
            return None
        if (call.kind, call.key) in self._recorded:
            # A repeat of a call recorded in this run replays what was written, so the
            # record run sees what every later replay run will see.
            fixture = self.store.get(call.kind, call.key)
            if fixture is not None:
                self.note("replayed", call)
                return fixture
        return None

    def for_verify(self, call: Call) -> Fixture | None:
        """The recording a verified call is compared with; a miss is reported, never written."""
        fixture = self.store.get(call.kind, call.key)
        self.note("missing" if fixture is None else "replayed", call)
        if fixture is None:
            self.warn_volatile(call)
        return fixture

    def write(self, call: Call, **outcome: Any) -> None:
        """Record `call`'s outcome (answer, chunks or error), its answers normalized."""
        if self.normalizers:
            if "answer" in outcome:
                outcome["answer"] = normalize_answer(outcome["answer"], self.normalizers)
            if "chunks" in outcome:
                outcome["chunks"] = [normalize_answer(chunk, self.normalizers)
                                     for chunk in outcome["chunks"]]
        self.store.put(Fixture(key=call.key, kind=call.kind, request=call.material, **outcome))
        self._recorded.add((call.kind, call.key))
        self.note("recorded", call)

    def warn_volatile(self, call: Call) -> None:
        for found in find_volatile(call.material):
            warn_at_caller(VolatileValueWarning(call.kind, found.pointer, found.reason))

    def missing(self, call: Call) -> MissingFixtureError:
        """The miss of `call`, with the nearest recorded call of its kind and the diff."""
        best: tuple[int, str, list[Difference]] | None = None
        for name, recorded in self.store.recorded_requests(call.kind):
            diff = material_diff(recorded, call.material)
            if diff and (best is None or (len(diff), name) < (best[0], best[1])):
                best = (len(diff), name, diff)
        return MissingFixtureError(
            call.kind, call.key, self.store.location,
            nearest=None if best is None else best[1],
            diff=None if best is None else format_diff(best[2], self.redactor),
            how_to_record=self.how_to_record,
        )

    def _fresh(self, call: Call, can_rerecord: bool) -> bool:
        """False when an expired fixture is to be recorded again instead of replayed."""
        assert self.max_age is not None
        found = self.ages.age_of(self.store.path_for(call.kind, call.key))
        if found is None or found.age() <= self.max_age:
            return True
        path, age = str(found.path), format_duration(found.age())
        max_age = format_duration(self.max_age)
        if self.on_expiry == "fail":
            raise ExpiredFixtureError(path, age, max_age, how_to_record=self.how_to_rerecord,
                                      source=found.described_source)
        if self.on_expiry == "rerecord" and can_rerecord:
            return False
        warn_at_caller(ExpiredFixtureWarning(path, age, max_age, source=found.described_source))
        return True
