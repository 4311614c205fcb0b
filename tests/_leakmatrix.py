"""The leak matrix: every token type in every context a credential travels in.

Tokens are fake and built at run time from a seeded generator (never real credentials).
Shared by tests/test_leaks.py and tests/benchmarks/bench_redact.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from helpers import checksummed_token

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    out = "".join(rng.choice(alphabet) for _ in range(n))
    # Real keys of these shapes hold digits and letters; keep the fakes honest.
    digits = [c for c in alphabet if c.isdigit()] or list(alphabet)
    letters = [c for c in alphabet if c.isalpha()] or list(alphabet)
    return out[:-2] + rng.choice(digits) + rng.choice(letters)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    sub = "".join(rng.choice(string.digits) for _ in range(10))
    body = _b64url(json.dumps({"sub": sub, "name": "Fake User", "iat": 1700000000}).encode())
    return f"{head}.{body}.{_pick(rng, URLSAFE, 43)}"


TOKEN_BUILDERS: dict[str, Callable[[random.Random], str]] = {
    "openai-project": lambda r: "sk-" + "proj-" + _pick(r, URLSAFE, 156),
    "openai-service-account": lambda r: "sk-" + "svcacct-" + _pick(r, URLSAFE, 120),
    "openai-admin": lambda r: "sk-" + "admin-" + _pick(r, URLSAFE, 120),
    "anthropic": lambda r: "sk-" + "ant-api03-" + _pick(r, URLSAFE, 93) + "AA",
    "google-api-key": lambda r: "AI" + "za" + _pick(r, URLSAFE, 35),
    "google-oauth": lambda r: "ya" + "29." + "a0AfB_" + _pick(r, URLSAFE, 150),
    "huggingface": lambda r: "hf" + "_" + _pick(r, string.ascii_letters, 34),
    "groq": lambda r: "gs" + "k_" + _pick(r, ALNUM, 52),
    "replicate": lambda r: "r8" + "_" + _pick(r, ALNUM, 37),
    "xai": lambda r: "xa" + "i-" + _pick(r, ALNUM, 80),
    "perplexity": lambda r: "pp" + "lx-" + _pick(r, ALNUM, 48),
    "openrouter": lambda r: "sk-" + "or-v1-" + _pick(r, HEX, 64),
    "langsmith": lambda r: "ls" + "v2_pt_" + _pick(r, HEX, 32) + "_" + _pick(r, HEX, 10),
    "github-fine-grained": lambda r: (
        "github" + "_pat_" + _pick(r, ALNUM, 22) + "_" + _pick(r, ALNUM, 59)
    ),
    "github-classic": lambda r: checksummed_token("gh" + "p_", _pick(r, ALNUM, 30)),
    "aws-akia": lambda r: "AK" + "IA" + _pick(r, UPPER, 16),
    "aws-asia": lambda r: "AS" + "IA" + _pick(r, UPPER, 16),
    "jwt": _jwt,
    "slack": lambda r: (
        "xo"
        + "xb-"
        + _pick(r, string.digits, 12)
        + "-"
        + _pick(r, string.digits, 13)
        + "-"
        + _pick(r, ALNUM, 24)
    ),
    "stripe-secret": lambda r: "sk" + "_live_" + _pick(r, ALNUM, 99),
    "stripe-restricted": lambda r: "rk" + "_live_" + _pick(r, ALNUM, 99),
}


def tokens(seed: int = 20261129) -> dict[str, str]:
    """One fake token per type, the same on every run."""
    rng = random.Random(seed)
    return {name: build(rng) for name, build in TOKEN_BUILDERS.items()}


def _b64_at(lead: int, token: str) -> dict[str, Any]:
    text = "x" * lead + " credential=" + token + " (rotated)"
    return {"body": {"encoding": "base64", "data": base64.b64encode(text.encode()).decode()}}


def _chunks(token: str) -> list[Any]:
    cut = len(token) // 2
    return [
        {"choices": [{"index": 0, "delta": {"content": "Sure, use " + token[:cut]}}]},
        {"choices": [{"index": 0, "delta": {"content": token[cut:] + " to call it."}}]},
    ]


#: context name -> (how: "data" | "stream", build(token) -> value)
CONTEXTS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "prose": ("data", lambda t: f"Here is the key {t} for the demo."),
    "error-sentence": (
        "data",
        lambda t: {
            "error": {
                "message": f"Incorrect API key provided: {t}. You can find your API key at "
                "https://platform.example.com/account/api-keys.",
                "type": "invalid_request_error",
            }
        },
    ),
    "url-query": ("data", lambda t: {"url": f"https://api.example.com/cb?state=x1&v={t}&page=2"}),
    "header-value": ("data", lambda t: {"headers": {"x-debug-echo": t, "accept": "*/*"}}),
    "basic-auth": (
        "data",
        lambda t: (
            f"curl -H 'Authorization: Basic {base64.b64encode(f'apiuser:{t}'.encode()).decode()}'"
            " https://api.example.com/v1"
        ),
    ),
    "base64-align-0": ("data", lambda t: _b64_at(0, t)),
    "base64-align-1": ("data", lambda t: _b64_at(1, t)),
    "base64-align-2": ("data", lambda t: _b64_at(2, t)),
    "percent-encoded": (
        "data",
        lambda t: {"url": "https://example.com/login?next=" + quote(f"/app?k={t}&x=1", safe="")},
    ),
    "json-escaped": ("data", lambda t: {"body": json.dumps({"note": f"line one\nkey\t{t}\n"})}),
    "split-2-chunks": ("stream", _chunks),
}


@dataclass(frozen=True)
class Case:
    token_type: str
    context: str
    how: str
    token: str
    value: Any

    @property
    def id(self) -> str:
        return f"{self.token_type}-{self.context}"


def cases(seed: int = 20261129) -> list[Case]:
    """Every token type x every context."""
    out = []
    for name, token in tokens(seed).items():
        for context, (how, build) in CONTEXTS.items():
            out.append(Case(name, context, how, token, build(token)))
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def decoded_forms(text: str) -> list[str]:
    """`text` and what a reader gets by base64-, percent- or JSON-decoding its pieces."""
    from urllib.parse import unquote

    forms = [text, unquote(text)]
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        forms.append(
            json.loads(text) if text[:1] == '"' else text.encode().decode("unicode_escape")
        )
    for piece in text.replace("'", " ").replace('"', " ").split():
        for candidate in (piece, piece.rsplit("=", 1)[-1]):
            try:
                forms.append(base64.b64decode(candidate + "=" * (-len(candidate) % 4)).decode())
            except (ValueError, UnicodeDecodeError):
                continue
    return [f for f in forms if isinstance(f, str)]


def survivors(token: str, output: Any, *, window: int = 12) -> list[str]:
    """Pieces of `token` (any `window`-character slice) left anywhere in `output`,
    in its raw text or once decoded; a stream's pieces are joined field by field first."""
    texts = _strings(output)
    if isinstance(output, list) and output and all(isinstance(c, dict) for c in output):
        texts.append("".join(_strings(output)))
    found = []
    slices = {token[i : i + window] for i in range(0, max(1, len(token) - window + 1))}
    for text in texts:
        for form in decoded_forms(text):
            found.extend(s for s in slices if s in form)
    return sorted(set(found))
