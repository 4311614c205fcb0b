"""Benchmark: `redact audit -j 1` vs `-j 4` on a generated 5,000-file tree of mixed formats.

    python tests/benchmarks/bench_audit_jobs.py [--files 5000] [--jobs 4] [--keep DIR]

Generates vcrpy YAML, HAR, nock JSON, Betamax JSON, gzip'd vcrpy YAML and plain
text files (fake values from a seeded RNG, valid for nothing; one file in fifty
carries an organisation-id header so the report is not empty). Runs the CLI as a
subprocess with `-j 1` and with `-j N` on the same tree, alternating, best of
three; prints files per second of each, the speed-up (baseline: `-j 1`), and the
machine's core count, and the CPU time of each (the command and its workers: what
`-j` costs beyond `-j 1`, which a loaded machine shows better than wall time). Exit 1
if the two JSON reports differ by a single byte (the order of the output must not
depend on `--jobs`).
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


def run(tree: Path, jobs: int) -> tuple[float, float, bytes]:
    """Wall seconds, CPU seconds (the command and its workers) and the JSON report."""
    command = [sys.executable, "-c",
               "import sys; from redactkey._cli import main; sys.exit(main(sys.argv[1:]))",
               "audit", "-j", str(jobs), "--format", "json", str(tree)]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"audit -j {jobs} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed, _children_cpu() - cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--keep", type=Path, default=None, help="write the tree here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-audit-jobs-"))
    try:
        generate(root, args.files)
        best = {1: float("inf"), args.jobs: float("inf")}
        cpu = {1: float("inf"), args.jobs: float("inf")}
        outputs: dict[int, bytes] = {}
        for _round in range(3):
            for jobs in (1, args.jobs):
                elapsed, used, out = run(root, jobs)
                best[jobs] = min(best[jobs], elapsed)
                cpu[jobs] = min(cpu[jobs], used)
                outputs[jobs] = out
        same = outputs[1] == outputs[args.jobs]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count()
        print(f"tree: {args.files} files (vcrpy, HAR, nock, Betamax, gzip'd vcrpy, text); "
              f"{cores} cores")
        for jobs in (1, args.jobs):
            print(f"audit -j {jobs}: {best[jobs]:.2f} s, {args.files / best[jobs]:.0f} files/s, "
                  f"{cpu[jobs]:.2f} CPU-s (workers included)")
        print(f"speed-up -j {args.jobs} vs -j 1 (baseline): {best[1] / best[args.jobs]:.2f}x")
        print(f"CPU cost of -j {args.jobs} vs -j 1: {cpu[args.jobs] / cpu[1]:.2f}x; load average "
              f"{os.getloadavg()[0]:.1f} on {cores} cores (a loaded machine has no idle core "
              "to gain)")
        print("reports identical: " + ("yes" if same else "NO"))
        return 0 if same else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
