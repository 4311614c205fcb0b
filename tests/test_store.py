from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT
from redactkey import CassetteStore, Fixture, FixtureDir, FixtureFormatError, UsageError
from redactkey.fixtures import _store
from redactkey.fixtures._store import FixtureStore, kind_for_file_name, replay_reader


def _key(n: int | str) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def _fixture(n: int | str, kind: str = "text", **outcome: object) -> Fixture:
    if not outcome:
        outcome = {"answer": {"n": str(n)}}
    return Fixture(key=_key(n), kind=kind, request={"n": str(n)}, **outcome)


def _run_python(code: str, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env)


@pytest.fixture(params=["dir", "cassette"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FixtureStore:
    if request.param == "dir":
        return FixtureDir(tmp_path / "fixtures")
    return CassetteStore(tmp_path / "cassette.json")


class TestFileNames:
    """How kinds map to file names."""

    @pytest.mark.parametrize(
        ("kind", "name"),
        [("text", "@model.text.{k}.json"), ("chat.v2", "@model.chat.v2.{k}.json"),
         ("tool:search", "search.{k}.json"), ("tool:github.issues", "github.issues.{k}.json"),
         ("http", "http.{k}.json")],
    )
    def test_names_round_trip(self, tmp_path: Path, kind: str, name: str) -> None:
        """Each kind has one file name, and the file name gives the kind back."""
        key = _key(kind)
        path = FixtureDir(tmp_path).path_for(kind, key)
        assert path == tmp_path / name.format(k=key)
        assert kind_for_file_name(path.name) == (kind, key)

    @pytest.mark.parametrize(
        "kind",
        ["../x", "a/b", "a\\b", "", ".hidden", "a..b", "x.", "tool:", "tool:../x", "tool:@m",
         "@model", "tool:http", "a b", "é", "a\x00b", "tool:a/b", "x" * 101, "-x"],
    )
    def test_escaping_kinds_refused(self, tmp_path: Path, kind: str) -> None:
        """A kind or tool name that could leave the directory or collide is a UsageError."""
        for store in (FixtureDir(tmp_path), CassetteStore(tmp_path / "c.json")):
            with pytest.raises(UsageError):
                store.path_for(kind, _key(1))
            with pytest.raises(UsageError):
                store.get(kind, _key(1))
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("key", ["../" + "a" * 61, "A" * 64, "a" * 63, "a" * 65, ""])
    def test_bad_keys_refused(self, tmp_path: Path, key: str) -> None:
        """Only 64 lowercase hex characters are keys."""
        with pytest.raises(UsageError, match="64 lowercase hex"):
            FixtureDir(tmp_path).path_for("text", key)

    @pytest.mark.parametrize("name", ["x.json", ".@model.text.x.json", "@model..json",
                                      "@model.text." + "a" * 64 + ".json.tmp"])
    def test_other_files_are_not_fixtures(self, name: str) -> None:
        """Temporary and unrelated files are never read as fixtures."""
        assert kind_for_file_name(name) is None

    _STEMS = ("", "text", "http", "search", "chat.v2", "a-b", "_x", "-x", "A", "é", "a b",
              "a/b", "x.", ".x", "a..b", "@model", "json")
    _KEYS = ("a" * 64, "0123456789abcdef" * 4, "F" * 64, "f" * 63, "f" * 65, "g" * 64, "")

    def test_names_read_as_the_patterns_read_them(self) -> None:
        """`kind_for_file_name` splits a name as the model and tool file patterns match it."""
        from redactkey.fixtures._format import KEY_PATTERN, NAME_PATTERN

        _KEY, _NAME = KEY_PATTERN.strip("^$"), NAME_PATTERN.strip("^$")

        # The grammar of fixture file names, as one pattern per family would match it.
        model_file = re.compile(rf"@model\.(?P<name>{_NAME})\.(?P<key>{_KEY})\.json")
        tool_file = re.compile(rf"(?P<name>{_NAME})\.(?P<key>{_KEY})\.json")

        for prefix, stem, sep, key, end in itertools.product(
            ["", "@model.", "@model", "."], self._STEMS, ["", "."], self._KEYS,
            ["", ".json", ".json.tmp", "json"],
        ):
            name = prefix + stem + sep + key + end
            model, tool = model_file.fullmatch(name), tool_file.fullmatch(name)
            expected: tuple[str, str] | None = None
            if model:
                expected = (model["name"], model["key"])
            elif tool:
                kind = "http" if tool["name"] == "http" else "tool:" + tool["name"]
                expected = (kind, tool["key"])
            assert kind_for_file_name(name) == expected, name


class TestStores:
    """Behaviour both stores share."""

    def test_put_then_get(self, store: FixtureStore) -> None:
        """A written call reads back equal; an unknown key is None."""
        fixture = _fixture(1)
        store.put(fixture)
        assert store.get("text", _key(1)) == fixture
        assert store.get("text", _key(2)) is None
        assert store.get("chat", _key(1)) is None

    def test_replace(self, store: FixtureStore) -> None:
        """Putting the same key again replaces the call."""
        store.put(_fixture(1))
        newer = Fixture(key=_key(1), kind="text", request={"n": "1"}, chunks=["a"])
        store.put(newer)
        assert store.get("text", _key(1)) == newer

    def test_iter_by_kind(self, store: FixtureStore) -> None:
        """iter_fixtures lists every call, or those of one kind."""
        store.put(_fixture(1))
        store.put(_fixture(2, kind="tool:search"))
        store.put(_fixture(3, kind="http"))
        assert {f.kind for f in store.iter_fixtures()} == {"text", "tool:search", "http"}
        assert [f.key for f in store.iter_fixtures("tool:search")] == [_key(2)]

    def test_recorded_requests_of_a_kind(self, store: FixtureStore) -> None:
        """recorded_requests lists (where, request) of one kind, what the replay miss
        compares against."""
        store.put(_fixture(1))
        store.put(_fixture(2, kind="chat"))
        assert isinstance(store, FixtureStore)
        listed = list(store.recorded_requests("text"))
        assert listed == [(str(store.path_for("text", _key(1))), {"n": "1"})]

    def test_recorded_requests_pass_over_what_cannot_be_read(
        self, store: FixtureStore, tmp_path: Path
    ) -> None:
        """A broken file or cassette is skipped (the audit reports it), never raised."""
        store.put(_fixture(1))
        broken = store.path_for("text", "0" * 64)
        broken.write_text("{not json")
        listed = list(store.recorded_requests("text"))
        if isinstance(store, FixtureDir):
            assert listed == [(str(store.path_for("text", _key(1))), {"n": "1"})]
        else:
            assert listed == []  # the one cassette file is the broken one

    def test_rerecording_is_byte_stable(self, store: FixtureStore) -> None:
        """Writing an unchanged call leaves the bytes (and the file) as they were."""
        path = store.put(_fixture(1, answer={"b": [1, 2], "a": "ü"}))
        before = path.read_bytes()
        os.utime(path, ns=(10**18, 10**18))  # a time no write today could give the file
        store.put(_fixture(1, answer={"a": "ü", "b": [1, 2]}))
        assert path.read_bytes() == before
        assert path.stat().st_mtime_ns == 10**18

    def test_no_temporary_files_left(self, store: FixtureStore, tmp_path: Path) -> None:
        """A successful write leaves only the target file behind."""
        for n in range(5):
            store.put(_fixture(n))
        leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
        assert leftovers == []


class TestFixtureDir:
    """The one-file-per-call directory store."""

    @pytest.mark.parametrize("content", [b"{\"version\": 1, \"key\": ", b"", b"not json",
                                         b'{"version": 1}', b'{"version": 9}'])
    def test_corrupt_file_named_not_missed_not_overwritten(
        self, tmp_path: Path, content: bytes
    ) -> None:
        """get and put raise FixtureFormatError naming the file, and leave it as it was."""
        store = FixtureDir(tmp_path)
        path = store.path_for("text", _key(1))
        path.write_bytes(content)
        with pytest.raises(FixtureFormatError) as info:
            store.get("text", _key(1))
        assert info.value.path == str(path)
        assert path.name in str(info.value)
        with pytest.raises(FixtureFormatError):
            store.put(_fixture(1))
        with pytest.raises(FixtureFormatError):
            list(store.iter_fixtures())
        assert path.read_bytes() == content

    def test_file_name_and_content_must_agree(self, tmp_path: Path) -> None:
        """A file renamed to another key is an error, not a wrong answer."""
        store = FixtureDir(tmp_path)
        store.put(_fixture(1)).rename(store.path_for("text", _key(2)))
        with pytest.raises(FixtureFormatError, match="file name says"):
            store.get("text", _key(2))

    def test_unreadable_path_is_named(self, tmp_path: Path) -> None:
        """A directory in the place of a file is a named error, not a miss."""
        store = FixtureDir(tmp_path)
        store.path_for("text", _key(1)).mkdir()
        with pytest.raises(FixtureFormatError, match="cannot be read"):
            store.get("text", _key(1))

    def test_file_growing_while_read_is_read_whole(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file longer than its size said a moment before is read to its end."""
        store = FixtureDir(tmp_path)
        big = _fixture(1, answer={"text": "x" * 200_000})
        store.put(big)
        real_fstat = os.fstat

        def stale(fd: int) -> os.stat_result:
            return os.stat_result((*real_fstat(fd)[:6], 10, *real_fstat(fd)[7:]))

        monkeypatch.setattr(os, "fstat", stale)
        assert store.get("text", _key(1)) == big

    @pytest.mark.parametrize("offset", [-136, -1, 0, 1, _store._FIRST_READ, 60_000])
    def test_files_around_the_first_read_are_read_whole(
        self, tmp_path: Path, offset: int
    ) -> None:
        """A file is read to its end whether it fits the first read, fills it exactly or
        runs past it."""
        size = _store._FIRST_READ + offset
        store = FixtureDir(tmp_path)
        bare = len(_fixture(1, answer={"text": ""}).dumps())
        fixture = _fixture(1, answer={"text": "x" * (size - bare)})
        assert len(fixture.dumps()) == size
        store.put(fixture)
        assert store.get("text", _key(1)) == fixture

    def test_missing_directory_is_empty(self, tmp_path: Path) -> None:
        """A directory that does not exist yet holds no calls and is created on write."""
        store = FixtureDir(tmp_path / "a" / "b")
        assert store.get("text", _key(1)) is None
        assert list(store.iter_fixtures()) == []
        store.put(_fixture(1))
        assert store.get("text", _key(1)) is not None

    def test_lookup_reads_one_file(self, tmp_path: Path) -> None:
        """A corrupt neighbour does not disturb a lookup: get opens only its own file."""
        store = FixtureDir(tmp_path)
        store.put(_fixture(1))
        store.path_for("text", _key(2)).write_text("{")
        assert store.get("text", _key(1)) == _fixture(1)

    def test_permissions_follow_umask(self, tmp_path: Path) -> None:
        """Files are created readable like any other file (not 0600 like mkstemp)."""
        old = os.umask(0o022)
        try:
            path = FixtureDir(tmp_path).put(_fixture(1))
        finally:
            os.umask(old)
        assert path.stat().st_mode & 0o777 == 0o644

    def test_many_processes_one_directory(self, tmp_path: Path) -> None:
        """8 processes writing 50 calls each (half of them the same keys) leave valid files."""
        code = """
            import sys, hashlib
            from redactkey import Fixture, FixtureDir
            store, worker = FixtureDir(sys.argv[1]), int(sys.argv[2])
            for n in range(50):
                name = str(n) if n % 2 else f"{worker}-{n}"
                key = hashlib.sha256(name.encode()).hexdigest()
                store.put(Fixture(key=key, kind="text", request={"n": name},
                                  answer={"by": worker, "pad": "x" * 4000}))
        """
        procs = [_run_python(code, str(tmp_path), str(w)) for w in range(8)]
        assert [p.wait(timeout=120) for p in procs] == [0] * 8
        store = FixtureDir(tmp_path)
        fixtures = list(store.iter_fixtures())
        assert len(fixtures) == 25 + 8 * 25
        assert sorted(os.listdir(tmp_path)) == sorted(p.name for p in store.files())

    @pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
    @pytest.mark.parametrize("crash_at", ["mid-write", "before-rename"])
    def test_killed_writer_leaves_no_truncated_file(self, tmp_path: Path, crash_at: str) -> None:
        """A writer killed with SIGKILL inside a write leaves the old file whole and no new part."""
        code = """
            import hashlib, os, signal, sys
            from redactkey import Fixture, FixtureDir
            store = FixtureDir(sys.argv[1])
            key = hashlib.sha256(b"k").hexdigest()
            store.put(Fixture(key=key, kind="text", request={"n": 1}, answer={"v": "old"}))

            def die(*args, **kwargs):
                os.kill(os.getpid(), signal.SIGKILL)

            if sys.argv[2] == "mid-write":
                real_fdopen = os.fdopen

                class HalfWriter:
                    def __init__(self, handle):
                        self.handle = handle
                    def __enter__(self):
                        return self
                    def __exit__(self, *exc):
                        self.handle.close()
                    def write(self, data):
                        self.handle.write(data[: len(data) // 2])
                        self.handle.flush()
                        die()

                os.fdopen = lambda fd, *a, **k: HalfWriter(real_fdopen(fd, *a, **k))
            else:
                os.replace = die
            store.put(Fixture(key=key, kind="text", request={"n": 1},
                              answer={"v": "new", "pad": "y" * 100_000}))
            sys.exit(3)  # not reached: the put above kills the process
        """
        proc = _run_python(code, str(tmp_path / "fx"), crash_at)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        leftovers = [p for p in (tmp_path / "fx").iterdir() if p.suffix == ".tmp"]
        assert len(leftovers) == 1, "the kill did not land inside the second write"
        store = FixtureDir(tmp_path / "fx")
        fixtures = list(store.iter_fixtures())
        assert [f.answer for f in fixtures] == [{"v": "old"}]


class TestCassetteStore:
    """The single-file store."""

    def test_file_sorted_and_canonical(self, tmp_path: Path) -> None:
        """The cassette lists entries by key, canonically formatted."""
        store = CassetteStore(tmp_path / "c.json")
        for n in (5, 1, 3):
            store.put(_fixture(n))
        text = (tmp_path / "c.json").read_text("utf-8")
        doc = json.loads(text)
        assert [e["key"] for e in doc["entries"]] == sorted(_key(n) for n in (5, 1, 3))
        assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def test_sees_other_writers(self, tmp_path: Path) -> None:
        """A second store on the same file sees calls the first one wrote."""
        first, second = CassetteStore(tmp_path / "c.json"), CassetteStore(tmp_path / "c.json")
        assert second.get("text", _key(1)) is None
        first.put(_fixture(1))
        assert second.get("text", _key(1)) == _fixture(1)

    def test_corrupt_cassette_is_named_and_kept(self, tmp_path: Path) -> None:
        """A corrupt cassette raises on read and write and is never overwritten."""
        path = tmp_path / "c.json"
        path.write_text('{"version": 1, "entries": [')
        store = CassetteStore(path)
        with pytest.raises(FixtureFormatError, match=r"c\.json"):
            store.get("text", _key(1))
        with pytest.raises(FixtureFormatError, match=r"c\.json"):
            store.put(_fixture(1))
        assert path.read_text() == '{"version": 1, "entries": ['

    def test_duplicate_entries_refused(self, tmp_path: Path) -> None:
        """Two entries with one key are an error naming the second."""
        entry = _fixture(1).entry_document()
        path = tmp_path / "c.json"
        path.write_text(json.dumps({"version": 1, "entries": [entry, entry]}))
        with pytest.raises(FixtureFormatError) as info:
            CassetteStore(path).get("text", _key(1))
        assert info.value.pointer == "/entries/1"

    def test_many_processes_one_cassette(self, tmp_path: Path) -> None:
        """4 processes adding 15 calls each to one cassette lose none of them."""
        code = """
            import sys, hashlib
            from redactkey import CassetteStore, Fixture
            store, worker = CassetteStore(sys.argv[1]), sys.argv[2]
            for n in range(15):
                key = hashlib.sha256(f"{worker}-{n}".encode()).hexdigest()
                store.put(Fixture(key=key, kind="text", request={}, answer=n))
        """
        path = tmp_path / "c.json"
        procs = [_run_python(code, str(path), str(w)) for w in range(4)]
        assert [p.wait(timeout=120) for p in procs] == [0] * 4
        assert len(list(CassetteStore(path).iter_fixtures())) == 60


class TestReplayReader:
    """Replay reads a `FixtureDir` by `get_replayed`; a store that changes `get` (a
    subclass, a wrapper) keeps having its `get` called."""

    def test_fixture_dir_replays_without_its_request(self, tmp_path: Path) -> None:
        store = FixtureDir(tmp_path)
        store.put(_fixture(1))
        lean = replay_reader(store)(_fixture(1).kind, _key(1))
        assert lean is not None
        assert (lean.answer, lean.request) == ({"n": "1"}, None)
        assert store.get("text", _key(1)) == _fixture(1)  # `get` still reads it whole
        assert replay_reader(store)("text", _key(2)) is None

    def test_a_file_of_another_call_is_named(self, tmp_path: Path) -> None:
        store = FixtureDir(tmp_path)
        path = store.put(_fixture(1))
        path.rename(store.path_for("text", _key(2)))
        with pytest.raises(FixtureFormatError, match="the file name says kind"):
            store.get_replayed("text", _key(2))

    def test_a_subclass_that_changes_get_is_read_by_get(self, tmp_path: Path) -> None:
        class Answering(FixtureDir):
            def get(self, kind: str, key: str) -> Fixture | None:
                return _fixture("mine")

        class Plain(FixtureDir):
            pass

        assert replay_reader(Answering(tmp_path))("text", _key(1)) == _fixture("mine")
        plain = Plain(tmp_path)
        assert replay_reader(plain) == plain.get_replayed

    def test_a_wrapper_that_forwards_the_rest_is_read_by_get(self, tmp_path: Path) -> None:
        inner = FixtureDir(tmp_path)
        inner.put(_fixture(1))

        class Counting:
            def __init__(self) -> None:
                self.gets = 0

            def __getattr__(self, name: str) -> object:
                return getattr(inner, name)

            def get(self, kind: str, key: str) -> Fixture | None:
                self.gets += 1
                return inner.get(kind, key)

        wrapper = Counting()
        assert replay_reader(wrapper)("text", _key(1)) == _fixture(1)
        assert wrapper.gets == 1
