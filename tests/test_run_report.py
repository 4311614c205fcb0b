from __future__ import annotations

import json
from pathlib import Path

import pytest

from redactkey import FixtureDir, FixtureFormatError, MissingFixtureError, ModelFixtures, RunReport
from test_replay import FakeRedactor


def _calls(path: Path, mode: str, report: RunReport, label: str | None = None) -> ModelFixtures:
    return ModelFixtures(FixtureDir(path), mode=mode, redactor=FakeRedactor(), report=report,
                         label=label)


class TestRunReport:
    """Hits, recorded, missed and unused files."""

    def test_outcomes_noted(self, tmp_path: Path) -> None:
        """Record, replay and a miss each appear once under their outcome and label."""
        report = RunReport(label="test_a")
        _calls(tmp_path, "record", report).call("text", {"prompt": "a"}, lambda: 1)
        _calls(tmp_path, "record", report).call("text", {"prompt": "b"}, lambda: 2)
        replay = _calls(tmp_path, "replay", report, label="test_b")
        replay.call("text", {"prompt": "a"}, None)
        replay.call("text", {"prompt": "a"}, None)
        with pytest.raises(MissingFixtureError):
            replay.call("text", {"prompt": "c"}, None)
        assert [e.test for e in report.recorded] == ["test_a", "test_a"]
        assert [(e.test, e.kind) for e in report.hits] == [("test_b", "text")]
        [missed] = report.missed
        assert missed.test == "test_b"
        assert missed.store == str(tmp_path)
        assert not Path(missed.file).exists()

    def test_unused_files(self, tmp_path: Path) -> None:
        """Files no call touched are unused; temp and foreign files are not listed."""
        _calls(tmp_path, "record", RunReport()).call("text", {"prompt": "old"}, lambda: 0)
        (tmp_path / "notes.txt").write_text("x")
        report = RunReport()
        _calls(tmp_path, "auto", report).call("text", {"prompt": "new"}, lambda: 1)
        [unused] = report.unused(tmp_path)
        assert json.loads(unused.read_text())["answer"] == 0

    def test_document_write_load_merge(self, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
        """The JSON document has relative paths, round-trips through load, and merges."""
        monkeypatch.chdir(tmp_path)
        first, second = RunReport(label="w1"), RunReport(label="w2")
        _calls(Path("fx"), "record", first).call("text", {"prompt": "a"}, lambda: 1)
        _calls(Path("fx"), "auto", second).call("text", {"prompt": "a"}, lambda: 1)
        _calls(Path("fx"), "auto", second).call("text", {"prompt": "b"}, lambda: 1)
        path = first.write(directories=["fx"])
        doc = json.loads(path.read_text())
        assert path.name == ".redactkey-report.json"
        assert doc["version"] == 1
        assert doc["recorded"][0]["file"].startswith("fx/@model.text.")
        assert doc["recorded"][0]["test"] == "w1"
        assert len(doc["unused"]) == 1
        merged = RunReport.merge([RunReport.load(path), second])
        assert merged.document(directories=["fx"])["unused"] == []
        from redactkey.commands._audit import load_unused_files

        sub = first.write(tmp_path / "reports" / "run.json", directories=["fx"])
        assert json.loads(sub.read_text())["unused"][0].startswith("../fx/")
        [unused] = load_unused_files(sub)
        assert unused.parent == (tmp_path / "fx").resolve()
        assert len(merged.hits) == 1
        assert len(merged.recorded) == 2

    def test_bytes_stable(self, tmp_path: Path) -> None:
        """Writing the same report twice gives the same bytes."""
        report = RunReport()
        _calls(tmp_path / "fx", "record", report).call("text", {"prompt": "a"}, lambda: 1)
        one = report.write(tmp_path / "r1.json", root=tmp_path).read_bytes()
        two = report.write(tmp_path / "r2.json", root=tmp_path).read_bytes()
        assert one == two

    @pytest.mark.parametrize("content", ["{", '{"version": 7}', '{"version": 1, "missing": [{}]}'])
    def test_bad_report_named(self, tmp_path: Path, content: str) -> None:
        """A report that cannot be read is a FixtureFormatError naming it."""
        path = tmp_path / "r.json"
        path.write_text(content)
        with pytest.raises(FixtureFormatError, match=r"r\.json"):
            RunReport.load(path)
