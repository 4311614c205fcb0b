"""Per-call cost of replay and record through `ModelFixtures` and a `FixtureDir`.

    python tests/benchmarks/bench_replay.py [--fixtures 10000] [--calls 2000] [--records 300]

1. Builds a directory of `--fixtures` fixture files (chat calls with ~2 KB requests and
   answers, seeded so every run sees the same bytes) and a `Redactor` with 5 collected
   secrets plus the detectors.
2. replay: `ModelFixtures(mode="replay").call(...)` on a 2 KB request that hits, i.e.
   redact + key material + SHA-256 + read + parse + validate, in microseconds per call;
   then its parts (redact, key, read) timed alone.
3. record: `ModelFixtures(mode="record").call(...)` of new calls into a fresh directory
   (redact request and answer, key, canonical bytes, temp file + fsync + rename).
4. Baselines, measured in the same run: `baseline-read` opens the same fixture file by
   name and `json.loads` it (the least a one-file-per-call lookup can cost);
   `baseline-write` writes the same bytes with a plain `open(path, "wb")` (no temp
   file, no fsync: what a crash could truncate). Ratios are against those.
5. Peak memory (tracemalloc) of 500 replayed calls, and the cost of one miss (which
   reads every fixture of the kind to find the nearest call).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redactkey import (
    Fixture,
    FixtureDir,
    MissingFixtureError,
    ModelFixtures,
    Redactor,
    RunSecrets,
)
from redactkey.keys._keys import key_from_material, key_material

WORDS = ("the", "model", "returns", "a", "structured", "answer", "with", "citations", "for",
         "each", "claim", "and", "a", "short", "summary", "of", "the", "quarterly", "report",
         "including", "revenue", "growth", "churn", "and", "pipeline", "metrics", "per",
         "region", "keep", "the", "tone", "neutral")


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def request_for(n: int, rng: random.Random) -> dict[str, Any]:
    """A chat request of about 2 KB whose content depends on `n`."""
    return {
        "model": "gpt-4o-mini",
        "temperature": 0,
        "max_tokens": 512,
        "messages": [
            {"role": "system", "content": "You are a careful analyst. " + _prose(rng, 60)},
            {"role": "user", "content": f"Report {n}: " + _prose(rng, 235)},
        ],
        "timeout": 30,
        "user": "bench",
    }


def answer_for(n: int, rng: random.Random) -> dict[str, Any]:
    return {"id": f"chatcmpl-{n}", "choices": [{"index": 0, "message": {
        "role": "assistant", "content": _prose(rng, 300)}}], "usage": {"total_tokens": 900}}


def per_call_us(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Mean and median microseconds per call over `calls` calls (after a warm-up)."""
    for _ in range(min(50, calls)):
        fn()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return statistics.fmean(samples), statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--records", type=int, default=300)
    args = parser.parse_args(argv)

    rng = random.Random(4)
    secrets = RunSecrets()
    for slot in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD",
                 "SEARCH_TOKEN"):
        secrets.add(slot, "".join(rng.choice(string.ascii_letters) for _ in range(40)))
    redactor = Redactor(secrets)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = FixtureDir(root / "fixtures")
        store.path.mkdir()
        requests = []
        print(f"building {args.fixtures} fixtures ...", file=sys.stderr)
        for n in range(args.fixtures):
            request = request_for(n, rng)
            material = key_material("chat", request, redactor=redactor)
            key = key_from_material(material)
            fixture = Fixture(key=key, kind="chat", request=material,
                              answer=answer_for(n, rng))
            # Setup only: plain writes, so building 10,000 files does not take minutes.
            store.path_for("chat", key).write_bytes(fixture.dumps())
            if n < 100:
                requests.append((request, key))
        request, key = requests[7]
        size = len(json.dumps(request))
        path = store.path_for("chat", key)

        replay = ModelFixtures(store, mode="replay", redactor=redactor)
        results: dict[str, tuple[float, float]] = {}
        results["replay (redact+key+read)"] = per_call_us(
            lambda: replay.call("chat", request, None), args.calls)
        results["  redact request"] = per_call_us(lambda: redactor.redact(request), args.calls)
        results["  key material + sha256"] = per_call_us(
            lambda: key_from_material(key_material("chat", request, redactor=redactor)),
            args.calls)
        results["  read + parse + validate"] = per_call_us(
            lambda: store.get("chat", key), args.calls)

        def baseline_read() -> Any:
            with open(path, "rb") as handle:
                return json.loads(handle.read())

        results["baseline-read (open + json.loads)"] = per_call_us(baseline_read, args.calls)

        record_dir = FixtureDir(root / "record")
        recorder = ModelFixtures(record_dir, mode="record", redactor=redactor)
        fresh = [(request_for(100_000 + n, rng), answer_for(n, rng))
                 for n in range(args.records + 50)]
        counter = iter(range(len(fresh)))

        def record_one() -> Any:
            req, ans = fresh[next(counter)]
            return recorder.call("chat", req, lambda: ans)

        results["record (redact+key+atomic write)"] = per_call_us(record_one, args.records)
        data = store.path_for("chat", key).read_bytes()
        plain_dir = root / "plain"
        plain_dir.mkdir()
        names = iter(range(10**6))

        def baseline_write() -> None:
            with open(plain_dir / f"{next(names)}.json", "wb") as handle:
                handle.write(data)

        results["baseline-write (open 'wb', no fsync)"] = per_call_us(
            baseline_write, args.records)

        tracemalloc.start()
        for _ in range(500):
            replay.call("chat", request, None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        missing = {**request, "temperature": 0.7}
        start = time.perf_counter()
        try:
            replay.call("chat", missing, None)
        except MissingFixtureError as exc:
            miss_lines = len(str(exc).splitlines())
        miss_ms = (time.perf_counter() - start) * 1000

    print(f"request: {size} bytes of JSON; directory: {args.fixtures} fixtures; "
          f"python {sys.version.split()[0]}")
    print(f"{'':40} {'mean us':>10} {'median us':>10}")
    for name, (mean, median) in results.items():
        print(f"{name:40} {mean:10.1f} {median:10.1f}")
    base_read = results["baseline-read (open + json.loads)"][1]
    base_write = results["baseline-write (open 'wb', no fsync)"][1]
    print(f"replay / baseline-read  = {results['replay (redact+key+read)'][1] / base_read:.1f}x"
          " (median)")
    print(f"record / baseline-write = "
          f"{results['record (redact+key+atomic write)'][1] / base_write:.1f}x (median)")
    print(f"peak traced memory over 500 replays: {peak / 1024:.0f} KiB")
    print(f"one miss (nearest of {args.fixtures} calls, {miss_lines} lines): {miss_ms:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
