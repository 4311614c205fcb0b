"""check, audit and scrub over the third-party recordings in ../shared: every file read
with its format, nothing passed over in silence, one answer from the three commands."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from helpers import assert_one_answer
from redactkey.commands._audit import audit_paths
from redactkey.commands._check import check_paths
from redactkey.commands._cli import _setup, main
from redactkey.commands._issues import Report
from redactkey.commands._scrub import plan_paths

# Three commands over every third-party recording of ../shared: CI's job.
pytestmark = pytest.mark.slow

# MANIFEST.tsv format -> the format the readers name
_MANIFEST_FORMATS = {
    "vcrpy-yaml": "vcrpy", "vcrpy-yaml-gz": "vcrpy", "ruby-vcr-yaml": "ruby-vcr",
    "polly-har": "har", "nock-json": "nock", "ddtrace-json": "dd-test-agent",
    "response-json": "json",
}


@pytest.fixture(scope="module")
def corpora(request: pytest.FixtureRequest) -> dict[str, Report]:
    """The three commands' reports over both corpora (computed once: ~230 files each)."""
    shared: Path = request.getfixturevalue("shared_dir")
    roots = [str(shared / "realworld"), str(shared / "realworld2")]
    _config, checker = _setup(None, (), normalise=False)
    _config, auditing = _setup(None, ())
    return {
        "check": check_paths(roots, checker),
        "audit": audit_paths(roots, auditing),
        "scrub": plan_paths(roots, auditing, write=False, echo=lambda _line: None),
    }


def _name(path: str) -> str:
    return path.split("/realworld2/files/", 1)[-1].split("/realworld/", 1)[-1]


class TestEveryFileRead:
    """Every recording is read with its format; only licence texts are skipped."""

    @pytest.mark.parametrize("command", ["check", "audit", "scrub"])
    def test_read_or_licence(self, corpora: dict[str, Report], command: str) -> None:
        """No problem (exit 2), no unreadable file, only licence texts skipped."""
        report = corpora[command]
        assert report.problems == []
        assert {reason for _path, reason in report.skipped} == {"licence text"}
        assert len(report.skipped) == 17
        assert not [i for i in report.issues if i.rule == "unreadable-file"]
        assert report.files == 235  # 230 recordings and 5 notes (manifests, readmes)

    def test_formats_match_the_manifest(self, shared_dir: Path,
                                        corpora: dict[str, Report]) -> None:
        """Each realworld2 file is read as the format its manifest names."""
        manifest = (shared_dir / "realworld2" / "MANIFEST.tsv").read_text(encoding="utf-8")
        read = {_name(path): fmt for path, fmt in corpora["audit"].read_files}
        for row in csv.DictReader(io.StringIO(manifest), delimiter="\t"):
            name = f"{row['project'].replace('/', '__')}/{row['path'].replace('/', '__')}"
            assert read[name] == _MANIFEST_FORMATS[row["format"]], name

    def test_cli_never_exits_2(self, shared_dir: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
        """The commands as a user runs them: exit 1 (findings), never 2, no traceback."""
        for command in (["audit"], ["check"], ["scrub"]):
            code = main([*command, str(shared_dir / "realworld2")])
            out, err = capsys.readouterr()
            assert code == 1, out[-500:]
            assert "Traceback" not in out + err


class TestFindings:
    """The values that matter in the corpora, the same in every command."""

    def test_sas_signature_is_an_error(self, corpora: dict[str, Report]) -> None:
        """The Azure Blob SAS `sig=` inside a HAR body is an error in audit and check."""
        for command in ("audit", "check"):
            sas = [i for i in corpora[command].issues
                   if i.path.endswith(".har") and i.level == "error"]
            assert len(sas) == 2, command
            assert {i.preview for i in sas} == {"U4R0…", "Uy//…"}

    def test_org_ids_are_warnings(self, corpora: dict[str, Report]) -> None:
        """Organisation and workspace ids in HAR, nock and dd JSON are warnings."""
        found = {(i.path.rsplit(".", 1)[-1], i.slot.lower() if i.slot else "")
                 for i in corpora["audit"].issues
                 if i.rule == "identifying-header" and i.level == "warning"}
        assert ("har", "openai-organization") in found
        assert ("har", "anthropic-organization-id") in found
        assert ("json", "openai-organization") in found  # nock
        dd = {i.slot for i in corpora["audit"].issues if "DataDog" in i.path
              and i.path.endswith(".json") and i.rule == "identifying-header"}
        assert {"openai-project", "anthropic-organization-id"} <= {
            (s or "").lower() for s in dd}

    def test_composite_aws_placeholder_is_clean(self, corpora: dict[str, Report]) -> None:
        """`AWS4-HMAC-SHA256 Credential=<AWS_ACCESS_KEY_ID>/…` is not a finding."""
        for report in corpora.values():
            assert not [i for i in report.issues if "ruby_llm" in i.path
                        and (i.slot or "").lower() == "authorization"]

    def test_one_answer_from_three_commands(self, corpora: dict[str, Report]) -> None:
        """The same file set, and the same rule for the same value, in check, audit and
        scrub (scrub lists what it would rewrite: the audit's errors and warnings)."""
        assert_one_answer(corpora)


def test_json_output_lists_files_and_skipped(shared_dir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`--format json` names every file met under `files` or `skipped`."""
    main(["audit", "--format", "json", str(shared_dir / "realworld2")])
    data = json.loads(capsys.readouterr().out)
    assert len(data["files"]) == 119  # 117 recordings, MANIFEST.tsv and README.md
    assert all(set(entry) == {"path", "format"} for entry in data["files"])
    assert all(set(entry) == {"path", "reason"} for entry in data["skipped"])


def test_scrub_write_leaves_only_what_scrub_cannot_fix(
        shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`scrub --write -j 2 --format json` over copies of both corpora and the hand-made
    fixtures: the same files as the audit (the JSON report's `files`/`skipped` shape),
    then the audit reports no error or warning of a rule scrub handles (what remains is
    duplicate interactions and volatile request fields: the request, not a value)."""
    import shutil

    from conftest import ROOT

    for name in ("realworld", "realworld2"):
        shutil.copytree(shared_dir / name, tmp_path / name)
    shutil.copytree(ROOT / "tests" / "data" / "formats", tmp_path / "formats")
    for path in tmp_path.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    code = main(["scrub", "--write", "-j", "2", "--format", "json", str(tmp_path)])
    scrubbed = json.loads(capsys.readouterr().out)
    assert code == 0
    assert scrubbed["errors"] == []
    assert scrubbed["findings"] == []
    main(["audit", "--format", "json", str(tmp_path)])
    audited = json.loads(capsys.readouterr().out)
    assert scrubbed["files"] == audited["files"]
    assert scrubbed["skipped"] == audited["skipped"]
    left = {f["rule"] for f in audited["findings"] if f["severity"] != "note"}
    assert left == {"duplicate-interaction", "volatile-request-field"}
