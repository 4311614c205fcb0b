"""`redact scrub`: redact existing fixtures and cassettes in place.

A dry run by default: it lists what would change (masked, with lines) and exits 1
when anything would. `--write` applies the changes atomically (temporary file,
then rename). Our fixtures are redacted, re-keyed from their redacted key
material and renamed when their key changes; a rename onto an existing different
file is refused (named), never forced. Third-party cassettes are rewritten only
when they hold a finding: JSON with 2-space indentation, YAML through PyYAML's
safe dumper (binary bodies stay `!!binary`, gzip bodies are recompressed), TOML
edited in place (tomlkit). Every body is written back the way it was stored: base64,
nock's hex chunks, gzip; a streamed body (or a stream saved as a file of its own, `.sse`,
`.ndjson`) event by event, its framing kept byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import contextlib
import functools
import gzip
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .._errors import FixtureFormatError
from ..fixtures._format import (
    Fixture,
    dump_document,
    is_canonical_fixture,
    parse_cassette,
    parse_fixture,
)
from ..fixtures._store import FixtureDir, atomic_write, parse_file_name
from ..keys._canonical import pointer_join
from ..keys._keys import key_from_material
from ..recordings._cassettes import Recording, load_yaml_raw
from ..recordings._classify import inner_suffix
from ..recordings._limits import OverCap, bounded_decompress, bounded_gunzip
from ..recordings._readers import (
    STREAM_HINTS,
    TEXT_DIALECTS,
    BodyStream,
    body_streams,
    file_stream,
    write_stream,
)
from ._check import Checker, CheckerSpec, Target, Unreadable, begin
from ._issues import InputProblem, Issue, Report, counted
from ._parallel import Outcome, run_files

_REDACTED_NOTE = "rewritten with the findings redacted"
# the formats of a stream saved as a file of its own
STREAM_FILE_KINDS = frozenset({"sse", "ndjson"})

__all__ = ["Change", "plan_paths", "plan_target", "scrub_one", "write_change"]


@dataclass
class Change:
    """What scrubbing one file does: the findings it removes, the new bytes, a rename."""

    target: Target
    issues: list[Issue]
    data: bytes
    new_path: Path
    notes: list[str] = field(default_factory=list)
    conflict: str | None = None

    @property
    def renames(self) -> bool:
        return self.new_path != self.target.path


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


def _gzip_pointers(value: Any, pointer: str, found: dict[str, bytes]) -> Any:
    """Replace gzip bodies by their decompressed bytes, remembering where they were."""
    if isinstance(value, bytes):
        if value[:2] == b"\x1f\x8b":
            try:
                plain = bounded_gunzip(value)  # the shared cap: a bomb stays compressed
            except OverCap:
                return bytes(value)
            found[pointer] = value
            return plain
        return bytes(value)
    if isinstance(value, dict):
        return {k: _gzip_pointers(v, pointer_join(pointer, k), found) for k, v in value.items()}
    if isinstance(value, list):
        return [_gzip_pointers(v, pointer_join(pointer, i), found) for i, v in enumerate(value)]
    return value


def _set(document: Any, pointer: str, compress: Callable[[Any], Any]) -> None:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    node = document
    for token in tokens[:-1]:
        node = node[int(token)] if isinstance(node, list) else node.get(token)
        if node is None:
            return
    last = tokens[-1] if tokens else None
    if last is None:
        return
    if isinstance(node, list):
        node[int(last)] = compress(node[int(last)])
    elif isinstance(node, dict) and last in node:
        node[last] = compress(node[last])


def _gz(value: Any) -> Any:
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, bytes):
        return gzip.compress(value, mtime=0)
    return value


# rules whose whole value is replaced where it was found (the redactor finds the others
# by value): header and field values judged by their name
_BY_NAME = frozenset({"sensitive-key", "cookie", "identifying-header"})


def _put(document: Any, pointer: str, value: str) -> None:
    """Set the string at `pointer` of a raw document to `value` (when it resolves to one)."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    if not tokens:
        return
    node = document
    for token in tokens[:-1]:
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            return
    last = tokens[-1]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        if isinstance(node[int(last)], (str, bytes)):
            node[int(last)] = value
    elif isinstance(node, dict) and isinstance(node.get(last), (str, bytes)):
        node[last] = value


_MISSING = object()


def _at(document: Any, pointer: str, value: Any = _MISSING) -> Any:
    """The value at `pointer` of a raw document (`_MISSING` if none); with `value`, put it
    there and return what was there."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    if not tokens:
        return _MISSING
    node = document
    for token in tokens:
        parent = node
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            key: Any = int(token)
        elif isinstance(node, dict) and token in node:
            key = token
        else:
            return _MISSING
        node = node[key]
    if value is not _MISSING:
        parent[key] = value
    return node


def _encode_like(raw: Any, plain: str | None, new: str | bytes) -> Any:
    """`new` encoded the way the body `raw` was (its decoded text being `plain`): bytes stay
    bytes, gzip'd bytes are gzip'd again, base64 text (of maybe-gzip'd bytes) is base64
    again, plain text stays text."""
    data = new.encode("utf-8") if isinstance(new, str) else new
    if isinstance(raw, list) and _hex_chunks(raw):  # nock's hex chunks, gzip'd or not
        inner = bytes.fromhex("".join(raw))
        return [(gzip.compress(data, mtime=0) if inner[:2] == b"\x1f\x8b" else data).hex()]
    if isinstance(raw, (bytes, bytearray)):
        return gzip.compress(data, mtime=0) if raw[:2] == b"\x1f\x8b" else data
    if isinstance(raw, str) and (raw != plain or isinstance(new, bytes)):
        try:
            inner = base64.b64decode("".join(raw.split()), validate=True)
        except (binascii.Error, ValueError):
            inner = b""
        if inner[:2] == b"\x1f\x8b":
            data = gzip.compress(data, mtime=0)
        if inner or isinstance(new, bytes):
            return base64.b64encode(data).decode("ascii")
    return new


def _streams(recording: Recording | None) -> list[BodyStream]:
    if recording is None or not recording.interactions:
        return []
    text = recording.text
    if "data:" not in text and not any(hint in text for hint in STREAM_HINTS):
        return []
    return list(body_streams(recording))


def _hold_bodies(document: Any, recording: Recording | None, streams: list[BodyStream],
                 checker: Checker) -> dict[str, Any]:
    """Take out of a raw document the bodies the general pass cannot rewrite as they are,
    redacted here, each written back the way it was (`_put_bodies`, after that pass):

    - streamed bodies, event by event (the general pass would rewrite their frames as
      text), keeping the stream's framing;
    - bodies held as base64 text (HAR `encoding: base64`, `base64_string`), gzip'd or not:
      decoded, redacted and encoded again the same way.
    """
    out: dict[str, Any] = {}
    for stream in streams:
        raw = _at(document, stream.pointer)
        if raw is _MISSING:
            continue
        values = checker.redactor.redact_stream([event.value for event in stream.events])
        body = write_stream(stream, values, framing=checker.redactor.redact_text)
        plain = stream.body if isinstance(stream.body, str) else None
        out[stream.pointer] = raw if body is stream.body else _encode_like(raw, plain, body)
    for call in recording.interactions if recording is not None else []:
        for message in (call.request, call.response):
            pointer = message.body_pointer if message is not None else None
            if message is None or pointer is None or pointer in out:
                continue
            raw = _at(document, pointer)
            if recording is not None and recording.format == "nock" and _hex_chunks(raw):
                text = _hex_text(raw)
            elif isinstance(raw, str) and raw != message.body:
                text = _base64_text(raw)
            else:
                continue
            if text is None:
                continue
            new = checker.redactor.redact_text(text)
            out[pointer] = raw if new == text else _encode_like(raw, None, new)
    for pointer in out:
        _at(document, pointer, None)
    return out


def _hex_chunks(raw: Any) -> bool:
    """Whether a body is nock's list of hex-encoded chunks."""
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        return False
    try:
        bytes.fromhex("".join(raw))
    except ValueError:
        return False
    return True


def _hex_text(raw: list[str]) -> str | None:
    """The text nock's hex chunks hold (gunzipped within the shared cap), or None."""
    return _unzipped_text(bytes.fromhex("".join(raw)))


def _base64_text(raw: str) -> str | None:
    """The text a base64 body holds (gunzipped within the shared cap), or None."""
    try:
        data = base64.b64decode("".join(raw.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _unzipped_text(data)


def _unzipped_text(data: bytes) -> str | None:
    """`data` as UTF-8 text, gunzipped first (within the shared cap) if it is gzip."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = bounded_gunzip(data)
        except OverCap:
            return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _put_bodies(document: Any, held: dict[str, Any]) -> None:
    for pointer, value in held.items():
        _at(document, pointer, value)


def _scrub_toml(text: str, checker: Checker, by_name: list[str]) -> bytes:
    """A TOML recording with its findings redacted, edited in place with tomlkit: the
    file's layout, comments and order stay; only the strings that change are written."""
    import tomlkit

    document = tomlkit.parse(text)
    plain = json.loads(json.dumps(document.unwrap(), default=str))  # dates as text
    redacted = checker.redactor.redact(plain)
    for pointer in by_name:
        _put(redacted, pointer, checker.config.placeholder)
    _merge_strings(document, plain, redacted)
    return tomlkit.dumps(document).encode("utf-8")


def _merge_strings(node: Any, before: Any, after: Any) -> None:
    """Write into the tomlkit `node` every string of `after` that differs from `before`."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys: list[Any] = list(before)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        keys = list(range(len(before)))
    else:
        return
    for key in keys:
        old, new = before[key], after[key] if not isinstance(after, dict) else after.get(key)
        if isinstance(old, str):
            if isinstance(new, str) and new != old:
                node[key] = new
        else:
            _merge_strings(node[key], old, new)


def _plan_third_party(target: Target, text: str, checker: Checker,
                      issues: list[Issue], *,
                      recording: Recording | None = None) -> Change | None:
    if not issues:
        return None
    if recording is not None and recording.format in TEXT_DIALECTS:
        raise FixtureFormatError(target.display, f"the {recording.format} dialect is read "
                                 "but not rewritten by scrub: replace the secret by hand or "
                                 "record the calls again")
    streams = _streams(recording)
    redactor = checker.redactor
    placeholder = checker.config.placeholder
    suffix = inner_suffix(target.path)
    by_name = [issue.pointer for issue in issues if issue.rule in _BY_NAME and issue.pointer]
    if suffix == ".toml":
        data = _scrub_toml(text, checker, by_name)
    elif suffix in (".json", ".har") or text.lstrip()[:1] in ("{", "["):
        document = json.loads(text)
        for pointer in by_name:  # before any reshaping: the pointers are the file's
            _put(document, pointer, placeholder)
        held = _hold_bodies(document, recording, streams, checker)
        redacted = redactor.redact(document)
        _put_bodies(redacted, held)
        data = (json.dumps(redacted, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    else:
        raw = load_yaml_raw(target.display, text)
        gzipped: dict[str, bytes] = {}
        plain = _gzip_pointers(raw, "", gzipped)
        held = _hold_bodies(plain, recording, streams, checker)
        redacted = redactor.redact(plain)
        _put_bodies(redacted, held)
        for pointer in by_name:
            _put(redacted, pointer, placeholder)
        for pointer in gzipped:
            _set(redacted, pointer, _gz)
        dumped = yaml.safe_dump(redacted, sort_keys=False, allow_unicode=True,
                                default_flow_style=False, width=1000,
                                explicit_start=text.startswith("---"))
        data = dumped.encode("utf-8")
    if target.path.read_bytes()[:2] == b"\x1f\x8b":
        data = gzip.compress(data, mtime=0)  # a gzip'd recording stays gzip'd
    return Change(target, issues, data, target.path, [_REDACTED_NOTE])


def _plan_stream_file(target: Target, text: str, checker: Checker,
                      issues: list[Issue]) -> Change | None:
    """A stream saved as a file of its own (`.sse`, `.ndjson`, `.jsonl`): redacted event by
    event (a key split across events included) and its framing lines as text; every byte
    but the redacted values stays (SSE `event:`/`data:`/`id:` lines, blank lines, one
    JSON per NDJSON line with its own spacing), and so do the file's encoding and gzip."""
    if not issues:
        return None
    stream = file_stream(text, inner_suffix(target.path))
    if stream is None:  # pragma: no cover - the checker read it as a stream
        return None
    redactor = checker.redactor
    body = write_stream(stream, redactor.redact_stream([e.value for e in stream.events]),
                        framing=redactor.redact_text)
    if body is stream.body or body == text or not isinstance(body, str):
        return Change(target, issues, b"", target.path,
                      conflict="the redactor finds nothing to take out of the events: "
                               "edit the file by hand")
    raw = target.path.read_bytes()
    inner = bounded_decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    try:
        inner.decode("utf-8")
        bom = codecs.BOM_UTF8 if inner.startswith(codecs.BOM_UTF8) else b""
        data = bom + body.encode("utf-8")
    except UnicodeDecodeError:  # read as latin-1: written the same way
        data = body.encode("latin-1", errors="replace")
    if raw[:2] == b"\x1f\x8b":
        data = gzip.compress(data, mtime=0)  # a gzip'd stream stays gzip'd
    return Change(target, issues, data, target.path, [_REDACTED_NOTE])


def plan_target(target: Target, checker: Checker) -> Change | None:
    """The change scrubbing `target` would make, or None; `FixtureFormatError` if it cannot
    be opened, `Unreadable` if it is over a cap or corrupt."""
    return _plan(target, checker)[0]


def _plan(target: Target, checker: Checker) -> tuple[Change | None, str, list[Issue]]:
    """(the change, the format read, the `unreadable-file` findings of parts not read)."""
    change, fmt, issues = _plan_parts(target, checker)
    return change, fmt, [i for i in issues if i.rule == "unreadable-file"]


def _plan_parts(target: Target, checker: Checker) -> tuple[Change | None, str, list[Issue]]:
    issues, cassette = checker.check_target(target)
    secret_issues = [i for i in issues if i.level != "note" and i.rule != "unreadable-file"
                     and not checker.allowlisted(i)]
    if cassette is None:
        if secret_issues:
            return Change(target, secret_issues, b"", target.path,
                          conflict="not JSON or YAML: edit the file by hand"), "text", issues
        return None, "text", issues
    if cassette.format in STREAM_FILE_KINDS:
        return (_plan_stream_file(target, cassette.text, checker, secret_issues),
                cassette.format, issues)
    raw = target.path.read_bytes()
    if cassette.format == "fixture":
        return _plan_fixture(target, raw, checker, secret_issues), cassette.format, issues
    if cassette.format == "store":
        return _plan_store(target, raw, checker, secret_issues), cassette.format, issues
    return (_plan_third_party(target, cassette.text, checker, secret_issues,
                              recording=cassette),
            cassette.format, issues)


def write_change(change: Change, checker: Checker) -> list[Issue]:
    """Apply a change atomically; returns the findings still present afterwards."""
    atomic_write(change.new_path, change.data)
    if change.renames:
        try:
            os.unlink(change.target.path)
        except OSError:
            # keep the old state whole: never both the old and the renamed file
            with contextlib.suppress(OSError):
                os.unlink(change.new_path)
            raise
    after = Target(change.new_path, change.target.display if not change.renames else
                   change.target.display.rsplit("/", 1)[0] + "/" + change.new_path.name
                   if "/" in change.target.display else change.new_path.name)
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
    except Unreadable as exc:
        return Outcome(target.display, unreadable=exc.problem)
    except FixtureFormatError as exc:
        return Outcome(target.display, problem=exc.problem)
    except OSError as exc:  # changed or removed while being read
        return Outcome(target.display, problem=f"cannot be read: {exc.strerror or exc}")
    return Outcome(target.display, fmt, unreadable, extra=change)


def _scrub_work(spec: CheckerSpec) -> Callable[[Target], Outcome]:
    return functools.partial(scrub_one, spec.build())


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
    factory = functools.partial(_scrub_work, checker.spec) if checker.spec is not None \
        else None
    for outcome in run_files(targets, functools.partial(scrub_one, checker), jobs=jobs,
                             factory=factory, progress=progress):
        if outcome.unreadable is not None:
            report.skip(outcome.display, outcome.unreadable, finding=True)
            continue
        if outcome.problem is not None:
            report.problems.append(InputProblem(outcome.display, outcome.problem))
            continue
        report.read(outcome.display, outcome.format or "text")
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
        if write:
            try:
                remaining = write_change(change, checker)
            except OSError as exc:
                report.problems.append(InputProblem(
                    display,
                    f"cannot write: {exc.strerror or exc}; the file was left unchanged, make "
                    "its directory writable and run again"))
                continue
            report.issues.extend(remaining)
            echo(_one_line(display, "scrubbed", change, remaining))
        else:
            echo(_one_line(display, "would scrub", change, []))
            report.issues.extend(change.issues or [Issue(display, 1, "not-canonical",
                                                         detail="; ".join(change.notes))])
    return report
