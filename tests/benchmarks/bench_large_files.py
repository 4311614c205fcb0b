"""Benchmark: `redact check` and `redact audit` on one very large recording.

    python tests/benchmarks/bench_large_files.py [--mb 1024] [--formats json,yaml]
        [--commands check,audit] [--keep DIR]

Writes a vcrpy-shaped cassette of the size asked (one interaction per line, bodies of
base64 text, written piece by piece: the generator never holds it whole) with one fake
OpenAI key planted near the middle, then runs each command on it in a fresh process
and prints its wall and CPU time and its peak resident memory (from `getrusage` inside
the process) and whether the key was reported at its line. A file this size is read in
pieces (docs/decisions/0064-files-of-any-size-in-bounded-pieces.md). Exit 1 when the
key was missed or a command's peak memory reached the file's size or 1 GB.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import string
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ for helpers

from helpers import run_measured, write_recording


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--formats", default="json", help="json, yaml or both (comma)")
    parser.add_argument("--commands", default="check,audit")
    parser.add_argument("--keep", type=Path, default=None, help="generate into this directory")
    options = parser.parse_args()
    root = options.keep or Path(tempfile.mkdtemp(prefix="redactkey-large-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / ".redactkey.toml").write_text("", encoding="utf-8")
    rng = random.Random(35)
    key = "sk-proj-" + "".join(rng.choice(string.ascii_letters + string.digits)
                               for _ in range(48))
    bar = min(options.mb, 1024)  # MB of peak memory a command may reach
    failed = False
    try:
        for fmt in options.formats.split(","):
            path = root / f"large.{fmt}"
            line = write_recording(path, options.mb * 2**20, key, fmt=fmt)
            size = path.stat().st_size / 2**20
            for command in options.commands.split(","):
                run = run_measured([command, "--format", "json", path.name], root,
                                   timeout=24 * 3600)
                report = json.loads(run.out) if run.out.startswith("{") else {}
                lines = [f["line"] for f in report.get("findings", [])
                         if f["rule"] == "openai-api-key"]
                found = lines == [line]
                ok = found and run.peak_mb < bar
                failed |= not ok
                print(f"{command:5} {fmt:4} {size:8.0f} MB: {run.wall:7.1f} s wall, "
                      f"{run.seconds:7.1f} CPU-s ({size / run.seconds:5.2f} MB/CPU-s), "
                      f"peak {run.peak_mb:4.0f} MB "
                      f"(bar {bar} MB), key {'found at line ' + str(line) if found else 'MISSED'}"
                      f", exit {run.code}" + ("" if ok else "  <-- FAILED"))
            if options.keep is None:
                path.unlink()
    finally:
        if options.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
