"""`check` and `audit` of a file over the whole-read bound, read in bounded pieces
(`recordings._pieces`, decision 0064) and never held whole; what is read and what is
left out: docs/cli/check.md, "Files of any size"."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import IO

from ..recordings._cassettes import LineMap, Recording
from ..recordings._classify import (
    RECORDING_SUFFIXES,
    Target,
    Unreadable,
    inner_suffix,
    looks_like_recording,
)
from ..recordings._limits import MAX_FILE_BYTES
from ..recordings._pieces import Piece, Refused, json_pieces, windows, yaml_pieces
from ..recordings._readers import STREAM_FILE_SUFFIXES, file_stream
from ._check import INLINE_PRAGMA, Checker
from ._check_sites import stream_issues
from ._issues import Issue

__all__ = ["check_large"]

_LINE = 64 * 1024


def check_large(checker: Checker, target: Target) -> tuple[list[Issue], Recording | None]:
    """`Checker.check_target` of a file over `MAX_FILE_BYTES`: its issues and a stand-in
    for its parsed form (the format read, no document; None for text)."""
    display, suffix = target.display, inner_suffix(target.path)
    try:
        handle = target.path.open("rb")
    except OSError as exc:
        raise Unreadable(display, f"cannot be read: {exc.strerror or exc}") from None
    with handle:
        head = handle.read(512)
        if head[:2] == b"\x1f\x8b":
            raise Unreadable(display, f"gzip data of over {MAX_FILE_BYTES // 2**20} MB; "
                                      "gunzip it to have it read in pieces")
        start = head.decode("utf-8", "replace").lstrip("\ufeff")
        if suffix in STREAM_FILE_SUFFIXES or start.startswith(("data:", "event:")):
            return _stream(checker, target, handle, suffix)
        named = suffix in RECORDING_SUFFIXES and suffix != ".toml"
        readers: list[tuple[str, Callable[[IO[bytes]], Iterator[Piece]]]] = []
        if named or looks_like_recording(start):
            if suffix in (".json", ".har") or start.lstrip()[:1] in ("{", "["):
                readers.append(("json", json_pieces))
            if suffix not in (".json", ".har"):
                readers.append(("yaml", yaml_pieces))
        problem = ""
        for fmt, pieces in readers:
            handle.seek(0)
            try:
                issues = _document(checker, target, pieces(handle), fmt)
            except Refused as exc:
                problem = str(exc)
                continue
            kept = _line_pass(checker, handle, display, issues, comments=fmt == "yaml")
            return kept, Recording(target.path, fmt, None, LineMap())
        found: list[Issue] = []
        if problem:
            checker.parse_problem = problem
            if not named:
                found.append(checker.unreadable_issue(
                    display, f"looks like a recording but does not parse: {problem}"))
        handle.seek(0)
        for text, line, _ in windows(handle):
            found.extend(_shifted(checker.without_pragmas(checker.scan_text(text, display),
                                                          text), line))
        return list(dict.fromkeys(found)), None  # the windows' overlaps found once


def _shifted(issues: list[Issue], line: int) -> list[Issue]:
    return [dataclasses.replace(issue, line=issue.line + line - 1) for issue in issues]


def _document(checker: Checker, target: Target, pieces: Iterator[Piece],
              fmt: str) -> list[Issue]:
    issues: list[Issue] = []
    for piece in pieces:
        recording = Recording(target.path, fmt, piece.document, piece)
        issues.extend(dataclasses.replace(issue, pointer=piece.real(issue.pointer))
                      for issue in checker.scan_cassette(recording, target.display))
    return issues


def _line_pass(checker: Checker, handle: IO[bytes], display: str, issues: list[Issue],
               *, comments: bool) -> list[Issue]:
    """`issues` less those on a line with an inline pragma, plus the findings in YAML
    comments (not part of the document, committed all the same): one pass over the
    lines, each read in parts of 64 KB at most."""
    wanted = {issue.line for issue in issues}
    if not wanted and not comments:
        return issues
    allowed: set[int] = set()
    handle.seek(0)
    number = 1
    for part in iter(lambda: handle.readline(_LINE), b""):
        text = part.decode("utf-8", "replace")
        if comments and text.lstrip().startswith("#"):
            issues.extend(checker.scan_text(text, display, number))
        if (number in wanted or comments) and INLINE_PRAGMA.search(text):
            allowed.add(number)
        number += part.endswith(b"\n")
    kept = [issue for issue in issues if issue.line not in allowed]
    checker.suppressed += len(issues) - len(kept)
    return kept


def _stream(checker: Checker, target: Target, handle: IO[bytes],
            suffix: str) -> tuple[list[Issue], Recording | None]:
    """A stream saved as a file, window by window: each window's events (a secret split
    across events is joined as in a whole file), numbered as in the whole file."""
    suffix = suffix if suffix in STREAM_FILE_SUFFIXES else ".sse"
    handle.seek(0)
    found: list[Issue] = []
    kind, first, before = "", 0, 0  # events of the windows before, and of the last one
    for text, line, overlap in windows(handle):
        stream = file_stream(text, suffix)
        at = 0
        for _ in range(overlap):  # the overlap's events were counted with the last window
            at = text.find("\n", at) + 1
        events = stream.events if stream is not None else []
        first += before - sum(1 for event in events if event.start < at)
        before = len(events)
        if stream is None:
            issues = checker.scan_text(text, target.display)
        else:
            kind = kind or stream.kind
            holder = Recording(target.path, stream.kind, None, LineMap(), text=text)
            issues = stream_issues(checker, holder, target.display, stream, first_event=first)
        found.extend(_shifted(checker.without_pragmas(issues, text), line))
    return list(dict.fromkeys(found)), Recording(target.path, kind or "text", None, LineMap())
