"""`redact scrub`: redact existing fixtures and cassettes in place (docs/cli/scrub.md).

Our fixtures are redacted, re-keyed and renamed; a third-party recording with a finding
is edited in place (`_inplace`): only the secrets change (decision 0044).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import contextlib
import functools
import gzip
import hashlib
import itertools
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import FixtureFormatError
from ..fixtures._format import (
    Fixture,
    dump_document,
    is_canonical_fixture,
    parse_cassette,
    parse_fixture,
)
from ..fixtures._store import FixtureDir, atomic_write, parse_file_name
from ..keys._keys import key_from_material
from ..recordings._cassettes import Recording, load_yaml_raw
from ..recordings._classify import inner_suffix
from ..recordings._limits import OverCap, bounded_decompress, bounded_gunzip
from ..recordings._readers import TEXT_DIALECTS, file_stream, header_sites, write_stream
from ..scan._vocabulary import COOKIE_HEADERS
from ._check import MISSING, Checker, Target, at_pointer, begin, streams_of
from ._inplace import (
    NotInPlace,
    applied,
    changes_between,
    edit_in_place,
    gaps,
    json_container,
)
from ._issues import InputProblem, Issue, Report, counted
from ._parallel import Outcome, read_into

_REDACTED_NOTE = "rewritten with the findings redacted"
# `Set-Cookie` attributes: what the cookie is for, never a secret
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure",
                                "httponly", "partitioned", "priority", "version", "comment"})

__all__ = ["Change", "Refused", "plan_paths", "scrub_one", "write_change"]


@dataclass
class Change:
    """What scrubbing one file does: the findings it removes, the new bytes, a rename;
    `stamp` is the file as it was read (size, mtime, SHA-256), checked before replacing it."""

    target: Target
    issues: list[Issue]
    data: bytes
    new_path: Path
    notes: list[str] = field(default_factory=list)
    conflict: str | None = None
    stamp: tuple[int, int, str] | None = None

    @property
    def renames(self) -> bool:
        return self.new_path != self.target.path


class Refused(OSError):
    """A write scrub will not make: the file changed since it was read, or a link leads
    out of the tree named. Nothing was written."""


def _redact_fixture_document(checker: Checker, fixture: Fixture) -> Fixture:
    redactor = checker.redactor
    document = fixture.document()
    material = redactor.redact(document["request"])
    out: dict[str, Any] = {"version": fixture.version, "kind": fixture.kind,
                           "request": material, "key": key_from_material(material)}
    if "answer" in document:
        out["answer"] = redactor.redact(document["answer"])
    elif "chunks" in document:
        out["chunks"] = redactor.redact_stream(document["chunks"])
    else:
        out["error"] = redactor.redact(document["error"])
    return Fixture.model_validate(out)


def _plan_fixture(target: Target, raw: bytes, checker: Checker,
                  issues: list[Issue]) -> Change | None:
    fixture = parse_fixture(target.display, raw)
    scrubbed = _redact_fixture_document(checker, fixture)
    data = scrubbed.dumps()
    new_path = target.path
    notes: list[str] = []
    named = parse_file_name(target.path.name)  # a later answer keeps its number
    if named is not None or fixture.key != scrubbed.key:
        new_path = FixtureDir(target.path.parent).path_for(
            scrubbed.kind, scrubbed.key, named[2] if named is not None else 1)
    if scrubbed.key != fixture.key:
        notes.append(f"re-keyed {fixture.key[:12]}… -> {scrubbed.key[:12]}…")
    if new_path != target.path:
        notes.append(f"renamed to {new_path.name}")
    if (data == raw or is_canonical_fixture(raw, scrubbed.document())) \
            and new_path == target.path:
        return None
    if data != raw and not issues and not notes:
        notes.append("rewritten in canonical formatting")
    change = Change(target, issues, data, new_path, notes)
    if change.renames and new_path.exists():
        try:
            same = new_path.read_bytes() == data
        except OSError:
            same = False
        if not same:
            change.conflict = (f"{new_path.name} already exists with other content; "
                               "compare the two and delete one")
        else:
            change.notes.append("identical to an existing file: the old name is removed")
    return change


def _plan_store(target: Target, raw: bytes, checker: Checker,
                issues: list[Issue]) -> Change | None:
    cassette = parse_cassette(target.display, raw)
    entries = []
    for entry in cassette.entries:
        scrubbed = _redact_fixture_document(checker, entry.to_fixture())
        entries.append(scrubbed.entry_document())
    entries.sort(key=lambda e: (e["key"], e["kind"]))
    data = dump_document({"version": cassette.version, "entries": entries})
    if data == raw:
        return None
    return Change(target, issues, data, target.path, ["entries redacted and re-keyed"])


# rules whose whole value is replaced where it was found (the redactor finds the others
# by value): header and field values judged by their name
_BY_NAME = frozenset({"sensitive-key", "cookie", "identifying-header"})


def _encode_like(raw: Any, new: str | bytes) -> Any:
    """`new` encoded the way the body `raw` was: bytes stay bytes, gzip'd bytes are gzip'd
    again, base64 text (of maybe-gzip'd bytes) is base64 again, nock's hex chunks are as
    many hex chunks again, plain text stays text."""
    data = new.encode("utf-8") if isinstance(new, str) else new
    if isinstance(raw, list):  # nock's hex chunks, gzip'd or not
        inner = bytes.fromhex("".join(raw))
        text = (gzip.compress(data, mtime=0) if inner[:2] == b"\x1f\x8b" else data).hex()
        cuts = list(itertools.accumulate([0, *map(len, raw[:-1])]))
        return [text[a:b] for a, b in itertools.pairwise([*cuts, None])]
    if isinstance(raw, bytes):
        return gzip.compress(data, mtime=0) if raw[:2] == b"\x1f\x8b" else data
    inner = _base64(raw) or b"" if isinstance(raw, str) else b""
    if inner or isinstance(new, bytes):
        packed = gzip.compress(data, mtime=0) if inner[:2] == b"\x1f\x8b" else data
        return base64.b64encode(packed).decode("ascii")
    return new


def _base64(text: str) -> bytes | None:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def _hold_bodies(document: Any, recording: Recording, policy: _Policy) -> dict[str, Any]:
    """The bodies the general pass cannot redact as they are, redacted here and encoded
    the way they were (the unchanged ones as they are): streamed bodies event by event,
    their framing kept; bodies held as bytes, as base64 text (HAR `encoding: base64`,
    `base64_string`) or as nock's hex chunks, gzip'd or not."""
    redactor = policy.checker.redactor
    out: dict[str, Any] = {}
    for stream in streams_of(recording):
        raw = at_pointer(document, stream.pointer)
        if raw is not MISSING:
            body = write_stream(stream, redactor.redact_stream([e.value for e in stream.events]),
                                framing=redactor.redact_text)
            out[stream.pointer] = raw if body is stream.body else \
                body if isinstance(stream.body, str) and raw == stream.body else \
                _encode_like(raw, body)
    for call in recording.interactions:
        for message in (call.request, call.response):
            pointer = message.body_pointer if message is not None else None
            if message is None or pointer is None or pointer in out:
                continue
            raw = at_pointer(document, pointer)
            data: bytes | None = None
            if recording.format == "nock" and isinstance(raw, list) and raw and \
                    all(isinstance(chunk, str) for chunk in raw):
                with contextlib.suppress(ValueError):
                    data = bytes.fromhex("".join(raw))
            elif isinstance(raw, str) and raw != message.body:
                data = _base64(raw)
            elif isinstance(raw, bytes):  # a YAML `!!binary` body, maybe gzip'd
                data = raw
            text = _unzipped_text(data) if data is not None else None
            if text is not None:
                new = policy.value(text, redactor.redact_text(text))
                out[pointer] = raw if new == text else _encode_like(raw, new)
    return out


def _unzipped_text(data: bytes) -> str | None:
    """`data` as UTF-8 text, gunzipped first (within the shared cap) if it is gzip."""
    try:
        return (bounded_gunzip(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")
    except (OverCap, UnicodeDecodeError):
        return None


class _Policy:
    """What scrub writes for each value the redactor changed: the spans it took out and
    nothing else. A placeholder already there stays; a cookie keeps its attributes; a
    JSON text keeps its layout (only its strings that changed are written again)."""

    def __init__(self, checker: Checker, cookies: Mapping[str, str], by_name: list[str]
                 ) -> None:
        self.checker = checker
        self.by_name = by_name  # headers judged by their name, which the redactor may not know
        ours = re.escape(checker.redactor.placeholder).replace(
            re.escape("{label}"), r"[A-Za-z0-9_.:\-]*")
        self.marks = re.compile(rf"(?:{ours}|\[REDACTED(?::[A-Za-z0-9_.:\-]*)?\])+")
        self.cookies = cookies  # pointer -> the name of the cookie header there

    def redacted(self, plain: Any) -> Any:
        """The redactor's output, the values judged by their name replaced whole."""
        out = self.checker.redactor.redact(plain)
        for pointer in self.by_name:
            if isinstance(at_pointer(out, pointer), (str, bytes)):
                at_pointer(out, pointer, self.checker.config.placeholder)
        return out

    def changes(self, before: Any, after: Any, *, outer: bool = True
                ) -> dict[tuple[str, bool], tuple[Any, Any]]:
        """(old, new) of every scalar that differs between `before` and `after` (the
        redactor's output), the new value as scrub writes it."""
        out = {}
        for target, (old, new) in changes_between(before, after).items():
            name = self.cookies.get(target[0]) if outer and not target[1] else None
            value = self.value(old, new) if name is None or not isinstance(old, str) \
                else self.cookie(name, old)
            if value != old:
                out[target] = (old, value)
        return out

    def value(self, old: Any, new: Any) -> Any:
        """`old` with what the redactor took out of it (`new`) taken out, and nothing else."""
        if isinstance(old, bytes) and isinstance(new, bytes):
            try:
                return self.value(old.decode("utf-8"), new.decode("utf-8")).encode("utf-8")
            except UnicodeDecodeError:
                return new
        if not isinstance(old, str) or not isinstance(new, str):
            return new
        found = gaps(old, new, self.marks)
        if found is not None:
            dismissed = self.checker.dismissed
            return applied(old, [gap for gap in found if not dismissed("", old[gap[0]:gap[1]])])
        inner, redacted = json_container(old), json_container(new)
        if inner is None or redacted is None:
            return new
        with contextlib.suppress(NotInPlace, RecursionError):  # (a deeply nested body)
            return edit_in_place(old, True, inner, self.changes(inner, redacted, outer=False),
                                 json.loads, self.marks)
        return new

    def cookie(self, name: str, value: str) -> str:
        """A cookie header with each cookie's value replaced, a `Set-Cookie`'s attributes
        (path, domain, expires, ...) kept; the placeholder alone when what is left still
        reads as a credential (a header that folds several cookies, say)."""
        placeholder = self.checker.config.placeholder
        dismissed = self.checker.dismissed
        parts = value.split(";")
        for index, part in enumerate(parts):
            key, equals, rest = part.partition("=")
            attribute = index and name.lower() != "cookie" \
                and key.strip().lower() in _COOKIE_ATTRIBUTES
            if equals and not attribute and not dismissed("", rest.strip()):
                parts[index] = key + equals + placeholder
        out = ";".join(parts)
        return out if dismissed("sensitive-key", out) else placeholder


def _scrub_document(target: Target, text: str, policy: _Policy, recording: Recording) -> str:
    """A JSON or YAML recording's text with its findings redacted in place."""
    is_json = inner_suffix(target.path) in (".json", ".har") or text.lstrip()[:1] in "{["
    load: Callable[[str], Any] = json.loads
    try:
        before = json.loads(text) if is_json else None
    except ValueError:  # flow-style YAML
        is_json = False
    if not is_json:
        load = functools.partial(load_yaml_raw, target.display)
        before = load(text)
    held = _hold_bodies(before, recording, policy)
    taken = {pointer: at_pointer(before, pointer, None) for pointer in held}
    redacted = policy.redacted(before)
    for pointer, value in taken.items():
        at_pointer(before, pointer, value)
        at_pointer(redacted, pointer, held[pointer])
    return edit_in_place(text, is_json, before, policy.changes(before, redacted), load,
                         policy.marks)


def _scrub_toml(text: str, policy: _Policy) -> str:
    """A TOML recording edited with tomlkit: its layout, comments and order stay; only the
    strings that change are written."""
    import tomlkit

    document = tomlkit.parse(text)
    plain = json.loads(json.dumps(document.unwrap(), default=str))  # dates as text
    for (pointer, is_name), (_, value) in policy.changes(plain, policy.redacted(plain)).items():
        if is_name:
            raise NotInPlace(pointer)
        at_pointer(document, pointer, value)
    return tomlkit.dumps(document)


def _encoded(text: str, raw: bytes) -> bytes:
    """`text` written the way the file `raw` was: gzip'd if it was, with its byte-order
    mark, in UTF-8 (or Latin-1, for a file that was not UTF-8)."""
    inner = bounded_decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    try:
        inner.decode("utf-8")
        data = (codecs.BOM_UTF8 if inner.startswith(codecs.BOM_UTF8) else b"") \
            + text.encode("utf-8")
    except UnicodeDecodeError:  # read as latin-1: written the same way
        data = text.encode("latin-1", errors="replace")
    return gzip.compress(data, mtime=0) if raw[:2] == b"\x1f\x8b" else data


def _plan_third_party(target: Target, raw: bytes, checker: Checker, issues: list[Issue],
                      recording: Recording) -> Change:
    if recording.format in TEXT_DIALECTS:
        raise FixtureFormatError(target.display, f"the {recording.format} dialect is read "
                                 "but not rewritten by scrub: replace the secret by hand or "
                                 "record the calls again")
    sites = list(header_sites(recording))
    cookies = {pointer: name for name, _, pointer in sites if name.lower() in COOKIE_HEADERS}
    shown = {checker.masked_pointer(pointer): pointer for _, _, pointer in sites}
    by_name = [shown.get(issue.pointer, issue.pointer) for issue in issues
               if issue.rule in _BY_NAME and issue.pointer]
    policy = _Policy(checker, cookies, by_name)
    text = recording.text
    try:
        new = _scrub_toml(text, policy) if inner_suffix(target.path) == ".toml" \
            else _scrub_document(target, text, policy, recording)
    except NotInPlace as exc:
        return Change(target, issues, b"", target.path, conflict=(
            f"cannot be rewritten in place at {checker.masked_pointer(exc.pointer)}: "
            "edit the file by hand"))
    if new == text:
        return Change(target, issues, b"", target.path,
                      conflict="the redactor finds nothing to take out: edit the file by hand")
    return Change(target, issues, _encoded(new, raw), target.path, [_REDACTED_NOTE])


def _plan_stream_file(target: Target, raw: bytes, text: str, checker: Checker,
                      issues: list[Issue]) -> Change:
    """A stream saved as a file of its own, redacted event by event and its framing lines
    as text; every other byte stays (docs/cli/scrub.md, "Stream files")."""
    stream = file_stream(text, inner_suffix(target.path))
    assert stream is not None  # the checker read it as a stream
    redactor = checker.redactor
    body = write_stream(stream, redactor.redact_stream([e.value for e in stream.events]),
                        framing=redactor.redact_text)
    if body is stream.body or body == text or not isinstance(body, str):
        return Change(target, issues, b"", target.path,
                      conflict="the redactor finds nothing to take out of the events: "
                               "edit the file by hand")
    return Change(target, issues, _encoded(body, raw), target.path, [_REDACTED_NOTE])


def _plan(target: Target, checker: Checker) -> tuple[Change | None, str, list[Issue]]:
    """(the change, the format read, the `unreadable-file` findings of parts not read); the
    change holds the file's stamp as it was read."""
    before = os.stat(target.path)
    issues, cassette = checker.check_target(target)
    raw = target.path.read_bytes()
    found = [i for i in issues if i.level != "note" and i.rule != "unreadable-file"
             and not checker.allowlisted(i)]
    fmt = "text" if cassette is None else cassette.format
    if fmt == "fixture":
        change = _plan_fixture(target, raw, checker, found)
    elif fmt == "store":
        change = _plan_store(target, raw, checker, found)
    elif not found:  # any other file is rewritten only for its findings
        change = None
    elif cassette is None:
        change = Change(target, found, b"", target.path,
                        conflict="not JSON or YAML: edit the file by hand")
    elif fmt in ("sse", "ndjson"):  # a stream saved as a file of its own
        change = _plan_stream_file(target, raw, cassette.text, checker, found)
    else:
        change = _plan_third_party(target, raw, checker, found, cassette)
    if change is not None:
        change.stamp = _stamp(target.path, raw)
        if change.stamp[:2] != (before.st_size, before.st_mtime_ns):
            raise Refused(0, "changed while scrub read it; run scrub again")
    return change, fmt, [i for i in issues if i.rule == "unreadable-file"]


def _stamp(path: Path, data: bytes) -> tuple[int, int, str]:
    """A file as read: size and mtime now, and the SHA-256 of the bytes read."""
    now = os.stat(path)
    return now.st_size, now.st_mtime_ns, hashlib.sha256(data).hexdigest()


def write_change(change: Change, checker: Checker, root: Path | None = None) -> list[Issue]:
    """Apply a change atomically, keeping the file's mode; returns the findings still
    present afterwards. The file is written where it really is, and `Refused` (nothing
    written) when that is outside `root` (a link out of the tree named) or the file
    changed since it was read."""
    source = Path(os.path.realpath(change.target.path))
    root = Path(os.path.realpath(root)) if root is not None else None
    if root is not None and not source.is_relative_to(root):
        raise Refused(0, f"cannot write: {change.target.path} is a link to a file outside "
                         f"{root}; scrub that file where it is")
    # (a link is written where it leads, and stays a link; a re-keyed fixture is renamed)
    new_path = source if change.new_path == change.target.path else \
        source.parent / change.new_path.name
    mode = stat.S_IMODE(os.stat(source).st_mode)

    def unchanged() -> None:
        if change.stamp is not None and _stamp(source, source.read_bytes()) != change.stamp:
            raise Refused(0, "cannot write: the file changed since scrub read it; nothing "
                             "was written, run scrub again")

    atomic_write(new_path, change.data, mode=mode, before_replace=unchanged)
    if change.renames:
        try:
            os.unlink(source)
        except OSError:
            # keep the old state whole: never both the old and the renamed file
            with contextlib.suppress(OSError):
                os.unlink(new_path)
            raise
    after = Target(new_path, change.target.display if not change.renames else
                   change.target.display.rsplit("/", 1)[0] + "/" + new_path.name
                   if "/" in change.target.display else new_path.name)
    remaining, _ = checker.check_target(after)
    return [i for i in remaining if i.level == "error" and not checker.allowlisted(i)]


def _one_line(display: str, verb: str, change: Change, remaining: Sequence[Issue]) -> str:
    """`path: scrubbed (2 findings redacted; re-keyed …)`: one line per file changed."""
    parts = [f"{counted(len(change.issues), 'finding')} redacted"] if change.issues else []
    parts += [note for note in change.notes if note != _REDACTED_NOTE]
    if remaining:
        parts.append(f"{counted(len(remaining), 'finding')} remain")
    return f"{display}: {verb}" + (f" ({'; '.join(parts)})" if parts else "")


def scrub_one(checker: Checker, target: Target) -> Outcome:
    """The plan for one file (in this process or a worker): its change (`extra`), the
    format it was read as and the `unreadable-file` findings of parts not read."""
    try:
        change, fmt, unreadable = _plan(target, checker)
    except OSError as exc:  # changed or removed while being read
        return Outcome(target.display, problem=f"cannot be read: {exc.strerror or exc}")
    return Outcome(target.display, fmt, unreadable, extra=change)


def plan_paths(
    paths: Sequence[str],
    checker: Checker,
    *,
    write: bool,
    echo: Callable[[str], None],
    progress: Callable[[Sequence[Target]], Iterable[Target]] | None = None,
    jobs: int = 1,
) -> Report:
    """Scrub (or, without `write`, plan scrubbing) every file under `paths`: the plans are
    made in `jobs` worker processes, the files written by this one, in the walk's order."""
    report, targets = begin(paths, "scrub" if write else "scrub (dry run)",
                            strict=checker.strict)
    factory = functools.partial(checker.spec.work, scrub_one)
    written: dict[str, str] = {}  # real path -> the name it was scrubbed under
    for outcome in read_into(report, targets, functools.partial(scrub_one, checker), factory,
                             jobs=jobs, progress=progress):
        report.issues.extend(outcome.issues)
        change: Change | None = outcome.extra
        if change is None:
            continue
        display = outcome.display
        if change.conflict is not None or not write:
            # the findings a dry run would redact, or that stay because nothing is written
            for issue in change.issues:
                echo(issue.headline())
        if change.conflict is not None:
            echo(f"{display}: not scrubbed: {change.conflict}")
            report.issues.extend(change.issues or [Issue(display, 1, "key-mismatch",
                                                         detail=change.conflict)])
            continue
        if not write:
            echo(_one_line(display, "would scrub", change, []))
            report.issues.extend(change.issues or [Issue(display, 1, "not-canonical",
                                                         detail="; ".join(change.notes))])
            continue
        real = os.path.realpath(change.target.path)
        if real in written:  # a link to a file scrubbed already
            echo(f"{display}: scrubbed as {written[real]}")
            continue
        try:
            remaining = write_change(change, checker, change.target.root)
        except Refused as exc:
            report.problems.append(InputProblem(display, str(exc.strerror)))
            continue
        except OSError as exc:
            report.problems.append(InputProblem(
                display,
                f"cannot write: {exc.strerror or exc}; the file was left unchanged, make "
                "its directory writable and run again"))
            continue
        written[real] = display
        report.issues.extend(remaining)
        echo(_one_line(display, "scrubbed", change, remaining))
    return report
