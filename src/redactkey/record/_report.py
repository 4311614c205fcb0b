"""The run report: which calls were replayed, recorded or missing, and which files went unused.

`ModelFixtures(..., report=RunReport())` (and `ToolFixtures`) note every call; the report
is written as JSON for `redact audit` and CI, in the pytest plugin's shape (docs/modes.md,
"Run report"; docs/pytest.md, "What was used"). Its paths are relative to the report's own
directory, as `redact audit --run-report` resolves them, so reports compare across machines.
"""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from .._errors import DriftError, FixtureFormatError, UsageError
from ..fixtures._format import Fixture, dump_document
from ..fixtures._store import FixtureDir, FixtureStore, atomic_write, replay_reader
from ._lookup import Outcome

__all__ = [
    "REPORT_FILE",
    "REPORT_VERSION",
    "CallEvent",
    "RunReport",
    "RunSummary",
    "TrackedStore",
    "merge_parts",
    "new_dir",
    "new_part",
    "report_document",
    "shown_path",
]

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


# -- a pytest run's share of the report: one part per process, merged by the controller

def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def new_part() -> dict[str, Any]:
    """One process's share of a run (JSON data only: xdist ships it to the controller)."""
    return {"events": [], "dirs": {}, "blocked": {}, "used": False, "drifts": [],
            "deselected": 0, "collect_errors": 0, "partial": [], "dummies": {}}


def new_dir() -> dict[str, Any]:
    """What a part knows of one fixture directory: the tests using it, those that ran."""
    return {"tests": [], "ran": [], "deselected": 0, "live": False}


def merge_parts(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The parts of every process as one; every xdist worker collects (and deselects) the
    whole suite, so those counts are the largest of any part, not their sum."""
    merged = new_part()
    for part in parts:
        merged["events"].extend(part["events"])
        merged["used"] = merged["used"] or part["used"]
        merged["drifts"].extend(part["drifts"])
        merged["deselected"] = max(merged["deselected"], part["deselected"])
        merged["collect_errors"] = max(merged["collect_errors"], part["collect_errors"])
        merged["partial"].extend(r for r in part["partial"] if r not in merged["partial"])
        merged["dummies"].update(part["dummies"])
        for nodeid, targets in part["blocked"].items():
            merged["blocked"].setdefault(nodeid, []).extend(targets)
        for path, info in part["dirs"].items():
            into = merged["dirs"].setdefault(path, new_dir())
            into["tests"] = sorted(set(into["tests"]) | set(info["tests"]))
            into["ran"] = sorted(set(into["ran"]) | set(info["ran"]))
            into["deselected"] = max(into["deselected"], info["deselected"])
            into["live"] = into["live"] or info["live"]
    merged["events"].sort(key=lambda e: (e["test"], e["file"], e["outcome"]))
    merged["drifts"].sort(key=lambda d: (d["test"], d["file"]))
    return merged


@dataclass
class RunSummary:
    """What a pytest run did: its calls by outcome, unused files and what it refused.
    Paths are relative to the rootdir (or absolute outside it)."""

    replayed: list[dict[str, str]]
    recorded: list[dict[str, str]]
    missing: list[dict[str, str]]
    unused: list[str]
    unchecked: list[str]  # directories whose unused files were not checked, with why
    blocked: dict[str, list[str]]
    dummies: dict[str, str]
    drifted: list[dict[str, Any]]
    fixture_dirs: list[str]
    partial: list[str]  # why the run did not cover every test

    @classmethod
    def of(cls, merged: Mapping[str, Any], root: Path) -> RunSummary:
        """The summary of a merged run; a directory's unused files are checked only when
        every test using it ran, none of them live."""
        events = merged["events"]
        touched = {e["file"] for e in events if e["outcome"] != "missing"}
        unused: set[str] = set()
        unchecked: list[str] = []
        for path, info in sorted(merged["dirs"].items()):
            not_run = len(set(info["tests"]) - set(info["ran"])) + info["deselected"]
            if info["live"]:
                unchecked.append(f"{path}: some tests ran live")
            elif not_run:
                unchecked.append(f"{path}: {_counted(not_run, 'test')} using it did not run")
            else:
                names = FixtureDir(root / path).file_names()
                unused.update(f for f in (n if path == "." else f"{path}/{n}" for n in names)
                              if f not in touched)
        partial = list(merged["partial"])
        if merged["deselected"]:
            partial.append(f"{_counted(merged['deselected'], 'test')} deselected")
        if merged["collect_errors"]:
            partial.append(_counted(merged["collect_errors"], "collection error"))
        return cls(
            replayed=[e for e in events if e["outcome"] == "replayed"],
            recorded=[e for e in events if e["outcome"] == "recorded"],
            missing=[e for e in events if e["outcome"] == "missing"],
            unused=sorted(unused), unchecked=unchecked,
            blocked={k: v for k, v in merged["blocked"].items() if v},
            dummies=dict(merged["dummies"]), drifted=merged["drifts"],
            fixture_dirs=sorted(merged["dirs"]), partial=partial,
        )

    def lines(self) -> Iterator[tuple[str, bool]]:
        """The terminal summary, line by line, with whether a line is an alarm (red)."""
        yield (f"replayed {len(self.replayed)}, recorded {len(self.recorded)}, "
               f"missing {len(self.missing)}, unused files {len(self.unused)}"), False
        if self.missing:
            yield "missing (no recorded call; each failed test says how to record it):", False
            for event in self.missing:
                yield (f"  {event['test']}: {event['kind']} {event['key'][:12]}… "
                       f"in {event['store']}"), False
        if self.blocked:
            yield "network connections refused:", False
            for test, targets in sorted(self.blocked.items()):
                yield f"  {test}: {', '.join(targets)}", False
        if self.drifted:
            yield f"drifted from their recordings (verify): {len(self.drifted)}", True
            for drift in self.drifted:
                yield f"  {drift['test']}: {drift['file']}", False
                for difference in drift["differences"]:
                    yield f"    {difference['pointer'] or '(root)'}: {difference['what']}", False
            yield f"to re-record just these: {self.rerecord_command()}", False
        if self.unused:
            yield "unused fixture files (no test replayed or recorded them):", False
            for path in self.unused:
                yield f"  {path}", False
        for note in self.unchecked:
            yield f"unused files not checked in {note}", False
        if self.dummies:
            yield ("stand-in secrets skipped (nothing was recorded; recording needs the real "
                   "credential):"), False
            for slot, reason in sorted(self.dummies.items()):
                yield f"  {slot}: {reason}", False

    def rerecord_command(self) -> str:
        """The pytest command that re-records just the tests whose answers drifted."""
        tests = sorted({d["test"] for d in self.drifted})
        return " ".join(["pytest", "--redactkey-mode=record", *map(shlex.quote, tests)])

    def document(self, mode: str, model_mode: str, root: Path, report: Path) -> dict[str, Any]:
        """The run report. Its paths are relative to the report's directory, which is
        how `redact audit --run-report` resolves them."""
        directories: dict[str, str] = {}

        def relocated(shown: str) -> str:
            try:
                return Path(os.path.relpath(root / shown, report.parent)).as_posix()
            except ValueError:  # another drive (Windows)
                return (root / shown).as_posix()

        def moved(shown: str) -> str:
            # Relocated once per directory: a run's files share a few directories.
            head, _, name = shown.rpartition("/")
            if not head or name in ("", ".", ".."):
                return relocated(shown)
            if head not in directories:
                directories[head] = relocated(head)
            base = directories[head]
            return name if base == "." else f"{base}/{name}"

        events = [{**e, "store": moved(e["store"]), "file": moved(e["file"])}
                  for e in (*self.replayed, *self.recorded, *self.missing)]
        extra = {"rerecord": self.rerecord_command()} if self.drifted else {}
        return report_document(
            events, (moved(path) for path in self.unused),
            mode=mode, model_mode=model_mode, unchecked=self.unchecked,
            fixture_dirs=[moved(path) for path in self.fixture_dirs], partial=self.partial,
            blocked=[{"test": test, "target": target}
                     for test, targets in sorted(self.blocked.items()) for target in targets],
            drifted=[{**d, "file": moved(d["file"])} for d in self.drifted], **extra,
        )


# -- a pytest test's calls


class TrackedStore:
    """A fixture store that tells the session which calls a test replayed or recorded.

    It delegates to the real store (a `FixtureDir` by default); the pytest plugin gives
    it to each test's Recorder, so the summary needs nothing from the layers.
    """

    def __init__(self, inner: FixtureStore, nodeid: str, *, shown: str | None = None) -> None:
        self.inner = inner
        self.nodeid = nodeid
        self.shown = shown  # the store's location as reports show it, when known
        # (kind, key) -> "replayed" | "recorded" | "missing", in first-seen order
        self.calls: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()  # a test may call from several threads

    def __repr__(self) -> str:
        return f"TrackedStore({self.inner!r})"

    @property
    def location(self) -> str:
        return self.inner.location

    @property
    def path(self) -> Path:
        """The fixture directory (or cassette file)."""
        return Path(self.inner.location)

    def _track(self, kind: str, key: str, fixture: Fixture | None) -> Fixture | None:
        with self._lock:
            if self.calls.get((kind, key)) != "recorded":
                self.calls[(kind, key)] = "missing" if fixture is None else "replayed"
        return fixture

    def get(self, kind: str, key: str) -> Fixture | None:
        return self._track(kind, key, self.inner.get(kind, key))

    def get_replayed(self, kind: str, key: str) -> Fixture | None:
        return self._track(kind, key, replay_reader(self.inner)(kind, key))

    def put(self, fixture: Fixture) -> Path:
        path = self.inner.put(fixture)
        with self._lock:
            self.calls[(fixture.kind, fixture.key)] = "recorded"
        return path

    def path_for(self, kind: str, key: str) -> Path:
        return self.inner.path_for(kind, key)

    def iter_fixtures(self, kind: str | None = None) -> Iterator[Fixture]:
        return self.inner.iter_fixtures(kind)

    def recorded_requests(self, kind: str) -> Iterator[tuple[str, Any]]:
        return self.inner.recorded_requests(kind)

    def events(self, root: Path) -> list[dict[str, str]]:
        """What this test did, one JSON-ready record per call; paths relative to `root`."""
        with self._lock:
            calls = list(self.calls.items())
        store = self.shown if self.shown is not None else shown_path(self.location, root)
        inner = self.inner

        def file(kind: str, key: str) -> str:
            if isinstance(inner, FixtureDir):  # (a file in the directory shown above)
                name = inner.file_name(kind, key)
                return name if store == "." else f"{store}/{name}"
            return shown_path(self.path_for(kind, key), root)

        return [{"test": self.nodeid, "outcome": outcome, "kind": kind, "key": key,
                 "store": store, "file": file(kind, key)} for (kind, key), outcome in calls]


def shown_path(path: str | Path, root: Path) -> str:
    """`path` relative to the rootdir when inside it (portable reports), else absolute."""
    path = Path(path)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
