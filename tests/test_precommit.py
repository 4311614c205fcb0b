"""The `redact-check` pre-commit hook, run by real `pre-commit try-repo` on this working tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from test_cli_check import FAKE_OPENAI, leaky_cassette

# pre-commit builds its own environment for the hook: CI's job.
pytestmark = pytest.mark.slow


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


def _try_repo(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    pre_commit = Path(sys.executable).with_name("pre-commit")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDACTKEY", "GIT_"))}
    env["PRE_COMMIT_HOME"] = str(home)
    env["PRE_COMMIT_COLOR"] = "never"
    return subprocess.run(
        [str(pre_commit), "try-repo", str(ROOT), "redact-check", "--verbose"],
        cwd=repo, env=env, capture_output=True, text=True, check=False, timeout=600,
    )


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:  # pragma: no cover - git is part of the toolchain
        pytest.fail("git is required for the pre-commit test")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "dev@example.invalid")
    _git(repo, "config", "user.name", "dev")
    return repo


class TestPreCommitHook:
    """A staged leak blocks the commit; a clean cassette passes."""

    def test_leak_blocks_clean_passes(self, git_repo: Path, tmp_path: Path) -> None:
        """try-repo fails on a leaked key (masked) and passes once it is replaced."""
        home = tmp_path / "pre-commit-home"
        cassette = git_repo / "tests" / "cassettes" / "models.yaml"
        cassette.parent.mkdir(parents=True)
        cassette.write_text(leaky_cassette(), encoding="utf-8")
        _git(git_repo, "add", ".")
        blocked = _try_repo(git_repo, home)
        assert blocked.returncode == 1, blocked.stdout + blocked.stderr
        assert "tests/cassettes/models.yaml:6: sensitive-key (authorization)" in blocked.stdout
        assert FAKE_OPENAI not in blocked.stdout + blocked.stderr

        cassette.write_text(leaky_cassette().replace(f"Bearer {FAKE_OPENAI}",
                                                     "AUTHORIZATION-XXX"), encoding="utf-8")
        _git(git_repo, "add", ".")
        clean = _try_repo(git_repo, home)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert "Passed" in clean.stdout


class TestThePageConfigurations:
    """The configurations docs/pre-commit.md shows work as written."""

    def _blocks(self) -> list[dict[str, object]]:
        import yaml

        from docblocks import fences

        return [yaml.safe_load(b.code) for b in fences(ROOT / "docs" / "pre-commit.md")
                if b.lang == "yaml"]

    def test_the_rev_is_a_commit_of_this_repository_with_the_hook(self) -> None:
        (remote,) = [repo for block in self._blocks() for repo in block["repos"]  # type: ignore[attr-defined]
                     if repo["repo"] != "local"]
        shown = subprocess.run(["git", "show", f"{remote['rev']}:.pre-commit-hooks.yaml"],
                               cwd=ROOT, capture_output=True, text=True, check=False)
        assert shown.returncode == 0, shown.stderr
        assert "id: redact-check" in shown.stdout

    def test_the_local_hook_blocks_a_leak(self, git_repo: Path, tmp_path: Path) -> None:
        import yaml

        (local,) = [block for block in self._blocks()
                    if block["repos"][0]["repo"] == "local"]  # type: ignore[index]
        (git_repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(local), "utf-8")
        cassette = git_repo / "tests" / "cassettes" / "models.yaml"
        cassette.parent.mkdir(parents=True)
        cassette.write_text(leaky_cassette(), encoding="utf-8")
        _git(git_repo, "add", ".")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REDACTKEY", "GIT_"))}
        env.update(PRE_COMMIT_HOME=str(tmp_path / "home"), PRE_COMMIT_COLOR="never",
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
        result = subprocess.run([str(Path(sys.executable).with_name("pre-commit")), "run",
                                 "--all-files"], cwd=git_repo, env=env, capture_output=True,
                                text=True, check=False, timeout=600)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "tests/cassettes/models.yaml:6: sensitive-key (authorization)" in result.stdout

