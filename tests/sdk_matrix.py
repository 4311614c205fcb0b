"""Shared machinery of the per-SDK record/replay tests (``tests/test_sdk_*.py``).

Each SDK module defines two functions and runs them through `record_then_replay`:

- ``scenarios(mode, store, url, key) -> dict``: one plain and one streamed call (and
  the async twins where the SDK has a separate async slot), through the SDK's own
  client with a redactkey transport; the prompt plants the API key (``ECHO:<key>``),
  which the fake server echoes back split across stream events. Returns the answers.
- ``misses(store, url, key) -> list[dict]``: unrecorded calls, each summarised by
  `miss_report` (what was raised, how long it took, how many attempts reached the
  transport).

The recording runs in the test process against a local fake server; the replay runs
in a fresh process (``python tests/test_sdk_x.py replay STORE URL``) with every socket
connection refused and another API key. `SdkChecks` holds the assertions every SDK
module shares.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redactkey import FixtureDir, FixtureTransport, MissingFixtureError, Redactor, RunSecrets

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "[REDACTED]"
KEY_SLOT = "PROVIDER_API_KEY"

Scenarios = Callable[[str, Path, str, str], dict[str, Any]]
Misses = Callable[[Path, str, str], list[dict[str, Any]]]


def new_key(prefix: str = "sk-test-") -> str:
    """A fake API key built at run time (random, so no two runs share one)."""
    return prefix + secrets.token_hex(6) + "Q7w" * 8


def redactor_for(key: str) -> Redactor:
    """A redactor that knows the run's API key, as the pytest plugin's would."""
    run = RunSecrets()
    run.add(KEY_SLOT, key)
    return Redactor(run)


def transport_for(store: Any, mode: str, key: str) -> FixtureTransport:
    """A transport over `store` in `mode` whose redactor knows `key`."""
    return FixtureTransport(store, mode=mode, redactor=redactor_for(key))


def user_turn(text: str) -> list[dict[str, str]]:
    """One user message, in the chat shape every SDK in the matrix takes."""
    return [{"role": "user", "content": text}]


def prompt(key: str, what: str) -> str:
    return f"{what} ECHO:{key}"


class CountingTransport(FixtureTransport):
    """A `FixtureTransport` that counts the requests reaching it: one per SDK attempt."""

    attempts = 0

    def handle_request(self, request: Any) -> Any:
        self.attempts += 1
        return super().handle_request(request)

    async def handle_async_request(self, request: Any) -> Any:
        self.attempts += 1
        return await super().handle_async_request(request)


def counting_transport(store: Path, key: str) -> CountingTransport:
    """A replay transport over `store` that counts attempts."""
    return CountingTransport(FixtureDir(store), mode="replay", redactor=redactor_for(key))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def miss_report(sdk: str, counter: Any, call: Callable[[], Any]) -> dict[str, Any]:
    """Run an unrecorded call; report what reached the caller, after how long and tries."""
    started = time.monotonic()
    try:
        result = call()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    except BaseException as exc:  # the tests assert on what arrived
        seconds = time.monotonic() - started
        missing = next((e for e in _chain(exc) if isinstance(e, MissingFixtureError)), None)
        return {
            "sdk": sdk,
            "raised": f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}",
            "is_missing_fixture": isinstance(exc, MissingFixtureError),
            "cause_is_missing_fixture": isinstance(exc.__cause__, MissingFixtureError),
            "in_chain": missing is not None,
            "message": str(missing) if missing is not None else str(exc),
            "seconds": seconds,
            "attempts": counter.attempts,
        }
    return {"sdk": sdk, "raised": None, "attempts": counter.attempts}


def refuse_network() -> list[str]:
    """Make every socket connection fail; returns the list the attempts are logged in."""
    attempts: list[str] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(repr(address))
        raise ConnectionRefusedError("network disabled for replay")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    return attempts


def replay_main(scenarios: Scenarios, misses: Misses) -> None:
    """The ``__main__`` of an SDK test module: replay offline, print a JSON summary."""
    attempts = refuse_network()
    _, _, store, url = sys.argv
    key = os.environ[KEY_SLOT]
    answers = scenarios("replay", Path(store), url, key)
    missed = misses(Path(store), url, key)
    print(json.dumps({"answers": answers, "misses": missed, "connects": attempts}))


@dataclass(frozen=True)
class Recording:
    store: Path
    key: str
    replay_key: str
    url: str
    recorded: dict[str, Any]
    replayed: dict[str, Any]


def normal(summary: Any, key: str) -> Any:
    """The key as replay sees it: one placeholder, however many events it spans."""
    text = json.dumps(summary).replace(key, PLACEHOLDER)
    return json.loads(re.sub(r"(\[REDACTED\])+", PLACEHOLDER, text))


def record_then_replay(
    module_file: str, scenarios: Scenarios, store: Path, url: str, *,
    key_prefix: str = "sk-test-", env: dict[str, str] | None = None,
) -> Recording:
    """Record every scenario live against `url`, then replay them in a fresh process."""
    key = new_key(key_prefix)
    recorded = scenarios("record", store, url, key)
    gc.collect()  # a client the scenarios left open warns here, not in a later test
    replay_key = new_key(key_prefix)
    result = subprocess.run(
        [sys.executable, module_file, "replay", str(store), url],
        capture_output=True, text=True, check=False, timeout=300,
        env={
            **os.environ, **(env or {}),
            KEY_SLOT: replay_key,
            "REDACTKEY_MODE": "replay",
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        },
    )
    assert result.returncode == 0, result.stderr[-4000:]
    # The summary is the last line: an SDK may print a banner of its own before it.
    summary = result.stdout.strip().splitlines()[-1]
    return Recording(store, key, replay_key, url, recorded, json.loads(summary))


def eight_char_pieces(secret: str) -> set[str]:
    return {secret[i : i + 8] for i in range(len(secret) - 7)}


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


class SdkChecks:
    """What every SDK in the matrix must show; a module subclasses it with a `recording`
    fixture and the name of what a miss raises."""

    miss_raises: tuple[str, ...] = ("redactkey.MissingFixtureError",)
    min_files = 2

    def test_replay_reached_no_network(self, recording: Recording) -> None:
        """The replay process never opened a socket connection."""
        assert recording.replayed["connects"] == []

    def test_answers_are_identical(self, recording: Recording) -> None:
        """Every answer replayed in the fresh process is the recorded one (the key redacted)."""
        assert recording.recorded, "no scenario ran"
        assert normal(recording.replayed["answers"], recording.replay_key) == normal(
            recording.recorded, recording.key
        )

    def test_the_key_was_echoed_split_across_events(self, recording: Recording) -> None:
        """The recording holds the planted key in the plain and the streamed answers."""
        streamed = [v for k, v in recording.recorded.items() if "stream" in k]
        assert streamed, "no streamed scenario"
        for name, answer in recording.recorded.items():
            assert recording.key in json.dumps(answer), name

    def test_no_piece_of_the_key_in_any_file(self, recording: Recording) -> None:
        """No 8-character piece of the API key is in any fixture file."""
        files = [p for p in recording.store.rglob("*") if p.is_file()]
        assert len(files) >= self.min_files
        pieces = eight_char_pieces(recording.key)
        for path in files:
            text = path.read_text(encoding="utf-8")
            found = [piece for piece in pieces if piece in text]
            assert not found, (path.name, found[:3])

    def test_streams_are_stored_event_by_event(self, recording: Recording) -> None:
        """At least one fixture holds a stream as chunks, the key redacted in the joined text."""
        streamed = 0
        for path in recording.store.rglob("*.json"):
            document = json.loads(path.read_text(encoding="utf-8"))
            chunks = document.get("chunks")
            if chunks is None and isinstance(document.get("answer"), dict):
                chunks = document["answer"].get("events")
            if not chunks:
                continue
            streamed += 1
            joined = "".join(strings(chunks))
            assert recording.key not in joined
            assert PLACEHOLDER in joined, path.name
        assert streamed >= 1

    def test_a_miss_arrives_by_name_at_once(self, recording: Recording) -> None:
        """An unrecorded call raises MissingFixtureError (or the documented wrapper with the
        miss in its chain), naming the call and how to record, after one attempt, in < 1 s."""
        misses = recording.replayed["misses"]
        assert misses
        for miss in misses:
            assert miss["raised"] in self.miss_raises, miss
            assert miss["in_chain"], miss
            if miss["raised"] == "redactkey.MissingFixtureError":
                assert miss["is_missing_fixture"], miss
            assert "no recorded 'http' call" in miss["message"], miss
            assert "nearest recorded 'http' call" in miss["message"], miss
            assert "to record it:" in miss["message"], miss
            assert miss["attempts"] == 1, miss
            assert miss["seconds"] < 1.0, miss
