"""`redact check`: find unredacted secrets in files (docs/cli/check.md); the checker is
the scan `audit` and `scrub` build on."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .._errors import FixtureFormatError
from ..keys._canonical import JSONValue
from ..record._config import Config
from ..recordings._cassettes import LineMap, Recording, resolve_pointer
from ..recordings._classify import (
    RECORDING_SUFFIXES,
    Target,
    is_large,
    looks_like_recording,
    open_target,
    too_large,
    walk,
)
from ..recordings._readers import (
    STREAM_FILE_SUFFIXES,
    BodyStream,
    body_streams,
    file_stream,
    names_a_stream,
    read_recording,
)
from ..redact._redactor import Redactor, shown_pointer
from ..scan._placeholders import AUTH_SCHEMES, looks_redacted, made_up
from ..scan._rules import NEAR_MISS_RULES
from ..secrets._run_secrets import RunSecrets
from ._baseline import Baseline
from ._check_sites import LineCounter, header_issues, named_rule, stream_issues
from ._issues import Issue, Report, value_tag
from ._parallel import Outcome, Progress, read_into

__all__ = [
    "MISSING",
    "Baseline",
    "Checker",
    "CheckerSpec",
    "Target",
    "at_pointer",
    "begin",
    "build_redactor",
    "check_one",
    "check_paths",
    "progress_bar",
    "streams_of",
]

# rules that flag a value because of the name it sits under, not because of its shape
_BY_NAME_RULES = frozenset({"sensitive-key", "high-entropy", "url-password"})


def _made_up(value: str) -> bool:
    """Whether a finding's value (or its credential without an auth scheme) looks made up."""
    trimmed = value.strip().lstrip("`('\"").rstrip("`)'\".,;:")
    return made_up(trimmed) or made_up(AUTH_SCHEMES.sub("", trimmed).strip())


def begin(paths: Sequence[str], command: str, *, strict: bool = False
          ) -> tuple[Report, list[Target]]:
    """The report of a command over `paths` and the files it reads: one walk for `check`,
    `audit` and `scrub`, with the skipped files listed (and reported when they may hold a
    recording) and the paths that cannot be opened as problems (exit 2)."""
    found = walk(paths)
    report = Report(command=command, problems=list(found.problems), strict=strict)
    for skipped in found.skipped:
        report.skip(skipped.display, skipped.reason, finding=skipped.unreadable)
    return report, found.targets


def streams_of(recording: Recording) -> list[BodyStream]:
    """The streamed bodies of a recording (none without interactions, and none in a file
    that neither names a stream's content type nor holds an SSE `data:` line)."""
    if not recording.interactions:
        return []
    text = recording.text
    if "data:" not in text and not names_a_stream(text):
        return []
    return list(body_streams(recording))


MISSING = object()


def at_pointer(document: Any, pointer: str, value: Any = MISSING) -> Any:
    """The value at `pointer` of a raw document (`MISSING` if none); with `value`, put it
    there and return what was there."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    if not tokens:
        return MISSING
    node = document
    for token in tokens:
        parent = node
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            key: Any = int(token)
        elif isinstance(node, dict) and token in node:
            key = token
        else:
            return MISSING
        node = node[key]
    if value is not MISSING:
        parent[key] = value
    return node


@dataclass(frozen=True)
class CheckerSpec:
    """How to build a `Checker` again in another process (`--jobs`): the configuration and
    the names of the secrets, never their values (each process reads its environment)."""

    config: Config
    secret_env: tuple[str, ...] = ()
    # False: JSON files are scanned as parsed, without building interactions (check)
    normalise: bool = True
    strict: bool = False  # `--strict`: files that cannot be read are errors
    # True: issues carry a value tag, so a baseline notices a changed value
    tagging: bool = False
    # False: a file over the whole-read bound is refused (`Unreadable`), not read in
    # pieces (the commands that rewrite a file need it whole)
    pieces: bool = True

    def build(self, redactor: Redactor | None = None) -> Checker:
        """A checker with `redactor`, by default one over this process's environment secrets."""
        if redactor is None:
            redactor = build_redactor(self.config, secret_env=self.secret_env)
        return Checker(redactor, self)

    def work(self, one: Callable[[Checker, Target], Outcome]) -> Callable[[Target], Outcome]:
        """`one` over a checker built here (a worker process's work)."""
        return functools.partial(one, self.build())


# An inline suppression on the line of a finding: ours, detect-secrets' and gitleaks'.
INLINE_PRAGMA = re.compile(r"redact:\s*allow|pragma:\s*allowlist[ -]secret|gitleaks:allow")


class Checker:
    """Scans files for secrets with a `Redactor` (detectors, the configured extra detectors,
    credential-named fields, run secrets); third-party placeholders count as redacted."""

    def __init__(self, redactor: Redactor, spec: CheckerSpec) -> None:
        self.redactor = redactor
        self.spec = spec  # its settings, and how workers rebuild it (`--jobs`)
        self.config = spec.config
        self.strict = spec.strict
        self.parse_problem: str | None = None  # why the last file did not parse
        # Three caches, for what repeats across the files of one tree; check without them
        # read bench_check.py's tree 10-14% slower (pointer masks most, then placeholders).
        self._shown: dict[str, str] = {}  # pointer -> pointer as printed (masked)
        # header name -> its class (None: not reported by name); names repeat in every file
        self._header_classes: dict[str, str | None] = {}
        # (by name, segment, whole) -> dismissed: placeholders repeat in every file
        self._dismissed: dict[tuple[bool, str, str | None], bool] = {}
        self._whole_judged: tuple[str, bool] | None = None
        # findings the last `check_target` passed over for an inline pragma
        self.suppressed = 0

    # -- entry points ---------------------------------------------------------------

    def check_target(self, target: Target) -> tuple[list[Issue], Recording | None]:
        """Issues of one file and its parsed form (None for plain text; a stream file's
        form has the stream's kind as its format, `sse` or `ndjson`, and no interactions).

        Raises `Unreadable` when the file cannot be read (over a cap, corrupt gzip); a
        JSON or YAML file that does not parse is scanned as text (`parse_problem` says
        why). A file over the whole-read bound is read in pieces (`_large`).
        """
        self.suppressed = 0
        self.parse_problem = None
        if is_large(target):
            if not self.spec.pieces:
                raise too_large(target)
            from ._large import check_large

            return check_large(self, target)
        opened = open_target(target)
        text = opened.text
        recording: Recording | None = None
        named = opened.suffix in RECORDING_SUFFIXES
        if opened.suffix not in STREAM_FILE_SUFFIXES and (named or looks_like_recording(text)):
            # a streamed body is split into its events, so a file that names a stream's
            # content type leaves the JSON fast path (the others stay on it)
            normalise = self.spec.normalise or names_a_stream(text)
            try:
                recording = read_recording(target.path, text, suffix=opened.suffix,
                                           normalise=normalise)
            except FixtureFormatError as exc:
                self.parse_problem = exc.problem
                if not named:
                    issues = self.scan_text(text, target.display)
                    issues.append(self.unreadable_issue(
                        target.display, f"looks like a recording but does not parse: "
                                        f"{exc.problem}"))
                    return issues, None
        if recording is not None:
            issues = self.without_pragmas(self.scan_cassette(recording, target.display), text)
            issues.extend(self.unreadable_issue(target.display, problem)
                          for problem in recording.problems)
            return issues, recording
        stream = file_stream(text, opened.suffix)
        if stream is not None:  # a stream saved as a file of its own (`.sse`, `.ndjson`)
            # read as its kind (`sse`, `ndjson`): the file is the body, its events the data
            holder = Recording(path=target.path, format=stream.kind, document=text,
                               lines=LineMap(), text=text)
            issues = self.without_pragmas(stream_issues(self, holder, target.display, stream),
                                         text)
            return issues, holder
        return self.without_pragmas(self.scan_text(text, target.display), text), None

    def without_pragmas(self, issues: list[Issue], text: str) -> list[Issue]:
        """`issues` less those on a line of `text` that carries an inline pragma (`redact:
        allow`, `pragma: allowlist secret`, `gitleaks:allow`), counted as allowed."""
        # every pragma spells "allow": a file without it needs no regex pass
        if not issues or "allow" not in text or INLINE_PRAGMA.search(text) is None:
            return issues
        lines = text.splitlines()
        kept = [i for i in issues
                if not (0 < i.line <= len(lines) and INLINE_PRAGMA.search(lines[i.line - 1]))]
        self.suppressed += len(issues) - len(kept)
        return kept

    def _issue(self, issue: Issue, value: str) -> Issue:
        """A finding as reported: a near miss, or a value that looks made up (a fake or an
        example: `scan._placeholders.made_up`), is a warning; with a baseline, a value tag."""
        if issue.rule in NEAR_MISS_RULES:
            issue = dataclasses.replace(issue, severity="warning")
        elif issue.level == "error" and _made_up(value):
            issue = dataclasses.replace(issue, severity="warning",
                                        detail=issue.detail or "looks made up (a fake or an "
                                                               "example), not a working key")
        if self.spec.tagging:
            issue = dataclasses.replace(issue, tag=value_tag(value, issue.fingerprint))
        return issue

    def unreadable_issue(self, display: str, problem: str) -> Issue:
        """An `unreadable-file` finding: a warning, an error with `--strict`."""
        return Issue(display, 1, "unreadable-file", detail=problem,
                     severity="error" if self.strict else None)

    def dismissed(self, rule: str, segment: str, whole: str | None = None) -> bool:
        """Whether a redactor finding is not a leak: a placeholder, or a value too short to
        be a credential under a credential-like name (`secret: str`, `?key=`)."""
        if len(segment) > 256 or (whole is not None and len(whole) > 256):
            return self._dismiss(rule, segment, whole)
        key = (rule in _BY_NAME_RULES, segment, whole)
        cached = self._dismissed.get(key)
        if cached is None:
            cached = self._dismiss(rule, segment, whole)
            if len(self._dismissed) < 16384:
                self._dismissed[key] = cached
        return cached

    def _dismiss(self, rule: str, segment: str, whole: str | None) -> bool:
        placeholder = self.redactor.is_placeholder
        trimmed = segment.strip().lstrip("`('\"").rstrip("`)'\".,;:")
        if "%" in trimmed:  # (a template in a URL is percent-encoded: `%24%7Bpassword%7D`)
            trimmed = unquote(trimmed)
        if looks_redacted(segment, placeholder) or looks_redacted(trimmed, placeholder):
            return True
        # The value around a finding by name may say it is a placeholder (`Bearer <TOKEN>`);
        # around a detector's match it says nothing: the match itself is the evidence.
        if rule not in _BY_NAME_RULES:
            return False
        if whole is not None and whole != segment and self._placeholder_whole(whole):
            return True
        return len(AUTH_SCHEMES.sub("", trimmed).strip()) < self.config.min_secret_length

    def _placeholder_whole(self, whole: str) -> bool:
        """`looks_redacted` of the value around a finding, judged once for all the findings
        in one value (the value is the same object for each of them)."""
        last = self._whole_judged
        if last is None or last[0] is not whole:
            last = self._whole_judged = (whole, looks_redacted(whole, self.redactor.is_placeholder))
        return last[1]

    def scan_text(self, text: str, display: str, first_line: int = 1) -> list[Issue]:
        """Issues in a plain text whose first line is line `first_line` of the file."""
        issues: list[Issue] = []
        line_at = LineCounter(text)
        for finding in self.redactor.findings(text):
            segment = text[finding.start:finding.end]
            if segment and self.dismissed(finding.rule, segment):
                continue
            line = line_at(finding.start) + first_line - 1
            issues.append(self._issue(Issue(display, line, finding.rule, pointer="",
                                            slot=finding.slot, preview=finding.preview),
                                      segment))
        return issues

    def scan_cassette(self, cassette: Recording, display: str) -> list[Issue]:
        """Issues in a parsed JSON/YAML document, at the lines of the file."""
        document = cassette.document
        issues: list[Issue] = []
        streams = streams_of(cassette)
        # a streamed body is read event by event (below), not as one text
        held = [(stream, at_pointer(document, stream.pointer, "")) for stream in streams]
        try:
            found = self.redactor.findings(document)
        finally:
            for stream, value in reversed(held):
                at_pointer(document, stream.pointer, value)
        for stream in streams:
            issues.extend(stream_issues(self, cassette, display, stream))
        values: dict[str, JSONValue] = {}  # many findings in one value: it is looked up once
        for finding in found:
            if finding.pointer not in values:
                values[finding.pointer] = resolve_pointer(document, finding.pointer)
            value = values[finding.pointer]
            if isinstance(value, str):
                segment = value[finding.start:finding.end] if finding.end > finding.start \
                    else value
                if self.dismissed(finding.rule, segment, value):
                    continue
            rule, slot = named_rule(finding.rule, finding.slot, finding.pointer)
            offset = finding.start if isinstance(value, str) else None
            line = cassette.line_for(finding.pointer, offset)
            shown = (value[finding.start:finding.end] if finding.end > finding.start else value) \
                if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
            issues.append(self._issue(
                Issue(display, line, rule, pointer=self.masked_pointer(finding.pointer),
                      slot=slot, preview=finding.preview), shown))
        reported = {issue.pointer for issue in issues}
        issues.extend(header_issues(self, cassette, display, reported))
        if cassette.text.lstrip()[:1] not in ("{", "["):
            # YAML comments are not part of the document but are committed all the same
            for number, comment in enumerate(cassette.text.splitlines(), 1):
                if comment.lstrip().startswith("#"):
                    issues.extend(self.scan_text(comment, display, number))
        return issues

    def masked_pointer(self, pointer: str) -> str:
        """`pointer` with every member name that holds a secret masked (`/sk-p…`): an object
        key can be a credential (a token map), and reports print pointers."""
        shown = self._shown.get(pointer)
        if shown is None:
            shown = shown_pointer(pointer, self.redactor,
                                  min_length=self.config.min_secret_length)
            if len(self._shown) < 65536:  # pointers repeat across files of one shape
                self._shown[pointer] = shown
        return shown

    # -- allowlist --------------------------------------------------------------------

    def allowlisted(self, issue: Issue) -> bool:
        """Whether the configuration accepts this finding."""
        return self.config.allowed(issue.path, issue.rule, issue.fingerprint) is not None


def build_redactor(
    config: Config,
    *,
    secret_env: Sequence[str] = (),
    warn: Callable[[str], None] | None = None,
) -> Redactor:
    """A Redactor over the caller's environment secrets (plus `secret_env` names).

    The commands record nothing, so they follow the replay rule for stand-in values: a
    variable too short to scan for safely (or a placeholder such as `dummy`) is skipped
    with a warning naming it, rather than stopping the hook on every commit. A name this
    shell does not set has no value to leak: passed over, with a warning when given with
    --secret-env (a name in the configuration is shared by everyone who runs the hook).
    """
    env = dict(os.environ)
    secrets = RunSecrets.from_env(env, min_length=config.min_secret_length, skip_short=True)
    for name in dict.fromkeys((*config.secret_env, *secret_env)):
        if name in env:
            secrets.add(name, env[name])
        elif name in secret_env and warn is not None:
            warn(f"skipping --secret-env {name}: not set in this environment")
    if warn is not None:
        for slot, reason in secrets.dummies.items():
            warn(f"skipping {slot}: {reason}")
    return Redactor(secrets, placeholder=config.placeholder,
                    sensitive_keys=config.sensitive_keys,
                    extra_patterns=config.extra_patterns())


def check_one(checker: Checker, target: Target) -> Outcome:
    """The outcome of checking one file (in this process or a worker)."""
    issues, recording = checker.check_target(target)
    return Outcome(target.display, recording.format if recording is not None else "text",
                   issues, allowed=checker.suppressed)


def check_paths(
    paths: Sequence[str],
    checker: Checker,
    *,
    progress: Callable[[Sequence[Target]], Iterable[Target]] | None = None,
    jobs: int = 1,
    baseline: Baseline | None = None,
) -> Report:
    """Run `redact check` over files and directories (`jobs` worker processes); findings
    in `baseline` are passed over (counted as allowed)."""
    report, targets = begin(paths, "check", strict=checker.strict)
    factory = functools.partial(checker.spec.work, check_one)
    for outcome in read_into(report, targets, functools.partial(check_one, checker), factory,
                             jobs=jobs, progress=progress):
        for issue in outcome.issues:
            if checker.allowlisted(issue) or (baseline is not None and issue in baseline):
                report.allowed += 1
            else:
                report.issues.append(issue)
    return report


def progress_bar(color: bool | None = None, *, threshold: int = 200) -> Progress:
    """A wrapper that shows a transient progress bar on stderr for large trees on a terminal."""

    def advance(targets: Sequence[Target]) -> Iterable[Target]:
        terminal = sys.stderr.isatty() if color is None else color
        if not terminal or len(targets) < threshold:
            return targets
        return _tracked(targets)

    def _tracked(targets: Sequence[Target]) -> Iterator[Target]:
        from rich import progress
        from rich.console import Console

        console = Console(stderr=True, force_terminal=color, no_color=color is False)
        with progress.Progress(progress.TextColumn("[progress.description]{task.description}"),
                               progress.BarColumn(), progress.MofNCompleteColumn(),
                               progress.TimeRemainingColumn(), console=console,
                               transient=True) as bar:
            task = bar.add_task("scanning", total=len(targets))
            for target in targets:
                yield target
                bar.advance(task)

    return advance
