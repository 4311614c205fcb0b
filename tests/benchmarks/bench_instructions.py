"""Instructions per replayed HTTP call, counted by valgrind: replay cost without the noise.

    python tests/benchmarks/bench_instructions.py [--calls 40] [--kb 1 256]

Needs valgrind (its cachegrind tool) and the test extra (httpx2).

On a shared machine the wall-clock figures of `bench_replay_peers.py` move by tens of
percent from one minute to the next, and with the machine's speed; an instruction count
does not: the same interpreter, inputs and environment give the same count whatever else
the machine runs. For each prompt size, `--calls` distinct chat requests as the openai
SDK sends them (its headers, a compact JSON body) are recorded once, then answered
request by request in a child process under `valgrind --tool=cachegrind`:

- canned: an `httpx2.MockTransport` returning the prebuilt answer (the floor: what
  building the response costs with no recorder at all);
- redactkey: a fresh `FixtureTransport` in replay mode per round, with the `Redactor` of
  `bench_replay_peers.py` (5 run secrets and its detectors).

Each child runs once with 1 round over the calls and once with 5; the difference over 4
rounds and the calls is the count per call, free of start-up and imports. Prints the
instructions per call, what redactkey adds over canned and the ratio of the two (of the
transports alone: the SDK's own work on a call, which both pay, is left out). No target:
a yardstick for a change, read before and after it on one machine (the wall-clock
targets stay in `bench_replay_peers.py`).

valgrind hides the CPU's SHA extensions, so the SHA-256 of a long prompt's key counts
about ten times what it costs on the CPU: at 256 KB it is about half of the count.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from redactkey import FixtureDir, FixtureTransport

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _scenario import JSON_BODY, make_prompt, make_redactor

ROUNDS = (1, 5)
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def _headers(body: bytes) -> list[tuple[str, str]]:
    """The headers the openai SDK sends with a chat completion (its key made up here)."""
    return [
        ("Host", "api.openai.example"), ("Accept-Encoding", "gzip, deflate"),
        ("Connection", "keep-alive"), ("authorization", "Bearer sk-bench-" + "x" * 20),
        ("accept", "application/json"), ("content-type", "application/json"),
        ("user-agent", "OpenAI/Python 3.3.0"), ("x-stainless-lang", "python"),
        ("x-stainless-package-version", "3.3.0"), ("x-stainless-os", "Linux"),
        ("x-stainless-arch", "x64"), ("x-stainless-runtime", "CPython"),
        ("x-stainless-runtime-version", "3.11.7"), ("x-stainless-async", "false"),
        ("x-stainless-retry-count", "0"), ("x-stainless-read-timeout", "600"),
        ("Content-Length", str(len(body))),
    ]


def _bodies(kb: int, calls: int) -> list[str]:
    """The JSON bodies of the calls (as the SDK writes them: compact, in its key order)."""
    return [
        json.dumps({"messages": [{"role": "user", "content": make_prompt(n, kb * 1024)}],
                    "model": "m"}, separators=(",", ":"))
        for n in range(calls)
    ]


def _requests(bodies: list[str]) -> list[httpx2.Request]:
    out = []
    for text in bodies:
        body = text.encode()
        request = httpx2.Request("POST", "https://api.openai.example/v1/chat/completions",
                                 headers=_headers(body), content=body)
        request.read()
        out.append(request)
    return out


def _canned(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=JSON_BODY)


def _record(root: Path, kb: int, calls: int) -> Path:
    """Record the calls into `root`; the file of their bodies, which the counted runs read
    (building the prompts under valgrind would take longer than answering them)."""
    bodies = _bodies(kb, calls)
    transport = FixtureTransport(FixtureDir(root), mode="record", redactor=make_redactor(),
                                 inner=httpx2.MockTransport(_canned))
    for request in _requests(bodies):
        transport.handle_request(request).read()
    listed = root.parent / f"{root.name}.json"
    listed.write_text(json.dumps(bodies))
    return listed


def _child(mode: str, root: Path, listed: Path, rounds: int) -> None:
    """Answer the calls `rounds` times (after one pass that warms every cache up)."""
    requests = _requests(json.loads(listed.read_text()))
    store, redactor = FixtureDir(root), make_redactor()

    def transport() -> Any:
        if mode == "canned":
            return httpx2.MockTransport(_canned)
        return FixtureTransport(store, mode="replay", redactor=redactor)

    for turn in range(rounds + 1):
        answering = transport()
        for request in requests:
            response = answering.handle_request(request)
            response.read()
            if turn == 0 and response.status_code != 200:
                sys.exit(f"{mode}: a call was answered {response.status_code}, not replayed")


def _counted(mode: str, root: Path, listed: Path, rounds: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", mode, str(root), str(listed), str(rounds)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _refs(process: subprocess.Popen[str]) -> int:
    out, err = process.communicate()
    found = _REFS.search(err)
    if process.returncode != 0 or found is None:
        sys.exit(f"a counted run failed:\n{out[-2000:]}\n{err[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--kb", type=int, nargs="+", default=[1, 256])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, root, listed, rounds = args.child
        _child(mode, Path(root), Path(listed), int(rounds))
        return 0
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: this benchmark counts instructions with its "
                 "cachegrind tool (Debian: apt-get install valgrind)")
    low, high = ROUNDS
    print(f"{args.calls} openai-shaped chat requests per size, answered request by request "
          "under cachegrind; instructions per call:")
    print(f"  {'prompt':>8}  {'canned':>12}  {'redactkey':>12}  {'added':>12}  ratio (transports)")
    with tempfile.TemporaryDirectory() as tmp:
        for kb in args.kb:
            root = Path(tmp) / f"{kb}kb"
            listed = _record(root, kb, args.calls)
            counts: dict[str, int] = {}
            for mode in ("canned", "redactkey"):
                # the two runs of a mode at once: one per core of a two-core machine
                runs = [_counted(mode, root, listed, rounds) for rounds in ROUNDS]
                fewer, more = (_refs(run) for run in runs)
                counts[mode] = (more - fewer) // ((high - low) * args.calls)
            canned, ours = counts["canned"], counts["redactkey"]
            print(f"  {kb:>5} KB  {canned:>12,}  {ours:>12,}  {ours - canned:>+12,}  "
                  f"{ours / canned:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
