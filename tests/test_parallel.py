"""`run_files`: every file once, in the walk's order, the calling process working too;
`default_jobs`: the free cores."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from redactkey.commands import _parallel
from redactkey.commands._parallel import MIN_PARALLEL_FILES, Outcome, default_jobs, run_files
from redactkey.recordings._classify import Target


def _tagged(target: Target) -> Outcome:
    """An outcome naming the process that made it (a little work: the tasks overlap)."""
    time.sleep(0.002)
    return Outcome(target.display, format=str(os.getpid()))


def _tagging() -> functools.partial[Outcome]:
    return functools.partial(_tagged)


class TestRunFiles:
    """Outcomes come back in the targets' order whoever made them."""

    def test_order_and_shared_work(self, tmp_path: Path) -> None:
        """With `jobs=2` one worker and this process share the chunks; each target has
        one outcome, in order; the progress wrapper sees every target and finishes."""
        targets = [Target(tmp_path / f"{n:03d}.json", f"{n:03d}.json") for n in range(200)]
        seen: list[Target] = []
        finished: list[bool] = []

        def progress(items: Sequence[Target]) -> Iterator[Target]:
            for item in items:
                seen.append(item)
                yield item
            finished.append(True)

        outcomes = list(run_files(targets, _tagged, jobs=2, factory=_tagging,
                                  progress=progress))
        assert [o.display for o in outcomes] == [t.display for t in targets]
        makers = {o.format for o in outcomes}
        assert str(os.getpid()) in makers  # this process took chunks no worker had begun
        assert len(makers) == 2  # and one worker did the others
        assert (seen, finished) == (targets, [True])

    def test_small_runs_stay_here(self, tmp_path: Path) -> None:
        """Fewer files than `MIN_PARALLEL_FILES`: no worker is started."""
        targets = [Target(tmp_path / f"{n}.json", f"{n}.json")
                   for n in range(MIN_PARALLEL_FILES - 1)]
        outcomes = list(run_files(targets, _tagged, jobs=4, factory=_tagging))
        assert {o.format for o in outcomes} == {str(os.getpid())}


class TestDefaultJobs:
    """Without `--jobs`, the cores that the last minute's load leaves free, at least one."""

    @pytest.mark.parametrize(("cores", "load", "jobs"), [
        (2, 0.3, 2), (2, 1.5, 1), (2, 11.0, 1), (8, 3.2, 5), (8, 0.0, 8), (1, 0.0, 1),
    ])
    def test_free_cores(self, cores: int, load: float, jobs: int,
                        monkeypatch: pytest.MonkeyPatch) -> None:
        """A busy machine gets one process; an idle one all its cores."""
        monkeypatch.setattr(_parallel, "cores", lambda: cores)
        monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
        assert default_jobs() == jobs
