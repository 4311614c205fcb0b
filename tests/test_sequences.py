"""Identical requests with different answers: every answer kept, replayed in order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from redactkey import FixtureDir, FixtureTransport, MissingFixtureError
from redactkey.fixtures._store import parse_file_name

URL = "https://api.example.test/v1/jobs/7"


def _changing(answers: list[str]) -> httpx2.MockTransport:
    """A server that answers the same request with the next of `answers` each time."""
    pending: Iterator[str] = iter(answers)
    return httpx2.MockTransport(lambda request: httpx2.Response(
        200, json={"state": next(pending)}))


def _states(transport: FixtureTransport, calls: int) -> list[str]:
    with httpx2.Client(transport=transport) as client:
        return [client.get(URL).json()["state"] for _ in range(calls)]


def _names(directory: Path) -> list[int]:
    parsed = [parse_file_name(path.name) for path in sorted(directory.iterdir())]
    return sorted(item[2] for item in parsed if item is not None)


class TestSequences:
    """The n-th identical call of a layer replays the n-th answer, then the last repeats."""

    def test_record_then_replay_in_order(self, tmp_path: Path) -> None:
        """An answer equal to the one before it is not written again; replay gives every
        call the answer it got, and the last answer after that."""
        record = FixtureTransport(FixtureDir(tmp_path), mode="record",
                                  inner=_changing(["queued", "queued", "running", "done"]))
        assert _states(record, 4) == ["queued", "queued", "running", "done"]
        assert _names(tmp_path) == [1, 3, 4]
        replay = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        assert _states(replay, 6) == ["queued", "queued", "running", "done", "done", "done"]
        again = FixtureTransport(FixtureDir(tmp_path), mode="replay")
        assert _states(again, 1) == ["queued"]  # each layer counts from its first call

    def test_record_again_replaces_the_sequence(self, tmp_path: Path) -> None:
        """A shorter recording of the same request leaves no stale later answer behind."""
        _states(FixtureTransport(FixtureDir(tmp_path), mode="record",
                                 inner=_changing(["a", "b", "c"])), 3)
        assert _names(tmp_path) == [1, 2, 3]
        _states(FixtureTransport(FixtureDir(tmp_path), mode="record",
                                 inner=_changing(["z", "z"])), 2)
        assert _names(tmp_path) == [1]
        assert _states(FixtureTransport(FixtureDir(tmp_path), mode="replay"), 3) == ["z"] * 3

    def test_auto_records_a_miss_then_replays_it(self, tmp_path: Path) -> None:
        """In auto mode a miss is recorded, and the calls after it replay the answers up
        to theirs; a later layer replays the recorded sequence from its start."""
        record = FixtureTransport(FixtureDir(tmp_path), mode="record",
                                  inner=_changing(["pending", "ready"]))
        assert _states(record, 2) == ["pending", "ready"]
        auto = FixtureTransport(FixtureDir(tmp_path), mode="auto",
                                inner=_changing(["never"] * 3))
        assert _states(auto, 3) == ["pending", "ready", "ready"]
        for path in tmp_path.iterdir():  # a miss again
            path.unlink()
        fresh = FixtureTransport(FixtureDir(tmp_path), mode="auto",
                                 inner=_changing(["live", "other"]))
        assert _states(fresh, 2) == ["live", "live"]

    def test_replay_miss_still_raises(self, tmp_path: Path) -> None:
        """Nothing recorded: the first call is a miss, as before."""
        with pytest.raises(MissingFixtureError):
            _states(FixtureTransport(FixtureDir(tmp_path), mode="replay"), 1)
