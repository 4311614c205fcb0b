"""The check/audit report: placeholders, header classes, text, JSON and SARIF output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT
from redactkey.commands._issues import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    InputProblem,
    Issue,
    Report,
)
from redactkey.commands._render import render, to_sarif
from redactkey.scan._placeholders import looks_redacted
from redactkey.scan._vocabulary import header_class

SARIF_SCHEMA = json.loads(
    (ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)


def validate_sarif(log: object) -> None:
    """Validate a SARIF log against the official 2.1.0 schema."""
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)


class TestLooksRedacted:
    """Third-party and our placeholders count as redacted; real-looking values do not."""

    @pytest.mark.parametrize(
        "value",
        ["AUTHORIZATION-XXX", "X-API-KEY-XXX", "OPENAI-ORG-XXX", "<OPENAI_ACCESS_TOKEN>",
         "Bearer <OPENAI_ACCESS_TOKEN>", "<OPENAI_ADMIN_TOKEN>", "<CENSORED>", "scrubbed",
         "ek_scrubbed", "<redacted>", "fake", "Bearer [REDACTED]", "[REDACTED:OPENAI_API_KEY]",
         "", "user:[REDACTED]",
         # gitleaks' rule tests (fps): fillers behind glued prefixes, a variable's name
         "AKIA" + "X" * 16, "AIza" + "a" * 35, "sk-ant-api03-" + "0" * 93 + "AA",
         "ACCESS_TOKEN", "YOUR_API_KEY", "OPENAI_API_KEY"],
    )
    def test_placeholder(self, value: str) -> None:
        """The value is recognised as a placeholder."""
        assert looks_redacted(value)

    @pytest.mark.parametrize(
        "value",
        ["Bearer " + "sk-proj-" + "A1b2" * 12, "org-" + "Qw3r" * 6,
         "__cf_bm=" + "x7Y" * 10 + "; path=/", "proj_" + "Zx9" * 8,
         "AKIA" + "QW3E5R7TYU2IOPAS", "AIza" + "Sy" + "Zk3m9Qp2" * 4 + "x",
         "sk-ant-api03-" + "Ab3dE5fG7h" * 9 + "xyzAA", "K7_Q2M_X9P4_Z8W1_R5T3",
         "sk_live_" + "AB12CD34" * 3,
         # a placeholder beside a letters-only token is not a placeholder
         "<hfToken>api_org_" + "RdUxFaMnBwPeYcOePzVc" + "GyLvIpHnRh</hfToken>"],
    )
    def test_real_looking_value(self, value: str) -> None:
        """A value with real content is not a placeholder."""
        assert not looks_redacted(value)


class TestHeaderClass:
    """Identifying headers, cookies and request ids are told apart."""

    @pytest.mark.parametrize(
        ("name", "expected"),
        [("openai-organization", "identifying-header"), ("OpenAI-Project", "identifying-header"),
         ("anthropic-organization-id", "identifying-header"),
         ("x-crewai-organization-id", "identifying-header"), ("Set-Cookie", "cookie"),
         ("cookie", "cookie"), ("x-request-id", "request-id"), ("request-id", "request-id"),
         ("content-type", None), ("openai-processing-ms", None)],
    )
    def test_classes(self, name: str, expected: str | None) -> None:
        """Each header name gets its class."""
        assert header_class(name) == expected


_PREVIEW = "sk-p…"


def _report() -> Report:
    report = Report(command="audit", files=2)
    report.issues = [
        Issue("tests/cassettes/a.yaml", 12, "openai-api-key", pointer="/interactions/0",
              slot="authorization", preview=_PREVIEW),
        Issue("tests/cassettes/a.yaml", 30, "cookie", pointer="/interactions/0/response",
              slot="set-cookie", preview="__cf…"),
        Issue("tests/cassettes/b.yaml", 7, "request-id", slot="x-request-id"),
    ]
    return report


class TestRender:
    """Text, JSON and SARIF renderings."""

    def test_text_lines_and_summary(self) -> None:
        """Each finding is a `path:line: rule (slot) preview` line; a summary explains rules."""
        out = io.StringIO()
        render(_report(), "text", out, color=False)
        text = out.getvalue()
        assert f"tests/cassettes/a.yaml:12: openai-api-key (authorization) {_PREVIEW}" in text
        assert "What each rule means and what to do" in text
        assert "findings (exit 1)" in text

    def test_json_shape(self) -> None:
        """The JSON report lists findings with location, rule, severity and fingerprint."""
        out = io.StringIO()
        render(_report(), "json", out)
        data = json.loads(out.getvalue())
        assert data["exit_code"] == EXIT_FINDINGS
        first = data["findings"][0]
        assert {"path", "line", "rule", "severity", "category", "fingerprint", "preview",
                "message"} <= set(first)
        assert len(first["fingerprint"]) == 16
        assert data["summary"] == {"cookie": 1, "openai-api-key": 1, "request-id": 1}

    def test_sarif_validates(self) -> None:
        """The SARIF log validates against the official SARIF 2.1.0 schema."""
        log = to_sarif(_report())
        validate_sarif(log)
        run = log["runs"][0]  # type: ignore[index]
        assert [r["ruleId"] for r in run["results"]] == [
            "openai-api-key", "cookie", "request-id"]
        region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
        assert region == {"startLine": 12}

    def test_sarif_with_unreadable_input_validates(self) -> None:
        """Unreadable inputs become tool notifications and still validate."""
        report = Report(command="check", files=0, problems=[InputProblem("x.yaml", "missing")])
        log = to_sarif(report)
        validate_sarif(log)
        assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False  # type: ignore[index]

    @pytest.mark.parametrize(
        ("issues", "problems", "code"),
        [([], [], EXIT_OK),
         ([Issue("a", 1, "request-id")], [], EXIT_OK),
         ([Issue("a", 1, "cookie")], [], EXIT_FINDINGS),
         ([Issue("a", 1, "cookie")], [InputProblem("b", "gone")], EXIT_USAGE)],
    )
    def test_exit_codes(self, issues: list[Issue], problems: list[InputProblem],
                        code: int) -> None:
        """Notes alone are clean; warnings and errors are findings; unreadable input is 2."""
        assert Report("audit", issues=issues, problems=problems).exit_code == code

    def test_fingerprint_independent_of_line(self) -> None:
        """A structured finding keeps its fingerprint when lines shift."""
        a = Issue("p", 3, "cookie", pointer="/x", preview="ab…")
        b = Issue("p", 9, "cookie", pointer="/x", preview="ab…")
        assert a.fingerprint == b.fingerprint

    def test_schema_is_the_official_one(self) -> None:
        """The vendored schema is the OASIS SARIF 2.1.0 schema."""
        assert SARIF_SCHEMA["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
        assert Path(ROOT / "tests" / "data" / "README.md").is_file()


class TestProgressBar:
    """The progress bar wraps large trees on a terminal only."""

    def test_plain_without_terminal(self) -> None:
        """Without a terminal the targets pass through untouched."""
        from redactkey.commands._check import Target, progress_bar

        targets = [Target(Path(f"f{i}"), f"f{i}") for i in range(300)]
        assert progress_bar(color=False)(targets) is targets

    def test_tracked_on_terminal(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Forced on, every target is still yielded in order."""
        from redactkey.commands._check import Target, progress_bar

        targets = [Target(Path(f"f{i}"), f"f{i}") for i in range(5)]
        wrapped = progress_bar(color=True, threshold=2)(targets)
        assert wrapped is not targets
        assert list(wrapped) == targets
        capsys.readouterr()
