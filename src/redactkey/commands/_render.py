"""Renderers of a `Report`: a readable text report (rich; colours only on a terminal),
`json`, and `sarif` (SARIF 2.1.0, for code-scanning upload)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ._issues import Issue, Report, counted, rule_for

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["reason_kind", "render", "render_text", "to_json", "to_sarif"]

_SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


def render(
    report: Report, fmt: str, stream: IO[str], *, color: bool | None = None,
    verbose: bool = False,
) -> None:
    """Write the report to `stream` as `text`, `json` or `sarif` (notes listed when verbose)."""
    if fmt == "json":
        stream.write(json.dumps(to_json(report), indent=2, sort_keys=True) + "\n")
    elif fmt == "sarif":
        stream.write(json.dumps(to_sarif(report), indent=2, sort_keys=True) + "\n")
    else:
        render_text(report, stream, color=color, verbose=verbose)


def to_json(report: Report) -> dict[str, object]:
    """The report as plain JSON data (`--format json`)."""
    issues = report.sorted_issues()
    return {
        "tool": "redactkey",
        "command": report.command,
        "version": 1,
        "exit_code": report.exit_code,
        "files_scanned": report.files,
        "allowlisted": report.allowed,
        "findings": [issue.as_json() for issue in issues],
        "errors": [{"path": p.path, "problem": p.problem} for p in report.problems],
        "files": [{"path": path, "format": fmt} for path, fmt in sorted(report.read_files)],
        "skipped": [{"path": path, "reason": reason}
                    for path, reason in sorted(report.skipped)],
        "summary": dict(sorted(Counter(issue.rule for issue in issues).items())),
    }


def _tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("redactkey")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def to_sarif(report: Report) -> dict[str, object]:
    """The report as a SARIF 2.1.0 log (`--format sarif`)."""
    issues = report.sorted_issues()
    rule_ids = sorted({issue.rule for issue in issues})
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    rules = []
    for rule_id in rule_ids:
        rule = rule_for(rule_id)
        rules.append({
            "id": rule.id,
            "name": "".join(part.capitalize() for part in rule.id.replace("_", "-").split("-")),
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": f"{rule.summary}; {rule.fix}"},
            "help": {"text": rule.fix},
            "defaultConfiguration": {"level": rule.severity},
            "properties": {"tags": ["security", rule.category] if rule.category in
                           ("secret", "leak") else [rule.category]},
        })
    results = []
    for issue in issues:
        rule = rule_for(issue.rule)
        text = rule.summary
        if issue.slot:
            text += f" ({issue.slot})"
        if issue.preview:
            text += f": {issue.preview}"
        if issue.detail:
            text += f" - {issue.detail}"
        result: dict[str, object] = {
            "ruleId": issue.rule,
            "ruleIndex": index[issue.rule],
            "level": issue.level,
            "message": {"text": f"{text}. {rule.fix}"},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(issue.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": max(1, issue.line)},
                },
            }],
            "partialFingerprints": {"redactkey/v1": issue.fingerprint},
        }
        if issue.pointer:
            result["properties"] = {"jsonPointer": issue.pointer}
        results.append(result)
    notifications = [
        {"level": "error", "message": {"text": f"{p.path}: {p.problem}"}}
        for p in report.problems
    ]
    invocation: dict[str, object] = {"executionSuccessful": not report.problems}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "redactkey",
                "semanticVersion": _tool_version(),
                "informationUri": "https://pypi.org/project/redactkey/",
                "rules": rules,
            }},
            "invocations": [invocation],
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
            "results": results,
        }],
    }


def _uri(path: str) -> str:
    from urllib.parse import quote

    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.resolve().relative_to(Path.cwd().resolve())
        except ValueError:
            return candidate.resolve().as_uri()
    return quote(candidate.as_posix(), safe="/")


_STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}
_FORMAT_NAMES = {
    "fixture": "redactkey fixtures", "store": "redactkey cassette stores",
    "vcrpy": "vcrpy cassettes", "ruby-vcr": "Ruby VCR cassettes",
    "rvcr-json": "rVCR JSON cassettes", "websocket": "websocket cassettes",
    "grpc": "gRPC cassettes", "json": "other JSON", "yaml": "other YAML",
    "unparsable": "unparsable", "har": "HAR files", "nock": "nock recordings",
    "betamax": "Betamax cassettes", "go-vcr": "go-vcr cassettes",
    "cassetter": "cassetter cassettes", "dd-test-agent": "dd test-agent recordings",
    "http-exchange": "HTTP exchange files",
    "toml": "other TOML", "text": "text files",
    "sse": "SSE stream files", "ndjson": "NDJSON stream files",
}
_ORDER = {"error": 0, "warning": 1, "note": 2}


def render_text(
    report: Report, stream: IO[str], *, color: bool | None = None, verbose: bool = False
) -> None:
    """The readable report: `path:line: rule (slot) preview` per finding, then what it means."""
    from rich.console import Console  # only the text report needs rich (startup time)
    from rich.markup import escape

    console = Console(file=stream, highlight=False, soft_wrap=True, force_terminal=color,
                      no_color=color is False, emoji=False, width=None if color else 120)
    issues = report.sorted_issues()
    for problem in report.problems:
        console.print(f"[bold red]{escape(problem.path)}: cannot read: "
                      f"{escape(problem.problem)}[/]")
    hidden = 0
    for issue in issues:
        if issue.level == "note" and not verbose:
            hidden += 1
            continue
        style = _STYLE[issue.level]
        detail = f"  [dim]{escape(issue.detail)}[/]" if issue.detail else ""
        console.print(f"[{style}]{escape(issue.headline())}[/]{detail}")
    if hidden:
        console.print(f"[dim]({hidden} notes not listed; --verbose lists them)[/]")
    if issues:
        _summary(console, issues)
    console.print(_closing_line(report, issues))


def _summary(console: Console, issues: Sequence[Issue]) -> None:
    from rich.markup import escape
    from rich.table import Table

    counts = Counter(issue.rule for issue in issues)
    files = {rule: len({i.path for i in issues if i.rule == rule}) for rule in counts}
    rules = sorted(counts, key=lambda r: (_ORDER[rule_for(r).severity], r))
    table = Table(title="Summary", title_justify="left", expand=False)
    for name, justify in (("rule", "left"), ("severity", "left"), ("kind", "left"),
                          ("findings", "right"), ("files", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for rule_id in rules:
        rule = rule_for(rule_id)
        style = _STYLE[rule.severity]
        table.add_row(f"[{style}]{escape(rule_id)}[/]", rule.severity, rule.category,
                      str(counts[rule_id]), str(files[rule_id]))
    console.print()
    console.print(table)
    console.print()
    console.print("[bold]What each rule means and what to do[/]")
    for rule_id in rules:
        rule = rule_for(rule_id)
        console.print(f"  [{_STYLE[rule.severity]}]{escape(rule_id)}[/]: "
                      f"{escape(rule.summary)}.\n      Fix: {escape(rule.fix)}.")
    console.print()


def _singular(name: str, count: int) -> str:
    """`1 text file`, `2 text files`: a plural format name made to agree with its count."""
    return name[:-1] if count == 1 and name.endswith("s") else name


def reason_kind(reason: str) -> str:
    """A reason without its particulars (sizes, per-call detail), for counting."""
    return reason.split(" (", 1)[0].split(":", 1)[0]


def _closing_line(report: Report, issues: Iterable[Issue]) -> str:
    listed = list(issues)
    levels = Counter(issue.level for issue in listed)
    files = len({issue.path for issue in listed})
    parts = [f"{report.command}: {counted(report.files, 'file')} read"]
    if report.formats:
        kinds = ", ".join(f"{count} {_singular(_FORMAT_NAMES.get(name, name), count)}"
                          for name, count in sorted(report.formats.items()))
        parts[0] += f" ({kinds})"
    if report.skipped:
        reasons = Counter(reason_kind(reason) for _path, reason in report.skipped)
        parts[0] += f", {len(report.skipped)} skipped (" + ", ".join(
            f"{count} {reason}" for reason, count in sorted(reasons.items())) + ")"
    if listed:
        parts.append(
            f"{counted(levels['error'], 'error')}, {counted(levels['warning'], 'warning')}, "
            f"{counted(levels['note'], 'note')} in {counted(files, 'file')}"
        )
    else:
        parts.append("no findings")
    if report.allowed:
        parts.append(f"{report.allowed} allowlisted")
    if report.problems:
        parts.append(f"{len(report.problems)} unreadable")
        verdict = "unreadable input (exit 2)"
    elif report.has_findings:
        verdict = "findings (exit 0 because of --exit-zero)" if report.exit_zero \
            else "findings (exit 1)"
    else:
        verdict = "clean (exit 0)"
    return "; ".join(parts) + f" -> {verdict}"
