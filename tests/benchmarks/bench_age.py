"""Benchmark: fixture ages from git for a 5,000-file tree, batched vs one call per file.

Run as `python tests/benchmarks/bench_age.py`. Builds a temporary git repository with
5,000 fixture files over 20 commits, then times `FixtureAges().ages(tree)` (one
`git log` and one `git diff` for the whole tree, best of 3) against the baseline of
`git log -1 --format=%ct -- FILE` per file (measured on 100 files and scaled).
Target: the whole tree in under 2 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redactkey.fixtures._age import FixtureAges

FILES = 5_000
COMMITS = 20
TARGET_SECONDS = 2.0


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def build(repo: Path) -> Path:
    tree = repo / "tests" / "fixtures"
    tree.mkdir(parents=True)
    _git(repo, "init", "-q")
    per_commit = FILES // COMMITS
    for commit in range(COMMITS):
        for n in range(commit * per_commit, (commit + 1) * per_commit):
            (tree / f"http.{n:064x}.json").write_text(f'{{"n": {n}}}\n')
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"batch {commit}")
    return tree


def main() -> int:
    with tempfile.TemporaryDirectory() as temp:
        tree = build(Path(temp))
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            ages = FixtureAges().ages(tree)
            best = min(best, time.perf_counter() - start)
        assert len(ages) == FILES
        assert all(a.source == "git" for a in ages.values())
        sample = sorted(tree.iterdir())[:100]
        start = time.perf_counter()
        for path in sample:
            subprocess.run(["git", "log", "-1", "--format=%ct", "--", path.name], cwd=tree,
                           capture_output=True, check=True)
        per_file = (time.perf_counter() - start) / len(sample) * FILES
    print(f"fixture ages, {FILES} files: batched {best:.3f} s; one git call per file "
          f"(scaled from 100) {per_file:.1f} s; ratio {per_file / best:.0f}x")
    ok = best < TARGET_SECONDS
    print(f"target: batched < {TARGET_SECONDS:.0f} s: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
