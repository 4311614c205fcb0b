"""`Recorder`: one object whose settings every client face follows."""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx2
import pytest

from fakebedrock import FakeBedrock
from redactkey import (
    Config,
    FixtureDir,
    MissingFixtureError,
    Recorder,
    Redactor,
    RunSecrets,
    UsageError,
)
from redactkey.clients._guard import NetworkGuard, NetworkRefusedError
from redactkey.clients._recorder import REPLAY_AWS_CREDENTIALS

CHAT = "https://api.example.com/v1/chat"


@pytest.fixture(autouse=True)
def _no_modes_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS variable, and a home without ~/.aws: nothing configures a credential."""
    import os

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _echo(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={"echo": json.loads(request.content or b"{}")})


def _post(recorder: Recorder, url: str, body: Any, *, model: bool = True) -> Any:
    transport = recorder.transport(inner=httpx2.MockTransport(_echo), model=model)
    with httpx2.Client(transport=transport) as client:
        return client.post(url, json=body).json()


class TestSettings:
    """What the Recorder holds, and where each setting comes from."""

    def test_a_path_is_a_directory_store(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path / "fx", redactor=Redactor())
        assert isinstance(recorder.store, FixtureDir)
        assert recorder.store.location == str(tmp_path / "fx")

    def test_modes_default_to_auto_and_the_model_mode_to_the_mode(self, tmp_path: Path) -> None:
        assert (Recorder(tmp_path).mode, Recorder(tmp_path).model_mode) == ("auto", "auto")
        recorder = Recorder(tmp_path, mode="replay", model_mode="live")
        assert (recorder.mode, recorder.model_mode) == ("replay", "live")

    def test_a_bad_mode_names_the_modes(self, tmp_path: Path) -> None:
        with pytest.raises(UsageError, match="'recrod' is not a mode; use one of live"):
            Recorder(tmp_path, mode="recrod")

    def test_the_environment_is_not_read_by_a_recorder_built_with_arguments(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("REDACTKEY_MODE", "replay")
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor())
        assert recorder.models.mode == recorder.tools.mode == "record"
        assert recorder.transport().mode == "record"

    def test_from_config_reads_the_environment_and_the_configuration(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "pyproject.toml").write_text(
            '[tool.redactkey]\nplaceholder = "[GONE]"\n', "utf-8")
        (tmp_path / "sub").mkdir()
        monkeypatch.chdir(tmp_path / "sub")
        monkeypatch.setenv("REDACTKEY_MODEL_MODE", "live")
        recorder = Recorder.from_config()
        assert (recorder.mode, recorder.model_mode) == ("replay", "live")
        assert recorder.store.location == str(tmp_path / "tests" / "fixtures")
        assert recorder.redactor.placeholder == "[GONE]"
        monkeypatch.setenv("REDACTKEY_MODE", "record")
        monkeypatch.delenv("REDACTKEY_MODEL_MODE")
        assert Recorder.from_config().model_mode == "record"
        assert Recorder.from_config(mode="auto").model_mode == "auto"

    def test_from_config_advice_names_the_variable(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        recorder = Recorder.from_config(tmp_path / "fx", redactor=Redactor())
        with pytest.raises(MissingFixtureError, match="set REDACTKEY_MODE=auto"):
            recorder.models.call("text", {"prompt": "hi"}, None)
        with pytest.raises(MissingFixtureError, match=r"pass mode='record' \(or 'auto'"):
            Recorder(tmp_path / "fx", mode="replay", redactor=Redactor()).models.call(
                "text", {"prompt": "hi"}, None)

    def test_host_aliases_key_a_local_server_as_the_real_host(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor(),
                            hosts={"127.0.0.1:8765": "api.example.com"})
        _post(recorder, "http://127.0.0.1:8765/v1/chat", {"q": 1})
        replay = Recorder(tmp_path, mode="replay", redactor=Redactor())
        assert _post(replay, CHAT, {"q": 1}) == {"echo": {"q": 1}}

    def test_secrets_are_redacted_by_the_configured_redactor(self, tmp_path: Path) -> None:
        token = "tok-" + secrets.token_hex(12)
        run = RunSecrets()
        run.add("ACME_TOKEN", token)
        config = Config(placeholder="[ACME]")
        recorder = Recorder(tmp_path, mode="record", secrets=run, config=config)
        assert recorder.secrets is run
        recorder.tools.call("lookup", {"q": token}, lambda: {"said": token})
        (written,) = tmp_path.iterdir()
        assert token not in written.read_text("utf-8")
        assert "[ACME]" in written.read_text("utf-8")

    def test_replace_keeps_the_rest(self, tmp_path: Path) -> None:
        redactor = Redactor()
        recorder = Recorder(tmp_path / "a", mode="record", redactor=redactor, label="one")
        moved = recorder.replace(store_or_path=tmp_path / "b", label="two")
        assert (moved.mode, moved.redactor, moved.label) == ("record", redactor, "two")
        assert moved.store.location == str(tmp_path / "b")
        fresh = recorder.replace(secrets=RunSecrets())
        assert fresh.redactor is not redactor

    def test_replace_copies_and_builds_its_own_layers(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path / "a", mode="record", redactor=Redactor(), label="one")
        models = recorder.models
        moved = recorder.replace(store_or_path=FixtureDir(tmp_path / "b"), mode="replay",
                                 label="two")
        assert moved.config is recorder.config
        assert moved.models is not models
        assert (moved.model_mode, moved.models.mode, moved.models.label) == (
            "replay", "replay", "two")
        assert (recorder.models, recorder.mode, recorder.label) == (models, "record", "one")


class TestFaces:
    """Every face is built from the recorder: one mode, one store, one redactor."""

    def test_each_face_writes_the_same_http_fixture(self, tmp_path: Path) -> None:
        """A call recorded through the httpx transport replays through requests, and
        the reverse: one tree for every client."""
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor())
        _post(recorder, CHAT, {"q": "same"})
        replay = Recorder(tmp_path, mode="replay", redactor=Redactor())
        with replay.requests_session() as session:
            assert session.post(CHAT, json={"q": "same"}).json() == {"echo": {"q": "same"}}

    def test_the_requests_session_mounts_both_schemes(self, tmp_path: Path) -> None:
        from redactkey import RequestsAdapter

        with Recorder(tmp_path, mode="replay", redactor=Redactor()).requests_session() as s:
            assert isinstance(s.get_adapter("http://x.test/"), RequestsAdapter)
            assert isinstance(s.get_adapter("https://x.test/"), RequestsAdapter)

    def test_the_aiohttp_session_follows_the_mode(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor())
        _post(recorder, CHAT, {"q": "aio"})

        async def replayed() -> Any:
            replay = Recorder(tmp_path, mode="replay", redactor=Redactor())
            async with replay.aiohttp_session() as session, session.post(
                    CHAT, json={"q": "aio"}) as response:
                return await response.json()

        assert asyncio.run(replayed()) == {"echo": {"q": "aio"}}

    def test_tool_faces_follow_the_tool_mode(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path, mode="replay", model_mode="record", redactor=Redactor())
        assert recorder.transport().mode == "record"
        assert recorder.transport(model=False).mode == "replay"
        assert (recorder.models.mode, recorder.tools.mode) == ("record", "replay")

    def test_vcr_hooks_key_as_the_transport(self, tmp_path: Path) -> None:
        """With the recorder's host aliases: a cassette request to the local server has
        the key of the transport's call to the real host."""
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor(),
                            hosts={"127.0.0.1:8765": "api.example.com"})
        _post(recorder, CHAT, {"q": 1})
        (recorded,) = tmp_path.iterdir()

        class Request:
            method, uri, body = "POST", "http://127.0.0.1:8765/v1/chat", b'{"q":1}'
            headers: ClassVar[dict[str, str]] = {"content-type": "application/json"}

        assert recorded.name == f"http.{recorder.vcr_hooks().key(Request())}.json"


class TestBoto3:
    """`boto3_client` in replay needs no credentials and reaches nothing."""

    def _record(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        with FakeBedrock() as fake:
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA" + secrets.token_hex(8).upper())
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secrets.token_urlsafe(30))
            recorder = Recorder(tmp_path, mode="record", redactor=Redactor(),
                                hosts={fake.url.removeprefix("http://"):
                                       "bedrock-runtime.us-east-1.amazonaws.com"})
            client = recorder.boto3_client("bedrock-runtime", region_name="us-east-1",
                                           endpoint_url=fake.url)
            client.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "Hi"}]}])
            assert len(fake.seen) == 1
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(name)

    def test_replay_without_credentials_or_region_connects_nowhere(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_aws: None
    ) -> None:
        self._record(tmp_path, monkeypatch)
        guard = NetworkGuard("t.py::t", "replay", allow_loopback=False, blocked={},
                             how_to_record="record it")
        recorder = Recorder(tmp_path, mode="replay", redactor=Redactor())
        with guard:
            client = recorder.boto3_client("bedrock-runtime")
            answer = client.converse(
                modelId="m", messages=[{"role": "user", "content": [{"text": "Hi"}]}])
            with pytest.raises(MissingFixtureError):
                client.converse(
                    modelId="m", messages=[{"role": "user", "content": [{"text": "Bye"}]}])
        assert answer["output"]["message"]["content"][0]["text"]
        assert guard.blocked == {}
        assert client.meta.region_name == "us-east-1"
        credentials = client._request_signer._credentials
        assert credentials.access_key == REPLAY_AWS_CREDENTIALS["aws_access_key_id"]

    def test_a_plain_client_in_replay_is_told_to_use_the_face(
        self, tmp_path: Path, no_aws: None
    ) -> None:
        """Without credentials botocore asks the instance metadata address; the guard's
        refusal (which botocore may wrap or swallow) names `boto3_client`, not the httpx
        transport."""
        import boto3
        from botocore.exceptions import HTTPClientError

        from redactkey import use_botocore

        guard = NetworkGuard("t.py::t", "replay", allow_loopback=False, blocked={},
                             how_to_record="record it")
        def converse() -> None:
            plain = boto3.session.Session().client("bedrock-runtime", region_name="us-east-1")
            client = use_botocore(plain, FixtureDir(tmp_path), mode="replay",
                                  redactor=Redactor())
            client.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}])

        with guard, pytest.raises((MissingFixtureError, HTTPClientError)):
            converse()
        # botocore swallows the refusal while it looks for credentials: the guard keeps it
        assert guard.refused
        assert "instance metadata" in str(guard.refused[0])
        assert "redactkey.boto3_client(service" in str(guard.refused[0])
        assert "httpx2" not in str(guard.refused[0])


class TestGuardAdvice:
    """The guard's refusal names the face of the client that tried."""

    @pytest.fixture
    def guard(self) -> Iterator[NetworkGuard]:
        guard = NetworkGuard("t.py::t", "replay", allow_loopback=False, blocked={},
                             how_to_record="record it")
        with guard:
            yield guard

    def test_requests(self, guard: NetworkGuard) -> None:
        import requests

        with pytest.raises(NetworkRefusedError, match=r"redactkey\.requests_session\(\)"):
            requests.get("http://192.0.2.1:9/", timeout=0.5)

    def test_aiohttp(self, guard: NetworkGuard) -> None:
        import aiohttp

        async def get() -> None:
            async with aiohttp.ClientSession() as session:
                await session.get("http://192.0.2.1:9/")

        with pytest.raises(NetworkRefusedError, match=r"redactkey\.aiohttp_session\(\)"):
            asyncio.run(get())

    def test_httpx(self, guard: NetworkGuard) -> None:
        with pytest.raises(NetworkRefusedError, match=r"transport=redactkey\.transport\(\)"):
            httpx2.get("http://192.0.2.1:9/", timeout=0.5)

    def test_a_bare_socket_lists_every_face(self, guard: NetworkGuard) -> None:
        with pytest.raises(NetworkRefusedError, match=r"transport\(\).*boto3_client"):
            socket.create_connection(("192.0.2.1", 9), timeout=0.5)


class TestMissDiff:
    """A miss shows, for each field that differs, where it starts to differ on both sides."""

    def test_a_long_url_differing_in_its_last_segment_names_both_segments(
        self, tmp_path: Path
    ) -> None:
        base = "https://generativelanguage.googleapis.com/v1beta/models/gemini-pro/"
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor())
        _post(recorder, base + "recordedSegment", {"q": 1})
        replay = Recorder(tmp_path, mode="replay", redactor=Redactor())
        with pytest.raises(MissingFixtureError) as caught:
            _post(replay, base + "wantedSegment", {"q": 1})
        (line,) = [d for d in caught.value.diff if d.startswith("/request/url")]
        assert "recordedSegment" in line
        assert "wantedSegment" in line
        assert len(line) < 120  # one line of a screen

    def test_short_values_are_shown_whole(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor())
        recorder.models.call("text", {"prompt": "hello"}, lambda: "hi")
        with pytest.raises(MissingFixtureError) as caught:
            recorder.replace(mode="replay").models.call("text", {"prompt": "hello!"}, None)
        assert '"hello" -> "hello!"' in str(caught.value)

    def test_many_differences_fit_one_screen(self, tmp_path: Path) -> None:
        recorder = Recorder(tmp_path, mode="record", redactor=Redactor())
        recorder.models.call("text", {"prompt": {str(i): "a" * 200 for i in range(40)}},
                             lambda: "hi")
        with pytest.raises(MissingFixtureError) as caught:
            recorder.replace(mode="replay").models.call(
                "text", {"prompt": {str(i): "a" * 199 + "b" for i in range(40)}}, None)
        lines = caught.value.diff
        assert len(str(caught.value).splitlines()) <= 20
        assert max(map(len, lines)) <= 120
        assert lines[-1] == "... and 28 more differences"
