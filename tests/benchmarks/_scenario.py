"""The chat scenario the replay benchmarks share: its prompts, its answer, its redactor."""

from __future__ import annotations

import json
import random
import string
from typing import Any

from redactkey import Redactor, RunSecrets

ANSWER: dict[str, Any] = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                 "message": {"role": "assistant", "content": "Revenue grew. " * 40}}],
    "usage": {"prompt_tokens": 90, "completion_tokens": 120, "total_tokens": 210},
}

JSON_BODY = json.dumps(ANSWER).encode()


def make_prompt(n: int, size: int) -> str:
    """Lower-case words, `size` characters, the same for the same `n` on every run."""
    rng = random.Random(n * 7919 + size)
    words = []
    length = 0
    while length < size:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def make_redactor() -> Redactor:
    """A redactor over 5 run secrets, with its detectors."""
    secrets = RunSecrets()
    for i in range(5):
        secrets.add(f"SLOT_{i}", f"secret-value-{i}-" + "q7Zx" * 6)
    return Redactor(secrets)
