"""Values that are already redacted (ours and the placeholder styles other projects use),
which the commands that look for secrets pass over, and keys that are made up: what
counts and why is docs/decisions/0072-check-placeholders-near-misses-baselines.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "AUTH_SCHEMES",
    "DOCUMENTED_EXAMPLES",
    "PLACEHOLDER_STYLES",
    "PlaceholderStyle",
    "looks_redacted",
    "made_up",
]

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
        # openai-dotnet's test-proxy recordings; PyGithub's ReplayData
        "sanitized", "client_secret_removed",
    )
)
# Keys that providers print in their own documentation (AWS's EXAMPLE pair, Stripe's
# public test key, the Firebase SDK's demo API keys): public, and never a leak.
DOCUMENTED_EXAMPLES = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",
        "AKIAI44QH8DHBEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
        "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
        "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
        "AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
        "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
        "AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
        "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
        "AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
        "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
        "AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
        "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
        "AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
        "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
        "AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
        "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
        "AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
        "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
    }
)
# The start of example tokens that documentation prints (jwt.io's and Wikipedia's JWTs,
# header and payload; GitHub's OAuth documentation's refresh token): public, never a leak.
DOCUMENTED_PREFIXES = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
    "IjoxNTE2MjM5MDIyfQ",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJsb2dnZWRJbkFzIjoiYWRtaW4iLCJpYXQiOjE0MjI3Nzk2Mzh9",
    "ghr_1B4a2e77838347a7E420ce178F2E7c6912E169246c3CE1ccbF66C46812d16D5B1A9Dc86A1498",
)
# A provider prefix (`ghp_`, `sk-proj-`, `xoxb-`) in front of a body that is no key.
_PREFIX = re.compile(r"^(?:[A-Za-z0-9]{1,12}[-_.]){1,3}")
# Prefixes glued to their body with no separator (AWS key ids, Google API keys).
_GLUED_PREFIX = re.compile(r"^(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9]|AIza)")
_FILLER = frozenset("xX0*.-_#")
# The name of a variable where its value should be (`?access_token=ACCESS_TOKEN`,
# `YOUR_API_KEY`): upper-case words joined by underscores, none of them long or random.
_VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9]{0,15}(?:_[A-Z0-9]{1,16}){1,6}")

_PLACEHOLDER_SHAPES = re.compile(
    r"""(?x)^(?:
        <[A-Za-z0-9_.:-]{1,64}>            # <OPENAI_API_KEY>, <redacted>
      | \[[A-Za-z0-9_.:-]{1,64}\]          # [REDACTED], [REDACTED:SLOT], [FILTERED]
      | \{\{[A-Za-z0-9_. -]{1,64}\}\}      # {{API_KEY}}
      | \$\{[A-Za-z0-9_.:-]{1,64}\}        # ${API_KEY}, ${env:TOKEN}
      | \{[A-Za-z_][A-Za-z0-9_]{0,63}\}    # {api_key}
      | \$[A-Za-z_][A-Za-z0-9_$]{2,63}      # $OPENAI_API_KEY, $super$ecret
      | \$\(.{1,200}\)                     # $(vault read -field=token ...)
      | [A-Za-z0-9_/+=-]{0,60}EXAMPLE(?:KEY)?[A-Za-z0-9_/+=-]{0,8}  # AKIA...EXAMPLE
      | [A-Za-z0-9_-]{0,40}-X{3,}          # AUTHORIZATION-XXX, OPENAI-ORG-XXX
      | X{3,} | \*{3,} | \.{3,}
      | \*{1,3}[A-Za-z_]{3,32}\*{1,3}       # **REDACTED**
      | [A-Za-z0-9_-]{1,16}(?:\.{3}|…)      # sk-..., AIza..., sk-ant-…
      | (?:fake|dummy|mock|test|example|your)[A-Za-z0-9_-]{0,40}
    )$""",
    re.IGNORECASE,
)
AUTH_SCHEMES = re.compile(r"^(?:bearer|basic|token|digest|apikey|api-key)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class PlaceholderStyle:
    """A placeholder style met in real recordings, with an example and where it is used."""

    name: str
    example: str
    seen_in: str


PLACEHOLDER_STYLES: tuple[PlaceholderStyle, ...] = (
    PlaceholderStyle("angle-name", "<AUTH_TOKEN>", "crmne/ruby_llm VCR cassettes"),
    PlaceholderStyle("bearer-angle", "Bearer <OPENAI_API_KEY>", "crmne/ruby_llm VCR cassettes"),
    PlaceholderStyle("aws-sigv4-composite",
                     "AWS4-HMAC-SHA256 Credential=<AWS_ACCESS_KEY_ID>/<DATE>/<AWS_REGION>/"
                     "bedrock/aws4_request, SignedHeaders=host;x-amz-content-sha256;"
                     "x-amz-date, Signature=<AWS_SIGV4_SIGNATURE>",
                     "crmne/ruby_llm Bedrock cassettes"),
    PlaceholderStyle("brackets", "[REDACTED]",
                     "JupiterOne/graph-okta Polly.JS recordings (redactedRequestHeaders)"),
    PlaceholderStyle("basic-brackets", "Basic [REDACTED]", "redactkey fixtures"),
    PlaceholderStyle("filtered", "FILTERED",
                     "cal-itp/data-infra vcrpy cassettes (Authorization header)"),
    PlaceholderStyle("redacted", "REDACTED",
                     "AxelOhlander/upsales-python-sdk vcrpy cassettes (cookie header)"),
    PlaceholderStyle("starred", "**REDACTED**", "langchain-ai/langchain-aws cassettes"),
    PlaceholderStyle("bracket-name", "[FACE_API_KEY]", "andrewdieken/clockface Ruby VCR cassettes"),
    PlaceholderStyle("stars", "***", "dvcrn/ex_openai ExVCR cassettes (filter_request_headers)"),
    PlaceholderStyle("x-run", "XXXXXX",
                     "pydantic/pydantic-ai vcrpy cassettes (openai-organization)"),
    PlaceholderStyle("dummy", "DUMMY_GOOGLE_API_KEY",
                     "traceloop/openllmetry google-generativeai cassettes"),
    PlaceholderStyle("test-key", "test_openai_api_key",
                     "open-telemetry/opentelemetry-python-contrib openai-v2 cassettes"),
    PlaceholderStyle("fake", "fake-authz-header",
                     "datopian/giftless vcrpy cassettes (AWS authorization header)"),
    PlaceholderStyle("fake-underscore", "fake_api_key",
                     "CardTapp/yext-api Ruby VCR cassettes (api_key query parameter)"),
    PlaceholderStyle("query-filtered", "key=FILTERED", "vcrpy filter_query_parameters"),
)

# A placeholder token inside a longer value.
_TOKEN = re.compile(
    r"<[A-Za-z0-9_.:-]{1,64}>|\[[A-Za-z0-9_.:-]{1,64}\]|\{\{[A-Za-z0-9_. -]{1,64}\}\}"
    r"|\*{1,3}REDACTED\*{1,3}|\bFILTERED\b|\bREDACTED\b",
)
# What must not be left once the placeholders are taken out: a long random-looking run
# (`x-amz-content-sha256` is words joined by dashes; a key or signature is one run).
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+]{16,}")


def _composite(text: str) -> bool:
    """A value with placeholders in every credential part and only fixed syntax around."""
    if not _TOKEN.search(text):
        return False
    rest = _TOKEN.sub("", text)
    for run in _RANDOM_RUN.findall(rest):
        if any(c.isdigit() for c in run) and any(c.isalpha() for c in run):
            return False
        if len(run) >= 20 and run.isalpha() and 0.3 <= sum(map(str.isupper, run)) / len(run) <= 0.7:
            return False  # letters only, half of them capitals: random (Hugging Face tokens)
    return True


def looks_redacted(value: str, placeholder_check: Callable[[str], bool] | None = None) -> bool:
    """Whether a value is a placeholder: ours (`placeholder_check`) or a common third-party one.

    Read once, without recursion: the value, the value without its auth scheme, and its part
    after the first `:` (`user:[REDACTED]`) or `=` (`key=FILTERED`)."""
    text = value.strip().strip("'\"")
    if not text:
        return True
    bare = AUTH_SCHEMES.sub("", text).strip()
    candidates = [text, bare]
    if ":" in bare and not bare.startswith(("http:", "https:")):
        candidates.append(bare.partition(":")[2])  # basic-auth user:password
    if "=" in bare and "&" not in bare and " " not in bare:
        candidates.append(bare.partition("=")[2])  # a query parameter with its value redacted
    for index, candidate in enumerate(candidates):
        if not candidate:
            continue
        if placeholder_check is not None and placeholder_check(candidate):
            return True
        if candidate.lower() in _THIRD_PARTY_PLACEHOLDERS or _PLACEHOLDER_SHAPES.match(candidate):
            return True
        if candidate in DOCUMENTED_EXAMPLES or candidate.startswith(DOCUMENTED_PREFIXES) \
                or _filler(candidate):
            return True
        if _VARIABLE_NAME.fullmatch(candidate) and sum(c.isdigit() for c in candidate) * 4 \
                < len(candidate):
            return True
        if index >= 2 and _composite(candidate):
            return True
    return _composite(text)


def _body(value: str) -> str:
    """`value` without its provider prefix (`ghp_`, `sk-proj-`, `AKIA`, `AIza`)."""
    body = _PREFIX.sub("", value, count=1) if len(value) > 8 else value
    return _GLUED_PREFIX.sub("", value, count=1) if body == value else body


def _filler(text: str) -> bool:
    """One character repeated, or runs of `x`/`0`, after an optional provider prefix:
    `ghp_xxxxxxxx…`, `sk-0000…`, `AAAAAAAA`, `sk-proj-XXXX-XXXX`, `AKIAXXXX…`, `AIzaaaa…`."""
    if len(text) < 4:
        return False
    if len(set(text)) == 1:
        return True
    body = _body(text)
    if len(body) < 4:
        return False
    if len(set(body)) == 1 or set(body) <= _FILLER:
        return True
    # `sk-ant-api03-000…000AA`: one character makes nearly all of a long body (a random
    # key of 16 or more characters never looks like this)
    return len(body) >= 16 and max(body.count(c) for c in set(body)) * 10 >= len(body) * 9


# Words a made-up key spells in its body (`sk-fake-…`, `…-example-…`, `…notreal…`); `test`
# counts only at the end (`…Ntest`), `xxxx` as a mask
# (in lower case, capitalised or upper case: a random body spells `fAKe` too often)
_MADE_UP_WORDS = re.compile("|".join(
    f"{word}|{word.capitalize()}|{word.upper()}"
    for word in ("fake", "dummy", "example", "sample", "placeholder", "notreal", "invalid",
                 "xxxx")))
_REPEATED_CHARACTER = re.compile(r"(.)\1{5}")
_DIGIT_RUN = re.compile(r"[0-9]{6,}")
_TOKEN_SHAPED = re.compile(r"[A-Za-z0-9_\-.+/=~]{8,512}")


def made_up(value: str) -> bool:
    """Whether a value shaped like one token is a made-up key rather than an issued one: its
    body steps through the alphabet or the digits, repeats a character or a block, or
    spells a fake (the shapes and their odds: decision 0072)."""
    if _TOKEN_SHAPED.fullmatch(value) is None:
        return False
    body = _body(value)
    if len(body) < 8:
        return False
    if (_MADE_UP_WORDS.search(body) or body.lower().endswith("test")
            or _REPEATED_CHARACTER.search(body)):
        return True
    return _repeats_a_block(body) or _steps(c.lower() for c in body if c.isalpha()) \
        or any(_steps(digits) for digits in _DIGIT_RUN.findall(body))


def _repeats_a_block(body: str, size: int = 8) -> bool:
    seen: dict[str, int] = {}
    for at in range(len(body) - size + 1):
        first = seen.setdefault(body[at:at + size], at)
        if at - first >= size:
            return True
    return False


def _steps(chars: Iterable[str], run: int = 6) -> bool:
    """Whether `chars` (a doubled character counted once) step by one the same way `run`
    times running: `abcdef`, `zyxwvu`, `012345`."""
    length, step, last = 1, 0, ""
    for char in chars:
        if char == last:
            continue
        delta = ord(char) - ord(last) if last else 0
        if delta in (1, -1) and (delta == step or length == 1):
            length, step = length + 1, delta
            if length >= run:
                return True
        else:
            length, step = 1, 0
        last = char
    return False
