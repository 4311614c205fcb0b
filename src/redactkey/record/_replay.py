"""Record and replay of model calls and tool calls (thin layers over a fixture store).

Every call goes the same way in every mode: redact the request, build its key
material, hash it (`redactkey.keys._keys`), then

    live     call `live`; the store is not touched
    record   call `live`, redact the outcome, write it (a repeat in the same run replays it)
    replay   read the outcome; never call `live` (it may be None); a miss raises
    auto     replay on a hit, record on a miss
    verify   call `live` and compare its answer with the recording by meaning
             (`redactkey.fixtures._verify`); the store is never written, a drift raises
             `DriftError` (or goes to `on_drift`), a miss is only reported

Only the callee's own failures are written (`StructuredOutputError`, plus what a
`recordable` predicate accepts); anything else `live` raises propagates and
nothing is written.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import os
import threading
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from datetime import timedelta
from typing import Any, Literal, Protocol, TypeVar, cast

from .._errors import (
    ConfigError,
    DriftError,
    DummySecretWarning,
    ExpiredFixtureError,
    ExpiredFixtureWarning,
    MissingFixtureError,
    RecordedError,
    StaleFixtureError,
    StructuredOutputError,
    UsageError,
    VolatileValueWarning,
    raised_at_entry,
    warn_at_caller,
)
from ..fixtures._age import (
    EXPIRY_ACTIONS,
    ExpiryAction,
    FixtureAge,
    FixtureAges,
    format_duration,
    parse_duration,
)
from ..fixtures._answers import AnswerNormalizer, normalize_answer
from ..fixtures._format import ChunkLines, Fixture, RecordedErrorBody
from ..fixtures._store import FixtureStore, check_kind, replay_reader
from ..fixtures._verify import Difference, VerifyRules, compare_answers, compare_streams
from ..keys._canonical import JSONValue, pointer_join, to_json
from ..keys._keys import (
    KeySpec,
    counted_part,
    find_volatile,
    material_and_key,
    redacted_material_and_key,
)
from ..redact._redactor import Redactor, shown_pointer
from ..secrets._run_secrets import RunSecrets
from ._config import Config, load_config

__all__ = [
    "MODEL_MODE_ENV",
    "MODES",
    "MODE_ENV",
    "CallLog",
    "ClientAdapter",
    "Mode",
    "ModelFixtures",
    "StreamRedactor",
    "ToolFixtures",
    "parse_mode",
    "resolve_mode",
]

Mode = Literal["live", "record", "replay", "auto", "verify"]
MODES: tuple[Mode, ...] = ("live", "record", "replay", "auto", "verify")
MODE_ENV = "REDACTKEY_MODE"
MODEL_MODE_ENV = "REDACTKEY_MODEL_MODE"
DEFAULT_MODE: Mode = "replay"

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
L = TypeVar("L", bound=Callable[..., Any])

_DIFF_LINES = 12
_PREVIEW = 40


class StreamRedactor(Protocol):
    """What the record layer needs of a redactor (`redactkey.Redactor` has all of it)."""

    def redact(self, value: Any) -> Any: ...

    def redact_stream(self, chunks: list[Any]) -> list[Any]: ...

    def redact_text(self, text: str) -> str: ...

    def learn(self, request: Any) -> int:
        """Take the credentials the request sends by name into the run's secrets."""
        ...


Outcome = Literal["replayed", "recorded", "missing"]


class CallLog(Protocol):
    """Where calls are reported (`redactkey.RunReport` is one)."""

    def note(self, outcome: Outcome, kind: str, key: str, *, file: str, store: str,
             label: str | None = None) -> None:
        """One call: replayed from `file`, recorded to it, or missing from `store`."""


def parse_mode(value: str | None, source: str) -> Mode | None:
    """`value` as a mode, None when it is unset or blank.

    Anything else is an error naming where it came from: a `UsageError` for
    ``source="argument"``, else a `ConfigError` naming `source` (an environment
    variable, a command-line option, a marker).
    """
    if value is None or value == "":
        return None
    for mode in MODES:
        if value == mode:
            return mode
    problem = f"{value!r} is not a mode; use one of {', '.join(MODES)}"
    if source == "argument":
        raise UsageError(f"mode {problem}")
    raise ConfigError(source, problem)


def _check_mode(value: str, source: str) -> Mode:
    return parse_mode(value, source) or DEFAULT_MODE


def _resolve(
    mode: str | None, *, model: bool, environ: Mapping[str, str] | None
) -> tuple[Mode, str]:
    if mode is not None:
        return _check_mode(mode, "argument"), "argument"
    env = os.environ if environ is None else environ
    if model and env.get(MODEL_MODE_ENV):
        return _check_mode(env[MODEL_MODE_ENV].strip().lower(), MODEL_MODE_ENV), MODEL_MODE_ENV
    if env.get(MODE_ENV):
        return _check_mode(env[MODE_ENV].strip().lower(), MODE_ENV), MODE_ENV
    return DEFAULT_MODE, "default"


def resolve_mode(
    mode: str | None = None, *, model: bool = False, environ: Mapping[str, str] | None = None
) -> Mode:
    """The mode to use: `mode` when given, else the environment, else "replay".

    `REDACTKEY_MODE` covers tool, HTTP and model calls, so one setting means
    "offline". With `model=True`, `REDACTKEY_MODEL_MODE` overrides it for model calls
    (replay the tools, keep a live model while iterating on a prompt). A bad value is
    a ConfigError naming the variable.
    """
    return _resolve(mode, model=model, environ=environ)[0]


def _default_redactor(mode: Mode) -> StreamRedactor:
    # Safe by default: the secret-looking variables of this environment, sensitive
    # keys and detectors. Pass a Redactor built with collect_run_secrets for the rest.
    # A stand-in key (`OPENAI_API_KEY=dummy`) is skipped with a warning unless this
    # layer records, where a short value is refused as everywhere else.
    secrets = RunSecrets.from_env(skip_short=mode not in ("record", "auto"))
    for slot, reason in secrets.dummies.items():
        warn_at_caller(DummySecretWarning(slot, reason))
    return Redactor(secrets)


def _always_false(exc: BaseException) -> bool:
    return False


def _error_type_name(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ in {"builtins", "redactkey._errors"}:
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _preview(value: Any, redactor: StreamRedactor) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = redactor.redact_text(text)
    if len(text) > _PREVIEW:
        text = text[: _PREVIEW - 1] + "…"
    return text


def _leaf_diff(old: Any, new: Any, pointer: str, out: list[tuple[str, str, Any, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for name in sorted(set(old) | set(new)):
            child = pointer_join(pointer, name)
            if name not in old:
                out.append(("added", child, None, new[name]))
            elif name not in new:
                out.append(("removed", child, old[name], None))
            else:
                _leaf_diff(old[name], new[name], child, out)
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            child = pointer_join(pointer, index)
            if index >= len(old):
                out.append(("added", child, None, new[index]))
            elif index >= len(new):
                out.append(("removed", child, old[index], None))
            else:
                _leaf_diff(old[index], new[index], child, out)
    elif type(old) is not type(new) or old != new:
        out.append(("changed", pointer, old, new))


def material_diff(recorded: Any, wanted: Any) -> list[tuple[str, str, Any, Any]]:
    """Leaf-level differences between two key materials: (what, JSON pointer, old, new)."""
    out: list[tuple[str, str, Any, Any]] = []
    _leaf_diff(recorded, wanted, "", out)
    return out


def _format_diff(diff: list[tuple[str, str, Any, Any]], redactor: StreamRedactor) -> list[str]:
    lines = []
    for what, raw_pointer, old, new in diff[:_DIFF_LINES]:
        # a fixture recorded before a secret was known can hold it as a member name
        pointer = shown_pointer(raw_pointer, redactor)
        if what == "added":
            lines.append(f"{pointer}: added {_preview(new, redactor)}")
        elif what == "removed":
            lines.append(f"{pointer}: removed (was {_preview(old, redactor)})")
        else:
            lines.append(
                f"{pointer}: {_preview(old, redactor)} -> {_preview(new, redactor)}"
            )
    if len(diff) > _DIFF_LINES:
        lines.append(f"... and {len(diff) - _DIFF_LINES} more differences")
    return lines


def answer_json(value: Any, pointer: str = "") -> Any:
    """An answer or chunk as plain JSON data for a fixture.

    Like `to_json`, but integers of any size pass: answers are stored with `json.dumps`,
    not hashed, and APIs return 64-bit ids. Pydantic models are dumped in JSON mode.
    """
    if value is None or isinstance(value, (bool, str)):
        return to_json(value, pointer)
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, Mapping):
        out = {}
        for name, item in value.items():
            if not isinstance(name, str):
                return to_json(value, pointer)  # raises, naming the key
            out[name] = answer_json(item, pointer_join(pointer, name))
        return out
    if isinstance(value, (list, tuple)):
        return [answer_json(item, pointer_join(pointer, i)) for i, item in enumerate(value)]
    model_dump = getattr(value, "model_dump", None)
    if model_dump is not None and hasattr(type(value), "model_fields"):
        return answer_json(model_dump(mode="json"), pointer)
    return to_json(value, pointer)


def _schema_difference(problem: str) -> Difference:
    pointer, _, message = problem.partition(": ")
    return Difference("" if pointer == "(root)" else pointer,
                      f"live answer breaks the schema: {message}", None, None)


def _copy_json(value: Any) -> Any:
    # Fixtures are frozen pydantic models; hand out a fresh copy of their data: what a
    # JSON round trip gives, walked directly for plain JSON data (a fixture's, parsed from
    # its file), through `json` for anything else or anything nested too deeply to walk.
    if isinstance(value, (dict, list)):
        try:
            return _copied(value)
        except (_NotPlain, RecursionError):
            return json.loads(json.dumps(value))
    return value


class _NotPlain(Exception):
    pass


_IMMUTABLE_JSON = frozenset({str, int, float, bool, type(None)})


def _copied(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out[key] = item if type(item) in _IMMUTABLE_JSON else _copied(item)
        return out
    if kind is list:
        return [item if type(item) in _IMMUTABLE_JSON else _copied(item) for item in value]
    if kind in _IMMUTABLE_JSON:
        return value
    raise _NotPlain


_UNREAD: Any = object()


class _Call:
    """One call's key material and key, computed once; and its fixture once read
    (`ModelFixtures.recorded`), for the lookup that follows."""

    __slots__ = ("fixture", "key", "kind", "material")

    def __init__(self, kind: str, material: dict[str, JSONValue], key: str) -> None:
        self.kind = kind
        self.material = material
        self.key = key
        self.fixture: Fixture | None = _UNREAD


class ModelFixtures:
    """Record and replay of calls through a fixture store.

    `call(kind, request, live, *, schema=None)` returns the answer; `stream(kind,
    request, live)` yields the chunks; `acall` / `astream` are the async twins.
    `live` is a zero-argument callable (None is allowed in replay). Answers and
    chunks are any JSON data (pydantic models are dumped), so the HTTP transport and
    the tool layer reuse this class.

    Keys follow `config` (a `Config`; default: the nearest `.redactkey.toml` or
    `pyproject.toml` `[tool.redactkey]` from the current directory, as `redact key`
    reads it): the spec of a kind is `config.key_spec(kind)`, so
    `[tool.redactkey.keys.<kind>]` counts here exactly as in `redact key`.

    `answer_normalizers` pin or drop volatile answer fields before an answer (or each
    chunk of a stream) is written (default: `[tool.redactkey.answers]` of `config`;
    see `PROVIDER_ANSWERS`); the caller still gets the live answer when recording.

    Options: `spec` (a KeySpec for every call instead), `recordable(exc)`
    (which other exceptions of `live` are the callee's own and deterministic),
    `record_answer(answer)` (False keeps an answer out of the store, e.g. a 5xx
    response), `rebuild_error(body)` (turn a recorded failure back into your own
    exception), `report` (a RunReport), `label` (names the caller in the report),
    `model` (False: read only REDACTKEY_MODE, not the model override),
    `copy_answers` (False: hand out the stored data itself, for a caller that only
    reads it, such as the HTTP layer that turns it into bytes at once).
    In verify mode, `verify` (a `VerifyRules`) says what to ignore, and `on_drift`
    receives each `DriftError` instead of it being raised (e.g. `RunReport.drift`).
    `max_age` ("90d", "12h", a timedelta) with `on_expiry` ("warn", "fail" or
    "rerecord": record it again when a live callee is given) acts on replayed fixtures
    older than that, aged by their last git commit (`ages`, shareable across layers).
    """

    def __init__(
        self,
        store: FixtureStore,
        *,
        mode: str | None = None,
        redactor: StreamRedactor | None = None,
        spec: KeySpec | None = None,
        recordable: Callable[[BaseException], bool] | None = None,
        record_answer: Callable[[Any], bool] | None = None,
        rebuild_error: Callable[[RecordedErrorBody], BaseException] | None = None,
        report: CallLog | None = None,
        label: str | None = None,
        model: bool = True,
        how_to_record: str | None = None,
        environ: Mapping[str, str] | None = None,
        verify: VerifyRules | None = None,
        on_drift: Callable[[DriftError], None] | None = None,
        how_to_rerecord: str | None = None,
        copy_answers: bool = True,
        max_age: str | timedelta | None = None,
        on_expiry: ExpiryAction = "warn",
        ages: FixtureAges | None = None,
        config: Config | None = None,
        answer_normalizers: Iterable[AnswerNormalizer] | None = None,
    ) -> None:
        self.store = store
        self.copy_answers = copy_answers
        self.mode, self._mode_source = _resolve(mode, model=model, environ=environ)
        self.config = config if config is not None else load_config()
        self.answer_normalizers: tuple[AnswerNormalizer, ...] = (
            self.config.answers.normalizers() if answer_normalizers is None
            else tuple(answer_normalizers)
        )
        self.redactor = redactor if redactor is not None else _default_redactor(self.mode)
        self.spec = spec
        self.recordable = recordable if recordable is not None else _always_false
        self.record_answer = record_answer
        self.rebuild_error = rebuild_error
        self.report = report
        self.label = label
        self.model = model
        self.how_to_record = how_to_record or self._how_to_record()
        self._recorded: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        # See key_of and recorded: a thread-local made on their first use (making one
        # costs a replayed call as much as keying a small request).
        self._keyed: threading.local | None = None
        self._kinds: set[str] = set()  # kinds the store has accepted
        # The store and how replay reads it (`replay_reader`), found on the first replay.
        self._reader: tuple[FixtureStore, Callable[[str, str], Fixture | None]] | None = None
        self._specs: dict[str, KeySpec] = {}
        self._validators: dict[str, Any] = {}
        self.verify_rules = verify if verify is not None else VerifyRules()
        self.on_drift = on_drift
        self.max_age = parse_duration(max_age) if max_age is not None else None
        if on_expiry not in EXPIRY_ACTIONS:
            raise UsageError(f"on_expiry={on_expiry!r}: use one of {', '.join(EXPIRY_ACTIONS)}")
        self.on_expiry: ExpiryAction = on_expiry
        self.ages = ages if ages is not None else FixtureAges()
        self.how_to_rerecord = how_to_rerecord or (
            "pass mode='record' for this call" if self._mode_source == "argument"
            else f"set {MODE_ENV}=record for this test and run it again"
        )

    def __repr__(self) -> str:
        return f"ModelFixtures({self.store!r}, mode={self.mode!r})"

    def over(
        self,
        store: FixtureStore,
        *,
        redactor: StreamRedactor | None = None,
        label: str | None = None,
        how_to_rerecord: str | None = None,
        on_drift: Callable[[DriftError], None] | None = None,
    ) -> ModelFixtures:
        """These settings (mode, configuration, key specs, verify rules, expiry, answer
        normalizers) over another store, and optionally another redactor, label, advice on
        re-recording and drift receiver: what a new `ModelFixtures` with the same arguments
        would be, with nothing resolved again. The pytest plugin gives each test one."""
        other = object.__new__(ModelFixtures)
        other.__dict__.update(self.__dict__)
        other.store = store
        if redactor is not None:
            other.redactor = redactor
        if label is not None:
            other.label = label
        if how_to_rerecord is not None:
            other.how_to_rerecord = how_to_rerecord
        if on_drift is not None:
            other.on_drift = on_drift
        # What a layer learns of its own calls stays its own; caches of what its settings
        # decide (kinds, key specs, validators) are shared, and so is the lock, which no
        # layer holds while calling another.
        other._recorded = set()
        other._keyed = None
        return other

    # -- shared steps --------------------------------------------------------------

    def _how_to_record(self) -> str:
        if self._mode_source == "argument":
            return "pass mode='auto' (records only what is missing) or mode='record'"
        override = (f" ({MODEL_MODE_ENV}=auto for model calls alone)" if self.model else "")
        return (f"set {MODE_ENV}=auto (records only what is missing){override} "
                f"or {MODE_ENV}=record, and run again")

    def spec_for(self, kind: str) -> KeySpec:
        """The key spec of `kind`: `spec` when given, else the configuration's."""
        if self.spec is not None:
            return self.spec
        spec = self._specs.get(kind)
        if spec is None:
            spec = self.config.key_spec(kind)  # the configuration is frozen: built once
            if len(self._specs) < 256:
                self._specs[kind] = spec
        return spec

    def _key(self, kind: str, request: Any, spec: KeySpec | None) -> _Call:
        keyed = self._keyed
        if keyed is not None:
            last = getattr(keyed, "last", None)
            if last is not None:
                keyed.last = None  # one use only, whatever comes next
                if last[0] == kind and last[1] is request and last[2] is spec:
                    return last[3]  # type: ignore[no-any-return]
        if not isinstance(kind, str) or kind not in self._kinds:
            check_kind(kind)  # refuse a bad kind before anything else
            if len(self._kinds) < 256:
                self._kinds.add(kind)
        # Credentials the request sends by name (a key from a config file or a constructor
        # argument, not only the environment) join the run secrets before anything is
        # redacted: an answer that echoes one loses it. In replay too, so that a dummy key
        # echoed into a prompt is keyed the way the live one was.
        redactor = self.redactor
        if type(redactor) is Redactor:
            # `learn_and_redact_kept` hands back the request's own part when redaction
            # would change nothing, and says when orjson writes it canonically as it is.
            spec = spec or self.spec_for(kind)
            part = counted_part(request, spec)
            redacted, canonical = redactor.learn_and_redact_kept(request, part)
            material, key = redacted_material_and_key(
                kind, redacted, spec, orjson_canonical=canonical
            )
            if redacted is part and self.mode != "replay":
                # The material holds the caller's own data: copy what may be written later.
                material = _copy_json(material)
            return _Call(kind, material, key)
        redactor.learn(request)
        material, key = material_and_key(
            kind, request, spec=spec or self.spec_for(kind), redactor=redactor
        )
        return _Call(kind, material, key)

    def key_of(self, kind: str, request: Any, *, spec: KeySpec | None = None) -> str:
        """The key a call of `request` is stored under, computed as `call` and `stream`
        compute it (the credentials it sends by name learned first).

        The very next `call` / `stream` (or async twin) in this thread, if it is of this
        same request object, unchanged, reuses the work instead of keying it again.
        """
        call = self._key(kind, request, spec)
        self._remember(kind, request, spec, call)
        return call.key

    def _remember(self, kind: str, request: Any, spec: KeySpec | None, call: _Call) -> None:
        """Keep this thread's last keyed call for the next `call` / `stream` of it."""
        keyed = self._keyed
        if keyed is None:
            with self._lock:
                keyed = self._keyed
                if keyed is None:
                    keyed = self._keyed = threading.local()
        keyed.last = (kind, request, spec, call)

    def recorded(self, kind: str, request: Any, *, spec: KeySpec | None = None) -> Fixture | None:
        """The fixture stored for `request` (keyed as `key_of` keys it), or None.

        The very next `call` / `stream` (or async twin) in this thread, if it is of this
        same request object, unchanged, replays what was read here instead of reading it
        again.
        """
        call = self._key(kind, request, spec)
        call.fixture = self.store.get(call.kind, call.key)
        self._remember(kind, request, spec, call)
        return call.fixture

    def recorded_outcome(
        self, kind: str, request: Any, *, spec: KeySpec | None = None
    ) -> str | None:
        """Which outcome is recorded for `request` ('answer', 'chunks' or 'error'), or
        None when nothing is. Like `recorded`, the very next `call` / `stream` of this
        same request object in this thread reuses the key and what was read; the file is
        read only as far as replaying its outcome needs."""
        call = self._key(kind, request, spec)
        if call.fixture is _UNREAD:  # (a call `replayed_answer` just read is read already)
            call.fixture = self._replayed(call)
        self._remember(kind, request, spec, call)
        return None if call.fixture is None else call.fixture.outcome

    def replayed_answer(self, kind: str, request: Any) -> tuple[bool, Any]:
        """`(True, answer)` when `call(kind, request, live)` would replay a recorded answer
        (mode replay or auto, no maximum age to check): the answer, read and reported as
        `call` reads and reports it, keyed and read once. Otherwise `(False, None)`, and the
        very next `call` / `stream` / `recorded_outcome` of this same request in this thread
        reuses the key and what was read."""
        if self.max_age is not None or (self.mode != "replay" and self.mode != "auto"):
            return False, None
        call = self._key(kind, request, None)
        fixture = call.fixture = self._replayed(call)
        if fixture is None or fixture.outcome != "answer":
            self._remember(kind, request, None, call)
            return False, None
        if self.report is not None:  # (what `_lookup` does for a fixture read in replay)
            self._report("replayed", call)
        # (`_answer_from` with no schema, for the answer outcome already seen)
        return True, _copy_json(fixture.answer) if self.copy_answers else fixture.answer

    def _replayed(self, call: _Call) -> Fixture | None:
        """The stored fixture of `call` as replaying its outcome needs it."""
        reader = self._reader
        if reader is None or reader[0] is not self.store:  # (`over` sets another store)
            reader = self._reader = (self.store, replay_reader(self.store))
        return reader[1](call.kind, call.key)

    def _warn_volatile(self, call: _Call) -> None:
        for found in find_volatile(call.material):
            warn_at_caller(VolatileValueWarning(call.kind, found.pointer, found.reason))

    def _report(self, outcome: Outcome, call: _Call) -> None:
        if self.report is not None:
            file = str(self.store.path_for(call.kind, call.key))
            self.report.note(outcome, call.kind, call.key, file=file,
                             store=self.store.location, label=self.label)

    def _expired(self, call: _Call) -> FixtureAge | None:
        if self.max_age is None:
            return None
        found = self.ages.age_of(self.store.path_for(call.kind, call.key))
        if found is None or found.age() <= self.max_age:
            return None
        return found

    def _fresh(self, call: _Call, can_rerecord: bool) -> bool:
        """False when an expired fixture is to be recorded again instead of replayed."""
        found = self._expired(call)
        if found is None:
            return True
        assert self.max_age is not None
        path = str(found.path)
        age, max_age = format_duration(found.age()), format_duration(self.max_age)
        if self.on_expiry == "fail":
            raise ExpiredFixtureError(path, age, max_age, how_to_record=self.how_to_rerecord,
                                      source=found.described_source)
        if self.on_expiry == "rerecord" and can_rerecord:
            return False
        warn_at_caller(ExpiredFixtureWarning(path, age, max_age,
                                             source=found.described_source))
        return True

    def _lookup(self, call: _Call, can_rerecord: bool = False) -> Fixture | None:
        """The recorded fixture to replay, or None when the call must go live."""
        if self.mode == "replay" or self.mode == "auto":
            fixture = call.fixture
            if fixture is _UNREAD:
                fixture = self._replayed(call)
            if fixture is not None:
                if self.max_age is not None and not self._fresh(call, can_rerecord):
                    return None
                if self.report is not None:
                    self._report("replayed", call)
                return fixture
            if self.mode == "replay":
                self._report("missing", call)
                self._warn_volatile(call)
                raise self._missing(call)
            return None
        with self._lock:
            repeat = (call.kind, call.key) in self._recorded
        if repeat:
            # Record mode: a repeat of a call recorded in this run replays what was
            # written, so the record run sees what every later replay run will see.
            fixture = self.store.get(call.kind, call.key)
            if fixture is not None:
                self._report("replayed", call)
                return fixture
        return None

    def _missing(self, call: _Call) -> MissingFixtureError:
        best: tuple[int, str, list[tuple[str, str, Any, Any]]] | None = None
        for name, recorded in self._neighbours(call.kind):
            diff = material_diff(recorded, call.material)
            if diff and (best is None or (len(diff), name) < (best[0], best[1])):
                best = (len(diff), name, diff)
        nearest = diff_lines = None
        if best is not None:
            nearest = best[1]
            diff_lines = _format_diff(best[2], self.redactor)
        return MissingFixtureError(
            call.kind, call.key, self.store.location, nearest=nearest, diff=diff_lines,
            how_to_record=self.how_to_record,
        )

    def _neighbours(self, kind: str) -> Iterator[tuple[str, Any]]:
        """(file, key material) of the recorded calls of `kind`, skipping broken files."""
        return self.store.recorded_requests(kind)

    def _write(self, call: _Call, **outcome: Any) -> None:
        if self.answer_normalizers:
            if "answer" in outcome:
                outcome["answer"] = normalize_answer(outcome["answer"], self.answer_normalizers)
            if "chunks" in outcome:
                outcome["chunks"] = [normalize_answer(chunk, self.answer_normalizers)
                                     for chunk in outcome["chunks"]]
        fixture = Fixture(key=call.key, kind=call.kind, request=call.material, **outcome)
        self.store.put(fixture)
        with self._lock:
            self._recorded.add((call.kind, call.key))
        self._report("recorded", call)

    def _error_body(self, exc: BaseException) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": _error_type_name(exc),
            "message": self.redactor.redact_text(str(exc)),
        }
        if isinstance(exc, StructuredOutputError):
            try:
                answer = self.redactor.redact(answer_json(exc.answer))
            except (ValueError, TypeError):
                answer = None
            body["data"] = {
                "answer": answer,
                "kind": exc.kind,
                "problems": [self.redactor.redact_text(p) for p in exc.problems],
            }
        return body

    def _is_recordable(self, exc: BaseException) -> bool:
        if not isinstance(exc, Exception):
            return False  # KeyboardInterrupt, cancellation, generator exit
        return isinstance(exc, StructuredOutputError) or bool(self.recordable(exc))

    def _raise_recorded(self, fixture: Fixture, path: str) -> None:
        error = fixture.error
        assert error is not None
        if error.type == "StructuredOutputError" and isinstance(error.data, dict):
            problems = error.data.get("problems")
            raise StructuredOutputError(
                str(error.data.get("kind", fixture.kind)),
                [str(p) for p in problems] if isinstance(problems, list) else [error.message],
                answer=_copy_json(error.data.get("answer")),
            )
        if self.rebuild_error is not None:
            raise self.rebuild_error(error)
        raise RecordedError(error.type, error.message, data=_copy_json(error.data), path=path)

    def _validator(self, schema: Mapping[str, Any]) -> Any:
        cache_key = json.dumps(schema, sort_keys=True, default=str)
        validator = self._validators.get(cache_key)
        if validator is None:
            import jsonschema  # only calls given a schema need it: a light import otherwise

            cls = jsonschema.validators.validator_for(schema)
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise UsageError(f"schema= is not a valid JSON Schema: {exc.message}") from None
            validator = cls(schema)
            self._validators[cache_key] = validator
        return validator

    def _schema_problems(self, schema: Mapping[str, Any] | None, answer: Any) -> list[str]:
        if schema is None:
            return []
        errors = sorted(self._validator(schema).iter_errors(answer),
                        key=lambda e: [str(p) for p in e.absolute_path])
        problems = []
        for error in errors:
            pointer = ""
            for token in error.absolute_path:
                pointer = pointer_join(pointer, token)
            message = self.redactor.redact_text(error.message)
            if len(message) > 200:
                message = message[:199] + "…"
            problems.append(f"{pointer or '(root)'}: {message}")
        return problems

    def _where(self, fixture: Fixture) -> str:
        return str(self.store.path_for(fixture.kind, fixture.key))

    def _answer_from(self, fixture: Fixture, schema: Mapping[str, Any] | None) -> Any:
        outcome = fixture.outcome
        if outcome == "error":
            self._raise_recorded(fixture, self._where(fixture))
        if outcome == "chunks":
            raise StaleFixtureError(self._where(fixture),
                                    "it holds a stream but the call wants one answer")
        answer = _copy_json(fixture.answer) if self.copy_answers else fixture.answer
        if schema is None:
            return answer
        problems = self._schema_problems(schema, answer)
        if problems:
            raise StaleFixtureError(self._where(fixture), "the answer breaks the current "
                                    "schema: " + "; ".join(problems))
        return answer

    def _chunks_from(self, fixture: Fixture) -> list[Any] | ChunkLines:
        outcome = fixture.outcome
        if outcome == "error":
            self._raise_recorded(fixture, self._where(fixture))
        if outcome == "answer":
            raise StaleFixtureError(self._where(fixture),
                                    "it holds one answer but the call wants a stream")
        chunks: Any = fixture.chunks  # (a list, or a replayed file's ChunkLines)
        if type(chunks) is ChunkLines:  # (parsed from its lines when read: a fresh copy)
            return chunks
        return cast(list[Any], _copy_json(chunks) if self.copy_answers else chunks)

    def _need_live(self, live: L | None) -> L:
        if live is None:
            raise UsageError(f"mode {self.mode!r} calls the live callee, but live is None; "
                             "pass a callable or use mode 'replay'")
        return live

    def _going_live(self, call: _Call, live: L | None) -> L:
        """A miss outside replay: the callee is needed, and volatile key material is named."""
        callee = self._need_live(live)
        self._warn_volatile(call)
        return callee

    def _after_answer(self, call: _Call, answer: Any, schema: Mapping[str, Any] | None) -> Any:
        data = answer_json(answer)
        problems = self._schema_problems(schema, data)
        if problems:
            exc = StructuredOutputError(call.kind, problems, answer=data)
            self._write(call, error=self._error_body(exc))
            raise exc
        if self.record_answer is not None and not self.record_answer(answer):
            return answer
        self._write(call, answer=self.redactor.redact(data))
        return answer

    def _after_failure(self, call: _Call, exc: BaseException) -> None:
        if self._is_recordable(exc):
            self._write(call, error=self._error_body(exc))

    # -- verify ----------------------------------------------------------------------

    def _verify_lookup(self, call: _Call) -> Fixture | None:
        """The recording a verified call is compared with; a miss is reported, never written."""
        fixture = self.store.get(call.kind, call.key)
        self._report("missing" if fixture is None else "replayed", call)
        if fixture is None:
            self._warn_volatile(call)
        return fixture

    def _describe(self, difference: Difference) -> str:
        recorded = _preview(difference.recorded, self.redactor)
        live = _preview(difference.live, self.redactor)
        if difference.what == "member added":
            return f"member added (live {live})"
        if difference.what == "member removed":
            return f"member removed (recorded {recorded})"
        if difference.recorded is None and difference.live is None:
            return difference.what
        return f"{difference.what}: recorded {recorded} -> live {live}"

    def _drift(self, call: _Call, differences: list[Difference]) -> None:
        if not differences:
            return
        error = DriftError(
            str(self.store.path_for(call.kind, call.key)), call.kind, call.key,
            [(shown_pointer(d.pointer, self.redactor), self._describe(d))
             for d in differences],
            how_to_record=self.how_to_rerecord,
        )
        if self.on_drift is None:
            raise error
        self.on_drift(error)

    def _verify_answer(self, call: _Call, fixture: Fixture | None, answer: Any,
                       schema: Mapping[str, Any] | None) -> Any:
        data = answer_json(answer)
        problems = self._schema_problems(schema, data)
        if fixture is not None:
            live = self.redactor.redact(data)
            differences: list[Difference] = []
            if fixture.outcome == "answer":
                differences = compare_answers(call.kind, fixture.answer, live,
                                              self.verify_rules)
                differences += [_schema_difference(p) for p in problems]
            elif fixture.outcome == "chunks":
                differences = [Difference("", "outcome stream -> answer", None, None)]
            elif not (problems and fixture.error is not None
                      and fixture.error.type == "StructuredOutputError"):
                recorded_type = fixture.error.type if fixture.error is not None else "error"
                differences = [Difference("", f"outcome error {recorded_type} -> answer",
                                          None, None)]
            self._drift(call, differences)
        if problems:
            raise StructuredOutputError(call.kind, problems, answer=data)
        return answer

    def _verify_failure(self, call: _Call, fixture: Fixture | None, exc: BaseException) -> None:
        """A live failure in verify: compared with the recording only when it is recordable."""
        if fixture is None or not self._is_recordable(exc):
            return
        live_type = _error_type_name(exc)
        if fixture.outcome != "error":
            self._drift(call, [Difference("", f"outcome {fixture.outcome} -> error {live_type}",
                                          None, None)])
        elif fixture.error is not None and fixture.error.type != live_type:
            self._drift(call, [Difference("/type", "error type", fixture.error.type,
                                          live_type)])

    def _verify_chunks(self, call: _Call, fixture: Fixture | None, collected: list[Any]) -> None:
        if fixture is None:
            return
        live = self.redactor.redact_stream(collected)
        if fixture.outcome == "chunks":
            differences = compare_streams(call.kind, fixture.chunks or [], live,
                                          self.verify_rules)
        else:
            differences = [Difference("", f"outcome {fixture.outcome} -> stream", None, None)]
        self._drift(call, differences)

    def _verify_stream(self, call: _Call, fixture: Fixture | None,
                       source: Iterable[Any]) -> Iterator[Any]:
        collected: list[Any] = []
        for chunk in source:
            collected.append(answer_json(chunk, pointer_join("", len(collected))))
            yield chunk
        self._verify_chunks(call, fixture, collected)

    async def _averify_stream(
        self,
        call: _Call,
        fixture: Fixture | None,
        live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]],
    ) -> AsyncIterator[Any]:
        try:
            source = await _open_async(live)
        except BaseException as exc:
            self._verify_failure(call, fixture, exc)
            raise
        collected: list[Any] = []
        async for chunk in source:
            collected.append(answer_json(chunk, pointer_join("", len(collected))))
            yield chunk
        self._verify_chunks(call, fixture, collected)

    # -- sync ------------------------------------------------------------------------

    @raised_at_entry
    def call(
        self,
        kind: str,
        request: Any,
        live: Callable[[], Any] | None,
        *,
        schema: Mapping[str, Any] | None = None,
        spec: KeySpec | None = None,
    ) -> Any:
        """The answer of a call: replayed, or from `live` (and recorded), per the mode."""
        if self.mode == "live":
            return self._need_live(live)()
        call = self._key(kind, request, spec)
        if self.mode == "verify":
            callee, recorded = self._need_live(live), self._verify_lookup(call)
            try:
                answer = callee()
            except BaseException as exc:
                self._verify_failure(call, recorded, exc)
                raise
            return self._verify_answer(call, recorded, answer, schema)
        fixture = self._lookup(call, live is not None)
        if fixture is not None:
            return self._answer_from(fixture, schema)
        live = self._going_live(call, live)
        try:
            answer = live()
        except BaseException as exc:
            self._after_failure(call, exc)
            raise
        return self._after_answer(call, answer, schema)

    @raised_at_entry
    def stream(
        self,
        kind: str,
        request: Any,
        live: Callable[[], Iterable[Any]] | None,
        *,
        spec: KeySpec | None = None,
    ) -> Iterator[Any]:
        """The chunks of a streamed call, replayed or passed through from `live` and recorded.

        The lookup happens now (a miss raises here); a live stream is written only
        once it has been read to its end, so an interrupted stream records nothing.
        """
        if self.mode == "live":
            return iter(self._need_live(live)())
        call = self._key(kind, request, spec)
        if self.mode == "verify":
            callee, recorded = self._need_live(live), self._verify_lookup(call)
            try:
                source = callee()
            except BaseException as exc:
                self._verify_failure(call, recorded, exc)
                raise
            return self._verify_stream(call, recorded, source)
        fixture = self._lookup(call, live is not None)
        if fixture is not None:
            return iter(self._chunks_from(fixture))
        live = self._going_live(call, live)
        try:
            source = live()
        except BaseException as exc:
            self._after_failure(call, exc)
            raise
        return self._record_stream(call, source)

    def _record_stream(self, call: _Call, source: Iterable[Any]) -> Iterator[Any]:
        collected: list[Any] = []
        for chunk in source:
            collected.append(answer_json(chunk, pointer_join("", len(collected))))
            yield chunk
        self._write(call, chunks=self.redactor.redact_stream(collected))

    # -- async -----------------------------------------------------------------------

    @raised_at_entry
    async def acall(
        self,
        kind: str,
        request: Any,
        live: Callable[[], Awaitable[Any]] | None,
        *,
        schema: Mapping[str, Any] | None = None,
        spec: KeySpec | None = None,
    ) -> Any:
        """Async twin of `call`: `live` returns an awaitable."""
        if self.mode == "live":
            return await self._need_live(live)()
        call = self._key(kind, request, spec)
        if self.mode == "verify":
            callee, recorded = self._need_live(live), self._verify_lookup(call)
            try:
                answer = await callee()
            except BaseException as exc:
                self._verify_failure(call, recorded, exc)
                raise
            return self._verify_answer(call, recorded, answer, schema)
        fixture = self._lookup(call, live is not None)
        if fixture is not None:
            return self._answer_from(fixture, schema)
        live = self._going_live(call, live)
        try:
            answer = await live()
        except BaseException as exc:
            self._after_failure(call, exc)
            raise
        return self._after_answer(call, answer, schema)

    @raised_at_entry
    def astream(
        self,
        kind: str,
        request: Any,
        live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]] | None,
        *,
        spec: KeySpec | None = None,
    ) -> AsyncIterator[Any]:
        """Async twin of `stream`: `live` returns an async iterable (or an awaitable of one)."""
        if self.mode == "live":
            return _passthrough(self._need_live(live))
        call = self._key(kind, request, spec)
        if self.mode == "verify":
            callee, recorded = self._need_live(live), self._verify_lookup(call)
            return self._averify_stream(call, recorded, callee)
        fixture = self._lookup(call, live is not None)
        if fixture is not None:
            chunks = self._chunks_from(fixture)
            if type(chunks) is ChunkLines:
                return iter(chunks)  # (async too: its lines stay unread until asked for)
            return _aiter_list(chunks)
        live = self._going_live(call, live)
        return self._arecord_stream(call, live)

    async def _arecord_stream(
        self,
        call: _Call,
        live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]],
    ) -> AsyncIterator[Any]:
        try:
            source = await _open_async(live)
        except BaseException as exc:
            self._after_failure(call, exc)
            raise
        collected: list[Any] = []
        async for chunk in source:
            collected.append(answer_json(chunk, pointer_join("", len(collected))))
            yield chunk
        self._write(call, chunks=self.redactor.redact_stream(collected))

    # -- surfaces --------------------------------------------------------------------

    def wrap(
        self,
        kind: str,
        *,
        stream: bool = False,
        schema: Mapping[str, Any] | None = None,
        decode: Callable[[Any], Any] | None = None,
    ) -> Callable[[F], F]:
        """Decorator over a model-client function; its bound arguments are the request.

        `def complete(messages, model, temperature=0)` is keyed on `{"messages": ...,
        "model": ..., "temperature": 0}` (through the model KeySpec). Sync and async
        functions both work; `stream=True` for functions that return an iterator.
        `decode` turns replayed JSON back into your type (e.g. `ChatCompletion.model_validate`).
        """
        def decorate(fn: F) -> F:
            return cast(F, _wrap_function(self, fn, kind, stream=stream, schema=schema,
                                          decode=decode, spec=None))

        return decorate

    def adapt(
        self,
        client: Any,
        methods: Mapping[str, str],
        *,
        streams: Mapping[str, str] | None = None,
        decode: Callable[[Any], Any] | None = None,
    ) -> ClientAdapter:
        """Wrap a client object: the named (possibly dotted) methods record and replay.

        `fixtures.adapt(client, {"chat.completions.create": "chat"})` returns an object
        whose `.chat.completions.create(**request)` goes through these fixtures; every
        other attribute is the client's. `client` may be None in replay.
        """
        return ClientAdapter(self, client, methods, streams=streams, decode=decode)


async def _open_async(
    live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]],
) -> AsyncIterable[Any]:
    result = live()
    if inspect.isawaitable(result):
        return await result
    return result


async def _passthrough(
    live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]],
) -> AsyncIterator[Any]:
    async for chunk in await _open_async(live):
        yield chunk


async def _aiter_list(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def _bound_request(fn: Callable[..., Any], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> dict[str, Any]:
    """A function's arguments as one mapping: positional by name, **kwargs flattened."""
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise UsageError(f"{fn.__qualname__}: {exc}") from None
    bound.apply_defaults()
    request: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        param = signature.parameters[name]
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            request.update(value)
        elif param.kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                request[name] = list(value)
        elif name not in {"self", "cls"}:
            request[name] = value
    return request


def _wrap_function(
    fixtures: ModelFixtures,
    fn: Callable[..., Any],
    kind: str,
    *,
    stream: bool,
    schema: Mapping[str, Any] | None,
    decode: Callable[[Any], Any] | None,
    spec: KeySpec | None,
) -> Callable[..., Any]:
    def finish(value: Any, replayed: bool) -> Any:
        return decode(value) if (decode is not None and replayed) else value

    is_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
    if not stream and not is_async:
        @functools.wraps(fn)
        def sync_call(*args: Any, **kwargs: Any) -> Any:
            request = _bound_request(fn, args, kwargs)
            marker: list[bool] = []

            def live() -> Any:
                marker.append(True)
                return fn(*args, **kwargs)

            result = fixtures.call(kind, request, live, schema=schema, spec=spec)
            return finish(result, replayed=not marker)

        return sync_call
    if not stream:
        @functools.wraps(fn)
        async def async_call(*args: Any, **kwargs: Any) -> Any:
            request = _bound_request(fn, args, kwargs)
            marker: list[bool] = []

            async def live() -> Any:
                marker.append(True)
                return await fn(*args, **kwargs)

            result = await fixtures.acall(kind, request, live, schema=schema, spec=spec)
            return finish(result, replayed=not marker)

        return async_call
    if not is_async:
        @functools.wraps(fn)
        def sync_stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
            request = _bound_request(fn, args, kwargs)
            marker: list[bool] = []

            def live() -> Iterable[Any]:
                marker.append(True)
                return cast(Iterable[Any], fn(*args, **kwargs))

            chunks = fixtures.stream(kind, request, live, spec=spec)
            return (finish(chunk, replayed=not marker) for chunk in chunks)

        return sync_stream

    @functools.wraps(fn)
    def async_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        request = _bound_request(fn, args, kwargs)
        marker: list[bool] = []

        def live() -> Any:
            marker.append(True)
            return fn(*args, **kwargs)

        chunks = fixtures.astream(kind, request, live, spec=spec)

        async def decoded() -> AsyncIterator[Any]:
            async for chunk in chunks:
                yield finish(chunk, replayed=not marker)

        return decoded()

    return async_stream


class ClientAdapter:
    """A client object whose chosen methods record and replay; the rest is the client's."""

    def __init__(
        self,
        fixtures: ModelFixtures,
        client: Any,
        methods: Mapping[str, str],
        *,
        streams: Mapping[str, str] | None = None,
        decode: Callable[[Any], Any] | None = None,
        _prefix: str = "",
    ) -> None:
        self._fixtures = fixtures
        self._client = client
        self._methods = dict(methods)
        self._streams = dict(streams or {})
        self._decode = decode
        self._prefix = _prefix

    def __repr__(self) -> str:
        return f"ClientAdapter({self._client!r}, {self._fixtures!r})"

    def __getattr__(self, name: str) -> Any:
        path = self._prefix + name
        client = self.__dict__["_client"]
        for table, stream in ((self._methods, False), (self._streams, True)):
            if path in table:
                target = getattr(client, name, None) if client is not None else None
                fn = target if target is not None else _offline(path)
                return _wrap_function(self._fixtures, _as_kwargs(fn), table[path],
                                      stream=stream, schema=None, decode=self._decode,
                                      spec=None)
        if any(m.startswith(path + ".") for m in (*self._methods, *self._streams)):
            inner = getattr(client, name) if client is not None else None
            return ClientAdapter(self._fixtures, inner, self._methods, streams=self._streams,
                                 decode=self._decode, _prefix=path + ".")
        if client is None:
            raise UsageError(f"{path}: the adapter has no client (replay); only "
                             f"{sorted({*self._methods, *self._streams})} are available")
        return getattr(client, name)


def _offline(path: str) -> Callable[..., Any]:
    def unavailable(**request: Any) -> Any:
        raise UsageError(f"{path}: no client to call in this mode; pass one to adapt()")

    return unavailable


def _as_kwargs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """SDK methods take keyword arguments; key them by name whatever their signature says."""
    if inspect.iscoroutinefunction(fn):
        async def acall(**request: Any) -> Any:
            return await fn(**request)

        return acall

    def call(**request: Any) -> Any:
        return fn(**request)

    return call


class ToolFixtures:
    """Record and replay of plain Python tool functions, keyed on tool name and arguments.

    Reads `REDACTKEY_MODE` (the model override does not apply to tools). Results go
    through the same redaction and file format as model calls; a replayed result keeps
    its placeholders, so a prompt built from it keys as it did when recorded.
    Files are `<tool>.<key>.json`; the kind is "tool:<tool>".
    """

    def __init__(
        self,
        store: FixtureStore,
        *,
        mode: str | None = None,
        redactor: StreamRedactor | None = None,
        recordable: Callable[[BaseException], bool] | None = None,
        report: CallLog | None = None,
        label: str | None = None,
        environ: Mapping[str, str] | None = None,
        verify: VerifyRules | None = None,
        on_drift: Callable[[DriftError], None] | None = None,
        max_age: str | timedelta | None = None,
        on_expiry: ExpiryAction = "warn",
        ages: FixtureAges | None = None,
        config: Config | None = None,
        answer_normalizers: Iterable[AnswerNormalizer] | None = None,
    ) -> None:
        self.fixtures = ModelFixtures(
            store, mode=mode, redactor=redactor, recordable=recordable, report=report,
            label=label, model=False, environ=environ, verify=verify, on_drift=on_drift,
            max_age=max_age, on_expiry=on_expiry, ages=ages,
            config=config, answer_normalizers=answer_normalizers,
        )

    @property
    def mode(self) -> Mode:
        return self.fixtures.mode

    def __repr__(self) -> str:
        return f"ToolFixtures({self.fixtures.store!r}, mode={self.mode!r})"

    @raised_at_entry
    def call(self, name: str, arguments: Mapping[str, Any], live: Callable[[], T] | None) -> Any:
        """The result of tool `name` with `arguments`: replayed, or from `live` and recorded."""
        return self.fixtures.call("tool:" + name, dict(arguments), live)

    @raised_at_entry
    async def acall(
        self, name: str, arguments: Mapping[str, Any], live: Callable[[], Awaitable[T]] | None
    ) -> Any:
        """Async twin of `call`."""
        return await self.fixtures.acall("tool:" + name, dict(arguments), live)

    @raised_at_entry
    def stream(
        self, name: str, arguments: Mapping[str, Any], live: Callable[[], Iterable[Any]] | None
    ) -> Iterator[Any]:
        """The chunks of streamed tool `name`: replayed, or passed through from `live` and
        recorded once the stream has been read to its end (like a model stream)."""
        return self.fixtures.stream("tool:" + name, dict(arguments), live)

    @raised_at_entry
    def astream(
        self,
        name: str,
        arguments: Mapping[str, Any],
        live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]] | None,
    ) -> AsyncIterator[Any]:
        """Async twin of `stream`: `live` returns an async iterable."""
        return self.fixtures.astream("tool:" + name, dict(arguments), live)

    def tool(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        decode: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Decorator: `@tools.tool` or `@tools.tool(name="search")` on a sync or async
        function, or on a generator or async-generator function (its chunks are recorded
        and replayed like a model stream's)."""
        def decorate(func: F) -> F:
            tool_name = name or func.__name__
            self.fixtures.store.path_for("tool:" + tool_name, "0" * 64)
            streams = inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func)
            return cast(F, _wrap_function(self.fixtures, func, "tool:" + tool_name,
                                          stream=streams, schema=None, decode=decode,
                                          spec=None))

        if fn is not None:
            return decorate(fn)
        return decorate
