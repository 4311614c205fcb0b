"""Replay cost of redactkey beside its peers, through the openai SDK, in one run.

    python tests/benchmarks/bench_replay_peers.py [--calls 200] [--rounds 3] [--memory 10000]

Needs the `bench` extra (`pip install -e '.[test,bench]'`: cassetter).

1. A fake OpenAI server on loopback answers chat completions: a JSON answer, or for
   ``"stream": true`` 110 server-sent events. `--calls` distinct requests (2 KB
   prompts, half streamed) are recorded once by each tool: redactkey
   (`FixtureTransport`, a `Redactor` with 5 run secrets and its detectors), cassetter
   (Rust core; matches on method, URI and body) and vcrpy (matches on method, URI and
   body). Then the server stops: replay reaches no network.
2. Replay, best of `--rounds` rounds, each round with a fresh client and a fresh
   transport / cassette context (nothing cached across rounds carries a tool); within a
   round the tools take turns, in an order that rotates from round to round, so that a
   burst of load on a shared machine falls on all of them alike:
   - canned: the SDK over `httpx2.MockTransport` returning prebuilt answers (the floor:
     what the SDK costs with no recorder at all);
   - cassetter, vcrpy, redactkey.
   Prints microseconds per call and the ratios. Targets: redactkey <= 1.0x cassetter,
   <= 1.10x canned, vcrpy >= 4x redactkey.
3. Prompt-size sweep: 60 non-streamed calls per size (1, 32, 256 KB prompts), best of
   `--rounds`, redactkey against canned. Target: added cost <= +0.15 ms at 1 KB and
   <= +1.5 ms at 256 KB. The sweep's prompts are lower-case words; a last line replays
   256 KB prompts of prose punctuation (colons, apostrophes, line breaks), which the
   search for credential-named pairs reads (no target; printed for comparison).
4. Memory: `--memory` replays through one transport under tracemalloc; the peak and the
   memory still held after a collection, after the first tenth and at the end, and their
   growth per call. Target: flat (<= 10 bytes per call).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import openai

from redactkey import FixtureDir, FixtureTransport

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _scenario import JSON_BODY, make_prompt, make_redactor

EVENTS = 110
TARGET_CASSETTER = 1.0
TARGET_CANNED = 1.10
TARGET_VCRPY = 4.0
SWEEP_KB = (1, 32, 256)
SWEEP_TARGET_MS = {1: 0.15, 256: 1.5}
MEMORY_SLOPE = 10.0  # bytes per call: flat, within tracemalloc's own noise


def _events() -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    lines = [
        "data: " + json.dumps({**chunk, "choices": [
            {"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}]})
        for i in range(EVENTS - 1)
    ]
    lines.append("data: [DONE]")
    return ("\n\n".join(lines) + "\n\n").encode()


SSE_BODY = _events()


def _prose(n: int, size: int) -> str:
    """A prompt of words with a colon, an apostrophe and a line break here and there."""
    words = make_prompt(n, size).split(" ")
    for k in range(0, len(words), 40):
        words[k] += ":"
    for k in range(7, len(words), 31):
        words[k] = words[k][:-1] + "'" + words[k][-1:]
    for k in range(5, len(words), 97):
        words[k] += "\n"
    return " ".join(words)[:size]


# -- the fake provider -----------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        stream = bool(json.loads(body).get("stream"))
        payload = SSE_BODY if stream else JSON_BODY
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("x-request-id", "req_1")
        self.end_headers()
        self.wfile.write(payload)


class _Server:
    def __init__(self) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _canned(request: httpx2.Request) -> httpx2.Response:
    if b'"stream":true' in request.content:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=SSE_BODY)
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=JSON_BODY)


# -- the scenario ----------------------------------------------------------------------

Call = tuple[str, bool]  # (prompt, stream)


def _client(base_url: str, transport: Any = None) -> openai.OpenAI:
    http = httpx2.Client(transport=transport) if transport is not None else httpx2.Client()
    return openai.OpenAI(api_key="sk-bench-" + "x" * 20, base_url=base_url, http_client=http,
                         max_retries=0)


def _run(client: openai.OpenAI, calls: list[Call]) -> None:
    for prompt, stream in calls:
        messages: Any = [{"role": "user", "content": prompt}]
        if stream:
            for _ in client.chat.completions.create(model="m", messages=messages, stream=True):
                pass
        else:
            client.chat.completions.create(model="m", messages=messages)
    client.close()


class Tools:
    """Each tool's record step and a fresh replay round over the same calls."""

    def __init__(self, root: Path, base_url: str) -> None:
        import cassetter
        import vcr

        self.root = root
        self.base_url = base_url
        self.redactor = make_redactor()
        self.store = FixtureDir(root / "redactkey")
        self.cassetter = cassetter
        self.cassette = str(root / "cassetter.yaml")
        self.vcr = vcr.VCR(match_on=["method", "uri", "body"])
        self.vcr_cassette = str(root / "vcrpy.yaml")

    def record(self, calls: list[Call]) -> None:
        transport = FixtureTransport(self.store, mode="record", redactor=self.redactor)
        _run(_client(self.base_url, transport), calls)
        with self.cassetter.use_cassette(self.cassette, record_mode="all",
                                         match_on=["method", "uri", "body"]):
            _run(_client(self.base_url), calls)
        with self.vcr.use_cassette(self.vcr_cassette, record_mode="all"):
            _run(_client(self.base_url), calls)

    def canned(self, calls: list[Call]) -> None:
        _run(_client(self.base_url, httpx2.MockTransport(_canned)), calls)

    def redactkey(self, calls: list[Call]) -> None:
        transport = FixtureTransport(self.store, mode="replay", redactor=self.redactor)
        _run(_client(self.base_url, transport), calls)

    def cassetter_replay(self, calls: list[Call]) -> None:
        with self.cassetter.use_cassette(self.cassette, record_mode="none",
                                         match_on=["method", "uri", "body"]):
            _run(_client(self.base_url), calls)

    def vcrpy(self, calls: list[Call]) -> None:
        with self.vcr.use_cassette(self.vcr_cassette, record_mode="none",
                                   allow_playback_repeats=True):
            _run(_client(self.base_url), calls)


def _best(
    tools: dict[str, Callable[[list[Call]], None]], calls: list[Call], rounds: int
) -> dict[str, float]:
    """Each tool's best time per call of `rounds` rounds, in microseconds. The tools take
    turns within each round (in an order that rotates from round to round), so a burst of
    load on a shared machine falls on all of them alike rather than on one tool's rounds."""
    best = dict.fromkeys(tools, float("inf"))
    names = list(tools)
    for turn in range(rounds):
        for name in names[turn % len(names):] + names[: turn % len(names)]:
            gc.collect()
            started = time.perf_counter()
            tools[name](calls)
            best[name] = min(best[name], time.perf_counter() - started)
    return {name: seconds / len(calls) * 1e6 for name, seconds in best.items()}


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def _memory(tools: Tools, calls: list[Call], total: int) -> bool:
    """Peak and retained traced memory after the first tenth of `total` replays and at the
    end, and their growth per call; True when both stay flat."""
    transport = FixtureTransport(tools.store, mode="replay", redactor=tools.redactor)
    client = _client(tools.base_url, transport)
    plain = [prompt for prompt, stream in calls if not stream]
    marks: list[tuple[int, float, float]] = []  # (calls, peak, retained after gc) in bytes
    tracemalloc.start()
    done = 0
    checkpoints = sorted({max(1, total // 10), total})
    while done < total:
        batch = plain[: min(len(plain), checkpoints[len(marks)] - done)]
        for prompt in batch:
            messages: Any = [{"role": "user", "content": prompt}]
            client.chat.completions.create(model="m", messages=messages)
        done += len(batch)
        if done == checkpoints[len(marks)]:
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            marks.append((done, peak, current))
    tracemalloc.stop()
    client.close()
    (first_n, first_peak, first_kept), (last_n, last_peak, last_kept) = marks[0], marks[-1]
    calls_between = max(1, last_n - first_n)
    peak_slope = (last_peak - first_peak) / calls_between
    kept_slope = (last_kept - first_kept) / calls_between
    print(f"\nmemory, {total:,} replays through one transport (tracemalloc):")
    print(f"  peak      after {first_n:>6,}: {first_peak / 1e6:7.3f} MB   after {last_n:>6,}: "
          f"{last_peak / 1e6:7.3f} MB   slope {peak_slope:+7.2f} bytes/call  "
          f"target <= {MEMORY_SLOPE:.0f}  {_verdict(peak_slope <= MEMORY_SLOPE)}")
    print(f"  retained  after {first_n:>6,}: {first_kept / 1e6:7.3f} MB   after {last_n:>6,}: "
          f"{last_kept / 1e6:7.3f} MB   slope {kept_slope:+7.2f} bytes/call  "
          f"target <= {MEMORY_SLOPE:.0f}  {_verdict(kept_slope <= MEMORY_SLOPE)}")
    return peak_slope <= MEMORY_SLOPE and kept_slope <= MEMORY_SLOPE


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", type=int, default=10_000)
    parser.add_argument("--sweep-calls", type=int, default=60)
    parser.add_argument("--only-memory", action="store_true",
                        help="record, then measure memory only")
    args = parser.parse_args()

    calls = [(make_prompt(n, 2048), n % 2 == 1) for n in range(args.calls)]
    sweep = {kb: [(make_prompt(n, kb * 1024), False) for n in range(args.sweep_calls)]
             for kb in SWEEP_KB}
    prose = [(_prose(n, 256 * 1024), False) for n in range(args.sweep_calls)]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        server = _Server()
        try:
            tools = Tools(Path(tmp), server.url)
            tools.record(calls)
            for kb_calls in [*sweep.values(), prose]:
                transport = FixtureTransport(tools.store, mode="record", redactor=tools.redactor)
                _run(_client(server.url, transport), kb_calls)
        finally:
            server.stop()

        if args.only_memory:
            return 0 if _memory(tools, calls, args.memory) else 1
        print(f"{args.calls} openai SDK calls (half streamed, {EVENTS} events; 2 KB prompts), "
              f"best of {args.rounds}, us per call:")
        times = _best({"canned": tools.canned, "cassetter": tools.cassetter_replay,
                       "vcrpy": tools.vcrpy, "redactkey": tools.redactkey}, calls, args.rounds)
        for name, micros in times.items():
            print(f"  {name:<10} {micros:9.0f} us/call")
        ours = times["redactkey"]
        checks = [
            ("redactkey / cassetter", ours / times["cassetter"], TARGET_CASSETTER, "<="),
            ("redactkey / canned", ours / times["canned"], TARGET_CANNED, "<="),
            ("vcrpy / redactkey", times["vcrpy"] / ours, TARGET_VCRPY, ">="),
        ]
        for label, ratio, target, how in checks:
            ok = ratio <= target if how == "<=" else ratio >= target
            failed |= not ok
            print(f"  {label:<22} {ratio:5.2f}x  target {how} {target:.2f}x  {_verdict(ok)}")

        print(f"\nprompt-size sweep ({args.sweep_calls} non-streamed calls per size, best of "
              f"{args.rounds}): added cost of redactkey replay over canned")
        pair = {"canned": tools.canned, "redactkey": tools.redactkey}
        for kb, kb_calls in sweep.items():
            canned, replay = _best(pair, kb_calls, args.rounds).values()
            added = (replay - canned) / 1000
            target = SWEEP_TARGET_MS.get(kb)
            line = (f"  {kb:>4} KB: canned {canned:8.0f} us, redactkey {replay:8.0f} us, "
                    f"added {added:+.3f} ms")
            if target is not None:
                ok = added <= target
                failed |= not ok
                line += f"  target <= +{target:.2f} ms  {_verdict(ok)}"
            print(line)
        canned, replay = _best(pair, prose, args.rounds).values()
        print(f"   256 KB prose: canned {canned:8.0f} us, redactkey {replay:8.0f} us, "
              f"added {(replay - canned) / 1000:+.3f} ms")

        if args.memory:
            failed |= not _memory(tools, calls, args.memory)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
