"""Per-request cost of `FixtureTransport` replay and record under the openai SDK.

    python tests/benchmarks/bench_transport.py [--calls 300]

1. An `openai.OpenAI` client on an `httpx2.Client` whose transport is, in turn:
   - baseline: `httpx2.MockTransport` answering with a canned chat completion (the SDK's
     own cost: building, sending, parsing; no redactkey);
   - replay: `FixtureTransport(mode="replay")` over a directory holding that answer;
   - record: `FixtureTransport(mode="record", inner=<the same MockTransport>)`.
2. The same for a streamed chat completion of 60 events (the SDK iterates every chunk).
   Record calls use a new prompt each time (a repeat within a run would replay), and
   write a new file each (temp file, fsync, rename).
3. Reports microseconds per request (median) and the ratio to the baseline of the same run, with
   a Redactor that knows 5 run secrets and runs its detectors.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import openai

from redactkey import FixtureDir, FixtureTransport, Redactor, RunSecrets

PROMPT = "Summarise the quarterly report in three bullet points. " * 8
ANSWER = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": "Revenue grew. " * 40}}],
    "usage": {"prompt_tokens": 90, "completion_tokens": 120, "total_tokens": 210},
}


def _events() -> bytes:
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    lines = [
        "data: " + json.dumps({**chunk, "choices": [
            {"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}]})
        for i in range(59)
    ]
    lines.append("data: [DONE]")
    return ("\n\n".join(lines) + "\n\n").encode()


def _handler(request: httpx2.Request) -> httpx2.Response:
    if json.loads(request.content).get("stream"):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=_events())
    return httpx2.Response(200, json=ANSWER, headers={"x-request-id": "req_1"})


def _redactor() -> Redactor:
    secrets = RunSecrets()
    for i in range(5):
        secrets.add(f"SLOT_{i}", f"secret-value-{i}-" + "q7Zx" * 6)
    return Redactor(secrets)


def _client(transport: Any) -> openai.OpenAI:
    http = httpx2.Client(transport=transport)
    return openai.OpenAI(api_key="sk-bench-" + "x" * 20, http_client=http)


def _call(client: openai.OpenAI, stream: bool, suffix: str = "") -> None:
    messages: Any = [{"role": "user", "content": PROMPT + suffix}]
    if stream:
        for _ in client.chat.completions.create(model="m", messages=messages, stream=True):
            pass
    else:
        client.chat.completions.create(model="m", messages=messages)


class _Fresh:
    """Each call a new prompt, so that record mode really records (a repeat replays)."""

    def __init__(self, client: openai.OpenAI, stream: bool) -> None:
        self.client, self.stream, self.count = client, stream, 0

    def __call__(self) -> None:
        self.count += 1
        _call(self.client, self.stream, f" (call {self.count})")


def _time(fn: Callable[[], None], calls: int) -> float:
    fn()  # warm-up (imports, first fixture read)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    redactor = _redactor()
    with tempfile.TemporaryDirectory() as tmp:
        store = FixtureDir(Path(tmp) / "fixtures")
        for stream in (False, True):
            what = "stream (60 events)" if stream else "chat completion"
            baseline = _client(httpx2.MockTransport(_handler))
            record = _client(FixtureTransport(store, mode="record", redactor=redactor,
                                              inner=httpx2.MockTransport(_handler)))
            replay = _client(FixtureTransport(store, mode="replay", redactor=redactor))
            base = _time(lambda c=baseline, s=stream: _call(c, s), args.calls)
            rec = _time(_Fresh(record, stream), max(args.calls // 5, 20))
            _call(record, stream)  # the call replay reads
            rep = _time(lambda c=replay, s=stream: _call(c, s), args.calls)
            print(f"{what}:")
            print(f"  baseline (SDK + MockTransport) {base:9.0f} us/request")
            print(f"  replay                         {rep:9.0f} us/request  "
                  f"{rep / base:5.2f}x baseline")
            print(f"  record                         {rec:9.0f} us/request  "
                  f"{rec / base:5.2f}x baseline")


if __name__ == "__main__":
    main()
