"""A replayed call reads its fixture once, and a lookup builds what it needs only once.

The HTTP layer asks whether a recording is a stream before replaying it; that read is
the replay's own (`ModelFixtures.recorded`), never a second read of the same file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from redactkey import (
    FixtureDir,
    FixtureFormatError,
    FixtureTransport,
    MissingFixtureError,
    ModelFixtures,
    Redactor,
)
from redactkey.fixtures._format import Fixture


class CountingStore:
    """A store that counts reads of the store it wraps."""

    def __init__(self, inner: FixtureDir) -> None:
        self.inner = inner
        self.gets = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, kind: str, key: str) -> Fixture | None:
        self.gets += 1
        return self.inner.get(kind, key)


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "one read"}]}


@pytest.fixture
def store(tmp_path: Path) -> CountingStore:
    fixtures = ModelFixtures(FixtureDir(tmp_path), mode="record", redactor=Redactor())
    fixtures.call("chat", REQUEST, lambda: {"text": "recorded"})
    return CountingStore(FixtureDir(tmp_path))


class TestRecorded:
    """`ModelFixtures.recorded` reads for the call that follows it."""

    def test_the_next_call_of_that_request_reads_nothing_more(
        self, store: CountingStore
    ) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        found = fixtures.recorded("chat", REQUEST)
        assert found is not None
        assert found.answer == {"text": "recorded"}
        assert fixtures.call("chat", REQUEST, None) == {"text": "recorded"}
        assert store.gets == 1

    def test_another_request_reads_again(self, store: CountingStore) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        fixtures.recorded("chat", REQUEST)
        other = {**REQUEST, "model": "m2"}
        fixtures.recorded("chat", other)
        assert fixtures.call("chat", REQUEST, None) == {"text": "recorded"}
        assert store.gets == 3

    def test_the_read_is_used_once(self, store: CountingStore) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        fixtures.recorded("chat", REQUEST)
        fixtures.call("chat", REQUEST, None)
        fixtures.call("chat", REQUEST, None)
        assert store.gets == 2

    def test_a_miss_is_reported_as_a_miss(self, tmp_path: Path) -> None:
        fixtures = ModelFixtures(FixtureDir(tmp_path / "empty"), mode="replay",
                                 redactor=Redactor())
        assert fixtures.recorded("chat", REQUEST) is None
        with pytest.raises(MissingFixtureError):
            fixtures.call("chat", REQUEST, None)


class TestTransport:
    """An HTTP replay whose request does not say whether it streams reads its file once."""

    def test_one_read_per_replayed_call(self, tmp_path: Path) -> None:
        inner = httpx2.MockTransport(lambda request: httpx2.Response(200, json={"a": 1}))
        recorder = FixtureTransport(FixtureDir(tmp_path), mode="record", inner=inner)
        with httpx2.Client(transport=recorder) as client:
            client.post("https://api.example.com/v1/x", json={"q": 1})
        store = CountingStore(FixtureDir(tmp_path))
        replay = FixtureTransport(store, mode="replay")  # type: ignore[arg-type]
        with httpx2.Client(transport=replay) as client:
            for round_ in range(1, 4):
                assert client.post("https://api.example.com/v1/x", json={"q": 1}).json() == {
                    "a": 1
                }
                assert store.gets == round_

    def test_a_stream_the_request_does_not_ask_for_is_read_once(self, tmp_path: Path) -> None:
        """A recorded stream the request does not announce is told from its file, and
        that read is the one the replay uses."""
        sse = b"data: {\"n\":1}\n\ndata: [DONE]\n\n"
        inner = httpx2.MockTransport(lambda request: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=sse))
        recorder = FixtureTransport(FixtureDir(tmp_path), mode="record", inner=inner)
        with httpx2.Client(transport=recorder) as client:
            assert client.get("https://api.example.com/v1/events").content == sse
        store = CountingStore(FixtureDir(tmp_path))
        replay = FixtureTransport(store, mode="replay")  # type: ignore[arg-type]
        with httpx2.Client(transport=replay) as client:
            assert client.get("https://api.example.com/v1/events").content == sse
        assert store.gets == 1


class TestReplayedAnswer:
    """`ModelFixtures.replayed_answer` replays an answer as `call` would, in one read; for
    anything else it says no and the call that follows reuses its read."""

    def test_an_answer_is_read_once(self, store: CountingStore) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        assert fixtures.replayed_answer("chat", REQUEST) == (True, {"text": "recorded"})
        assert store.gets == 1

    def test_a_miss_is_left_to_the_call(self, tmp_path: Path) -> None:
        store = CountingStore(FixtureDir(tmp_path / "empty"))
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        assert fixtures.replayed_answer("chat", REQUEST) == (False, None)
        with pytest.raises(MissingFixtureError):
            fixtures.call("chat", REQUEST, None)
        assert store.gets == 1

    def test_a_recorded_stream_is_left_to_the_stream(self, tmp_path: Path) -> None:
        recorder = ModelFixtures(FixtureDir(tmp_path), mode="record", redactor=Redactor())
        list(recorder.stream("chat", REQUEST, lambda: iter([{"t": "a"}, {"t": "b"}])))
        store = CountingStore(FixtureDir(tmp_path))
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        assert fixtures.replayed_answer("chat", REQUEST) == (False, None)
        assert fixtures.recorded_outcome("chat", REQUEST) == "chunks"
        assert list(fixtures.stream("chat", REQUEST, None)) == [{"t": "a"}, {"t": "b"}]
        assert store.gets == 1

    def test_an_answer_replayed_is_reported_once(self, store: CountingStore) -> None:
        noted: list[tuple[str, str]] = []

        class Log:
            def note(self, outcome: str, kind: str, key: str, **where: Any) -> None:
                noted.append((outcome, kind))

        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor(), report=Log())
        assert fixtures.replayed_answer("chat", REQUEST)[0]
        assert noted == [("replayed", "chat")]

    def test_a_copy_over_another_store_reads_that_store(
        self, store: CountingStore, tmp_path: Path
    ) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        assert fixtures.replayed_answer("chat", REQUEST)[0]
        other = CountingStore(FixtureDir(tmp_path / "elsewhere"))
        assert fixtures.over(other).replayed_answer("chat", REQUEST) == (False, None)
        assert (store.gets, other.gets) == (1, 1)
        assert fixtures.replayed_answer("chat", REQUEST)[0]
        assert store.gets == 2

    @pytest.mark.parametrize("mode", ["record", "verify", "live"])
    def test_other_modes_read_nothing(self, store: CountingStore, mode: Any) -> None:
        fixtures = ModelFixtures(store, mode=mode, redactor=Redactor())
        assert fixtures.replayed_answer("chat", REQUEST) == (False, None)
        assert store.gets == 0


class TestRecordedOutcome:
    """`ModelFixtures.recorded_outcome` names the outcome from the read the next call
    replays; the file's request is not read for it (replay never needs it)."""

    def test_outcome_then_call_read_once(self, store: CountingStore) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        assert fixtures.recorded_outcome("chat", REQUEST) == "answer"
        assert fixtures.call("chat", REQUEST, None) == {"text": "recorded"}
        assert store.gets == 1

    def test_nothing_recorded_is_none(self, tmp_path: Path) -> None:
        fixtures = ModelFixtures(FixtureDir(tmp_path / "empty"), mode="replay",
                                 redactor=Redactor())
        assert fixtures.recorded_outcome("chat", REQUEST) is None

    def test_a_directory_store_is_replayed_without_parsing_the_request(
        self, tmp_path: Path
    ) -> None:
        """The stored request may even be unreadable: replay reads the outcome only,
        while `recorded` (which hands the fixture to its caller) reads the file whole."""
        ModelFixtures(FixtureDir(tmp_path), mode="record", redactor=Redactor()).call(
            "chat", REQUEST, lambda: {"text": "recorded"})
        (path,) = tmp_path.iterdir()
        path.write_bytes(path.read_bytes().replace(b'"one read"', b'one read'))
        fixtures = ModelFixtures(FixtureDir(tmp_path), mode="replay", redactor=Redactor())
        assert fixtures.recorded_outcome("chat", REQUEST) == "answer"
        assert fixtures.call("chat", REQUEST, None) == {"text": "recorded"}
        with pytest.raises(FixtureFormatError):
            fixtures.recorded("chat", REQUEST)
