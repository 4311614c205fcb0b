"""The run report: which calls were replayed, recorded or missing, and which files went unused.

`ModelFixtures(..., report=RunReport())` (and `ToolFixtures`) note every call; the
report is written as JSON for `redact audit` and CI, in the same shape as the
pytest plugin's report::

    {"version": 1,
     "replayed": [{"test", "outcome", "kind", "key", "store", "file"}, ...],
     "recorded": [...], "missing": [...],
     "unused": ["tests/fixtures/@model.text.<key>.json", ...],
     "drifted": [{"test", "file", "kind", "key", "differences": [{"pointer", "what"}]}]}

`drifted` holds what verify mode found when the layers were given
`on_drift=report.drift`; it is written only when something drifted.

Paths inside a written report are relative to the report's own directory (as
`redact audit --report` resolves them), so reports compare across machines.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from .._errors import DriftError, FixtureFormatError, UsageError
from ..fixtures._format import dump_document
from ..fixtures._store import FixtureDir, atomic_write
from ._replay import Outcome

__all__ = ["REPORT_FILE", "REPORT_VERSION", "CallEvent", "RunReport", "report_document"]

REPORT_FILE = ".redactkey-report.json"
REPORT_VERSION = 1
_OUTCOMES: tuple[Outcome, ...] = ("replayed", "recorded", "missing")


@dataclass(frozen=True, order=True)
class CallEvent:
    """One call as the report sees it; `test` is the caller's label ("" when none)."""

    test: str
    outcome: Literal["replayed", "recorded", "missing"]
    kind: str
    key: str
    store: str
    file: str


def _shown(path: str, root: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).resolve(), root.resolve())).as_posix()
    except ValueError:  # another drive (Windows): keep it absolute
        return Path(path).resolve().as_posix()


def report_document(
    events: Iterable[Mapping[str, str]], unused: Iterable[str], **extra: Any
) -> dict[str, Any]:
    """The run-report document: `events` (call dicts with an "outcome", paths already
    relative, in the order to write) split by outcome, the `unused` files, and `extra`
    fields (the pytest plugin adds its modes, unchecked directories and blocked calls)."""
    listed = list(events)
    doc: dict[str, Any] = {"version": REPORT_VERSION, **extra}
    for outcome in _OUTCOMES:
        doc[outcome] = [dict(e) for e in listed if e["outcome"] == outcome]
    doc["unused"] = sorted(set(unused))
    return doc


class RunReport:
    """Collects call outcomes (thread-safe) and writes them with a directory's unused files."""

    def __init__(self, *, label: str | None = None) -> None:
        self.label = label
        self._events: dict[CallEvent, None] = {}
        self._drifts: list[tuple[str, DriftError]] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        counts = ", ".join(f"{o}={len(self.events(o))}" for o in _OUTCOMES)
        return f"RunReport({counts})"

    def note(self, outcome: Outcome, kind: str, key: str, *, file: str, store: str,
             label: str | None = None) -> None:
        """Record one call (duplicates of the same call by the same caller count once)."""
        if outcome not in _OUTCOMES:
            raise UsageError(f"outcome {outcome!r} is not one of {', '.join(_OUTCOMES)}")
        event = CallEvent(label if label is not None else (self.label or ""), outcome, kind,
                          key, str(store), str(file))
        with self._lock:
            self._events.setdefault(event, None)

    def drift(self, error: DriftError, *, label: str | None = None) -> None:
        """Keep a verify drift instead of raising it: pass `on_drift=report.drift`."""
        with self._lock:
            self._drifts.append((label if label is not None else (self.label or ""), error))

    @property
    def drifted(self) -> list[DriftError]:
        """The drifts collected in verify mode, in the order they were found."""
        with self._lock:
            return [error for _, error in self._drifts]

    def events(self, outcome: Outcome | None = None) -> list[CallEvent]:
        """The noted calls, sorted, optionally of one outcome."""
        with self._lock:
            events = list(self._events)
        return sorted(e for e in events if outcome is None or e.outcome == outcome)

    @property
    def hits(self) -> list[CallEvent]:
        """Calls answered from a fixture."""
        return self.events("replayed")

    @property
    def recorded(self) -> list[CallEvent]:
        """Calls written to a fixture."""
        return self.events("recorded")

    @property
    def missed(self) -> list[CallEvent]:
        """Calls replay found no fixture for."""
        return self.events("missing")

    def unused(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Fixture files in `directory` that no noted call replayed or recorded.

        Only meaningful after a complete run that used the directory (a partial run
        leaves the files of the tests it skipped unused).
        """
        touched = {
            Path(e.file).resolve() for e in self.events() if e.outcome != "missing"
        }
        return [p for p in FixtureDir(directory).files() if p.resolve() not in touched]

    def document(
        self, *, directories: Iterable[str | os.PathLike[str]] = (),
        root: str | os.PathLike[str] | None = None,
    ) -> dict[str, Any]:
        """The JSON document; `directories` are checked for unused files."""
        base = Path.cwd() if root is None else Path(root)
        events = [
            {**asdict(e), "store": _shown(e.store, base), "file": _shown(e.file, base)}
            for e in self.events()
        ]
        directories = list(directories)
        unused = {_shown(str(p), base) for d in directories for p in self.unused(d)}
        # the directories whose unused files were checked: the only ones `redact prune`
        # may touch; the caller vouches that the run was complete
        extra: dict[str, Any] = {
            "fixture_dirs": sorted({_shown(str(d), base) for d in directories}),
            "partial": [],
        }
        with self._lock:
            drifts = list(self._drifts)
        if drifts:
            extra["drifted"] = sorted(
                ({"test": label, "file": _shown(error.path, base), "kind": error.kind,
                  "key": error.key,
                  "differences": [{"pointer": p, "what": w} for p, w in error.differences]}
                 for label, error in drifts),
                key=lambda d: (d["test"], d["file"], d["key"]),
            )
        return report_document(events, unused, **extra)

    def write(
        self, path: str | os.PathLike[str] = REPORT_FILE, *,
        directories: Iterable[str | os.PathLike[str]] = (),
        root: str | os.PathLike[str] | None = None,
    ) -> Path:
        """Write the report atomically as canonical JSON; returns the path.

        Paths in it are relative to `root`, by default the report's directory.
        """
        target = Path(path)
        root = target.resolve().parent if root is None else root
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, dump_document(self.document(directories=directories, root=root)))
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RunReport:
        """Read a written report back (e.g. one per xdist worker, to `merge`)."""
        import json

        where = str(path)
        try:
            doc = json.loads(Path(path).read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FixtureFormatError(where, f"not a readable JSON report: {exc}") from None
        if not isinstance(doc, dict) or doc.get("version") != REPORT_VERSION:
            raise FixtureFormatError(where, f"not a version {REPORT_VERSION} run report",
                                     pointer="/version")
        report = cls()
        for outcome in _OUTCOMES:
            for index, item in enumerate(doc.get(outcome, [])):
                try:
                    report.note(outcome, item["kind"], item["key"], file=item["file"],
                                store=item["store"], label=item.get("test", ""))
                except (KeyError, TypeError):
                    raise FixtureFormatError(where, "event lacks kind, key, file or store",
                                             pointer=f"/{outcome}/{index}") from None
        return report

    @classmethod
    def merge(cls, reports: Iterable[RunReport]) -> RunReport:
        """One report holding the calls of several (parallel workers of one run)."""
        merged = cls()
        for report in reports:
            for event in report.events():
                merged._events.setdefault(event, None)
        return merged
