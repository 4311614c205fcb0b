"""`redact migrate SRC... --to DIR [--write]`: vcrpy and other cassettes as redactkey fixtures."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import httpx
import pytest
import yaml

from fakeprovider import FakeProvider
from redactkey import FixtureDir, FixtureTransport, MissingFixtureError, Redactor, RunSecrets
from redactkey.commands._cli import main

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly")
URL = "https://api.example.test/v1/chat/completions"


def _interaction(body: dict[str, object], status: int, content_type: str, text: str,
                 **headers: list[str]) -> dict[str, object]:
    return {
        "request": {"method": "POST", "uri": URL, "body": json.dumps(body),
                    "headers": {"Content-Type": ["application/json"], **headers}},
        "response": {"status": {"code": status, "message": "x"},
                     "headers": {"Content-Type": [content_type],
                                 "openai-organization": ["org-abcdefabcdef123456"]},
                     "body": {"string": text}},
    }


def _cassette(path: Path, api_key: str) -> None:
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    streamed = {**plain, "stream": True}
    events = "".join(f"data: {json.dumps({'delta': part})}\n\n" for part in ("Hel", "lo"))
    events += "data: [DONE]\n\n"
    auth = {"Authorization": [f"Bearer {api_key}"]}
    interactions = [
        _interaction(plain, 200, "application/json", json.dumps({"answer": "Hello"}), **auth),
        _interaction(streamed, 200, "text/event-stream", events, **auth),
        _interaction(plain, 200, "application/json", json.dumps({"answer": "again"}), **auth),
        _interaction({**plain, "model": "busy"}, 429, "application/json", "{}", **auth),
        _interaction({**plain, "model": "img"}, 200, "image/png", "iVBORw0KGgo="),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))


def _api_key() -> str:
    return "sk-proj-" + secrets.token_hex(20)


class TestMigrate:
    """The plan, the written tree, sequences and refusals, on a handmade vcrpy cassette."""

    def test_dry_run_then_write_then_replay(self, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
        """The dry run writes nothing; --write writes fixtures FixtureTransport replays,
        the repeated request's two answers in their recorded order."""
        api_key = _api_key()
        _cassette(tmp_path / "cassettes" / "test_chat" / "test_a.yaml", api_key)
        target = tmp_path / "fixtures"
        argv = ["migrate", str(tmp_path / "cassettes"), "--to", str(target)]
        assert main(argv) == 1
        out = capsys.readouterr().out
        assert not target.exists()
        assert "5 interactions: 3 migrated, 0 duplicates, 2 refused" in out
        assert "HTTP 429: 1" in out
        assert "binary response body: 1" in out
        assert "(stream)" in out
        assert "redacted: sensitive-key" in out
        assert ".2.json <- " in out
        assert "/interactions/2: POST" in out
        assert api_key not in out
        assert main([*argv, "--write"]) == 1
        capsys.readouterr()
        written = sorted((target / "test_chat").iterdir())
        assert len(written) == 3
        for path in written:
            text = path.read_text()
            assert api_key not in text
            assert "org-abcdef" not in text
        store = FixtureDir(target / "test_chat")
        with httpx.Client(transport=FixtureTransport(store, mode="replay",
                                                     redactor=Redactor(RunSecrets()))) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            headers = {"authorization": f"Bearer {_api_key()}"}
            assert client.post(URL, json=body, headers=headers).json() == {"answer": "Hello"}
            assert client.post(URL, json=body, headers=headers).json() == {"answer": "again"}
            assert client.post(URL, json=body, headers=headers).json() == {"answer": "again"}
            with client.stream("POST", URL, json={**body, "stream": True},
                               headers=headers) as response:
                lines = [line for line in response.iter_lines() if line]
            assert lines == ['data: {"delta":"Hel"}', 'data: {"delta":"lo"}', "data: [DONE]"]
            with pytest.raises(MissingFixtureError):
                client.post(URL, json={**body, "model": "busy"})

    def test_usage_errors(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """No source, a missing source or a --to that is a file: exit 2, one line."""
        assert main(["migrate", "--to", str(tmp_path)]) == 2
        assert main(["migrate", str(tmp_path / "nope"), "--to", str(tmp_path)]) == 2
        (tmp_path / "file").write_text("x")
        assert main(["migrate", str(tmp_path), "--to", str(tmp_path / "file")]) == 2
        assert "Traceback" not in capsys.readouterr().err

    def test_realworld_counts(self, shared_dir: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
        """Third-party recordings: counts of migrated and refused-by-reason interactions."""
        source = shared_dir / "realworld"
        if not source.is_dir():
            pytest.skip("../shared/realworld is not present")
        code = main(["migrate", str(source), "--to", str(tmp_path / "out")])
        out = capsys.readouterr().out
        summary = next(line for line in out.splitlines() if line.startswith("migrate: ")
                       and "interaction" in line)
        assert code == 1
        assert " migrated, " in summary
        assert "refused (" in summary
        assert not (tmp_path / "out").exists()


CONFTEST_VCR = '''
import os, pathlib, httpx2, openai, pytest, vcr

HERE = pathlib.Path(__file__).parent

@pytest.fixture
def client(request):
    recorder = vcr.VCR(record_mode="once",
                       cassette_library_dir=str(HERE / "cassettes" / request.module.__name__))
    with recorder.use_cassette(request.node.name + ".yaml"), openai.OpenAI(
        api_key=os.environ["OPENAI_API_KEY"], base_url=(HERE / "base_url.txt").read_text(),
        http_client=httpx2.Client(), max_retries=0,
    ) as client:
        yield client
'''

CONFTEST_REDACTKEY = '''
import pathlib, httpx2, openai, pytest

HERE = pathlib.Path(__file__).parent

@pytest.fixture
def client(redactkey_transport):
    with openai.OpenAI(
        api_key="sk-replay-placeholder-0000", base_url=(HERE / "base_url.txt").read_text(),
        http_client=httpx2.Client(transport=redactkey_transport), max_retries=0,
    ) as client:
        yield client
'''

TESTS = '''
import json, pathlib

OUT = pathlib.Path(__file__).with_name("answers.jsonl")

def _keep(name, value):
    with OUT.open("a") as handle:
        handle.write(json.dumps({name: value}) + "\\n")

def test_plain(client):
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello"}])
    _keep("plain", answer.choices[0].message.content)

def test_streamed(client):
    chunks = list(client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Count to three"}],
        stream=True))
    _keep("streamed", "".join(c.choices[0].delta.content or "" for c in chunks if c.choices))
'''


class TestFromVcrpy:
    """A vcrpy project recording the openai SDK, migrated, replays through FixtureTransport."""

    def test_vcrpy_project_migrates_and_replays_offline(
            self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> None:
        """Same tests, same answers, no network, another API key."""
        for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
            monkeypatch.delenv(name, raising=False)
        api_key = _api_key()
        monkeypatch.setenv("OPENAI_API_KEY", api_key)
        pytester.makeconftest(CONFTEST_VCR)
        pytester.makepyfile(test_chat=TESTS)
        answers = pytester.path / "answers.jsonl"
        with FakeProvider() as fake:
            (pytester.path / "base_url.txt").write_text(fake.url + "/v1")
            pytester.runpytest(*QUIET, "-p", "no:redactkey").assert_outcomes(passed=2)
            assert fake.attempts() == 2
        recorded = answers.read_text()
        answers.unlink()
        cassettes = sorted(p.name for p in (pytester.path / "cassettes" / "test_chat").iterdir())
        assert cassettes == ["test_plain.yaml", "test_streamed.yaml"]

        monkeypatch.chdir(pytester.path)
        assert main(["migrate", "cassettes", "--to", "fixtures", "--write"]) == 0
        out = capsys.readouterr().out
        assert "2 interactions: 2 migrated, 0 duplicates, 0 refused" in out
        for path in (pytester.path / "fixtures" / "test_chat").iterdir():
            assert api_key not in path.read_text()

        monkeypatch.setenv("OPENAI_API_KEY", _api_key())
        pytester.makeconftest(CONFTEST_REDACTKEY)
        replayed = pytester.runpytest(*QUIET)  # replay: the network guard refuses sockets
        replayed.assert_outcomes(passed=2)
        replayed.stdout.fnmatch_lines(["*replayed 2, recorded 0, missing 0, unused files 0*"])
        assert answers.read_text() == recorded
