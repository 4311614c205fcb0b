"""Benchmark: `redact audit -j 1` vs `-j N` on a generated 5,000-file tree of mixed formats.

    python tests/benchmarks/bench_audit_jobs.py [--files 5000] [--jobs 4] [--keep DIR]
        [--baseline-src DIR] [--rounds 3]

Generates vcrpy YAML, HAR, nock JSON, Betamax JSON, gzip'd vcrpy YAML and plain
text files (fake values from a seeded RNG, valid for nothing; one file in fifty
carries an organisation-id header so the report is not empty). Runs the CLI as a
subprocess with `-j 1` and with `-j N` on the same tree, alternating, best of
three; prints files per second of each, the speed-up (baseline: `-j 1`), the CPU time
of each (the command and its workers: what `-j` costs beyond `-j 1`) and the load
average when each figure was measured. Exit 1 if the two JSON reports differ by a
single byte (the order of the output must not depend on `--jobs`).

Wall time only shows a speed-up where cores are free: on a busy machine a command's
processes share what its session gets (Linux groups a session's processes for the
scheduler), so `-j N` can at best match `-j 1` there. The benchmark therefore also
reads the same tree in process with `-j N` and prints each process's CPU time: the
busiest one is the critical path, the wall time the files take on free cores.

`--baseline-src DIR` also runs `-j N` from another source tree of redactkey (a `src`
directory, e.g. `git worktree add /tmp/base main` then `/tmp/base/src`) in the same
rounds, and prints this tree's `-j N` wall time and CPU time as ratios of its.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import random
import resource
import shutil
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
WORDS = ("the", "model", "answered", "with", "a", "short", "list", "of", "capitals",
         "and", "a", "note", "about", "the", "weather", "tool", "call")


def _text(rng: random.Random, n: int) -> str:
    words = WORDS
    return " ".join(rng.choice(words) for _ in range(n))


def _vcrpy(rng: random.Random, org: bool) -> str:
    body = json.dumps({"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": _text(rng, 30)}]})
    answer = json.dumps({"id": "chatcmpl-" + "".join(rng.choices(ALNUM, k=20)),
                         "choices": [{"message": {"content": _text(rng, 60)}}]})
    extra = "      openai-organization:\n      - org-" + "".join(rng.choices(ALNUM, k=24)) \
        + "\n" if org else ""
    return ("interactions:\n- request:\n    body: " + json.dumps(body) + "\n"
            "    headers:\n      Content-Type:\n      - application/json\n"
            "    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n"
            "  response:\n    body:\n      string: " + json.dumps(answer) + "\n"
            "    headers:\n" + extra + "      x-request-id:\n      - req_"
            + "".join(rng.choices(ALNUM, k=16)) + "\n"
            "    status:\n      code: 200\n      message: OK\nversion: 1\n")


def _har(rng: random.Random) -> str:
    text = json.dumps({"id": "msg_" + "".join(rng.choices(ALNUM, k=16)),
                       "content": [{"text": _text(rng, 60)}]})
    return json.dumps({"log": {"version": "1.2", "creator": {"name": "bench", "version": "1"},
                               "entries": [{
        "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages",
                    "headers": [{"name": "content-type", "value": "application/json"}],
                    "postData": {"mimeType": "application/json",
                                 "text": json.dumps({"prompt": _text(rng, 20)})}},
        "response": {"status": 200, "headers": [{"name": "request-id", "value": "req_1"}],
                     "content": {"mimeType": "application/json", "encoding": "base64",
                                 "text": base64.b64encode(text.encode()).decode()}}}]}},
                      indent=2)


def _nock(rng: random.Random) -> str:
    body = json.dumps({"id": "chatcmpl-1", "text": _text(rng, 60)}).encode()
    return json.dumps([{"scope": "https://api.openai.com:443", "method": "POST",
                        "path": "/v1/chat/completions", "body": {"model": "gpt-4o-mini"},
                        "status": 200, "response": [gzip.compress(body, mtime=0).hex()],
                        "rawHeaders": ["content-encoding", "gzip", "x-request-id", "req_2"]}],
                      indent=2)


def _betamax(rng: random.Random) -> str:
    return json.dumps({"http_interactions": [{
        "request": {"body": {"encoding": "utf-8", "string": ""}, "headers": {},
                    "method": "GET", "uri": "https://api.github.com/repos/a/b"},
        "response": {"body": {"encoding": "utf-8", "string": _text(rng, 80)},
                     "headers": {"X-GitHub-Request-Id": ["AB:12"]},
                     "status": {"code": 200, "message": "OK"}},
        "recorded_at": "2025-01-01T00:00:00"}], "recorded_with": "betamax/0.9.0"}, indent=2)


def generate(root: Path, files: int) -> None:
    rng = random.Random(1234)
    for index in range(files):
        folder = root / f"suite{index % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        kind = index % 6
        if kind == 0:
            (folder / f"c{index}.yaml").write_text(_vcrpy(rng, index % 50 == 0),
                                                   encoding="utf-8")
        elif kind == 1:
            (folder / f"r{index}.har").write_text(_har(rng), encoding="utf-8")
        elif kind == 2:
            (folder / f"n{index}.json").write_text(_nock(rng), encoding="utf-8")
        elif kind == 3:
            (folder / f"b{index}.json").write_text(_betamax(rng), encoding="utf-8")
        elif kind == 4:
            (folder / f"g{index}.yaml.gz").write_bytes(
                gzip.compress(_vcrpy(rng, False).encode("utf-8"), mtime=0))
        else:
            (folder / f"notes{index}.txt").write_text(_text(rng, 200), encoding="utf-8")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(tree: Path, jobs: int, src: Path | None = None) -> tuple[float, float, bytes, float]:
    """Wall seconds, CPU seconds (the command and its workers), the JSON report and the
    load average when it started."""
    command = [sys.executable, "-c",
               "import sys; from redactkey.commands._cli import main; sys.exit(main(sys.argv[1:]))",
               "audit", "-j", str(jobs), "--format", "json", str(tree)]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"audit -j {jobs} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed, _children_cpu() - cpu, done.stdout, load


def critical_path(tree: Path, jobs: int) -> tuple[float, float, float, int]:
    """The files of the tree read in this process with `jobs` processes, as the audit
    reads them: (CPU seconds of this process, of all its workers, wall seconds, workers).
    On free cores the files take about as long as the busiest process's CPU time."""
    import functools

    from redactkey.commands._audit import Auditor, _audit_work, audit_one
    from redactkey.commands._check import begin
    from redactkey.commands._cli import _setup
    from redactkey.commands._parallel import run_files

    _config, checker = _setup(None, ())
    _report, targets = begin([str(tree)], "audit")
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = _children_cpu()
    start = time.perf_counter()
    for _outcome in run_files(targets, functools.partial(audit_one, Auditor(checker)),
                              jobs=jobs, factory=functools.partial(
                                  _audit_work, checker.spec, frozenset())):
        pass
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    mine = (after.ru_utime + after.ru_stime) - (own.ru_utime + own.ru_stime)
    return mine, _children_cpu() - children, elapsed, max(0, jobs - 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="write the tree here")
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="also run -j N from this redactkey source tree")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-audit-jobs-"))
    sides: list[tuple[str, int, Path | None]] = [("-j 1", 1, None),
                                                 (f"-j {args.jobs}", args.jobs, None)]
    if args.baseline_src is not None:
        sides.append((f"baseline -j {args.jobs}", args.jobs, args.baseline_src))
    try:
        generate(root, args.files)
        best: dict[str, tuple[float, float]] = {}  # wall, load at that run
        cpu: dict[str, float] = {}
        outputs: dict[str, bytes] = {}
        for _round in range(args.rounds):
            for name, jobs, src in sides:
                elapsed, used, out, load = run(root, jobs, src)
                if name not in best or elapsed < best[name][0]:
                    best[name] = (elapsed, load)
                cpu[name] = min(cpu.get(name, float("inf")), used)
                outputs[name] = out
        same = len(set(outputs.values())) == 1
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count()
        print(f"tree: {args.files} files (vcrpy, HAR, nock, Betamax, gzip'd vcrpy, text); "
              f"{cores} cores; best of {args.rounds}, sides alternating")
        for name, _jobs, _src in sides:
            wall, load = best[name]
            print(f"audit {name}: {wall:.2f} s, {args.files / wall:.0f} files/s, "
                  f"{cpu[name]:.2f} CPU-s (workers included); load average {load:.1f}")
        one, many = sides[0][0], sides[1][0]
        print(f"speed-up {many} vs -j 1 (baseline): {best[one][0] / best[many][0]:.2f}x "
              f"(wall); CPU cost {cpu[many] / cpu[one]:.2f}x")
        if args.baseline_src is not None:
            base = sides[2][0]
            print(f"this tree's {many} vs {base}: wall {best[base][0] / best[many][0]:.2f}x "
                  f"faster, CPU {cpu[many] / cpu[base]:.2f}x")
        serial, _, serial_wall, _ = critical_path(root, 1)
        load = os.getloadavg()[0]
        mine, workers, wall, count = critical_path(root, args.jobs)
        busiest = max(mine, workers / max(1, count))
        print(f"in process, -j 1: {serial:.2f} CPU-s ({serial_wall:.2f} s); -j {args.jobs}: "
              f"this process {mine:.2f} CPU-s, {count} workers {workers:.2f} CPU-s "
              f"({wall:.2f} s); load average {load:.1f}")
        print(f"critical path -j {args.jobs}: {busiest:.2f} CPU-s vs {serial:.2f}: "
              f"{serial / busiest:.2f}x on free cores (estimate)")
        print("reports identical: " + ("yes" if same else "NO"))
        return 0 if same else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
