"""Shared test helpers (imported by test modules; never a test module itself)."""

from __future__ import annotations

import base64
import copy
import json
import random
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redactkey.recordings._cassettes import Recording
from redactkey.recordings._classify import Target, open_target
from redactkey.recordings._readers import read_recording

if TYPE_CHECKING:
    from redactkey.commands._issues import Report

__all__ = ["AUDIT_ONLY_RULES", "ChangingProvider", "Measured", "assert_one_answer",
           "billion_laughs", "bomb_cassette", "chat_answer", "chat_chunks",
           "checksummed_token", "load_recording", "run_measured", "write_recording"]

# rules about a fixture tree rather than a value: the audit's alone
AUDIT_ONLY_RULES = frozenset({
    "duplicate-interaction", "volatile-request-field", "oversized-file", "duplicate-key",
    "unused-fixture", "not-canonical", "key-mismatch", "schema-invalid", "unknown-version",
    "unparsable-file", "volatile-key-material", "answer-gap"})


def assert_one_answer(reports: dict[str, Report]) -> None:
    """`check`, `audit` and `scrub` (a dry run) over the same paths: the same files read,
    the same skipped, the same rule at the same line for every value (scrub lists what it
    would rewrite: the audit's errors and warnings)."""
    files = {command: sorted(path for path, _fmt in report.read_files)
             for command, report in reports.items()}
    assert files["check"] == files["audit"] == files["scrub"]
    skipped = {command: sorted(report.skipped) for command, report in reports.items()}
    assert skipped["check"] == skipped["audit"] == skipped["scrub"]

    def by_value(report: Report, levels: tuple[str, ...]) -> set[tuple[str, int, str]]:
        return {(i.path, i.line, i.rule) for i in report.issues
                if i.level in levels and i.rule not in AUDIT_ONLY_RULES}

    everything = ("error", "warning", "note")
    assert by_value(reports["check"], everything) == by_value(reports["audit"], everything)
    assert by_value(reports["scrub"], ("error", "warning")) == \
        by_value(reports["audit"], ("error", "warning"))


_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def checksummed_token(prefix: str, body: str) -> str:
    """A GitHub- or npm-shaped token whose checksum holds: `prefix`, the 30 characters
    `body` (letters and digits; 70 in a GitHub refresh token), then their CRC32 in base62,
    6 characters padded with zeros. Computed here, apart from the product's own code, so a
    test of the checksum rule is not checked against itself. Valid for nothing: the body
    is made up."""
    if len(body) not in (30, 70) or not body.isascii() or not body.isalnum():
        raise ValueError(f"a token body is 30 (or 70) letters and digits, not {body!r}")
    number = zlib.crc32(body.encode("ascii"))
    checksum = ""
    while number:
        number, digit = divmod(number, 62)
        checksum = _BASE62[digit] + checksum
    return prefix + body + checksum.rjust(6, "0")


def chat_answer(text: str = "Hello there", **changes: Any) -> dict[str, Any]:
    """An OpenAI chat completion as the API returns it; `changes` replace top-level members."""
    answer: dict[str, Any] = {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0001",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": None},
            "finish_reason": "stop",
            "logprobs": None,
        }],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    }
    answer.update(changes)
    return answer


def chat_chunks(text: str = "Hello there", size: int = 4, **changes: Any) -> list[dict[str, Any]]:
    """The same answer streamed: chunks of `size` characters, then the finish chunk."""
    base = {"id": "chatcmpl-abc123", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": "gpt-4o-mini", **changes}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": text[i:i + size]} for i in range(0, len(text), size)]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return chunks


@dataclass
class ChangingProvider:
    """A local fake provider (127.0.0.1) whose answers a test changes between runs.

    `POST /v1/chat/completions` answers `answer` as JSON, or, when the request asks
    for a stream, `chunks` as server-sent events ending with ``[DONE]``; `status` is
    the HTTP status. Use it as a context manager and point clients at `url`.
    """

    answer: dict[str, Any] = field(default_factory=chat_answer)
    chunks: list[dict[str, Any]] = field(default_factory=chat_chunks)
    status: int = 200
    requests: int = 0
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None, "the provider is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ChangingProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw) if raw else {}
                with provider._lock:
                    provider.requests += 1
                    answer = copy.deepcopy(provider.answer)
                    chunks = copy.deepcopy(provider.chunks)
                    status = provider.status
                if isinstance(body, dict) and body.get("stream"):
                    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                    data += b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    data = json.dumps(answer).encode()
                    content_type = "application/json"
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", "req_" + str(provider.requests))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


# -- hostile and large inputs (tests/test_bounds.py, tests/benchmarks/bench_large_files.py)

# The command runs in a grandchild: a process started from this one would count this
# one's memory as its own (Linux keeps the high-water mark across exec), a process
# started from a fresh interpreter does not; that interpreter reports its children's.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call([sys.executable, '-c', 'from redactkey.commands._cli import run;"
    " run()', *sys.argv[1:]])\n"
    "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write(f'\\nmeasured {used.ru_utime + used.ru_stime} {used.ru_maxrss}\\n')\n"
    "sys.exit(code)\n"
)


@dataclass(frozen=True)
class Measured:
    """A whole command run in a subprocess: its exit code, output, wall time, CPU time
    and peak resident memory (of its process and its workers)."""

    code: int
    out: str
    err: str
    wall: float
    seconds: float  # CPU: what the command costs, whatever else the machine runs
    peak_mb: float


def run_measured(args: list[str], cwd: Path, timeout: float = 600) -> Measured:
    """Run `redact ARGS` in a fresh interpreter (its start-up and imports included) and
    measure it by `getrusage(RUSAGE_CHILDREN)`, so that no other process counts."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)
    wall = time.perf_counter() - started
    err, _, measured = done.stderr.rpartition("\nmeasured ")
    cpu, _, peak = measured.partition(" ")
    return Measured(done.returncode, done.stdout, err, wall, float(cpu or "nan"),
                    int(peak or 0) / 1024)


def billion_laughs(levels: int = 9) -> str:
    """A YAML alias bomb: a few hundred bytes that build 10**levels strings."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        name, last = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{last}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def bomb_cassette(levels: int = 9) -> str:
    """A vcrpy cassette whose one response carries a billion laughs."""
    bomb = "".join(f"      {line}\n" for line in billion_laughs(levels).splitlines())
    return ("interactions:\n- request:\n    method: GET\n    uri: https://api.example.com/\n"
            "    headers: {}\n    body: null\n  response:\n    status: {code: 200, message: OK}\n"
            "    headers: {}\n    body:\n      string: hi\n    extra:\n" + bomb + "version: 1\n")


def write_recording(path: Path, size: int, secret: str, *, fmt: str = "json",
                    seed: int = 0) -> int:
    """A vcrpy-shaped cassette of about `size` bytes written interaction by interaction
    (never held whole), one interaction per line; the one near the middle sends `secret`
    in its request body. Returns the line `secret` is on. `fmt`: `json` or `yaml`."""
    rng = random.Random(seed)
    count = 0
    planted = 0
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"interactions": [\n' if fmt == "json" else "interactions:\n")
        written = 0
        line = 2
        while written < size:
            text = base64.b64encode(rng.randbytes(1500)).decode("ascii")
            content = secret if not planted and written >= size // 2 else text[:60]
            body = json.dumps({"model": "gpt-4o", "messages": [
                {"role": "user", "content": content}, {"role": "assistant", "content": text}]})
            item = {"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat",
                                "headers": {"authorization": ["[REDACTED]"],
                                            "content-type": ["application/json"]},
                                "body": body},
                    "response": {"status": {"code": 200, "message": "OK"},
                                 "headers": {"content-type": ["application/json"]},
                                 "body": {"string": json.dumps({"embedding": text[:900]})}}}
            if content == secret:
                planted = line
            row = json.dumps(item)
            row = (",\n" if count else "") + row if fmt == "json" else f"- {row}\n"
            handle.write(row)
            written += len(row)
            count += 1
            line += 1
        handle.write('\n], "version": 1}\n' if fmt == "json" else "version: 1\n")
    return planted
def detector_spans(text: str, rules: Any = None) -> list[Any]:
    """The detector rules' spans in `text` (no run secrets, no credential names): the
    default rules, or only `rules`."""
    from redactkey.scan._engine import Scanner
    from redactkey.scan._rules import DEFAULT_RULES

    return Scanner(DEFAULT_RULES if rules is None else rules, None).scan(text)


def load_recording(path: Path) -> Recording:
    """A recording or fixture file read as `redact check` reads it (gunzipped, decoded)."""
    opened = open_target(Target(path, str(path)))
    return read_recording(path, opened.text, suffix=opened.suffix)
