"""A replayed call reads its fixture once, and a lookup builds what it needs only once.

The HTTP layer asks whether a recording is a stream before replaying it; that read is
the replay's own (`ModelFixtures.replayed` of a keyed call), never a second read of the
same file.
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


class TestKeyed:
    """`ModelFixtures.key` keys a call once; what `replayed` reads for it is what the keyed
    call replays."""

    def test_a_look_then_the_call_reads_once(self, store: CountingStore) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        call = fixtures.key("chat", REQUEST)
        found = fixtures.replayed(call)
        assert found is not None
        assert found.answer == {"text": "recorded"}
        assert fixtures.call_keyed(call, None) == {"text": "recorded"}
        assert store.gets == 1

    def test_each_call_reads_its_own(self, store: CountingStore) -> None:
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        fixtures.call("chat", REQUEST, None)
        fixtures.call("chat", REQUEST, None)
        assert store.gets == 2

    def test_a_miss_is_reported_as_a_miss(self, tmp_path: Path) -> None:
        fixtures = ModelFixtures(FixtureDir(tmp_path / "empty"), mode="replay",
                                 redactor=Redactor())
        call = fixtures.key("chat", REQUEST)
        assert fixtures.replayed(call) is None
        with pytest.raises(MissingFixtureError):
            fixtures.call_keyed(call, None)

    def test_a_recorded_stream_is_told_and_replayed_from_one_read(
        self, tmp_path: Path
    ) -> None:
        recorder = ModelFixtures(FixtureDir(tmp_path), mode="record", redactor=Redactor())
        list(recorder.stream("chat", REQUEST, lambda: iter([{"t": "a"}, {"t": "b"}])))
        store = CountingStore(FixtureDir(tmp_path))
        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor())
        call = fixtures.key("chat", REQUEST)
        assert fixtures.replayed(call).outcome == "chunks"  # type: ignore[union-attr]
        assert list(fixtures.stream_keyed(call, None)) == [{"t": "a"}, {"t": "b"}]
        assert store.gets == 1

    def test_a_replayed_answer_is_reported_once(self, store: CountingStore) -> None:
        noted: list[tuple[str, str]] = []

        class Log:
            def note(self, outcome: str, kind: str, key: str, **where: Any) -> None:
                noted.append((outcome, kind))

        fixtures = ModelFixtures(store, mode="replay", redactor=Redactor(), report=Log())
        call = fixtures.key("chat", REQUEST)
        fixtures.replayed(call)
        assert fixtures.call_keyed(call, None) == {"text": "recorded"}
        assert noted == [("replayed", "chat")]

    def test_recorded_reads_the_file_whole(self, tmp_path: Path) -> None:
        """The stored request may even be unreadable: replay reads the outcome only,
        while `recorded` (which hands the fixture to its caller) reads the file whole."""
        ModelFixtures(FixtureDir(tmp_path), mode="record", redactor=Redactor()).call(
            "chat", REQUEST, lambda: {"text": "recorded"})
        (path,) = tmp_path.iterdir()
        path.write_bytes(path.read_bytes().replace(b'"one read"', b'one read'))
        fixtures = ModelFixtures(FixtureDir(tmp_path), mode="replay", redactor=Redactor())
        assert fixtures.replayed(fixtures.key("chat", REQUEST)).outcome == "answer"  # type: ignore[union-attr]
        assert fixtures.call("chat", REQUEST, None) == {"text": "recorded"}
        with pytest.raises(FixtureFormatError):
            fixtures.recorded("chat", REQUEST)


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
