"""`redact scrub`: dry run by default, atomic --write, fixtures re-keyed and renamed."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest

from redactkey.commands._cli import main
from redactkey.fixtures._format import Fixture
from redactkey.fixtures._store import FixtureDir, kind_for_file_name
from redactkey.keys._keys import KeySpec, key_from_material, key_material
from redactkey.recordings._readers import load_cassette
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
        cassette = load_cassette(workdir / "c.yaml")
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
        cassette = load_cassette(workdir / "g.yaml")
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
