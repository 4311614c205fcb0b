"""ruff and mypy --strict stay clean; run as part of the test suite so CI enforces them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_clean() -> None:
    """`ruff check src tests` reports nothing."""
    result = _run(sys.executable, "-m", "ruff", "check", "src", "tests")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow  # mypy over src/ from no cache
def test_mypy_strict_clean() -> None:
    """`mypy --strict` on src/ reports nothing."""
    result = _run(sys.executable, "-m", "mypy", "--strict", "src/redactkey")
    assert result.returncode == 0, result.stdout + result.stderr
