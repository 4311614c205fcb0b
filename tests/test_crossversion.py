"""Keys and canonical bytes are identical on CPython 3.10, 3.11, 3.12 and 3.13, any hash seed.

For the newest installed patch release of each minor under /root/.pyenv/versions, one
session-scoped venv (built in parallel with the others) gets a non-editable install of
this checkout with its runtime dependencies only; tests/_crossversion_probe.py then runs
there under two PYTHONHASHSEED values. Its golden keys must equal the pinned table and its
canonical bytes must equal this interpreter's. A minor with no interpreter on the machine
is skipped, naming it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from _crossversion_probe import TRICKY_VALUES, probe
from _golden_requests import GOLDEN_KEYS
from conftest import ROOT

# Builds a venv per CPython minor and installs this checkout in each: CI's job.
pytestmark = pytest.mark.slow

PYENV = Path("/root/.pyenv/versions")
MINORS = ("3.10", "3.11", "3.12", "3.13")
SEEDS = ("0", "3141592653")
PROBE = Path(__file__).resolve().parent / "_crossversion_probe.py"


def newest_interpreter(minor: str, versions: Path = PYENV) -> Path | None:
    """The python of the newest plain `minor.N` release under `versions`, or None."""
    found: list[tuple[int, Path]] = []
    for path in versions.glob(f"{minor}.*"):
        match = re.fullmatch(re.escape(minor) + r"\.(\d+)", path.name)
        python = path / "bin" / "python"
        if match and python.is_file():
            found.append((int(match.group(1)), python))
    return max(found)[1] if found else None


def _child_env(seed: str | None) -> dict[str, str]:
    # Nothing of this interpreter's PYTHON* settings (PYTHONPATH would shadow the install).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    return env


def _run(args: list[str], cwd: Path, seed: str | None = None) -> str:
    result = subprocess.run(
        args, cwd=cwd, env=_child_env(seed), capture_output=True, text=True, timeout=600,
        check=False,
    )
    if result.returncode != 0:
        # pip warns about every unreachable local index on this machine; keep the rest.
        stderr = "\n".join(
            line for line in result.stderr.splitlines() if "is ignored" not in line
        )
        raise RuntimeError(f"{' '.join(args)} exited {result.returncode}:\n{stderr[-4000:]}")
    return result.stdout


def _build_and_probe(python: Path, venv: Path) -> dict[str, Any]:
    """Make a venv from `python`, install this checkout in it, probe under every seed."""
    started = time.monotonic()
    try:
        _run([str(python), "-m", "venv", str(venv)], cwd=venv.parent)
        venv_python = str(venv / "bin" / "python")
        _run([venv_python, "-m", "pip", "install", "-q", "--no-compile",
              "--disable-pip-version-check",
              str(ROOT)], cwd=venv.parent)
        built = time.monotonic()
        runs = {
            seed: json.loads(_run([venv_python, str(PROBE)], cwd=venv.parent, seed=seed))
            for seed in SEEDS
        }
    except (OSError, RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        return {"interpreter": str(python), "venv": str(venv), "error": str(exc)}
    return {
        "interpreter": str(python), "venv": str(venv), "runs": runs,
        "build_seconds": round(built - started, 1),
        "probe_seconds": round(time.monotonic() - built, 1),
    }


def _build_all(root: Path) -> dict[str, Any]:
    interpreters = {minor: newest_interpreter(minor) for minor in MINORS}
    present = {minor: python for minor, python in interpreters.items() if python is not None}
    results: dict[str, Any] = dict.fromkeys(MINORS)
    if present:
        with ThreadPoolExecutor(max_workers=len(present)) as pool:
            futures = {
                minor: pool.submit(_build_and_probe, python, root / f"venv-{minor}")
                for minor, python in present.items()
            }
            for minor, future in futures.items():
                results[minor] = future.result()
    return results


@pytest.fixture(scope="session")
def crossversion(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per minor: None (no interpreter), {"error": ...}, or the probe output per seed."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by the workers of one run: build the venvs once
    root = base / "crossversion"
    root.mkdir(exist_ok=True)
    results = root / "results.json"
    with FileLock(str(root / "build.lock")):
        if not results.is_file():
            results.write_text(json.dumps(_build_all(root)), encoding="utf-8")
    data: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    return data


@functools.cache
def _here() -> dict[str, Any]:
    return probe()


def _result(crossversion: dict[str, Any], minor: str) -> dict[str, Any]:
    result = crossversion[minor]
    if result is None:
        pytest.skip(f"no CPython {minor}.x interpreter under {PYENV}")
    if "error" in result:
        pytest.fail(f"CPython {minor} ({result['interpreter']}): {result['error']}")
    return dict(result)


class TestCrossVersion:
    @pytest.mark.parametrize("minor", MINORS)
    def test_probe_ran_installed_package(self, crossversion: dict[str, Any], minor: str) -> None:
        """The probe ran on that minor, against the venv's installed copy, under each seed."""
        result = _result(crossversion, minor)
        runs = result["runs"]
        assert list(runs) == list(SEEDS)
        site_packages = str(Path(result["venv"]).resolve() / "lib")
        for seed, run in runs.items():
            assert run["python"].startswith(f"{minor}."), run["python"]
            assert run["package"].startswith(site_packages), run["package"]
            assert run["hash_seed"] == seed
        assert len({run["str_hash"] for run in runs.values()}) == len(SEEDS)

    @pytest.mark.parametrize("minor", MINORS)
    def test_golden_keys(self, crossversion: dict[str, Any], minor: str) -> None:
        """Every golden request keys to its pinned key under each seed."""
        result = _result(crossversion, minor)
        for seed, run in result["runs"].items():
            assert run["keys"] == GOLDEN_KEYS, f"CPython {run['python']}, PYTHONHASHSEED={seed}"

    @pytest.mark.parametrize("minor", MINORS)
    def test_canonical_bytes(self, crossversion: dict[str, Any], minor: str) -> None:
        """Tricky floats, keys and strings canonicalise to this interpreter's bytes."""
        here = _here()["canonical"]
        result = _result(crossversion, minor)
        for seed, run in result["runs"].items():
            assert run["canonical"] == here, f"CPython {run['python']}, PYTHONHASHSEED={seed}"

    @pytest.mark.parametrize(
        ("name", "value", "expected"), TRICKY_VALUES, ids=[n for n, _, _ in TRICKY_VALUES]
    )
    def test_tricky_value_here(self, name: str, value: Any, expected: str) -> None:
        """This interpreter writes each tricky value as RFC 8785 says (the baseline above)."""
        assert _here()["canonical"][name] == expected

    def test_newest_patch_is_chosen(self, tmp_path: Path) -> None:
        """3.12.10 beats 3.12.9; dev, free-threaded and python-less trees do not count."""
        for name, has_python in [("3.12.9", True), ("3.12.10", True), ("3.12.11", False),
                                 ("3.12-dev", True), ("3.12.12t", True), ("3.13.0", True)]:
            (tmp_path / name / "bin").mkdir(parents=True)
            if has_python:
                (tmp_path / name / "bin" / "python").write_text("", encoding="utf-8")
        assert newest_interpreter("3.12", tmp_path) == tmp_path / "3.12.10" / "bin" / "python"
        assert newest_interpreter("3.11", tmp_path) is None
