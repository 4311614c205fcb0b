"""Files read in parallel (`-j/--jobs`) with the same output, in the same order.

Each worker process builds its own checker from a picklable recipe (run secrets
are never pickled: a worker reads them from its own environment, which it
inherits). `run_files` yields one `Outcome` per file in the order of the walk,
whatever order the workers finish in, so a report does not depend on `--jobs`.
Small runs (a pre-commit hook's handful of files) stay in the calling process:
starting workers costs more than it saves.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ._classify import Target
from ._findings import Issue

__all__ = ["MIN_PARALLEL_FILES", "Outcome", "default_jobs", "run_files"]

# Below this many files the work stays in the calling process.
MIN_PARALLEL_FILES = 64

Work = Callable[[Target], "Outcome"]
Progress = Callable[[Sequence[Target]], Iterable[Target]]


@dataclass
class Outcome:
    """What reading one file gave: its format and findings, or why it was not read."""

    display: str
    format: str | None = None
    issues: list[Issue] = field(default_factory=list)
    unreadable: str | None = None  # over a cap, corrupt: skipped with a finding
    problem: str | None = None  # cannot be opened at all (exit 2)
    extra: Any = None  # command-specific data for the tree-wide checks


def default_jobs() -> int:
    """The machine's cores (the CPUs this process may run on, where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


# The work function of a worker process, set once by its initializer. It lives only in
# worker processes (never in the calling one), one per process.
_WORKER: dict[str, Work] = {}


def _start(factory: Callable[[], Work]) -> None:
    _WORKER["work"] = factory()


def _one(target: Target) -> Outcome:
    return _WORKER["work"](target)


def run_files(
    targets: Sequence[Target],
    work: Work,
    *,
    jobs: int = 1,
    factory: Callable[[], Work] | None = None,
    progress: Progress | None = None,
) -> Iterator[Outcome]:
    """One outcome per target, in the targets' order: with `work` in this process, or in
    `jobs` worker processes that each build their work with `factory` (picklable)."""
    shown: Iterable[Target] = progress(targets) if progress is not None else targets
    if jobs <= 1 or factory is None or len(targets) < MIN_PARALLEL_FILES:
        for target in shown:
            yield work(target)
        return
    context = multiprocessing.get_context("spawn")  # no fork of a threaded process
    chunk = max(1, min(64, len(targets) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start,
                             initargs=(factory,)) as pool:
        results = pool.map(_one, targets, chunksize=chunk)
        for _target, outcome in zip(shown, results, strict=True):
            yield outcome
