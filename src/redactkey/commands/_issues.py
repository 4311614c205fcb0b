"""Findings and their rules: what `check`, `audit` and `scrub` report.

An `Issue` says where, which rule and a masked preview; the value itself never appears,
in any output or fingerprint. `RULES` is the catalogue; a `Report` gathers one run's
issues and decides its exit code.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from ..recordings._classify import InputProblem

__all__ = [
    "EXIT_FINDINGS",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "RULES",
    "FindingRule",
    "InputProblem",
    "Issue",
    "Report",
    "Severity",
    "counted",
    "rule_for",
    "value_tag",
]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3  # a bug in redactkey: one line on stderr, never a traceback

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class FindingRule:
    """What a rule means and what to do about it (shown in reports and SARIF)."""

    id: str
    category: str  # secret | leak | volatile | duplicate | fixture | size
    severity: Severity
    summary: str
    fix: str


RULES: dict[str, FindingRule] = {rule.id: rule for rule in (
    FindingRule("known-value", "secret", "error",
         "the exact value of a secret from this environment (in some encoding)",
         "run `redact scrub --write` on the file, then rotate the credential"),
    FindingRule("sensitive-key", "secret", "error",
         "a credential-named field, header or query parameter holding a real value",
         "replace the value with a placeholder (`redact scrub --write`) and rotate it"),
    FindingRule("high-entropy", "secret", "error",
         "a random-looking value under a credential-like field name",
         "replace it with a placeholder (`redact scrub --write`); if it is not a secret, "
         "allowlist it (docs/configuration.md, 'Allowlist')"),
    FindingRule("base64-text", "secret", "error",
         "a base64-encoded text that holds a secret",
         "run `redact scrub --write` on the file, then rotate the credential"),
    FindingRule("identifying-header", "leak", "warning",
         "a header identifying your account (organisation / project id)",
         "drop or scrub the header when recording (vcrpy: filter_headers)"),
    FindingRule("cookie", "leak", "warning",
         "a cookie or set-cookie header (session or load-balancer state)",
         "drop cookie and set-cookie headers when recording (vcrpy: filter_headers)"),
    FindingRule("request-id", "volatile", "note",
         "a per-call request id: not a secret, but it changes on every recording",
         "nothing to do unless it reaches request matching; drop it to cut diff noise"),
    FindingRule("volatile-request-field", "volatile", "warning",
         "a timestamp, UUID or random id in what the request sends",
         "freeze it in the test, or normalise it (docs/keys.md, 'Volatile values and "
         "normalizers'), so that re-recording produces the same request"),
    FindingRule("volatile-key-material", "volatile", "warning",
         "a volatile value in a fixture's key material: the fixture will never hit",
         "add a normalizer for the field (docs/keys.md, 'Volatile values and normalizers') "
         "and re-record"),
    FindingRule("duplicate-interaction", "duplicate", "warning",
         "the same request recorded more than once in one cassette",
         "re-record the cassette or use record_mode=once; duplicates replay in order"),
    FindingRule("duplicate-key", "duplicate", "error",
         "two fixtures for the same key",
         "keep one of them (the file named after the key) and delete the other"),
    FindingRule("answer-gap", "duplicate", "warning",
         "a later answer of a request (`<stem>.<key>.<n>.json`) without its first answer "
         "(`<stem>.<key>.json`): the request's first calls miss on replay",
         "re-record the test that made the request, or delete its later answers"),
    FindingRule("schema-invalid", "fixture", "error",
         "the fixture does not match the fixture file schema",
         "re-record it; never edit a fixture by hand"),
    FindingRule("unknown-version", "fixture", "error",
         "the fixture's format version is not one this redactkey reads",
         "upgrade redactkey or re-record the fixture"),
    FindingRule("key-mismatch", "fixture", "error",
         "the stored key, the recomputed key and the file name disagree",
         "run `redact scrub --write` to re-key and rename it, or re-record it"),
    FindingRule("not-canonical", "fixture", "warning",
         "the file is not in canonical formatting (sorted keys, 2-space indent, newline)",
         "run `redact scrub --write` to rewrite it canonically"),
    FindingRule("unused-fixture", "fixture", "warning",
         "no test used this fixture in the last recorded run",
         "delete it if the test that recorded it is gone"),
    FindingRule("expired-fixture", "fixture", "warning",
         "the recording was last changed longer ago than --max-age (by git, else mtime)",
         "re-record it, or check it still holds with --redactkey-mode=verify "
         "(docs/verify.md, 'Expiry')"),
    FindingRule("unparsable-file", "fixture", "error",
         "the file is not valid JSON / YAML",
         "fix or delete it and re-record"),
    FindingRule("unreadable-file", "fixture", "warning",
                "a file that may hold a recording could not be read (gzip over the cap or "
                "corrupt, a body that does not decode, binary, too large for a command "
                "that reads it whole)",
                "look at the file: trim or fix it, or delete it; `--strict` makes this an "
                "error"),
    FindingRule("oversized-file", "size", "warning",
         "the file is larger than max-fixture-bytes",
         "trim what the call records (large binary bodies) or raise max-fixture-bytes "
         "(docs/configuration.md)"),
)}


def counted(n: int, noun: str) -> str:
    """`1 warning`, `2 warnings`: the number with its noun in agreement."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def value_tag(value: str, salt: str) -> str:
    """8 hex characters that change when `value` changes: a slow salted hash cut to 32 bits.
    Too short to identify a credential (billions of values share each tag), long enough
    that a new value at the same place almost surely gets a new one."""
    digest = hashlib.pbkdf2_hmac("sha256", value.encode("utf-8", "surrogateescape"),
                                 f"redactkey-baseline-v1\0{salt}".encode(), 20_000)
    return digest[:4].hex()


def rule_for(rule_id: str) -> FindingRule:
    """The rule description, with a generic one for detector rules."""
    known = RULES.get(rule_id)
    if known is not None:
        return known
    if rule_id.endswith("-near-miss"):
        return FindingRule(rule_id, "secret", "warning",
                    "a provider's key prefix with the wrong length or a failing checksum: a "
                    "typo, a truncated paste or a made-up sample, not a working key as it "
                    "stands",
                    "replace it with a placeholder (`redact scrub --write`); if it was a real "
                    "key, rotate it")
    return FindingRule(rule_id, "secret", "error",
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
    # Changes when the value changes; never identifies it (see `value_tag`). Baselines only.
    tag: str = field(default="", compare=False)

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


@dataclass
class Report:
    """The outcome of `check` or `audit` over some paths."""

    command: str
    issues: list[Issue] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    files: int = 0
    allowed: int = 0
    formats: Counter[str] = field(default_factory=Counter)
    strict: bool = False  # `--strict`: an unreadable file is an error, not a warning
    # every file the walk met: read (path, format) or skipped (path, reason)
    read_files: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def read(self, display: str, fmt: str) -> None:
        """Note a file read, with its format."""
        self.files += 1
        self.formats[fmt] += 1
        self.read_files.append((display, fmt))

    def skip(self, display: str, reason: str, *, finding: bool = False) -> None:
        """Note a file not read; `finding`: it may hold a recording (`unreadable-file`)."""
        self.skipped.append((display, reason))
        if finding:
            self.issues.append(Issue(display, 1, "unreadable-file", detail=reason,
                                     severity="error" if self.strict else None))

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
