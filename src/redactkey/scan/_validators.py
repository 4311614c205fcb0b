"""What a candidate must also be to count: checksums, decodable headers, entropy, id shapes.

Each validator takes the matched secret and answers yes or no; a rule names one in
`rules.toml`. The helpers here also make the rules' example values (`fake`, and tokens
whose checksum holds), so every example is built at run time and none is a real key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
import string
import zlib
from collections import Counter
from collections.abc import Callable

__all__ = [
    "VALIDATORS",
    "base62_crc32",
    "fake",
    "is_known_id",
    "looks_high_entropy",
    "shannon_entropy",
    "with_checksum",
]

ALPHABETS = {
    "alnum": string.ascii_letters + string.digits,
    "urlsafe": string.ascii_letters + string.digits + "_-",
    "hex": "0123456789abcdef",
    "upper": string.ascii_uppercase + string.digits,
    "lower": string.ascii_lowercase + string.digits,
    "letters": string.ascii_letters,
    "digits": string.digits,
}


def fake(n: int, alphabet: str = ALPHABETS["alnum"], *, seed: str = "") -> str:
    """`n` characters of `alphabet` that look random and are the same on every run: the
    bodies of the rules' examples (shaped like keys, valid for nothing)."""
    out: list[str] = []
    counter = 0
    while len(out) < n:
        digest = hashlib.sha256(f"redactkey-example:{seed}:{n}:{counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:n])


_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def base62_crc32(text: str) -> str:
    """The 6 characters that end a GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) or npm
    (`npm_`) token: the CRC32 of the 30 random characters before them, in base62."""
    number = zlib.crc32(text.encode("ascii", "replace"))
    digits = []
    for _ in range(6):  # 62**6 > 2**32: six digits hold any CRC32
        number, digit = divmod(number, 62)
        digits.append(_BASE62[digit])
    return "".join(reversed(digits))


def with_checksum(prefix: str, seed: str) -> str:
    """A token of the checksummed shape whose checksum holds (valid for nothing)."""
    body = fake(30, seed=seed)
    return prefix + body + base62_crc32(body)


def _checksummed(token: str) -> bool | None:
    """For a token of a checksummed shape (a 4-character prefix, then 30 or 70 letters and
    digits and 6 more: GitHub's tokens and refresh tokens, npm's), whether its checksum
    holds; None for any other shape."""
    body = token[4:]
    if len(body) not in (36, 76) or not body.isascii() or not body.isalnum():
        return None
    return base62_crc32(body[:-6]) == body[-6:]


def _jwt(token: str) -> bool:
    head = token.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(b"{") and b'"' in decoded


def _basic(token: str) -> bool:
    """`user:password` once decoded; the bytes need not be UTF-8 (a Latin-1 password)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    _user, colon, password = decoded.partition(b":")
    if not colon or len(decoded) < 3 or not password:
        return False
    return all(b >= 0x20 and b != 0x7F for b in decoded)


def _credential(token: str) -> bool:
    """A value after an explicit auth scheme: has a digit, or mixed case (not prose)."""
    if any(c.isdigit() for c in token):
        return True
    return any(c.isupper() for c in token) and any(c.islower() for c in token) and len(token) >= 12


VALIDATORS: dict[str, Callable[[str], bool]] = {
    "checksum-holds": lambda token: _checksummed(token) is not False,
    "checksum-fails": lambda token: _checksummed(token) is False,
    "jwt": _jwt,
    "basic": _basic,
    "credential": _credential,
    "credential-20": lambda token: _credential(token) and len(token) >= 20,
    "varied": lambda token: len(set(token)) > 4,
    # a private key's body holds a base64 run (a line of it), not prose
    "pem-body": lambda body: re.search(r"[A-Za-z0-9+/]{24}", body) is not None,
}


# Ids a provider names by their prefix, and data URLs: never credentials.
_NAMED_ID = re.compile(
    r"""(?x)
    (?:chatcmpl|cmpl|req|msg|call|toolu|srvtoolu|fp|resp|rs|fc|ctc|ig|mcp|ws|file|asst|thread|run
      |step|batch|evt|ft|ftjob|vs|org|proj|user|sess|span|trace|container|cntr|ci|item|gen
      |compl|conv|embd|modr|upload|part|sbx|wf)[-_][A-Za-z0-9_\-]{4,}
    | data:[\w/+.\-]+;base64,[A-Za-z0-9+/=\s]*
    """
)
# UUIDs and hex digests: ids in text; under a credential's name, a credential's shape.
_DIGEST = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|(?:sha(?:1|256|384|512)[:\-=])?[0-9a-f]{32,128}|[0-9A-F]{32,128}"
)


def is_known_id(text: str) -> bool:
    """Ids, digests and data URLs that look random but are never credentials (in text)."""
    return _NAMED_ID.fullmatch(text) is not None or _DIGEST.fullmatch(text) is not None


def shannon_entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


_TOKENISH = re.compile(r"[A-Za-z0-9+/=_.~\-:]{16,1024}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def looks_high_entropy(text: str) -> bool:
    """A token-shaped value random enough to be a credential (used only under credential-named
    fields, `token`, `github_token`, `db_password`): 16+ token characters, letters and
    digits, and high Shannon entropy. A hex digest or a UUID there is a credential too (an
    OAuth token of 40 hex); a provider's named id (`chatcmpl-…`) never is."""
    if _TOKENISH.fullmatch(text) is None or _NAMED_ID.fullmatch(text) is not None:
        return False
    if not any(c.isdigit() for c in text) or not any(c.isalpha() for c in text):
        return False
    if _DIGEST.fullmatch(text) is not None:
        return True
    threshold = 3.0 if _HEX.fullmatch(text) else min(3.6, math.log2(len(text)) - 0.6)
    return shannon_entropy(text) >= threshold
