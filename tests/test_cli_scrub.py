"""`redact scrub`: dry run by default, atomic --write, fixtures re-keyed and renamed."""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import os
import random
import stat
import string
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from helpers import load_recording
from redactkey.commands._cli import main
from redactkey.fixtures._format import Fixture
from redactkey.fixtures._store import FixtureDir, kind_for_file_name
from redactkey.keys._keys import KeySpec, key_from_material, key_material
from test_cli_check import FAKE_OPENAI, leaky_cassette


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scrub(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["scrub", *args])
    out, err = capsys.readouterr()
    return code, out + err


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


class TestScrubCassettes:
    """Third-party cassettes are rewritten only when they hold a finding."""

    def test_write_removes_what_an_extra_detector_finds(
        self, workdir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A configured detector's hit that `check` reports is what `scrub --write` removes."""
        token = "acme_" + "0123456789abcdef"
        (workdir / ".redactkey.toml").write_text(
            '[[detectors]]\nname = "acme-token"\npattern = "acme_[a-z0-9]{16}"\n',
            encoding="utf-8")
        (workdir / "a.json").write_text(json.dumps({"t": f"key {token}"}) + "\n",
                                        encoding="utf-8")
        code, out = scrub(capsys, "--write", ".")
        assert code == 0, out
        assert token not in (workdir / "a.json").read_text(encoding="utf-8")
        assert main(["check", "a.json"]) == 0

    def test_dry_run_changes_nothing(self, workdir: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """Without --write nothing is touched; the plan is masked; exit 1."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        before = snapshot(workdir)
        code, out = scrub(capsys, ".")
        assert code == 1
        assert "c.yaml:6: sensitive-key (authorization) Bear…" in out
        assert "--write" in out
        assert FAKE_OPENAI not in out
        assert snapshot(workdir) == before

    def test_write_redacts_and_keeps_a_cassette(self, workdir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
        """--write leaves a loadable cassette without the key; a second run changes nothing."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        code, out = scrub(capsys, "--write", ".")
        assert code == 0, out
        text = (workdir / "c.yaml").read_text(encoding="utf-8")
        assert FAKE_OPENAI not in text
        cassette = load_recording(workdir / "c.yaml")
        assert cassette.interactions[0].request.header("authorization") == ["[REDACTED]"]
        assert main(["check", "c.yaml"]) == 0
        capsys.readouterr()
        again = snapshot(workdir)
        assert scrub(capsys, ".")[0] == 0
        assert snapshot(workdir) == again

    def test_gzip_binary_body_recompressed(self, workdir: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
        """A key inside a gzip `!!binary` body is redacted and the body stays gzip."""
        body = json.dumps({"echo": f"token {FAKE_OPENAI}"}).encode()
        packed = base64.b64encode(gzip.compress(body)).decode()
        text = ("interactions:\n- request:\n    method: GET\n    uri: https://x.test/\n"
                "  response:\n    body:\n      string: !!binary |\n"
                f"        {packed}\n    headers:\n      Content-Encoding:\n      - gzip\n"
                "    status:\n      code: 200\nversion: 1\n")
        (workdir / "g.yaml").write_text(text, encoding="utf-8")
        assert scrub(capsys, "--write", "g.yaml")[0] == 0
        cassette = load_recording(workdir / "g.yaml")
        response = cassette.interactions[0].response
        assert response is not None
        assert response.body == {"echo": "token [REDACTED]"}
        assert "!!binary" in (workdir / "g.yaml").read_text(encoding="utf-8")

    def test_clean_cassette_untouched(self, workdir: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
        """A cassette with only placeholders is not rewritten."""
        text = leaky_cassette().replace(f"Bearer {FAKE_OPENAI}", "<CENSORED>")
        (workdir / "c.yaml").write_text(text, encoding="utf-8")
        assert scrub(capsys, "--write", ".")[0] == 0
        assert (workdir / "c.yaml").read_text(encoding="utf-8") == text


def _leaky_fixture(directory: Path) -> Path:
    # recorded before the key was known to the redactor: the key sits in the key material
    request = {"query": "weather", "api_key_hint": f"use {FAKE_OPENAI}"}
    material = key_material("tool:search", request, spec=KeySpec.whole())
    fixture = Fixture(key=key_from_material(material), kind="tool:search", request=material,
                      answer={"text": "sunny"})
    return FixtureDir(directory).put(fixture)


class TestScrubFixtures:
    """Our fixtures: redacted, re-keyed, renamed; conflicts refused."""

    def test_rekey_and_rename(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The redacted key material gives a new key; the file is renamed to it."""
        old = _leaky_fixture(workdir / "fx")
        code, out = scrub(capsys, "fx")
        assert code == 1
        assert "would scrub (1 finding redacted; re-keyed" in out
        assert old.exists()
        code, out = scrub(capsys, "--write", "fx")
        assert code == 0, out
        assert not old.exists()
        (new,) = sorted((workdir / "fx").iterdir())
        kind, key = kind_for_file_name(new.name)  # type: ignore[misc]
        doc = json.loads(new.read_text(encoding="utf-8"))
        assert (kind, key) == ("tool:search", doc["key"])
        assert key_from_material(doc["request"]) == key
        assert FAKE_OPENAI not in new.read_text(encoding="utf-8")
        assert main(["audit", "fx"]) == 0
        capsys.readouterr()

    def test_rename_conflict_is_refused(self, workdir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """A different file already at the new name is never overwritten."""
        old = _leaky_fixture(workdir / "fx")
        assert scrub(capsys, "--write", "fx")[0] == 0
        (new,) = sorted((workdir / "fx").iterdir())
        doc = json.loads(new.read_text(encoding="utf-8"))
        doc["answer"] = {"text": "different"}
        new.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _leaky_fixture(workdir / "fx")
        before = snapshot(workdir)
        code, out = scrub(capsys, "--write", "fx")
        assert code == 1
        assert "already exists with other content" in out
        assert snapshot(workdir) == before
        assert old.exists()

    def test_unreadable_path_is_exit_2(self, workdir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """A missing path is exit 2, named."""
        code, out = scrub(capsys, "missing-dir")
        assert code == 2
        assert "missing-dir" in out


def _fake_key(seed: int) -> str:
    """An OpenAI-shaped key made up at run time (random letters and digits)."""
    rng = random.Random(seed)
    return "sk-" + "proj-" + "".join(rng.choice(string.ascii_letters + string.digits)
                                     for _ in range(48))


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    old, new = before.splitlines(), after.splitlines()
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


class TestScrubKeepsTheRest:
    """A third-party recording changes only where its secrets were."""

    def test_yaml_layout_types_and_placeholders_stay(
            self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Timestamps stay unquoted, comments, flow style and folded lines stay, a
        placeholder already there stays, a cookie keeps its attributes; only the key's
        span changes in the body."""
        key = _fake_key(1)
        text = (
            "# recorded by hand\n"
            "interactions:\n"
            "- request:\n"
            "    body: '{\"model\": \"gpt-4o\",   \"input\": \"use " + key + " now\"}'\n"
            "    headers:\n"
            "      Authorization: [Bearer <OPENAI_ACCESS_TOKEN>]\n"
            "      X-Note: a folded plain value that runs on\n"
            "        to a second line\n"
            "    method: POST\n"
            "    uri: https://api.openai.com/v1/responses\n"
            "  response:\n"
            "    headers:\n"
            "      Set-Cookie:\n"
            "      - __cf_bm=" + key[8:40] + "; path=/; expires=Fri, 14-Mar-25 14:31:48 GMT;\n"
            "        domain=.api.openai.com; HttpOnly; Secure\n"
            "    status: {code: 200, message: OK}\n"
            "  recorded_at: 2024-05-01 12:00:00\n"
            "version: 1\n")
        (workdir / "c.yaml").write_text(text, encoding="utf-8")
        code, out = scrub(capsys, "--write", "c.yaml")
        assert code == 0, out
        after = (workdir / "c.yaml").read_text(encoding="utf-8")
        assert _changed_lines(text, after) == [
            ("    body: '{\"model\": \"gpt-4o\",   \"input\": \"use " + key + " now\"}'",
             "    body: '{\"model\": \"gpt-4o\",   \"input\": \"use [REDACTED] now\"}'"),
            ("      - __cf_bm=" + key[8:40] + "; path=/; expires=Fri, 14-Mar-25 14:31:48 GMT;",
             "      - __cf_bm=[REDACTED]; path=/; expires=Fri, 14-Mar-25 14:31:48 GMT;"),
        ]
        loaded = yaml.safe_load(after)
        assert isinstance(loaded["interactions"][0]["recorded_at"], datetime.datetime)

    def test_binary_blocks_keep_their_tag_and_width(
            self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A Ruby `!binary` block without a secret keeps every byte; one with a secret
        keeps its tag, indentation and line width, and its body differs only at the key;
        a gzip body without a secret is not compressed again."""
        key = _fake_key(2)

        def block(data: bytes, tag: str, width: int) -> str:
            encoded = base64.b64encode(data).decode()
            return f"{tag} |-\n" + "".join(f"        {encoded[i:i + width]}\n"
                                            for i in range(0, len(encoded), width))

        leaky = json.dumps({"id": "resp_1", "echo": f"the key is {key}", "n": 1}).encode()
        clean = gzip.compress(json.dumps({"id": "resp_2", "text": "hello " * 40}).encode(),
                              mtime=7)
        text = ("---\nhttp_interactions:\n- request:\n    method: post\n"
                "    uri: https://api.openai.com/v1/chat\n    body:\n"
                "      encoding: ASCII-8BIT\n      string: " + block(leaky, "!binary", 60)
                + "  response:\n    body:\n      encoding: ASCII-8BIT\n      string: "
                + block(clean, "!!binary", 76) + "recorded_with: VCR 6.2.0\n")
        (workdir / "r.yml").write_text(text, encoding="utf-8")
        code, out = scrub(capsys, "--write", "r.yml")
        assert code == 0, out
        after = (workdir / "r.yml").read_text(encoding="utf-8")
        start = text.index("  response:")
        assert after.endswith(text[start:])  # the gzip body: byte for byte
        head = after[:after.index("  response:")]
        assert "string: !binary |-\n" in head
        lines = [line for line in head.splitlines() if line.startswith("        ")]
        assert {len(line) for line in lines[:-1]} == {8 + 60}
        body = base64.b64decode("".join(line.strip() for line in lines))
        assert body == leaky.replace(key.encode(), b"[REDACTED]")

    def test_json_layout_stays(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A JSON recording keeps its indentation, spacing and escapes; only the token
        that held the key is written again."""
        key = _fake_key(3)
        text = ('{\n    "http_interactions": [ {\n\t"request": {"uri": "https:\\/\\/x.test",'
                ' "headers": {"X-Api-Key": ["' + key + '"]}},\n'
                '\t"response": {"body": {"string": "caf\\u00e9"}, "status": {"code": 200}}\n'
                '    } ],\n    "recorded_with": "VCR 6.2.0"\n}\n')
        (workdir / "c.json").write_text(text, encoding="utf-8")
        code, out = scrub(capsys, "--write", "c.json")
        assert code == 0, out
        assert (workdir / "c.json").read_text(encoding="utf-8") == \
            text.replace(key, "[REDACTED]")

    def test_anchors_flow_style_crlf_and_member_names(
            self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An anchored value is edited once and its alias stays an alias; a value in a flow
        mapping is quoted only where the placeholder needs it; CRLF line endings stay; a
        key held as a member name is replaced in place."""
        key, other = _fake_key(4), _fake_key(5)
        text = ("interactions:\r\n- request:\r\n"
                "    headers: {Authorization: Bearer " + key + ", Accept: '*/*'}\r\n"
                "    body: &shared 'echo " + other + "'\r\n"
                "  response: {body: *shared, status: {code: 200}}\r\nversion: 1\r\n")
        (workdir / "c.yaml").write_bytes(text.encode())
        (workdir / "m.json").write_text('{"tokens": {"' + key + '": 1}, "n": 2}\n',
                                        encoding="utf-8")
        code, out = scrub(capsys, "--write", ".")
        assert code == 0, out
        assert (workdir / "c.yaml").read_bytes().decode() == text.replace(
            "Bearer " + key, "'[REDACTED]'").replace(other, "[REDACTED]")
        assert (workdir / "m.json").read_text(encoding="utf-8") == \
            '{"tokens": {"[REDACTED]": 1}, "n": 2}\n'

    def test_a_key_split_across_stream_events(self, workdir: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
        """A streamed body in a literal block stays a block: only the events that held the
        key change (the rest of a split key is taken out of the event that held it)."""
        source = ROOT / "tests" / "data" / "formats" / "sse-leaky.yaml"
        text = source.read_text(encoding="utf-8")
        (workdir / "s.yaml").write_text(text, encoding="utf-8")
        code, out = scrub(capsys, "--write", "s.yaml")
        assert code == 0, out
        changed = _changed_lines(text, (workdir / "s.yaml").read_text(encoding="utf-8"))
        assert [new.split('"content":')[1] for _, new in changed] == [
            '"Use [REDACTED]"}}]}', '""}}]}', '" or [REDACTED]."}}]}']


class TestScrubWrites:
    """--write keeps a file's mode, never replaces a file that changed since it was read
    and never writes through a link out of the tree it was given."""

    @pytest.mark.parametrize("mode", [0o444, 0o640])
    def test_mode_is_kept(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                          mode: int) -> None:
        """A read-only cassette stays read-only, a group-readable one group-readable."""
        target = workdir / "c.yaml"
        target.write_text(leaky_cassette(), encoding="utf-8")
        target.chmod(mode)
        code, out = scrub(capsys, "--write", "c.yaml")
        assert code == 0, out
        assert FAKE_OPENAI not in target.read_text(encoding="utf-8")
        assert stat.S_IMODE(target.stat().st_mode) == mode

    @pytest.mark.parametrize("same_size", [False, True])
    def test_a_file_changed_since_it_was_read_is_refused(
            self, workdir: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch, same_size: bool) -> None:
        """Someone writes the file after scrub read it: nothing is replaced, the file
        is named with what to do, exit 2 (also when size and mtime were put back)."""
        from redactkey.commands import _scrub

        target = workdir / "c.yaml"
        target.write_text(leaky_cassette(), encoding="utf-8")
        theirs = leaky_cassette().replace("models", "MODELS" if same_size else "engines")
        real = _scrub.scrub_one

        def meanwhile(checker: object, one: object) -> object:
            outcome = real(checker, one)  # type: ignore[arg-type]
            was = target.stat()
            target.write_text(theirs, encoding="utf-8")
            if same_size:
                os.utime(target, ns=(was.st_atime_ns, was.st_mtime_ns))
            return outcome

        monkeypatch.setattr(_scrub, "scrub_one", meanwhile)
        code, out = scrub(capsys, "--write", "c.yaml")
        assert code == 2, out
        assert "c.yaml: cannot write: the file changed since scrub read it" in out
        assert "run scrub again" in out
        assert target.read_text(encoding="utf-8") == theirs
        assert sorted(p.name for p in workdir.iterdir()) == [".redactkey.toml", "c.yaml"]

    def test_no_write_through_a_link_out_of_the_tree(
            self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A cassette that links out of the tree named is refused and left as it is; a
        link to a file inside the tree writes that file once and stays a link."""
        outside = workdir / "elsewhere"
        outside.mkdir()
        (outside / "theirs.yaml").write_text(leaky_cassette(), encoding="utf-8")
        tree = workdir / "tree"
        tree.mkdir()
        (tree / "out.yaml").symlink_to(outside / "theirs.yaml")
        (tree / "ours.yaml").write_text(leaky_cassette(), encoding="utf-8")
        (tree / "twin.yaml").symlink_to("ours.yaml")
        code, out = scrub(capsys, "--write", "tree")
        assert code == 2, out
        assert "tree/out.yaml is a link to a file outside" in out
        assert (outside / "theirs.yaml").read_text(encoding="utf-8") == leaky_cassette()
        assert (tree / "out.yaml").is_symlink()
        assert (tree / "twin.yaml").is_symlink()
        assert FAKE_OPENAI not in (tree / "ours.yaml").read_text(encoding="utf-8")


_MEASURED = """\
import resource, sys
from redactkey.commands._cli import main

main(["scrub", sys.argv[2]])  # imports, compiled rules: what every run pays first
before = resource.getrusage(resource.RUSAGE_SELF)
code = main(["scrub", "--write", sys.argv[1]])
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print("MEASURED", code, cpu, (after.ru_maxrss - before.ru_maxrss) // 1024, file=sys.stderr)
"""


def _alias_bomb(levels: int = 9) -> str:
    """A billion-laughs document: 9 levels of 9 aliases (9^9 strings once expanded)."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("shape", ["plain", "vcrpy"])
def test_alias_bomb_is_refused_at_once(tmp_path: Path, shape: str) -> None:
    """`scrub --write` on a billion-laughs YAML (alone, or as a cassette's body) refuses
    it in under a second of CPU and a few MB, the whole command measured in a process of
    its own; the file is left as it was."""
    import subprocess
    import sys

    bomb = _alias_bomb()
    if shape == "vcrpy":
        inner = "".join(f"      {line}\n" for line in bomb.splitlines())
        bomb = ("interactions:\n- request:\n    method: GET\n    uri: https://x.test/\n"
                "  response:\n    body:\n" + inner + "    status: {code: 200}\nversion: 1\n")
    target = tmp_path / "bomb.yaml"
    target.write_text(bomb, encoding="utf-8")
    (tmp_path / "warm.yaml").write_text(leaky_cassette(), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _MEASURED, str(target),
                           str(tmp_path / "warm.yaml")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    code, cpu, grown_mb = done.stderr.split("MEASURED")[1].split()[:3]
    assert int(code) in (0, 1)
    assert float(cpu) < 1.0, f"{cpu} s of CPU"
    assert int(grown_mb) < 16, f"{grown_mb} MB more"
    assert target.read_text(encoding="utf-8") == bomb
