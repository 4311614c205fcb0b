"""Every Python block in README.md and docs/ runs.

A block runs in a fresh namespace, in an empty temporary directory, with replay mode
and fake provider keys in the environment; top-level `await` is allowed. A block that
is a fragment says so with a marker on the line before its fence, and a hidden setup
below completes it:

    <!-- docs: setup=NAME -->      run SETUPS[NAME] first, in the same namespace
    <!-- docs: continue -->        run in the namespace of the previous block of the file
    <!-- docs: pytest setup=NAME --> the block is a test module (its first line names
                                   it, `# tests/test_x.py`): SETUPS[NAME] runs first and
                                   may define `conftest` (the text of a conftest.py);
                                   then pytest runs the module in a temporary project
                                   and every test in it must pass
    <!-- docs: conftest -->          the block is the `tests/conftest.py` of its page's
                                   recorded session (it also runs as code)
    <!-- docs: recorded -->          the block is a test module (`# tests/test_x.py`) of
                                   its page's recorded session: the page's `recorded`
                                   and `conftest` blocks form one project, which pytest
                                   runs once with `--redactkey-mode=record` against
                                   local fake providers on loopback (a host alias keys
                                   them as the real API hosts), then again in replay
                                   with the fakes stopped, no base URLs and other keys;
                                   every test of the block must pass in both runs

A setup may enter context managers (local fake servers) on `stack`, which is closed
after the block. There is no marker that skips a block: every Python block runs, and
`test_count_of_blocks_run` checks that the parser finds every fence.

Docs name public names only: no `redactkey._private` import or attribute.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import os
import re
import secrets
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from docblocks import DOCS, PYTHON, Block, blocks, fence_count
from fakeprovider import FakeProvider

pytest_plugins = ["pytester"]

_PRIVATE = re.compile(r"\bredactkey\.(?:_[a-z]\w*|[a-z]\w*\._\w+)")

FAKE_KEYS = {
    "OPENAI_API_KEY": "sk-proj-" + "Dq7xW2" * 8,
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "Rk5vN8" * 12,
}

_CHAT = """
import httpx2, openai

def _answer(request):
    return httpx2.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Hello!"}}]})

client = openai.OpenAI(http_client=httpx2.Client(transport=httpx2.MockTransport(_answer)))
"""

SETUPS: dict[str, str] = {
    # fixture-format.md: the document a fixture file holds, a key to look up
    "document": "import json\ndocument = {'version': 1}\n",
    "fixture-key": "key = '0' * 64\n",
    # clients.md: the API key a reader passes
    "api-key": "key = 'sk-proj-' + 'Dq7xW2' * 8\n",
    # modes.md: a model client with sync, streaming and async calls, recorded on first use
    "model-client": """
import os
os.environ["REDACTKEY_MODE"] = "auto"
components = ["OPENAI_API_KEY"]
prompt = "Say hello"
request = {"model": "m-1", "messages": [{"role": "user", "content": prompt}]}

class _Client:
    def complete(self, **request):
        return "Hello!"
    def stream(self, **request):
        return iter(["Hel", "lo!"])
    async def acomplete(self, **request):
        return "Hello!"
    async def astream(self, **request):
        for piece in ("Hel", "lo!"):
            yield piece

client = _Client()
""",
    # modes.md: ModelFixtures in front of an OpenAI client answering from a mock transport
    "openai-fixtures": _CHAT + """
import os
from openai.types.chat import ChatCompletion
from redactkey import FixtureDir, ModelFixtures
os.environ["REDACTKEY_MODE"] = "auto"
fixtures = ModelFixtures(FixtureDir("tests/fixtures"))
""",
    # modes.md: the ToolFixtures of the block above, and the typing names the tools use
    "stream-tools": """
from collections.abc import AsyncIterator, Iterator
from redactkey import FixtureDir, Redactor
from redactkey.record._tools import ToolFixtures
tools = ToolFixtures(FixtureDir("tests/fixtures"), redactor=Redactor())
""",
    # redaction.md: components that read secrets, a request, chunks and an answer
    "redaction": """
from pydantic import SecretStr
from pydantic_settings import BaseSettings

class Settings(BaseSettings):
    anthropic_api_key: SecretStr = SecretStr("sk-ant-api03-" + "Zz9" * 20)

class GitHubTool:
    secret_slots = ("GITHUB_TOKEN",)

settings, github_tool = Settings(), GitHubTool()
request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
chunks = ["Hel", "lo"]
answer = {"text": "Hello"}
""",
    # http-clients.md: the search call, recorded once from a canned answer
    "recorded-search": """
import io
import requests
import urllib3
from requests.adapters import BaseAdapter
from redactkey import FixtureDir, RequestsAdapter

class _Canned(BaseAdapter):
    def send(self, request, **kwargs):
        response = requests.Response()
        response.status_code = 200
        response.raw = urllib3.HTTPResponse(body=io.BytesIO(b'{"hits": []}'), status=200,
                                            headers={"content-type": "application/json"},
                                            preload_content=False)
        response.headers["content-type"] = "application/json"
        response.url, response.request = request.url, request
        return response

    def close(self):
        pass

_session = requests.Session()
_session.mount("https://", RequestsAdapter(FixtureDir("tests/fixtures"), mode="record",
                                           inner=_Canned()))
_session.post("https://api.example.com/v1/search", json={"q": "redactkey"})
""",
    # http-clients.md: reading a stream with requests, aiohttp, httpx (the clients alone)
    "stream-requests": """
import contextlib
url, body = "https://api.example.test/v1/stream", {"stream": True}

class _Response:
    def iter_lines(self):
        return iter([b"data: 1", b"data: 2"])

class _Session:
    def post(self, url, json=None, stream=False):
        return contextlib.nullcontext(_Response())

session = _Session()
""",
    "stream-aiohttp": """
import contextlib
url, body = "https://api.example.test/v1/stream", {"stream": True}

class _Content:
    async def __aiter__(self):
        for line in (b"data: 1", b"data: 2"):
            yield line

class _Response:
    content = _Content()

class _Session:
    def post(self, url, json=None):
        return contextlib.nullcontext(_Response())

session = _Session()
""",
    "stream-httpx": """
import httpx2
url, body = "https://api.example.test/v1/stream", {"stream": True}
client = httpx2.Client(transport=httpx2.MockTransport(
    lambda request: httpx2.Response(200, text="data: 1\\n\\ndata: 2\\n\\n")))
""",
    # clients.md: the Bedrock call of the example, recorded from a local fake Bedrock (the
    # project's host alias keys it as a call to AWS); the fake stops before the example
    # replays it with the AWS endpoint and other credentials
    "bedrock-recorded": """
import os, secrets
import boto3
from fakebedrock import FakeBedrock
from redactkey import FixtureDir, use_botocore

def _credentials():
    os.environ["AWS_ACCESS_KEY_ID"] = "AKIA" + secrets.token_hex(8).upper()
    os.environ["AWS_SECRET_ACCESS_KEY"] = secrets.token_urlsafe(30)

for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
             "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
    os.environ.pop(name, None)
os.environ.update(AWS_CONFIG_FILE="aws-config", AWS_SHARED_CREDENTIALS_FILE="aws-credentials",
                  AWS_EC2_METADATA_DISABLED="true")
with FakeBedrock() as _fake:
    _host = _fake.url.removeprefix("http://")
    with open("pyproject.toml", "w", encoding="utf-8") as _file:
        _file.write(f'[tool.redactkey.hosts]\\n"{_host}" = '
                    '"bedrock-runtime.us-east-1.amazonaws.com"\\n')
    _credentials()
    os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = _fake.url
    use_botocore(boto3.client("bedrock-runtime", region_name="us-east-1"),
                 FixtureDir("tests/fixtures"), mode="record").converse(
        modelId="anthropic.claude-3-haiku-20240307-v1:0",
        messages=[{"role": "user", "content": [{"text": "Hello"}]}])
    assert len(_fake.seen) == 1
del os.environ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
_credentials()
""",
    # cli/migrate.md: the suite before migrating, which uses pytest-recording's `vcr`
    # marker. pytest-recording is not a test dependency (its --record-mode option collides
    # with other plugins), so the marker is registered as that plugin registers it, and
    # the test calls a local fake OpenAI server: the test module itself runs unchanged.
    "pytest-recording": """
import os
from fakeprovider import FakeProvider

_fake = stack.enter_context(FakeProvider())
os.environ["OPENAI_BASE_URL"] = _fake.url + "/v1"
conftest = (
    "def pytest_configure(config):\\n"
    "    config.addinivalue_line('markers', 'vcr: record and replay HTTP (pytest-recording)')\\n"
)
""",
    # redaction.md: a client holding a session token
    "session-client": "class _C:\n    session_token = 'tok'\nclient = _C()\n",
}


BLOCKS = blocks(PYTHON)


def _run(code: str, name: str, namespace: dict[str, Any]) -> None:
    compiled = compile(code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                       dont_inherit=True)
    result = eval(compiled, namespace)
    if asyncio.iscoroutine(result):
        asyncio.run(result)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           request: pytest.FixtureRequest) -> None:
    """The block runs as a reader would paste it (after its hidden setup, if marked; after
    the blocks it continues, run again here, so that any order and any worker works)."""
    monkeypatch.chdir(tmp_path)
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in FAKE_KEYS.items():
        monkeypatch.setenv(name, value)
    saved = dict(os.environ)
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    try:
        with warnings.catch_warnings(), contextlib.ExitStack() as stack:
            # a reader sees warnings; they are not the example's failure
            warnings.simplefilter("default")
            for step in _chain(block):
                setup = step.options.get("setup")
                if setup is not None:
                    assert setup in SETUPS, f"{step.name}: unknown setup {setup!r}"
                    namespace["stack"] = stack
                    _run(textwrap.dedent(SETUPS[setup]), f"setup {setup}", namespace)
                    del namespace["stack"]
                if "recorded" in step.options:
                    request.node.user_properties.append(("docs_pytest_session", step.name))
                    _check_recorded(step, request)
                elif "pytest" in step.options:
                    _run_test_module(step, namespace, request.getfixturevalue("pytester"))
                else:
                    _run(step.code, step.name, namespace)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _chain(block: Block) -> list[Block]:
    """`block` after the blocks of its page that it continues, first one first."""
    same_page = [b for b in BLOCKS if b.path == block.path]
    index = same_page.index(block)
    start = index
    while "continue" in same_page[start].options:
        assert start > 0, f"{block.name}: 'continue' needs a block before it"
        start -= 1
    return same_page[start: index + 1]


def _run_test_module(block: Block, namespace: dict[str, Any],
                     pytester: pytest.Pytester) -> None:
    named = re.match(r"#\s*(\S+\.py)\b", block.code)
    assert named, f"{block.name}: a pytest block starts with its file name (# tests/test_x.py)"
    target = pytester.path / named.group(1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.code, encoding="utf-8")
    pytester.makeconftest(namespace.get("conftest", ""))
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest",
                                "--strict-markers", "-q", str(target))
    shown = f"{block.name}:\n" + "\n".join(result.outlines[-30:])
    assert result.ret == 0, shown
    assert result.parseoutcomes().get("passed", 0) >= 1, shown


_PROJECTS: dict[Path, tuple[pytest.RunResult, pytest.RunResult]] = {}
_QUIET_PLUGINS = ("-p", "redactkey.pytest_plugin", "-p", "no:cacheprovider",
                  "--import-mode=importlib", "--strict-markers", "-q")


def _fake_key(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(36).replace("-", "x").replace("_", "y")


def _recorded_project(path: Path, request: pytest.FixtureRequest) -> tuple[Any, Any]:
    """The record and replay runs of the page's session (made once per page and process)."""
    if path in _PROJECTS:
        return _PROJECTS[path]
    # imported here, the SDKs stay imported across the in-process runs (pytester drops
    # the modules a run imports, and importing them again costs seconds per run)
    import anthropic  # noqa: F401
    import httpx2  # noqa: F401
    import openai  # noqa: F401

    pytester: pytest.Pytester = request.getfixturevalue("pytester")
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    page = [b for b in BLOCKS if b.path == path]
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(
        "\n\n".join(b.code for b in page if "conftest" in b.options), encoding="utf-8")
    for block in page:
        if "recorded" in block.options:
            named = re.match(r"#\s*(tests/\S+\.py)\b", block.code)
            assert named, f"{block.name}: a recorded block starts with # tests/test_x.py"
            assert not (pytester.path / named.group(1)).exists(), f"{block.name}: file twice"
            (pytester.path / named.group(1)).write_text(block.code, encoding="utf-8")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with FakeProvider() as openai_fake, FakeProvider() as anthropic_fake:
        hosts = {openai_fake.url: "api.openai.com", anthropic_fake.url: "api.anthropic.com"}
        pytester.makepyprojecttoml("[tool.redactkey.hosts]\n" + "".join(
            f'"{url.removeprefix("http://")}" = "{host}"\n' for url, host in hosts.items()))
        monkeypatch.setenv("OPENAI_BASE_URL", openai_fake.url + "/v1")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_fake.url)
        monkeypatch.setenv("OPENAI_API_KEY", _fake_key("sk-proj-"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", _fake_key("sk-ant-api03-"))
        record = pytester.runpytest(*_QUIET_PLUGINS, "--redactkey-mode=record", "tests")
        assert openai_fake.seen or anthropic_fake.seen, "the record run made no call"
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", _fake_key("sk-proj-"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", _fake_key("sk-ant-api03-"))
    replay = pytester.runpytest(*_QUIET_PLUGINS, "--redactkey-mode=replay", "tests")
    _PROJECTS[path] = (record, replay)
    return record, replay


def _check_recorded(block: Block, request: pytest.FixtureRequest) -> None:
    """Every test the block defines passed, recorded and then replayed."""
    named = re.match(r"#\s*(tests/\S+\.py)\b", block.code)
    assert named, f"{block.name}: a recorded block starts with # tests/test_x.py"
    defined = {node.name for node in ast.parse(block.code).body
               if isinstance(node, ast.FunctionDef) and node.name.startswith("test")}
    assert defined, f"{block.name}: a recorded block defines tests"
    for run, result in zip(("record", "replay"), _recorded_project(block.path, request),
                           strict=True):
        shown = f"{block.name} ({run}):\n" + "\n".join(result.outlines[-40:])
        reports = [r for r in result.reprec.getreports(
                       ("pytest_runtest_logreport", "pytest_collectreport"))
                   if r.nodeid.split("::")[0] == named.group(1)]
        assert not [r for r in reports if r.failed], shown
        passed = {r.nodeid.split("::")[-1] for r in reports if r.passed and r.when == "call"}
        assert passed == defined, shown


def test_count_of_blocks_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The parser finds every Python fence of the docs (indented ones too); each runs as a
    test of its own, and the run's summary prints how many ran."""
    assert len(BLOCKS) == fence_count(PYTHON)
    with capsys.disabled():
        print(f"\ndocs: {len(BLOCKS)} Python blocks collected from {len(DOCS)} files "
              f"({sum('setup' in b.options for b in BLOCKS)} with a hidden setup, "
              f"{sum('recorded' in b.options for b in BLOCKS)} recorded and replayed "
              f"as pytest sessions)")
    assert sum("recorded" in b.options for b in BLOCKS) >= 4
    assert len(BLOCKS) >= 42


def test_docs_name_public_names_only() -> None:
    """No page points users at a private module or name of redactkey."""
    problems = [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}"
        for path in DOCS if "decisions" not in path.parts
        for text in [path.read_text(encoding="utf-8")]
        for m in _PRIVATE.finditer(text)
        # an exception as Python prints it, in a page's sample output, is not advice
        if not re.match(r"redactkey\._errors\.[A-Z]\w*: ", text[m.start():].split("\n", 1)[0])
    ]
    assert problems == []


def test_install_lines_say_from_a_checkout() -> None:
    """Until a release exists, no page tells users to `pip install redactkey`."""
    problems = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in DOCS
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"pip install (?:-U )?redactkey\b", line)
    ]
    assert problems == []


def test_decision_index_lists_every_record() -> None:
    """docs/decisions/README.md links every decision record, and only existing ones."""
    decisions = ROOT / "docs" / "decisions"
    index = (decisions / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((\d{4}-[^)]+\.md)\)", index))
    records = {path.name for path in decisions.glob("[0-9][0-9][0-9][0-9]-*.md")}
    assert sorted(records - linked) == [], "add these records to docs/decisions/README.md"
    assert sorted(linked - records) == []


@pytest.mark.parametrize("block", blocks(("toml",)), ids=lambda b: b.name)
def test_toml_block_is_a_valid_configuration(block: Block, tmp_path: Path) -> None:
    """A configuration example of the docs is one that redactkey accepts."""
    from redactkey import load_config

    (tmp_path / "pyproject.toml").write_text(block.code, encoding="utf-8")
    assert load_config(tmp_path).source == str(tmp_path / "pyproject.toml")


@pytest.mark.parametrize("block", blocks(("ini",)), ids=lambda b: b.name)
def test_ini_block_names_only_known_options(block: Block, pytester: pytest.Pytester) -> None:
    """A pytest ini example of the docs passes `--strict-config` (every option exists)."""
    pytester.makefile(".ini", pytest=block.code)
    pytester.makepyfile(test_it="def test_it():\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest",
                                "--strict-config", "-q")
    assert result.ret == 0, "\n".join(result.outlines + result.errlines)
