"""The age of a fixture, without a timestamp in the file.

Fixture files carry no time on purpose (re-recording an unchanged call changes no
byte), so a fixture's age is the commit time of the last commit that changed it.
`FixtureAges` asks git once per directory tree, whatever the number of files:

    git log --format=<marker>%ct -z --name-only --no-renames --relative -- .

(newest first; the first time a file appears is its last change), plus one
`git diff --name-only HEAD` for files with uncommitted changes. A file git does not
know (outside a repository, not committed yet, changed since its last commit) falls
back to its modification time, and says so in `FixtureAge.source` / `.reason`.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

from ._errors import UsageError

__all__ = [
    "EXPIRY_ACTIONS",
    "ExpiryAction",
    "FixtureAge",
    "FixtureAges",
    "format_duration",
    "parse_duration",
]

ExpiryAction = Literal["warn", "fail", "rerecord"]
EXPIRY_ACTIONS: tuple[ExpiryAction, ...] = ("warn", "fail", "rerecord")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_MARKER = "\x01"
_GIT_TIMEOUT = 120


def parse_duration(text: str | timedelta) -> timedelta:
    """``"90d"``, ``"12h"``, ``"2w"``, ``"1w3d"`` (units s, m, h, d, w) as a timedelta."""
    if isinstance(text, timedelta):
        if text <= timedelta(0):
            raise UsageError("a maximum age must be positive")
        return text
    value = str(text).strip().lower()
    position, seconds = 0, 0
    for match in _DURATION.finditer(value):
        if match.start() != position and value[position:match.start()].strip():
            break
        seconds += int(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not value or value[position:].strip() or seconds <= 0:
        raise UsageError(
            f"{text!r} is not a duration; write a number and a unit, e.g. 30d, 12h, 2w "
            "(units: s, m, h, d, w)"
        )
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """A short human form: ``"95d"``, ``"13h"``, ``"4m"``."""
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


@dataclass(frozen=True)
class FixtureAge:
    """When a fixture was last recorded, and how that was found out.

    `source` is "git" (commit time of the last commit that changed the file) or
    "mtime" (the file's modification time), with `reason` saying why git was not
    used ("not committed", "uncommitted changes", "not in a git repository", ...).
    """

    path: Path
    recorded_at: float
    source: Literal["git", "mtime"]
    reason: str = ""

    def age(self, now: float | None = None) -> timedelta:
        """How long ago it was recorded."""
        return timedelta(seconds=max((time.time() if now is None else now) - self.recorded_at,
                                     0.0))

    @property
    def described_source(self) -> str:
        """"git" or "file mtime (<reason>)", for messages and reports."""
        return "git" if self.source == "git" else f"file mtime ({self.reason})"


Runner = Callable[[list[str], Path], "subprocess.CompletedProcess[bytes]"]


def _run_git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, check=False, timeout=_GIT_TIMEOUT,
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
    )


class FixtureAges:
    """Ages of fixture files, found with a constant number of git calls per directory tree.

    Thread-safe; a tree is read on first use and kept (the pytest plugin keeps one for
    the whole session). `runner` replaces the subprocess call (tests count calls).
    """

    def __init__(self, *, runner: Runner | None = None) -> None:
        self._runner = runner or _run_git
        # root -> (ages of the committed files under it, why any other file has none)
        self._trees: dict[Path, tuple[dict[Path, FixtureAge], str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        trees = len(self._trees)
        return f"FixtureAges({trees} {'tree' if trees == 1 else 'trees'} read)"

    def age_of(self, path: str | os.PathLike[str]) -> FixtureAge | None:
        """The age of one fixture file (None when it does not exist)."""
        file = Path(path).absolute()
        tree, reason = self._tree(file.parent)
        found = tree.get(file)
        if found is not None:
            return found
        return _mtime_age(file, reason)

    def ages(self, root: str | os.PathLike[str],
             files: Iterable[str | os.PathLike[str]] | None = None) -> dict[Path, FixtureAge]:
        """Ages of `files` (default: every file under `root` outside hidden directories),
        read with one pass over `root`."""
        base = Path(root).absolute()
        tree, reason = self._tree(base)
        wanted = (
            [Path(f).absolute() for f in files] if files is not None
            else [p for p in base.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(base).parts)]
        )
        out: dict[Path, FixtureAge] = {}
        for file in wanted:
            found = tree.get(file) or _mtime_age(file, reason)
            if found is not None:
                out[file] = found
        return out

    def _tree(self, directory: Path) -> tuple[dict[Path, FixtureAge], str]:
        with self._lock:
            for root, tree in self._trees.items():
                if directory == root or root in directory.parents:
                    return tree
            tree = self._read(directory)
            self._trees[directory] = tree
            return tree

    def _read(self, directory: Path) -> tuple[dict[Path, FixtureAge], str]:
        """Last-commit times of every file under `directory`, from one `git log`."""
        if not directory.is_dir():
            return {}, "not committed"
        try:
            log = self._runner(
                ["log", f"--format={_MARKER}%ct", "-z", "--name-only", "--no-renames",
                 "--relative", "--", "."], directory)
        except (OSError, subprocess.SubprocessError):
            return {}, "git is not available"
        if log.returncode != 0:
            return {}, "not in a git repository"
        committed: dict[Path, float] = {}
        current: float | None = None
        for token in log.stdout.decode("utf-8", "surrogateescape").split("\0"):
            token = token.lstrip("\n")
            if token.startswith(_MARKER):
                current = float(token[1:])
            elif token and current is not None:
                committed.setdefault(directory / token, current)
        dirty: set[Path] = set()
        try:
            diff = self._runner(["diff", "--name-only", "-z", "--no-renames", "--relative",
                                 "HEAD", "--", "."], directory)
            if diff.returncode == 0:
                dirty = {directory / name for name in
                         diff.stdout.decode("utf-8", "surrogateescape").split("\0") if name}
        except (OSError, subprocess.SubprocessError):
            pass
        tree: dict[Path, FixtureAge] = {}
        for file, when in committed.items():
            if file in dirty:
                found = _mtime_age(file, "uncommitted changes")
                if found is not None:
                    tree[file] = found
            else:
                tree[file] = FixtureAge(file, when, "git")
        return tree, "not committed"


def _mtime_age(file: Path, reason: str) -> FixtureAge | None:
    try:
        return FixtureAge(file, file.stat().st_mtime, "mtime", reason)
    except OSError:
        return None
