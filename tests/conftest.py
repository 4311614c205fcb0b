from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
# Where the project's shared folder comes from, for the tests that read it.
HOW_TO_GET_SHARED = (
    f"{SHARED} is absent: these tests read the project's shared folder (third-party "
    "recordings in realworld*/, RFC 8785 vectors in vectors/jcs/), which CI lays beside "
    f"the checkout as ../shared; copy or link it there (ln -s /path/to/shared {SHARED})"
)


def need_shared() -> Path:
    """`../shared` beside the checkout. Where it is absent the test is skipped, saying how to
    get it; in CI (`CI` set), which always lays it out, that is a failure instead."""
    if SHARED.is_dir():
        return SHARED
    if os.environ.get("CI"):
        pytest.fail(HOW_TO_GET_SHARED, pytrace=False)
    pytest.skip(HOW_TO_GET_SHARED)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the checkout (see `need_shared`)."""
    return need_shared()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow", action="store_true", default=False,
        help="also run the tests marked slow (CI, where CI is set, always runs them)",
    )


def runs_slow(config: pytest.Config) -> bool:
    """Whether this run includes the tests marked slow: in CI, with --run-slow, or when the
    marker expression names them (`-m slow`)."""
    return bool(os.environ.get("CI") or config.getoption("--run-slow")
                or "slow" in (config.getoption("markexpr") or ""))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests marked huge unless the marker expression names them (`-m huge`),
    and the tests marked slow unless the run includes them or names their file."""
    huge_runs = "huge" in (config.getoption("markexpr") or "")
    slow_runs = runs_slow(config)
    named = {Path(arg.split("::", 1)[0]).resolve() for arg in config.args}
    left_out: dict[str, list[pytest.Item]] = {"huge": [], "slow": []}
    for item in items:
        if item.get_closest_marker("huge") is not None:
            if not huge_runs:
                left_out["huge"].append(item)
        elif (not slow_runs and item.get_closest_marker("slow") is not None
              and item.path not in named):
            left_out["slow"].append(item)
    chosen = {item for kind in left_out.values() for item in kind}
    if chosen:
        items[:] = [item for item in items if item not in chosen]
        config.hook.pytest_deselected(items=list(chosen))
    config.stash[_LEFT_OUT] = {kind: len(found) for kind, found in left_out.items()}


_LEFT_OUT = pytest.StashKey[dict[str, int]]()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker tells the controller how many slow and huge tests it left out."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["left_out"] = session.config.stash.get(_LEFT_OUT, {})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(xdist, on the controller) Every worker collects every test: keep one count."""
    config: pytest.Config = node.config
    told = getattr(node, "workeroutput", {}).get("left_out", {})
    counts = config.stash.get(_LEFT_OUT, {})
    config.stash[_LEFT_OUT] = {kind: max(counts.get(kind, 0), told.get(kind, 0))
                               for kind in {*counts, *told}}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many documentation blocks ran (tests/test_docs_examples.py, test_docs_shell.py),
    and how many slow and huge tests were left out."""
    left_out = terminalreporter.config.stash.get(_LEFT_OUT, {})
    if left_out.get("slow"):
        terminalreporter.write_line(
            f"{left_out['slow']} slow tests deselected: CI runs them; --run-slow runs them here")
    if left_out.get("huge"):
        terminalreporter.write_line(
            f"{left_out['huge']} huge tests deselected: `pytest -m huge` runs them")
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
