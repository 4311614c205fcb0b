"""Every Python block in README.md and docs/ runs.

A block runs in a fresh namespace, in an empty temporary directory, with replay mode
and fake provider keys in the environment; top-level `await` is allowed. A block that
is a fragment says so with a marker on the line before its fence, and a hidden setup
below completes it:

    <!-- docs: setup=NAME -->      run SETUPS[NAME] first, in the same namespace
    <!-- docs: continue -->        run in the namespace of the previous block of the file

Docs name public names only: no `redactkey._private` import or attribute.
"""

from __future__ import annotations

import ast
import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_MARKER = re.compile(r"<!--\s*docs:\s*(.*?)\s*-->\s*$")
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
from redactkey import FixtureDir, Redactor, ToolFixtures
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
    # redaction.md: a client holding a session token
    "session-client": "class _C:\n    session_token = 'tok'\nclient = _C()\n",
}


@dataclass
class Block:
    path: Path
    line: int
    code: str
    setup: str | None
    continues: bool

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def _blocks() -> list[Block]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            options = dict(
                part.partition("=")[::2] for part in re.split(r"[,\s]+", marker.group(1))
            ) if marker else {}
            found.append(Block(
                path=path,
                line=text[: match.start()].count("\n") + 2,
                code=match.group(1),
                setup=options.get("setup") or None,
                continues="continue" in options,
            ))
    return found


BLOCKS = _blocks()


def _run(code: str, name: str, namespace: dict[str, Any]) -> None:
    compiled = compile(code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                       dont_inherit=True)
    result = eval(compiled, namespace)
    if asyncio.iscoroutine(result):
        asyncio.run(result)


_namespaces: dict[Path, dict[str, Any]] = {}


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
