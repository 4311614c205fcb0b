"""`redact check`: find unredacted secrets in files, and the report shared by check and audit.

A finding is an `Issue`: where (path, line, JSON pointer), which rule, the slot
or header it concerns, a masked preview and what to do. The value itself never
appears: not in the text, JSON or SARIF output, not in a fingerprint.

Output formats: a readable report (rich; colours and a progress bar only on a
terminal), `json`, and `sarif` (SARIF 2.1.0, for code-scanning upload).
Exit codes: 0 clean, 1 findings, 2 usage error or unreadable input.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from ._cassettes import Cassette, parse_text, read_text, resolve_pointer
from ._config import Config
from ._errors import FixtureFormatError, SecretError, UsageError
from ._redact import Redactor
from ._secrets import RunSecrets, mask

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_OK",
    "EXIT_USAGE",
    "RULES",
    "Issue",
    "Report",
    "Rule",
    "render",
]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

Severity = Literal["error", "warning", "note"]
_SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
_SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)


@dataclass(frozen=True)
class Rule:
    """What a rule means and what to do about it (shown in reports and SARIF)."""

    id: str
    category: str  # secret | leak | volatile | duplicate | fixture | size
    severity: Severity
    summary: str
    fix: str


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


RULES: dict[str, Rule] = _rules(
    Rule("known-value", "secret", "error",
         "the exact value of a secret from this environment (in some encoding)",
         "run `redact scrub --write` on the file, then rotate the credential"),
    Rule("sensitive-key", "secret", "error",
         "a credential-named field, header or query parameter holding a real value",
         "replace the value with a placeholder (`redact scrub --write`) and rotate it"),
    Rule("high-entropy", "secret", "error",
         "a random-looking value under a credential-like field name",
         "replace it with a placeholder (`redact scrub --write`); if it is not a secret, "
         "allowlist it (docs/configuration.md)"),
    Rule("base64-text", "secret", "error",
         "a base64-encoded text that holds a secret",
         "run `redact scrub --write` on the file, then rotate the credential"),
    Rule("identifying-header", "leak", "warning",
         "a header identifying your account (organisation / project id)",
         "drop or scrub the header when recording (vcrpy: filter_headers)"),
    Rule("cookie", "leak", "warning",
         "a cookie or set-cookie header (session or load-balancer state)",
         "drop cookie and set-cookie headers when recording (vcrpy: filter_headers)"),
    Rule("request-id", "volatile", "note",
         "a per-call request id: not a secret, but it changes on every recording",
         "nothing to do unless it reaches request matching; drop it to cut diff noise"),
    Rule("volatile-request-field", "volatile", "warning",
         "a timestamp, UUID or random id in what the request sends",
         "freeze or normalise it so that re-recording produces the same request"),
    Rule("volatile-key-material", "volatile", "warning",
         "a volatile value in a fixture's key material: the fixture will never hit",
         "add a normalizer for the field (see docs/configuration.md) and re-record"),
    Rule("duplicate-interaction", "duplicate", "warning",
         "the same request recorded more than once in one cassette",
         "re-record the cassette or use record_mode=once; duplicates replay in order"),
    Rule("duplicate-key", "duplicate", "error",
         "two fixtures for the same key",
         "keep one of them (the file named after the key) and delete the other"),
    Rule("schema-invalid", "fixture", "error",
         "the fixture does not match the fixture file schema",
         "re-record it; never edit a fixture by hand"),
    Rule("unknown-version", "fixture", "error",
         "the fixture's format version is not one this redactkey reads",
         "upgrade redactkey or re-record the fixture"),
    Rule("key-mismatch", "fixture", "error",
         "the stored key, the recomputed key and the file name disagree",
         "run `redact scrub --write` to re-key and rename it, or re-record it"),
    Rule("not-canonical", "fixture", "warning",
         "the file is not in canonical formatting (sorted keys, 2-space indent, newline)",
         "run `redact scrub --write` to rewrite it canonically"),
    Rule("unused-fixture", "fixture", "warning",
         "no test used this fixture in the last recorded run",
         "delete it if the test that recorded it is gone"),
    Rule("unparsable-file", "fixture", "error",
         "the file is not valid JSON / YAML",
         "fix or delete it and re-record"),
    Rule("oversized-file", "size", "warning",
         "the file is larger than max-fixture-bytes",
         "trim what the call records (large binary bodies) or raise max-fixture-bytes"),
)


def rule_for(rule_id: str) -> Rule:
    """The rule description, with a generic one for detector rules."""
    known = RULES.get(rule_id)
    if known is not None:
        return known
    return Rule(rule_id, "secret", "error",
                f"a value matching the {rule_id} secret detector",
                "replace it with a placeholder (`redact scrub --write`) and rotate it; "
                "if it is not a secret, allowlist it (docs/configuration.md)")


@dataclass(frozen=True, order=True)
class Issue:
    """One finding: where, which rule, a masked preview; never the value."""

    path: str
    line: int
    rule: str
    pointer: str = ""
    slot: str | None = None
    preview: str | None = None
    detail: str = ""
    severity: Severity | None = None

    @property
    def level(self) -> Severity:
        """The severity: the issue's own, or its rule's default."""
        return self.severity if self.severity is not None else rule_for(self.rule).severity

    @property
    def fingerprint(self) -> str:
        """16 hex chars from the rule, location and masked preview (never from the value)."""
        where = self.pointer if self.pointer else f"line:{self.line}"
        text = "\0".join((self.rule, where, self.slot or "", self.preview or ""))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def headline(self) -> str:
        """`path:line: rule (slot) preview`."""
        parts = [f"{self.path}:{self.line}: {self.rule}"]
        if self.slot:
            parts.append(f"({self.slot})")
        if self.preview:
            parts.append(self.preview)
        return " ".join(parts)

    def as_json(self) -> dict[str, object]:
        """The issue as plain JSON data."""
        rule = rule_for(self.rule)
        return {
            "path": self.path,
            "line": self.line,
            "rule": self.rule,
            "category": rule.category,
            "severity": self.level,
            "slot": self.slot,
            "preview": self.preview,
            "pointer": self.pointer,
            "detail": self.detail,
            "fingerprint": self.fingerprint,
            "message": f"{rule.summary}; {rule.fix}",
        }


@dataclass(frozen=True)
class InputProblem:
    """A path that could not be read at all (exit 2)."""

    path: str
    problem: str


@dataclass
class Report:
    """The outcome of `check` or `audit` over some paths."""

    command: str
    issues: list[Issue] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    files: int = 0
    allowed: int = 0
    formats: Counter[str] = field(default_factory=Counter)

    def sorted_issues(self) -> list[Issue]:
        """Issues in a stable order (path, line, rule, pointer)."""
        return sorted(set(self.issues))

    exit_zero: bool = False  # `--exit-zero`: report findings but exit 0

    @property
    def has_findings(self) -> bool:
        """Whether any finding is a warning or an error (notes alone are clean)."""
        return any(issue.level != "note" for issue in self.issues)

    @property
    def exit_code(self) -> int:
        """2 for unreadable input, else 1 for any error/warning finding, else 0."""
        if self.problems:
            return EXIT_USAGE
        if self.has_findings and not self.exit_zero:
            return EXIT_FINDINGS
        return EXIT_OK


# --------------------------------------------------------------------------- rendering


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
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
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
            "level": _SARIF_LEVEL[issue.level],
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


def _console(stream: IO[str], color: bool | None) -> Console:
    from rich.console import Console  # only the text report needs rich (startup time)

    return Console(
        file=stream,
        highlight=False,
        soft_wrap=True,
        force_terminal=color,
        no_color=color is False,
        emoji=False,
        width=None if color else 120,
    )


_STYLE = {"error": "bold red", "warning": "yellow", "note": "cyan"}
_FORMAT_NAMES = {
    "fixture": "redactkey fixtures", "store": "redactkey cassette stores",
    "vcrpy": "vcrpy cassettes", "ruby-vcr": "Ruby VCR cassettes",
    "rvcr-json": "rVCR JSON cassettes", "websocket": "websocket cassettes",
    "grpc": "gRPC cassettes", "json": "other JSON", "yaml": "other YAML",
    "unparsable": "unparsable",
}
_ORDER = {"error": 0, "warning": 1, "note": 2}


def render_text(
    report: Report, stream: IO[str], *, color: bool | None = None, verbose: bool = False
) -> None:
    """The readable report: `path:line: rule (slot) preview` per finding, then what it means."""
    from rich.markup import escape

    console = _console(stream, color)
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
    if report.command == "check" and not issues and not report.problems:
        return
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


def _closing_line(report: Report, issues: Iterable[Issue]) -> str:
    listed = list(issues)
    levels = Counter(issue.level for issue in listed)
    files = len({issue.path for issue in listed})
    noun = "file" if report.files == 1 else "files"
    parts = [f"{report.command}: {report.files} {noun} scanned"]
    if report.formats and report.command == "audit":
        kinds = ", ".join(f"{count} {_FORMAT_NAMES.get(name, name)}"
                          for name, count in sorted(report.formats.items()))
        parts[0] += f" ({kinds})"
    if listed:
        parts.append(
            f"{levels['error']} errors, {levels['warning']} warnings, {levels['note']} notes "
            f"in {files} files"
        )
    else:
        parts.append("no findings")
    if report.allowed:
        parts.append(f"{report.allowed} allowlisted")
    if report.problems:
        parts.append(f"{len(report.problems)} unreadable")
    if report.problems:
        verdict = "unreadable input (exit 2)"
    elif report.has_findings:
        verdict = "findings (exit 0 because of --exit-zero)" if report.exit_zero \
            else "findings (exit 1)"
    else:
        verdict = "clean (exit 0)"
    return "; ".join(parts) + f" -> {verdict}"


# --------------------------------------------------------------------------- classification

# Values other projects put where a credential was: they count as redacted.
_THIRD_PARTY_PLACEHOLDERS = frozenset(
    value.lower()
    for value in (
        "AUTHORIZATION-XXX", "X-API-KEY-XXX", "OPENAI-ORG-XXX", "OPENAI-PROJECT-XXX",
        "<OPENAI_ACCESS_TOKEN>", "<OPENAI_ADMIN_TOKEN>", "<OPENAI_API_KEY>", "<CENSORED>",
        "scrubbed", "ek_scrubbed", "<redacted>", "redacted", "[redacted]", "[filtered]",
        "filtered", "fake", "dummy", "mock", "test", "none", "null", "xxx", "<api_key>",
        "***", "****", "*****", "<hidden>", "hidden", "placeholder", "your-api-key",
        "your_api_key", "sk-xxx", "test-key", "test_key", "fake-key", "fake_key",
        "password", "passwd", "pass", "pw", "secret", "changeme", "token", "apikey",
        "api_key", "api-key", "your-token", "your_token", "<token>", "<password>",
    )
)
_PLACEHOLDER_SHAPES = re.compile(
    r"""(?x)^(?:
        <[A-Za-z0-9_.:-]{1,64}>            # <OPENAI_API_KEY>, <redacted>
      | \[[A-Za-z0-9_.:-]{1,64}\]          # [REDACTED], [REDACTED:SLOT], [FILTERED]
      | \{\{[A-Za-z0-9_. -]{1,64}\}\}      # {{API_KEY}}
      | [A-Za-z0-9_-]{0,40}-X{3,}          # AUTHORIZATION-XXX, OPENAI-ORG-XXX
      | X{3,} | \*{3,} | \.{3,}
      | [A-Za-z0-9_-]{1,16}(?:\.{3}|…)      # sk-..., AIza..., sk-ant-…
      | (?:fake|dummy|mock|test|example)[A-Za-z0-9_-]{0,40}
    )$""",
    re.IGNORECASE,
)
_AUTH_SCHEMES = re.compile(r"^(?:bearer|basic|token|digest|apikey|api-key)\s+", re.IGNORECASE)

IDENTIFYING_HEADERS = frozenset({
    "openai-organization", "openai-project", "anthropic-organization-id",
    "x-organization-id", "openai-org", "x-openai-organization",
})
_IDENTIFYING_SHAPE = re.compile(r"(?:^|-)organi[sz]ation(?:-id)?$|(?:^|-)project-id$")
COOKIE_HEADERS = frozenset({"cookie", "set-cookie", "set-cookie2"})
# rules that flag a value because of the name it sits under, not because of its shape
_BY_NAME_RULES = frozenset({"sensitive-key", "high-entropy", "url-password"})
_REQUEST_ID_SHAPE = re.compile(
    r"^(?:x-)?(?:[a-z0-9]+-)*request-?id$|^x-amzn-requestid$|^x-amz-request-id$"
    r"|^(?:x-)?trace-?id$|^x-ds-trace-id$|^cf-ray$|^x-cloud-trace-context$"
)


def looks_redacted(value: str, placeholder_check: Callable[[str], bool] | None = None) -> bool:
    """Whether a value is a placeholder: ours (`placeholder_check`) or a common third-party one."""
    text = value.strip().strip("'\"")
    if not text:
        return True
    bare = _AUTH_SCHEMES.sub("", text).strip()
    for candidate in (text, bare):
        if placeholder_check is not None and placeholder_check(candidate):
            return True
        if candidate.lower() in _THIRD_PARTY_PLACEHOLDERS or _PLACEHOLDER_SHAPES.match(candidate):
            return True
    if ":" in bare and not bare.startswith(("http:", "https:")):
        # basic-auth user:password with the password redacted
        _user, _, password = bare.partition(":")
        if password and looks_redacted(password, placeholder_check):
            return True
    return False


def header_class(name: str) -> str | None:
    """`cookie`, `identifying-header` or `request-id` for a header name, else None."""
    lower = name.lower()
    if lower in COOKIE_HEADERS:
        return "cookie"
    if lower in IDENTIFYING_HEADERS or _IDENTIFYING_SHAPE.search(lower):
        return "identifying-header"
    if _REQUEST_ID_SHAPE.match(lower):
        return "request-id"
    return None


# --------------------------------------------------------------------------- scanning

STRUCTURED_SUFFIXES = frozenset({".json", ".yaml", ".yml"})
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__",
                        ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox"})


@dataclass(frozen=True)
class Target:
    """A file to scan and the name to print for it."""

    path: Path
    display: str


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _missing_reason(path: Path) -> str:
    """Why a named path cannot be opened: a dangling or looping link, a parent that is a
    file, or plain absence."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop; fix or remove the link"
        if exc.errno == errno.ENOTDIR:
            return "a parent of this path is a file, not a directory; check the path"
        if path.is_symlink():
            return "broken symbolic link (its target does not exist); fix or remove the link"
    return "no such file or directory"


def expand_paths(
    paths: Sequence[str], *, suffixes: frozenset[str] | None = None
) -> tuple[list[Target], list[InputProblem]]:
    """Files named and files under directories named (sorted), and the paths that are missing."""
    targets: list[Target] = []
    problems: list[InputProblem] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = []
            for child in sorted(path.rglob("*")):
                if any(part in _SKIP_DIRS for part in child.relative_to(path).parts[:-1]):
                    continue
                if child.is_file() and (suffixes is None or child.suffix.lower() in suffixes):
                    found.append(child)
            for child in found:
                if child not in seen:
                    seen.add(child)
                    targets.append(Target(child, _display(child)))
        elif path.is_file():
            if path not in seen:
                seen.add(path)
                targets.append(Target(path, _display(path) if path.is_absolute() else raw))
        elif path.exists():
            problems.append(InputProblem(raw, "not a regular file"))
        else:
            problems.append(InputProblem(raw, _missing_reason(path)))
    return targets, problems


def _last_name(pointer: str) -> str:
    """The last non-index token of a JSON pointer (a header or field name)."""
    for token in reversed(pointer.split("/")[1:]):
        if not token.isdigit():
            return token.replace("~1", "/").replace("~0", "~")
    return ""


class Checker:
    """Scans files for secrets with a `Redactor` (detectors, the configured extra detectors,
    credential-named fields, run secrets); third-party placeholders count as redacted."""

    def __init__(self, redactor: Redactor, config: Config, *, normalise: bool = True) -> None:
        self.redactor = redactor
        self.config = config
        # False: JSON files are scanned as parsed, without building interactions (check)
        self.normalise = normalise

    # -- entry points ---------------------------------------------------------------

    def check_target(self, target: Target) -> tuple[list[Issue], Cassette | None]:
        """Issues of one file and its parsed form (None for plain text).

        Raises `FixtureFormatError` only when the file cannot be read at all; a JSON or
        YAML file that does not parse is scanned as text.
        """
        text = read_text(target.path)
        cassette: Cassette | None = None
        if target.path.suffix.lower() in STRUCTURED_SUFFIXES:
            try:
                cassette = parse_text(target.path, text, normalise=self.normalise)
            except FixtureFormatError:
                cassette = None
        if cassette is not None:
            return self.scan_cassette(cassette, target.display), cassette
        return self.scan_text(text, target.display), None

    def dismissed(self, rule: str, segment: str, whole: str | None = None) -> bool:
        """Whether a redactor finding is not a leak: a placeholder, or a value too short to
        be a credential under a credential-like name (`secret: str`, `?key=`)."""
        placeholder = self.redactor.is_placeholder
        trimmed = segment.strip().lstrip("`('\"").rstrip("`)'\".,;:")
        if looks_redacted(segment, placeholder) or looks_redacted(trimmed, placeholder):
            return True
        if whole is not None and whole != segment and looks_redacted(whole, placeholder):
            return True
        if rule in _BY_NAME_RULES:
            bare = _AUTH_SCHEMES.sub("", trimmed).strip()
            if len(bare) < self.config.min_secret_length:
                return True
        return False

    def scan_text(self, text: str, display: str) -> list[Issue]:
        """Issues in a plain text."""
        issues: list[Issue] = []
        for finding in self.redactor.findings(text):
            segment = text[finding.start:finding.end]
            if segment and self.dismissed(finding.rule, segment):
                continue
            line = text.count("\n", 0, finding.start) + 1
            issues.append(Issue(display, line, finding.rule, pointer="",
                                slot=finding.slot, preview=finding.preview))
        return issues

    def scan_cassette(self, cassette: Cassette, display: str) -> list[Issue]:
        """Issues in a parsed JSON/YAML document, at the lines of the file."""
        document = cassette.document
        issues: list[Issue] = []
        for finding in self.redactor.findings(document):
            value = resolve_pointer(document, finding.pointer)
            if isinstance(value, str):
                segment = value[finding.start:finding.end] if finding.end > finding.start \
                    else value
                if self.dismissed(finding.rule, segment, value):
                    continue
            rule = finding.rule
            slot = finding.slot
            name = _last_name(finding.pointer)
            if rule == "sensitive-key":
                if name.lower() in COOKIE_HEADERS:
                    rule = "cookie"
                slot = slot or name
            offset = finding.start if isinstance(value, str) else None
            line = cassette.line_for(finding.pointer, offset)
            issues.append(Issue(display, line, rule, pointer=self.masked_pointer(finding.pointer),
                                slot=slot, preview=finding.preview))
        if cassette.text.lstrip()[:1] not in ("{", "["):
            # YAML comments are not part of the document but are committed all the same
            for number, comment in enumerate(cassette.text.splitlines(), 1):
                if comment.lstrip().startswith("#"):
                    for finding in self.redactor.findings(comment):
                        segment = comment[finding.start:finding.end]
                        if not self.dismissed(finding.rule, segment):
                            issues.append(Issue(display, number, finding.rule,
                                                slot=finding.slot, preview=finding.preview))
        return issues

    def masked_pointer(self, pointer: str) -> str:
        """`pointer` with every member name that holds a secret masked (`/sk-p…`): an object
        key can be a credential (a token map), and reports print pointers."""
        tokens = pointer.split("/")
        changed = False
        for index, token in enumerate(tokens[1:], 1):
            if len(token) < self.config.min_secret_length or token.isdigit():
                continue
            name = token.replace("~1", "/").replace("~0", "~")
            if self.redactor.redact_text(name) != name:
                tokens[index] = mask(name).replace("~", "~0").replace("/", "~1")
                changed = True
        return "/".join(tokens) if changed else pointer

    # -- allowlist --------------------------------------------------------------------

    def allowlisted(self, issue: Issue) -> bool:
        """Whether the configuration accepts this finding."""
        return self.config.allowed(issue.path, issue.rule, issue.fingerprint) is not None


def build_redactor(
    config: Config,
    *,
    secret_env: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Redactor:
    """A Redactor over the caller's environment secrets (plus `secret_env` names).

    A secret-looking variable whose value is too short to scan for safely is skipped
    with a warning naming it, rather than stopping the hook.
    """
    env = dict(os.environ if environ is None else environ)
    skipped: set[str] = set()
    while True:
        visible = {k: v for k, v in env.items() if k not in skipped}
        try:
            secrets = RunSecrets.from_env(visible, min_length=config.min_secret_length)
            break
        except SecretError as exc:
            if exc.slot in skipped or exc.slot not in visible:
                raise
            skipped.add(exc.slot)
            if warn is not None:
                warn(f"skipping {exc.slot}: {exc.problem}")
    # A name in the configuration file is shared by everyone who runs the hook; a shell
    # without that variable has no value of it to leak, so the name is passed over
    # (as the pytest plugin does). A name given with --secret-env must be set.
    named = [(name, "configuration secret-env", False) for name in config.secret_env]
    named += [(name, "--secret-env", True) for name in secret_env]
    for name, origin, required in named:
        if name not in env:
            if not required:
                continue
            raise UsageError(
                f"{origin} {name}: no such environment variable; export it or drop the flag"
            )
        if name in skipped:
            continue
        try:
            secrets.add(name, env[name])
        except SecretError as exc:
            raise UsageError(f"{origin} {name}: {exc.problem}; {exc.fix}") from None
    return Redactor(secrets, placeholder=config.placeholder,
                    sensitive_keys=config.sensitive_keys,
                    extra_patterns=config.extra_patterns())


def check_paths(
    paths: Sequence[str],
    checker: Checker,
    *,
    progress: Callable[[Sequence[Target]], Iterable[Target]] | None = None,
) -> Report:
    """Run `redact check` over files and directories."""
    targets, problems = expand_paths(paths)
    report = Report(command="check", problems=list(problems))
    iterator: Iterable[Target] = progress(targets) if progress is not None else targets
    for target in iterator:
        try:
            issues, cassette = checker.check_target(target)
        except FixtureFormatError as exc:
            report.problems.append(InputProblem(target.display, exc.problem))
            continue
        report.files += 1
        report.formats[cassette.format if cassette is not None else "text"] += 1
        for issue in issues:
            if checker.allowlisted(issue):
                report.allowed += 1
            else:
                report.issues.append(issue)
    return report


@contextlib.contextmanager
def progress_bar(
    color: bool | None = None, *, threshold: int = 200
) -> Iterator[Callable[[Sequence[Target]], Iterable[Target]]]:
    """A wrapper that shows a transient progress bar on stderr for large trees on a terminal."""

    def advance(targets: Sequence[Target]) -> Iterable[Target]:
        terminal = sys.stderr.isatty() if color is None else color
        if not terminal or len(targets) < threshold:
            return targets
        return _tracked(targets)

    def _tracked(targets: Sequence[Target]) -> Iterator[Target]:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True, force_terminal=color, no_color=color is False)
        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task("scanning", total=len(targets))
            for target in targets:
                yield target
                bar.advance(task)

    yield advance
