"""What the pytest plugin adds per test: 2,000 tests that each replay one model call.

    python tests/benchmarks/bench_plugin.py [--tests 2000] [--rounds 3]

1. Writes a test module of `--tests` tests; each calls `model_fixtures.call("text",
   request, live)` with its own request. A record run writes the fixtures.
2. Times, best of `--rounds` fresh pytest processes:
   - plugin: the tests replaying through the plugin (`--redactkey-mode=replay`);
   - disabled: the same tests with the plugin disabled (`-p no:redactkey`), where a
     conftest fixture of the same name calls `live` directly (no redactkey at all).
3. Prints the wall time and the CPU time (user + system of the pytest process, which a
   busy machine inflates less than the wall time) of each run, and the added cost per
   test by both. Target: <= 0.2 ms.
4. Splits the added CPU time into what a run pays once (importing redactkey, building
   the redactor, the run report) and what each test pays, from runs of the first test
   alone (the module is still collected whole).
5. Prints the time each full run spent in the cyclic garbage collector (a probe plugin
   times every collection) and the collector's share of the added time: a larger heap
   makes each full collection slower, and garbage held in reference cycles makes them
   come more often (docs/performance.md: a test leaves none).

Every process loads bytecode compiled once into the temporary directory, as an installed
package does (`PYTHONPYCACHEPREFIX`), so a process does not compile redactkey's sources
again; `--no-bytecode` compiles them in every process (`PYTHONDONTWRITEBYTECODE=1` with
an editable install), which adds the compile time of the sources to the fixed cost.

`--in-process` instead runs the plugin's and the disabled sessions by turns in this one
process (`pytest.main`, imports warmed by a first round), best of `--rounds`: without
process start-up and imports, and with less noise than fresh processes (a yardstick for
a change, read before and after it; the target stays on the figure above).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 0.2

TESTS = """
import pytest


@pytest.mark.parametrize("n", range({count}))
def test_call(model_fixtures, n):
    request = {{"model": "tiny", "messages": [{{"role": "user", "content": f"say {{n}} " * 40}}]}}
    answer = model_fixtures.call("text", request, lambda: {{"text": f"said {{n}}"}})
    assert answer == {{"text": f"said {{n}}"}}
"""

# Without the plugin: a stand-in with the same call, so the tests are the same tests.
DISABLED_CONFTEST = """
import pytest


class _Live:
    def call(self, kind, request, live):
        return live()


@pytest.fixture
def model_fixtures():
    return _Live()
"""


# Loaded into each pytest process with -p: adds up the time of every collection.
GC_PROBE = """
import atexit, gc, os, time

_started = [0.0]
_total = [0.0]


def _timed(phase, info):
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        _total[0] += time.perf_counter() - _started[0]


gc.callbacks.append(_timed)
atexit.register(lambda: open(os.environ["BENCH_GC_OUT"], "w").write(repr(_total[0])))
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _pytest(root: Path, *args: str, bytecode: Path | None) -> tuple[float, float, float]:
    """(wall, CPU, cyclic GC) seconds of one pytest process."""
    env = dict(os.environ)
    probe = root.parent / "probe"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe), env.get("PYTHONPATH")]))
    env["BENCH_GC_OUT"] = str(probe / f"{root.name}.gc")
    if bytecode is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    env.pop("REDACTKEY_MODE", None)
    env.pop("REDACTKEY_MODEL_MODE", None)
    cpu = _cpu()
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", "-p", "bench_gc_probe", *args],
        cwd=root, env=env, capture_output=True, text=True, check=False,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"pytest failed in {root}:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return elapsed, _cpu() - cpu, float((probe / f"{root.name}.gc").read_text())


def _in_process(plugin: Path, disabled: Path, tests: int, rounds: int) -> None:
    """Plugin and disabled sessions by turns in this process; prints the added CPU time
    per test, best of `rounds` after a first, warming round."""
    import contextlib
    import gc
    import io

    import pytest

    common = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly"]
    sessions = {"plugin": (plugin, [*common, "--redactkey-mode=replay", str(plugin)]),
                "disabled": (disabled, [*common, "-p", "no:redactkey", str(disabled)])}
    best = dict.fromkeys(sessions, float("inf"))
    here = Path.cwd()
    try:
        for turn in range(rounds + 1):
            for name in (sessions if turn % 2 else reversed(sessions)):
                root, args = sessions[name]
                os.chdir(root)
                gc.collect()
                started = time.process_time()
                with contextlib.redirect_stdout(io.StringIO()):
                    code = pytest.main(args)
                spent = time.process_time() - started
                if code != 0:
                    sys.exit(f"pytest failed in {root} (exit {code})")
                if turn:
                    best[name] = min(best[name], spent)
    finally:
        os.chdir(here)
    added = (best["plugin"] - best["disabled"]) / tests * 1000
    print(f"in process, best of {rounds}: plugin {best['plugin']:.2f} CPU-s, disabled "
          f"{best['disabled']:.2f} CPU-s, added {added:.3f} ms per test")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="compile redactkey's sources in every process")
    parser.add_argument("--in-process", action="store_true",
                        help="sessions by turns in this process (see the module docstring)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bytecode = None if args.no_bytecode else Path(tmp) / "bytecode"
        plugin = Path(tmp) / "plugin"
        disabled = Path(tmp) / "disabled"
        (Path(tmp) / "probe").mkdir()
        (Path(tmp) / "probe" / "bench_gc_probe.py").write_text(GC_PROBE)
        for root in (plugin, disabled):
            root.mkdir()
            # (named apart: in one process the two sessions' modules must not collide)
            (root / f"test_calls_{root.name}.py").write_text(TESTS.format(count=args.tests))
            (root / "pytest.ini").write_text("[pytest]\n")
        (disabled / "conftest.py").write_text(DISABLED_CONFTEST)
        _pytest(plugin, "--redactkey-mode=record", bytecode=bytecode)
        if args.in_process:
            os.environ.pop("REDACTKEY_MODE", None)
            os.environ.pop("REDACTKEY_MODEL_MODE", None)
            _in_process(plugin, disabled, args.tests, args.rounds)
            return 0
        _pytest(disabled, "-p", "no:redactkey", bytecode=bytecode)  # compiles its modules
        runs = {(name, one): [float("inf"), float("inf"), float("inf")]
                for name in ("plugin", "disabled") for one in (False, True)}
        for _ in range(args.rounds):
            for (name, one), best in runs.items():
                root, option = ((disabled, "-p no:redactkey") if name == "disabled"
                                else (plugin, "--redactkey-mode=replay"))
                chosen = [f"test_calls_{root.name}.py::test_call[0]"] if one else []
                for i, seconds in enumerate(_pytest(root, *option.split(), *chosen,
                                                    bytecode=bytecode)):
                    best[i] = min(best[i], seconds)
    print(f"{args.tests} tests, each replaying one model call; best of {args.rounds} runs"
          f"{'' if bytecode else ', sources compiled in every process'}:")
    print("                      wall        CPU")
    for name, label in (("disabled", "plugin disabled"), ("plugin", "plugin (replay)")):
        wall, cpu, _ = runs[(name, False)]
        print(f"  {label}  {wall:7.2f} s  {cpu:7.2f} s")
    ok = True
    for i, what in enumerate(("wall", "CPU")):
        added = (runs[("plugin", False)][i] - runs[("disabled", False)][i]) / args.tests * 1000
        ok &= added <= TARGET_MS
        print(f"  added per test, {what:<4} {added:7.3f} ms  target <= {TARGET_MS} ms  "
              f"{'ok' if added <= TARGET_MS else 'MISSED'}")
    once = runs[("plugin", True)][1] - runs[("disabled", True)][1]
    each = (runs[("plugin", False)][1] - runs[("plugin", True)][1]
            - runs[("disabled", False)][1] + runs[("disabled", True)][1]) / (args.tests - 1)
    print(f"  of the added CPU: {once:.2f} s once per run ({once / args.tests * 1000:.3f} ms "
          f"per test here) and {each * 1000:.3f} ms in each test")
    collector = runs[("plugin", False)][2] - runs[("disabled", False)][2]
    print(f"  cyclic GC (least of the runs): plugin {runs[('plugin', False)][2]:.2f} s, "
          f"disabled {runs[('disabled', False)][2]:.2f} s: {collector / args.tests * 1000:.3f} "
          "ms per test of the added time is the collector's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
