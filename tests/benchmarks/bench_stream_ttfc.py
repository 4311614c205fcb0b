"""Time to the first streamed chunk while recording, against the bare client.

    python tests/benchmarks/bench_stream_ttfc.py [--runs 7] [--pause 0.1]

The local fake provider (tests/fakeprovider.py) waits `--pause` seconds before each
event, like a model thinking. For each client library (httpx, requests, aiohttp) and
each kind of stream — server-sent events asked for with `"stream": true`, Gemini's
`?alt=sse` with `Accept: */*`, and Ollama's NDJSON sent without a stream flag — it
times a request until its first non-empty line arrives:

- baseline: the bare client (no redactkey);
- record: the same client through redactkey in record mode (a new prompt each run, so
  every call is recorded; one warm-up call each, untimed).

Prints the median seconds of each and their ratio; the target is a ratio within 1.10
(a stream is passed on as it arrives, not buffered until it ends).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import httpx
import requests

from fakeprovider import FakeProvider
from redactkey import (
    FixtureDir,
    FixtureTransport,
    Redactor,
    RequestsAdapter,
    aiohttp_session,
)

STREAMS: dict[str, tuple[str, Callable[[int], dict[str, Any]], dict[str, str]]] = {
    "sse": ("/v1/chat/completions",
            lambda n: {"model": "m", "stream": True,
                       "messages": [{"role": "user", "content": f"hi {n}"}]},
            {}),
    "alt=sse": ("/v1beta/models/gemini-fake:streamGenerateContent?alt=sse",
                lambda n: {"contents": [{"role": "user", "parts": [{"text": f"hi {n}"}]}]},
                {"accept": "*/*"}),
    "ndjson": ("/api/chat",
               lambda n: {"model": "m", "messages": [{"role": "user", "content": f"hi {n}"}]},
               {}),
}

Ask = Callable[[str, dict[str, Any], dict[str, str]], float]


def _first(lines: Iterator[Any], started: float) -> float:
    for line in lines:
        if line.strip():
            return time.monotonic() - started
    raise AssertionError("the stream had no line")


def _httpx(store: Path | None) -> tuple[Ask, Callable[[], None]]:
    transport = None if store is None else FixtureTransport(FixtureDir(store), mode="record",
                                                            redactor=Redactor())
    client = httpx.Client(transport=transport)

    def ask(url: str, body: dict[str, Any], headers: dict[str, str]) -> float:
        started = time.monotonic()
        with client.stream("POST", url, json=body, headers=headers) as response:
            return _first(response.iter_lines(), started)

    return ask, client.close


def _requests(store: Path | None) -> tuple[Ask, Callable[[], None]]:
    session = requests.Session()
    if store is not None:
        session.mount("http://", RequestsAdapter(FixtureDir(store), mode="record",
                                                 redactor=Redactor()))

    def ask(url: str, body: dict[str, Any], headers: dict[str, str]) -> float:
        started = time.monotonic()
        with session.post(url, json=body, headers=headers, stream=True) as response:
            return _first(response.iter_lines(), started)

    return ask, session.close


def _aiohttp(store: Path | None) -> tuple[Ask, Callable[[], None]]:
    loop = asyncio.new_event_loop()

    async def make() -> aiohttp.ClientSession:
        if store is None:
            return aiohttp.ClientSession()
        return aiohttp_session(FixtureDir(store), mode="record", redactor=Redactor())

    session = loop.run_until_complete(make())

    async def first(url: str, body: dict[str, Any], headers: dict[str, str]) -> float:
        started = time.monotonic()
        async with session.post(url, json=body, headers=headers) as response:
            async for line in response.content:
                if line.strip():
                    return time.monotonic() - started
        raise AssertionError("the stream had no line")

    def ask(url: str, body: dict[str, Any], headers: dict[str, str]) -> float:
        return loop.run_until_complete(first(url, body, headers))

    def close() -> None:
        loop.run_until_complete(session.close())
        # A stream left after its first line is still read by its pump task while the
        # loop runs; the loop runs only inside `ask`, so end what is left, as asyncio.run
        # would, before closing the loop.
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()

        async def ended() -> None:
            await asyncio.gather(*pending, return_exceptions=True)

        loop.run_until_complete(ended())
        loop.close()

    return ask, close


CLIENTS: dict[str, Callable[[Path | None], tuple[Ask, Callable[[], None]]]] = {
    "httpx": _httpx,
    "requests": _requests,
    "aiohttp": _aiohttp,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.1)
    args = parser.parse_args(argv)
    print(f"{'client':<9} {'stream':<8} {'baseline s':>11} {'record s':>9} {'ratio':>6}")
    worst = 0.0
    with FakeProvider(pause=args.pause) as fake, tempfile.TemporaryDirectory() as tmp:
        for client, make in CLIENTS.items():
            for name, (path, body, headers) in STREAMS.items():
                bare, bare_close = make(None)
                record, record_close = make(Path(tmp) / f"{client}-{name}")
                bare(fake.url + path, body(-1), headers)  # warm up: pools, TLS contexts
                record(fake.url + path, body(-1), headers)
                times: tuple[list[float], list[float]] = ([], [])
                for n in range(args.runs):  # interleaved, so load hits both alike
                    times[0].append(bare(fake.url + path, body(n), headers))
                    times[1].append(record(fake.url + path, body(n), headers))
                bare_close()
                record_close()
                base, rec = statistics.median(times[0]), statistics.median(times[1])
                worst = max(worst, rec / base)
                print(f"{client:<9} {name:<8} {base:>11.4f} {rec:>9.4f} {rec / base:>6.3f}")
    print(f"worst ratio {worst:.3f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
