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
    """Print how many documentation blocks ran (tests/test_docs_examples.py, test_docs_shell.py)."""
    for test, what in (("test_python_block_runs[", "Python blocks"),
                       ("test_shell_block_runs[", "shell blocks naming redact")):
        reports = [r for key in ("passed", "failed", "skipped", "error")
                   for r in terminalreporter.stats.get(key, [])
                   if test in getattr(r, "nodeid", "")]
        ran = {r.nodeid for r in reports if r.passed and r.when == "call"}
        seen = {r.nodeid for r in reports}
        sessions = {r.nodeid for r in reports if r.passed and r.when == "call"
                    and any(name == "docs_pytest_session" for name, _ in r.user_properties)}
        if seen:
            terminalreporter.write_line(
                f"docs: {len(ran)} of {len(seen)} {what} of README.md and docs/ ran"
                + (f" ({len(sessions)} recorded and replayed as pytest sessions)"
                   if sessions else ""))
