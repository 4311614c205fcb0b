"""Values that are already redacted: ours and the placeholder styles other projects use.

A value made only of placeholders (`<OPENAI_API_KEY>`, `[REDACTED]`, `FILTERED`,
`***`, `XXXX`, `fake-key`, `Bearer <TOKEN>`, `user:[REDACTED]`) is clean: the
commands that look for secrets pass it over.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["AUTH_SCHEMES", "is_placeholder", "looks_redacted"]

# Values other projects put where a credential was: they count as redacted.
_THIRD_PARTY_PLACEHOLDERS = frozenset(
    value.lower()
    for value in (
        "AUTHORIZATION-XXX", "X-API-KEY-XXX", "OPENAI-ORG-XXX", "OPENAI-PROJECT-XXX",
        "<OPENAI_ACCESS_TOKEN>", "<OPENAI_ADMIN_TOKEN>", "<OPENAI_API_KEY>", "<CENSORED>",
        "scrubbed", "ek_scrubbed", "<redacted>", "redacted", "[redacted]", "[filtered]",
        "filtered", "fake", "dummy", "mock", "test", "none", "null", "xxx", "<api_key>",
        "***", "****", "*****", "<hidden>", "hidden", "placeholder", "your-api-key",
        "your_api_key", "sk-xxx", "test-key", "test_key", "fake-key", "fake_key",
        "password", "passwd", "pass", "pw", "secret", "changeme", "token", "apikey",
        "api_key", "api-key", "your-token", "your_token", "<token>", "<password>",
    )
)
_PLACEHOLDER_SHAPES = re.compile(
    r"""(?x)^(?:
        <[A-Za-z0-9_.:-]{1,64}>            # <OPENAI_API_KEY>, <redacted>
      | \[[A-Za-z0-9_.:-]{1,64}\]          # [REDACTED], [REDACTED:SLOT], [FILTERED]
      | \{\{[A-Za-z0-9_. -]{1,64}\}\}      # {{API_KEY}}
      | [A-Za-z0-9_-]{0,40}-X{3,}          # AUTHORIZATION-XXX, OPENAI-ORG-XXX
      | X{3,} | \*{3,} | \.{3,}
      | [A-Za-z0-9_-]{1,16}(?:\.{3}|…)      # sk-..., AIza..., sk-ant-…
      | (?:fake|dummy|mock|test|example)[A-Za-z0-9_-]{0,40}
    )$""",
    re.IGNORECASE,
)
AUTH_SCHEMES = re.compile(r"^(?:bearer|basic|token|digest|apikey|api-key)\s+", re.IGNORECASE)


def looks_redacted(value: str, placeholder_check: Callable[[str], bool] | None = None) -> bool:
    """Whether a value is a placeholder: ours (`placeholder_check`) or a common third-party one."""
    text = value.strip().strip("'\"")
    if not text:
        return True
    bare = AUTH_SCHEMES.sub("", text).strip()
    for candidate in (text, bare):
        if placeholder_check is not None and placeholder_check(candidate):
            return True
        if candidate.lower() in _THIRD_PARTY_PLACEHOLDERS or _PLACEHOLDER_SHAPES.match(candidate):
            return True
    if ":" in bare and not bare.startswith(("http:", "https:")):
        # basic-auth user:password with the password redacted
        _user, _, password = bare.partition(":")
        if password and looks_redacted(password, placeholder_check):
            return True
    return False


def is_placeholder(value: str) -> bool:
    """Whether `value` is made only of placeholders and fixed syntax (already redacted)."""
    return looks_redacted(value)
