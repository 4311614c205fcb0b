"""Pattern detectors for credentials nobody told us about.

Two sources of rules, both run behind one keyword prefilter (an Aho-Corasick scan for
the literal every rule needs, so a string with no keyword costs one pass in compiled
code, `Literals`):

- detect-secrets' regex plugins, used as plugin *classes*: their compiled `denylist`
  patterns are read the first time one of their rules fires (`PluginPattern`).
  detect-secrets' global settings (`get_settings()`, `transient_settings`) are never
  read nor written here, so nothing leaks in either direction.
- our own rules for the keys detect-secrets' defaults miss (LLM providers and friends).

Known id shapes (`chatcmpl-`, `msg_`, UUIDs, hex digests, base64 blobs, ...) are never
reported, and a match must stand on its own: not glued to the token characters around it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import hashlib
import importlib
import itertools
import logging
import math
import re
import string
import sys
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final, NamedTuple

import ahocorasick_rs


@contextmanager
def _host_state_kept() -> Iterator[None]:
    """Undo what detect-secrets does to process-wide logging and warnings when it loads."""
    showwarning = warnings.showwarning
    logger = logging.getLogger("detect-secrets")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    try:
        yield
    finally:
        if warnings.showwarning is not showwarning:
            # it turned capturing on (the host had not): turn it off, restoring the hook
            logging.captureWarnings(False)
            warnings.showwarning = showwarning
        logger.handlers = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def _plugin_class(module: str, name: str) -> type:
    """A detect-secrets plugin class, imported on first use. detect-secrets sets up logging
    when its modules load (`logging.captureWarnings(True)` and a stderr handler on its
    logger), which would swallow the host program's warnings; loading it must leave the
    host's logging and warnings as they were. (One thread at a time: a second thread
    saving the state while the first loads would save detect-secrets' changes.)"""
    with _PLUGIN_LOAD, _host_state_kept():
        plugin: type = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
    return plugin


_PLUGIN_LOAD = threading.Lock()


__all__ = [
    "DEFAULT_RULES",
    "NEAR_MISS_RULES",
    "Detectors",
    "Literals",
    "Rule",
    "Span",
    "base62_crc32",
    "fake",
    "grows_linearly",
    "is_known_id",
    "looks_high_entropy",
    "matches_near",
    "shannon_entropy",
]


class Span(NamedTuple):
    """A half-open range of text to redact, the rule that found it and its label."""

    start: int
    end: int
    rule: str
    slot: str | None


_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


class DeferredPattern:
    """A regular expression compiled the first time it is used, standing in for the
    `re.Pattern` it compiles to (the methods a rule's pattern is used through).

    Compiling every rule's pattern at import costs more than most runs spend matching:
    a rule runs only where one of its keywords occurs. Equal (and hashed) by its text and
    flags, without compiling it, so rules made of it key caches as cheaply as before.
    """

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None
        if _GLOBAL_FLAGS.match(pattern):
            # inline flags (`(?i)`) count as the pattern's own: compile now to read them
            self._compiled = re.compile(pattern, flags)
            self.flags = self._compiled.flags

    def __repr__(self) -> str:
        return f"DeferredPattern({self.pattern!r}, {self.flags})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DeferredPattern):
            return (self.pattern, self.flags) == (other.pattern, other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((DeferredPattern, self.pattern, self.flags))

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled once; compiling twice in two threads is harmless)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    @property
    def groups(self) -> int:
        return self.compiled.groups

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(text, pos, endpos)

    def fullmatch(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(text, pos, endpos)

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)


class PluginPattern(DeferredPattern):
    """Pattern `index` of a detect-secrets plugin's `denylist`, imported the first time its
    text or compiled form is needed.

    A plugin module loads `requests` for detect-secrets' verifiers (unused here): about
    100 ms of every import of redactkey, and thousands of objects every full collection
    walks. A run in which none of these rules fires never loads it. The flags are
    declared with the rule (the keyword gate reads them when the detectors are built);
    the test suite checks them against the plugin's own. Equal by plugin and index.
    """

    __slots__ = ("where",)

    def __init__(self, module: str, plugin: str, index: int, flags: int) -> None:
        self.where = (module, plugin, index)
        self.flags = flags
        self._compiled = None

    def __repr__(self) -> str:
        module, plugin, index = self.where
        return f"PluginPattern({module}.{plugin}.denylist[{index}])"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PluginPattern):
            return self.where == other.where
        return NotImplemented

    def __hash__(self) -> int:
        return hash((PluginPattern, self.where))

    @property
    def pattern(self) -> str:  # type: ignore[override]
        return self.compiled.pattern

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            module, plugin, index = self.where
            found: re.Pattern[str] = _plugin_class(module, plugin).denylist[index]  # type: ignore[attr-defined]
            compiled = self._compiled = found
        return compiled


def compiled(pattern: Pattern) -> re.Pattern[str]:
    """The `re.Pattern` a rule matches with."""
    return pattern.compiled if isinstance(pattern, DeferredPattern) else pattern


#: What a rule matches with: a compiled pattern, or one compiled on first use.
Pattern = re.Pattern[str] | DeferredPattern


@dataclass(frozen=True)
class Rule:
    """One detector, declared once: a compiled pattern, the literals that gate it, the group
    holding the secret, and its own examples.

    `keywords` are case-sensitive literals; the pattern only runs on text containing one,
    and every one of `also` (literals each match holds too: the `@` of a URL's userinfo
    beside its `://`), so a text with the keyword but not those is passed over.
    `validate` can veto a match (it gets the matched secret text). A rule that is not
    `bounded` gets our boundary check after the match: a secret glued to token characters
    on either side is part of something bigger and is dropped. `ids=True` keeps a secret
    shaped like a known id or digest (a hex value after an explicit `Bearer` is a
    credential, not a digest). `shape` says what the rule matches, for people;
    `examples` must fire the rule and `not_examples` must not (the test suite runs both).
    """

    name: str
    pattern: Pattern
    keywords: tuple[str, ...]
    group: int = 0
    validate: Callable[[str], bool] | None = field(default=None, compare=False)
    bounded: bool = True
    shape: str = field(default="", compare=False)
    examples: tuple[str, ...] = field(default=(), compare=False)
    not_examples: tuple[str, ...] = field(default=(), compare=False)
    ids: bool = False
    near_miss: bool = False
    also: tuple[str, ...] = ()


# Token characters: a key glued to more of them is part of something bigger (a slug, a blob).
# A percent escape (`%3D`) or a JSON escape (`\n`, `\u0020`) in front still counts as a break.
_B = r"(?:(?<![A-Za-z0-9_\-])|(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4}))"
_E = r"(?![A-Za-z0-9_\-])"

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_URLSAFE = _ALNUM + "_-"
_LOWER = "abcdefghijklmnopqrstuvwxyz0123456789"
_HEXDIGITS = "0123456789abcdef"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def fake(n: int, alphabet: str = _ALNUM, *, seed: str = "") -> str:
    """`n` characters of `alphabet` that look random and are the same on every run: the
    bodies of the rules' examples (shaped like keys, valid for nothing)."""
    out: list[str] = []
    counter = 0
    while len(out) < n:
        digest = hashlib.sha256(f"redactkey-example:{seed}:{n}:{counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:n])


def rule(
    name: str,
    regex: str,
    *,
    keywords: Sequence[str],
    shape: str,
    examples: Sequence[str],
    not_examples: Sequence[str] = (),
    group: int = 0,
    validate: Callable[[str], bool] | None = None,
    ids: bool = False,
    flags: int = 0,
    bounded: bool = False,
    near_miss: bool = False,
    also: Sequence[str] = (),
) -> Rule:
    """Declare one of our rules. The pattern starts with a literal (so the regex engine can
    jump to it) and is bounded everywhere: its cost grows linearly with the text."""
    return Rule(
        name,
        DeferredPattern(regex, flags),
        tuple(keywords),
        group,
        validate,
        bounded=bounded,
        shape=shape,
        examples=tuple(examples),
        not_examples=tuple(not_examples),
        ids=ids,
        near_miss=near_miss,
        also=tuple(also),
    )


_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def base62_crc32(text: str) -> str:
    """The 6 characters that end a GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) or npm
    (`npm_`) token: the CRC32 of the 30 random characters before them, in base62
    (`0-9A-Za-z`), padded with leading zeros."""
    number = zlib.crc32(text.encode("ascii", "replace"))
    digits = []
    for _ in range(6):  # 62**6 > 2**32: six digits hold any CRC32
        number, digit = divmod(number, 62)
        digits.append(_BASE62[digit])
    return "".join(reversed(digits))


def _checksummed(token: str) -> bool | None:
    """For a token of the checksummed shape (a 4-character prefix, then 30 + 6 letters
    and digits), whether its checksum holds; None for any other shape."""
    body = token[4:]
    if len(body) != 36 or not body.isascii() or not body.isalnum():
        return None
    return base62_crc32(body[:30]) == body[30:]


def _checksum_holds(token: str) -> bool:
    """A GitHub or npm token whose checksum holds, or of a shape that carries none."""
    return _checksummed(token) is not False


def _checksum_fails(token: str) -> bool:
    return _checksummed(token) is False


def _with_checksum(prefix: str, seed: str) -> str:
    """An example token of the checksummed shape whose checksum holds (valid for nothing)."""
    body = fake(30, seed=seed)
    return prefix + body + base62_crc32(body)


def _jwt_ok(token: str) -> bool:
    head = token.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(b"{") and b'"' in decoded


def _basic_ok(token: str) -> bool:
    """`user:password` once decoded; the bytes need not be UTF-8 (a Latin-1 password)."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    _user, colon, password = decoded.partition(b":")
    if not colon or len(decoded) < 3 or not password:
        return False
    return all(b >= 0x20 and b != 0x7F for b in decoded)


def _credential_ok(token: str) -> bool:
    """A value after an explicit auth scheme: has a digit, or mixed case (not prose)."""
    if any(c.isdigit() for c in token):
        return True
    return any(c.isupper() for c in token) and any(c.islower() for c in token) and len(token) >= 12


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


_JWT_HEAD = _b64url(b'{"alg":"HS256","typ":"JWT"}')
_JWT_NONE = _b64url(b'{"alg":"none"}')
_JWT_BODY = _b64url(b'{"sub":"1234567890","name":"Example","iat":1516239022}')

# A scheme word, then the spaces (or their URL-encoded forms) before the credential.
_GAP = r"(?:[ \t]{1,8}|%20|\+)"
# A credential after an explicit scheme: bounded, so a megabyte of token characters after
# `Bearer ` costs one bounded attempt, not a scan to the end of the text.
_CRED_CHARS = r"A-Za-z0-9\-._~+/"
_CRED = r"([A-Za-z0-9\-._~+/]{8,16384}={0,3})"


def _lead(*prefixes: str, glue: str = r"A-Za-z0-9_\-") -> str:
    """Literal prefixes, each accepted only where it starts a token: not glued to a `glue`
    character before it, unless a percent escape or a JSON escape sits there. The literal
    comes first so the regex engine jumps to it, and a prefix inside a long run of token
    characters is refused at once, so the cost stays linear in the text."""
    brk = (rf"(?:(?<![{glue}])|(?<=%[0-9A-Fa-f]{{2}})|(?<=\\[nrtbf])"
           rf"|(?<=\\u[0-9A-Fa-f]{{4}}))")
    return "(?:" + "|".join(f"{re.escape(p)}(?<={brk}{re.escape(p)})" for p in prefixes) + ")"


def _named(names: Sequence[str], body: str) -> str:
    """A value of shape `body` right after a name that says what it is: `NAME=value`,
    `"name": "value"`, `name: value`, `Name(api_key="value")`."""
    return (
        _lead(*names)
        + r"[A-Za-z0-9_.\-]{0,30}?(?:\\?[\"'])?[ \t]{0,4}"
        r"(?:[:=]|\([ \t]{0,4}(?:[A-Za-z_]{1,16}[ \t]{0,4}=)?)[ \t]{0,4}(?:\\?[\"'])?"
        "(" + body + r")(?![A-Za-z0-9_\-])"
    )


def _cased(*words: str) -> tuple[str, ...]:
    return tuple(sorted({f for w in words for f in (w.lower(), w.upper(), w.capitalize(), w)}))


_OWN_RULES: tuple[Rule, ...] = (
    rule(
        "openai-api-key",
        _lead("sk-proj-", "sk-svcacct-", "sk-admin-") + r"[A-Za-z0-9_\-]{20,300}",
        keywords=("sk-proj-", "sk-svcacct-", "sk-admin-"),
        shape="`sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`",
        examples=(
            "sk-" + "proj-" + fake(156, _URLSAFE, seed="openai-proj"),
            "key: sk-" + "svcacct-" + fake(120, _URLSAFE, seed="openai-svc") + " (rotated)",
        ),
        not_examples=("mask-proj-" + fake(40, seed="mask"), "sk-" + "proj-short"),
    ),
    rule(
        "openai-api-key",
        _lead("sk-") + r"[A-Za-z0-9]{32,200}",
        keywords=("sk-",),
        shape="legacy `sk-` + 32+ letters and digits",
        examples=("sk-" + fake(48, seed="openai-legacy"),
                  "sk-" + fake(20, seed="t3a") + "T3BlbkFJ" + fake(20, seed="t3b")),
        not_examples=("sk-" + fake(20, seed="short"), "task-" + fake(40, seed="slug")),
    ),
    rule(
        "anthropic-api-key",
        _lead("sk-ant-") + r"[A-Za-z0-9_\-]{20,300}",
        keywords=("sk-ant-",),
        shape="`sk-ant-api03-…`, `sk-ant-admin01-…`",
        examples=("sk-" + "ant-api03-" + fake(93, _URLSAFE, seed="anthropic") + "AA",),
        not_examples=("sk-" + "ant-short",),
    ),
    rule(
        "openrouter-api-key",
        _lead("sk-or-") + r"(?:v\d-)?[A-Za-z0-9_\-]{20,200}",
        keywords=("sk-or-",),
        shape="`sk-or-v1-` + 64 hex",
        examples=("sk-" + "or-v1-" + fake(64, _HEXDIGITS, seed="openrouter"),),
    ),
    rule(
        "elevenlabs-api-key",
        _lead("sk_") + r"[0-9a-f]{48}",
        keywords=("sk_",),
        shape="`sk_` + 48 hex",
        examples=("xi-api-key: sk" + "_" + fake(48, _HEXDIGITS, seed="elevenlabs"),),
        not_examples=("sk" + "_" + fake(40, _HEXDIGITS, seed="el-short"),),
        ids=True,
    ),
    rule(
        "google-api-key",
        _lead("AIza") + r"[0-9A-Za-z_\-]{35}",
        keywords=("AIza",),
        shape="`AIza` + 35",
        examples=("https://example.googleapis.com/v1?key=AI" + "za"
                  + fake(35, _URLSAFE, seed="g"),),
        # gitleaks' rule tests (fps): glued into a longer token, a longer run, wrong case
        not_examples=("xAIza" + fake(35, seed="glued") + "xyz",
                      "GWw4hjABFzZCGiRpmlDyDdo87Jn9BN9THUA47muVRNunLxsa82tMAdvmrhOqNkRKiYMEAFbTJ"
                      "AIzaTesb6Tscfcni8vIpWZqNCXFDFslJtVSvFDq",
                      "AIzaTesb6Tscfcni8vIpWZqNCXFDFslJtVSvFDqabcd123",
                      "AIZASYCO2CXRMC9ELSKLHLHRMBSWDEVEDZTLO2O"),
    ),
    rule(
        "google-oauth-token",
        _lead("ya29.") + r"[0-9A-Za-z_\-.]{20,2000}(?<!\.)",
        keywords=("ya29.",),
        shape="`ya29.…`",
        examples=("ya" + "29.a0Af" + fake(150, _URLSAFE, seed="ya29"),),
    ),
    rule(
        "google-oauth-client-secret",
        _lead("GOCSPX-") + r"[A-Za-z0-9_\-]{24,40}",
        keywords=("GOCSPX-",),
        shape="`GOCSPX-` + 28",
        examples=('"client_secret": "GOC' + "SPX-" + fake(28, _URLSAFE, seed="gocspx") + '"',
                  "GOC" + "SPX---" + fake(26, _URLSAFE, seed="gocspx2")),
        not_examples=("GOCSPX-test-secret", "GOCSPX-xxxxx"),
    ),
    rule(
        "huggingface-token",
        _lead("hf_") + r"[A-Za-z0-9]{34}",
        keywords=("hf_",),
        shape="`hf_` + 34 letters",
        examples=("huggingface-cli login --token hf" + "_" + fake(34, string.ascii_letters,
                                                                  seed="hf"),),
        # gitleaks' rule tests (fps): identifiers that merely contain `hf_`
        not_examples=("- (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
                      "_kHMSymptomhf_generatedByHomeAppForDebuggingPurposesKey,",
                      "&hf_servingcellpriorityparametersdescription_h_prio),",
                      'div[data-cel-widget="desktop-rhf_SponsoredProductsRemoteRHFSearch'
                      'EXPSubsK2ClickPagination"]'),
    ),
    rule(
        "huggingface-org-token",
        _lead("api_org_") + r"[A-Za-z0-9]{30,40}",
        keywords=("api_org_",),
        shape="`api_org_` + 34 letters",
        examples=("use_auth_token='api" + "_org_" + fake(34, string.ascii_letters, seed="hforg")
                  + "'",),
        not_examples=("const api_org_controller = require('./controllers');",
                      # gitleaks' rule tests (fps)
                      'public static final String API_ORG_EXIST = "APIOrganizationExist";',
                      "def _api_org_96726c78_4ae3_402f_b08b_7a78c6903d2a(self, method, url):"),
    ),
    rule(
        "groq-api-key",
        _lead("gsk_") + r"[A-Za-z0-9]{40,80}",
        keywords=("gsk_",),
        shape="`gsk_` + 52",
        examples=("gs" + "k_" + fake(52, seed="groq"),),
        not_examples=("https://news.example.com/gsk-boosts-lung-cancer-survival-in-trial",),
    ),
    rule(
        "replicate-token",
        _lead("r8_") + r"[A-Za-z0-9]{30,80}",
        keywords=("r8_",),
        shape="`r8_` + 37",
        examples=("r8" + "_" + fake(37, seed="replicate"),),
    ),
    rule(
        "xai-api-key",
        _lead("xai-") + r"[A-Za-z0-9_]{40,120}",
        keywords=("xai-",),
        shape="`xai-` + 80 (underscores too)",
        examples=("xa" + "i-" + fake(80, seed="xai"),
                  "xa" + "i-" + fake(30, seed="xai1") + "_" + fake(49, seed="xai2")),
    ),
    rule(
        "perplexity-api-key",
        _lead("pplx-") + r"[A-Za-z0-9]{40,80}",
        keywords=("pplx-",),
        shape="`pplx-` + 48",
        examples=("pp" + "lx-" + fake(48, seed="pplx"),),
    ),
    rule(
        "langsmith-api-key",
        _lead("lsv2_") + r"[a-z]{2}_[A-Za-z0-9_]{20,120}",
        keywords=("lsv2_",),
        shape="`lsv2_pt_…`, `lsv2_sk_…`",
        examples=("ls" + "v2_pt_" + fake(32, _HEXDIGITS, seed="ls1") + "_"
                  + fake(10, _HEXDIGITS, seed="ls2"),),
    ),
    rule(
        "tavily-api-key",
        _lead("tvly-") + r"[A-Za-z0-9_\-]{20,80}",
        keywords=("tvly-",),
        shape="`tvly-…`",
        examples=("tv" + "ly-dev-" + fake(32, seed="tavily"),),
    ),
    rule(
        "together-api-key",
        _lead("tgp_v1_") + r"[A-Za-z0-9_\-]{40,60}",
        keywords=("tgp_v1_",),
        shape="`tgp_v1_` + 43",
        examples=("Together(api_key=\"tgp" + "_v1_" + fake(43, _URLSAFE, seed="together") + '")',),
        not_examples=("tgp_v1_" + "short",),
    ),
    rule(
        "cerebras-api-key",
        _lead("csk-") + r"[a-z0-9]{40,64}",
        keywords=("csk-",),
        shape="`csk-` + 48 lower-case letters and digits",
        examples=("CEREBRAS_API_KEY=cs" + "k-" + fake(48, _LOWER, seed="cerebras"),),
        not_examples=("csk-" + "test",),
    ),
    rule(
        "nvidia-api-key",
        _lead("nvapi-") + r"[A-Za-z0-9_\-]{60,72}",
        keywords=("nvapi-",),
        shape="`nvapi-` + 64",
        examples=("api_key=\"nv" + "api-" + fake(64, _URLSAFE, seed="nvidia") + '"',),
        not_examples=("nvapi-" + "test123",),
    ),
    rule(
        "pinecone-api-key",
        _lead("pcsk_") + r"[A-Za-z0-9]{4,10}_[A-Za-z0-9]{40,100}",
        keywords=("pcsk_",),
        shape="`pcsk_` + 5-6 + `_` + 60+",
        examples=("PINECONE_API_KEY=pc" + "sk_" + fake(6, seed="pc1") + "_"
                  + fake(63, seed="pc2"),),
        not_examples=("PINECONE_API_KEY=pcsk_...",),
    ),
    rule(
        "wandb-api-key",
        _lead("wandb_v1_") + r"[A-Za-z0-9_]{60,100}",
        keywords=("wandb_v1_",),
        shape="`wandb_v1_` + 77",
        examples=("export WANDB_API_KEY=\"wan" + "db_v1_" + fake(27, seed="wb1") + "_"
                  + fake(49, seed="wb2") + '"',),
        not_examples=("| `WANDB_API_KEY` | Shell | `wandb_v1_xxxxx` |",),
    ),
    rule(
        "wandb-api-key",
        _named(_cased("wandb"), "[0-9a-f]{40}"),
        keywords=_cased("wandb"),
        group=1,
        shape="40 hex under a W&B name (`WANDB_API_KEY=…`, `wandb.login(key=…)`)",
        examples=("WANDB_API_KEY=" + fake(40, _HEXDIGITS, seed="wb40"),
                  'wandb.login(key="' + fake(40, _HEXDIGITS, seed="wb40b") + '")'),
        not_examples=("wandb commit " + fake(40, _HEXDIGITS, seed="wbc"),),
        ids=True,
    ),
    rule(
        "mistral-api-key",
        _named(_cased("mistral"), "[A-Za-z0-9]{32}"),
        keywords=_cased("mistral"),
        group=1,
        shape="32 letters and digits under a Mistral name (`MISTRAL_API_KEY=…`, "
              "`Mistral(api_key=…)`)",
        examples=("MISTRAL_API_KEY=" + fake(32, seed="mistral"),
                  'client = Mistral(api_key="' + fake(32, seed="mistral2") + '")'),
        not_examples=("mistral-large-latest answered in " + fake(12, seed="m3") + " ms",),
    ),
    rule(
        "cohere-api-key",
        _named(_cased("cohere", "co_api_key"), "[A-Za-z0-9]{40}"),
        keywords=_cased("cohere", "co_api_key"),
        group=1,
        shape="40 letters and digits under a Cohere name (`CO_API_KEY=…`, "
              "`cohere.ClientV2(api_key=…)`)",
        examples=("export CO_API_KEY=" + fake(40, seed="cohere"),
                  'co = cohere.ClientV2(api_key="' + fake(40, seed="cohere2") + '")'),
        not_examples=("CO_API_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",),
        validate=lambda v: len(set(v)) > 4,
    ),
    rule(
        "azure-openai-api-key",
        _named(_cased("azure_openai", "azure-openai", "AzureOpenAI", "azure_api_key"),
               "[A-Za-z0-9]{32}|[A-Za-z0-9]{84}"),
        keywords=_cased("azure_openai", "azure-openai", "AzureOpenAI", "azure_api_key"),
        group=1,
        shape="32 hex (or 84 letters and digits) under an Azure OpenAI name",
        examples=("AZURE_OPENAI_API_KEY=" + fake(32, _HEXDIGITS, seed="azure"),
                  'AzureOpenAI(api_key="' + fake(84, seed="azure84") + '")'),
        not_examples=("AZURE_OPENAI_ENDPOINT=https://example.openai.azure.com/",),
        ids=True,
    ),
    rule(
        "github-token",
        _lead("github_pat_") + r"[A-Za-z0-9_]{22,255}",
        keywords=("github_pat_",),
        shape="`github_pat_…`",
        examples=("github" + "_pat_" + fake(22, seed="ghpat1") + "_" + fake(59, seed="ghpat2"),),
    ),
    rule(
        "github-token",
        _lead("ghp_", "gho_", "ghu_", "ghr_") + r"[A-Za-z0-9_]{36,255}",
        keywords=("ghp_", "gho_", "ghu_", "ghr_"),
        validate=_checksum_holds,
        shape="`ghp_`, `gho_`, `ghu_`, `ghr_` + 30 + a 6-character CRC32 checksum",
        examples=(_with_checksum("gh" + "p_", "ghp"), _with_checksum("gh" + "u_", "ghu"),
                  _with_checksum("gh" + "r_", "ghr")),
        not_examples=("ghp_" + "x" * 8, "gh" + "p_" + fake(36, seed="ghp"),
                      # GitHub's documentation example (its checksum fails)
                      "ghu_16C7e42F292c6912E7710c838347Ae178B4a"),
    ),
    rule(
        "github-token",
        _lead("ghs_") + r"[A-Za-z0-9._\-]{36,2048}(?<![.\-])",
        keywords=("ghs_",),
        validate=_checksum_holds,
        shape="`ghs_` + 30 + checksum, `ghs_` + 36 with underscores, or `ghs_` wrapping a JWT",
        examples=(_with_checksum("gh" + "s_", "ghs"),
                  "gh" + "s_" + fake(20, seed="ghs1") + "_" + fake(15, seed="ghs2"),
                  "gh" + "s_" + _JWT_HEAD + "." + _JWT_BODY + "." + fake(43, _URLSAFE,
                                                                         seed="ghsjwt")),
    ),
    rule(
        "aws-access-key-id",
        _lead("AKIA", "ASIA", "ABIA", "ACCA", glue="A-Za-z0-9") + r"[A-Z0-9]{16}|"
        + _lead("A3T", glue="A-Za-z0-9") + r"[A-Z0-9]{17}",
        keywords=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        shape="`AKIA`/`ASIA`/`ABIA`/`ACCA`/`A3T?` + 16",
        examples=("aws_access_key_id = AK" + "IA" + fake(16, _UPPER, seed="akia"),),
        # gitleaks' rule tests (fps): lower case letters, a longer capital run
        not_examples=("AKIA" + fake(16, _UPPER, seed="akia2") + "X",
                      'msgstr "Näytä asiakirjamallikansio."', "TODAYINASIAASACKOFRICEFELLOVER"),
    ),
    rule(
        "jwt",
        _lead("eyJ")
        + r"[A-Za-z0-9_\-]{8,4096}\.eyJ[A-Za-z0-9_\-]{4,16384}(?:\.[A-Za-z0-9_\-]{0,4096})?",
        keywords=("eyJ",),
        validate=_jwt_ok,
        shape="`eyJ….eyJ….…` whose header decodes to JSON, signed or not",
        examples=(f"t={_JWT_HEAD}.{_JWT_BODY}.{fake(43, _URLSAFE, seed='jwtsig')}",
                  f"token: {_JWT_NONE}.{_JWT_BODY}.", f"{_JWT_NONE}.{_JWT_BODY}"),
        not_examples=("eyJ" + "zzzzzzzzzz" + ".eyJ" + "zzzzzzzzzz" + "." + fake(8),),
    ),
    rule(
        "slack-token",
        _lead(*(f"xox{c}-" for c in "abposre")) + r"[A-Za-z0-9\-]{10,250}",
        keywords=("xox",),
        shape="`xoxb-…`, `xoxp-…`, …",
        examples=("xo" + "xb-" + fake(12, string.digits, seed="s1") + "-"
                  + fake(13, string.digits, seed="s2") + "-" + fake(24, seed="s3"),),
    ),
    rule(
        "slack-token",
        _lead("xapp-") + r"(?:\d-)?[A-Za-z0-9\-]{10,250}",
        keywords=("xapp-",),
        shape="`xapp-1-…` (the version digit optional)",
        examples=("xa" + "pp-1-A0" + fake(9, _UPPER, seed="xapp") + "-" + fake(13, string.digits,
                                                                            seed="xapp2"),
                  "xa" + "pp-A0" + fake(30, _UPPER, seed="xapp3")),
    ),
    rule(
        "stripe-key",
        _lead("sk_live_", "sk_test_", "sk_prod_") + r"[0-9A-Za-z]{10,247}",
        keywords=("sk_live_", "sk_test_", "sk_prod_"),
        shape="`sk_live_…`, `sk_test_…`, `sk_prod_…`",
        examples=("sk" + "_live_" + fake(99, seed="stripe"),),
    ),
    rule(
        "stripe-restricted-key",
        _lead("rk_live_", "rk_test_", "rk_prod_") + r"[0-9A-Za-z]{10,247}",
        keywords=("rk_live_", "rk_test_", "rk_prod_"),
        shape="`rk_live_…`, `rk_test_…`, `rk_prod_…`",
        examples=("rk" + "_live_" + fake(99, seed="rk"), "rk" + "_prod_" + fake(24, seed="rkp")),
    ),
    rule(
        "stripe-key",
        _lead("whsec_") + r"[A-Za-z0-9+/=]{24,128}",
        keywords=("whsec_",),
        shape="`whsec_…` (webhook signing secret)",
        examples=("wh" + "sec_" + fake(32, seed="whsec"),),
    ),
    rule(
        "sendgrid-key",
        _lead("SG.") + r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{40,50}",
        keywords=("SG.",),
        shape="`SG.` + 16-32 + `.` + 43",
        examples=("SG." + fake(22, _URLSAFE, seed="sg1") + "." + fake(43, _URLSAFE, seed="sg2"),
                  "SG." + fake(20, _URLSAFE, seed="sg3") + "." + fake(43, _URLSAFE, seed="sg4")),
    ),
    rule(
        "npm-token",
        r"//[^\s/]{1,256}/:_authToken=[ \t]{0,4}(npm_[A-Za-z0-9]{20,64}|[A-Fa-f0-9\-]{36})",
        keywords=("_authToken",),
        group=1,
        validate=_checksum_holds,
        shape="`//registry/:_authToken=npm_…` (or a UUID) in `.npmrc`",
        examples=("//registry.npmjs.org/:_authToken=" + _with_checksum("npm_", "npm"),
                  "//registry.npmjs.org/:_authToken=" + fake(8, _HEXDIGITS, seed="u1") + "-"
                  + fake(4, _HEXDIGITS, seed="u2") + "-4" + fake(3, _HEXDIGITS, seed="u3")
                  + "-8" + fake(3, _HEXDIGITS, seed="u4") + "-"
                  + fake(12, _HEXDIGITS, seed="u5")),
        ids=True,
    ),
    rule(
        "npm-token",
        _lead("npm_") + r"[A-Za-z0-9]{36}",
        keywords=("npm_",),
        validate=_checksum_holds,
        shape="`npm_` + 30 + a 6-character CRC32 checksum",
        examples=("NPM_TOKEN=" + _with_checksum("np" + "m_", "npm2"),),
        not_examples=("npm_config_cache=/tmp/npm-cache",
                      "np" + "m_" + fake(36, seed="npm-nocheck")),
    ),
    rule(
        "bearer-token",
        _lead("Bearer", "bearer", "BEARER", glue=_CRED_CHARS) + _GAP + _CRED,
        keywords=("Bearer", "bearer", "BEARER"),
        group=1,
        validate=_credential_ok,
        shape="`Bearer <8+ token characters>` (hex too; also `Bearer%20…` in a URL)",
        examples=("Authorization: Bearer " + fake(12, seed="short"),
                  "-H 'Authorization: Bearer " + fake(32, _HEXDIGITS, seed="hex") + "'",
                  "?q=Bearer%20" + fake(40, seed="pct")),
        not_examples=("the bearer bonds matured; Bearer authentication is described in RFC 6750",),
        ids=True,
    ),
    rule(
        "token-scheme",
        _lead("Token", "Bot", glue=_CRED_CHARS) + _GAP + _CRED,
        keywords=("Token", "Bot"),
        group=1,
        validate=lambda v: _credential_ok(v) and len(v) >= 20,
        shape="`Token <20+ token characters>`, `Bot <…>` (Django REST, Discord)",
        examples=("Authorization: Token " + fake(40, _HEXDIGITS, seed="drf"),
                  "Authorization: Bot " + fake(24, seed="bot1") + "." + fake(6, seed="bot2")
                  + "." + fake(27, _URLSAFE, seed="bot3")),
        not_examples=("Token limits apply to every request in this workspace.",
                      "Bot framework documentation is available online"),
        ids=True,
    ),
    rule(
        "basic-auth",
        _lead("Basic", "basic", "BASIC", glue=_CRED_CHARS) + _GAP
        + r"([A-Za-z0-9+/]{8,16384}={0,2})",
        keywords=("Basic", "basic", "BASIC"),
        group=1,
        validate=_basic_ok,
        shape="`Basic <base64 of user:password>` (any bytes)",
        examples=("Authorization: Basic " + _b64(b"admin:" + fake(16, seed="basic").encode()),
                  "Authorization: Basic " + _b64(b"j\xf6rg:" + fake(12, seed="latin").encode())),
        not_examples=("Basic information here", "basic usage of the API"),
        ids=True,
    ),
    rule(
        "url-password",
        r"://[^\s/?#@:\"'<>]{0,256}:([^\s/?#\"'<>]{1,256})@",
        keywords=("://",),
        also=("@",),
        group=1,
        shape="the whole password in `scheme://user:password@host` (`@` in it too)",
        examples=("postgres://app:" + fake(16, seed="pg") + "@db.internal:5432/app",
                  "https://user:p@ss" + fake(12, seed="at") + "@example.com/"),
        not_examples=("https://example.com:8443/path?email=a@b.c",),
        ids=True,
    ),
    rule(
        "private-key",
        r"-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----"
        r"(?P<body>.{0,65536}?)(?:-----END (?P=kind)-----|\Z|(?=[\"'])|(?=-----BEGIN ))",
        keywords=("-----BEGIN ",),
        group=2,
        flags=re.DOTALL,
        bounded=True,
        shape="the body of a PEM `-----BEGIN … PRIVATE KEY-----` block, raw, `\\n`-escaped "
              "or percent-encoded",
        examples=("-----BEGIN " + "PRIVATE KEY-----\n" + fake(64, seed="pem") + "\n-----END "
                  + "PRIVATE KEY-----",),
        not_examples=("-----BEGIN PUBLIC KEY-----\n" + fake(64, seed="pub") + "\n-----END "
                      "PUBLIC KEY-----",),
        ids=True,
    ),
)


def _near(name: str, prefixes: Sequence[str], body: str, example: str) -> Rule:
    """A provider's prefix before a body of the wrong length: not a working key as it
    stands (a typo, a truncated paste, a made-up sample), so `redact check` warns instead
    of failing; the `Redactor` still replaces it."""
    return rule(
        name + "-near-miss", _lead(*prefixes) + "(?:" + body + ")", keywords=prefixes,
        shape=f"`{prefixes[0]}` with the wrong length (a warning in `redact check`)",
        examples=(example,), near_miss=True,
    )


def _near_checksum(name: str, prefixes: Sequence[str], seed: str) -> Rule:
    """A provider's prefix before a body of the right length whose own checksum fails:
    a made-up sample or a mistyped key, never one the provider issued."""
    good = _with_checksum(prefixes[0], seed)
    return rule(
        # not the head of a JWT that `ghs_` wraps (36 characters, then `.`)
        name + "-near-miss", _lead(*prefixes) + r"[A-Za-z0-9]{36}(?!\.[A-Za-z0-9])",
        keywords=prefixes, validate=_checksum_fails,
        shape=f"`{prefixes[0]}` + 36 whose CRC32 checksum fails (a warning in `redact check`)",
        examples=(prefixes[0] + fake(36, seed=seed),
                  good[:-1] + ("0" if good[-1] != "0" else "1")),
        not_examples=(good,), near_miss=True,
    )


# Near misses: the lengths around each fixed-length shape the rules above miss.
_NEAR_MISS_RULES: tuple[Rule, ...] = (
    _near("openai-api-key", ("sk-proj-", "sk-svcacct-", "sk-admin-"), r"[A-Za-z0-9_\-]{10,19}",
          "sk-" + "proj-" + fake(14, seed="nm-openai")),
    _near("anthropic-api-key", ("sk-ant-",), r"[A-Za-z0-9_\-]{10,19}",
          "sk-" + "ant-api03-" + fake(6, seed="nm-anthropic")),
    _near("google-api-key", ("AIza",), r"[0-9A-Za-z_\-]{24,34}|[0-9A-Za-z_\-]{36,44}",
          "AI" + "za" + fake(30, seed="nm-google")),
    _near("github-token", ("ghp_", "gho_", "ghu_", "ghr_", "ghs_"), r"[A-Za-z0-9]{20,35}",
          "gh" + "p_" + fake(30, seed="nm-github")),
    # GitHub's and npm's tokens end with a checksum of their own (GitHub's blog, "Behind
    # GitHub's new authentication token formats", and "Announcing npm's new access token
    # format"): a token of the right length whose checksum fails is a near miss.
    _near_checksum("github-token", ("ghp_", "gho_", "ghu_", "ghr_", "ghs_"), "nm-gh-crc"),
    _near_checksum("npm-token", ("npm_",), "nm-npm-crc"),
    _near("aws-access-key-id", ("AKIA", "ASIA"), r"[A-Z0-9]{12,15}|[A-Z0-9]{17,20}",
          "AK" + "IA" + fake(14, _UPPER, seed="nm-aws")),
    _near("huggingface-token", ("hf_",), r"[A-Za-z0-9]{24,33}|[A-Za-z0-9]{35,40}",
          "hf" + "_" + fake(30, string.ascii_letters, seed="nm-hf")),
    _near("groq-api-key", ("gsk_",), r"[A-Za-z0-9]{24,39}",
          "gs" + "k_" + fake(30, seed="nm-groq")),
    _near("stripe-key", ("sk_live_",), r"[0-9A-Za-z]{6,9}",
          "sk" + "_live_" + fake(8, seed="nm-st")),
)


# The detect-secrets plugins used, as (module, class).
_AWS: Final = ("aws", "AWSKeyDetector")
_AZURE: Final = ("azure_storage_key", "AzureStorageKeyDetector")
_GITLAB: Final = ("gitlab_token", "GitLabTokenDetector")
_MAILCHIMP: Final = ("mailchimp", "MailchimpDetector")
_PYPI: Final = ("pypi_token", "PypiTokenDetector")
_SLACK: Final = ("slack", "SlackDetector")
_SQUARE: Final = ("square_oauth", "SquareOAuthDetector")
_TWILIO: Final = ("twilio", "TwilioKeyDetector")
_UNICODE, _FOLDED, _VERBOSE = re.UNICODE, re.UNICODE | re.IGNORECASE, re.VERBOSE
# Each plugin -> the flags of each pattern of its `denylist`, in order (tests/
# test_detectors.py checks them against the plugin's own).
_DS_PLUGINS: Final[dict[tuple[str, str], tuple[int, ...]]] = {
    _AWS: (_UNICODE, _FOLDED),
    _AZURE: (_UNICODE,),
    _GITLAB: (_UNICODE,) * 7,
    _MAILCHIMP: (_UNICODE,),
    _PYPI: (_UNICODE,) * 2,
    _SLACK: (_FOLDED, _FOLDED | _VERBOSE),
    _SQUARE: (_UNICODE,),
    _TWILIO: (_UNICODE,) * 2,
}


def _ds(
    name: str,
    plugin: tuple[str, str],
    *,
    keywords: Iterable[str],
    shape: str,
    examples: Sequence[str] = (),
    not_examples: Sequence[str] = (),
    groups: Sequence[int] = (),
    skip: Sequence[int] = (),
) -> list[Rule]:
    """detect-secrets' patterns of one plugin, gated by our keywords. Its patterns check
    no boundaries, so ours are checked after the match (`bounded=False`)."""
    patterns = [
        PluginPattern(*plugin, i, flags)
        for i, flags in enumerate(_DS_PLUGINS[plugin]) if i not in skip
    ]
    return [
        Rule(
            name,
            pattern,
            tuple(keywords),
            groups[i] if i < len(groups) else 0,
            bounded=False,
            shape=shape,
            examples=tuple(examples) if i == 0 else (),
            not_examples=tuple(not_examples) if i == 0 else (),
        )
        for i, pattern in enumerate(patterns)
    ]


# detect-secrets plugins with a literal we can gate on and a pattern whose cost grows
# linearly with the text. Left out: Discord and Telegram (no literal: they would run on
# every string), keyword, entropy and IP (too noisy for recorded traffic; entropy is used
# only under credential-named fields), and the plugins our own rules replace because their
# patterns backtrack on long runs (basic auth in URLs, npm, OpenAI) or are narrower than
# the provider's format (GitHub without `_`, Stripe without `rk_test_`, SendGrid's fixed
# 22-character first segment).
_DS_RULES: tuple[Rule, ...] = (
    *_ds("aws-access-key-id", _AWS, keywords=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
         shape="(detect-secrets) AWS key id", skip=(1,)),
    *[
        replace(r, keywords=_cased("aws"), group=1)
        for r in _ds("aws-secret-access-key", _AWS, keywords=(), skip=(0,),
                     shape="40 base64 characters quoted near an `aws` … `key` name",
                     examples=('aws_secret_access_key = "' + fake(40, seed="awss") + '"',))
    ],
    *_ds("azure-storage-key", _AZURE, keywords=("AccountKey=",),
         shape="`AccountKey=` + 88 base64",
         examples=("AccountKey=" + fake(86, seed="azsk") + "==",)),
    *_ds("gitlab-token", _GITLAB,
         keywords=("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-",
                   "glimt-", "glptt-", "glagent-", "gloas-"),
         shape="`glpat-…` and the other GitLab prefixes",
         examples=("gl" + "pat-" + fake(20, _URLSAFE, seed="glpat"),)),
    *_ds("mailchimp-key", _MAILCHIMP, keywords=("-us",), shape="32 + `-us` + 1-2 digits",
         examples=(fake(32, _HEXDIGITS, seed="mc") + "-us12",)),
    *_ds("pypi-token", _PYPI, keywords=("pypi-",), shape="`pypi-AgEIcHlwaS5vcmc…`",
         examples=("pypi-" + "AgEIcHlwaS5vcmc" + fake(80, _URLSAFE, seed="pypi"),)),
    *_ds("slack-token", _SLACK, keywords=("xox", "hooks.slack.com"),
         shape="Slack tokens and webhook URLs",
         examples=("https://hooks.slack.com/services/T" + fake(8, _UPPER, seed="t") + "/B"
                   + fake(8, _UPPER, seed="b") + "/" + fake(24, seed="hook"),)),
    *_ds("square-oauth-secret", _SQUARE, keywords=("sq0csp-",), shape="`sq0csp-` + 43",
         examples=("sq0csp-" + fake(43, _URLSAFE, seed="sq"),)),
    *_ds("twilio-key", _TWILIO, keywords=("AC", "SK"), shape="`AC`/`SK` + 32",
         examples=("SK" + fake(32, _HEXDIGITS, seed="tw"),)),
)

DEFAULT_RULES: tuple[Rule, ...] = _OWN_RULES + _NEAR_MISS_RULES + _DS_RULES
#: Rule names whose findings are near misses (warnings in `redact check`).
NEAR_MISS_RULES: frozenset[str] = frozenset(r.name for r in DEFAULT_RULES if r.near_miss)


# --- a guard for patterns we did not write -------------------------------------------

# Probe lengths: small steps first (an exponential pattern explodes within a few dozen
# characters), then doubling (a quadratic one shows by a few thousand).
_PROBE_LENGTHS = (8, 12, 16, 20, 24, 28, 32, 64, 256, 1024, 4096, 16384, 65536)
# Allowed seconds for one probe string: a linear pattern needs well under 1 us a character.
_PROBE_SECONDS = 0.05
_PROBE_PER_CHAR = 1e-5


@functools.lru_cache(maxsize=256)
def grows_linearly(pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` stays fast on long runs of the characters it mentions (and of
    letters, digits, spaces and punctuation): False for nested or overlapping repeats that
    backtrack, like `(a+)+b` or `[a-z]*://`. A probe, not a proof; it stops at the first
    slow length, so a pathological pattern costs a fraction of a second to refuse."""
    mentioned = sorted({c for c in pattern.pattern if c.isalnum() or c in "-_.:/@= "})
    chars = list(dict.fromkeys(["a", "A", "0", " ", "-", ".", "/", ":", *mentioned[:24]]))
    for char in chars:
        for length in _PROBE_LENGTHS:
            text = char * length + "\x00"
            start = time.perf_counter()
            for _ in pattern.finditer(text):
                pass
            if time.perf_counter() - start > _PROBE_SECONDS + _PROBE_PER_CHAR * length:
                return False
    return True


# --- id shapes that are never secrets ---------------------------------------------------

_KNOWN_ID = re.compile(
    r"""(?x)
    (?:chatcmpl|cmpl|req|msg|call|toolu|srvtoolu|fp|resp|rs|fc|ctc|ig|mcp|ws|file|asst|thread|run
      |step|batch|evt|ft|ftjob|vs|org|proj|user|sess|span|trace|container|cntr|ci|item|gen
      |compl|conv|embd|modr|upload|part|sbx|wf)[-_][A-Za-z0-9_\-]{4,}
    | [0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}
    | (?:sha(?:1|256|384|512)[:\-=])?[0-9a-f]{32,128} | [0-9A-F]{32,128}
    | data:[\w/+.\-]+;base64,[A-Za-z0-9+/=\s]*
    """
)


def is_known_id(text: str) -> bool:
    """Ids, digests and data URLs that look random but are never credentials."""
    return _KNOWN_ID.fullmatch(text) is not None


def shannon_entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_TOKENISH = re.compile(r"[A-Za-z0-9+/=_.~\-:]{16,1024}")


def looks_high_entropy(text: str) -> bool:
    """A token-shaped value random enough to be a credential (used only under credential-named
    fields): 16+ token characters, letters and digits, and high Shannon entropy."""
    if _TOKENISH.fullmatch(text) is None or is_known_id(text):
        return False
    if not any(c.isdigit() for c in text) or not any(c.isalpha() for c in text):
        return False
    threshold = 3.0 if re.fullmatch(r"[0-9a-fA-F]+", text) else min(3.6, math.log2(len(text)) - 0.6)
    return shannon_entropy(text) >= threshold


# --- the detector set -------------------------------------------------------------------

_HINT = -1
_GLUE_BEFORE = re.compile(_B)
_GLUE_AFTER = re.compile(_E)


def _first(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    match = pattern.match(text)
    return [] if match is None else [match]


def _glued(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] continues a longer token on either side."""
    return _GLUE_BEFORE.match(text, start) is None or _GLUE_AFTER.match(text, end) is None


_BLOB = re.compile(r"(?:data:[\w/+.\-]+;base64,)?[A-Za-z0-9+/_\-]{256,}={0,2}")


# --- rules run near their keywords -------------------------------------------------------

# The regular-expression parser of the running Python (`sre_parse` before 3.11): it tells
# how long a match can be and which literals every match holds.
try:
    _sre_parse: Any = importlib.import_module("re._parser")
    _sre: Any = importlib.import_module("re._constants")
except ImportError:  # Python 3.10
    _sre_parse = importlib.import_module("sre_parse")
    _sre = importlib.import_module("sre_constants")

# From this length on a fired rule reads only the windows around its keywords; a width
# from _WIDE on counts as unbounded (such a rule reads the whole text).
WINDOWED_FROM = 1024
_WIDE = 1 << 16


class _Reach(NamedTuple):
    """How far around a keyword a rule's match can lie."""

    before: int  # the longest match: one holding a keyword starts at most this far before it
    after: int  # how far past its start an attempt may read (lookaheads and `$` included)
    folded: bool  # case-insensitive: its keywords are found in the lower-cased (ASCII) text


@functools.lru_cache(maxsize=1024)
def _reach(pattern: re.Pattern[str], keywords: tuple[str, ...]) -> _Reach | None:
    """How far a match of `pattern` reaches around one of `keywords`, when the pattern
    shows that every match holds one of them and is bounded; else None."""
    if not keywords:
        return None
    folded = bool(pattern.flags & re.IGNORECASE)
    if folded and not all(k.isascii() for k in keywords):
        return None
    parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    low, high = parsed.getwidth()
    ahead = _lookahead_width(parsed)
    if low < 1 or high >= _WIDE or ahead is None or ahead >= _WIDE:
        return None
    if not _holds(parsed, keywords, folded):
        return None
    return _Reach(high, high + ahead + 2, folded)


def _repeats() -> tuple[Any, ...]:
    return tuple(getattr(_sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT",
                                                  "POSSESSIVE_REPEAT") if hasattr(_sre, name))


def _lookahead_width(items: Any) -> int | None:
    """An upper bound of how far lookaheads read past the text they sit at (None: unknown)."""
    total = 0
    for op, av in items:
        parts: list[Any] = []
        if op is _sre.ASSERT or op is _sre.ASSERT_NOT:
            direction, sub = av
            if direction == 1:
                total += sub.getwidth()[1]
            parts = [sub]
        elif op is _sre.SUBPATTERN:
            parts = [av[3]]
        elif op is _sre.BRANCH:
            parts = list(av[1])
        elif op in _repeats():
            parts = [av[2]]
        elif op is getattr(_sre, "ATOMIC_GROUP", None):
            parts = [av]
        elif op is _sre.GROUPREF or op is _sre.GROUPREF_EXISTS:
            return None
        for part in parts:
            more = _lookahead_width(part)
            if more is None:
                return None
            total += more
    return total


def _has_keyword(run: str, keywords: tuple[str, ...], folded: bool) -> bool:
    if folded:
        return run.isascii() and any(k.lower() in run.lower() for k in keywords)
    return any(k in run for k in keywords)


# A literal part with more spellings than this is not followed (the proof gives up).
_MAX_SPELLINGS = 256


def _spellings(items: Any, folded: bool) -> set[str] | None:
    """Every text the parsed `items` can match when they are literal (characters, small
    classes, alternatives, fixed repeats), zero-width parts as ""; None otherwise."""
    out = {""}
    for op, av in items:
        part: set[str] | None
        if op is _sre.LITERAL:
            part = {chr(av)}
        elif op is _sre.ASSERT or op is _sre.ASSERT_NOT or op is _sre.AT:
            continue
        elif op is _sre.IN:
            part = _class_chars(av)
        elif op is _sre.SUBPATTERN:
            _group, add, delete, sub = av
            inner = (folded or bool(add & re.IGNORECASE)) and not delete & re.IGNORECASE
            part = _spellings(sub, folded) if inner == folded else None
        elif op is _sre.BRANCH:
            part = set()
            for branch in av[1]:
                more = _spellings(branch, folded)
                if more is None:
                    return None
                part |= more
        elif op is getattr(_sre, "ATOMIC_GROUP", None):
            part = _spellings(av, folded)
        elif op in _repeats() and av[0] == av[1] and av[0] <= 4:
            one = _spellings(av[2], folded)
            part = None if one is None else {""}
            for _ in range(av[0]):
                if part is not None and one is not None:
                    part = {a + b for a in part for b in one}
        else:
            return None
        if part is None:
            return None
        out = {a + b for a in out for b in part}
        if len(out) > _MAX_SPELLINGS:
            return None
    return out


def _class_chars(items: Any) -> set[str] | None:
    """The characters of a small character class (`[A-Z0-9]`), None for a large or negated one."""
    out: set[str] = set()
    for op, av in items:
        if op is _sre.LITERAL:
            out.add(chr(av))
        elif op is _sre.RANGE and av[1] - av[0] < 64:
            out.update(chr(c) for c in range(av[0], av[1] + 1))
        else:
            return None
    return out if len(out) <= 64 else None


def _holds(
    items: Any, keywords: tuple[str, ...], folded: bool, before: frozenset[str] = frozenset({""})
) -> bool:
    """Whether every text the parsed `items` match, after any of the texts `before`,
    contains one of `keywords`: a proof from adjacent literal parts, alternatives and
    required groups, False when it cannot tell."""
    run: set[str] | frozenset[str] = before
    for op, av in items:
        part = _spellings([(op, av)], folded)
        if part is not None:
            joined = {a + b for a in run for b in part}
            run = joined if len(joined) <= _MAX_SPELLINGS else part
            if all(_has_keyword(text, keywords, folded) for text in run):
                return True
            continue
        start = frozenset(run)
        if op in _repeats():
            low, _high, sub = av
            one = _spellings(sub, folded)
            if low >= 1 and one is not None and len(one) == 1:
                # c{n,m}: n copies follow what came before and precede what comes after
                copies = next(iter(one)) * low
                if all(_has_keyword(text + copies, keywords, folded) for text in run):
                    return True
                run = {copies}
                continue
            proven = low >= 1 and _holds(sub, keywords, folded, start)
        elif op is _sre.SUBPATTERN:
            _group, add, delete, sub = av
            inner = (folded or bool(add & re.IGNORECASE)) and not delete & re.IGNORECASE
            proven = inner == folded and _holds(sub, keywords, folded, start)
        elif op is _sre.BRANCH:
            proven = all(_holds(branch, keywords, folded, start) for branch in av[1])
        else:
            proven = op is getattr(_sre, "ATOMIC_GROUP", None) and _holds(
                av, keywords, folded, start
            )
        if proven:
            return True
        run = {""}
    return False


class _Lead(NamedTuple):
    """Where a match of an unbounded rule starts, from its keywords."""

    offsets: frozenset[int]  # a match starts this far before an occurrence of a keyword
    folded: bool  # case-insensitive: its keywords are found in the lower-cased (ASCII) text


@functools.lru_cache(maxsize=1024)
def _opening(pattern: re.Pattern[str], keywords: tuple[str, ...]) -> _Lead | None:
    """Whether every match of `pattern` opens with a literal part holding one of
    `keywords`, and how far into the match each can stand; else None."""
    folded = bool(pattern.flags & re.IGNORECASE)
    if not keywords or (folded and not all(k.isascii() for k in keywords)):
        return None
    parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    if parsed.getwidth()[0] < 1:
        return None
    opening = {""}
    for op, av in parsed:
        part = _spellings([(op, av)], folded)
        if part is None and op in _repeats() and av[0] >= 1:
            one = _spellings(av[2], folded)
            part = {next(iter(one)) * av[0]} if one is not None and len(one) == 1 else None
            if part is not None:
                opening = {a + b for a in opening for b in part}
            break
        if part is None:
            break
        opening = {a + b for a in opening for b in part}
        if len(opening) > _MAX_SPELLINGS:
            return None
    offsets: set[int] = set()
    for text in opening:
        if folded and not text.isascii():
            return None
        probe = text.lower() if folded else text
        held = False
        for keyword in keywords:
            key = keyword.lower() if folded else keyword
            at = probe.find(key)
            while at >= 0:
                offsets.add(at)
                held = True
                at = probe.find(key, at + 1)
        if not held:
            return None
    return _Lead(frozenset(offsets), folded)


def _led(
    pattern: re.Pattern[str], text: str, starts: Iterable[int], offsets: frozenset[int]
) -> list[re.Match[str]] | None:
    """`list(pattern.finditer(text))` for a pattern whose matches start at one of
    `offsets` before a keyword at `starts`: the scan tries only those places, in order,
    as `finditer` would (a place inside the last match is passed over). None when the
    places are so many that reading the whole text is cheaper."""
    places = sorted({start - offset for start in starts for offset in offsets
                     if start >= offset})
    if len(places) * 64 > len(text):
        return None
    out: list[re.Match[str]] = []
    end = 0
    for place in places:
        if place < end:
            continue
        match = pattern.match(text, place)
        if match is not None:
            out.append(match)
            end = match.end()
    return out


def matches_near(
    pattern: re.Pattern[str], text: str, starts: Iterable[int], keywords: tuple[str, ...]
) -> list[re.Match[str]]:
    """`list(pattern.finditer(text))`, reading only around `starts`, the offsets of every
    occurrence of `keywords` in `text`, when the pattern shows that each match holds one.

    Exact, not a heuristic: a match holding a keyword lies within its reach of it, so
    the windows around all occurrences (merged where they meet) hold every match; each
    window starts where no match is under way and ends past anything an attempt in it
    can read, so `finditer` over the windows meets the same matches as over the text.
    Falls back to the whole text when the pattern shows no such bound or the windows
    would cover most of it.
    """
    reach = None if len(text) < WINDOWED_FROM else _reach(pattern, keywords)
    if reach is None or reach.folded:
        return list(pattern.finditer(text))
    windows = _windows(starts, reach, len(text))
    if windows is None:
        return list(pattern.finditer(text))
    return [match for lo, hi in windows for match in pattern.finditer(text, lo, hi)]


def _windows(starts: Iterable[int], reach: _Reach, size: int) -> list[tuple[int, int]] | None:
    """The merged windows around `starts`, or None when they would cover most of the text."""
    out: list[list[int]] = []
    for start in sorted(set(starts)):
        lo, hi = max(0, start - reach.before), min(size, start + reach.after)
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    if 2 * sum(hi - lo for lo, hi in out) > size:
        return None
    return [(lo, hi) for lo, hi in out]


def _anchors(rule: Rule) -> tuple[str, ...]:
    """The literals a rule's matches are proven to hold: its keywords, or for a
    case-insensitive rule the lower-cased first four characters of each (ASCII only)."""
    if not rule.pattern.flags & re.IGNORECASE or not all(k.isascii() for k in rule.keywords):
        return rule.keywords
    return tuple(sorted({k.lower()[:4] for k in rule.keywords}))


def _spellings_of(stem: str) -> list[str]:
    """Every ASCII upper/lower-case spelling of `stem`."""
    return ["".join(chars) for chars in itertools.product(*({c.lower(), c.upper()} for c in stem))]


class Literals:
    """Every occurrence of a fixed list of literals in a text, found in one pass of a
    compiled automaton (ahocorasick_rs' DFA). Thread-safe.

    `find(text)` returns `(index, start, end)` for each occurrence, overlapping ones
    included, as character offsets into `text`, in order of their ends. The automaton is
    compiled at the first `find` (milliseconds for the detectors' keywords): a run whose
    texts all go through another automaton never compiles this one.
    """

    __slots__ = ("_automaton", "patterns")

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns: tuple[str, ...] = tuple(patterns)
        if not all(self.patterns):
            raise ValueError("Literals: an empty literal would match everywhere")
        self._automaton: ahocorasick_rs.BytesAhoCorasick | None = None

    def _compiled(self) -> ahocorasick_rs.BytesAhoCorasick:
        # Two threads may both compile it: the same automaton, either one kept.
        automaton = self._automaton
        if automaton is None:
            # The text is read as UTF-8 bytes: an ASCII text (the common case) is its own
            # bytes at the same offsets, and the byte automaton reads faster than the str
            # one. Lone surrogates (bytes decoded with surrogateescape) pass as their
            # 3-byte forms.
            automaton = self._automaton = ahocorasick_rs.BytesAhoCorasick(
                [p.encode("utf-8", "surrogatepass") for p in self.patterns],
                implementation=_DFA,
            )
        return automaton

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """(literal index, start, end) of every occurrence in `text`."""
        if not self.patterns:
            return []
        automaton = self._automaton
        if automaton is None:
            automaton = self._compiled()
        if text.isascii():
            return automaton.find_matches_as_indexes(
                text.encode(), overlapping=True  # (an ASCII text's UTF-8 is itself)
            )
        data = text.encode("utf-8", "surrogatepass")
        hits = automaton.find_matches_as_indexes(data, overlapping=True)
        if not hits:
            return hits
        # Byte offsets back to characters. UTF-8 synchronises: a literal's bytes only
        # match where its characters start and end.
        chars: dict[int, int] = {}
        count = last = 0
        for offset in sorted({o for _, start, end in hits for o in (start, end)}):
            count += len(data[last:offset].decode("utf-8", "surrogatepass"))
            chars[offset] = count
            last = offset
        return [(index, chars[start], chars[end]) for index, start, end in hits]


_DFA = ahocorasick_rs.Implementation.DFA


class Detectors:
    """A fixed set of rules behind one keyword automaton. Pure and thread-safe after init.

    `hints` are extra literals that only report whether they occur (`scan(...)[1]`), so
    a caller can gate its own work on the same single pass over the text. `keywords` are
    the automaton's literals, in the order `literals` numbers them; a caller that needs
    more literals searched in the same pass builds `Literals(keywords + its own)` and
    hands the hits to `scan(text, hits)`.
    """

    def __init__(self, rules: Iterable[Rule] = DEFAULT_RULES, *, hints: Iterable[str] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        by_keyword: dict[str, list[int]] = {}
        # A rule with no keywords (a user's own pattern) cannot be gated: it runs on every text.
        self._always = frozenset(i for i, rule in enumerate(self.rules) if not rule.keywords)
        #: Whether a text in which no keyword occurs can have no match (no rule runs always).
        self.keyed_only = not self._always
        for index, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(index)
        for hint in hints:
            by_keyword.setdefault(hint, []).append(_HINT)
        # What a rule's reach is proven around: its keywords, or for a case-insensitive
        # rule the first four characters of each, lower-cased, whose every ASCII spelling
        # joins the automaton as a place marker (it fires nothing).
        anchors = tuple(_anchors(rule) for rule in self.rules)
        for rule, stems in zip(self.rules, anchors, strict=True):
            if stems is not rule.keywords:
                for stem in stems:
                    for spelling in _spellings_of(stem):
                        by_keyword.setdefault(spelling, [])
        self._gated = bool(by_keyword)
        self._empty = not by_keyword and not self._always
        self.keywords: tuple[str, ...] = tuple(sorted(by_keyword))
        self._targets: tuple[tuple[int, ...], ...] = tuple(
            tuple(sorted(set(by_keyword[keyword]))) for keyword in self.keywords
        )
        self.literals = Literals(self.keywords)
        at = {keyword: index for index, keyword in enumerate(self.keywords)}
        self._anchors = anchors
        # How far each rule reaches around its keywords, worked out (from its parsed
        # pattern) the first time the rule reads a long text: most runs never need most
        # rules' reach, and parsing every pattern costs more than a test run's replays.
        self._bounds: list[tuple[_Reach | None, _Lead | None] | None] = [None] * len(
            self.rules
        )
        # Keywords whose every rule also needs other literals (`Rule.also`): number ->
        # the literals each of those rules needs. A text holding such a keyword but none
        # of its rules' literals fires nothing, so a caller gating on hits may pass it by.
        self.conditions: dict[int, tuple[tuple[str, ...], ...]] = {}
        for number, targets in enumerate(self._targets):
            if targets and all(t != _HINT and self.rules[t].also for t in targets):
                self.conditions[number] = tuple(self.rules[t].also for t in targets)
        # The automaton's numbers of each rule's place markers.
        self._own = tuple(
            tuple(at[k] for k in stems) if stems is rule.keywords
            else tuple(at[s] for stem in stems for s in _spellings_of(stem))
            for rule, stems in zip(self.rules, anchors, strict=True)
        )

    def spans(self, text: str) -> list[Span]:
        """Every detector match in `text`, minus known id shapes, in text order."""
        return self.scan(text)[0]

    def scan(
        self, text: str, hits: list[tuple[int, int, int]] | None = None
    ) -> tuple[list[Span], bool]:
        """Detector matches in `text` and whether any hint literal occurs in it.

        `hits` are the occurrences of `keywords` in `text` when the caller searched them
        already (indexes past the keywords are its own literals and are ignored).
        A text with percent escapes is also read decoded (`Bearer%20…`, a PEM block or a
        webhook URL inside a query value); those matches map back onto the escaped text.
        """
        if self._empty or len(text) < 8:
            return [], False
        spans, hinted = self._scan_once(text, hits)
        if "%" in text:
            view = _percent_view(text)
            if view is not None:
                decoded, escapes = view
                more = self._scan_once(decoded)[0]
                if more:
                    seen = set(spans)
                    for span in more:
                        mapped = Span(_orig_start(escapes, span.start),
                                      _orig_end(escapes, span.end), span.rule, span.slot)
                        if mapped not in seen:
                            seen.add(mapped)
                            spans.append(mapped)
                    spans.sort()
        return spans, hinted

    def _near(
        self, index: int, text: str, starts: dict[int, list[int]]
    ) -> list[re.Match[str]] | None:
        """The matches of rule `index` read only near its keywords (`matches_near`, and for
        an unbounded rule that opens with one, `_led`), or None to read the whole text."""
        reach, lead = self._bounds[index] or self._bound(index)
        if reach is None and lead is None:
            return None
        folded = reach.folded if reach is not None else lead is not None and lead.folded
        if folded and not text.isascii():
            # Unicode case folding reaches past ASCII spellings (`ſ` is an `s`).
            return None
        at = [start for k in self._own[index] for start in starts.get(k, ())]
        pattern = compiled(self.rules[index].pattern)
        if reach is None:
            assert lead is not None
            return _led(pattern, text, at, lead.offsets)
        windows = _windows(at, reach, len(text))
        if windows is None:
            return None
        return [match for lo, hi in windows for match in pattern.finditer(text, lo, hi)]

    def _bound(self, index: int) -> tuple[_Reach | None, _Lead | None]:
        """The reach of rule `index` around its keywords (or where its matches open), kept
        once worked out (two threads may both work it out: the result is the same)."""
        rule, stems = self.rules[index], self._anchors[index]
        pattern = compiled(rule.pattern)
        reach = _reach(pattern, stems)
        bound = (reach, _opening(pattern, stems) if reach is None else None)
        self._bounds[index] = bound
        return bound

    def _scan_once(
        self, text: str, hits: list[tuple[int, int, int]] | None = None
    ) -> tuple[list[Span], bool]:
        fired: set[int] = set(self._always)
        starts: dict[int, list[int]] = {}
        if self._gated:
            if hits is None:
                hits = self.literals.find(text)
            count = len(self._targets)
            for index, start, _end in hits:
                if index < count:
                    starts.setdefault(index, []).append(start)
            targets = self._targets
            for index in starts:
                fired.update(targets[index])
        if not fired:
            return [], False
        hinted = _HINT in fired
        fired.discard(_HINT)
        if not fired:
            return [], hinted
        # One long base64 run (an image, `encrypted_content`): a key can only be the whole
        # of it or start it; anything found inside is chance. Try the start only.
        blob = len(text) >= 256 and _BLOB.fullmatch(text) is not None
        # A long text: each rule reads the windows around its keywords (`matches_near`).
        near = not blob and len(text) >= WINDOWED_FROM
        out: list[Span] = []
        for index in sorted(fired):
            rule = self.rules[index]
            if rule.also and not all(literal in text for literal in rule.also):
                continue  # no match without them
            matches: Iterable[re.Match[str]] | None = None
            if blob:
                matches = _first(compiled(rule.pattern), text)
            elif near:
                matches = self._near(index, text, starts)
            if matches is None:
                matches = rule.pattern.finditer(text)
            for match in matches:
                group = rule.group if rule.group <= (rule.pattern.groups or 0) else 0
                start, end = match.span(group)
                if start < 0 or end <= start:
                    continue
                secret = text[start:end]
                if not rule.ids and is_known_id(secret):
                    continue
                if rule.validate is not None and not rule.validate(secret):
                    continue
                if not rule.bounded and _glued(text, start, end):
                    continue
                out.append(Span(start, end, rule.name, None))
        out.sort()
        return out, hinted


# Only escapes of ASCII characters are decoded: each is one character of the view, so a
# match in the view maps back to exact offsets in the escaped text.
_PCT = re.compile(r"%([0-7][0-9A-Fa-f])")


def _percent_view(text: str) -> tuple[str, list[int]] | None:
    """`text` with its ASCII percent escapes decoded, and the view offsets of the escapes."""
    parts: list[str] = []
    escapes: list[int] = []
    last = 0
    for match in _PCT.finditer(text):
        parts.append(text[last : match.start()])
        escapes.append(match.start() - 2 * len(escapes))
        parts.append(chr(int(match.group(1), 16)))
        last = match.end()
    if not escapes:
        return None
    parts.append(text[last:])
    return "".join(parts), escapes


def _orig_start(escapes: list[int], index: int) -> int:
    return index + 2 * bisect.bisect_left(escapes, index)


def _orig_end(escapes: list[int], end: int) -> int:
    last = end - 1
    k = bisect.bisect_left(escapes, last)
    return last + 2 * k + (3 if k < len(escapes) and escapes[k] == last else 1)
