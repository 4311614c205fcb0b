"""`redact show`, `redact diff` and `redact git-setup`: recordings reviewed as conversations.

The recordings are made at run time: fixtures through `FixtureTransport`, a vcrpy cassette
through vcrpy, a HAR file from the same exchange, all against a local fake provider.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import vcr

from helpers import ChangingProvider, chat_chunks
from redactkey import FixtureDir, FixtureTransport, ModelFixtures
from redactkey.commands._cli import main
from redactkey.commands._diff import word_diff
from redactkey.fixtures._store import CassetteStore
from redactkey.fixtures._verify import VerifyRules

PROMPT = "Where is the Eiffel Tower?"
PARIS = "The Eiffel Tower is in Paris, France."
LYON = "The Eiffel Tower is in Lyon."
CHAT = {"model": "gpt-4o-mini", "stream": True,
        "messages": [{"role": "system", "content": "Answer briefly."},
                     {"role": "user", "content": PROMPT}]}


@pytest.fixture
def provider() -> Iterator[ChangingProvider]:
    with ChangingProvider(chunks=chat_chunks(PARIS, id="chatcmpl-1", created=1)) as fake:
        yield fake


def _key() -> str:
    return "sk-" + "proj-" + secrets.token_urlsafe(32)


def record_fixture(provider: ChangingProvider, directory: Path, text: str, **changes: Any) -> Path:
    """Record the streamed chat through the openai SDK and FixtureTransport; its file."""
    provider.chunks = chat_chunks(text, **changes)
    transport = FixtureTransport(FixtureDir(directory), mode="record")
    with openai.OpenAI(api_key=_key(), base_url=provider.url + "/v1",
                       http_client=httpx.Client(transport=transport)) as client:
        body = {k: v for k, v in CHAT.items() if k != "stream"}
        assert len(list(client.chat.completions.create(**body, stream=True))) > 2
    (path,) = directory.glob("http.*.json")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, "".join(line for line in err.splitlines(keepends=True)
                              if not line.startswith("redact: skipping"))


class TestShow:
    """`redact show` prints the prompt and the answer of every format."""

    def test_streamed_fixture(self, provider: ChangingProvider, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
        """The prompt by role, the joined answer text and the event count; key and age."""
        path = record_fixture(provider, tmp_path / "fixtures", PARIS)
        code, out, err = _run(capsys, "show", "--plain", str(path))
        assert (code, err) == (0, "")
        assert "[system]\n  Answer briefly.\n[user]\n  Where is the Eiffel Tower?\n" in out
        assert f"[assistant]\n  {PARIS}\n" in out
        assert "answer  200 text/event-stream, streamed in 13 events" in out
        assert f"key     {path.name.split('.')[1]}" in out
        assert re.fullmatch(r"== .*  fixture, recorded \d+s ago by file mtime \(.*\)",
                            out.splitlines()[0])
        assert '"chunks"' not in out
        assert "chatcmpl-1" not in out

    def test_vcrpy_cassette_and_har_file(self, provider: ChangingProvider, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
        """A vcrpy cassette and a HAR file of the same exchange show the same conversation."""
        cassette = tmp_path / "chat.yaml"
        with vcr.VCR(record_mode="once").use_cassette(str(cassette)), httpx.Client() as client:
            response = client.post(provider.url + "/v1/chat/completions", json=CHAT)
        har = tmp_path / "chat.har"
        har.write_text(json.dumps(_har(response)), encoding="utf-8")
        shown = []
        for path in (cassette, har):
            code, out, err = _run(capsys, "show", str(path))
            assert (code, err) == (0, "")
            assert f"[user]\n  {PROMPT}\n" in out
            assert f"[assistant]\n  {PARIS}\n" in out
            shown.append(out.split("\n", 1)[1])
        assert shown[0] == shown[1]
        assert "text/event-stream" in shown[0]
        assert "streamed in 13 events" in shown[0]

    def test_json_and_model_fixtures(self, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """--format json; a model call's structured answer, tool call and recorded error."""
        models = ModelFixtures(FixtureDir(tmp_path), mode="record")
        models.call("structured", {"prompt": "Plan a trip."}, lambda: {"city": "Paris"})
        models.call("chat", {"messages": [{"role": "user", "content": "Weather?"}],
                             "tools": [{"name": "get_weather"}]},
                    lambda: {"content": [{"type": "tool_use", "name": "get_weather",
                                          "input": {"city": "Paris"}}]})
        files = sorted(str(p) for p in tmp_path.glob("*.json"))
        code, out, _ = _run(capsys, "show", "--format", "json", *files)
        assert code == 0
        calls = {f["calls"][0]["call"]["kind"]: f["calls"][0] for f in json.loads(out)["files"]}
        assert calls["structured"]["answer"] == {"structured": {"city": "Paris"}}
        assert calls["structured"]["call"]["messages"] == [{"role": "user",
                                                            "text": "Plan a trip."}]
        assert calls["chat"]["call"]["tools"] == ["get_weather"]
        assert calls["chat"]["answer"]["tool_calls"] == [
            {"name": "get_weather", "arguments": {"city": "Paris"}}]

    def test_secrets_are_redacted(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A secret of the environment in a cassette's prompt or URL is never shown."""
        secret = "tok" + secrets.token_hex(12)
        monkeypatch.setenv("WEATHER_TOKEN", secret)
        cassette = tmp_path / "leaky.yaml"
        with vcr.VCR(record_mode="once").use_cassette(str(cassette)), \
                ChangingProvider() as fake, httpx.Client() as client:
            client.post(f"{fake.url}/v1/chat/completions?token={secret}",
                        json={"model": "m", "messages": [{"role": "user", "content": secret}]})
        assert secret in cassette.read_text(encoding="utf-8")
        for fmt in ("text", "json"):
            code, out, _ = _run(capsys, "show", "--format", fmt, str(cassette))
            assert code == 0
            assert secret not in out
            assert "[REDACTED]" in out

    def test_unreadable_input_exits_2(self, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
        """Not a recording, corrupt, missing: one line each, exit 2; --textconv shows text."""
        (tmp_path / "notes.json").write_text('{"a": 1}', encoding="utf-8")
        (tmp_path / "broken.json").write_text('{"a": ', encoding="utf-8")
        code, out, err = _run(capsys, "show", *(str(tmp_path / n) for n in (
            "notes.json", "broken.json", "missing.json")))
        assert (code, out) == (2, "")
        assert "notes.json: holds no recorded call (json)" in err
        assert "broken.json: not valid JSON" in err
        assert "missing.json: no such file" in err
        assert "Traceback" not in err
        code, out, _ = _run(capsys, "show", "--textconv", str(tmp_path / "notes.json"))
        assert (code, out) == (0, '{"a": 1}\n')


def _har(response: httpx.Response) -> dict[str, Any]:
    request = response.request
    return {"log": {"version": "1.2", "creator": {"name": "tests", "version": "1"}, "entries": [{
        "startedDateTime": "2025-01-01T00:00:00.000Z", "time": 1,
        "request": {"method": request.method, "url": str(request.url), "httpVersion": "HTTP/1.1",
                    "headers": [{"name": k, "value": v} for k, v in request.headers.items()],
                    "postData": {"mimeType": "application/json",
                                 "text": request.content.decode()}},
        "response": {"status": response.status_code, "statusText": "OK",
                     "headers": [{"name": k, "value": v} for k, v in response.headers.items()],
                     "content": {"mimeType": response.headers["content-type"],
                                 "size": len(response.content), "text": response.text}},
    }]}}


class TestDiff:
    """`redact diff A B`: the same by meaning, or each difference."""

    def test_ids_and_timestamps_only(self, provider: ChangingProvider, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """A re-record that changes ids, timestamps and chunking is the same by meaning;
        --all shows what changed."""
        old = record_fixture(provider, tmp_path / "a", PARIS, id="chatcmpl-1", created=1)
        new = record_fixture(provider, tmp_path / "b", PARIS, size=7, id="chatcmpl-2",
                             created=2, system_fingerprint="fp_2")
        assert old.read_bytes() != new.read_bytes()
        code, out, _ = _run(capsys, "diff", str(old), str(new))
        assert code == 0
        assert out.startswith("same by meaning (volatile fields")
        code, out, _ = _run(capsys, "diff", "--all", str(old), str(new))
        assert code == 1
        assert "events/0/id\n    - chatcmpl-1\n    + chatcmpl-2" in out

    def test_changed_answer(self, provider: ChangingProvider, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
        """A changed answer text exits 1 and prints the field, the old and the new text."""
        old = record_fixture(provider, tmp_path / "a", PARIS, id="chatcmpl-1")
        new = record_fixture(provider, tmp_path / "b", LYON, id="chatcmpl-2")
        code, out, _ = _run(capsys, "diff", str(old), str(new))
        assert code == 1
        assert (f"  answer/choices/0/message/content\n    - {PARIS}\n    + {LYON}\n") in out
        assert "chatcmpl" not in out

    def test_ignore_and_long_texts(self, provider: ChangingProvider, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
        """--ignore hides a pointer; a long text is shown as a word diff."""
        long = PARIS + " It was built for the 1889 World's Fair and is 330 metres tall."
        old = record_fixture(provider, tmp_path / "a", long)
        new = record_fixture(provider, tmp_path / "b", long.replace("330", "300"))
        code, out, _ = _run(capsys, "diff", str(old), str(new))
        assert code == 1
        assert "content (word diff)\n    The Eiffel" in out
        assert "[-330-]{+300+} metres" in out
        code, out, _ = _run(capsys, "diff", "--ignore", "/choices/*/message", str(old), str(new))
        assert code == 0
        assert out.startswith("same by meaning")

    def test_other_formats_and_bad_input(self, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
        """A vcrpy cassette against its migrated fixture is the same; unreadable input is 2."""
        with ChangingProvider(chunks=chat_chunks(PARIS)) as fake:
            cassette = tmp_path / "chat.yaml"
            with vcr.VCR(record_mode="once").use_cassette(str(cassette)), httpx.Client() as c:
                c.post(fake.url + "/v1/chat/completions", json=CHAT)
        assert main(["migrate", str(cassette), "--to", str(tmp_path / "fx"), "--write"]) == 0
        (fixture,) = (tmp_path / "fx").glob("http.*.json")
        capsys.readouterr()
        code, out, _ = _run(capsys, "diff", str(cassette), str(fixture))
        assert code == 0
        assert out.startswith("same by meaning")
        (tmp_path / "bad.json").write_text("{", encoding="utf-8")
        code, out, err = _run(capsys, "diff", str(cassette), str(tmp_path / "bad.json"))
        assert (code, out) == (2, "")
        assert "bad.json: not valid JSON" in err
        assert _run(capsys, "diff", str(cassette))[0] == 2
        assert _run(capsys, "diff", "--git", str(cassette))[0] == 2

    def test_git_driver_arguments(self, tmp_path: Path, provider: ChangingProvider,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """--git: seven arguments, /dev/null for an added file, exit 0 when they differ."""
        old = record_fixture(provider, tmp_path / "a", PARIS)
        new = record_fixture(provider, tmp_path / "b", LYON)
        code, out, _ = _run(capsys, "diff", "--git", "fx/x.json", str(old), "0" * 40, "100644",
                            str(new), "1" * 40, "100644")
        assert code == 0
        assert out.startswith("diff --redactkey a/fx/x.json b/fx/x.json\ncall 1: POST ")
        assert f"+ {LYON}" in out
        code, out, _ = _run(capsys, "diff", "--git", "fx/x.json", "/dev/null", ".", ".",
                            str(new), "1" * 40, "100644")
        assert code == 0
        assert "new recording (fixture)\n" in out
        assert f"+   {LYON}\n" in out


    def test_cassette_store_pairs_calls_by_key(self, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
        """A store's calls pair up by key: one changed answer, one call added."""
        for name, answers in (("old", {"hi": "hello", "bye": "ciao"}),
                              ("new", {"hi": "hello", "bye": "arrivederci", "new": "nuovo"})):
            models = ModelFixtures(CassetteStore(tmp_path / f"{name}.json"), mode="record")
            for prompt, answer in answers.items():
                models.call("chat", {"prompt": prompt}, lambda a=answer: {"text": a})
        code, out, _ = _run(capsys, "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
        assert code == 1
        assert "  answer/text\n    - ciao\n    + arrivederci\n" in out
        assert out.count("call ") == 2
        assert "added: chat" in out
        code, out, _ = _run(capsys, "show", str(tmp_path / "new.json"))
        assert code == 0
        assert out.count("-- call ") == 3


class TestVerifyRulesIgnores:
    """`VerifyRules.ignores`: the volatile places diff hides are verify's."""

    def test_presets_and_own_pointers(self) -> None:
        """The chat preset's id, created and usage; own pointers; presets off."""
        answer = {"object": "chat.completion", "id": "x", "choices": []}
        rules = VerifyRules(ignore=["/choices/*/logprobs", "/extra"])
        assert rules.ignores(answer, ("id",))
        assert rules.ignores(answer, ("usage", "total"))
        assert rules.ignores(answer, ("extra",))
        assert not rules.ignores(answer, ("choices",))
        assert not VerifyRules(presets=False).ignores(answer, ("id",))

    def test_word_diff(self) -> None:
        """Words removed and added, spacing kept."""
        assert word_diff("a b  c d", "a x  c d e") == "a [-b-]{+x+}  c d{+ e+}"


# --------------------------------------------------------------------------- real git


def _git_env(tmp_path: Path) -> dict[str, str]:
    """No user or system git configuration; `redact` of this environment on PATH."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDACTKEY", "GIT_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
               GIT_CONFIG_NOSYSTEM="1", GIT_PAGER="cat", LC_ALL="C",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    return env


@pytest.mark.slow  # real git calling `redact` as its textconv and external diff driver
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
class TestGitEndToEnd:
    """A scratch repository set up as docs/review.md says, with real git."""

    def _repo(self, tmp_path: Path) -> tuple[Path, Any]:
        repo = tmp_path / "repo"
        (repo / "tests" / "fixtures").mkdir(parents=True)
        env = _git_env(tmp_path)

        def git(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid",
                 "-c", "commit.gpgsign=false", *args],
                cwd=repo, env=env, capture_output=True, text=True, check=True)

        git("init", "-q")
        return repo, git

    def _setup(self, repo: Path, tmp_path: Path, *extra: str) -> str:
        done = subprocess.run([str(Path(sys.executable).parent / "redact"), "git-setup",
                               *extra, "tests/fixtures"], cwd=repo, env=_git_env(tmp_path),
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def test_textconv(self, tmp_path: Path, provider: ChangingProvider) -> None:
        """git diff, git log -p and git show print the answer text as a line, not chunks."""
        repo, git = self._repo(tmp_path)
        said = self._setup(repo, tmp_path)
        assert "added to .gitattributes: tests/fixtures/** diff=redactkey" in said
        assert 'git config diff.redactkey.textconv "redact show --textconv"' in said
        attributes = (repo / ".gitattributes").read_bytes()
        assert self._setup(repo, tmp_path) == "git-setup: already set up; nothing changed\n"
        assert (repo / ".gitattributes").read_bytes() == attributes
        assert not (tmp_path / "home" / ".gitconfig").read_text(encoding="utf-8")

        fixtures = repo / "tests" / "fixtures"
        record_fixture(provider, fixtures, PARIS, id="chatcmpl-1", created=1)
        git("add", "-A")
        git("commit", "-qm", "Record")
        record_fixture(provider, fixtures, PARIS, id="chatcmpl-2", created=2)
        assert git("diff", "--stat").stdout  # the bytes changed ...
        assert git("diff").stdout == ""  # ... the conversation did not
        git("commit", "-qam", "Re-record")
        record_fixture(provider, fixtures, LYON, id="chatcmpl-3", created=3)
        diff = git("diff").stdout
        assert f"\n-  {PARIS}\n+  {LYON}\n" in diff
        assert '"json"' not in diff
        assert "chatcmpl" not in diff
        git("commit", "-qam", "Lyon")
        for command in (("log", "-p", "-1"), ("show", "HEAD")):
            assert f"\n+  {LYON}\n" in git(*command).stdout

    def test_external_driver(self, tmp_path: Path, provider: ChangingProvider) -> None:
        """The external driver prints the meaning diff; switching drivers keeps one."""
        repo, git = self._repo(tmp_path)
        self._setup(repo, tmp_path)
        said = self._setup(repo, tmp_path, "--external")
        assert "--unset diff.redactkey.textconv" in said
        fixtures = repo / "tests" / "fixtures"
        record_fixture(provider, fixtures, PARIS, id="chatcmpl-1")
        git("add", "-A")
        git("commit", "-qm", "Record")
        record_fixture(provider, fixtures, PARIS, id="chatcmpl-2")
        assert "same by meaning" in git("diff").stdout
        record_fixture(provider, fixtures, LYON, id="chatcmpl-3")
        diff = git("diff").stdout
        assert f"  answer/choices/0/message/content\n    - {PARIS}\n    + {LYON}\n" in diff
        git("commit", "-qam", "Lyon")
        assert f"+ {LYON}" in git("log", "-p", "--ext-diff", "-1").stdout
