"""Fixture age from git history: batched lookup, max-age on the layers, the audit and the plugin."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from redactkey import (
    ExpiredFixtureError,
    ExpiredFixtureWarning,
    FixtureDir,
    ModelFixtures,
    Redactor,
    RunSecrets,
    UsageError,
)
from redactkey.commands._cli import main
from redactkey.fixtures._age import FixtureAges, format_duration, parse_duration

pytest_plugins = ["pytester"]

OLD = "2020-01-02T03:04:05+00:00"
REQUEST = {"model": "m", "prompt": "hi"}


def git(repo: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    if date is not None:
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = date
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def commit(repo: Path, message: str, date: str | None = None) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, date=date)


def recent() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 86400))


def record(store: FixtureDir, request: dict[str, Any], answer: Any) -> Path:
    fixtures = ModelFixtures(store, mode="record", redactor=Redactor(RunSecrets()))
    fixtures.call("text", request, lambda: answer)
    return next(p for p in store.files() if json.loads(p.read_text())["answer"] == answer)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    return tmp_path


class TestDurations:
    """`30d`, `12h`, `2w` and combinations."""

    @pytest.mark.parametrize(("text", "seconds"), [
        ("30d", 30 * 86400), ("12h", 43200), ("2w", 14 * 86400), ("1w3d", 10 * 86400),
        (" 90M ", 5400), ("45s", 45)])
    def test_parses(self, text: str, seconds: int) -> None:
        """Units s, m, h, d, w; blanks and case do not matter."""
        assert parse_duration(text) == timedelta(seconds=seconds)

    @pytest.mark.parametrize("text", ["", "30", "d", "3x", "-3d", "0d", "3d junk"])
    def test_refuses(self, text: str) -> None:
        """Anything else is a UsageError that shows the accepted form."""
        with pytest.raises(UsageError, match="30d, 12h, 2w"):
            parse_duration(text)

    def test_formats(self) -> None:
        """Ages print in their largest whole unit."""
        assert format_duration(timedelta(days=95, hours=3)) == "95d"
        assert format_duration(timedelta(minutes=4)) == "4m"


class TestFixtureAges:
    """Commit time of the last change, with a constant number of git calls per tree."""

    def test_commit_times_and_fallbacks(self, repo: Path) -> None:
        """Committed files age by commit; new and modified files by mtime, saying why."""
        fixtures = repo / "tests" / "fixtures"
        fixtures.mkdir(parents=True)
        (fixtures / "old.json").write_text("1")
        (fixtures / "changed.json").write_text("1")
        commit(repo, "old", OLD)
        (fixtures / "changed.json").write_text("2")
        (fixtures / "new.json").write_text("1")
        ages = FixtureAges().ages(fixtures)
        by_name = {p.name: a for p, a in ages.items()}
        assert by_name["old.json"].source == "git"
        assert by_name["old.json"].recorded_at == 1577934245
        assert (by_name["changed.json"].source, by_name["changed.json"].reason) == (
            "mtime", "uncommitted changes")
        assert (by_name["new.json"].source, by_name["new.json"].reason) == (
            "mtime", "not committed")

    def test_last_change_wins(self, repo: Path) -> None:
        """A file changed again later is as old as its last change, not its first."""
        (repo / "a.json").write_text("1")
        commit(repo, "first", OLD)
        (repo / "a.json").write_text("2")
        commit(repo, "second", recent())
        assert FixtureAges().age_of(repo / "a.json").age() < timedelta(days=2)  # type: ignore[union-attr]

    def test_outside_git_uses_mtime(self, tmp_path: Path) -> None:
        """Outside a repository every file ages by mtime, and says so."""
        (tmp_path / "a.json").write_text("1")
        found = FixtureAges().age_of(tmp_path / "a.json")
        assert found is not None
        assert (found.source, found.reason) == ("mtime", "not in a git repository")

    def test_one_batched_call_per_tree(self, repo: Path) -> None:
        """200 files cost the same two git calls as one, and a second lookup costs none."""
        for n in range(200):
            (repo / f"f{n}.json").write_text(str(n))
        commit(repo, "many", OLD)
        calls: list[list[str]] = []

        def counting(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
            calls.append(args)
            return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)

        ages = FixtureAges(runner=counting)
        found = ages.ages(repo)
        assert len(found) == 200
        assert all(a.source == "git" for a in found.values())
        assert [c[0] for c in calls] == ["log", "diff"]
        for n in range(200):
            ages.age_of(repo / f"f{n}.json")
        assert len(calls) == 2


class TestLayerExpiry:
    """`max_age` with `on_expiry` on ModelFixtures (and the transport, through it)."""

    def _setup(self, repo: Path) -> tuple[FixtureDir, Path, Path]:
        store = FixtureDir(repo / "fixtures")
        old = record(store, {**REQUEST, "n": 1}, "old answer")
        commit(repo, "old", OLD)
        fresh = record(store, {**REQUEST, "n": 2}, "fresh answer")
        commit(repo, "fresh", recent())
        return store, old, fresh

    def _fixtures(self, store: FixtureDir, **options: Any) -> ModelFixtures:
        return ModelFixtures(store, mode="replay", redactor=Redactor(RunSecrets()),
                             max_age="90d", **options)

    def test_warn(self, repo: Path) -> None:
        """warn: the old fixture replays with a warning naming it, its age and the source."""
        store, old, _ = self._setup(repo)
        fixtures = self._fixtures(store)
        with pytest.warns(ExpiredFixtureWarning) as caught:
            assert fixtures.call("text", {**REQUEST, "n": 1}, None) == "old answer"
        message = str(caught[0].message)
        assert str(old) in message
        assert "(by git)" in message
        assert "90d" in message
        assert fixtures.call("text", {**REQUEST, "n": 2}, None) == "fresh answer"

    def test_fail(self, repo: Path) -> None:
        """fail: ExpiredFixtureError, which says how to re-record."""
        store, old, _ = self._setup(repo)
        with pytest.raises(ExpiredFixtureError) as caught:
            self._fixtures(store, on_expiry="fail").call("text", {**REQUEST, "n": 1}, None)
        assert caught.value.path == str(old)
        assert "re-record it" in str(caught.value)

    def test_rerecord(self, repo: Path) -> None:
        """rerecord: an expired fixture is recorded again when a live callee is given."""
        store, old, fresh = self._setup(repo)
        fixtures = self._fixtures(store, on_expiry="rerecord")
        assert fixtures.call("text", {**REQUEST, "n": 1}, lambda: "new answer") == "new answer"
        assert json.loads(old.read_text())["answer"] == "new answer"
        before = fresh.read_bytes()
        assert fixtures.call("text", {**REQUEST, "n": 2}, lambda: "unused") == "fresh answer"
        assert fresh.read_bytes() == before

    def test_rerecord_without_callee_warns(self, repo: Path) -> None:
        """rerecord with no live callee (pure replay) falls back to a warning."""
        store, _, _ = self._setup(repo)
        with pytest.warns(ExpiredFixtureWarning):
            self._fixtures(store, on_expiry="rerecord").call("text", {**REQUEST, "n": 1}, None)

    def test_bad_arguments(self, tmp_path: Path) -> None:
        """A bad max_age or on_expiry is a UsageError."""
        with pytest.raises(UsageError):
            ModelFixtures(FixtureDir(tmp_path), max_age="ninety days")
        with pytest.raises(UsageError, match="on_expiry"):
            ModelFixtures(FixtureDir(tmp_path), max_age="9d", on_expiry="explode")  # type: ignore[arg-type]


class TestAuditMaxAge:
    """`redact audit --max-age` reports `expired-fixture` warnings, in SARIF too."""

    def test_expired_fixture_rule(self, repo: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
        """Only the old file is reported; text, JSON and SARIF carry the rule."""
        store = FixtureDir(repo / "fixtures")
        old = record(store, {**REQUEST, "n": 1}, "old answer")
        commit(repo, "old", OLD)
        record(store, {**REQUEST, "n": 2}, "fresh answer")
        commit(repo, "fresh", recent())
        monkeypatch.chdir(repo)
        assert main(["audit", "fixtures", "--max-age", "90d", "--format", "json"]) == 1
        report = json.loads(capsys.readouterr().out)
        expired = [i for i in report["findings"] if i["rule"] == "expired-fixture"]
        assert [Path(i["path"]).name for i in expired] == [old.name]
        assert expired[0]["severity"] == "warning"
        assert "by git" in expired[0]["detail"]
        assert main(["audit", "fixtures", "--max-age", "90d", "--format", "sarif"]) == 1
        sarif = json.loads(capsys.readouterr().out)
        results = sarif["runs"][0]["results"]
        assert [r["ruleId"] for r in results] == ["expired-fixture"]
        assert main(["audit", "fixtures", "--max-age", "100000d"]) == 0
        capsys.readouterr()
        assert main(["audit", "fixtures", "--max-age", "soon"]) == 2
        assert "30d, 12h, 2w" in capsys.readouterr().err


PLUGIN_TEST = """
def test_old(model_fixtures):
    assert model_fixtures.call("text", {"n": 1}, lambda: "live") in ("recorded", "live")

def test_fresh(model_fixtures):
    assert model_fixtures.call("text", {"n": 2}, lambda: "live") == "recorded"
"""


class TestPluginExpiry:
    """`--redactkey-max-age` with `--redactkey-on-expiry=warn|fail|rerecord`."""

    def test_warn_fail_rerecord(self, pytester: pytest.Pytester,
                                monkeypatch: pytest.MonkeyPatch) -> None:
        """warn passes with a warning, fail fails the old test, rerecord records it again."""
        for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
            monkeypatch.delenv(name, raising=False)
        repo = pytester.path
        git(repo, "init", "-q")
        pytester.makepyfile(test_aged=PLUGIN_TEST)
        store = FixtureDir(repo / "fixtures" / "test_aged")
        record(store, {"n": 1}, "recorded")
        commit(repo, "old", OLD)
        record(store, {"n": 2}, "recorded")
        commit(repo, "fresh", recent())
        quiet = ("-p", "no:hypothesispytest", "-p", "no:randomly", "-p", "no:cacheprovider")
        warned = pytester.runpytest(*quiet, "-W", "always::UserWarning", "--redactkey-max-age=90d")
        warned.assert_outcomes(passed=2, warnings=1)
        warned.stdout.fnmatch_lines(["*ExpiredFixtureWarning*older than the maximum age 90d*"])
        failed = pytester.runpytest(*quiet, "--redactkey-max-age=90d",
                                    "--redactkey-on-expiry=fail")
        failed.assert_outcomes(passed=1, failed=1)
        failed.stdout.fnmatch_lines(["*ExpiredFixtureError*pytest --redactkey-mode=record*"])
        rerecorded = pytester.runpytest(*quiet, "--redactkey-max-age=90d",
                                        "--redactkey-on-expiry=rerecord")
        rerecorded.assert_outcomes(passed=2)
        answers = sorted(json.loads(p.read_text())["answer"] for p in store.files())
        assert answers == ["live", "recorded"]
        bad = pytester.runpytest(*quiet, "--redactkey-max-age=forever")
        assert bad.ret == pytest.ExitCode.USAGE_ERROR
