"""Fixture stores: a directory of one file per call, and a single-file cassette.

File names in a `FixtureDir` (the kind decides the family):

    @model.<kind>.<key>.json   model calls (kind "text", "chat", "structured", ...)
    <tool>.<key>.json          tool calls (kind "tool:<tool>")
    http.<key>.json            HTTP calls recorded by the transport (kind "http")

`@` cannot start a tool name, and the tool name "http" is reserved, so every file
name maps back to exactly one kind. Writes go to a temporary file in the same
directory, are fsync'd, then `os.replace`d over the target: a reader or a crash
sees the old file or the new one, never a part. A file that is corrupt or
schema-invalid raises `FixtureFormatError` naming it, and is never overwritten.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ._errors import FixtureFormatError, UsageError
from ._format import (
    HTTP_KIND,
    KEY_PATTERN,
    TOOL_PREFIX,
    Cassette,
    CassetteEntry,
    Fixture,
    is_valid_key,
    is_valid_name,
    parse_cassette,
    parse_fixture,
    parse_replayed,
)

__all__ = [
    "HTTP_KIND",
    "CassetteStore",
    "FixtureDir",
    "FixtureStore",
    "atomic_write",
    "check_kind",
    "kind_for_file_name",
]

MODEL_PREFIX = "@model."
_KEY = KEY_PATTERN.strip("^$")
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*"


@runtime_checkable
class FixtureStore(Protocol):
    """What the record and replay layers need from a store.

    A store class may also define `get_replayed(kind, key)` beside its own `get`: the
    fixture with only what replaying its outcome needs (`FixtureDir` leaves the request
    unread). Replay then reads by it (`replay_reader`); other readers use `get`.
    """

    @property
    def location(self) -> str:
        """Where the store lives, for messages."""

    def get(self, kind: str, key: str) -> Fixture | None:
        """The recorded call, or None when there is none."""

    def put(self, fixture: Fixture) -> Path:
        """Write (or replace) one recorded call atomically; return the file written."""

    def path_for(self, kind: str, key: str) -> Path:
        """The file that holds (or would hold) the call."""

    def iter_fixtures(self, kind: str | None = None) -> Iterator[Fixture]:
        """Every recorded call, optionally of one kind, in file-name order."""

    def recorded_requests(self, kind: str) -> Iterator[tuple[str, Any]]:
        """(where, recorded key material) of every readable call of `kind`.

        The replay miss compares against these to show the nearest call, so an
        unreadable entry is skipped, never raised: a broken neighbour is the audit's
        business, not the miss's.
        """


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not is_valid_key(key):
        raise UsageError(f"fixture key {key!r} is not 64 lowercase hex characters; "
                         "compute it with redactkey.request_key")


def _file_stem(kind: str) -> str:
    """The file-name prefix for a kind; refuses any kind that could escape the directory."""
    if not isinstance(kind, str):
        raise UsageError(f"fixture kind must be a string, not {type(kind).__name__}")
    if kind == HTTP_KIND:
        return HTTP_KIND
    if kind.startswith(TOOL_PREFIX):
        name = kind[len(TOOL_PREFIX):]
        if name == HTTP_KIND:
            raise UsageError("tool name 'http' is reserved for HTTP fixtures; "
                             "give the tool another name")
        if not is_valid_name(name):
            raise UsageError(
                f"tool name {name!r} cannot be used in a file name; use letters, digits, "
                "'_', '-' and single inner dots (at most 100 characters)"
            )
        return name
    if not is_valid_name(kind):
        raise UsageError(
            f"fixture kind {kind!r} cannot be used in a file name; use letters, digits, "
            "'_', '-' and single inner dots (at most 100 characters)"
        )
    return MODEL_PREFIX + kind


def check_kind(kind: str) -> None:
    """Refuse (`UsageError`) a kind that cannot name a fixture, as every store does."""
    _file_stem(kind)


_NAME_ONLY = re.compile(_NAME)
_KEY_ONLY = re.compile(_KEY)
_TAIL = len(".") + 64 + len(".json")  # ".<key>.json"


def kind_for_file_name(name: str) -> tuple[str, str] | None:
    """(kind, key) for a fixture file name (`@model.<name>.<key>.json` for a model kind,
    `<name>.<key>.json` for a tool or "http"), or None when the name is not a fixture's.

    The key is the 64 hex digits before ".json", so the name splits there without the
    patterns' backtracking over them (a store's directory is read name by name)."""
    if len(name) <= _TAIL or not name.endswith(".json") or name[-_TAIL] != ".":
        return None
    key = name[-_TAIL + 1 : -5]
    if not _KEY_ONLY.fullmatch(key):
        return None
    kind = _kind_of_stem(name[:-_TAIL])
    return None if kind is None else (kind, key)


@functools.lru_cache(maxsize=1024)
def _kind_of_stem(stem: str) -> str | None:
    """The kind whose files' names start with `stem`, or None (a directory's files share
    a handful of stems: each is read once)."""
    if stem.startswith(MODEL_PREFIX):
        model = stem[len(MODEL_PREFIX):]
        return model if _NAME_ONLY.fullmatch(model) else None
    if not _NAME_ONLY.fullmatch(stem):
        return None
    return HTTP_KIND if stem == HTTP_KIND else TOOL_PREFIX + stem


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


# 16 KiB holds a whole answer fixture; a first read of 64 KiB took 2-3 us more between a
# test's or an SDK's own work (its buffer is allocated whole, then shrunk to the file).
_FIRST_READ = 1 << 14


def _read_bytes(path: str | Path) -> bytes | None:
    # The file at once, without a buffered file object: a replayed call reads one small
    # file, and the file object's setup costs more than the read. A read of a regular file
    # comes back short only at its end, so a file under 16 KiB takes one read and no
    # fstat; a larger one is read on by its size.
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FixtureFormatError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    try:
        data = os.read(fd, _FIRST_READ)
        if len(data) < _FIRST_READ:
            return data
        size = os.fstat(fd).st_size
        parts = [data, os.read(fd, max(size - len(data), 0) + 1)]
        while chunk := os.read(fd, 1 << 16):  # it grew since fstat: read on to the end
            parts.append(chunk)
        return b"".join(parts)
    except OSError as exc:
        raise FixtureFormatError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":  # pragma: no cover - directories cannot be opened elsewhere
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers and crashes see the old or the new file, never a part.

    The temporary file sits in the same directory (so the rename is atomic), starts
    with a dot (so stores never list it) and is created with the umask's permissions.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        for attempt in range(10):
            try:
                os.replace(tmp, path)
                break
            except PermissionError:  # pragma: no cover - Windows: target open by a reader
                if attempt == 9:
                    raise
                time.sleep(0.01 * (attempt + 1))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _lean_read(store_type: type) -> bool:
    """Whether a store class's `get_replayed` stands for its `get`: the same class defines
    both, so a subclass or wrapper that changes `get` keeps having it called."""
    owners = [next((c for c in store_type.__mro__ if name in vars(c)), None)
              for name in ("get", "get_replayed")]
    return owners[0] is not None and owners[0] is owners[1]


_LEAN_READS: dict[type, bool] = {}


def replay_reader(store: Any) -> Callable[[str, str], Fixture | None]:
    """What replay reads a stored call with: the store's `get_replayed` where its class
    defines it beside its own `get` (`FixtureDir`), else its `get`."""
    store_type = type(store)
    lean = _LEAN_READS.get(store_type)
    if lean is None:
        lean = _lean_read(store_type)
        if len(_LEAN_READS) < 64:
            _LEAN_READS[store_type] = lean
    reader: Callable[[str, str], Fixture | None] = store.get_replayed if lean else store.get
    return reader


class FixtureDir:
    """The directory store: one canonical JSON file per call, O(1) lookup by file name."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._location = str(self.path)
        self._prefix = os.path.join(self._location, "")  # a file's path is this + its name
        self._stems: dict[str, str] = {}  # kind -> checked file-name prefix

    def __repr__(self) -> str:
        return f"FixtureDir({self._location!r})"

    @property
    def location(self) -> str:
        return self._location

    def file_name(self, kind: str, key: str) -> str:
        """The name of the file for (kind, key) in the directory; refuses kinds and keys
        that could leave it."""
        stem = self._stems.get(kind) if isinstance(kind, str) else None
        if stem is None:
            stem = _file_stem(kind)
            if len(self._stems) < 1024:  # a store sees a handful of kinds
                self._stems[kind] = stem
        if type(key) is not str or _KEY_ONLY.fullmatch(key) is None:  # (not strip(chars))
            _check_key(key)  # what a SHA-256 hex digest never is: the check names it
        return f"{stem}.{key}.json"

    def path_for(self, kind: str, key: str) -> Path:
        """The file for (kind, key); refuses kinds and keys that could leave the directory."""
        return self.path / self.file_name(kind, key)

    def get(self, kind: str, key: str) -> Fixture | None:
        """The recorded call, None when no file exists; a bad file raises FixtureFormatError."""
        return self._read(kind, key, parse_fixture)

    def get_replayed(self, kind: str, key: str) -> Fixture | None:
        """`get` as replay needs it: the outcome, with the request left unread (None) where
        the file is in the writer's own layout (`parse_replayed`). Only for replaying the
        outcome; `get` reads the file whole."""
        return self._read(kind, key, parse_replayed)

    def _read(self, kind: str, key: str, parse: Callable[..., Fixture]) -> Fixture | None:
        # A plain string, not a Path: building a Path per lookup interns its name in the
        # interpreter's string table, which then grows and is rehashed as replays go on.
        path = self._prefix + self.file_name(kind, key)
        data = _read_bytes(path)
        if data is None:
            return None
        fixture = parse(path, data, kind=kind, key=key)
        if fixture.kind != kind or fixture.key != key:
            raise FixtureFormatError(
                path,
                f"the file name says kind {kind!r} key {key} but the file holds kind "
                f"{fixture.kind!r} key {fixture.key}",
            )
        return fixture

    def put(self, fixture: Fixture) -> Path:
        """Write the call atomically; identical bytes are left untouched.

        An existing file that is corrupt or schema-invalid is not replaced: the
        FixtureFormatError names it so a person can look before deleting it.
        """
        path = self.path_for(fixture.kind, fixture.key)
        data = fixture.dumps()
        old = _read_bytes(path)
        if old == data:
            return path
        if old is not None:
            parse_fixture(str(path), old)
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
        return path

    def files(self, kind: str | None = None) -> list[Path]:
        """Fixture files in the directory (optionally of one kind), sorted by name."""
        return [self.path / name for name in self.file_names(kind)]

    def file_names(self, kind: str | None = None) -> list[str]:
        """The names of `files(kind)`, without building a path for each."""
        try:
            names = sorted(os.listdir(self._location))
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            parsed = kind_for_file_name(name)
            if parsed is not None and (kind is None or parsed[0] == kind):
                out.append(name)
        return out

    def iter_fixtures(self, kind: str | None = None) -> Iterator[Fixture]:
        """Every recorded call (optionally of one kind); a bad file raises FixtureFormatError."""
        if kind is not None:
            _file_stem(kind)
        for path in self.files(kind):
            data = _read_bytes(path)
            if data is not None:
                yield parse_fixture(str(path), data)

    def recorded_requests(self, kind: str) -> Iterator[tuple[str, Any]]:
        """(file, recorded key material) of each readable file of `kind`, skipping broken ones."""
        for path in self.files(kind):
            # Plain JSON is enough to compare requests, and much cheaper than validating
            # every file of a large directory.
            try:
                doc = json.loads(path.read_bytes())
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("kind") == kind and "request" in doc:
                yield str(path), doc["request"]


class CassetteStore:
    """The single-file store: `{version, entries}` sorted by key, locked across processes."""

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")
        self.lock_timeout = lock_timeout
        self._signature: tuple[int, int, int] | None = None
        self._entries: dict[tuple[str, str], CassetteEntry] = {}

    def __repr__(self) -> str:
        return f"CassetteStore({str(self.path)!r})"

    @property
    def location(self) -> str:
        return str(self.path)

    def path_for(self, kind: str, key: str) -> Path:
        _file_stem(kind)
        _check_key(key)
        return self.path

    def _parse(self, data: bytes) -> dict[tuple[str, str], CassetteEntry]:
        cassette = parse_cassette(str(self.path), data)
        entries: dict[tuple[str, str], CassetteEntry] = {}
        for index, entry in enumerate(cassette.entries):
            if (entry.kind, entry.key) in entries:
                raise FixtureFormatError(
                    str(self.path), f"entry {entry.kind!r} {entry.key} appears twice",
                    pointer=f"/entries/{index}",
                )
            entries[(entry.kind, entry.key)] = entry
        return entries

    def _load(self) -> dict[tuple[str, str], CassetteEntry]:
        # Re-read only when the file changed, so a lookup costs one stat.
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._signature, self._entries = None, {}
            return self._entries
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        if signature != self._signature:
            data = _read_bytes(self.path)
            self._entries = self._parse(data) if data is not None else {}
            self._signature = signature
        return self._entries

    def get(self, kind: str, key: str) -> Fixture | None:
        """The recorded call, or None; a bad cassette raises FixtureFormatError."""
        self.path_for(kind, key)
        entry = self._load().get((kind, key))
        return entry.to_fixture() if entry is not None else None

    def put(self, fixture: Fixture) -> Path:
        """Add or replace one entry: read, modify and write under a cross-process lock."""
        self.path_for(fixture.kind, fixture.key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock  # only a cassette's writer needs the lock (and its import)

        with FileLock(str(self.lock_path), timeout=self.lock_timeout):
            old = _read_bytes(self.path)
            entries = self._parse(old) if old is not None else {}
            entries[(fixture.kind, fixture.key)] = CassetteEntry.from_fixture(fixture)
            data = Cassette(entries=list(entries.values())).dumps()
            if data != old:
                atomic_write(self.path, data)
        self._signature = None
        return self.path

    def iter_fixtures(self, kind: str | None = None) -> Iterator[Fixture]:
        """Every recorded call (optionally of one kind), in key order."""
        entries = sorted(self._load().values(), key=lambda e: (e.key, e.kind))
        for entry in entries:
            if kind is None or entry.kind == kind:
                yield entry.to_fixture()

    def recorded_requests(self, kind: str) -> Iterator[tuple[str, Any]]:
        """(cassette file, recorded key material) of each entry of `kind`; nothing when
        the cassette cannot be read."""
        try:
            entries = sorted(self._load().values(), key=lambda e: (e.key, e.kind))
        except FixtureFormatError:
            return
        for entry in entries:
            if entry.kind == kind:
                yield str(self.path), entry.request
