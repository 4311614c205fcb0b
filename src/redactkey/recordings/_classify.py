"""One walk and one classifier in front of `check`, `audit` and `scrub`.

`walk(paths)` lists every file under the paths named, in one sorted order, and
says for each whether it is read or skipped and why. `open_target(target)` reads a
file the walk kept whole: plain or gzip'd, within the shared caps (`_limits`), as
text; a file over `MAX_FILE_BYTES` is read in pieces by `check` and `audit`
(`_pieces`) and refused by the commands that read it whole. The format of a file
read is decided by the readers (`_readers`); the commands therefore agree on the set
of files a tree holds and on what each is.

A file is skipped (listed under `skipped`, with its reason) when it is a licence
text, binary, or gzip that does not open; the last two may hold a recording and
also give an `unreadable-file` finding.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._limits import MAX_FILE_BYTES, OverCap, bounded_decompress

__all__ = [
    "RECORDING_SUFFIXES",
    "InputProblem",
    "Opened",
    "Skipped",
    "Target",
    "Unreadable",
    "Walk",
    "inner_suffix",
    "is_large",
    "looks_like_recording",
    "open_target",
    "too_large",
    "walk",
]

# Suffixes of the formats read as recordings (also under a `.gz`).
RECORDING_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".har", ".toml"})
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__",
                        ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox"})
# Licence texts that recordings copied from other projects carry beside them.
_LICENCE = re.compile(r"^(?:UPSTREAM_)?(?:LICEN[CS]E|COPYING|NOTICE)(?:[._-].*)?$",
                      re.IGNORECASE)
# (also the text dialects: Go `httprr` traces, PyGithub's ReplayData files)
_RECORDING_START = re.compile(
    r"^\s*(?:\{|\[\s*[{\[\"]|(?:http_)?interactions\s*:)|^httprr trace v1\n|^https?\n[A-Z]+\n")
_SNIFF = 8192


@dataclass(frozen=True)
class InputProblem:
    """A path named on the command line that could not be read at all (exit 2)."""

    path: str
    problem: str


@dataclass(frozen=True)
class Target:
    """A file to read, the name to print for it, and the directory named on the command
    line that holds it (a command that rewrites the file writes only inside it)."""

    path: Path
    display: str
    root: Path | None = None


@dataclass(frozen=True)
class Skipped:
    """A file the walk met and did not read: why, and whether it may hold a recording
    (then it is also an `unreadable-file` finding)."""

    display: str
    reason: str
    unreadable: bool = False


@dataclass
class Walk:
    """The files under the paths named: to read, skipped, and the paths that are missing."""

    targets: list[Target] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)


class Unreadable(Exception):
    """A file that may hold a recording and could not be read (over a cap, corrupt)."""

    def __init__(self, display: str, problem: str) -> None:
        super().__init__(f"{display}: {problem}")
        self.display = display
        self.problem = problem


@dataclass(frozen=True)
class Opened:
    """The text of a file and the suffix that names its format."""

    text: str
    suffix: str  # the suffix that names the format (`.yaml` for `x.yaml.gz`)


def inner_suffix(path: Path) -> str:
    """The suffix that names a file's format, below a `.gz`: `.yaml` for `a.yaml.gz`."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        return suffixes[-2] if len(suffixes) > 1 else ""
    return suffixes[-1] if suffixes else ""


def looks_like_recording(text: str) -> bool:
    """Whether a text of unknown extension starts like a JSON or YAML document."""
    return bool(_RECORDING_START.match(text[:512]))


class _Displays:
    """How the walk names files: resolved, relative to the working directory where they
    are under it. The working directory and each parent directory are resolved once per
    walk (a tree's files share a few parents); a file that is a link is resolved itself."""

    def __init__(self) -> None:
        self._cwd = Path.cwd().resolve()
        self._parents: dict[Path, str | None] = {}  # directory -> its display, if under cwd

    def _relative(self, resolved: Path) -> str | None:
        try:
            return resolved.relative_to(self._cwd).as_posix()
        except ValueError:
            return None

    def __call__(self, path: Path) -> str:
        if path.is_symlink():
            shown = self._relative(path.resolve())
        else:
            parent = path.parent
            if parent not in self._parents:
                self._parents[parent] = self._relative(parent.resolve())
            folder = self._parents[parent]
            shown = None if folder is None else (
                path.name if folder == "." else f"{folder}/{path.name}")
        return path.as_posix() if shown is None else shown


def _missing_reason(path: Path) -> str:
    """Why a named path cannot be opened: a dangling or looping link, a parent that is a
    file, or plain absence."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop; fix or remove the link"
        if exc.errno == errno.ENOTDIR:
            return "a parent of this path is a file, not a directory; check the path"
        if path.is_symlink():
            return "broken symbolic link (its target does not exist); fix or remove the link"
    return "no such file or directory"


def _classify(path: Path, display: str) -> Skipped | None:
    """Why the walk skips `path`, or None when it is read."""
    if _LICENCE.match(path.name):
        return Skipped(display, "licence text")
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF)
    except OSError as exc:
        return Skipped(display, f"cannot be read: {exc.strerror or exc}", unreadable=True)
    if head[:2] == b"\x1f\x8b":
        return None
    if path.suffix.lower() == ".gz":
        return Skipped(display, "named .gz but not gzip data", unreadable=True)
    if b"\0" in head:
        recording = inner_suffix(path) in RECORDING_SUFFIXES
        return Skipped(display, "binary", unreadable=recording)
    return None


def walk(paths: Sequence[str]) -> Walk:
    """Files named and files under directories named (sorted), each kept or skipped; a
    directory holding no file at all is a problem (a mistyped path, not a clean tree)."""
    out = Walk()
    seen: set[Path] = set()
    display_of = _Displays()
    for raw in paths:
        path = Path(raw)
        found: list[tuple[Path, str]] = []
        root = path if path.is_dir() else path.parent
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if any(part in _SKIP_DIRS for part in child.relative_to(path).parts[:-1]):
                    continue
                if child.is_file():
                    found.append((child, display_of(child)))
            if not found:
                out.problems.append(InputProblem(raw, "directory holds no files; check the path"))
        elif path.is_file():
            found.append((path, display_of(path) if path.is_absolute() else raw))
        elif path.exists():
            out.problems.append(InputProblem(raw, "not a regular file"))
        else:
            out.problems.append(InputProblem(raw, _missing_reason(path)))
        for child, display in found:
            if child in seen:
                continue
            seen.add(child)
            skipped = _classify(child, display)
            if skipped is not None:
                out.skipped.append(skipped)
            else:
                out.targets.append(Target(child, display, root))
    return out


def is_large(target: Target) -> bool:
    """Whether a file is over `MAX_FILE_BYTES` on disk: read in pieces, never whole."""
    try:
        return target.path.stat().st_size > MAX_FILE_BYTES
    except OSError:
        return False  # reading it says why it cannot be read


def too_large(target: Target) -> Unreadable:
    """The refusal of a command that reads files whole, for a file over the bound."""
    return Unreadable(target.display, f"over {MAX_FILE_BYTES // (1024 * 1024)} MB, which "
                      "this command reads only whole; `redact check` and `redact audit` "
                      "read it in pieces")


def open_target(target: Target) -> Opened:
    """The text of a file the walk kept (gunzipped within the cap); `Unreadable` when it
    cannot be read, is over a cap or is binary inside its gzip."""
    try:
        with target.path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)  # never more, even if the file grew
    except OSError as exc:
        raise Unreadable(target.display, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise too_large(target)
    if data[:2] == b"\x1f\x8b":
        try:
            data = bounded_decompress(data)  # nested gzip layers too, each within the cap
        except OverCap as exc:
            hint = "; gunzip it to have it read in pieces" if "more than" in exc.problem else ""
            raise Unreadable(target.display, exc.problem + hint) from None
        if b"\0" in data[:_SNIFF]:
            raise Unreadable(target.display, "binary data inside the gzip")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return Opened(text, inner_suffix(target.path))
