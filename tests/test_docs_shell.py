"""Every shell block of README.md and docs/ that names a redactkey command runs.

Each command line of a ```sh / ```bash / ```shell / ```console block (and each `run:`
step of a CI workflow shown as ```yaml) that invokes
`redact ...` (README's `.venv/bin/redact` too) or `pytest` runs in a copy of a small
temporary project, in the block's order: `redact` through the CLI's entry point, `pytest`
in-process (pytester) with the plugin. Other lines (installs, `git`) are not run. Each
command must exit as the docs say and print no traceback.

The project (built once per module): `pyproject.toml` with `[tool.redactkey]`, a
leaking vcrpy cassette (`tests/cassettes/`, from corpus/), a clean text file
(`notes.txt`), `corpus/` (a link to the repository's), a chat request
(`request.json`), an HTTP request document (`http-request.json`), a JSON value
(`value.json`), two test modules using `model_fixtures`, their recorded fixtures and
the run report of that recording, all committed to a git repository.

Placeholders are replaced (`PLACEHOLDERS`): synopsis words such as `FILES_OR_DIRECTORIES...`,
`FILE` or `DIR` become paths of the project, and `sk-...` a fake key built at run time.
In a ```console block only the `$ ` lines are commands. The exit code
expected is the one a line's comment starts with (`# exits 1`), else the block's marker
`<!-- docs: exit=1,0 -->` (one code per command, in order), else 0.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from docblocks import SHELL, Block, blocks
from redactkey.commands._cli import main

pytest_plugins = ["pytester"]

FAKE_OPENAI = "sk-proj-" + "Hq4Lm9Tz" * 6
FAKE_ANTHROPIC = "sk-ant-api03-" + "Wd8Kc3Np" * 10

# (pattern, replacement), in order; upper-case words match whole words only
PLACEHOLDERS = [
    (r"\[OPTIONS\]", ""),
    (r"\bFILES_OR_DIRECTORIES\.\.\.", "tests/fixtures notes.txt"),
    (r"\bDIRECTORIES_OR_FILES\.\.\.", "tests/fixtures notes.txt"),
    (r"\bPATHS\.\.\.", "tests/cassettes"),
    (r"(--config) FILE\b", r"\1 pyproject.toml"),
    (r"(--run-report) FILE\b", r"\1 .redactkey-report.json"),
    (r"(-o|--output|--write-baseline) FILE\b", r"\1 out.txt"),
    (r"\bFILES?(?:\.\.\.)?(?=\s|$)", "notes.txt"),
    (r"\bDIR(?:ECTORY)?(?:\.\.\.)?(?=\s|$)", "tests/fixtures"),
    (r"\bsk-ant-\.\.\.", FAKE_ANTHROPIC),
    (r"\bsk-\.\.\.", FAKE_OPENAI),
]

_TEST_MODULE = """
def test_{name}(model_fixtures):
    request = {{"model": "{model}", "messages": [{{"role": "user", "content": "{prompt}"}}]}}
    answer = model_fixtures.call("chat", request, lambda: {{"text": "{answer}"}})
    assert answer == {{"text": "{answer}"}}
"""

_QUIET = ("-p", "no:randomly", "-p", "no:hypothesispytest", "-p", "no:cacheprovider")


def _runs(line: str) -> bool:
    words = line.split()
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        words = words[1:]
    return bool(words) and words[0] in ("redact", ".venv/bin/redact", "pytest")


def _commands(block: Block) -> list[tuple[str, int | None]]:
    """The lines of `block` that run: (command, exit code its comment states)."""
    found = []
    for raw in block.code.splitlines():
        if block.lang == "console" and not raw.startswith("$ "):
            continue  # a console block's other lines are output
        line = raw.strip().removeprefix("$ ")
        command, _, comment = line.partition(" #")
        if line.startswith("#"):
            continue
        stated = re.match(r"\s*exits (\d)\b", comment)  # `# exits 1: ...`
        for part in command.split("&&"):
            if _runs(part.strip()):
                found.append((part.strip(), int(stated.group(1)) if stated else None))
    return found


def _workflow_steps(block: Block) -> Block:
    """A CI workflow (```yaml with `jobs:`) as the shell lines of its `run:` steps."""
    document = yaml.safe_load(block.code)
    runs = [step["run"] for job in (document.get("jobs") or {}).values()
            for step in job.get("steps", []) if isinstance(step, dict) and "run" in step]
    return Block(block.path, block.line, block.lang, "\n".join(runs) + "\n", block.options)


_WORKFLOWS = [_workflow_steps(block) for block in blocks(("yaml",))
              if re.search(r"^jobs:", block.code, re.M)]
BLOCKS = [block for block in [*blocks(SHELL), *_WORKFLOWS] if _commands(block)]


def _write_project(root: Path) -> None:
    (root / "tests" / "cassettes").mkdir(parents=True)
    shutil.copy(ROOT / "corpus" / "cassettes" / "openai_chat_leaky.yaml",
                root / "tests" / "cassettes" / "chat.yaml")
    (root / "corpus").symlink_to(ROOT / "corpus", target_is_directory=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0"\n\n'
        '[tool.redactkey]\nplaceholder = "[REDACTED]"\nmin-secret-length = 8\n',
        encoding="utf-8")
    (root / "notes.txt").write_text("Nothing secret here.\n", encoding="utf-8")
    shutil.copy(ROOT / "corpus" / "requests" / "chat.json", root / "request.json")
    (root / "http-request.json").write_text(json.dumps({
        "method": "POST", "url": "https://api.openai.com/v1/chat/completions?api_key=x",
        "headers": {"content-type": "application/json"},
        "json": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    }), encoding="utf-8")
    (root / "value.json").write_text('{"b": [1.0, 2], "a": "\\u00e9"}', encoding="utf-8")
    (root / "tests" / "test_summaries.py").write_text(_TEST_MODULE.format(
        name="summary", model="gpt-4o-mini", prompt="Where is the Eiffel Tower?",
        answer="In Paris."), encoding="utf-8")
    (root / "tests" / "test_claude.py").write_text(_TEST_MODULE.format(
        name="haiku", model="claude-sonnet-5", prompt="Write a haiku about fixtures.",
        answer="Fixtures at rest"), encoding="utf-8")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Docs", "-c", "user.email=docs@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary project, with its calls recorded once and everything committed."""
    root = tmp_path_factory.mktemp("project")
    _write_project(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDACTKEY", "PYTEST"))}
    env.update(OPENAI_API_KEY=FAKE_OPENAI, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    recorded = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "redactkey.pytest_plugin", "-p",
         "no:cacheprovider", "-q", "--redactkey-mode=record"],
        cwd=root, env=env, capture_output=True, text=True, check=False)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert (root / ".redactkey-report.json").is_file()
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "The recorded project")
    return root


def _expected(block: Block, commands: list[tuple[str, int | None]]) -> list[int]:
    marked = block.options.get("exit")
    codes = [int(code) for code in marked.split(",")] if marked else []
    if len(codes) == 1:
        codes *= len(commands)
    assert not codes or len(codes) == len(commands), f"{block.name}: one exit code per command"
    return [stated if stated is not None else (codes[i] if codes else 0)
            for i, (_command, stated) in enumerate(commands)]


def _words(command: str, cwd: Path) -> tuple[dict[str, str], list[str], str | None, str | None]:
    """Environment assignments, argv (globs expanded), stdin and stdout file names."""
    for pattern, value in PLACEHOLDERS:
        command = re.sub(pattern, value, command)
    words = shlex.split(command)
    env = {}
    while "=" in words[0] and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    stdin = stdout = None
    argv: list[str] = []
    it = iter(words)
    for word in it:
        if word == "<":
            stdin = next(it)
        elif word == ">":
            stdout = next(it)
        elif any(c in word for c in "*?["):
            argv.extend(sorted(glob.glob(word, root_dir=cwd, recursive=True)) or [word])
        else:
            argv.append(word)
    return env, argv, stdin, stdout


@contextlib.contextmanager
def _stdin(path: Path | None) -> Iterator[None]:
    saved = sys.stdin
    data = path.read_bytes() if path is not None else b""
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = saved


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_shell_block_runs(block: Block, project: Path, request: pytest.FixtureRequest,
                          monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    """Each command of the block exits as documented, without a traceback."""
    commands = _commands(block)
    needs_pytest = any(_words(c, project)[1][0] == "pytest" for c, _ in commands)
    pytester = request.getfixturevalue("pytester") if needs_pytest else None
    if pytester is not None:
        work = pytester.path
        shutil.rmtree(work)
    else:
        work = request.getfixturevalue("tmp_path") / "project"
    shutil.copytree(project, work, symlinks=True)
    monkeypatch.chdir(work)
    for name in [n for n in os.environ if n.startswith("REDACTKEY")] + [
            "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]:
        monkeypatch.delenv(name, raising=False)
    for (command, _stated), expected in zip(commands, _expected(block, commands), strict=True):
        env, argv, stdin, stdout = _words(command, work)
        with monkeypatch.context() as scoped:
            for name, value in env.items():
                scoped.setenv(name, value)
            if argv[0] == "pytest":
                assert pytester is not None
                result = pytester.runpytest(*_QUIET, *argv[1:])
                code, out = int(result.ret), "\n".join(result.outlines + result.errlines)
            else:
                with _stdin(work / stdin if stdin else None):
                    code = main(argv[1:])
                captured = capsys.readouterr()
                out = captured.out + captured.err
                if stdout is not None:
                    (work / stdout).write_text(captured.out, encoding="utf-8")
        assert "Traceback" not in out, f"{block.name}: {command}\n{out}"
        assert code == expected, f"{block.name}: {command} exited {code}\n{out[-3000:]}"


def test_readme_commands_are_the_ones_run() -> None:
    """README's two top commands are in the blocks run (their install parts are not run)."""
    readme = [block for block in BLOCKS if block.path.name == "README.md"]
    run = [command for block in readme for command, _ in _commands(block)]
    assert ".venv/bin/redact audit --exit-zero corpus/" in run


def test_count_of_shell_blocks_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Every shell block (and workflow) of the docs that names `redact` is among those run."""
    naming = [block for block in [*blocks(SHELL), *_WORKFLOWS]
              if re.search(r"(^|[\s/$])redact ", block.code, re.M)]
    assert {b.name for b in naming} <= {b.name for b in BLOCKS}
    commands = sum(len(_commands(block)) for block in BLOCKS)
    with capsys.disabled():
        print(f"\ndocs: {len(BLOCKS)} shell blocks with {commands} commands to run")
    assert len(BLOCKS) >= 18
