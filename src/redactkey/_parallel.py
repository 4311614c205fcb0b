"""Files read in parallel (`-j/--jobs`) with the same output, in the same order.

Worker processes get the work of the calling process one of two ways:

- **fork** (Linux, and wherever `fork` is a start method), when the calling process
  runs one thread: the workers are copies of it, the checker and its detectors
  already built, nothing imported again and nothing pickled but the files' outcomes;
- otherwise (**spawn**, or a process that runs threads, where a fork could inherit a
  held lock), each worker builds its own checker once, in its initializer, from a
  picklable recipe (run secrets are never pickled: a worker reads them from its own
  environment, which it inherits).

Files are handed out in chunks (one task per chunk, not per file), and `run_files`
yields one `Outcome` per file in the order of the walk, whatever order the workers
finish in, so a report does not depend on `--jobs`. Small runs (a pre-commit hook's
handful of files) stay in the calling process: starting workers costs more than it
saves.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ._classify import Target
from ._findings import Issue

__all__ = ["MIN_PARALLEL_FILES", "Outcome", "default_jobs", "run_files", "start_method"]

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
    allowed: int = 0  # findings passed over by an inline pragma (counted as allowed)
    extra: Any = None  # command-specific data for the tree-wide checks


def default_jobs() -> int:
    """The machine's cores (the CPUs this process may run on, where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def start_method() -> str:
    """How workers start here: `fork` where the platform has it and this process runs a
    single thread (a fork of a threaded process can inherit a lock held by another
    thread), else `spawn`."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


# The work function of a worker process: inherited from the calling process (fork) or
# built once by the initializer (spawn). One per process.
_WORKER: dict[str, Work] = {}


def _start(factory: Callable[[], Work]) -> None:
    _WORKER["work"] = factory()


def _chunk(targets: Sequence[Target]) -> list[Outcome]:
    work = _WORKER["work"]
    return [work(target) for target in targets]


def run_files(
    targets: Sequence[Target],
    work: Work,
    *,
    jobs: int = 1,
    factory: Callable[[], Work] | None = None,
    progress: Progress | None = None,
) -> Iterator[Outcome]:
    """One outcome per target, in the targets' order: with `work` in this process, or in
    `jobs` worker processes (forked with `work`, or spawned, each building its work
    with `factory`, which must be picklable)."""
    shown: Iterable[Target] = progress(targets) if progress is not None else targets
    if jobs <= 1 or factory is None or len(targets) < MIN_PARALLEL_FILES:
        for target in shown:
            yield work(target)
        return
    method = start_method()
    context = multiprocessing.get_context(method)
    # a few chunks per worker: the load stays even, and each task carries many files
    size = max(8, min(256, len(targets) // (jobs * 4)))
    chunks = [targets[at:at + size] for at in range(0, len(targets), size)]
    if method == "fork":
        _WORKER["work"] = work  # the workers are copies of this process
        options: dict[str, Any] = {}
    else:
        options = {"initializer": _start, "initargs": (factory,)}
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=context,
                                 **options) as pool:
            outcomes = (outcome for done in pool.map(_chunk, chunks) for outcome in done)
            for _target, outcome in zip(shown, outcomes, strict=True):
                yield outcome
    finally:
        _WORKER.pop("work", None)
