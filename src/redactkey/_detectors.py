"""Pattern detectors for credentials nobody told us about.

Two sources of rules, both run behind one keyword prefilter (an Aho-Corasick scan for
the literal every rule needs, so a string with no keyword costs one C pass):

- detect-secrets' regex plugins, used as plugin *classes*: their compiled `denylist`
  patterns are read once at import. detect-secrets' global settings (`get_settings()`,
  `transient_settings`) are never read nor written here, so nothing leaks in either
  direction.
- our own rules for the keys detect-secrets' defaults miss (LLM providers and friends).

Known id shapes (`chatcmpl-`, `msg_`, UUIDs, hex digests, base64 blobs, ...) are never
reported, and a match must stand on its own: not glued to the token characters around it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import ahocorasick


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


# detect-secrets sets up logging when its modules load (`logging.captureWarnings(True)`
# and a stderr handler on its logger), which would swallow the host program's warnings;
# importing redactkey must leave the host's logging and warnings as they were.
with _host_state_kept():
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = [
    "DEFAULT_RULES",
    "Detectors",
    "Rule",
    "Span",
    "is_known_id",
    "looks_high_entropy",
    "shannon_entropy",
]


class Span(NamedTuple):
    """A half-open range of text to redact, the rule that found it and its label."""

    start: int
    end: int
    rule: str
    slot: str | None


@dataclass(frozen=True)
class Rule:
    """One detector: a compiled pattern, the literals that gate it, the group holding the secret.

    `keywords` are case-sensitive literals; the pattern only runs on text containing one.
    `validate` can veto a match (it gets the matched secret text). A rule that is not
    `bounded` (detect-secrets' patterns check no boundaries) gets ours: a match glued to
    token characters on either side is part of something bigger and is dropped.
    """

    name: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    group: int = 0
    validate: Callable[[str], bool] | None = field(default=None, compare=False)
    bounded: bool = True


# Token characters: a key glued to more of them is part of something bigger (a slug, a blob).
# A percent escape (`%3D`) or a JSON escape (`\n`, `\u0020`) in front still counts as a break.
_B = r"(?:(?<![A-Za-z0-9_\-])|(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4}))"
_E = r"(?![A-Za-z0-9_\-])"


def _own(name: str, regex: str, *keywords: str, group: int = 0) -> Rule:
    return Rule(name, re.compile(regex), tuple(keywords), group)


def _jwt_ok(token: str) -> bool:
    head = token.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(b"{") and b'"' in decoded


def _basic_ok(token: str) -> bool:
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable() and len(text) >= 3


_OWN_RULES: tuple[Rule, ...] = (
    _own(
        "openai-api-key",
        _B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,300}" + _E,
        "sk-proj-",
        "sk-svcacct-",
        "sk-admin-",
    ),
    _own("openai-api-key", _B + r"sk-[A-Za-z0-9]{32,200}" + _E, "sk-"),
    _own("anthropic-api-key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,300}" + _E, "sk-ant-"),
    _own("openrouter-api-key", _B + r"sk-or-(?:v\d-)?[A-Za-z0-9_\-]{20,200}" + _E, "sk-or-"),
    _own("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, "AIza"),
    _own("google-oauth-token", _B + r"ya29\.[0-9A-Za-z_\-.]{20,2000}" + r"(?<!\.)" + _E, "ya29."),
    _own("huggingface-token", _B + r"hf_[A-Za-z0-9]{30,80}" + _E, "hf_"),
    _own("groq-api-key", _B + r"gsk_[A-Za-z0-9]{40,80}" + _E, "gsk_"),
    _own("replicate-token", _B + r"r8_[A-Za-z0-9]{30,80}" + _E, "r8_"),
    _own("xai-api-key", _B + r"xai-[A-Za-z0-9]{40,120}" + _E, "xai-"),
    _own("perplexity-api-key", _B + r"pplx-[A-Za-z0-9]{40,80}" + _E, "pplx-"),
    _own("langsmith-api-key", _B + r"lsv2_[a-z]{2}_[A-Za-z0-9_]{20,120}" + _E, "lsv2_"),
    _own("tavily-api-key", _B + r"tvly-[A-Za-z0-9_\-]{20,80}" + _E, "tvly-"),
    _own("github-token", _B + r"github_pat_[A-Za-z0-9_]{22,255}" + _E, "github_pat_"),
    _own(
        "github-token",
        _B + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _E,
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
    ),
    _own(
        "aws-access-key-id",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}"
        r"(?![A-Za-z0-9])",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "A3T",
    ),
    Rule(
        "jwt",
        re.compile(_B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*" + _E),
        ("eyJ",),
        0,
        _jwt_ok,
    ),
    _own("slack-token", _B + r"xox[abposre]-[A-Za-z0-9\-]{10,250}" + _E, "xox"),
    _own("slack-token", _B + r"xapp-\d-[A-Za-z0-9\-]{10,250}" + _E, "xapp-"),
    _own(
        "stripe-key",
        _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,247}" + _E,
        "sk_live_",
        "rk_live_",
        "sk_test_",
        "rk_test_",
    ),
    _own("stripe-key", _B + r"whsec_[A-Za-z0-9+/=]{24,}", "whsec_"),
    Rule(
        "bearer-token",
        re.compile(
            r"(?:Bearer|bearer|BEARER)\s+([A-Za-z0-9\-._~+/]{16,}=*)"
            r"(?![A-Za-z0-9\-._~+/=])"
        ),
        ("Bearer", "bearer", "BEARER"),
        1,
        lambda t: any(c.isdigit() for c in t),
    ),
    Rule(
        "basic-auth",
        re.compile(
            r"(?:Basic|basic|BASIC)\s+([A-Za-z0-9+/]{8,}={0,2})"
            r"(?![A-Za-z0-9+/=])"
        ),
        ("Basic", "basic", "BASIC"),
        1,
        _basic_ok,
    ),
    _own(
        "url-password",
        r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:\"'<>]*:([^\s/?#@\"'<>]+)@",
        "://",
        group=1,
    ),
    Rule(
        "private-key",
        re.compile(
            r"-----BEGIN (?P<kind>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"
            r"(?P<body>.*?)(?:-----END (?P=kind)-----|\Z|(?=[\"']))",
            re.DOTALL,
        ),
        ("-----BEGIN ",),
        2,
    ),
)


def _ds(name: str, plugin: type, keywords: Iterable[str], groups: Sequence[int] = ()) -> list[Rule]:
    patterns = list(plugin.denylist)  # type: ignore[attr-defined]
    return [
        Rule(name, pattern, tuple(keywords), groups[i] if i < len(groups) else 0, bounded=False)
        for i, pattern in enumerate(patterns)
    ]


# detect-secrets plugins with a literal we can gate on. Its Discord and Telegram plugins
# have none (they would run on every string) and its keyword, entropy and IP plugins
# are too noisy for recorded traffic; entropy is used only under credential-named fields.
_DS_RULES: tuple[Rule, ...] = (
    *_ds("aws-access-key-id", AWSKeyDetector, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    *[
        Rule("aws-secret-access-key", r.pattern, ("aws", "AWS", "Aws"), 1, bounded=False)
        for r in _ds("aws", AWSKeyDetector, ())[1:]
    ],
    *_ds("azure-storage-key", AzureStorageKeyDetector, ("AccountKey=",)),
    *_ds("url-password", BasicAuthDetector, ("://",), (1,)),
    *_ds("github-token", GitHubTokenDetector, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    *_ds(
        "gitlab-token",
        GitLabTokenDetector,
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "GR1348941",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
        ),
    ),
    *_ds("mailchimp-key", MailchimpDetector, ("-us",)),
    *_ds("npm-token", NpmDetector, ("_authToken",), (1,)),
    *_ds("openai-api-key", OpenAIDetector, ("T3BlbkFJ",)),
    *_ds("pypi-token", PypiTokenDetector, ("pypi-",)),
    *_ds("sendgrid-key", SendGridDetector, ("SG.",)),
    *_ds("slack-token", SlackDetector, ("xox", "hooks.slack.com")),
    *_ds("square-oauth-secret", SquareOAuthDetector, ("sq0csp-",)),
    *_ds("stripe-key", StripeDetector, ("k_live_",)),
    *_ds("twilio-key", TwilioKeyDetector, ("AC", "SK")),
)

DEFAULT_RULES: tuple[Rule, ...] = _OWN_RULES + _DS_RULES


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


class Detectors:
    """A fixed set of rules behind one keyword automaton. Pure and thread-safe after init.

    `hints` are extra literals that only report whether they occur (`scan(...)[1]`), so
    a caller can gate its own work on the same single pass over the text.
    """

    def __init__(self, rules: Iterable[Rule] = DEFAULT_RULES, *, hints: Iterable[str] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        automaton = ahocorasick.Automaton()
        by_keyword: dict[str, list[int]] = {}
        # A rule with no keywords (a user's own pattern) cannot be gated: it runs on every text.
        self._always = frozenset(i for i, rule in enumerate(self.rules) if not rule.keywords)
        for index, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(index)
        for hint in hints:
            by_keyword.setdefault(hint, []).append(_HINT)
        self._gated = bool(by_keyword)
        self._empty = not by_keyword and not self._always
        for keyword, indexes in sorted(by_keyword.items()):
            automaton.add_word(keyword, tuple(sorted(set(indexes))))
        automaton.make_automaton()
        self._automaton = automaton

    def spans(self, text: str) -> list[Span]:
        """Every detector match in `text`, minus known id shapes, in text order."""
        return self.scan(text)[0]

    def scan(self, text: str) -> tuple[list[Span], bool]:
        """Detector matches in `text` and whether any hint literal occurs in it."""
        if self._empty or len(text) < 8:
            return [], False
        fired: set[int] = set(self._always)
        if self._gated:
            for _end, indexes in self._automaton.iter(text):
                fired.update(indexes)
        if not fired:
            return [], False
        hinted = _HINT in fired
        fired.discard(_HINT)
        if not fired:
            return [], hinted
        # One long base64 run (an image, `encrypted_content`): a key can only be the whole
        # of it or start it; anything found inside is chance. Try the start only.
        blob = len(text) >= 256 and _BLOB.fullmatch(text) is not None
        out: list[Span] = []
        for index in sorted(fired):
            rule = self.rules[index]
            matches = rule.pattern.finditer(text) if not blob else _first(rule.pattern, text)
            for match in matches:
                group = rule.group if rule.group <= (rule.pattern.groups or 0) else 0
                start, end = match.span(group)
                if start < 0 or end <= start:
                    continue
                secret = text[start:end]
                if is_known_id(secret):
                    continue
                if rule.validate is not None and not rule.validate(secret):
                    continue
                if not rule.bounded and _glued(text, start, end):
                    continue
                out.append(Span(start, end, rule.name, None))
        out.sort()
        return out, hinted
