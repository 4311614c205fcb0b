"""A new user's project end to end: tests that use only the `redactkey` fixture record
requests, an aiohttp stream, boto3 (Bedrock converse) and the openai SDK against local
fake servers with `pytest --redactkey-mode=record`; a second record run records again;
with the servers stopped and no AWS_* / OPENAI_* variable, the default replay passes
and no connection is even attempted. Each run is a fresh pytest process."""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

import pytest

from fakebedrock import FakeBedrock
from fakeprovider import FakeProvider

pytest_plugins = ["pytester"]

TESTS = '''
import asyncio
import os

import httpx2
import openai

BASE = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
KEY = os.environ.get("OPENAI_API_KEY", "sk-replay-placeholder")
HEADERS = {"Authorization": f"Bearer {KEY}"}


def ask(question, **extra):
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}],
            **extra}


def test_requests(redactkey):
    with redactkey.requests_session() as session:
        answer = session.post(f"{BASE}/chat/completions", headers=HEADERS,
                              json=ask("Where is the Eiffel Tower?")).json()
    assert "Paris" in answer["choices"][0]["message"]["content"]


def test_aiohttp_stream(redactkey):
    async def lines():
        async with redactkey.aiohttp_session() as session:
            async with session.post(f"{BASE}/chat/completions", headers=HEADERS,
                                    json=ask("Count to three.", stream=True)) as response:
                return [line async for line in response.content if line.strip()]

    received = asyncio.run(lines())
    assert len(received) > 2 and received[-1].strip() == b"data: [DONE]"


def test_bedrock_converse(redactkey):
    bedrock = redactkey.boto3_client("bedrock-runtime")
    answer = bedrock.converse(modelId="anthropic.claude-3-haiku-20240307-v1:0",
                              messages=[{"role": "user", "content": [{"text": "Hello"}]}])
    assert answer["output"]["message"]["content"][0]["text"]


def test_openai_sdk(redactkey):
    with httpx2.Client(transport=redactkey.transport()) as http:
        client = openai.OpenAI(api_key=KEY, base_url=BASE, max_retries=0, http_client=http)
        completion = client.chat.completions.create(**ask("Write a haiku about fixtures."))
    assert len(completion.choices[0].message.content.splitlines()) == 3
'''

# Every connection the process attempts, whoever makes it, written at the end of the run.
AUDIT = '''
import json, os, sys

ATTEMPTS = []
sys.addaudithook(lambda event, args: event == "socket.connect" and ATTEMPTS.append(
    repr(args[1])))


def pytest_sessionfinish(session):
    with open(os.path.join(str(session.config.rootpath), "connections.json"), "w") as out:
        json.dump(ATTEMPTS, out)
'''


def _summary(result: pytest.RunResult) -> dict[str, int]:
    line = next(line for line in result.outlines if line.startswith("replayed "))
    return {name: int(count) for name, count in
            re.findall(r"(replayed|recorded|missing) (\d+)", line)}


@pytest.mark.slow  # three fresh pytest processes: some 20 s
def test_a_project_records_rerecords_and_replays_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in list(os.environ):
        if name.startswith(("AWS_", "OPENAI_", "REDACTKEY_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.aws of this machine
    pytester.makepyfile(test_clients=TESTS)
    pytester.makeconftest(AUDIT)
    openai_key = "sk-proj-" + secrets.token_urlsafe(36)
    aws_secret = secrets.token_urlsafe(30)
    args = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:cacheprovider",
            "-p", "no:xdist")
    with FakeProvider() as provider, FakeBedrock() as bedrock:
        pytester.makepyprojecttoml(
            "[tool.redactkey.hosts]\n"
            f'"{provider.url.removeprefix("http://")}" = "api.openai.com"\n'
            f'"{bedrock.url.removeprefix("http://")}" = '
            '"bedrock-runtime.us-east-1.amazonaws.com"\n')
        with monkeypatch.context() as live:
            live.setenv("OPENAI_BASE_URL", provider.url + "/v1")
            live.setenv("OPENAI_API_KEY", openai_key)
            live.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock.url)
            live.setenv("AWS_DEFAULT_REGION", "us-east-1")
            live.setenv("AWS_ACCESS_KEY_ID", "AKIA" + secrets.token_hex(8).upper())
            live.setenv("AWS_SECRET_ACCESS_KEY", aws_secret)
            for run in (1, 2):
                result = pytester.runpytest_subprocess(*args, "--redactkey-mode=record")
                result.assert_outcomes(passed=4)
                assert _summary(result) == {"replayed": 0, "recorded": 4, "missing": 0}
                assert (len(provider.seen), len(bedrock.seen)) == (3 * run, run)
    written = sorted((pytester.path / "fixtures" / "test_clients").iterdir())
    assert len(written) == 4
    for path in written:
        text = path.read_text("utf-8")
        assert openai_key not in text, path.name
        assert aws_secret not in text, path.name

    result = pytester.runpytest_subprocess(*args)  # the default: replay
    result.assert_outcomes(passed=4)
    assert _summary(result) == {"replayed": 4, "recorded": 0, "missing": 0}
    assert json.loads((pytester.path / "connections.json").read_text("utf-8")) == []
    assert "refused" not in result.stdout.str()
