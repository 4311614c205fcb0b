"""Generator and async-generator tools: chunks recorded and replayed like a model stream."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from redactkey import FixtureDir, MissingFixtureError, Redactor, RunSecrets
from redactkey.record._tools import ToolFixtures


def _token() -> str:
    return "tooltok-" + secrets.token_hex(12)


def _redactor(token: str) -> Redactor:
    found = RunSecrets()
    found.add("SEARCH_TOKEN", token)
    return Redactor(found)


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _stored(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(tmp_path.iterdir())]


class TestGeneratorTools:
    """`@tools.tool` on a generator function."""

    def test_record_then_replay_with_another_key(self, tmp_path: Path) -> None:
        """Chunks pass through while recording, are stored redacted, and replay in order."""
        token = _token()
        whole = f"results for ada: token {token} found"
        calls: list[str] = []

        def run(mode: str, secret: str) -> list[dict[str, str]]:
            tools = ToolFixtures(FixtureDir(tmp_path), mode=mode, redactor=_redactor(secret))

            @tools.tool
            def search(query: str) -> Iterator[dict[str, str]]:
                calls.append(query)
                for piece in _pieces(whole):
                    yield {"delta": piece}

            return list(search("ada"))

        recorded = run("record", token)
        assert "".join(c["delta"] for c in recorded) == whole
        replayed = run("replay", _token())
        assert calls == ["ada"]
        assert "".join(c["delta"] for c in replayed) == "results for ada: token [REDACTED] found"
        assert len(replayed) == len(recorded)
        (fixture,) = _stored(tmp_path)
        assert fixture["kind"] == "tool:search"
        assert fixture["chunks"] == replayed
        assert all(token[i : i + 8] not in json.dumps(fixture) for i in range(len(token) - 7))

    def test_chunks_arrive_before_the_generator_ends(self, tmp_path: Path) -> None:
        """Recording passes each chunk on as it is made, and writes once the stream ends."""
        tools = ToolFixtures(FixtureDir(tmp_path), mode="record", redactor=_redactor(_token()))
        events: list[str] = []

        @tools.tool
        def ticker(n: int) -> Iterator[int]:
            for i in range(n):
                events.append(f"made {i}")
                yield i

        for chunk in ticker(3):
            events.append(f"got {chunk}")
            events.append(f"files {len(list(tmp_path.iterdir()))}")
        assert events == ["made 0", "got 0", "files 0", "made 1", "got 1", "files 0",
                          "made 2", "got 2", "files 0"]
        assert len(list(tmp_path.iterdir())) == 1

    def test_interrupted_stream_records_nothing(self, tmp_path: Path) -> None:
        """A stream not read to its end is not written."""
        tools = ToolFixtures(FixtureDir(tmp_path), mode="record", redactor=_redactor(_token()))

        @tools.tool
        def numbers() -> Iterator[int]:
            yield from range(10)

        stream = numbers()
        assert next(stream) == 0
        stream.close()
        assert list(tmp_path.iterdir()) == []

    def test_miss_raises_at_the_call(self, tmp_path: Path) -> None:
        """A replay miss is a MissingFixtureError naming the tool, before any chunk."""
        tools = ToolFixtures(FixtureDir(tmp_path), mode="replay", redactor=_redactor(_token()))

        @tools.tool(name="search")
        def find(query: str) -> Iterator[str]:
            raise AssertionError("a replay never runs the tool")
            yield query  # pragma: no cover

        with pytest.raises(MissingFixtureError, match="tool:search"):
            find("never recorded")

    def test_stream_method_without_a_decorator(self, tmp_path: Path) -> None:
        """`tools.stream(name, arguments, live)` is the same call spelled out."""
        record = ToolFixtures(FixtureDir(tmp_path), mode="record", redactor=_redactor(_token()))
        assert list(record.stream("pages", {"n": 2}, lambda: iter(["a", "b"]))) == ["a", "b"]
        replay = ToolFixtures(FixtureDir(tmp_path), mode="replay", redactor=_redactor(_token()))
        assert list(replay.stream("pages", {"n": 2}, None)) == ["a", "b"]


class TestAsyncGeneratorTools:
    """`@tools.tool` on an async-generator function."""

    def test_record_then_replay_with_another_key(self, tmp_path: Path) -> None:
        """The async twin: chunks stored redacted, replayed without running the tool."""
        token = _token()
        whole = f"page 1 says {token}; page 2 is empty"
        calls: list[str] = []

        def run(mode: str, secret: str) -> list[str]:
            tools = ToolFixtures(FixtureDir(tmp_path), mode=mode, redactor=_redactor(secret))

            @tools.tool(name="crawl")
            async def crawl(url: str) -> AsyncIterator[str]:
                calls.append(url)
                for piece in _pieces(whole, 7):
                    await asyncio.sleep(0)
                    yield piece

            async def collect() -> list[str]:
                return [chunk async for chunk in crawl("https://example.test/")]

            return asyncio.run(collect())

        assert "".join(run("record", token)) == whole
        replayed = run("replay", _token())
        assert calls == ["https://example.test/"]
        assert "".join(replayed) == "page 1 says [REDACTED]; page 2 is empty"
        (fixture,) = _stored(tmp_path)
        assert fixture["chunks"] == replayed

    def test_astream_method(self, tmp_path: Path) -> None:
        """`tools.astream(name, arguments, live)` records and replays an async iterable."""
        async def pages() -> AsyncIterator[int]:
            for i in range(3):
                yield i

        async def collect(mode: str) -> list[Any]:
            tools = ToolFixtures(FixtureDir(tmp_path), mode=mode, redactor=_redactor(_token()))
            live = pages if mode == "record" else None
            return [c async for c in tools.astream("pages", {"n": 3}, live)]

        assert asyncio.run(collect("record")) == [0, 1, 2]
        assert asyncio.run(collect("replay")) == [0, 1, 2]
