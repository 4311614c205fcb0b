"""Redaction throughput and recall against `detect-secrets scan -n` on the same data.

    python tests/benchmarks/bench_redact.py [--mb 20] [--secrets 100] [--keep DIR]

1. Generates a tree of cassette-like JSON fixture files (chat completions, streamed
   chunks, responses-API output with encrypted reasoning, Anthropic messages with a
   base64 image, embeddings), about `--mb` megabytes, seeded so every run sees the same
   bytes. 100 collected secrets are planted in some files.
2. redactkey: read + parse + `Redactor(secrets).redact(doc)` + serialise every file,
   timed in CPU seconds (`time.process_time`).
3. baseline: `detect-secrets scan -n --all-files TREE` as a subprocess, CPU seconds of
   the child (and its workers) from `resource.getrusage(RUSAGE_CHILDREN)`.
4. Recall on the leak matrix (tests/_leakmatrix.py): redactkey with detectors only (no
   collected secrets, like the baseline) and with the secrets collected, counting a case
   only when no 12-character slice of the token survives; detect-secrets counting a case
   when it flags anything at all in the case's file (generous to the baseline).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import resource
import shutil
import string
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/ for _leakmatrix

import _leakmatrix  # noqa: E402
from redactkey import Redactor, RunSecrets  # noqa: E402

TEXT = (
    "the model returns a structured answer with citations for each claim and a short summary "
    "of the quarterly report including revenue growth churn and pipeline metrics per region "
    "please keep the tone neutral and list assumptions explicitly before the final answer "
    "tool call results show the weather in Lisbon is mild with light rain expected tomorrow "
    "refactor the function so it streams tokens and handles timeouts without retrying twice"
)
WORDS = TEXT.split()


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _rid(rng: random.Random, prefix: str, n: int = 24) -> str:
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _headers(rng: random.Random, secret: str | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "user-agent": "OpenAI/Python 1.52.0",
        "x-stainless-lang": "python",
        "x-request-id": _rid(rng, "req_", 32),
    }
    if secret is not None:
        headers["authorization"] = f"Bearer {secret}"
    return headers


def _chat(rng: random.Random, secret: str | None) -> tuple[dict[str, Any], Any]:
    messages = [{"role": "system", "content": _prose(rng, 40)}]
    for _ in range(rng.randint(2, 12)):
        messages.append({"role": "user", "content": _prose(rng, rng.randint(20, 300))})
        messages.append({"role": "assistant", "content": _prose(rng, rng.randint(20, 300))})
    if secret is not None:
        messages.append({"role": "user", "content": f"The tool said: token {secret} expired."})
    answer = {
        "id": _rid(rng, "chatcmpl-", 29),
        "object": "chat.completion",
        "created": 1732000000 + rng.randint(0, 10**6),
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": _rid(rng, "fp_", 10),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": _prose(rng, rng.randint(50, 600))},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 812, "completion_tokens": 233, "total_tokens": 1045},
    }
    return {
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": _headers(rng, secret),
        "json": {"model": "gpt-4o", "messages": messages, "max_tokens": 1024},
    }, answer


def _stream(rng: random.Random, secret: str | None) -> tuple[dict[str, Any], list[Any]]:
    request, _ = _chat(rng, secret)
    cid = _rid(rng, "chatcmpl-", 29)
    chunks = [
        {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": 1732000000,
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}],
        }
        for word in _prose(rng, rng.randint(100, 800)).split()
    ]
    return request, chunks


def _responses(rng: random.Random, secret: str | None) -> tuple[dict[str, Any], Any]:
    blob = base64.urlsafe_b64encode(rng.randbytes(rng.randint(2000, 12000))).decode()
    answer = {
        "id": _rid(rng, "resp_", 48),
        "object": "response",
        "output": [
            {"id": _rid(rng, "rs_", 48), "type": "reasoning", "encrypted_content": blob},
            {
                "id": _rid(rng, "msg_", 48),
                "type": "message",
                "content": [{"type": "output_text", "text": _prose(rng, 400)}],
            },
        ],
        "usage": {"input_tokens": 120, "output_tokens": 900, "reasoning_tokens": 512},
    }
    request = {
        "method": "POST",
        "url": "https://api.openai.com/v1/responses",
        "headers": _headers(rng, secret),
        "json": {"model": "o4-mini", "input": _prose(rng, 200), "store": False},
    }
    return request, answer


def _anthropic(rng: random.Random, secret: str | None) -> tuple[dict[str, Any], Any]:
    image = base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(8000, 60000))
    ).decode()
    request = {
        "method": "POST",
        "url": "https://api.anthropic.com/v1/messages",
        "headers": {"anthropic-version": "2023-06-01", "content-type": "application/json"}
        | ({"x-api-key": secret} if secret else {}),
        "json": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": image},
                        },
                        {"type": "text", "text": _prose(rng, 60)},
                    ],
                }
            ],
        },
    }
    answer = {
        "id": _rid(rng, "msg_01", 22),
        "type": "message",
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": _rid(rng, "toolu_01", 22),
                "name": "lookup",
                "input": {"query": _prose(rng, 8)},
            },
            {"type": "text", "text": _prose(rng, 300)},
        ],
        "usage": {"input_tokens": 1600, "output_tokens": 410},
    }
    return request, answer


def _embeddings(rng: random.Random, secret: str | None) -> tuple[dict[str, Any], Any]:
    request = {
        "method": "POST",
        "url": "https://api.openai.com/v1/embeddings",
        "headers": _headers(rng, secret),
        "json": {"model": "text-embedding-3-small", "input": [_prose(rng, 30) for _ in range(4)]},
    }
    answer = {
        "object": "list",
        "data": [
            {
                "object": "embedding",
                "index": i,
                "embedding": [round(rng.uniform(-0.1, 0.1), 8) for _ in range(1536)],
            }
            for i in range(4)
        ],
        "usage": {"prompt_tokens": 120, "total_tokens": 120},
    }
    return request, answer


MAKERS = [_chat, _chat, _stream, _responses, _anthropic, _embeddings]


def collected_secrets(n: int, seed: int = 7) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while len(out) < n:
        for name, token in _leakmatrix.tokens(seed + i).items():
            if len(out) < n:
                out[f"{name.upper().replace('-', '_')}_{i}"] = token
        i += 1
    return out


def generate_tree(root: Path, megabytes: float, secrets: list[str], seed: int = 1) -> int:
    rng = random.Random(seed)
    total = 0
    index = 0
    while total < megabytes * 1_000_000:
        maker = MAKERS[index % len(MAKERS)]
        secret = secrets[index % len(secrets)] if index % 7 == 0 else None
        request, outcome = maker(rng, secret)
        kind = "chunks" if maker is _stream else "answer"
        doc = {
            "version": 1,
            "key": hashlib.sha256(f"{seed}-{index}".encode()).hexdigest(),
            "kind": "http",
            "request": request,
            kind: outcome,
            "trace": str(uuid.UUID(int=rng.getrandbits(128))),
        }
        data = (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
        sub = root / f"suite_{index % 16:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"http.{doc['key']}.json").write_bytes(data)
        total += len(data)
        index += 1
    return total


def run_redactkey(root: Path, redactor: Redactor) -> tuple[float, int, int]:
    """CPU seconds to read, parse and redact every file (writing is the store's job)."""
    files = sorted(root.rglob("*.json"))
    outputs: list[Any] = []
    start = time.process_time()
    size = 0
    for path in files:
        raw = path.read_bytes()
        size += len(raw)
        doc = json.loads(raw)
        if "chunks" in doc:
            doc["chunks"] = redactor.redact_stream(doc["chunks"])
        outputs.append(redactor.redact(doc))
    cpu = time.process_time() - start
    changed = sum(
        out != json.loads(path.read_bytes()) for path, out in zip(files, outputs, strict=True)
    )
    return cpu, size, changed


def detect_secrets_exe() -> str:
    candidate = Path(sys.executable).with_name("detect-secrets")
    return (
        str(candidate) if candidate.exists() else shutil.which("detect-secrets") or "detect-secrets"
    )


def run_detect_secrets(root: Path) -> tuple[float, dict[str, Any]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [detect_secrets_exe(), "scan", "-n", "--all-files", "."],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(proc.stdout)["results"]


def recall(collected: dict[str, str]) -> dict[str, tuple[int, int]]:
    cases = _leakmatrix.cases()
    out: dict[str, tuple[int, int]] = {}
    secrets = RunSecrets({})
    for name, token in _leakmatrix.tokens().items():
        secrets.add(name.upper().replace("-", "_"), token)
    for label, redactor in (
        ("redactkey (detectors only)", Redactor()),
        ("redactkey (secrets collected)", Redactor(secrets)),
    ):
        caught = 0
        for case in cases:
            if case.how == "stream":
                result = redactor.redact_stream(case.value)
            else:
                result = redactor.redact(case.value)
            caught += not _leakmatrix.survivors(case.token, result)
        out[label] = (caught, len(cases))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for i, case in enumerate(cases):
            if case.how == "stream":
                text = "".join(f"data: {json.dumps(c)}\n\n" for c in case.value)
            else:
                text = json.dumps(case.value, indent=2)
            (base / f"case_{i:04d}.json").write_text(text + "\n")
        _, results = run_detect_secrets(base)
        flagged = {Path(name).name for name in results}
        caught = sum(f"case_{i:04d}.json" in flagged for i in range(len(cases)))
        out["detect-secrets 1.5 (any finding in the file)"] = (caught, len(cases))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--secrets", type=int, default=100)
    parser.add_argument(
        "--keep", type=Path, default=None, help="generate the tree here and keep it"
    )
    args = parser.parse_args()

    collected = collected_secrets(args.secrets)
    secrets = RunSecrets({})
    for slot, value in collected.items():
        secrets.add(slot, value)
    redactor = Redactor(secrets)

    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory()
        root = Path(tmp.name)
    else:
        root = args.keep
        root.mkdir(parents=True, exist_ok=True)
    try:
        size = generate_tree(root, args.mb, list(collected.values()))
        files = len(list(root.rglob("*.json")))
        print(f"tree: {files} files, {size / 1e6:.1f} MB, {len(secrets)} collected secrets")

        ours_cpu, ours_size, changed = run_redactkey(root, redactor)
        ours = ours_size / 1e6 / ours_cpu
        print(
            f"redactkey:      {ours_cpu:8.2f} CPU-s  {ours:8.2f} MB/CPU-s  "
            f"({changed} files changed)"
        )

        theirs_cpu, results = run_detect_secrets(root)
        theirs = size / 1e6 / theirs_cpu
        findings = sum(len(v) for v in results.values())
        print(
            f"detect-secrets: {theirs_cpu:8.2f} CPU-s  {theirs:8.2f} MB/CPU-s  "
            f"({findings} findings in {len(results)} files)"
        )
        print(
            f"throughput ratio (redactkey / detect-secrets): {ours / theirs:.1f}x  (target >= 50x)"
        )
    finally:
        if tmp is not None:
            tmp.cleanup()

    print("recall on the leak matrix (token types x contexts):")
    for label, (caught, total) in recall(collected).items():
        print(f"  {label:48s} {caught:4d}/{total}  {100 * caught / total:5.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
