"""The answer codec: a live outcome as fixture data, and a fixture's outcome back.

A live answer or chunk becomes plain JSON data (`answer_json`); a failure the callee
owns becomes an error body (`error_body`). Back from a fixture: the answer (checked
against the caller's schema), the chunks, or the recorded failure raised again.
"""

from __future__ import annotations

import enum
import inspect
import json
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from functools import reduce
from typing import Any, Protocol, cast

from .._errors import RecordedError, StaleFixtureError, StructuredOutputError, UsageError
from ..fixtures._format import ChunkLines, Fixture, RecordedErrorBody
from ..keys._canonical import pointer_join, to_json

__all__ = ["ALive", "AnswerCodec", "StreamRedactor", "acollecting", "answer_json", "collecting",
           "copy_json", "error_type_name", "open_async"]

ALive = Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]]

_PROBLEM_CHARS = 200


class StreamRedactor(Protocol):
    """What the record layer needs of a redactor (`redactkey.Redactor` has all of it)."""

    def redact(self, value: Any) -> Any: ...

    def redact_stream(self, chunks: list[Any]) -> list[Any]: ...

    def redact_text(self, text: str) -> str: ...

    def learn(self, request: Any) -> int:
        """Take the credentials the request sends by name into the run's secrets."""
        ...


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


def collecting(source: Iterable[Any], done: Callable[[list[Any]], None]) -> Iterator[Any]:
    """The chunks of `source` passed on; once it is read to its end, `done` gets them all
    as JSON data (an interrupted stream gives nothing)."""
    collected: list[Any] = []
    for chunk in source:
        collected.append(answer_json(chunk, pointer_join("", len(collected))))
        yield chunk
    done(collected)


async def open_async(live: ALive) -> AsyncIterable[Any]:
    """The async iterable `live` gives (it may return one, or an awaitable of one)."""
    result = live()
    if inspect.isawaitable(result):
        return await result
    return result


async def acollecting(live: ALive, failed: Callable[[BaseException], None],
                      done: Callable[[list[Any]], None]) -> AsyncIterator[Any]:
    """Async twin of `collecting`, opening `live` itself (a failure to open goes to
    `failed` before it propagates)."""
    try:
        source = await open_async(live)
    except BaseException as exc:
        failed(exc)
        raise
    collected: list[Any] = []
    async for chunk in source:
        collected.append(answer_json(chunk, pointer_join("", len(collected))))
        yield chunk
    done(collected)


def copy_json(value: Any) -> Any:
    """A fresh copy of a fixture's JSON data (fixtures are frozen; callers may change theirs)."""
    if isinstance(value, dict):
        return {name: copy_json(item) for name, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def error_type_name(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ in {"builtins", "redactkey._errors"}:
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class AnswerCodec:
    """Encodes live outcomes for a fixture and decodes a fixture's outcome for the caller.

    `copy` hands out copies of stored data (False: the stored data itself, for a caller
    that only reads it); `rebuild_error(body)` turns a recorded failure back into the
    caller's own exception; `is_recordable(exc)` says which other failures of the callee
    are its own and deterministic, so recorded.
    """

    def __init__(
        self,
        redactor: StreamRedactor,
        copy: bool = True,
        rebuild_error: Callable[[RecordedErrorBody], BaseException] | None = None,
        is_recordable: Callable[[BaseException], bool] | None = None,
    ) -> None:
        self.redactor = redactor
        self.copy = copy
        self.rebuild_error = rebuild_error
        self.is_recordable = is_recordable
        self._validators: dict[str, Any] = {}

    def recordable(self, exc: BaseException) -> bool:
        """Whether a failure of the callee is written: a `StructuredOutputError`, or what
        `is_recordable` accepts (never an interrupt, a cancellation or a generator exit)."""
        if not isinstance(exc, Exception):
            return False
        return isinstance(exc, StructuredOutputError) or (
            self.is_recordable is not None and bool(self.is_recordable(exc)))

    # -- live outcomes, for a fixture ------------------------------------------------

    def error_body(self, exc: BaseException) -> dict[str, Any]:
        """A failure of the callee as a fixture's error body, redacted."""
        redact_text = self.redactor.redact_text
        body: dict[str, Any] = {"type": error_type_name(exc), "message": redact_text(str(exc))}
        if isinstance(exc, StructuredOutputError):
            try:
                answer = self.redactor.redact(answer_json(exc.answer))
            except (ValueError, TypeError):
                answer = None
            body["data"] = {"answer": answer, "kind": exc.kind,
                            "problems": [redact_text(p) for p in exc.problems]}
        return body

    def schema_problems(self, schema: Mapping[str, Any] | None, answer: Any) -> list[str]:
        """Where `answer` breaks `schema` ("/pointer: message"); none without a schema."""
        if schema is None:
            return []
        errors = sorted(self._validator(schema).iter_errors(answer),
                        key=lambda e: [str(p) for p in e.absolute_path])
        problems = []
        for error in errors:
            pointer = reduce(pointer_join, error.absolute_path, "")
            message = self.redactor.redact_text(error.message)
            if len(message) > _PROBLEM_CHARS:
                message = message[: _PROBLEM_CHARS - 1] + "…"
            problems.append(f"{pointer or '(root)'}: {message}")
        return problems

    def _validator(self, schema: Mapping[str, Any]) -> Any:
        cache_key = json.dumps(schema, sort_keys=True, default=str)
        validator = self._validators.get(cache_key)
        if validator is None:
            import jsonschema  # only calls given a schema need it

            cls = jsonschema.validators.validator_for(schema)
            try:
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise UsageError(f"schema= is not a valid JSON Schema: {exc.message}") from None
            validator = self._validators[cache_key] = cls(schema)
        return validator

    # -- a fixture's outcome, for the caller -------------------------------------------

    def answer(self, fixture: Fixture, where: Callable[[], str],
               schema: Mapping[str, Any] | None = None) -> Any:
        """The recorded answer (raising a recorded failure), checked against `schema`;
        `where` names the fixture's file, for an error."""
        outcome = fixture.outcome
        if outcome == "error":
            raise self.recorded_error(fixture, where())
        if outcome == "chunks":
            raise StaleFixtureError(where(), "it holds a stream but the call wants one answer")
        answer = copy_json(fixture.answer) if self.copy else fixture.answer
        if schema is None:
            return answer
        problems = self.schema_problems(schema, answer)
        if problems:
            raise StaleFixtureError(where(), "the answer breaks the current schema: "
                                    + "; ".join(problems))
        return answer

    def chunks(self, fixture: Fixture, where: Callable[[], str]) -> list[Any] | ChunkLines:
        """The recorded chunks (raising a recorded failure)."""
        outcome = fixture.outcome
        if outcome == "error":
            raise self.recorded_error(fixture, where())
        if outcome == "answer":
            raise StaleFixtureError(where(), "it holds one answer but the call wants a stream")
        chunks: Any = fixture.chunks  # (a list, or a replayed file's ChunkLines)
        if isinstance(chunks, ChunkLines):  # parsed from its lines when read: a fresh copy
            return chunks
        return cast(list[Any], copy_json(chunks) if self.copy else chunks)

    def recorded_error(self, fixture: Fixture, where: str) -> BaseException:
        """The exception a recorded failure is raised as again."""
        error = fixture.error
        assert error is not None
        if error.type == "StructuredOutputError" and isinstance(error.data, dict):
            problems = error.data.get("problems")
            return StructuredOutputError(
                str(error.data.get("kind", fixture.kind)),
                [str(p) for p in problems] if isinstance(problems, list) else [error.message],
                answer=copy_json(error.data.get("answer")),
            )
        if self.rebuild_error is not None:
            return self.rebuild_error(error)
        return RecordedError(error.type, error.message, data=copy_json(error.data), path=where)
