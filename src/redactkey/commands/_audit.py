"""`redact audit`: the health of fixture directories and recorded-HTTP cassettes, by the
checker's findings plus the per-format and tree-wide rules docs/cli/audit.md lists."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped,unused-ignore]

from .._errors import FixtureFormatError
from ..fixtures._format import (
    FORMAT_VERSION,
    fixture_json_schema,
    is_canonical_fixture,
    parse_cassette,
    parse_fixture,
)
from ..fixtures._store import kind_for_file_name, parse_file_name
from ..keys._canonical import canonicalize, pointer_join
from ..keys._keys import find_volatile, key_from_material
from ..recordings._cassettes import Interaction, Recording
from ..recordings._classify import RECORDING_SUFFIXES, inner_suffix, is_large
from ..recordings._readers import RECORDING_FORMATS
from ..secrets._run_secrets import mask
from ._check import Checker, CheckerSpec, Target, begin
from ._issues import Issue, Report
from ._parallel import Outcome, read_into
from ._prune import read_run_report

__all__ = ["Auditor", "audit_paths", "expired_issues", "load_unused_files"]

_AGED_FORMATS = RECORDING_FORMATS | {"fixture", "store"}


def _first_error(validator: Any, document: Any) -> tuple[str, str] | None:
    """The pointer and message (values masked) of a document's first schema error."""
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    if not errors:
        return None
    pointer = "".join(pointer_join("", token) for token in errors[0].absolute_path)
    return pointer, _without_values(errors[0])[:200]


def _describe_value(value: Any) -> str:
    if isinstance(value, (bool, int, float)) or value is None:
        return json.dumps(value)
    if isinstance(value, str):
        return f"the string {mask(value)!r}" if len(value) > 8 else f"the string {value!r}"
    return "an object" if isinstance(value, dict) else "an array"


def _without_values(error: Any) -> str:
    """A schema error's message with the document's values masked: jsonschema quotes the
    offending instance (a whole fixture, secrets included) and unexpected member names."""
    message = str(error.message)
    message = message.replace(repr(error.instance), _describe_value(error.instance))
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {})) if isinstance(error.schema, dict) \
            else set()
        for name in error.instance:
            if name not in allowed:
                message = message.replace(repr(name), repr(mask(str(name))))
    return message


class Auditor:
    """Audits files one by one, then the directory-wide checks (duplicates, unused)."""

    def __init__(self, checker: Checker, *, unused: frozenset[Path] = frozenset()) -> None:
        self.checker = checker
        self.config = checker.config
        self.validator = jsonschema.Draft202012Validator(fixture_json_schema())  # once per audit
        self.unused = unused
        self.keys: dict[tuple[str, str], list[str]] = {}
        self.fixture_files: list[Target] = []

    # -- one file -------------------------------------------------------------------

    def audit_target(self, target: Target) -> tuple[list[Issue], str]:
        """Issues of one file and the format it was read as; `Unreadable` when it cannot
        be read (over a cap, corrupt), `FixtureFormatError` when it cannot be opened."""
        issues: list[Issue] = []
        try:
            size = target.path.stat().st_size
        except OSError as exc:
            raise FixtureFormatError(target.display, f"cannot be read: {exc.strerror}") from None
        if size > self.config.max_fixture_bytes:
            issues.append(Issue(target.display, 1, "oversized-file",
                                detail=f"{size} bytes > max-fixture-bytes "
                                       f"{self.config.max_fixture_bytes}"))
        found, cassette = self.checker.check_target(target)
        issues.extend(found)
        named = kind_for_file_name(target.path.name)
        if cassette is None:
            problem = self.checker.parse_problem
            if problem is not None and inner_suffix(target.path) in RECORDING_SUFFIXES:
                issues.append(Issue(target.display, 1, "unparsable-file", detail=problem))
                return issues, "unparsable"
            return issues, "text"
        if is_large(target):  # read in pieces: the checks below need it whole
            return issues, cassette.format
        if cassette.format == "store":
            issues.extend(self._store(target, cassette))
        elif cassette.format == "fixture" or named is not None:
            issues.extend(self._fixture(target, cassette, named))
        elif cassette.format in RECORDING_FORMATS:
            issues.extend(_http_cassette(target.display, cassette))
        return issues, cassette.format

    def _fixture(
        self, target: Target, cassette: Recording, named: tuple[str, str] | None
    ) -> list[Issue]:
        display = target.display
        document = cassette.document
        issues: list[Issue] = []
        if not isinstance(document, dict):
            return [Issue(display, 1, "schema-invalid", detail="not a JSON object")]
        version = document.get("version")
        if type(version) is not int or version != FORMAT_VERSION:
            return [Issue(display, cassette.line_for("/version"), "unknown-version",
                          pointer="/version",
                          detail=f"version {_describe_value(version)}; this redactkey reads "
                                 f"{FORMAT_VERSION}")]
        problem = _first_error(self.validator, document)
        if problem is not None:
            pointer, message = problem
            shown = self.checker.masked_pointer(pointer)
            return [Issue(display, cassette.line_for(pointer), "schema-invalid",
                          pointer=shown, detail=f"{shown or '(root)'}: {message}")]
        raw = target.path.read_bytes()
        try:
            fixture = parse_fixture(display, raw)
        except FixtureFormatError as exc:
            return [Issue(display, cassette.line_for(exc.pointer), "schema-invalid",
                          pointer=exc.pointer, detail=exc.problem)]
        self.fixture_files.append(target)
        self.keys.setdefault((fixture.kind, fixture.key), []).append(display)
        if not is_canonical_fixture(raw, json.loads(raw)):
            issues.append(Issue(display, 1, "not-canonical"))
        mismatch = _key_mismatch(fixture.kind, fixture.key, fixture.request, named)
        if mismatch:
            issues.append(Issue(display, cassette.line_for("/key"), "key-mismatch",
                                pointer="/key", detail=mismatch))
        issues.extend(_volatile_material(display, cassette, fixture.request, ""))
        return issues

    def _store(self, target: Target, cassette: Recording) -> list[Issue]:
        """Our single-file cassette store: version, schema, keys, order and formatting."""
        display = target.display
        raw = target.path.read_bytes()
        try:
            store = parse_cassette(display, raw)
        except FixtureFormatError as exc:
            rule = "unknown-version" if exc.pointer == "/version" else "schema-invalid"
            return [Issue(display, cassette.line_for(exc.pointer), rule, pointer=exc.pointer,
                          detail=exc.problem)]
        issues: list[Issue] = []
        if raw != store.dumps():
            issues.append(Issue(display, 1, "not-canonical",
                                detail="entries sorted by key, canonical JSON"))
        for index, entry in enumerate(store.entries):
            base = f"/entries/{index}"
            self.keys.setdefault((entry.kind, entry.key), []).append(f"{display}{base}")
            material = entry.request
            try:
                recomputed = key_from_material(material) if isinstance(material, dict) \
                    else "(key material is not an object)"
            except Exception as exc:  # material JSON cannot canonicalise is the finding
                recomputed = f"(cannot be canonicalised: {exc})"
            if recomputed != entry.key:
                issues.append(Issue(display, cassette.line_for(base + "/key"), "key-mismatch",
                                    pointer=base + "/key",
                                    detail=f"stored key {entry.key[:12]}… != recomputed "
                                           f"{recomputed[:12]}…"))
            issues.extend(_volatile_material(display, cassette, material, base))
        return issues

    # -- the whole tree -------------------------------------------------------------

    def finish(self) -> list[Issue]:
        """Directory-wide issues: duplicate keys, gaps in answer sequences, unused fixtures."""
        issues: list[Issue] = []
        sequences: dict[tuple[str, str, str], dict[int, str]] = {}  # (dir, kind, key) ->
        for (kind, key), places in sorted(self.keys.items()):
            by_index: dict[int, list[str]] = {}
            for place in places:
                parsed = None if "/entries/" in place else parse_file_name(Path(place).name)
                index = parsed[2] if parsed is not None else 1
                by_index.setdefault(index, []).append(place)
                if parsed is not None:
                    folder = str(Path(place).parent)
                    sequences.setdefault((folder, kind, key), {})[index] = place
            for same in by_index.values():
                first = sorted(same)[0]
                for other in sorted(same)[1:]:
                    path, _, pointer = other.partition("/entries/")
                    pointer = f"/entries/{pointer}/key" if pointer else "/key"
                    issues.append(Issue(path, 1, "duplicate-key", pointer=pointer,
                                        detail=f"{kind} {key[:12]}… also in {first}"))
        for (_folder, kind, key), answers in sorted(sequences.items()):
            if 1 not in answers:
                index = min(answers)
                issues.append(Issue(answers[index], 1, "answer-gap",
                                    detail=f"answer {index} of {kind} {key[:12]}… without "
                                           "the first answer: the first calls miss"))
        for target in self.fixture_files:
            if target.path.resolve() in self.unused:
                issues.append(Issue(target.display, 1, "unused-fixture"))
        return issues


def _volatile_material(display: str, cassette: Recording, material: Any,
                       base: str) -> list[Issue]:
    """`volatile-key-material` in a fixture's key material (in its request, where it holds
    one) at `base` of the file."""
    body = material["request"] if isinstance(material, dict) and "request" in material \
        else material
    root = base + ("/request/request" if body is not material else "/request")
    return [Issue(display, cassette.line_for(root + found.pointer), "volatile-key-material",
                  pointer=root + found.pointer, detail=found.reason)
            for found in find_volatile(body)]


def _key_mismatch(
    kind: str, key: str, material: Any, named: tuple[str, str] | None
) -> str:
    problems: list[str] = []
    try:
        recomputed = key_from_material(material)
    except Exception as exc:  # a material JSON cannot canonicalise is itself the finding
        return f"key material cannot be canonicalised: {exc}"
    if recomputed != key:
        problems.append(f"stored key {key[:12]}… != recomputed {recomputed[:12]}…")
    if isinstance(material, dict) and material.get("kind") not in (None, kind):
        problems.append(f"key material kind {material.get('kind')!r} != fixture kind {kind!r}")
    if named is None:
        problems.append("file name is not <kind>.<key>.json")
    else:
        name_kind, name_key = named
        if name_key != key:
            problems.append(f"file name key {name_key[:12]}… != stored key {key[:12]}…")
        if name_kind != kind:
            problems.append(f"file name kind {name_kind!r} != fixture kind {kind!r}")
    return "; ".join(problems)


# --------------------------------------------------------------------------- cassettes


def _request_identity(call: Interaction) -> str:
    try:
        body = canonicalize(call.request.body).decode("utf-8")
    except Exception:  # best effort: an odd body still identifies by its repr
        body = repr(call.request.body)
    return "\0".join((call.method or "", call.uri or "", body))


def _http_cassette(display: str, cassette: Recording) -> list[Issue]:
    """Volatile request fields and duplicate requests (header findings are the checker's)."""
    issues: list[Issue] = []
    seen: dict[str, int] = {}
    for call in cassette.interactions:
        if call.request.body_pointer is not None and call.method not in ("WS", "GRPC"):
            for found in find_volatile(call.request.body):
                pointer = call.request.body_pointer + found.pointer
                issues.append(Issue(display, cassette.line_for(pointer),
                                    "volatile-request-field", pointer=pointer,
                                    detail=found.reason))
        if call.method in ("WS",):
            continue
        identity = _request_identity(call)
        if identity in seen:
            issues.append(Issue(display, cassette.line_for(call.pointer), "duplicate-interaction",
                                pointer=call.pointer,
                                detail=f"same request as interaction {seen[identity]}"))
        else:
            seen[identity] = call.index
    return issues


# --------------------------------------------------------------------------- entry point


def load_unused_files(path: Path) -> frozenset[Path]:
    """Fixture files a run report (`.redactkey-report.json`, written by the pytest plugin)
    lists as unused, resolved against the report's directory."""
    (unused,) = read_run_report(path, "unused")
    base = path.resolve().parent
    return frozenset((base / item).resolve() for item in unused)


def audit_one(auditor: Auditor, target: Target) -> Outcome:
    """The outcome of auditing one file, with the keys and fixture files it adds for the
    tree-wide checks (in this process or a worker)."""
    auditor.keys, auditor.fixture_files = {}, []
    issues, fmt = auditor.audit_target(target)
    return Outcome(target.display, fmt, issues, extra=(auditor.keys, auditor.fixture_files),
                   allowed=auditor.checker.suppressed)


def _audit_work(spec: CheckerSpec, unused: frozenset[Path]) -> Callable[[Target], Outcome]:
    return functools.partial(audit_one, Auditor(spec.build(), unused=unused))


def audit_paths(
    paths: Sequence[str],
    checker: Checker,
    *,
    unused: frozenset[Path] = frozenset(),
    progress: Callable[[Sequence[Target]], Iterable[Target]] | None = None,
    jobs: int = 1,
    max_age: timedelta | None = None,
) -> Report:
    """Run `redact audit` over directories and files (`jobs` worker processes); with
    `max_age`, recordings last changed longer ago are `expired-fixture`."""
    report, targets = begin(paths, "audit", strict=checker.strict)
    auditor = Auditor(checker, unused=unused)
    worker = Auditor(checker, unused=unused)
    factory = functools.partial(_audit_work, checker.spec, unused)
    found: list[Issue] = []
    by_display = {target.display: target for target in targets}
    recordings: list[Target] = []  # files holding recorded calls, for their age
    for outcome in read_into(report, targets, functools.partial(audit_one, worker), factory,
                             jobs=jobs, progress=progress):
        found.extend(outcome.issues)
        if outcome.format in _AGED_FORMATS and outcome.display in by_display:
            recordings.append(by_display[outcome.display])
        keys, fixture_files = outcome.extra
        for key, places in keys.items():
            auditor.keys.setdefault(key, []).extend(places)
        auditor.fixture_files.extend(fixture_files)
    found.extend(auditor.finish())
    if max_age is not None:
        found.extend(expired_issues(paths, recordings, max_age))
    for issue in found:
        if checker.allowlisted(issue):
            report.allowed += 1
        else:
            report.issues.append(issue)
    return report


def expired_issues(roots: Sequence[str], targets: Sequence[Target],
                   max_age: timedelta) -> list[Issue]:
    """`expired-fixture` for each target last changed longer ago than `max_age`; each
    directory in `roots` is read from git once, so the cost does not grow with the files."""
    from ..fixtures._age import FixtureAges, format_duration

    ages = FixtureAges()
    for root in roots:
        if Path(root).is_dir():
            ages.ages(root, files=())
    issues: list[Issue] = []
    for target in targets:
        found = ages.age_of(target.path)
        if found is None or found.age() <= max_age:
            continue
        issues.append(Issue(
            target.display, 1, "expired-fixture",
            detail=f"recorded {format_duration(found.age())} ago (by "
                   f"{found.described_source}), older than --max-age "
                   f"{format_duration(max_age)}"))
    return issues
