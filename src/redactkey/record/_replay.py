"""Record and replay of model calls and tool calls (thin layers over a fixture store).

Every call goes the same way in every mode (`redactkey.record._modes`): key it
(`_keying`), look its outcome up in the store (`_lookup`), and either decode the
recorded outcome or call `live` and encode what it gives (`_codec`); verify mode
compares instead of writing (`_verifying`).

Only the callee's own failures are written (`StructuredOutputError`, plus what a
`recordable` predicate accepts); anything else `live` raises propagates and
nothing is written. `ModelFixtures`' options are in docs/modes.md ("Options").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from datetime import timedelta
from functools import cached_property
from typing import Any, TypeVar, cast

from .._errors import (
    DriftError,
    DummySecretWarning,
    StructuredOutputError,
    UsageError,
    raised_at_entry,
    warn_at_caller,
)
from ..fixtures._age import EXPIRY_ACTIONS, ExpiryAction, FixtureAges, parse_duration
from ..fixtures._answers import AnswerNormalizer
from ..fixtures._format import ChunkLines, Fixture, RecordedErrorBody
from ..fixtures._store import FixtureStore
from ..fixtures._verify import VerifyRules
from ..keys._keys import KeySpec
from ..redact._redactor import Redactor
from ..secrets._run_secrets import RunSecrets
from ._codec import (
    ALive,
    AnswerCodec,
    StreamRedactor,
    acollecting,
    answer_json,
    collecting,
    open_async,
)
from ._config import Config, load_config
from ._keying import Call, Keying
from ._lookup import CallLog, StoreLookup
from ._modes import MODE_ENV, Mode, settled_mode
from ._modes import how_to_record as advice
from ._surfaces import ClientAdapter, wrap_function
from ._verifying import Verifier

__all__ = ["ModelFixtures"]

L = TypeVar("L", bound=Callable[..., Any])
F = TypeVar("F", bound=Callable[..., Any])


def _default_redactor(mode: Mode) -> StreamRedactor:
    # Safe by default: the secret-looking variables of this environment, sensitive
    # keys and detectors. Pass a Redactor built with collect_run_secrets for the rest.
    # A stand-in key (`OPENAI_API_KEY=dummy`) is skipped with a warning unless this
    # layer records, where a short value is refused as everywhere else.
    secrets = RunSecrets.from_env(skip_short=mode not in ("record", "auto"))
    for slot, reason in secrets.dummies.items():
        warn_at_caller(DummySecretWarning(slot, reason))
    return Redactor(secrets)


class ModelFixtures:
    """Record and replay of calls through a fixture store (docs/modes.md).

    `live` is a zero-argument callable (None is allowed in replay); answers and chunks
    are any JSON data (pydantic models are dumped). `mode=None` reads ``REDACTKEY_MODE``
    (and ``REDACTKEY_MODEL_MODE`` unless ``model=False``), default "replay". Keys follow
    `config` (default: the nearest `[tool.redactkey]`, as `redact key` reads it), or
    `spec` for every call.
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
        self.mode, source = settled_mode(mode, model=model, environ=environ)
        if on_expiry not in EXPIRY_ACTIONS:
            raise UsageError(f"on_expiry={on_expiry!r}: use one of {', '.join(EXPIRY_ACTIONS)}")
        self.config = config if config is not None else load_config()
        self.redactor = redactor if redactor is not None else _default_redactor(self.mode)
        self.keying = Keying(self.redactor, self.config, spec, self.mode != "replay")
        self.lookup = StoreLookup(
            store, self.mode, self.redactor,
            (self.config.answers.normalizers() if answer_normalizers is None
             else tuple(answer_normalizers)),
            report, label, how_to_record or advice(source, model=model),
            how_to_rerecord or ("pass mode='record' for this call" if source == "argument"
                                else f"set {MODE_ENV}=record for this test and run it again"),
            parse_duration(max_age) if max_age is not None else None, on_expiry, ages,
        )
        self.codec = AnswerCodec(self.redactor, copy_answers, rebuild_error, recordable)
        self._verify = verify, on_drift
        self.record_answer = record_answer

    def __repr__(self) -> str:
        return f"ModelFixtures({self.store!r}, mode={self.mode!r})"

    @cached_property
    def verifier(self) -> Verifier:
        """What verify mode compares with (built on its first use)."""
        rules, on_drift = self._verify
        return Verifier(self.lookup, self.codec, rules if rules is not None else VerifyRules(),
                        on_drift)

    @property
    def store(self) -> FixtureStore:
        return self.lookup.store

    @property
    def label(self) -> str | None:
        return self.lookup.label

    def key(self, kind: str, request: Any, spec: KeySpec | None = None) -> Call:
        """`request` keyed as every call keys it, for the `*_keyed` methods (a caller that
        looks first keys once); in live mode nothing is keyed (the call is empty)."""
        if self.mode == "live":
            return Call(kind, {}, "")
        return self.keying.key(kind, request, spec)

    def replayed(self, call: Call) -> Fixture | None:
        """What replay reads for `call` (kept on it: the call that follows reads nothing)."""
        return self.lookup.replayed(call)

    def recorded(self, kind: str, request: Any, *, spec: KeySpec | None = None) -> Fixture | None:
        """The fixture stored for `request` (read whole), or None."""
        call = self.key(kind, request, spec)
        return self.store.get(call.kind, call.key)

    # -- steps ---------------------------------------------------------------------

    def _need_live(self, live: L | None) -> L:
        if live is None:
            raise UsageError(f"mode {self.mode!r} calls the live callee, but live is None; "
                             "pass a callable or use mode 'replay'")
        return live

    def _callee(self, call: Call, live: L | None) -> tuple[Fixture | None, L]:
        """The recording verify compares a live call with (None outside verify, where a
        miss names volatile key material instead), and the callee, which is needed."""
        callee = self._need_live(live)
        if self.mode == "verify":
            return self.lookup.for_verify(call), callee
        self.lookup.warn_volatile(call)
        return None, callee

    def _failed(self, call: Call, recorded: Fixture | None, exc: BaseException) -> None:
        if self.mode == "verify":
            self.verifier.failure(call, recorded, exc, self.codec.recordable(exc))
        elif self.codec.recordable(exc):
            self.lookup.write(call, error=self.codec.error_body(exc))

    def _answered(self, call: Call, recorded: Fixture | None, answer: Any,
                  schema: Mapping[str, Any] | None) -> Any:
        if self.mode == "verify":
            return self.verifier.answer(call, recorded, answer, schema)
        data = answer_json(answer)
        problems = self.codec.schema_problems(schema, data)
        if problems:
            exc = StructuredOutputError(call.kind, problems, answer=data)
            self.lookup.write(call, error=self.codec.error_body(exc))
            raise exc
        if self.record_answer is None or self.record_answer(answer):
            self.lookup.write(call, answer=self.redactor.redact(data))
        return answer

    def _answer(self, fixture: Fixture, schema: Mapping[str, Any] | None) -> Any:
        return self.codec.answer(fixture, lambda: self.lookup.where(fixture.kind, fixture.key),
                                 schema)

    def _chunks(self, fixture: Fixture) -> list[Any] | ChunkLines:
        return self.codec.chunks(fixture, lambda: self.lookup.where(fixture.kind, fixture.key))

    def _collected(self, call: Call, recorded: Fixture | None, collected: list[Any]) -> None:
        if self.mode == "verify":
            self.verifier.chunks(call, recorded, collected)
        else:
            self.lookup.write(call, chunks=self.redactor.redact_stream(collected))

    # -- sync ------------------------------------------------------------------------

    @raised_at_entry
    def call(self, kind: str, request: Any, live: Callable[[], Any] | None, *,
             schema: Mapping[str, Any] | None = None, spec: KeySpec | None = None) -> Any:
        """The answer of a call: replayed, or from `live` (and recorded), per the mode."""
        return self.call_keyed(self.key(kind, request, spec), live, schema=schema)

    def call_keyed(self, call: Call, live: Callable[[], Any] | None, *,
                   schema: Mapping[str, Any] | None = None) -> Any:
        """`call` of a request keyed already (`key`)."""
        if self.mode == "live":
            return self._need_live(live)()
        if self.mode != "verify":
            fixture = self.lookup.find(call, live is not None)
            if fixture is not None:
                return self._answer(fixture, schema)
        recorded, callee = self._callee(call, live)
        try:
            answer = callee()
        except BaseException as exc:
            self._failed(call, recorded, exc)
            raise
        return self._answered(call, recorded, answer, schema)

    @raised_at_entry
    def stream(self, kind: str, request: Any, live: Callable[[], Iterable[Any]] | None, *,
               spec: KeySpec | None = None) -> Iterator[Any]:
        """The chunks of a streamed call, replayed or passed through from `live` and recorded.

        The lookup happens now (a miss raises here); a live stream is written only
        once it has been read to its end, so an interrupted stream records nothing.
        """
        return self.stream_keyed(self.key(kind, request, spec), live)

    def stream_keyed(self, call: Call, live: Callable[[], Iterable[Any]] | None) -> Iterator[Any]:
        """`stream` of a request keyed already (`key`)."""
        if self.mode == "live":
            return iter(self._need_live(live)())
        if self.mode != "verify":
            fixture = self.lookup.find(call, live is not None)
            if fixture is not None:
                return iter(self._chunks(fixture))
        recorded, callee = self._callee(call, live)
        try:
            source = callee()
        except BaseException as exc:
            self._failed(call, recorded, exc)
            raise
        return collecting(source, lambda chunks: self._collected(call, recorded, chunks))

    # -- async -----------------------------------------------------------------------

    @raised_at_entry
    async def acall(self, kind: str, request: Any, live: Callable[[], Awaitable[Any]] | None,
                    *, schema: Mapping[str, Any] | None = None,
                    spec: KeySpec | None = None) -> Any:
        """Async twin of `call`: `live` returns an awaitable."""
        return await self.acall_keyed(self.key(kind, request, spec), live, schema=schema)

    async def acall_keyed(self, call: Call, live: Callable[[], Awaitable[Any]] | None, *,
                          schema: Mapping[str, Any] | None = None) -> Any:
        """Async twin of `call_keyed`."""
        if self.mode == "live":
            return await self._need_live(live)()
        if self.mode != "verify":
            fixture = self.lookup.find(call, live is not None)
            if fixture is not None:
                return self._answer(fixture, schema)
        recorded, callee = self._callee(call, live)
        try:
            answer = await callee()
        except BaseException as exc:
            self._failed(call, recorded, exc)
            raise
        return self._answered(call, recorded, answer, schema)

    @raised_at_entry
    def astream(self, kind: str, request: Any, live: ALive | None, *,
                spec: KeySpec | None = None) -> AsyncIterator[Any]:
        """Async twin of `stream`: `live` returns an async iterable (or an awaitable of one)."""
        return self.astream_keyed(self.key(kind, request, spec), live)

    def astream_keyed(self, call: Call, live: ALive | None) -> AsyncIterator[Any]:
        """Async twin of `stream_keyed`."""
        if self.mode == "live":
            return _passthrough(self._need_live(live))
        if self.mode != "verify":
            fixture = self.lookup.find(call, live is not None)
            if fixture is not None:
                chunks = self._chunks(fixture)
                if isinstance(chunks, ChunkLines):
                    return iter(chunks)  # (async too: its lines stay unread until asked for)
                return _aiter_list(chunks)
        recorded, callee = self._callee(call, live)
        return acollecting(callee, lambda exc: self._failed(call, recorded, exc),
                           lambda chunks: self._collected(call, recorded, chunks))

    # -- surfaces --------------------------------------------------------------------

    def wrap(self, kind: str, *, stream: bool = False, schema: Mapping[str, Any] | None = None,
             decode: Callable[[Any], Any] | None = None) -> Callable[[F], F]:
        """Decorator over a model-client function; its bound arguments are the request.

        `def complete(messages, model, temperature=0)` is keyed on `{"messages": ...,
        "model": ..., "temperature": 0}` (through the model KeySpec). Sync and async
        functions both work; `stream=True` for functions that return an iterator.
        `decode` turns replayed JSON back into your type (e.g. `ChatCompletion.model_validate`).
        """
        def decorate(fn: F) -> F:
            return cast(F, wrap_function(self, fn, kind, stream=stream, schema=schema,
                                         decode=decode))

        return decorate

    def adapt(self, client: Any, methods: Mapping[str, str], *,
              streams: Mapping[str, str] | None = None,
              decode: Callable[[Any], Any] | None = None) -> ClientAdapter:
        """Wrap a client object: the named (possibly dotted) methods record and replay.

        `fixtures.adapt(client, {"chat.completions.create": "chat"})` returns an object
        whose `.chat.completions.create(**request)` goes through these fixtures; every
        other attribute is the client's. `client` may be None in replay.
        """
        return ClientAdapter(self, client, methods, streams=streams, decode=decode)


async def _passthrough(live: ALive) -> AsyncIterator[Any]:
    async for chunk in await open_async(live):
        yield chunk


async def _aiter_list(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item
