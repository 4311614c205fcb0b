"""`redact audit`: fixture health, third-party cassettes, the corpus and ../shared/realworld."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from redactkey.commands._cli import main
from redactkey.fixtures._format import Fixture
from redactkey.fixtures._store import FixtureDir
from redactkey.keys._keys import KeySpec, key_from_material, key_material
from test_report import validate_sarif

SECRET_RULES_OK_IN_CORPUS = {"sensitive-key", "anthropic-api-key"}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def audit_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["audit", "--format", "json", *args])
    out, _err = capsys.readouterr()
    return code, json.loads(out)


def rules_by_file(data: dict[str, object]) -> set[tuple[str, str]]:
    findings = data["findings"]
    assert isinstance(findings, list)
    return {(Path(f["path"]).name, f["rule"]) for f in findings}


def put(directory: Path, request: dict[str, object], answer: object,
        kind: str = "tool:weather") -> Path:
    material = key_material(kind, request, spec=KeySpec.whole())
    return FixtureDir(directory).put(
        Fixture(key=key_from_material(material), kind=kind, request=material, answer=answer))


class TestAuditFixtures:
    """Our fixture files: schema, version, keys, formatting, volatile values, duplicates."""

    def test_clean_directory(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A freshly recorded directory is clean (exit 0)."""
        put(workdir / "fx", {"city": "Paris"}, {"t": 17})
        code, data = audit_json(capsys, "fx")
        assert code == 0
        assert data["findings"] == []
        assert data["files_scanned"] == 1

    @pytest.mark.parametrize(
        ("mutate", "rule"),
        [
            (lambda p: p.rename(p.with_name("weather." + "0" * 64 + ".json")), "key-mismatch"),
            (lambda p: p.write_text(p.read_text().replace('"t": 17', '"t": 18').replace(
                "  ", "    "), encoding="utf-8"), "not-canonical"),
            (lambda p: p.write_text(p.read_text().replace('"version": 1', '"version": 7'),
                                    encoding="utf-8"), "unknown-version"),
            (lambda p: p.write_text(p.read_text().replace('"answer"', '"answr"'),
                                    encoding="utf-8"), "schema-invalid"),
            (lambda p: p.write_text("{not json", encoding="utf-8"), "unparsable-file"),
        ],
        ids=["renamed", "reformatted", "version", "schema", "corrupt"],
    )
    def test_broken_fixture(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                            mutate: object, rule: str) -> None:
        """Each kind of damage is reported under its rule (exit 1)."""
        path = put(workdir / "fx", {"city": "Paris"}, {"t": 17})
        mutate(path)  # type: ignore[operator]
        code, data = audit_json(capsys, "fx")
        assert code == 1
        assert rule in {f["rule"] for f in data["findings"]}  # type: ignore[union-attr,index]

    def test_a_stream_in_either_layout_is_canonical(
        self, workdir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A stream written one chunk per line is clean, and so is one written before
        (indented): both read back; re-indenting one is not."""
        from redactkey.fixtures._format import dump_document

        material = key_material("chat", {"q": "hi"}, spec=KeySpec.whole())
        stream = Fixture(key=key_from_material(material), kind="chat", request=material,
                         chunks=[{"delta": "Hel"}, {"delta": "lo"}])
        path = FixtureDir(workdir / "fx").put(stream)
        assert b'\n    {"delta":"Hel"},\n    {"delta":"lo"}\n' in path.read_bytes()
        code, data = audit_json(capsys, "fx")
        assert (code, data["findings"]) == (0, [])
        path.write_bytes(dump_document(stream.document()))
        code, data = audit_json(capsys, "fx")
        assert (code, data["findings"]) == (0, [])
        assert main(["scrub", "fx"]) == 0
        assert "rewritten" not in capsys.readouterr().out
        path.write_text(json.dumps(stream.document(), indent=4), encoding="utf-8")
        code, data = audit_json(capsys, "fx")
        assert code == 1
        assert [f["rule"] for f in data["findings"]] == ["not-canonical"]  # type: ignore[union-attr,index]

    def test_stored_key_edited(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A request edited by hand no longer matches its key."""
        path = put(workdir / "fx", {"city": "Paris"}, {"t": 17})
        path.write_text(path.read_text().replace('"Paris"', '"Lyon"'), encoding="utf-8")
        code, data = audit_json(capsys, "fx")
        assert code == 1
        (finding,) = data["findings"]  # type: ignore[misc]
        assert finding["rule"] == "key-mismatch"
        assert "recomputed" in finding["detail"]

    def test_volatile_duplicate_oversized_unused(
        self, workdir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Volatile key material, a duplicate key, an oversized file and an unused file."""
        volatile = put(workdir / "a", {"at": "2026-01-02T03:04:05Z"}, {"t": 1})
        put(workdir / "b", {"at": "2026-01-02T03:04:05Z"}, {"t": 1})
        put(workdir / "a", {"city": "Paris"}, "x" * 500)
        (workdir / ".redactkey.toml").write_text("max-fixture-bytes = 400\n", encoding="utf-8")
        (workdir / ".redactkey-report.json").write_text(json.dumps({
            "version": 1, "unused": [f"a/{volatile.name}"]}), encoding="utf-8")
        code, data = audit_json(capsys, "a", "b", "--run-report", ".redactkey-report.json")
        assert code == 1
        rules = [f["rule"] for f in data["findings"]]  # type: ignore[union-attr,index]
        assert rules.count("volatile-key-material") == 2
        assert {"duplicate-key", "oversized-file", "unused-fixture"} <= set(rules)

    def test_answer_sequences(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Later answers (`<stem>.<key>.<n>.json`) are fixtures like the first, with or
        without the numbers between (an answer that did not change); a later answer
        without the first is flagged."""
        first = put(workdir / "fx", {"city": "Paris"}, {"t": 17})
        store = FixtureDir(workdir / "fx")
        fixture = store.get("tool:weather", first.name.split(".")[1])
        assert fixture is not None
        third = store.put(fixture.model_copy(update={"answer": {"t": 18}}), 3)
        assert third.name.endswith(".3.json")
        code, data = audit_json(capsys, "fx")
        assert (code, data["findings"]) == (0, [])
        first.unlink()
        code, data = audit_json(capsys, "fx")
        assert code == 1
        (finding,) = data["findings"]  # type: ignore[misc]
        assert (Path(finding["path"]).name, finding["rule"]) == (third.name, "answer-gap")
        assert "without the first answer" in finding["detail"]

    def test_missing_directory_is_exit_2(self, workdir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
        """A path that does not exist is exit 2, named."""
        code = main(["audit", "nowhere"])
        out, err = capsys.readouterr()
        assert code == 2
        assert "nowhere" in out
        assert "Traceback" not in out + err


class TestAuditCorpus:
    """The shipped corpus: planted fake leaks are reported, nothing else."""

    def test_corpus_findings(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Exactly the planted problems, each in its file; SARIF validates."""
        shutil.copytree(ROOT / "corpus", workdir / "corpus")
        code, data = audit_json(capsys, "corpus")
        assert code == 1
        assert data["errors"] == []
        found = {(file, rule) for file, rule in rules_by_file(data) if rule != "request-id"}
        assert found == {
            ("openai_chat_leaky.yaml", "sensitive-key"),
            ("openai_chat_leaky.yaml", "identifying-header"),
            ("openai_chat_leaky.yaml", "cookie"),
            ("gemini_ruby_vcr.yml", "sensitive-key"),
            # header maps in generic JSON are read with the same vocabulary: an
            # organisation id in a captured response is a warning wherever it sits
            ("anthropic_messages.json", "identifying-header"),
            ("openai_responses.json", "identifying-header"),
            # a `{request, response}` file is read as one HTTP call (`http-exchange`): the
            # UUIDs its request sends (`metadata.user_id`, `session_id`) are volatile
            ("anthropic_messages.json", "volatile-request-field"),
            ("openai_chat_completion.json", "volatile-request-field"),
            ("@model.chat.fb05038f597c9ab8aba319bc8c1f23e3851369935d6d007c87ca88da6e1e5da8.json",
             "anthropic-api-key"),
            ("weather.f3c63665163c6fd6a35deb7a2adefe00acc9bc8b4f7be309fa8d15d31aafa541.json",
             "volatile-key-material"),
        }
        code = main(["audit", "--format", "sarif", "corpus"])
        validate_sarif(json.loads(capsys.readouterr().out))

    def test_corpus_text_report_is_masked(self, workdir: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """The readable report explains the rules and never prints a planted value."""
        shutil.copytree(ROOT / "corpus", workdir / "corpus")
        code = main(["audit", "corpus"])
        out = capsys.readouterr().out
        assert code == 1
        assert "What each rule means and what to do" in out
        assert "corpus/cassettes/openai_chat_leaky.yaml:8: sensitive-key (authorization)" in out
        for planted in ("FAKEFAKEFAKEFAKE-not-a-real-key", "org-FAKEfake", "FAKEcookie"):
            assert planted not in out


class TestReadmeMainJob:
    """The README's main-job command runs the audit over the shipped corpus."""

    def test_readme_command(self, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
        """The command line in the README exits 0 with --exit-zero and 1 without."""
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        (line,) = [ln for ln in readme.splitlines() if "redact audit" in ln]
        args = line.split(".venv/bin/redact ", 1)[1].split("#", 1)[0].split()
        assert args == ["audit", "--exit-zero", "corpus/"]
        monkeypatch.chdir(ROOT)
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "findings (exit 0 because of --exit-zero)" in out
        assert main([a for a in args if a != "--exit-zero"]) == 1
        capsys.readouterr()


def _traps(shared: Path) -> list[tuple[str, int]]:
    rows = (shared / "realworld" / "TRAPS.tsv").read_text(encoding="utf-8").splitlines()[1:]
    out = []
    for row in rows:
        path, line, kind, _what = row.split("\t", 3)
        if kind == "not-a-secret" and line:
            out.append((path, int(line)))
    return out


class TestAuditRealworld:
    """Every third-party cassette in ../shared/realworld is audited without a crash."""

    def test_no_crash_and_leak_classes(self, shared_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """All 113 recordings (and the 3 notes beside them) are read, the 7 licence texts
        skipped; org ids, cookies and request ids are reported; traps are not."""
        monkeypatch.chdir(shared_dir / "realworld")
        code, data = audit_json(capsys, ".")
        assert code == 1
        assert data["errors"] == []
        assert data["files_scanned"] == 116
        assert [s["reason"] for s in data["skipped"]] == ["licence text"] * 7  # type: ignore[union-attr,index]
        findings = data["findings"]
        assert isinstance(findings, list)
        slots = {(f["rule"], (f["slot"] or "").lower()) for f in findings}
        assert {("identifying-header", "openai-organization"),
                ("identifying-header", "openai-project"),
                ("identifying-header", "anthropic-organization-id"),
                ("cookie", "set-cookie"), ("cookie", "cookie"),
                ("request-id", "x-request-id"), ("request-id", "request-id")} <= slots
        org_files = {f["path"] for f in findings
                     if (f["slot"] or "").lower() == "openai-organization"}
        assert len(org_files) >= 30
        secret_lines = {(f["path"], f["line"]) for f in findings
                        if f["category"] == "secret"}
        for trap in _traps(shared_dir):
            assert trap not in secret_lines
        secret_rules = {f["rule"] for f in findings if f["category"] == "secret"}
        assert secret_rules <= {"sensitive-key"}
        posthog = [f for f in findings if f["category"] == "secret"]
        assert [Path(f["path"]).name for f in posthog] == ["test_csv_search_tool.yaml"]


class TestAuditCassetteStore:
    """Our single-file cassette store: keys and formatting of every entry."""

    def test_store_entries(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A clean store passes; an edited entry is a key mismatch; a reformat is reported."""
        from redactkey.fixtures._store import CassetteStore

        store = CassetteStore(workdir / "calls.json")
        for city in ("Paris", "Lyon"):
            material = key_material("tool:weather", {"city": city}, spec=KeySpec.whole())
            store.put(Fixture(key=key_from_material(material), kind="tool:weather",
                              request=material, answer={"city": city}))
        code, data = audit_json(capsys, "calls.json")
        assert (code, data["findings"]) == (0, [])
        path = workdir / "calls.json"
        from redactkey.fixtures._format import dump_document

        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["entries"][0]["request"]["request"]["city"] = "Nice"
        path.write_bytes(dump_document(doc))
        code, data = audit_json(capsys, "calls.json")
        assert code == 1
        assert [f["rule"] for f in data["findings"]] == ["key-mismatch"]  # type: ignore[union-attr,index]
        doc = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(doc, indent=4), encoding="utf-8")
        code, data = audit_json(capsys, "calls.json")
        assert "not-canonical" in {f["rule"] for f in data["findings"]}  # type: ignore[union-attr,index]
