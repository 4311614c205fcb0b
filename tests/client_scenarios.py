"""One plain and one streamed call through each HTTP client library, recorded and replayed.

`record_then_replay(client, store)` starts the local fake provider, records both calls
through `client` ("requests", "aiohttp", "httpx" or "httpx2") with a planted key that
the provider echoes back (split across stream events), then replays them in a fresh
process that refuses every socket connection and holds a different key:
``python tests/client_scenarios.py CLIENT STORE URL`` (the key in ``PLANTED_KEY``).
Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redactkey import FixtureDir, MissingFixtureError, Redactor, RunSecrets

CLIENTS = ("requests", "aiohttp", "httpx", "httpx2")
ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "[REDACTED]"


def planted_key() -> str:
    """A fresh fake provider key, built at run time."""
    return "sk-proj-" + secrets.token_hex(4) + "Q7w3" * 11


def redactor_for(key: str) -> Redactor:
    found = RunSecrets()
    found.add("OPENAI_API_KEY", key)
    return Redactor(found)


def chat_body(key: str, what: str, *, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-fake",
        "messages": [{"role": "user", "content": f"{what} ECHO:{key}"}],
    }
    if stream:
        body["stream"] = True
    return body


def headers_for(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def deltas(lines: Iterable[str]) -> tuple[str, int]:
    """The joined delta contents of SSE lines, and how many data events there were."""
    text, events = "", 0
    for line in lines:
        if not line.startswith("data:"):
            continue
        events += 1
        data = line[5:].strip()
        if data == "[DONE]":
            continue
        for choice in json.loads(data).get("choices", []):
            text += choice.get("delta", {}).get("content") or ""
    return text, events


# -- each client: the two calls, and one call that was never recorded ----------------


@dataclass
class Counter:
    """How many requests a client handed to redactkey."""

    sent: int = 0


def _requests(mode: str | None, store: Path, url: str, key: str, miss: bool) -> dict[str, Any]:
    import requests

    from redactkey import RequestsAdapter

    class Counting(RequestsAdapter):
        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            counter.sent += 1
            return super().send(request, *args, **kwargs)

    counter = Counter()
    adapter = Counting(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
    with requests.Session() as session:
        session.mount("http://", adapter)
        endpoint = f"{url}/v1/chat/completions"
        if miss:
            return _timed_miss(counter, lambda: session.post(
                endpoint, json=chat_body(key, "never recorded"), headers=headers_for(key)))
        plain = session.post(endpoint, json=chat_body(key, "plain"), headers=headers_for(key))
        with session.post(endpoint, json=chat_body(key, "streamed", stream=True),
                          headers=headers_for(key), stream=True) as response:
            text, events = deltas(line.decode() for line in response.iter_lines())
        return {"plain": plain.json()["choices"][0]["message"]["content"],
                "stream": text, "events": events, "sent": counter.sent}


def _aiohttp(mode: str | None, store: Path, url: str, key: str, miss: bool) -> dict[str, Any]:
    import aiohttp

    from redactkey import aiohttp_session

    counter = Counter()

    async def count(*_: Any) -> None:
        counter.sent += 1

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(count)

    async def run() -> dict[str, Any]:
        async with aiohttp_session(FixtureDir(store), mode=mode, redactor=redactor_for(key),  # type: ignore[arg-type]
                                   trace_configs=[trace]) as session:
            endpoint = f"{url}/v1/chat/completions"
            if miss:
                started = time.monotonic()
                try:
                    async with session.post(endpoint, json=chat_body(key, "never recorded"),
                                            headers=headers_for(key)):
                        pass
                except BaseException as exc:  # the test asserts on what arrived
                    return _miss_seen(exc, started, counter)
                return {"raised": None, "sent": counter.sent}
            async with session.post(endpoint, json=chat_body(key, "plain"),
                                    headers=headers_for(key)) as response:
                plain = (await response.json())["choices"][0]["message"]["content"]
            async with session.post(endpoint, json=chat_body(key, "streamed", stream=True),
                                    headers=headers_for(key)) as response:
                lines = [line.decode() async for line in response.content]
            text, events = deltas(line.strip() for line in lines)
            return {"plain": plain, "stream": text, "events": events, "sent": counter.sent}

    return asyncio.run(run())


def _httpx(library_name: str) -> Callable[[str | None, Path, str, str, bool], dict[str, Any]]:
    def run(mode: str | None, store: Path, url: str, key: str, miss: bool) -> dict[str, Any]:
        library: Any = __import__(library_name)
        from redactkey import FixtureTransport

        counter = Counter()

        def count(request: Any) -> None:
            counter.sent += 1

        transport = FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]
        with library.Client(transport=transport, event_hooks={"request": [count]}) as client:
            endpoint = f"{url}/v1/chat/completions"
            if miss:
                return _timed_miss(counter, lambda: client.post(
                    endpoint, json=chat_body(key, "never recorded"), headers=headers_for(key)))
            plain = client.post(endpoint, json=chat_body(key, "plain"), headers=headers_for(key))
            with client.stream("POST", endpoint, json=chat_body(key, "streamed", stream=True),
                               headers=headers_for(key)) as response:
                text, events = deltas(response.iter_lines())
            return {"plain": plain.json()["choices"][0]["message"]["content"],
                    "stream": text, "events": events, "sent": counter.sent}

    return run


RUNS: dict[str, Callable[[str | None, Path, str, str, bool], dict[str, Any]]] = {
    "requests": _requests,
    "aiohttp": _aiohttp,
    "httpx": _httpx("httpx"),
    "httpx2": _httpx("httpx2"),
}


def _miss_seen(exc: BaseException, started: float, counter: Counter) -> dict[str, Any]:
    cause = exc if isinstance(exc, MissingFixtureError) else exc.__cause__
    return {
        "raised": type(exc).__name__,
        "is_missing_fixture": isinstance(cause, MissingFixtureError),
        "message": str(cause),
        "seconds": time.monotonic() - started,
        "sent": counter.sent,
    }


def _timed_miss(counter: Counter, call: Callable[[], Any]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        call()
    except BaseException as exc:  # the test asserts on what arrived
        return _miss_seen(exc, started, counter)
    return {"raised": None, "sent": counter.sent}


def calls(client: str, *, mode: str | None, store: Path, url: str, key: str) -> dict[str, Any]:
    """The plain and the streamed answer through `client` in `mode`."""
    return RUNS[client](mode, store, url, key, False)


def miss(client: str, *, store: Path, url: str, key: str) -> dict[str, Any]:
    """A call that was never recorded (replay mode from REDACTKEY_MODE): what arrived, how
    fast, and how often it was sent."""
    return RUNS[client](None, store, url, key, True)


# -- record here, replay in a fresh process ---------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """A recording and its replay in a fresh, network-less process with another key."""

    store: Path
    key: str
    recorded: dict[str, Any]
    replayed: dict[str, Any]
    miss: dict[str, Any]
    connects: list[str]


def as_replayed(answers: dict[str, Any], key: str) -> dict[str, Any]:
    """Answers as a replay shows them: the key is one placeholder."""
    return json.loads(json.dumps(answers).replace(key, PLACEHOLDER))


def record_then_replay(client: str, store: Path) -> Outcome:
    from fakeprovider import FakeProvider

    key = planted_key()
    with FakeProvider() as fake:
        recorded = calls(client, mode="record", store=store, url=fake.url, key=key)
        url = fake.url
    env = {
        **os.environ,
        "PLANTED_KEY": planted_key(),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        "REDACTKEY_MODE": "replay",
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "client_scenarios.py"), client, str(store), url],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    printed = json.loads(result.stdout)
    return Outcome(store, key, recorded, printed["replayed"], printed["miss"],
                   printed["connects"])


def refuse_network() -> list[str]:
    """Make every socket connection fail; returns the list the attempts are logged in."""
    attempts: list[str] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(repr(address))
        raise ConnectionRefusedError("network disabled for replay")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    return attempts


if __name__ == "__main__":
    connects = refuse_network()
    _, client_arg, store_arg, url_arg = sys.argv
    other = os.environ["PLANTED_KEY"]
    replayed = calls(client_arg, mode=None, store=Path(store_arg), url=url_arg, key=other)
    missed = miss(client_arg, store=Path(store_arg), url=url_arg, key=other)
    print(json.dumps({"replayed": as_replayed(replayed, other), "miss": missed,
                      "connects": connects}))


class ClientChecks:
    """What every client's test module checks; subclasses name `client`."""

    client = ""

    def test_replay_reached_no_network(self, outcome: Outcome) -> None:
        """The replay process never opened a socket connection."""
        assert outcome.connects == []

    def test_answers_identical(self, outcome: Outcome) -> None:
        """The plain answer, the joined stream deltas and the event count replay as recorded."""
        recorded = as_replayed(outcome.recorded, outcome.key)
        assert outcome.replayed == recorded
        assert recorded["stream"] == recorded["plain"]
        assert PLACEHOLDER in recorded["plain"]
        assert recorded["events"] > 10  # the key really was split across events

    def test_no_piece_of_the_key_in_any_file(self, outcome: Outcome) -> None:
        """No 8-character piece of the planted key is in any fixture file."""
        files = [p for p in outcome.store.rglob("*") if p.is_file()]
        assert len(files) == 2
        text = "\n".join(p.read_text(encoding="utf-8") for p in files)
        key = outcome.key
        assert [key[i : i + 8] for i in range(len(key) - 7) if key[i : i + 8] in text] == []

    def test_miss_arrives_at_once_after_one_attempt(self, outcome: Outcome) -> None:
        """A call never recorded is a MissingFixtureError naming it, within 1 s, sent once."""
        miss = outcome.miss
        assert miss["raised"] == "MissingFixtureError"
        assert miss["is_missing_fixture"]
        assert miss["seconds"] < 1.0
        assert miss["sent"] == 1
        assert "POST http://127.0.0.1:" in miss["message"]
        assert "/v1/chat/completions" in miss["message"]
        assert "REDACTKEY_MODE" in miss["message"]
