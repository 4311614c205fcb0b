"""`redact prune --run-report FILE [--write] [--force]` on a recorded project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redactkey import FixtureDir, ModelFixtures, Redactor, RunReport, RunSecrets
from redactkey.commands._cli import main

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly")

TESTS = """
def test_a(model_fixtures):
    assert model_fixtures.call("text", {"prompt": "a"}, lambda: "A") == "A"

def test_b(model_fixtures):
    assert model_fixtures.call("text", {"prompt": "b"}, lambda: "B") == "B"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose two tests recorded one fixture each; then test_b stopped calling."""
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_calls=TESTS)
    pytester.runpytest(*QUIET, "--redactkey-mode=record").assert_outcomes(passed=2)
    pytester.makepyfile(test_calls=TESTS.replace(
        'assert model_fixtures.call("text", {"prompt": "b"}, lambda: "B") == "B"', "pass"))
    monkeypatch.chdir(pytester.path)
    return pytester


def _fixture_files(project: pytest.Pytester) -> list[str]:
    return sorted(p.name for p in (project.path / "fixtures" / "test_calls").iterdir())


def _fixture_b(project: pytest.Pytester) -> str:
    store = FixtureDir(project.path / "fixtures" / "test_calls")
    fixture = next(f for f in store.iter_fixtures() if f.answer == "B")
    return store.path_for(fixture.kind, fixture.key).name


class TestPrune:
    """Dry run, write, refusal of partial runs, and the fixture roots as a fence."""

    def test_dry_run_then_write(self, project: pytest.Pytester,
                                capsys: pytest.CaptureFixture[str]) -> None:
        """The dry run lists the unused file and deletes nothing; --write deletes only it."""
        project.runpytest(*QUIET).assert_outcomes(passed=2)
        unused = _fixture_b(project)
        before = _fixture_files(project)
        assert main(["prune", "--run-report", ".redactkey-report.json"]) == 0
        out = capsys.readouterr().out
        assert f"would delete fixtures/test_calls/{unused}" in out
        assert "1 file would be deleted; run again with --write" in out
        assert _fixture_files(project) == before
        assert main(["prune", "--run-report", ".redactkey-report.json", "--write"]) == 0
        assert "1 file deleted" in capsys.readouterr().out
        assert _fixture_files(project) == sorted(set(before) - {unused})
        project.runpytest(*QUIET).assert_outcomes(passed=2)

    def test_partial_run_is_refused_unless_forced(self, project: pytest.Pytester,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A -k run's report is refused (exit 1, nothing deleted); --force overrides it."""
        project.runpytest(*QUIET, "-k", "test_a").assert_outcomes(passed=1, deselected=1)
        report = json.loads((project.path / ".redactkey-report.json").read_text())
        assert any(reason.startswith("-k 'test_a'") for reason in report["partial"])
        before = _fixture_files(project)
        assert main(["prune", "--run-report", ".redactkey-report.json", "--write"]) == 1
        out = capsys.readouterr().out
        assert "refused: the report comes from a partial run" in out
        assert "1 test deselected" in out
        assert _fixture_files(project) == before
        assert main(["prune", "--run-report", ".redactkey-report.json", "--write",
                     "--force"]) == 0
        capsys.readouterr()

    def test_files_outside_the_roots_are_never_touched(
            self, project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
        """Paths outside the named fixture roots, or not fixture names, are refused."""
        project.runpytest(*QUIET).assert_outcomes(passed=2)
        path = project.path / ".redactkey-report.json"
        report = json.loads(path.read_text())
        victim = project.path / "keep.json"
        victim.write_text("{}")
        inside = project.path / "fixtures" / "test_calls" / "notes.json"
        inside.write_text("{}")
        report["unused"] += ["keep.json", "fixtures/test_calls/notes.json",
                             "../outside/http." + "0" * 64 + ".json"]
        path.write_text(json.dumps(report))
        assert main(["prune", "--run-report", str(path), "--write"]) == 1
        out = capsys.readouterr().out
        assert "refused: keep.json: outside the fixture roots the report names" in out
        assert "refused: fixtures/test_calls/notes.json: not a fixture file name" in out
        assert victim.exists()
        assert inside.exists()
        assert "1 file deleted, 3 refused" in out

    def test_bad_reports_are_usage_errors(self, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """A missing, non-JSON or foreign report exits 2 with one line."""
        assert main(["prune", "--run-report", str(tmp_path / "none.json")]) == 2
        (tmp_path / "bad.json").write_text("{")
        assert main(["prune", "--run-report", str(tmp_path / "bad.json")]) == 2
        (tmp_path / "other.json").write_text('{"version": 7}')
        assert main(["prune", "--run-report", str(tmp_path / "other.json")]) == 2
        assert main(["prune"]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert "not a redactkey run report" in err

    def test_library_run_report(self, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
        """A RunReport written by your own harness names its directories as the roots."""
        store = FixtureDir(tmp_path / "fx")
        recorder = ModelFixtures(store, mode="record", redactor=Redactor(RunSecrets()))
        recorder.call("text", {"prompt": "1"}, lambda: 1)
        recorder.call("text", {"prompt": "2"}, lambda: 2)
        report = RunReport()
        ModelFixtures(store, mode="replay", redactor=Redactor(RunSecrets()),
                      report=report).call("text", {"prompt": "1"}, None)
        written = report.write(tmp_path / "report.json", directories=[tmp_path / "fx"])
        assert main(["prune", "--run-report", str(written), "--write"]) == 0
        assert "1 file deleted" in capsys.readouterr().out
        assert len(list(store.files())) == 1
