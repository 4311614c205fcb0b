"""Secret values never reach a report line: schema errors and version problems are masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redactkey._errors import FixtureFormatError
from redactkey.commands._cli import main
from redactkey.fixtures._format import parse_fixture

SECRET = "sk-proj-" + "Q7r9" * 12
VALID_KEY = "a" * 64


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


BROKEN_FIXTURES = {
    "whole-document": {"version": 1, "key": VALID_KEY, "kind": "chat",
                       "request": {"messages": SECRET}},
    "version": {"version": SECRET, "key": VALID_KEY, "kind": "chat", "request": {}},
    "key": {"version": 1, "key": SECRET, "kind": "chat", "request": {}, "answer": 1},
}


class TestAuditSchemaErrors:
    """`redact audit` describes a broken fixture without quoting its values."""

    @pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
    @pytest.mark.parametrize("case", sorted(BROKEN_FIXTURES))
    def test_no_secret_in_report(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                                 case: str, fmt: str) -> None:
        """The schema/version finding is reported, masked, in every format."""
        (workdir / "f.json").write_text(json.dumps(BROKEN_FIXTURES[case]), encoding="utf-8")
        code = main(["audit", "--format", fmt, "f.json"])
        out, err = capsys.readouterr()
        assert code == 1
        assert "schema-invalid" in out or "unknown-version" in out
        assert SECRET[8:20] not in out + err

    def test_scrub_version_problem_masked(self, workdir: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """scrub's one-line problem for a bad version names the type, not the value."""
        (workdir / "f.json").write_text(json.dumps(BROKEN_FIXTURES["version"]),
                                        encoding="utf-8")
        code = main(["scrub", "f.json"])
        out, err = capsys.readouterr()
        assert code == 2
        assert "format version of type str is not supported" in out
        assert SECRET[8:20] not in out + err


class TestFixtureFormatErrorMessage:
    """Reading a fixture whose version holds a secret raises an error without it."""

    def test_version_value_not_quoted(self) -> None:
        """The error names the file and the version's type only."""
        raw = json.dumps(BROKEN_FIXTURES["version"]).encode()
        with pytest.raises(FixtureFormatError) as info:
            parse_fixture("f.json", raw)
        assert "f.json" in str(info.value)
        assert SECRET[8:20] not in str(info.value)
        assert SECRET[8:20] not in repr(info.value)


class TestSecretMemberNames:
    """An object key holding a secret is masked in every pointer a report prints."""

    @pytest.mark.parametrize("command", ["check", "audit"])
    @pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
    def test_pointer_masked(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                            command: str, fmt: str) -> None:
        """A token map keyed by the token is found and reported as `/tokens/sk-p…`."""
        (workdir / "t.json").write_text(json.dumps({"tokens": {SECRET: "alice"}}),
                                        encoding="utf-8")
        code = main([command, "--format", fmt, "t.json"])
        out, err = capsys.readouterr()
        assert code == 1
        assert SECRET[8:20] not in out + err
        if fmt == "json":
            pointers = {issue["pointer"] for issue in json.loads(out)["findings"]}
            assert "/tokens/sk-p…" in pointers

    def test_schema_error_pointer_masked(self, workdir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
        """A schema error below a secret member name names the member masked."""
        doc = {"version": 1, "key": VALID_KEY, "kind": "chat", "request": {},
               "answer": 1, "stats": {SECRET: 1}}
        (workdir / "f.json").write_text(json.dumps(doc), encoding="utf-8")
        code = main(["audit", "--format", "json", "f.json"])
        out, err = capsys.readouterr()
        assert code == 1
        assert SECRET[8:20] not in out + err


class TestRedactorSurfaces:
    """Finding reprs and redactor errors mask a member name that holds a secret."""

    def test_finding_repr(self) -> None:
        """The finding under a token-keyed map prints its pointer masked, keeps it whole."""
        from redactkey import Redactor, RunSecrets

        (finding,) = Redactor(RunSecrets()).findings({"tokens": {SECRET: "alice"}})
        assert finding.pointer == f"/tokens/{SECRET}"
        assert SECRET[8:20] not in repr(finding)
        assert SECRET[8:20] not in str(finding)
        assert "/tokens/sk-p…" in repr(finding)

    def test_usage_error_message(self) -> None:
        """A value that cannot be redacted is located by a masked pointer."""
        from redactkey import Redactor, RunSecrets, UsageError

        with pytest.raises(UsageError) as info:
            Redactor(RunSecrets()).redact({"tokens": {SECRET: object()}})
        assert "/tokens/sk-p…" in str(info.value)
        assert SECRET[8:20] not in str(info.value)


class TestMissingFixtureDiff:
    """The nearest-call diff of a MissingFixtureError masks secrets in member names."""

    def test_recorded_member_name(self, tmp_path: Path) -> None:
        """A fixture recorded with a token as a member name shows it as `sk-p…`."""
        from redactkey import Fixture, FixtureDir, MissingFixtureError
        from redactkey.keys._keys import KeySpec, key_from_material, key_material
        from redactkey.record._tools import ToolFixtures

        material = key_material("tool:search", {"query": "w", "tokens": {SECRET: "alice"}},
                                spec=KeySpec.whole())
        FixtureDir(tmp_path).put(Fixture(key=key_from_material(material), kind="tool:search",
                                         request=material, answer={"t": 1}))
        tools = ToolFixtures(FixtureDir(tmp_path), mode="replay")
        with pytest.raises(MissingFixtureError) as info:
            tools.call("search", {"query": "w", "tokens": {SECRET: "bob"}}, None)
        message = str(info.value)
        assert "/request/tokens/sk-p…: removed" in message
        assert SECRET[8:20] not in message
        assert SECRET[8:20] not in repr(info.value)
        assert all(SECRET[8:20] not in line for line in info.value.diff)
