"""Every Python block in README.md and docs/ runs.

A block runs in a fresh namespace, in an empty temporary directory, with replay mode
and fake provider keys in the environment; top-level `await` is allowed. Every block
runs as written: what it uses it defines or imports itself, or a block before it on the
same page does (`continue`). A marker on the line before its fence may prepare the
environment it runs in (files, variables, local fake servers), never its names:

    <!-- docs: setup=NAME -->      run SETUPS[NAME] first, in a namespace of its own
    <!-- docs: continue -->        run in the namespace of the previous block of the file
    <!-- docs: replayed -->        run twice: against local fake providers (OpenAI and
                                   Bedrock, keyed as the real hosts by host aliases,
                                   OPENAI_BASE_URL and AWS_ENDPOINT_URL_BEDROCK_RUNTIME
                                   pointing at them, REDACTKEY_MODE=record), then in a
                                   fresh namespace with the fakes stopped, those variables
                                   gone and every connection refused
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
                                   with the fakes stopped, no base URLs, no AWS_*
                                   variable and other keys; every test of the block must
                                   pass in both runs

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

SETUPS: dict[str, str] = {
    # http-clients.md: the search call, recorded once from a canned answer (the block
    # replays it)
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
    """The block runs as a reader would paste it (in the environment its marker prepares;
    after the blocks it continues, run again here, so that any order and any worker
    works)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.aws of this machine
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
                prepared: dict[str, Any] = {"stack": stack}
                if setup is not None:  # its names stay its own: the block runs as written
                    assert setup in SETUPS, f"{step.name}: unknown setup {setup!r}"
                    _run(textwrap.dedent(SETUPS[setup]), f"setup {setup}", prepared)
                if "recorded" in step.options:
                    request.node.user_properties.append(("docs_pytest_session", step.name))
                    _check_recorded(step, request)
                elif "pytest" in step.options:
                    _run_test_module(step, prepared.get("conftest", ""),
                                     request.getfixturevalue("pytester"))
                elif "replayed" in step.options:
                    _run_replayed(step, monkeypatch)
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


def _run_replayed(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    """The block records against local fakes, then replays with every connection refused."""
    from fakebedrock import FakeBedrock
    from redactkey.clients._guard import NetworkGuard

    with FakeProvider() as provider, FakeBedrock() as bedrock, monkeypatch.context() as live:
        Path("pyproject.toml").write_text(
            "[tool.redactkey.hosts]\n"
            f'"{provider.url.removeprefix("http://")}" = "api.openai.com"\n'
            f'"{bedrock.url.removeprefix("http://")}" = '
            '"bedrock-runtime.us-east-1.amazonaws.com"\n', encoding="utf-8")
        live.setenv("OPENAI_BASE_URL", provider.url + "/v1")
        live.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", bedrock.url)
        live.setenv("AWS_ACCESS_KEY_ID", "AKIA" + secrets.token_hex(8).upper())
        live.setenv("AWS_SECRET_ACCESS_KEY", secrets.token_urlsafe(30))
        live.setenv("REDACTKEY_MODE", "record")
        _run(block.code, block.name, {"__name__": "docs_example"})
        assert provider.seen or bedrock.seen, f"{block.name}: the record run made no call"
    refused: dict[str, list[str]] = {}
    with NetworkGuard(block.name, "replay", allow_loopback=False, blocked=refused,
                      how_to_record="record it"):
        _run(block.code, block.name, {"__name__": "docs_example"})
    assert refused == {}


def _run_test_module(block: Block, conftest: str, pytester: pytest.Pytester) -> None:
    named = re.match(r"#\s*(\S+\.py)\b", block.code)
    assert named, f"{block.name}: a pytest block starts with its file name (# tests/test_x.py)"
    target = pytester.path / named.group(1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.code, encoding="utf-8")
    pytester.makeconftest(conftest)
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
    from fakebedrock import FakeBedrock

    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    live = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    with FakeProvider() as openai_fake, FakeProvider() as anthropic_fake, \
            FakeBedrock() as bedrock_fake:
        hosts = {openai_fake.url: "api.openai.com", anthropic_fake.url: "api.anthropic.com",
                 bedrock_fake.url: "bedrock-runtime.us-east-1.amazonaws.com"}
        pytester.makepyprojecttoml("[tool.redactkey.hosts]\n" + "".join(
            f'"{url.removeprefix("http://")}" = "{host}"\n' for url, host in hosts.items()))
        for name, value in zip(live, (openai_fake.url + "/v1", anthropic_fake.url,
                                      bedrock_fake.url, "AKIA" + secrets.token_hex(8).upper(),
                                      secrets.token_urlsafe(30)), strict=True):
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("OPENAI_API_KEY", _fake_key("sk-proj-"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", _fake_key("sk-ant-api03-"))
        record = pytester.runpytest(*_QUIET_PLUGINS, "--redactkey-mode=record", "tests")
        assert openai_fake.seen or anthropic_fake.seen or bedrock_fake.seen, (
            "the record run made no call")
    for name in live:
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
