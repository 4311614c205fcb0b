"""`redact migrate`: other tools' recordings as redactkey fixtures that replay through
`FixtureTransport` (docs/cli/migrate.md).

Files are found and read by the audit's walk, classifier and readers. Each recorded HTTP
exchange goes through the very record step the transport runs (`HttpFixtures` in record
mode) with the recorded response as the "live" one, so the request document, key,
redaction, stored response and file name are exactly what recording the call through
`FixtureTransport` would have written (kind ``"http"``, whichever provider it went to).
Each recording has its own `HttpFixtures`, so its identical requests keep every answer
in order (docs/decisions/0022). Everything is recorded into a temporary directory first
and moved into place only with `write`.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import FixtureFormatError, RedactkeyError, VolatileValueWarning
from ..fixtures._store import FixtureDir, OutsideRootError, atomic_write, contained
from ..http._documents import KIND, is_environment_failure, request_document, wants_stream
from ..keys._keys import request_key
from ..record._config import load_config
from ..record._exchange import HttpFixtures, LiveResponse, LiveStream
from ..record._wire import StreamReply
from ..recordings._classify import Target, Unreadable, open_target, walk
from ..recordings._readers import NOT_HTTP, Binary, Exchange, exchanges, read_recording
from ..redact._redactor import Redactor

__all__ = ["MigrationPlan", "Planned", "Unkeyable", "WireCall", "migrate", "wire_calls"]
_TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded",
               "application/xml", "application/javascript", "application/x-ndjson",
               "multipart/form-data")


@dataclass(frozen=True)
class WireCall:
    """One recorded HTTP exchange as it went over the wire (bodies decoded, as bytes)."""

    source: str  # "path /interactions/3"
    method: str
    url: str
    request_headers: tuple[tuple[str, str], ...]
    request_body: bytes
    status: int
    response_headers: tuple[tuple[str, str], ...]
    response_body: bytes


@dataclass(frozen=True)
class Unkeyable:
    """A recorded interaction that cannot become a fixture, and why."""

    source: str
    reason: str


@dataclass(frozen=True)
class Planned:
    """A fixture the migration writes (or would write)."""

    source: str
    method: str
    url: str
    target: Path
    streamed: bool
    redacted: tuple[str, ...]  # rule names of what was taken out, with counts
    replaces: bool  # a different file already sits at the target
    volatile: tuple[str, ...] = ()  # key material that differs on every run ("pointer (why)")


@dataclass
class MigrationPlan:
    """What `migrate` found: files read, fixtures planned, duplicates and refusals."""

    files: Counter[str] = field(default_factory=Counter)  # format -> files read
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    planned: list[Planned] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (source, why)
    refused: list[Unkeyable] = field(default_factory=list)
    written: int = 0

    @property
    def interactions(self) -> int:
        """Every interaction met."""
        return len(self.planned) + len(self.duplicates) + len(self.refused)


# -- reading ---------------------------------------------------------------------------


def _header(headers: dict[str, list[str]], wanted: str) -> list[str]:
    return [v for name, values in headers.items() if name.lower() == wanted for v in values]


def _mime(headers: dict[str, list[str]]) -> str:
    values = _header(headers, "content-type")
    return values[0].split(";", 1)[0].strip().lower() if values else ""


def _is_text(mime: str) -> bool:
    return not mime or mime.endswith("+json") or mime.startswith(_TEXT_TYPES)


def _pairs(headers: dict[str, list[str]]) -> tuple[tuple[str, str], ...]:
    return tuple((name, value) for name, values in headers.items() for value in values)


def _body_bytes(body: object) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _wire_call(source: str, call: Exchange) -> WireCall | Unkeyable:
    if call.method in ("WS", "GRPC"):
        return Unkeyable(source, "a websocket or gRPC frame, not an HTTP exchange")
    if not call.method or not call.url:
        return Unkeyable(source, "no request method or URL recorded")
    if call.status is None:
        return Unkeyable(source, "no response recorded")
    if is_environment_failure(call.status):
        return Unkeyable(source, f"HTTP {call.status}: a credential, quota or server failure, "
                                 "which redactkey never records")
    request_mime = _mime(call.request_headers)
    if call.request_body not in (None, "") and (
            not _is_text(request_mime) or isinstance(call.request_body, Binary)):
        return Unkeyable(source, f"binary request body ({request_mime or 'bytes'})")
    request_body = _body_bytes(call.request_body)
    if request_mime == "multipart/form-data":
        content_type = ",".join(_header(call.request_headers, "content-type"))
        if "boundary=" not in content_type:
            return Unkeyable(source, "multipart body without its boundary in the content type "
                                     "(the key would change on every run)")
        boundary = content_type.split("boundary=", 1)[1].split(";", 1)[0].strip('"')
        if boundary.encode("latin-1", "replace") not in request_body:
            return Unkeyable(source, "multipart body not kept as recorded (binary parts)")
    response_mime = _mime(call.response_headers)
    if call.response_body not in (None, "") and (  # an empty body is kept whatever its type
            not _is_text(response_mime) or isinstance(call.response_body, Binary)):
        return Unkeyable(source, f"binary response body ({response_mime or 'bytes'})")
    return WireCall(source, call.method.upper(), call.url, _pairs(call.request_headers),
                    request_body, call.status, _pairs(call.response_headers),
                    _body_bytes(call.response_body))


def wire_calls(target: Target) -> tuple[str, list[WireCall | Unkeyable]]:
    """(format, calls) of one recording, read by the audit's readers (no calls: a file
    with no HTTP interactions); `Unreadable` or `FixtureFormatError` when it cannot be."""
    opened = open_target(target)
    recording = read_recording(target.path, opened.text, suffix=opened.suffix)
    why = NOT_HTTP.get(recording.format)
    return recording.format, [
        Unkeyable(f"{target.display} {call.pointer}", why) if why is not None
        else _wire_call(f"{target.display} {call.pointer}", exchange)
        for call, exchange in zip(recording.interactions, exchanges(recording), strict=True)
    ]


# -- writing ---------------------------------------------------------------------------


def _sources(paths: Sequence[str], plan: MigrationPlan) -> Iterator[tuple[Target, Path]]:
    """(file, the directory its place under --to is relative to) for each recording, as
    the audit's walk finds them; what it passes over goes to `plan.skipped`."""
    for raw in paths:
        path = Path(raw)
        found = walk([raw])
        plan.skipped.extend((s.display, s.reason) for s in found.skipped)
        plan.skipped.extend((p.path, p.problem) for p in found.problems)
        for target in found.targets:
            yield target, path if path.is_dir() else path.parent


def _redacted(redactor: Redactor, exchange: WireCall, document: object) -> tuple[str, ...]:
    response = {"headers": [list(h) for h in exchange.response_headers],
                "body": exchange.response_body.decode("utf-8", "replace")}
    counts = Counter(f.rule for f in redactor.findings({"request": document,
                                                        "response": response}))
    return tuple(f"{rule} x{count}" if count > 1 else rule
                 for rule, count in sorted(counts.items()))


def _record(fixtures: HttpFixtures, document: dict[str, object], exchange: WireCall) -> None:
    if wants_stream(document):
        reply = fixtures.stream(document, lambda: LiveStream(
            exchange.status, exchange.response_headers, [exchange.response_body]))
        if isinstance(reply, StreamReply):  # recorded once read to its end
            for _ in reply.pieces:
                pass
            reply.close()
    else:
        fixtures.call(document, lambda: LiveResponse(
            exchange.status, exchange.response_headers, exchange.response_body))


def migrate(
    paths: Sequence[str],
    to: str | os.PathLike[str],
    redactor: Redactor,
    *,
    write: bool = False,
) -> MigrationPlan:
    """Turn the recordings under `paths` into fixtures under `to` (a plan unless `write`),
    each at its place below its `paths` argument (docs/cli/migrate.md)."""
    plan = MigrationPlan()
    destination = Path(to)
    config = load_config()
    with tempfile.TemporaryDirectory(prefix="redactkey-migrate-") as temp:
        staging = Path(temp)
        # per directory under --to: its store, and the recording that owns each key
        stores: dict[Path, tuple[FixtureDir, dict[str, str]]] = {}
        for target, base in _sources(paths, plan):
            file = target.path
            try:
                fmt, items = wire_calls(target)
            except (Unreadable, FixtureFormatError) as exc:
                plan.skipped.append((target.display, exc.problem))
                continue
            if not items:
                plan.skipped.append((target.display, f"no HTTP interactions ({fmt})"))
                continue
            plan.files[fmt] += 1
            relative = file.parent.relative_to(base) if file.parent != base else Path()
            try:  # never through a link out of --to (`OUT/sub` -> elsewhere)
                contained(destination / relative, destination)
                outside = None
            except OutsideRootError as exc:
                outside = str(exc.strerror).removeprefix("refused: ")
            if relative not in stores:
                stores[relative] = (FixtureDir(staging / relative), {})
            store, owners = stores[relative]
            # one layer per recording: its identical requests are one sequence of answers
            fixtures = HttpFixtures(store, mode="record", redactor=redactor, model=False,
                                    config=config)
            for item in items:
                if isinstance(item, Unkeyable) or outside is not None:
                    plan.refused.append(item if isinstance(item, Unkeyable)
                                        else Unkeyable(item.source, str(outside)))
                    continue
                _plan_one(plan, fixtures, owners, target.display, item,
                          destination / relative, redactor)
        if write:
            for planned in list(plan.planned):
                staged = staging / planned.target.relative_to(destination)
                try:  # checked again as written: a link may have appeared since
                    real = contained(planned.target, destination)
                    real.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write(real, staged.read_bytes(), root=destination)
                except OutsideRootError as exc:
                    plan.planned.remove(planned)
                    plan.refused.append(Unkeyable(planned.source,
                                                  str(exc.strerror).removeprefix("refused: ")))
                    continue
                plan.written += 1
    return plan


def _plan_one(plan: MigrationPlan, fixtures: HttpFixtures, owners: dict[str, str],
              recording: str, exchange: WireCall, target_dir: Path,
              redactor: Redactor) -> None:
    try:
        document = request_document(exchange.method, exchange.url,
                                    exchange.request_headers, exchange.request_body)
        key = request_key(KIND, document, redactor=redactor)
    except RedactkeyError as exc:
        plan.refused.append(Unkeyable(exchange.source, f"cannot be keyed: {exc}"))
        return
    owner = owners.setdefault(key, recording)
    if owner != recording:
        plan.duplicates.append((exchange.source, f"same key {key[:12]}… as {owner}"))
        return
    answers = fixtures.answers
    assert answers is not None  # a FixtureDir's layer keeps sequences
    before = answers.recorded(KIND, key)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", VolatileValueWarning)
        try:
            _record(fixtures, document, exchange)
        except RedactkeyError as exc:
            plan.refused.append(Unkeyable(exchange.source, f"cannot be stored: {exc}"))
            return
    index = answers.recorded(KIND, key)
    if index is None:  # not stored after all (a stream that recorded nothing)
        plan.refused.append(Unkeyable(exchange.source, "cannot be stored: nothing recorded"))
        return
    if index == before:
        plan.duplicates.append((exchange.source, "same request and answer as the call before it"))
        return
    volatile = tuple(f"{w.message.pointer} ({w.message.reason})" for w in caught
                     if isinstance(w.message, VolatileValueWarning))
    staged = answers.store.path_for(KIND, key, index)
    target = target_dir / staged.name
    replaces = target.exists() and target.read_bytes() != staged.read_bytes()
    plan.planned.append(Planned(exchange.source, exchange.method, exchange.url, target,
                                wants_stream(document), _redacted(redactor, exchange, document),
                                replaces, volatile))
