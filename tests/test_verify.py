"""Verify mode: every call goes live and is compared with its recording by meaning."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from helpers import ChangingProvider, chat_answer, chat_chunks
from redactkey import (
    DriftError,
    FixtureDir,
    FixtureTransport,
    ModelFixtures,
    Redactor,
    RunReport,
    RunSecrets,
    StructuredOutputError,
    VerifyRules,
)
from redactkey.fixtures._verify import compare_answers, compare_streams
from redactkey.record._tools import ToolFixtures

pytest_plugins = ["pytester"]

REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _redactor() -> Redactor:
    return Redactor(RunSecrets())


def _fixtures(store: FixtureDir, mode: str, **options: Any) -> ModelFixtures:
    return ModelFixtures(store, mode=mode, redactor=_redactor(), **options)


def _tool_answer(name: str = "get_weather", arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    answer = chat_answer()
    answer["choices"][0]["message"] = {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": name, "arguments": arguments}}],
    }
    answer["choices"][0]["finish_reason"] = "tool_calls"
    return answer


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


class TestCompare:
    """The comparison itself: structure, types, pinned values, presets, tolerance."""

    def test_provider_preset_ignores_what_always_changes(self) -> None:
        """id, created, system_fingerprint (even null), usage and the reply text do not count."""
        live = chat_answer("Hi! How can I help?", id="chatcmpl-other", created=1_800_000_000,
                           system_fingerprint=None,
                           usage={"prompt_tokens": 10, "completion_tokens": 7,
                                  "total_tokens": 17})
        assert compare_answers("chat", chat_answer(), live, VerifyRules()) == []

    def test_type_change_is_named_by_pointer(self) -> None:
        """A member whose JSON type changes is reported at its pointer."""
        live = chat_answer()
        live["choices"][0]["index"] = "0"
        found = compare_answers("chat", chat_answer(), live, VerifyRules())
        assert [(d.pointer, d.what) for d in found] == [("/choices/0/index",
                                                         "type number -> string")]

    def test_pinned_string_compares_its_value(self) -> None:
        """finish_reason carries meaning: its value counts, not only its type."""
        live = chat_answer()
        live["choices"][0]["finish_reason"] = "length"
        assert [d.pointer for d in compare_answers("chat", chat_answer(), live,
                                                   VerifyRules())] == ["/choices/0/finish_reason"]

    def test_tool_call_name_and_argument_keys(self) -> None:
        """A tool's name and its argument names count; argument values do not."""
        same = compare_answers("chat", _tool_answer(), _tool_answer(arguments='{"city": "Rome"}'),
                               VerifyRules())
        assert same == []
        renamed = compare_answers("chat", _tool_answer(), _tool_answer(name="get_time"),
                                  VerifyRules())
        assert [d.pointer for d in renamed] == ["/choices/0/message/tool_calls/0/function/name"]
        rekeyed = compare_answers("chat", _tool_answer(),
                                  _tool_answer(arguments='{"town": "Paris"}'), VerifyRules())
        assert {d.what for d in rekeyed} == {"member added", "member removed"}

    def test_user_ignore_with_wildcards_and_tolerance(self) -> None:
        """Ignored pointers (with *) skip a subtree; numbers match within the tolerance."""
        old = {"items": [{"score": 1.0, "seen": "a"}, {"score": 2.0, "seen": "b"}]}
        new = {"items": [{"score": 1.0000001, "seen": 3}, {"score": 2.0, "seen": None}]}
        assert [d.pointer for d in compare_answers("tool:x", old, new, VerifyRules())] == [
            "/items/0/seen", "/items/1/seen"]
        assert compare_answers("tool:x", old, new, VerifyRules(ignore=["/items/*/seen"])) == []
        far = {"items": [{"score": 1.5, "seen": "a"}, {"score": 2.0, "seen": "b"}]}
        assert [d.pointer for d in compare_answers("tool:x", old, far, VerifyRules())] == [
            "/items/0/score"]
        assert compare_answers("tool:x", old, far, VerifyRules(abs_tol=1.0)) == []

    def test_http_status_and_body(self) -> None:
        """For HTTP answers the status counts first; body pointers sit under /json."""
        recorded = {"status": 200, "headers": {"content-type": "application/json"},
                    "json": chat_answer()}
        live = copy.deepcopy(recorded)
        live["json"]["choices"] = []
        assert [d.pointer for d in compare_answers("http", recorded, live, VerifyRules())] == [
            "/json/choices"]
        assert [d.pointer for d in compare_answers("http", recorded, {**live, "status": 400},
                                                   VerifyRules())] == ["/status"]

    def test_stream_chunk_boundaries_do_not_count(self) -> None:
        """A stream cut into other pieces, with other text, folds to the same answer."""
        assert compare_streams("chat", chat_chunks("Hello there", 4),
                               chat_chunks("Hi, how are you today?", 2), VerifyRules()) == []
        stopped = chat_chunks("Hello there", 4)
        stopped[-1]["choices"][0]["finish_reason"] = "length"
        assert [d.pointer for d in compare_streams("chat", chat_chunks(), stopped,
                                                   VerifyRules())] == [
            "/*/choices/0/finish_reason"]

    def test_http_event_stream_types_and_folded_answer(self) -> None:
        """SSE: event types compare with repeats collapsed; data folds into one answer."""
        head = {"status": 200, "headers": {"content-type": "text/event-stream"}}

        def events(chunks: list[dict[str, Any]]) -> list[Any]:
            return [head, *({"json": c} for c in chunks), {"data": "[DONE]"}]

        assert compare_streams("http", events(chat_chunks("abcdefgh", 2)),
                               events(chat_chunks("xyz", 1)), VerifyRules()) == []
        no_done = events(chat_chunks())[:-1]
        found = compare_streams("http", events(chat_chunks()), no_done, VerifyRules())
        assert [(d.pointer, d.what) for d in found] == [("/events", "event types")]


def _anthropic_events(text: str, tool_input: str, size: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
                                              "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": ""}},
    ]
    events += [{"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text[i:i + size]}}
               for i in range(0, len(text), size)]
    events += [{"type": "content_block_stop", "index": 0},
               {"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup",
                                  "input": {}}}]
    events += [{"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": tool_input[i:i + size]}}
               for i in range(0, len(tool_input), size)]
    events += [{"type": "content_block_stop", "index": 1},
               {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9}},
               {"type": "message_stop"}]
    return events


class TestProviderStreams:
    """Anthropic message streams and the Responses API fold into their answers."""

    def test_anthropic_tool_input_keys_across_any_cut(self) -> None:
        """Text and tool input re-cut and re-worded verify; a renamed input key drifts."""
        recorded = _anthropic_events("Let me look.", '{"city": "Paris"}', 3)
        assert compare_streams("chat", recorded,
                               _anthropic_events("Checking now", '{"city": "Rome"}', 5),
                               VerifyRules()) == []
        renamed = compare_streams("chat", recorded,
                                  _anthropic_events("Let me look.", '{"town": "Paris"}', 3),
                                  VerifyRules())
        assert {d.pointer for d in renamed} == {"/*/content/1/input/city",
                                                "/*/content/1/input/town"}

    def test_responses_api_completed_event(self) -> None:
        """The Responses API stream compares its response.completed answer."""
        def stream(status: str, name: str) -> list[dict[str, Any]]:
            response = {"id": "resp_1", "object": "response", "status": status,
                        "created_at": 1, "output": [{"type": "function_call", "id": "fc_1",
                                                     "name": name, "arguments": "{}"}]}
            return [{"type": "response.created", "response": {**response, "output": []}},
                    {"type": "response.completed", "response": response}]

        assert compare_streams("chat", stream("completed", "f"), stream("completed", "f"),
                               VerifyRules()) == []
        assert [d.pointer for d in compare_streams("chat", stream("completed", "f"),
                                                   stream("completed", "g"),
                                                   VerifyRules())] == ["/*/output/0/name"]


class TestModelFixturesVerify:
    """`mode="verify"` on the record/replay layer."""

    def _record(self, tmp_path: Path, answer: Any, **options: Any) -> FixtureDir:
        store = FixtureDir(tmp_path)
        _fixtures(store, "record").call("chat", REQUEST, lambda: answer, **options)
        return store

    def test_passes_on_ignored_changes_and_never_rewrites(self, tmp_path: Path) -> None:
        """The live answer is returned; the recording keeps every byte."""
        store = self._record(tmp_path, chat_answer())
        before = _snapshot(tmp_path)
        live = chat_answer("Different words", id="chatcmpl-zzz", created=5)
        assert _fixtures(store, "verify").call("chat", REQUEST, lambda: live) == live
        assert _snapshot(tmp_path) == before

    def test_strict_drift_names_file_pointer_and_rerecord(self, tmp_path: Path) -> None:
        """DriftError names the fixture, each pointer with recorded -> live, and the fix."""
        store = self._record(tmp_path, _tool_answer())
        before = _snapshot(tmp_path)
        with pytest.raises(DriftError) as caught:
            _fixtures(store, "verify").call("chat", REQUEST, lambda: _tool_answer("get_time"))
        error = caught.value
        assert error.pointers == ["/choices/0/message/tool_calls/0/function/name"]
        assert error.path == str(next(tmp_path.iterdir()))
        assert '"get_weather" -> live "get_time"' in str(error)
        assert "mode='record'" in str(error)
        assert _snapshot(tmp_path) == before

    def test_schema_that_stops_validating_is_a_drift(self, tmp_path: Path) -> None:
        """Where the call had a schema, the live answer must still validate against it."""
        schema = {"type": "object", "required": ["city"],
                  "properties": {"city": {"type": "string"}}}
        store = self._record(tmp_path, {"city": "Paris"}, schema=schema)
        assert _fixtures(store, "verify").call("chat", REQUEST, lambda: {"city": "Rome"},
                                               schema=schema) == {"city": "Rome"}
        with pytest.raises(DriftError) as caught:
            _fixtures(store, "verify").call("chat", REQUEST, lambda: {"city": 3}, schema=schema)
        assert "/city" in caught.value.pointers
        assert any("breaks the schema" in what for _, what in caught.value.differences)

    def test_report_collects_several_drifts_in_one_run(self, tmp_path: Path) -> None:
        """With on_drift, every drift is kept and each call returns its live answer."""
        store = FixtureDir(tmp_path)
        recorder = _fixtures(store, "record")
        for n in range(3):
            recorder.call("chat", {**REQUEST, "seed": n}, lambda: chat_answer())
        report = RunReport(label="nightly")
        verifier = _fixtures(store, "verify", on_drift=report.drift, report=report)
        drifted = chat_answer()
        drifted["choices"][0]["finish_reason"] = "content_filter"
        for n in range(3):
            answer = drifted if n != 1 else chat_answer()
            assert verifier.call("chat", {**REQUEST, "seed": n}, lambda a=answer: a) == answer
        assert len(report.drifted) == 2
        document = report.document(root=tmp_path)
        assert [d["differences"][0]["pointer"] for d in document["drifted"]] == [
            "/choices/0/finish_reason"] * 2
        assert all(d["test"] == "nightly" for d in document["drifted"])

    def test_miss_records_nothing_and_is_reported(self, tmp_path: Path) -> None:
        """An unrecorded call in verify goes live, writes nothing and is noted as missing."""
        report = RunReport()
        store = FixtureDir(tmp_path)
        answer = _fixtures(store, "verify", report=report).call("chat", REQUEST, chat_answer)
        assert answer["object"] == "chat.completion"
        assert list(tmp_path.iterdir()) == []
        assert [e.outcome for e in report.events()] == ["missing"]

    def test_stream_verify_ignores_chunk_boundaries(self, tmp_path: Path) -> None:
        """A stream re-cut and re-worded verifies; one that changes its finish drifts at its end."""
        store = FixtureDir(tmp_path)
        list(_fixtures(store, "record").stream("chat", REQUEST, lambda: chat_chunks("abcdef", 2)))
        verifier = _fixtures(store, "verify")
        assert len(list(verifier.stream("chat", REQUEST, lambda: chat_chunks("uvwxyz!", 3)))) == 5
        cut = chat_chunks("abcdef", 1)
        cut[-1]["choices"][0]["finish_reason"] = "length"
        live = verifier.stream("chat", REQUEST, lambda: cut)
        with pytest.raises(DriftError):
            list(live)

    def test_async_call_and_stream(self, tmp_path: Path) -> None:
        """acall and astream verify like their sync twins."""
        store = FixtureDir(tmp_path)
        recorder, verifier = _fixtures(store, "record"), _fixtures(store, "verify")

        async def scenario() -> None:
            async def answer() -> Any:
                return chat_answer()

            async def drifted() -> Any:
                return chat_answer(object="text_completion")

            async def chunks() -> Any:
                for chunk in chat_chunks():
                    yield chunk

            await recorder.acall("chat", REQUEST, answer)
            [c async for c in recorder.astream("chat", {**REQUEST, "stream": True}, chunks)]
            await verifier.acall("chat", REQUEST, answer)
            with pytest.raises(DriftError):
                await verifier.acall("chat", REQUEST, drifted)
            assert len([c async for c in verifier.astream(
                "chat", {**REQUEST, "stream": True}, chunks)]) == len(chat_chunks())

        asyncio.run(scenario())

    def test_recorded_failure_and_tools(self, tmp_path: Path) -> None:
        """A recorded model failure verifies against the same failure; tools verify too."""
        schema = {"type": "object", "required": ["a"]}
        store = FixtureDir(tmp_path)
        with pytest.raises(StructuredOutputError):
            _fixtures(store, "record").call("s", REQUEST, lambda: {}, schema=schema)
        with pytest.raises(StructuredOutputError):
            _fixtures(store, "verify").call("s", REQUEST, lambda: {"b": 1}, schema=schema)
        with pytest.raises(DriftError) as caught:
            _fixtures(store, "verify").call("s", REQUEST, lambda: {"a": 1}, schema=schema)
        assert "outcome error StructuredOutputError -> answer" in str(caught.value)
        tools = ToolFixtures(store, mode="record", redactor=_redactor())
        tools.call("lookup", {"q": "x"}, lambda: {"hits": 2, "names": ["a"]})
        verifier = ToolFixtures(store, mode="verify", redactor=_redactor())
        assert verifier.call("lookup", {"q": "x"}, lambda: {"hits": 2, "names": ["b"]})
        with pytest.raises(DriftError) as caught:
            verifier.call("lookup", {"q": "x"}, lambda: {"hits": 3, "names": ["a"]})
        assert caught.value.pointers == ["/hits"]

    def test_drift_message_keeps_secrets_out(self, tmp_path: Path) -> None:
        """The live value shown in a drift is redacted."""
        secret = "sk-proj-" + "Zq8" * 12
        secrets = RunSecrets()
        secrets.add("OPENAI_API_KEY", secret)
        store = FixtureDir(tmp_path)
        ModelFixtures(store, mode="record", redactor=Redactor(secrets)).call(
            "tool:t", {"q": 1}, lambda: {"flag": False})
        with pytest.raises(DriftError) as caught:
            ModelFixtures(store, mode="verify", redactor=Redactor(secrets)).call(
                "tool:t", {"q": 1}, lambda: {"flag": secret})
        assert secret not in str(caught.value)
        assert "[REDACTED]" in str(caught.value)


class TestTransportVerify:
    """FixtureTransport in verify against a local provider whose answers change."""

    def _client(self, store: FixtureDir, mode: str, **options: Any) -> httpx.Client:
        return httpx.Client(transport=FixtureTransport(store, mode=mode, redactor=_redactor(),
                                                       **options))

    def _ask(self, client: httpx.Client, url: str, *, stream: bool = False) -> Any:
        body = {**REQUEST, "stream": stream}
        if not stream:
            return client.post(f"{url}/v1/chat/completions", json=body).json()
        with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
            return [line for line in response.iter_lines() if line]

    def test_plain_and_streamed_answers_change_between_runs(self, tmp_path: Path) -> None:
        """Ignored changes pass; a changed type fails naming the body pointer; SSE re-cut passes."""
        store = FixtureDir(tmp_path)
        with ChangingProvider() as provider:
            with self._client(store, "record") as client:
                self._ask(client, provider.url)
                self._ask(client, provider.url, stream=True)
            before = _snapshot(tmp_path)
            provider.answer = chat_answer("Another reply", id="chatcmpl-new", created=7)
            provider.chunks = chat_chunks("Another reply entirely", 1, id="chatcmpl-new")
            with self._client(store, "verify") as client:
                assert self._ask(client, provider.url)["id"] == "chatcmpl-new"
                assert len(self._ask(client, provider.url, stream=True)) > 10
            provider.answer = chat_answer(choices={"0": "x"})
            with self._client(store, "verify") as client, pytest.raises(DriftError) as caught:
                self._ask(client, provider.url)
            assert caught.value.pointers == ["/json/choices"]
            assert "type array -> object" in str(caught.value)
            assert caught.value.kind == "http"
            provider.chunks = [{**c, "object": "chat.completion.delta"} for c in chat_chunks()]
            with self._client(store, "verify") as client, pytest.raises(DriftError):
                self._ask(client, provider.url, stream=True)
            assert provider.requests == 6
        assert _snapshot(tmp_path) == before

    def test_openai_sdk_reports_drift_at_once(self, tmp_path: Path) -> None:
        """Through the openai SDK a drift surfaces as itself, after one attempt, unretried."""
        openai = pytest.importorskip("openai")
        store = FixtureDir(tmp_path)
        with ChangingProvider() as provider:

            def ask(mode: str, **options: Any) -> None:
                with openai.OpenAI(base_url=provider.url + "/v1", api_key="sk-test-dummy",
                                   http_client=self._client(store, mode, **options)) as client:
                    client.chat.completions.create(**REQUEST)

            ask("record")
            provider.answer = chat_answer(choices=[])
            report = RunReport()
            ask("verify", on_drift=report.drift)
            assert [e.pointers for e in report.drifted] == [["/json/choices"]]
            attempts = provider.requests
            with pytest.raises(DriftError):
                ask("verify")
            assert provider.requests == attempts + 1


PLUGIN_TEST = """
import httpx, pytest

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

@pytest.mark.parametrize("n", [1, 2, 3])
def test_call(n, model_fixtures):
    import json, pathlib
    answer = json.loads(pathlib.Path("answers.json").read_text())[str(n)]
    assert model_fixtures.call("chat", {**REQUEST, "n": n}, lambda: answer) == answer
"""


class TestPluginVerify:
    """`--redactkey-mode=verify` with `--redactkey-verify=fail|report`."""

    def _answers(self, pytester: pytest.Pytester, finish: dict[int, str]) -> None:
        answers = {}
        for n in (1, 2, 3):
            answer = chat_answer()
            answer["choices"][0]["finish_reason"] = finish.get(n, "stop")
            answers[str(n)] = answer
        pytester.path.joinpath("answers.json").write_text(json.dumps(answers))

    def test_fail_and_report(self, pytester: pytest.Pytester,
                             monkeypatch: pytest.MonkeyPatch) -> None:
        """fail: a drifted test fails; report: all pass, the summary and report list both drifts."""
        for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
            monkeypatch.delenv(name, raising=False)
        pytester.makepyfile(test_verified=PLUGIN_TEST)
        quiet = ("-p", "no:hypothesispytest", "-p", "no:randomly")
        self._answers(pytester, {})
        pytester.runpytest(*quiet, "--redactkey-mode=record").assert_outcomes(passed=3)
        self._answers(pytester, {1: "length", 3: "tool_calls"})
        failed = pytester.runpytest(*quiet, "--redactkey-mode=verify")
        failed.assert_outcomes(passed=1, failed=2)
        failed.stdout.fnmatch_lines(["*DriftError*", "*/choices/0/finish_reason*"])
        reported = pytester.runpytest(*quiet, "--redactkey-mode=verify",
                                      "--redactkey-verify=report")
        reported.assert_outcomes(passed=3)
        assert reported.ret == pytest.ExitCode.TESTS_FAILED
        reported.stdout.fnmatch_lines([
            "*drifted from their recordings (verify): 2*",
            "*/choices/0/finish_reason: value: recorded \"stop\" -> live \"length\"*",
            "*to re-record just these: pytest --redactkey-mode=record*test_call?1?*test_call?3?*",
        ])
        document = json.loads(pytester.path.joinpath(".redactkey-report.json").read_text())
        assert [d["test"] for d in document["drifted"]] == [
            "test_verified.py::test_call[1]", "test_verified.py::test_call[3]"]
        assert document["rerecord"].startswith("pytest --redactkey-mode=record ")
        assert document["unused"] == []
