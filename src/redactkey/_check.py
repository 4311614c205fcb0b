"""`redact check`: find unredacted secrets in files.

The checker scans JSON, YAML and text with a `Redactor` and reports `Issue`s
(see `_findings`); third-party placeholders count as redacted (`_placeholders`).
Exit codes: 0 clean, 1 findings, 2 usage error or unreadable input.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._cassettes import Recording, parse_text, read_text, resolve_pointer
from ._config import Config
from ._errors import FixtureFormatError, SecretError, UsageError
from ._findings import InputProblem, Issue, Report
from ._placeholders import AUTH_SCHEMES, looks_redacted
from ._redact import Redactor, shown_pointer
from ._secrets import RunSecrets
from ._vocabulary import COOKIE_HEADERS

__all__ = [
    "STRUCTURED_SUFFIXES",
    "Checker",
    "Target",
    "build_redactor",
    "check_paths",
    "expand_paths",
    "progress_bar",
]

# rules that flag a value because of the name it sits under, not because of its shape
_BY_NAME_RULES = frozenset({"sensitive-key", "high-entropy", "url-password"})

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

    def check_target(self, target: Target) -> tuple[list[Issue], Recording | None]:
        """Issues of one file and its parsed form (None for plain text).

        Raises `FixtureFormatError` only when the file cannot be read at all; a JSON or
        YAML file that does not parse is scanned as text.
        """
        text = read_text(target.path)
        cassette: Recording | None = None
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
            bare = AUTH_SCHEMES.sub("", trimmed).strip()
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

    def scan_cassette(self, cassette: Recording, display: str) -> list[Issue]:
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
        return shown_pointer(pointer, self.redactor, min_length=self.config.min_secret_length)

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
