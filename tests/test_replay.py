from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from redactkey import (
    ConfigError,
    FixtureDir,
    FixtureFormatError,
    MissingFixtureError,
    RecordedError,
    StaleFixtureError,
    StructuredOutputError,
    UsageError,
    VolatileValueWarning,
)
from redactkey._errors import RedactkeyError
from redactkey.fixtures._format import RecordedErrorBody
from redactkey.record._modes import settled_mode
from redactkey.record._replay import ModelFixtures
from redactkey.record._tools import ToolFixtures

SECRET = "sk-proj-" + "A1b2" * 12


class FakeRedactor:
    """Stands in for Redactor: replaces known values, nothing else."""

    def __init__(self, *values: str) -> None:
        self.values = values or (SECRET,)

    def redact_text(self, text: str) -> str:
        for value in self.values:
            text = text.replace(value, "[REDACTED]")
        return text

    def redact(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {k: self.redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v) for v in value]
        return value

    def redact_stream(self, chunks: list[Any]) -> list[Any]:
        return [self.redact(c) for c in chunks]

    def learn(self, request: Any) -> int:
        return 0


def fixtures(path: Path, mode: str, **kwargs: Any) -> ModelFixtures:
    kwargs.setdefault("redactor", FakeRedactor())
    return ModelFixtures(FixtureDir(path), mode=mode, **kwargs)


class Live:
    """A live callee that counts its calls."""

    def __init__(self, answer: Any = None, *, chunks: list[Any] | None = None,
                 error: BaseException | None = None) -> None:
        self.answer = answer
        self.chunks = chunks
        self.error = error
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if self.error is not None:
            raise self.error
        if self.chunks is not None:
            return iter(list(self.chunks))
        return self.answer


def never() -> Any:
    raise AssertionError("replay called the live callee")


REQUEST = {"model": "m-1", "messages": [{"role": "user", "content": "Summarise the report"}],
           "temperature": 0}


class TestResolveMode:
    """Mode selection from the argument and the environment."""

    @pytest.mark.parametrize(
        ("mode", "model", "environ", "expected"),
        [
            (None, False, {}, "replay"),
            (None, True, {}, "replay"),
            ("auto", False, {"REDACTKEY_MODE": "record"}, "auto"),
            (None, False, {"REDACTKEY_MODE": "record"}, "record"),
            (None, False, {"REDACTKEY_MODE": " Auto "}, "auto"),
            (None, True, {"REDACTKEY_MODE": "replay", "REDACTKEY_MODEL_MODE": "live"}, "live"),
            (None, False, {"REDACTKEY_MODE": "replay", "REDACTKEY_MODEL_MODE": "live"},
             "replay"),
            (None, True, {"REDACTKEY_MODE": "record"}, "record"),
            (None, True, {"REDACTKEY_MODE": "auto", "REDACTKEY_MODEL_MODE": ""}, "auto"),
        ],
    )
    def test_resolution(self, mode: str | None, model: bool, environ: dict[str, str],
                        expected: str) -> None:
        """Argument, then the model override (model calls only), then REDACTKEY_MODE."""
        assert settled_mode(mode, model=model, environ=environ)[0] == expected

    def test_bad_environment_value(self) -> None:
        """A bad variable is a ConfigError naming it and the valid modes."""
        with pytest.raises(ConfigError, match=r"REDACTKEY_MODEL_MODE.*'relpay'.*live, record"):
            settled_mode(None, model=True, environ={"REDACTKEY_MODEL_MODE": "relpay"})

    def test_bad_argument(self) -> None:
        """A bad argument is a UsageError."""
        with pytest.raises(UsageError, match="'offline' is not a mode"):
            settled_mode("offline", model=False)

    def test_fixtures_read_environment(self, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
        """mode=None reads REDACTKEY_MODE; tools ignore the model override."""
        monkeypatch.setenv("REDACTKEY_MODE", "auto")
        monkeypatch.setenv("REDACTKEY_MODEL_MODE", "live")
        store = FixtureDir(tmp_path)
        assert ModelFixtures(store, redactor=FakeRedactor()).mode == "live"
        assert ToolFixtures(store, redactor=FakeRedactor()).mode == "auto"


class TestModes:
    """A round trip in each mode."""

    def test_record_then_replay(self, tmp_path: Path) -> None:
        """record calls live and writes; replay answers from the file without live."""
        live = Live({"text": "A summary."})
        assert fixtures(tmp_path, "record").call("text", REQUEST, live) == {"text": "A summary."}
        assert live.calls == 1
        [path] = tmp_path.iterdir()
        assert path.name.startswith("@model.text.")
        assert fixtures(tmp_path, "replay").call("text", REQUEST, None) == {"text": "A summary."}
        assert fixtures(tmp_path, "replay").call("text", REQUEST, never) == {"text": "A summary."}

    def test_auto_records_once(self, tmp_path: Path) -> None:
        """auto records on a miss and replays on a hit, across instances."""
        live = Live("answer")
        for _ in range(3):
            assert fixtures(tmp_path, "auto").call("text", REQUEST, live) == "answer"
        assert live.calls == 1
        assert len(list(tmp_path.iterdir())) == 1

    def test_live_touches_nothing(self, tmp_path: Path) -> None:
        """live always calls and never reads or writes the store."""
        fixtures(tmp_path, "record").call("text", REQUEST, Live("old"))
        before = {p: p.read_bytes() for p in tmp_path.iterdir()}
        live = Live("new")
        assert fixtures(tmp_path, "live").call("text", REQUEST, live) == "new"
        assert fixtures(tmp_path, "live").call("text", {**REQUEST, "x": 1}, live) == "new"
        assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before

    def test_record_replaces(self, tmp_path: Path) -> None:
        """record in a new run calls live again and replaces the answer."""
        fixtures(tmp_path, "record").call("text", REQUEST, Live("old"))
        fixtures(tmp_path, "record").call("text", REQUEST, Live("new"))
        assert fixtures(tmp_path, "replay").call("text", REQUEST, None) == "new"

    def test_rerecording_is_byte_stable(self, tmp_path: Path) -> None:
        """Recording the same call and answer again leaves every byte as it was."""
        answer = {"b": [1, 2.5, None], "a": "é ü", "c": {"z": 1, "y": True}}
        fixtures(tmp_path, "record").call("text", REQUEST, Live(answer))
        [path] = tmp_path.iterdir()
        before = path.read_bytes()
        shuffled = dict(reversed(list(REQUEST.items())))
        fixtures(tmp_path, "record").call("text", shuffled, Live(dict(reversed(answer.items()))))
        assert path.read_bytes() == before

    def test_answers_keep_big_ints_and_dump_models(self, tmp_path: Path) -> None:
        """64-bit ids survive, pydantic answers are stored as JSON, NaN is refused by pointer."""
        from pydantic import BaseModel

        from redactkey import CanonicalizationError

        class Answer(BaseModel):
            id: int
            text: str

        live = Answer(id=2**63 - 1, text="t")
        assert fixtures(tmp_path, "record").call("text", REQUEST, lambda: live) is live
        assert fixtures(tmp_path, "replay").call("text", REQUEST, None) == {
            "id": 2**63 - 1, "text": "t"}
        with pytest.raises(CanonicalizationError, match="/a/0"):
            fixtures(tmp_path, "record").call("chat", REQUEST, lambda: {"a": [float("nan")]})

    def test_record_needs_live(self, tmp_path: Path) -> None:
        """record with live=None is a UsageError, not a silent miss."""
        with pytest.raises(UsageError, match="live is None"):
            fixtures(tmp_path, "record").call("text", REQUEST, None)

    def test_secrets_never_written(self, tmp_path: Path) -> None:
        """Request and answer are redacted before writing; the live answer is returned."""
        request = {**REQUEST, "messages": [{"role": "user", "content": f"key {SECRET}"}]}
        assert fixtures(tmp_path, "record").call("text", request, Live(f"got {SECRET}")) == (
            f"got {SECRET}"
        )
        [path] = tmp_path.iterdir()
        assert SECRET not in path.read_text()
        assert fixtures(tmp_path, "replay").call("text", request, None) == "got [REDACTED]"

    def test_bad_kind_refused(self, tmp_path: Path) -> None:
        """A path-escaping kind is refused before anything is called or written."""
        live = Live("x")
        for mode in ("record", "replay", "auto"):
            with pytest.raises(UsageError):
                fixtures(tmp_path, mode).call("../../etc", REQUEST, live)
        assert live.calls == 0
        assert list(tmp_path.iterdir()) == []

    def test_corrupt_fixture_is_not_a_miss(self, tmp_path: Path) -> None:
        """A corrupt file for the call raises FixtureFormatError in replay and auto."""
        fixtures(tmp_path, "record").call("text", REQUEST, Live("x"))
        [path] = tmp_path.iterdir()
        path.write_text("{")
        for mode in ("replay", "auto", "record"):
            with pytest.raises(FixtureFormatError, match=path.name):
                fixtures(tmp_path, mode).call("text", REQUEST, Live("y"))
        assert path.read_text() == "{"


class TestRepeatedCalls:
    """Identical calls: one answer per key."""

    def test_record_run_repeats_replay_first_answer(self, tmp_path: Path) -> None:
        """In one record run a repeated call replays what its first occurrence recorded."""
        answers = iter(["first", "second"])
        calls = fixtures(tmp_path, "record")
        assert calls.call("text", REQUEST, lambda: next(answers)) == "first"
        assert calls.call("text", REQUEST, lambda: next(answers)) == "first"
        assert fixtures(tmp_path, "replay").call("text", REQUEST, None) == "first"

    def test_replay_repeats_same_answer(self, tmp_path: Path) -> None:
        """Replay answers every repetition with the same recorded answer."""
        fixtures(tmp_path, "record").call("text", REQUEST, Live(["a"]))
        replay = fixtures(tmp_path, "replay")
        first = replay.call("text", REQUEST, None)
        first.append("mutated")
        assert replay.call("text", REQUEST, None) == ["a"]


class TestMiss:
    """The content of MissingFixtureError."""

    def test_names_call_and_nearest_with_diff(self, tmp_path: Path) -> None:
        """The miss names kind, key, store, nearest file, changed pointers and the setting."""
        long_prompt = "Summarise the quarterly report for the board " * 3
        fixtures(tmp_path, "record").call(
            "text", {**REQUEST, "messages": [{"role": "user", "content": long_prompt}]}, Live(1))
        fixtures(tmp_path, "record").call("chat", REQUEST, Live(2))
        fixtures(tmp_path, "record").call("text", {"model": "other", "prompt": "x"}, Live(3))
        wanted = {**REQUEST, "messages": [{"role": "user", "content": "Summarize it"}],
                  "temperature": 0.5}
        with pytest.raises(MissingFixtureError) as info:
            ModelFixtures(FixtureDir(tmp_path), redactor=FakeRedactor(), environ={}).call(
                "text", wanted, never)
        err = info.value
        message = str(err)
        assert err.kind == "text"
        assert len(err.key) == 64
        assert err.key in message
        assert str(tmp_path) in message
        assert err.nearest is not None
        assert Path(err.nearest).name.startswith("@model.text.")
        assert "/request/messages/0/content" in message
        assert "/request/temperature: 0 -> 0.5" in message
        assert "…" in message  # the long recorded prompt is shortened
        assert long_prompt not in message
        assert "REDACTKEY_MODE=auto" in message
        assert "REDACTKEY_MODEL_MODE" in message

    def test_nearest_is_same_kind_only(self, tmp_path: Path) -> None:
        """With no call of the kind recorded, the message says so."""
        fixtures(tmp_path, "record").call("chat", REQUEST, Live(2))
        with pytest.raises(MissingFixtureError, match="no 'text' call is recorded") as info:
            fixtures(tmp_path, "replay").call("text", REQUEST, never)
        assert info.value.nearest is None

    def test_secret_in_diff_is_masked(self, tmp_path: Path) -> None:
        """Diff values pass through the redactor: a secret never reaches the message."""
        fixtures(tmp_path, "record").call("text", {**REQUEST, "model": "a"}, Live(1))
        redactor = FakeRedactor(SECRET)
        with pytest.raises(MissingFixtureError) as info:
            ModelFixtures(FixtureDir(tmp_path), mode="replay", redactor=redactor).call(
                "text", {**REQUEST, "model": SECRET}, never)
        assert SECRET not in str(info.value)
        assert "/request/model" in str(info.value)

    def test_explicit_mode_says_how(self, tmp_path: Path) -> None:
        """A mode passed as an argument is fixed by the argument, and the message says so."""
        with pytest.raises(MissingFixtureError, match="pass mode='auto'"):
            fixtures(tmp_path, "replay").call("text", REQUEST, never)

    def test_corrupt_neighbour_does_not_hide_the_miss(self, tmp_path: Path) -> None:
        """A broken file of the same kind is skipped when searching for the nearest call."""
        fixtures(tmp_path, "record").call("text", {**REQUEST, "model": "a"}, Live(1))
        (tmp_path / ("@model.text." + "0" * 64 + ".json")).write_text("{")
        with pytest.raises(MissingFixtureError) as info:
            fixtures(tmp_path, "replay").call("text", REQUEST, never)
        assert info.value.nearest is not None

    def test_volatile_value_warned_by_pointer(self, tmp_path: Path) -> None:
        """A UUID in key material is a warning naming its pointer when recording."""
        request = {**REQUEST, "messages": [
            {"role": "user", "content": "id 123e4567-e89b-12d3-a456-426614174000"}]}
        with pytest.warns(VolatileValueWarning, match="/request/messages/0/content.*UUID"):
            fixtures(tmp_path, "record").call("text", request, Live(1))


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


class TestStructuredOutput:
    """The model's own failures are recorded and retraced; the environment's are not."""

    def test_schema_breaking_answer_recorded_and_retraced(self, tmp_path: Path) -> None:
        """A record run raises StructuredOutputError and replay raises it again without live."""
        with pytest.raises(StructuredOutputError) as recorded:
            fixtures(tmp_path, "record").call("structured", REQUEST, Live({"n": "seven"}),
                                              schema=SCHEMA)
        assert recorded.value.answer == {"n": "seven"}
        assert "/n" in str(recorded.value)
        with pytest.raises(StructuredOutputError) as replayed:
            fixtures(tmp_path, "replay").call("structured", REQUEST, never, schema=SCHEMA)
        assert replayed.value.problems == recorded.value.problems
        assert replayed.value.answer == {"n": "seven"}
        assert replayed.value.kind == "structured"

    def test_workflow_retry_is_retraced(self, tmp_path: Path) -> None:
        """Ask, fail the schema, ask again with the problems: replay follows the same path."""
        def workflow(calls: ModelFixtures, answers: list[Any]) -> Any:
            request: dict[str, Any] = {"prompt": "give n"}
            for _ in range(3):
                try:
                    return calls.call("structured", request, (lambda: answers.pop(0))
                                      if answers else None, schema=SCHEMA)
                except StructuredOutputError as exc:
                    request = {"prompt": "give n; fix: " + "; ".join(exc.problems)}
            raise AssertionError("no answer")

        recorded = workflow(fixtures(tmp_path, "record"), [{"n": "x"}, {"n": 3}])
        assert recorded == {"n": 3}
        assert workflow(fixtures(tmp_path, "replay"), []) == {"n": 3}

    def test_live_raising_structured_output_error_is_recorded(self, tmp_path: Path) -> None:
        """A StructuredOutputError raised by the callee itself is recorded too."""
        error = StructuredOutputError("structured", ["/a: required"], answer={"b": SECRET})
        with pytest.raises(StructuredOutputError):
            fixtures(tmp_path, "record").call("structured", REQUEST, Live(error=error))
        [path] = tmp_path.iterdir()
        assert SECRET not in path.read_text()
        with pytest.raises(StructuredOutputError) as info:
            fixtures(tmp_path, "replay").call("structured", REQUEST, never)
        assert info.value.answer == {"b": "[REDACTED]"}

    @pytest.mark.parametrize(
        "error",
        [TimeoutError("timed out"), ConnectionError("unreachable"), OSError("no route"),
         RuntimeError("HTTP 401 Unauthorized"), RuntimeError("HTTP 429 rate limited"),
         RuntimeError("HTTP 503"), KeyboardInterrupt()],
        ids=["timeout", "connection", "oserror", "401", "429", "503", "interrupt"],
    )
    def test_environment_errors_not_written(self, tmp_path: Path, error: BaseException) -> None:
        """Anything else live raises propagates and nothing is written."""
        for mode in ("record", "auto"):
            with pytest.raises(type(error)):
                fixtures(tmp_path, mode).call("text", REQUEST, Live(error=error))
        assert list(tmp_path.iterdir()) == []

    def test_user_predicate_records_deterministic_errors(self, tmp_path: Path) -> None:
        """A failure the predicate accepts is recorded, redacted, and raised as RecordedError."""
        class ContextLengthError(Exception):
            pass

        def recordable(exc: BaseException) -> bool:
            return isinstance(exc, ContextLengthError)

        error = ContextLengthError(f"too long for key {SECRET}")
        with pytest.raises(ContextLengthError):
            fixtures(tmp_path, "record", recordable=recordable).call(
                "text", REQUEST, Live(error=error))
        with pytest.raises(RecordedError) as info:
            fixtures(tmp_path, "replay").call("text", REQUEST, never)
        assert info.value.type.endswith("ContextLengthError")
        assert info.value.message == "too long for key [REDACTED]"
        assert isinstance(info.value, RedactkeyError)

        def rebuild(body: RecordedErrorBody) -> BaseException:
            return ContextLengthError(body.message)

        with pytest.raises(ContextLengthError, match=r"\[REDACTED\]"):
            fixtures(tmp_path, "replay", rebuild_error=rebuild).call("text", REQUEST, never)

    def test_predicate_never_records_interrupts(self, tmp_path: Path) -> None:
        """Even an accept-all predicate cannot record KeyboardInterrupt."""
        with pytest.raises(KeyboardInterrupt):
            fixtures(tmp_path, "record", recordable=lambda exc: True).call(
                "text", REQUEST, Live(error=KeyboardInterrupt()))
        assert list(tmp_path.iterdir()) == []

    def test_record_answer_hook(self, tmp_path: Path) -> None:
        """An answer the record_answer hook refuses is returned but not written."""
        calls = fixtures(tmp_path, "record", record_answer=lambda a: a["status"] < 500)
        assert calls.call("http", {"method": "GET", "url": "https://x.test/"},
                          Live({"status": 503})) == {"status": 503}
        assert list(tmp_path.iterdir()) == []


class TestSchema:
    """schema= validates replayed answers."""

    def test_stale_answer(self, tmp_path: Path) -> None:
        """An answer that no longer fits the schema is StaleFixtureError: re-record it."""
        fixtures(tmp_path, "record").call("structured", REQUEST, Live({"n": 1}), schema=SCHEMA)
        assert fixtures(tmp_path, "replay").call("structured", REQUEST, None,
                                                 schema=SCHEMA) == {"n": 1}
        newer = {**SCHEMA, "required": ["n", "m"]}
        with pytest.raises(StaleFixtureError, match="re-record it") as info:
            fixtures(tmp_path, "replay").call("structured", REQUEST, None, schema=newer)
        assert "'m' is a required property" in str(info.value)
        assert info.value.path.endswith(".json")

    def test_invalid_schema_is_usage_error(self, tmp_path: Path) -> None:
        """A schema that is not a JSON Schema is the caller's mistake."""
        with pytest.raises(UsageError, match="not a valid JSON Schema"):
            fixtures(tmp_path, "record").call("structured", REQUEST, Live({}),
                                              schema={"type": 12})

    def test_stream_fixture_for_answer_call(self, tmp_path: Path) -> None:
        """A stream replayed as a single answer is stale, not silently wrong."""
        list(fixtures(tmp_path, "record").stream("chat", REQUEST, Live(chunks=[1])))
        with pytest.raises(StaleFixtureError, match="holds a stream"):
            fixtures(tmp_path, "replay").call("chat", REQUEST, None)
        fixtures(tmp_path, "record").call("text", REQUEST, Live(1))
        with pytest.raises(StaleFixtureError, match="holds one answer"):
            fixtures(tmp_path, "replay").stream("text", REQUEST, None)


CHUNKS = [{"delta": "Hel"}, {"delta": "lo"}, {"delta": None, "done": True}]


class TestStreams:
    """Streams are recorded whole, in order, and re-yielded."""

    def test_round_trip(self, tmp_path: Path) -> None:
        """Record passes chunks through; replay yields the same chunks without live."""
        live = Live(chunks=CHUNKS)
        assert list(fixtures(tmp_path, "record").stream("chat", REQUEST, live)) == CHUNKS
        assert list(fixtures(tmp_path, "replay").stream("chat", REQUEST, None)) == CHUNKS
        [path] = tmp_path.iterdir()
        assert json.loads(path.read_text())["chunks"] == CHUNKS

    def test_miss_raises_before_iteration(self, tmp_path: Path) -> None:
        """A replay miss raises when stream() is called, not later."""
        with pytest.raises(MissingFixtureError):
            fixtures(tmp_path, "replay").stream("chat", REQUEST, None)

    def test_interrupted_by_consumer_records_nothing(self, tmp_path: Path) -> None:
        """A consumer that stops early leaves no partial stream on disk."""
        chunks = fixtures(tmp_path, "record").stream("chat", REQUEST, Live(chunks=CHUNKS))
        assert next(chunks) == CHUNKS[0]
        chunks.close()  # type: ignore[attr-defined]
        assert list(tmp_path.iterdir()) == []

    def test_interrupted_by_error_records_nothing(self, tmp_path: Path) -> None:
        """A stream that fails midway propagates the error and writes nothing."""
        def broken() -> Iterator[Any]:
            yield CHUNKS[0]
            raise ConnectionError("reset")

        with pytest.raises(ConnectionError):
            list(fixtures(tmp_path, "auto").stream("chat", REQUEST, broken))
        assert list(tmp_path.iterdir()) == []

    def test_chunks_redacted(self, tmp_path: Path) -> None:
        """Recorded chunks pass through redact_stream."""
        chunks = [{"delta": f"key {SECRET}"}]
        assert list(fixtures(tmp_path, "record").stream("chat", REQUEST, Live(chunks=chunks))) \
            == chunks
        assert SECRET not in next(tmp_path.iterdir()).read_text()

    def test_async_round_trip(self, tmp_path: Path) -> None:
        """astream records and replays; acall too."""
        async def live_stream() -> AsyncIterator[Any]:
            for chunk in CHUNKS:
                yield chunk

        async def answer() -> str:
            return "async answer"

        async def run() -> None:
            rec = fixtures(tmp_path, "record")
            assert [c async for c in rec.astream("chat", REQUEST, live_stream)] == CHUNKS
            assert await rec.acall("text", REQUEST, answer) == "async answer"
            rep = fixtures(tmp_path, "replay")
            assert [c async for c in rep.astream("chat", REQUEST, None)] == CHUNKS
            assert await rep.acall("text", REQUEST, None) == "async answer"

        asyncio.run(run())

    def test_async_interrupted_records_nothing(self, tmp_path: Path) -> None:
        """An async stream closed early writes nothing."""
        async def live_stream() -> AsyncIterator[Any]:
            for chunk in CHUNKS:
                yield chunk

        async def run() -> None:
            stream = fixtures(tmp_path, "record").astream("chat", REQUEST, live_stream)
            assert await stream.__anext__() == CHUNKS[0]
            await stream.aclose()  # type: ignore[attr-defined]

        asyncio.run(run())
        assert list(tmp_path.iterdir()) == []


class TestSurfaces:
    """The function decorator, the client adapter and the tool decorator."""

    def test_decorated_function(self, tmp_path: Path) -> None:
        """Bound arguments are the request; replay never runs the body and decodes."""
        seen: list[str] = []

        def make(mode: str) -> Any:
            calls = fixtures(tmp_path, mode)

            @calls.wrap("text", decode=lambda d: ("decoded", d))
            def complete(prompt: str, model: str = "m-1", **options: Any) -> str:
                seen.append(prompt)
                return prompt.upper()

            return complete

        assert make("record")("hi", temperature=0) == "HI"
        assert make("replay")("hi", temperature=0) == ("decoded", "HI")
        assert make("replay")(prompt="hi", model="m-1", temperature=0) == ("decoded", "HI")
        assert seen == ["hi"]
        with pytest.raises(MissingFixtureError):
            make("replay")("hi", temperature=1)

    def test_decorated_async_and_stream(self, tmp_path: Path) -> None:
        """Async functions and generator functions are wrapped by their nature."""
        def make(mode: str) -> tuple[Any, Any]:
            calls = fixtures(tmp_path, mode)

            @calls.wrap("text")
            async def acomplete(prompt: str) -> str:
                return prompt[::-1]

            @calls.wrap("chat", stream=True)
            def stream(prompt: str) -> Iterator[str]:
                yield from prompt

            return acomplete, stream

        acomplete, stream = make("record")
        assert asyncio.run(acomplete("abc")) == "cba"
        assert list(stream("ab")) == ["a", "b"]
        acomplete, stream = make("replay")
        assert asyncio.run(acomplete("abc")) == "cba"
        assert list(stream("ab")) == ["a", "b"]

    def test_client_adapter(self, tmp_path: Path) -> None:
        """Dotted methods record and replay; other attributes are the client's."""
        class Completions:
            def create(self, **request: Any) -> dict[str, Any]:
                return {"echo": request["messages"][0]["content"]}

        class Chat:
            completions = Completions()

        class Client:
            chat = Chat()
            name = "fake"

        recorded = fixtures(tmp_path, "record").adapt(Client(), {"chat.completions.create": "chat"})
        assert recorded.name == "fake"
        assert recorded.chat.completions.create(**REQUEST) == {"echo": "Summarise the report"}
        offline = fixtures(tmp_path, "replay").adapt(None, {"chat.completions.create": "chat"})
        assert offline.chat.completions.create(**REQUEST) == {"echo": "Summarise the report"}
        with pytest.raises(UsageError, match="no client"):
            _ = offline.name

    def test_tool_decorator_keeps_placeholders(self, tmp_path: Path) -> None:
        """A tool replays its redacted result, and a prompt built from it keys the same."""
        def run(mode: str, token: str) -> Any:
            redactor = FakeRedactor(token)
            tools = ToolFixtures(FixtureDir(tmp_path), mode=mode, redactor=redactor)
            model = ModelFixtures(FixtureDir(tmp_path), mode=mode, redactor=redactor)

            @tools.tool
            def lookup(user: str, verbose: bool = False) -> dict[str, str]:
                return {"user": user, "token": token}

            result = lookup("ada")
            return result, model.call("text", {"prompt": f"use {result['token']}"},
                                      Live("done"))

        other = "sk-proj-" + "Z9y8" * 12
        assert run("record", SECRET) == ({"user": "ada", "token": SECRET}, "done")
        assert run("replay", other) == ({"user": "ada", "token": "[REDACTED]"}, "done")
        names = sorted(p.name.split(".")[0] for p in tmp_path.iterdir())
        assert names == ["@model", "lookup"]

    def test_tool_keyed_on_arguments(self, tmp_path: Path) -> None:
        """Each distinct argument set is its own fixture, whatever order they came in."""
        tools = ToolFixtures(FixtureDir(tmp_path), mode="record", redactor=FakeRedactor())

        @tools.tool(name="search")
        def find(query: str, limit: int = 10) -> list[str]:
            return [query] * min(limit, 2)

        find("a")
        find(query="a", limit=10)
        find("a", 1)
        assert len(list(tmp_path.iterdir())) == 2
        assert all(p.name.startswith("search.") for p in tmp_path.iterdir())

    def test_tool_name_checked_at_decoration(self, tmp_path: Path) -> None:
        """A tool name that cannot be a file name is refused when decorating."""
        tools = ToolFixtures(FixtureDir(tmp_path), mode="record", redactor=FakeRedactor())
        with pytest.raises(UsageError):
            tools.tool(name="../evil")(lambda: 1)


WORKER = """
import sys
from redactkey import FixtureDir
from redactkey.record._replay import ModelFixtures
sys.path.insert(0, sys.argv[3])
from test_replay import FakeRedactor
calls = ModelFixtures(FixtureDir(sys.argv[1]), mode=sys.argv[2], redactor=FakeRedactor())
worker = int(sys.argv[4])
for n in range(50):
    prompt = f"shared {n}" if n % 2 else f"worker {worker} call {n}"
    live = None if sys.argv[2] == "replay" else (lambda: {"n": n, "pad": "x" * 2000})
    answer = calls.call("text", {"model": "m", "prompt": prompt}, live)
    assert answer["n"] == n
"""


class TestProcesses:
    """Many processes, one directory."""

    @pytest.mark.slow  # eight interpreters
    def test_eight_processes_record_then_everything_replays(self, tmp_path: Path) -> None:
        """8 x 50 calls recorded concurrently leave valid files, and every call replays."""
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        procs = [
            subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "fx"), "auto",
                              str(ROOT / "tests"), str(w)], env=env)
            for w in range(8)
        ]
        assert [p.wait(timeout=120) for p in procs] == [0] * 8
        store = FixtureDir(tmp_path / "fx")
        assert len(list(store.iter_fixtures())) == 25 + 8 * 25
        result = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "fx"), "replay",
                                 str(ROOT / "tests"), "3"], env=env, check=False)
        assert result.returncode == 0


def test_worker_script_is_valid_python() -> None:
    """The worker script compiles (a syntax slip would look like a store failure)."""
    compile(textwrap.dedent(WORKER), "worker", "exec")


FRESH = """
import json, sys
from redactkey import FixtureDir, ModelFixtures, Redactor, RunSecrets
mode, directory, secret, reverse = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
secrets = RunSecrets()
secrets.add("SEARCH_API_TOKEN", secret)
request = {
    "model": "m-1",
    "temperature": 0,
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": f"The search tool said: token={secret} ok"}],
    "timeout": 30,
}
if reverse:
    request = dict(reversed(list(request.items())))
calls = ModelFixtures(FixtureDir(directory), mode=mode, redactor=Redactor(secrets))
live = None if mode == "replay" else (lambda: {"text": f"used {secret}", "set": [3, 1]})
print(json.dumps(calls.call("chat", request, live)))
"""


def _fresh(mode: str, directory: Path, secret: str, *, seed: str, reverse: bool) -> Any:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONHASHSEED": seed}
    env.pop("REDACTKEY_MODE", None)
    result = subprocess.run(
        [sys.executable, "-c", FRESH, mode, str(directory), secret, "1" if reverse else "0"],
        env=env, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


class TestFreshProcess:
    """Keys do not depend on the process, the hash seed, dict order or the secret's value."""

    def test_other_seed_and_secret_value_hits(self, tmp_path: Path) -> None:
        """Recorded with one secret under seed 1, replayed with another under seed 2."""
        first = "tok_" + "Q7w2" * 10
        second = "tok_" + "Z3k9" * 10
        recorded = _fresh("record", tmp_path, first, seed="1", reverse=False)
        assert recorded == {"text": f"used {first}", "set": [3, 1]}
        text = next(tmp_path.iterdir()).read_text()
        assert first not in text
        replayed = _fresh("replay", tmp_path, second, seed="2", reverse=True)
        assert replayed == {"text": "used [REDACTED]", "set": [3, 1]}


class TestRealRedactor:
    """The record layer with the real Redactor."""

    def test_secret_split_across_chunks(self, tmp_path: Path) -> None:
        """A known secret streamed in two deltas is not written in either chunk."""
        from redactkey import Redactor, RunSecrets

        secrets = RunSecrets()
        secrets.add("SEARCH_API_TOKEN", SECRET)
        chunks = [{"choices": [{"delta": {"content": "key " + SECRET[:20]}}]},
                  {"choices": [{"delta": {"content": SECRET[20:] + " end"}}]}]
        calls = ModelFixtures(FixtureDir(tmp_path), mode="record", redactor=Redactor(secrets))
        assert list(calls.stream("chat", REQUEST, lambda: iter(chunks))) == chunks
        text = next(tmp_path.iterdir()).read_text()
        assert SECRET[:20] not in text
        assert SECRET[20:] not in text

    def test_default_redactor_reads_environment(self, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
        """With no redactor, secret-looking environment variables are redacted."""
        value = "plain-" + "m4Xq" * 8
        monkeypatch.setenv("INTERNAL_SERVICE_TOKEN", value)
        calls = ModelFixtures(FixtureDir(tmp_path), mode="record")
        calls.call("text", {"prompt": f"use {value}"}, lambda: f"ok {value}")
        assert value not in next(tmp_path.iterdir()).read_text()


class TestKeyed:
    """`key` keys a call once; the `*_keyed` methods go on from it without keying again."""

    class Counting(FakeRedactor):
        """Counts how often a request is keyed (`learn` runs once per keying)."""

        def __init__(self) -> None:
            super().__init__()
            self.keyed = 0

        def learn(self, request: Any) -> int:
            self.keyed += 1
            return 0

    def test_a_keyed_call_is_keyed_once(self, tmp_path: Path) -> None:
        """key then call_keyed: one keying, and the key the call wrote."""
        redactor = self.Counting()
        calls = fixtures(tmp_path, "record", redactor=redactor)
        call = calls.key("chat", dict(REQUEST))
        calls.call_keyed(call, Live({"ok": True}))
        assert (tmp_path / f"@model.chat.{call.key}.json").is_file()
        assert redactor.keyed == 1

    def test_a_call_keys_afresh(self, tmp_path: Path) -> None:
        """Every `call` keys its request: an equal copy keys to the same key."""
        redactor = self.Counting()
        calls = fixtures(tmp_path, "record", redactor=redactor)
        key = calls.key("chat", dict(REQUEST)).key
        calls.call("chat", dict(REQUEST), Live({"ok": True}))
        assert redactor.keyed == 2
        assert (tmp_path / f"@model.chat.{key}.json").is_file()
