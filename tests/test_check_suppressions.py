"""`redact check` that does not cry wolf: placeholders, documented example keys, near misses,
inline pragmas and baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import checksummed_token
from redactkey import Redactor
from redactkey.commands._cli import main
from redactkey.scan._validators import fake

KEY = "sk-" + "proj-" + fake(48, seed="suppress")
OTHER = "sk-" + "proj-" + fake(48, seed="suppress-2")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory with an empty configuration."""
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["check", "--format", "json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _rules(report: dict[str, object]) -> list[tuple[str, str]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return [(f["rule"], f["severity"]) for f in findings]


class TestPlaceholders:
    """Placeholders and documented example keys are not errors."""

    @pytest.mark.parametrize(
        "value",
        [
            "AKIA" + "IOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
            "gh" + "p_" + "x" * 36,
            "sk-" + "0" * 48,
            "sk-" + "proj-" + "X" * 40,
            "${OPENAI_API_KEY}",
            "{{ api_key }}",
            "<YOUR_API_KEY>",
            "AIza" + "Syabcdefghijklmnopqrstuvwxyz" + "1234567",
        ],
    )
    def test_not_an_error(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                          value: str) -> None:
        """A config line holding the placeholder is clean."""
        (workdir / "settings.py").write_text(f'API_KEY = "{value}"\naws_secret_access_key = '
                                             f'"{value}"\n', encoding="utf-8")
        code, report = check(capsys, "settings.py")
        assert [r for r in _rules(report) if r[1] == "error"] == []
        assert code in (0, 1)

    def test_real_shape_is_still_an_error(self, workdir: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """A key of the right shape stays an error."""
        (workdir / "settings.py").write_text(f'API_KEY = "{KEY}"\n', encoding="utf-8")
        code, report = check(capsys, "settings.py")
        assert code == 1
        assert ("openai-api-key", "error") in _rules(report)


class TestNearMiss:
    """A provider prefix with the wrong length is a warning, not an error."""

    def test_warning(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`ghp_` + 30 characters (36 expected) is reported as a near miss warning."""
        (workdir / "notes.txt").write_text("token gh" + "p_" + fake(30, seed="nm") + " here\n",
                                           encoding="utf-8")
        code, report = check(capsys, "notes.txt")
        assert code == 1
        assert _rules(report) == [("github-token-near-miss", "warning")]

    @pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "npm_"])
    def test_checksum(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                      prefix: str) -> None:
        """A token of the right length is an error when its CRC32 checksum holds and a
        near-miss warning when it fails; the Redactor replaces both."""
        good = checksummed_token(prefix, fake(30, seed="crc-" + prefix))
        # the last character changed: the checksum no longer holds
        bad = good[:-1] + ("A" if good[-1] != "A" else "B")
        family = "npm-token" if prefix == "npm_" else "github-token"
        for value, expected in ((good, (family, "error")),
                                (bad, (family + "-near-miss", "warning"))):
            (workdir / "notes.txt").write_text(f"token {value} here\n", encoding="utf-8")
            code, report = check(capsys, "notes.txt")
            assert (code, _rules(report)) == (1, [expected]), value[:6]
            assert Redactor().redact(f"token {value} here") == "token [REDACTED] here"

    def test_documented_example_is_a_near_miss(self, workdir: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
        """GitHub's own documentation example token fails its checksum: a warning."""
        (workdir / "api.json").write_text(
            '{"content": "use ghu_16C7e42F292c6912E7710c838347Ae178B4a"}\n', encoding="utf-8")
        code, report = check(capsys, "api.json")
        assert code == 1
        assert {severity for _rule, severity in _rules(report)} == {"warning"}


class TestInlinePragmas:
    """A finding on a line with an inline pragma is passed over; other lines are not."""

    @pytest.mark.parametrize(
        "pragma", ["# redact: allow", "# pragma: allowlist secret", "# gitleaks:allow"]
    )
    def test_pragma_suppresses_its_line(self, workdir: Path,
                                        capsys: pytest.CaptureFixture[str], pragma: str) -> None:
        """The key on the pragma's line is allowed; the same key on the next line is not."""
        (workdir / "conf.py").write_text(f'A = "{KEY}"  {pragma}\nB = "{OTHER}"\n',
                                         encoding="utf-8")
        code, report = check(capsys, "conf.py")
        assert code == 1
        findings = report["findings"]
        assert isinstance(findings, list)
        assert [f["line"] for f in findings] == [2]

    def test_pragma_in_a_yaml_cassette(self, workdir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """A YAML comment on the value's line counts too."""
        (workdir / "c.yaml").write_text(f"token: {KEY}  # redact: allow\n", encoding="utf-8")
        code, report = check(capsys, "c.yaml")
        assert code == 0, report
        assert report["allowlisted"] == 1

    @pytest.mark.parametrize("jobs", ["1", "2"])
    def test_pragma_lines_are_counted_as_allowed(self, workdir: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 jobs: str) -> None:
        """Each passed-over finding counts as allowed, as a configuration allowlist hit does,
        in check and audit, in JSON and text, in this process or in workers."""
        (workdir / "a.py").write_text(f'A = "{KEY}"  # gitleaks:allow\nB = "{OTHER}"\n',
                                      encoding="utf-8")
        (workdir / "b.py").write_text(f'C = "{OTHER}"  # pragma: allowlist secret\n',
                                      encoding="utf-8")
        (workdir / "c.json").write_text(f'{{\n  "note": "{KEY}"\n}}\n', encoding="utf-8")
        code, report = check(capsys, "-j", jobs, ".")
        assert code == 1
        assert report["allowlisted"] == 2
        assert sorted((f["path"], f["line"]) for f in report["findings"]) == [
            ("a.py", 2), ("c.json", 2)]
        assert main(["audit", "--format", "json", "-j", jobs, "."]) == 1
        audited = json.loads(capsys.readouterr().out)
        assert audited["allowlisted"] == 2
        assert main(["check", "-j", jobs, "a.py", "b.py"]) == 1
        text = capsys.readouterr().out
        assert "2 allowlisted" in text, text

    def test_no_pragma_no_allowed(self, workdir: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """Without a pragma nothing is counted as allowed."""
        (workdir / "a.py").write_text(f'A = "{KEY}"  # allow me\n', encoding="utf-8")
        code, report = check(capsys, "a.py")
        assert code == 1
        assert report["allowlisted"] == 0


class TestBaseline:
    """`--write-baseline` then `--baseline`: known findings pass, new or changed ones fail."""

    def test_round_trip(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A baselined finding is not reported; the baseline holds no part of the value."""
        (workdir / "conf.py").write_text(f'A = "{KEY}"\n', encoding="utf-8")
        assert main(["check", "conf.py", "--write-baseline", "baseline.json"]) == 0
        capsys.readouterr()
        stored = (workdir / "baseline.json").read_text(encoding="utf-8")
        assert json.loads(stored)["version"] == 1
        assert not [KEY[i:i + 6] for i in range(len(KEY) - 5) if KEY[i:i + 6] in stored]
        code, report = check(capsys, "conf.py", "--baseline", "baseline.json")
        assert code == 0
        assert report["findings"] == []

    def test_changed_value_is_reported_again(self, workdir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
        """The same place and preview with a new value is a new finding."""
        (workdir / "conf.py").write_text(f'A = "{KEY}"\n', encoding="utf-8")
        main(["check", "conf.py", "--write-baseline", "baseline.json"])
        capsys.readouterr()
        (workdir / "conf.py").write_text(f'A = "{OTHER}"\n', encoding="utf-8")
        code, report = check(capsys, "conf.py", "--baseline", "baseline.json")
        assert code == 1
        assert _rules(report) == [("openai-api-key", "error")]

    def test_new_finding_is_reported(self, workdir: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """A finding added after the baseline was written is reported."""
        (workdir / "conf.py").write_text(f'A = "{KEY}"\n', encoding="utf-8")
        main(["check", "conf.py", "--write-baseline", "baseline.json"])
        capsys.readouterr()
        (workdir / "conf.py").write_text(f'A = "{KEY}"\nB = "{OTHER}"\n', encoding="utf-8")
        code, report = check(capsys, "conf.py", "--baseline", "baseline.json")
        assert code == 1
        findings = report["findings"]
        assert isinstance(findings, list)
        assert [f["line"] for f in findings] == [2]

    @pytest.mark.parametrize("content", ["not json", '{"version": 9}', '{"version": 1}'])
    def test_bad_baseline_is_exit_2(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                                    content: str) -> None:
        """A baseline that cannot be read is a one-line usage error naming it."""
        (workdir / "conf.py").write_text("x = 1\n", encoding="utf-8")
        (workdir / "baseline.json").write_text(content, encoding="utf-8")
        code = main(["check", "conf.py", "--baseline", "baseline.json"])
        err = capsys.readouterr().err
        assert code == 2
        assert "baseline.json" in err
        assert "Traceback" not in err
