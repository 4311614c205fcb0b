"""Where `redact check` finds issues beside the document's own strings: the events of a
streamed body (a secret split across events reported once, where it starts) and the
recorded headers, read by name with one vocabulary for every format."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

from ..recordings._cassettes import Recording, resolve_pointer
from ..recordings._readers import BodyStream, header_sites
from ..scan._placeholders import looks_redacted
from ..scan._vocabulary import COOKIE_HEADERS, header_class
from ..secrets._run_secrets import mask
from ._issues import Issue

if TYPE_CHECKING:
    from ._check import Checker

__all__ = ["header_issues", "named_rule", "stream_issues"]


def _binary_line(recording: Recording, pointer: str, at: int) -> int:
    """The line of byte `at` of a binary body kept as base64 in a YAML block (`!!binary |`,
    one run of base64 text per line); the body's line elsewhere."""
    first = recording.line_for(pointer)
    lines = recording.text.splitlines()
    indicator = next((number for number in (first, first - 1)
                      if 0 < number <= len(lines) and lines[number - 1].rstrip().endswith(
                          ("|", "|-", "|+", ">", ">-"))), None)
    if at < 0 or indicator is None:
        return first
    target, seen = (at // 3) * 4, 0
    for number in range(indicator, len(lines)):  # lines[indicator] is the block's first line
        seen += len(lines[number].strip())
        if seen > target:
            return number + 1
    return first


def named_rule(rule: str, slot: str | None, pointer: str) -> tuple[str, str | None]:
    """A finding's rule and slot: a credential-named value is a `cookie` under a cookie
    header, and the name it sits under (the last non-index token of the pointer) its slot."""
    if rule != "sensitive-key":
        return rule, slot
    name = next((token.replace("~1", "/").replace("~0", "~")
                 for token in reversed(pointer.split("/")[1:]) if not token.isdigit()), "")
    return "cookie" if name.lower() in COOKIE_HEADERS else rule, slot or name


class LineCounter:
    """1-based line numbers of offsets of one text, asked in (mostly) rising order: each
    call counts only from the last offset, so a text with many findings costs one pass."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.line = text, 0, 1

    def __call__(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def stream_issues(checker: Checker, recording: Recording, display: str, stream: BodyStream,
                  *, first_event: int = 0) -> list[Issue]:
    """Findings in a streamed body, event by event: each names its event (the pointer
    is the body's, then the event's index, then the place in the event), at the line
    of the event where the format has lines; a secret split across events is found on
    their joined text and reported once, in the event where it starts. The framing
    (SSE `event:`/`id:` lines) is scanned as text. Events are numbered from
    `first_event` (a window of a long stream file)."""
    issues: list[Issue] = []
    body = stream.body

    counted = LineCounter(body if isinstance(body, str) else "")

    def line_at(offset: int) -> int:
        if not stream.pointer and isinstance(body, str):  # the file is the body
            return counted(offset)
        return recording.line_for(stream.pointer, offset)

    if isinstance(body, str):
        framing = list(body)
        for event in stream.events:
            framing[event.start:event.end] = " " * (event.end - event.start)
        residue = "".join(framing)
        for finding in checker.redactor.findings(residue):
            segment = residue[finding.start:finding.end]
            if segment and checker.dismissed(finding.rule, segment):
                continue
            issues.append(checker._issue(Issue(
                display, line_at(finding.start), finding.rule,
                pointer=checker.masked_pointer(stream.pointer), slot=finding.slot,
                preview=finding.preview, detail=f"{stream.kind} framing"), segment))
    # (place, rule) -> (first event, last event, issue) of a finding that may run on
    runs: dict[tuple[str, str], tuple[int, int, int]] = {}
    for finding in checker.redactor.stream_findings([e.value for e in stream.events]):
        _, index_token, *rest = finding.pointer.split("/")
        index = int(index_token)
        inner = "".join("/" + token for token in rest)
        event = stream.events[index]
        leaf = resolve_pointer(event.value, inner)
        segment = ""
        if isinstance(leaf, str):
            segment = leaf[finding.start:finding.end] if finding.end > finding.start \
                else leaf
        run = runs.get((inner, finding.rule))
        if run is not None and finding.start == 0 and run[1] == index - 1:
            # the rest of a secret split across events: one finding, where it starts
            first, _, at = run
            issues[at] = dataclasses.replace(
                issues[at], detail=f"{stream.kind} events {first + first_event}-"
                                   f"{index + first_event} (split across them)")
            runs[(inner, finding.rule)] = (first, index, at)
            continue
        if isinstance(leaf, str) and checker.dismissed(finding.rule, segment, leaf):
            continue
        rule, slot = named_rule(finding.rule, finding.slot, inner)
        if event.start >= 0:
            offset = event.start
            if segment and isinstance(body, str):
                at = body.find(json.dumps(segment)[1:-1], event.start, event.end)
                offset = at if at >= 0 else event.start
            line = line_at(offset)
        else:
            line = _binary_line(recording, stream.pointer, event.at)
        runs[(inner, finding.rule)] = (index, index, len(issues))
        issues.append(checker._issue(Issue(
            display, line, rule, pointer=checker.masked_pointer(
                f"{stream.pointer}/{index + first_event}{inner}"),
            slot=slot, preview=finding.preview,
            detail=f"{stream.kind} event {index + first_event}"),
            segment or json.dumps(leaf, sort_keys=True, default=str)))
    return issues

def header_issues(checker: Checker, recording: Recording, display: str,
                  reported: set[str]) -> list[Issue]:
    """Findings by header name, one vocabulary for every format: a credential header
    (error), a cookie and an identifying header (warnings), a request id (note).
    Values already reported at the same place, and placeholders, are passed over."""
    kept: list[tuple[str, str, str, str, str | None]] = []
    classes = checker._header_classes
    for name, value, pointer in header_sites(recording):
        if not value or pointer in reported:
            continue
        try:
            cls = classes[name]
        except KeyError:
            cls = header_class(name)
            if cls is None and checker.redactor.is_sensitive_key(name):
                cls = "sensitive-key"
            if len(classes) < 4096:
                classes[name] = cls
        if cls is None:
            continue
        if cls == "identifying-header":
            if looks_redacted(value, checker.redactor.is_placeholder):
                continue
        elif cls in ("sensitive-key", "cookie") and checker.dismissed("sensitive-key", value):
            continue
        previewed = cls in ("sensitive-key", "cookie", "identifying-header")
        kept.append((name, value, pointer, cls, mask(value) if previewed else None))
    pointers = [pointer for _, _, pointer, _, _ in kept]
    # a generic document's header sites are its own strings, reached through
    # containers: their values need no second walk down the document
    lines = recording.lines_for(pointers) if recording.interactions else \
        recording.lines_for(pointers, [value for _, value, _, _, _ in kept])
    masked = checker.masked_pointer
    issues = [Issue(display, line, cls, masked(pointer), name, preview)
              for (name, _, pointer, cls, preview), line in zip(kept, lines, strict=True)]
    if not checker.spec.tagging:  # a header class is never a near miss: `_issue` keeps them
        return issues
    return [checker._issue(issue, site[1]) for issue, site in zip(issues, kept, strict=True)]
