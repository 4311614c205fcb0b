from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the checkout; tests that need it skip where it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside this checkout")
    return SHARED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many documentation blocks ran (tests/test_docs_examples.py)."""
    ran = [r for r in terminalreporter.stats.get("passed", [])
           if "test_python_block_runs[" in getattr(r, "nodeid", "")]
    if ran:
        terminalreporter.write_line(f"docs: {len(ran)} Python blocks of README.md and docs/ ran")
