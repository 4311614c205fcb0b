"""One FixtureTransport shared by async clients on several event loops and threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest

from fakeprovider import FakeProvider
from redactkey import FixtureDir, FixtureTransport, Redactor

LIBRARIES = {"httpx": httpx, "httpx2": httpx2}


def _ask(library: Any, transport: FixtureTransport, url: str, tag: str) -> list[str]:
    """Three calls (one streamed) from a fresh client on a fresh event loop."""

    async def go() -> list[str]:
        async with library.AsyncClient(transport=transport) as client:
            answers = []
            for n in range(2):
                body = {"model": "m", "messages": [{"role": "user", "content": f"{tag} {n}"}]}
                response = await client.post(f"{url}/v1/chat/completions", json=body)
                answers.append(response.json()["choices"][0]["message"]["content"])
            body = {"model": "m", "stream": True,
                    "messages": [{"role": "user", "content": f"{tag} stream"}]}
            async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as r:
                answers.append(str(len([line async for line in r.aiter_lines() if line])))
            return answers

    return asyncio.run(go())


def _in_threads(work: Callable[[str], list[str]], tags: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}

    def run(tag: str) -> None:
        try:
            results[tag] = work(tag)
        except Exception as exc:  # the assertion below shows what each thread raised
            results[tag] = repr(exc)

    threads = [threading.Thread(target=run, args=(tag,)) for tag in tags]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.parametrize("name", sorted(LIBRARIES))
class TestManyLoops:
    """Consecutive `asyncio.run`s and concurrent loops in threads, one transport."""

    def test_record_then_replay(self, tmp_path: Path, name: str) -> None:
        """Every loop records through its own connections; the tree replays on new loops."""
        library = LIBRARIES[name]
        tags = [f"thread {i}" for i in range(3)]
        with FakeProvider() as fake:
            transport = FixtureTransport(FixtureDir(tmp_path), mode="record",
                                         redactor=Redactor())

            def work(tag: str) -> list[str]:
                return _ask(library, transport, fake.url, tag)

            recorded = {"first": work("first"), "second": work("second")}
            recorded.update(_in_threads(work, tags))
            url = fake.url
            sent = fake.attempts()
        expected = ["Hello from the fake provider."] * 2
        assert all(isinstance(v, list) and v[:2] == expected for v in recorded.values()), recorded
        assert sent == 3 * len(recorded)
        assert len(list(tmp_path.iterdir())) == 3 * len(recorded)

        replay = FixtureTransport(FixtureDir(tmp_path), mode="replay", redactor=Redactor())

        def again(tag: str) -> list[str]:
            return _ask(library, replay, url, tag)

        replayed = {"first": again("first"), "second": again("second")}
        replayed.update(_in_threads(again, tags))
        assert replayed == recorded
