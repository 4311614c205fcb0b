"""Bounded work on any input: YAML alias bombs, files of any size, writes that stay in
their tree, and exit codes that mean one thing.

Hostile inputs are generated here and whole commands run in a subprocess, with their CPU
time (user + system: the machine running the suite is shared, its wall time is not
the command's) and peak memory (`helpers.run_measured`); the 100 MB cases are `huge`
(`pytest -m huge`), the 1 GB one is `tests/benchmarks/bench_large_files.py`.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
import string
from pathlib import Path

import pytest
import yaml

from helpers import billion_laughs, bomb_cassette, run_measured, write_recording
from redactkey import FixtureDir, ModelFixtures, Redactor, RunSecrets
from redactkey.commands import _cli
from redactkey.commands._cli import main
from redactkey.fixtures._store import OutsideRootError, atomic_write
from redactkey.recordings import _classify, _pieces
from redactkey.recordings._limits import MAX_ALIASES, alias_problem


def _key(prefix: str = "sk-proj-", n: int = 48) -> str:
    """A fake key built at run time (valid for nothing)."""
    return prefix + "".join(random.choice(string.ascii_letters + string.digits)
                            for _ in range(n))


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory with an empty configuration and no secrets in the
    environment that could be scanned for."""
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _findings(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


class TestAliasGuard:
    """Anchors and aliases are counted over the composed graph, before anything is built."""

    def _graph(self, text: str) -> yaml.Node:
        return yaml.compose(text, Loader=yaml.SafeLoader)

    def test_billion_laughs_is_refused(self) -> None:
        """Nine levels of ten aliases: refused by what building would make."""
        problem = alias_problem(self._graph(billion_laughs()))
        assert problem is not None
        assert "would build" in problem

    def test_a_few_aliases_are_read(self) -> None:
        """A shared object written once and named again (what recorders write) passes."""
        text = "a: &h {x: [1, 2, 3]}\nb: *h\nc: *h\n"
        assert alias_problem(self._graph(text)) is None

    def test_many_aliases_are_refused(self) -> None:
        """More alias uses than MAX_ALIASES, even of a scalar, are refused."""
        text = "a: &s x\nb: [" + ", ".join(["*s"] * (MAX_ALIASES + 1)) + "]\n"
        problem = alias_problem(self._graph(text))
        assert problem is not None
        assert f"more than {MAX_ALIASES}" in problem

    def test_cycle_ends(self) -> None:
        """An alias to its own ancestor counts once and the walk ends."""
        assert alias_problem(self._graph("a: &a [1, *a]\n")) is None

    def test_aliased_secret_still_found(self, workdir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """A cassette that shares its headers through an alias is read, both places."""
        key = _key()
        (workdir / "c.yaml").write_text(
            "interactions:\n- request:\n    headers: &h\n      authorization: [Bearer "
            f"{key}]\n    uri: https://a.example/\n    method: GET\n  response:\n"
            "    status: {code: 200}\n    headers: *h\n", encoding="utf-8")
        code, report = _findings(capsys, "check", "c.yaml")
        assert code == 1
        pointers = {f["pointer"] for f in report["findings"]}  # type: ignore[union-attr,index]
        assert "/interactions/0/request/headers/authorization/0" in pointers
        assert "/interactions/0/response/headers/authorization/0" in pointers

    @pytest.mark.parametrize("shape", ["plain", "cassette"])
    @pytest.mark.parametrize("command", ["check", "audit", "scrub", "migrate"])
    def test_every_command_is_bounded(self, workdir: Path, shape: str, command: str) -> None:
        """Under 5 s and 150 MB, no traceback; audit names the bomb, migrate skips it."""
        (workdir / "in").mkdir()
        (workdir / "in" / "bomb.yaml").write_text(
            billion_laughs() if shape == "plain" else bomb_cassette(), encoding="utf-8")
        args = [command, "in"] + (["--to", "out"] if command == "migrate" else [])
        run = run_measured(args, workdir, timeout=120)
        assert run.seconds < 5, f"{run.seconds:.1f} CPU-s"
        assert run.peak_mb < 150, f"{run.peak_mb:.0f} MB"
        assert "Traceback" not in run.err, run.err
        assert run.code in (0, 1), run.err
        if command == "audit":
            assert "unparsable-file" in run.out
            assert "aliases" in run.out
        if command == "migrate":
            assert "skipped in/bomb.yaml: not built: its YAML aliases would build" in run.out


class TestPieces:
    """A file over the whole-read bound is read in pieces, with the findings, lines and
    pointers of the whole file (the bounds are lowered here so that small files split
    everywhere: mid-list, mid-mapping, across window and event boundaries)."""

    @pytest.fixture
    def files(self, workdir: Path) -> Path:
        rng = random.Random(7)
        key, token = _key(), _key("ghp_", 36)
        tree = workdir / "tree"
        tree.mkdir()
        binary = base64.b64encode(f"hello {key} world".encode()).decode()
        (tree / "r.yaml").write_text(
            f"# recorded with {key}\ninteractions:\n- request:\n"
            f"    body: '{{\"api_key\": \"{_key('', 30)}\", \"m\": [{{\"c\": \"{key}\"}}]}}'\n"
            f"    headers:\n      Authorization:\n      - Bearer {_key('', 40)}\n"
            "      ? !!python/object/apply:multidict._multidict.istr\n      - X-Api-Key\n"
            f"      : - {_key('', 32)}\n      Cookie: [session={_key('', 20)}]\n"
            f"    method: POST\n    uri: https://a.example/v1?key={_key('', 24)}\n"
            f"  response:\n    body:\n      string: !!binary |\n        {binary}\n"
            "    headers: {}\n    status: {code: 200, message: OK}\n"
            f"- request:\n    body: |\n      line one\n      password={_key('', 20)}\n"
            f"      token: {token}\n    headers: {{}}\n    method: GET\n"
            "    uri: https://a.example/y\n  response:\n    body: {string: ok}\n"
            f"    headers:\n      openai-organization: [org-{_key('', 20)}]\n"
            f"    note: {key}  # redact: allow\n    list: [a, {token}, 12, true, null]\n"
            f"    nested: {{a: {{b: [{{d: {key}}}]}}}}\nversion: 1\n", encoding="utf-8")
        entries = [{"request": {"method": "POST", "url": f"https://x.example/?t={_key('', 30)}",
                                "headers": [{"name": "Authorization",
                                             "value": "Bearer " + _key("", 40)}],
                                "postData": {"text": json.dumps({"client_secret": _key("", 30),
                                                                 "k": key})}},
                    "response": {"status": 200, "headers": [], "content": {"text": "ok"}}}
                   for _ in range(4)]
        (tree / "h.har").write_text(json.dumps({"log": {"entries": entries}}, indent=1),
                                    encoding="utf-8")
        raw = {"a": [[1, [3, {"password": _key("", 20), "x": ["y"] * 30}], key],
                     {"k": [key] * 5}], "b": {"c~d/e": key}, "n": [rng.random()] * 50}
        (tree / "raw.json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
        deltas = ["a"] * 40 + [key[:10], key[10:25], key[25:]] + ["b"] * 40
        (tree / "s.sse").write_text("".join(
            f"data: {json.dumps({'choices': [{'delta': {'content': c}}]})}\n\n"
            for c in deltas), encoding="utf-8")
        (tree / "s.ndjson").write_text("".join(
            json.dumps({"i": i, "d": key if i == 30 else _key("", 40)}) + "\n"
            for i in range(60)), encoding="utf-8")
        (tree / "t.txt").write_text("".join(
            f"token {key} here\n" if i in (9, 77) else _key("", 70) + "\n"
            for i in range(120)), encoding="utf-8")
        return tree

    @staticmethod
    def _rows(report: dict[str, object]) -> list[tuple[object, ...]]:
        findings = report["findings"]
        assert isinstance(findings, list)
        return sorted((f["path"], f["line"], f["rule"], f["pointer"], f["detail"])
                      for f in findings)

    @pytest.mark.parametrize("command", ["check", "audit"])
    def test_same_findings_as_whole(self, files: Path, command: str,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
        """Every finding at the same line and pointer, read whole or in pieces of 300
        bytes; a recording format's own decoding (HAR's base64 bodies) aside."""
        code, whole = _findings(capsys, command, "tree")
        monkeypatch.setattr(_classify, "MAX_FILE_BYTES", 100)
        monkeypatch.setattr(_pieces, "PIECE_BYTES", 300)
        monkeypatch.setattr(_pieces, "OVERLAP", 100)
        code_pieces, pieces = _findings(capsys, command, "tree")
        assert code == code_pieces == 1
        assert len(self._rows(whole)) > 30
        assert self._rows(pieces) == self._rows(whole)
        assert [f["format"] for f in pieces["files"]] == [  # type: ignore[attr-defined]
            "json", "yaml", "json", "ndjson", "sse", "text"]

    def test_secret_across_a_window_cut_found_once(self, workdir: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
        """A key on a line the window ends in is found once, at its line."""
        key = _key()
        lines = [_key("", 60) for _ in range(40)]
        lines[20] = "x" * 50 + " " + key
        (workdir / "t.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        expected = [("t.txt", 21, "openai-api-key", "", "")]
        assert self._rows(_findings(capsys, "check", "t.txt")[1]) == expected
        monkeypatch.setattr(_classify, "MAX_FILE_BYTES", 100)
        for size in range(1200, 1500, 61):  # windows cut before, inside and after it
            monkeypatch.setattr(_pieces, "PIECE_BYTES", size)
            monkeypatch.setattr(_pieces, "OVERLAP", 200)
            _code, report = _findings(capsys, "check", "t.txt")
            assert self._rows(report) == expected, size

    def test_unparsable_large_file(self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
        """A large .json that breaks off is scanned as text, and the audit says where it
        stopped parsing, without quoting the file."""
        key = _key()
        (workdir / "c.json").write_text('{"a": [\n' + f'"{key}",\n' * 3 + '"x" "y"\n',
                                        encoding="utf-8")
        monkeypatch.setattr(_classify, "MAX_FILE_BYTES", 10)
        _code, report = _findings(capsys, "audit", "c.json")
        rows = self._rows(report)
        assert ("c.json", 1, "unparsable-file", "", "not valid JSON at line 5") in rows
        assert [row[1] for row in rows if row[2] == "openai-api-key"] == [2, 3, 4]

    def test_large_gzip_and_rewrites_are_refused(self, workdir: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
        """A large gzip'd file says to gunzip it; scrub and migrate, which read a file
        whole, say they do and name the commands that read it in pieces."""
        (workdir / "in").mkdir()
        (workdir / "in" / "c.json.gz").write_bytes(
            gzip.compress(json.dumps({"a": _key("", 400)}).encode()))
        (workdir / "in" / "c.yaml").write_text(bomb_cassette(2), encoding="utf-8")
        monkeypatch.setattr(_classify, "MAX_FILE_BYTES", 100)
        _code, report = _findings(capsys, "check", "in")
        details = {f["path"]: f["detail"] for f in report["findings"]}  # type: ignore[attr-defined]
        assert "gunzip it to have it read in pieces" in details["in/c.json.gz"]
        assert main(["scrub", "in", "--format", "json"]) == 1
        skipped = {item["path"]: item["reason"]
                   for item in json.loads(capsys.readouterr().out)["skipped"]}
        assert "which this command reads only whole" in skipped["in/c.yaml"]
        assert main(["scrub", "in"]) == 1  # the text report says why too
        assert "in/c.yaml: not read: over " in capsys.readouterr().out
        assert main(["migrate", "in", "--to", "out"]) == 0
        out = capsys.readouterr().out
        for name in ("c.json.gz", "c.yaml"):
            assert f"skipped in/{name}: over " in out
        assert "which this command reads only whole; `redact check` and `redact audit` " \
               "read it in pieces" in out

    def test_just_over_the_bound(self, workdir: Path) -> None:
        """A 17 MB cassette with one key: found at its line by check and audit, not
        skipped, in bounded memory."""
        key = _key()
        line = write_recording(workdir / "c.json", 17 * 2**20, key)
        for command in ("check", "audit"):
            run = run_measured([command, "--format", "json", "c.json"], workdir)
            report = json.loads(run.out)
            assert report["files"] == [{"path": "c.json", "format": "json"}]
            secrets = [f for f in report["findings"] if f["rule"] == "openai-api-key"]
            assert [f["line"] for f in secrets] == [line], run.err
            assert run.peak_mb < 250, run.peak_mb


@pytest.mark.huge
class TestHundredMegabytes:
    """A 100 MB recording with one planted key: found, not skipped, < 60 s, < 600 MB."""

    @pytest.mark.parametrize("fmt", ["json", "yaml"])
    @pytest.mark.parametrize("command", ["check", "audit"])
    def test_found(self, tmp_path: Path, fmt: str, command: str) -> None:
        """The key at its line and pointer; the time and memory within the bar."""
        (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
        key = _key()
        line = write_recording(tmp_path / f"c.{fmt}", 100 * 2**20, key, fmt=fmt)
        run = run_measured([command, "--format", "json", f"c.{fmt}"], tmp_path)
        secrets = [f for f in json.loads(run.out)["findings"] if f["rule"] == "openai-api-key"]
        assert [(f["line"], f["pointer"]) for f in secrets] == [
            (line, f"/interactions/{line - 2}/request/body/messages/0/content")]
        assert run.seconds < 60, f"{run.seconds:.1f} CPU-s"
        assert run.peak_mb < 600, f"{run.peak_mb:.0f} MB"


@pytest.mark.slow  # two whole commands on 2 MB lines that yield a finding every few bytes
class TestDenseLines:
    """A line that yields a candidate every three bytes, or a finding every twenty, costs
    memory in proportion to the line, not hundreds of bytes per hit: the scan's hits are
    packed ints (tuples: 240 MB at 2 MB) and scrub finds a JSON string's end without a
    regular expression's repeat (which held ~120 bytes a character: 300 MB at 2 MB)."""

    @pytest.mark.parametrize(("piece", "form", "command"), [
        ("eyJ", "text", "check"),
        ("api_key=abcdefgh1234", "json", "scrub"),
    ])
    def test_peak(self, workdir: Path, piece: str, form: str, command: str) -> None:
        """Under 160 MB for 2 MB (the interpreter and its libraries are ~60 MB)."""
        from test_hostile_commands import fill, write

        path = write(workdir / "dense", form, fill(piece, 2 << 20))
        run = run_measured([command, "--exit-zero", path.name] if command != "scrub"
                           else [command, path.name], workdir)
        assert run.code in (0, 1), run.err
        assert run.peak_mb < 160, f"{run.peak_mb:.0f} MB"


def test_json_string_end() -> None:
    """Past the closing quote, an escaped quote passed over, an escaped backslash not."""
    from redactkey.recordings._streams import json_string_end

    for text, end in [('"ab" x', 4), ('"a\\"b" x', 6), ('"a\\\\" x', 5),
                      ('"a\\\\\\"b" x', 8), ('"open', 5), ('x "" y', 4)]:
        assert json_string_end(text, text.index('"')) == end, text
        if not text.endswith("open"):  # (a closed string: JSON reads exactly that token)
            assert isinstance(json.loads(text[text.index('"'):end]), str), text


class TestBigHeader:
    """A 1 MB Authorization header is not learned as a credential: migrate stays small."""

    def test_migrate(self, workdir: Path) -> None:
        """Under 10 s and 300 MB; the header is redacted in the fixture written."""
        value = _key("", 1024 * 1024)
        (workdir / "in").mkdir()
        (workdir / "in" / "c.yaml").write_text(
            "interactions:\n- request:\n    method: POST\n    uri: https://a.example/v1\n"
            f"    headers:\n      Authorization: [Bearer {value}]\n    body: '{{}}'\n"
            "  response:\n    status: {code: 200, message: OK}\n    headers: {}\n"
            "    body: {string: '{\"ok\": true}'}\n", encoding="utf-8")
        run = run_measured(["migrate", "in", "--to", "out", "--write"], workdir)
        assert run.code == 0, run.out + run.err
        assert run.seconds < 10, f"{run.seconds:.1f} CPU-s"
        assert run.peak_mb < 300, f"{run.peak_mb:.0f} MB"
        (written,) = (workdir / "out").iterdir()
        assert value[:64] not in written.read_text(encoding="utf-8")


class TestContainment:
    """Nothing is written or deleted through a symbolic link out of the root given."""

    def test_migrate_to_symlinked_subfolder(self, workdir: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
        """`--to OUT` with `OUT/sub` a link elsewhere: nothing lands there; refused."""
        source = workdir / "src" / "sub"
        source.mkdir(parents=True)
        (source / "c.yaml").write_text(
            "interactions:\n- request: {method: GET, uri: 'https://a.example/', headers: {},"
            " body: null}\n  response: {status: {code: 200, message: OK}, headers: {},"
            " body: {string: ok}}\n", encoding="utf-8")
        (workdir / "elsewhere").mkdir()
        (workdir / "out").mkdir()
        (workdir / "out" / "sub").symlink_to(workdir / "elsewhere")
        assert main(["migrate", "src", "--to", "out", "--write"]) == 1
        out = capsys.readouterr().out
        assert "refused src/sub/c.yaml /interactions/0: a symbolic link leads it out of" in out
        assert list((workdir / "elsewhere").iterdir()) == []

    def test_scrub_through_a_link(self, workdir: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A file linked out of the tree is not rewritten (exit 2, named); a link to a
        file inside the tree is followed and stays a link."""
        key = _key()
        text = json.dumps({"api_key": key}) + "\n"
        (workdir / "tree").mkdir()
        (workdir / "outside.json").write_text(text, encoding="utf-8")
        (workdir / "tree" / "in.json").write_text(text, encoding="utf-8")
        (workdir / "tree" / "out.json").symlink_to(workdir / "outside.json")
        (workdir / "tree" / "alias.json").symlink_to("in.json")
        assert main(["scrub", "tree", "--write"]) == 2
        out = capsys.readouterr().out  # (a linked file is shown by where it leads)
        assert "outside.json: cannot write:" in out
        assert "is a link to a file outside" in out
        assert "scrub that file where it is" in out
        assert (workdir / "outside.json").read_text(encoding="utf-8") == text
        assert (workdir / "tree" / "alias.json").is_symlink()
        assert key not in (workdir / "tree" / "in.json").read_text(encoding="utf-8")

    def test_prune_crafted_report(self, workdir: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """`fixture_dirs: ["/", "../elsewhere", a link out]`: no root, nothing deleted
        outside the report's project; its own fixtures still go."""
        name = "http." + "0" * 64 + ".json"
        project, elsewhere = workdir / "proj", workdir / "elsewhere"
        (project / "fixtures").mkdir(parents=True)
        elsewhere.mkdir()
        for folder in (project / "fixtures", elsewhere):
            (folder / name).write_text("{}", encoding="utf-8")
        (project / "fixtures" / "linked").symlink_to(elsewhere)
        report = {"version": 1, "partial": [],
                  "fixture_dirs": ["/", "../elsewhere", "fixtures/linked", "fixtures"],
                  "unused": [f"fixtures/{name}", f"../elsewhere/{name}",
                             str(elsewhere / name), f"fixtures/linked/{name}"]}
        (project / "report.json").write_text(json.dumps(report), encoding="utf-8")
        assert main(["prune", "--run-report", "proj/report.json", "--write"]) == 1
        out = capsys.readouterr().out
        for root in ("/", "../elsewhere", "fixtures/linked"):
            assert f"refused: {root}: a fixture root outside the project" in out
        assert (elsewhere / name).exists()
        assert not (project / "fixtures" / name).exists()

    def test_recording_over_a_linked_fixture(self, tmp_path: Path) -> None:
        """A fixture file that is a link out of the fixture directory is not written
        through (OutsideRootError, a PermissionError); its target is untouched."""
        store = FixtureDir(tmp_path / "fx")
        fixtures = ModelFixtures(store, mode="record", redactor=Redactor(RunSecrets()))
        fixtures.call("text", {"prompt": "a"}, lambda: "A")
        (written,) = store.files()
        outside = tmp_path / "outside.json"
        outside.write_bytes(written.read_bytes())
        written.unlink()
        written.symlink_to(outside)
        before = outside.read_bytes()
        with pytest.raises(OutsideRootError) as caught:
            ModelFixtures(store, mode="record", redactor=Redactor(RunSecrets())).call(
                "text", {"prompt": "a"}, lambda: "B")
        assert isinstance(caught.value, PermissionError)
        assert outside.read_bytes() == before

    def test_atomic_write_keeps_its_signature(self, tmp_path: Path) -> None:
        """`atomic_write(path, data)` as before; `root=` follows a link inside it."""
        atomic_write(tmp_path / "a", b"1")
        (tmp_path / "b").symlink_to("a")
        atomic_write(tmp_path / "b", b"2", root=tmp_path)
        assert (tmp_path / "b").is_symlink()
        assert (tmp_path / "a").read_bytes() == b"2"


class TestInternalError:
    """A bug exits 3 with one line naming where, never a traceback or the data."""

    def test_forced_error(self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
        """An exception no command expects: exit 3, one line on stderr, no value."""
        key = _key()

        def broken(*_args: object, **_kwargs: object) -> object:
            raise KeyError(key)

        monkeypatch.setattr(_cli, "check_paths", broken)
        (workdir / "a.txt").write_text("x", encoding="utf-8")
        assert main(["check", "a.txt"]) == 3
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "Traceback" not in captured.err
        assert key not in captured.err
        (line,) = [text for text in captured.err.splitlines() if "internal error" in text]
        assert line.startswith("redact: internal error (KeyError at ")
        assert "this is a bug in redactkey: please report it" in line

    def test_debug_shows_the_traceback(self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """REDACTKEY_DEBUG=1 prints the traceback before the line (for the bug report)."""
        monkeypatch.setenv("REDACTKEY_DEBUG", "1")
        monkeypatch.setattr(_cli, "check_paths", lambda *a, **k: 1 / 0)
        assert main(["check", "."]) == 3
        assert "Traceback" in capsys.readouterr().err
