"""Files read in parallel (`-j/--jobs`) with the same output, in the same order
(docs/cli/audit.md, `--jobs`).

A forked worker (`start_method`) is a copy of the calling process, its checker already
built and nothing pickled but the outcomes; a spawned one builds its own once, from a
picklable recipe (run secrets are never pickled: a worker reads them from its own
environment, which it inherits).
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .._errors import FixtureFormatError
from ..recordings._classify import Target, Unreadable
from ._issues import InputProblem, Issue, Report

__all__ = ["MIN_PARALLEL_FILES", "Outcome", "cores", "default_jobs", "read_into", "run_files",
           "start_method"]

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


def cores() -> int:
    """The CPUs this process may run on (where the OS says), else the machine's cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def default_jobs() -> int:
    """The processes `--jobs` uses when not given: the cores that are free, i.e. the
    cores less the whole runs of work the last minute's load average counts, at least
    one. On a busy machine another process only shares the cores this one would have
    had (and pays its start-up); a given `--jobs N` is always honoured."""
    total = cores()
    try:
        busy = int(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover - no load average here
        busy = 0
    return max(1, min(total, total - busy))


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
    _WORKER["work"] = functools.partial(_guarded, factory())


def _guarded(work: Work, target: Target) -> Outcome:
    """`work(target)`, or why the file was not read: `Unreadable` (over a cap, corrupt) is
    skipped with a finding, `FixtureFormatError` (cannot be opened) a problem."""
    try:
        return work(target)
    except Unreadable as exc:
        return Outcome(target.display, unreadable=exc.problem)
    except FixtureFormatError as exc:
        return Outcome(target.display, problem=exc.problem)


def _chunk(targets: Sequence[Target]) -> list[Outcome]:
    work = _WORKER["work"]
    return [work(target) for target in targets]


def _chunks(targets: Sequence[Target], jobs: int) -> list[Sequence[Target]]:
    """The targets cut in chunks: many per process, so the load stays even to the end
    (the last chunks are what one process may still run while the others wait), each
    holding enough files that handing it out costs little beside its work."""
    size = max(8, min(128, len(targets) // (jobs * 8)))
    return [targets[at:at + size] for at in range(0, len(targets), size)]


def run_files(
    targets: Sequence[Target],
    work: Work,
    *,
    factory: Callable[[], Work],
    jobs: int = 1,
    progress: Progress | None = None,
) -> Iterator[Outcome]:
    """One outcome per target, in the targets' order: with `work` in this process, or in
    `jobs` processes: this one and `jobs - 1` workers (forked with `work`, or spawned,
    each building its work with `factory`, which must be picklable).

    This process works too rather than wait: while the chunk whose turn it is to be
    reported is still being read by a worker, it takes the last chunk that no worker has
    started (a pending task is cancelled and run here), so with `-j 2` one worker and
    this process share the files, and nothing is done twice."""
    shown: Iterable[Target] = progress(targets) if progress is not None else targets
    work = functools.partial(_guarded, work)
    if jobs <= 1 or len(targets) < MIN_PARALLEL_FILES:
        for target in shown:
            yield work(target)
        return
    method = start_method()
    context = multiprocessing.get_context(method)
    chunks = _chunks(targets, jobs)
    if method == "fork":
        _WORKER["work"] = work  # the workers are copies of this process
        options: dict[str, Any] = {}
        # objects that exist now are never collected in a worker: its collector does not
        # write to (and so copy) the pages it shares with this process
        gc.freeze()
    else:
        options = {"initializer": _start, "initargs": (factory,)}
    try:
        with ProcessPoolExecutor(max_workers=min(jobs - 1, len(chunks)), mp_context=context,
                                 **options) as pool:
            futures = [pool.submit(_chunk, chunk) for chunk in chunks]  # forks the workers
            if method == "fork":
                gc.unfreeze()
            done: dict[int, list[Outcome]] = {}
            last = len(chunks) - 1  # the next chunk from the end this process may take
            order = iter(shown)
            for index, future in enumerate(futures):
                while index not in done and not future.done() and last > index:
                    if futures[last].cancel():  # no worker has started it: run it here
                        done[last] = [work(target) for target in chunks[last]]
                        last -= 1
                    else:
                        last = index  # tasks start in order: every earlier one has too
                if index not in done:
                    done[index] = [work(target) for target in chunks[index]] \
                        if future.cancel() else future.result()
                for outcome in done.pop(index):
                    next(order)  # the progress bar advances as outcomes are reported
                    yield outcome
            if next(order, None) is not None:  # pragma: no cover - one outcome per target
                raise AssertionError("a target was left without an outcome")
    finally:
        _WORKER.pop("work", None)
        if method == "fork" and gc.get_freeze_count():
            gc.unfreeze()


def read_into(report: Report, targets: Sequence[Target], work: Work,
              factory: Callable[[], Work], *, jobs: int,
              progress: Progress | None) -> Iterator[Outcome]:
    """The outcomes of the files read (`run_files`), each noted in `report` with its format
    and the findings its inline pragmas passed over; a file not read is noted as skipped
    (with an `unreadable-file` finding), one that cannot be opened as a problem."""
    for outcome in run_files(targets, work, jobs=jobs, factory=factory, progress=progress):
        if outcome.unreadable is not None:
            report.skip(outcome.display, outcome.unreadable, finding=True)
        elif outcome.problem is not None:
            report.problems.append(InputProblem(outcome.display, outcome.problem))
        else:
            report.read(outcome.display, outcome.format or "text")
            report.allowed += outcome.allowed
            yield outcome
