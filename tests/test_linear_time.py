"""Linear time, by construction and by measurement: hostile lines generated from the rules.

For every rule (read from the rules file, so a new rule is covered without a new test) and
every credential name, lines that repeat its keywords, its examples glued together, its
near misses, its separators and long runs of its own characters are redacted at two sizes;
the larger must cost no more than 5 times the smaller (linear is 3 times, a quadratic cost
9); one shape per mechanism also runs at half a megabyte and three times that, with the
issue's bar (3.5 times). The measure is a ratio of CPU times in one process, so a slow or
busy machine does not fail it; what a megabyte of each shape costs is a benchmark's figure
(`tests/benchmarks/bench_hostile.py`), not a test's.
"""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Callable, Iterator

import pytest

from redactkey import Redactor, RunSecrets
from redactkey._errors import UsageError
from redactkey.scan._names import SENSITIVE_KEYS
from redactkey.scan._rules import DEFAULT_RULES, Rule

KB = 1 << 10
# 32 KB and 96 KB by default (a quadratic cost already shows 9x there); set
# REDACTKEY_HOSTILE_KB=1024 for the sizes (1 MB and 3 MB).
SMALL = int(os.environ.get("REDACTKEY_HOSTILE_KB", "32")) * KB
LARGE = 3 * SMALL
# Linear growth is 3x, quadratic 9x: the bar sits between them (geometrically).
GROWTH = 5.0
# Below this many CPU seconds a measurement says nothing about growth (timer noise).
FLOOR = 0.1
SEPARATORS = (":", "=", "%", " ", ".", "/", '"', "\\", "a=", "a:")


def _fill(piece: str, size: int) -> str:
    return (piece * (size // max(1, len(piece)) + 1))[:size]


def shapes(keywords: tuple[str, ...], examples: list[str]) -> Iterator[tuple[str, str]]:
    """(label, repeated piece) of the hostile lines for one rule or name."""
    yield "keywords-glued", "".join(keywords)
    yield "keywords-spaced", " ".join(keywords) + " "
    for sep in SEPARATORS:
        yield f"keyword{sep!r}", keywords[0] + sep
    for example in examples[:2]:
        yield "examples-glued", example
        yield "examples-spaced", example + " "
        yield "near-misses", example[:-1]
        yield "near-misses-spaced", example[:-1] + ":"
        body = "".join(sorted(set(example))) or "a"
        yield "keyword-then-run", keywords[0] + body * 64


def _cases() -> list[tuple[str, str]]:
    """(label, piece) for every rule and name, each distinct piece once."""
    out: dict[str, str] = {}
    for index, rule in enumerate(DEFAULT_RULES):
        for label, piece in shapes(rule.keywords, rule.example_texts()):
            out.setdefault(piece, f"{rule.name}:{index}:{label}")
    # the names share one mechanism: the shortest, the longest and a few of each shape
    names = sorted(SENSITIVE_KEYS, key=lambda n: (len(n), n))
    for name in {*names[:3], *names[-2:], "authorization", "api-key", "cookie", "token"}:
        spelled = name.replace("-", "_")
        for label, piece in shapes((spelled,), [f"{spelled}=abcdefgh1234",
                                                f'"{spelled}": "k=k=k=k"']):
            out.setdefault(piece, f"name:{spelled}:{label}")
    # the shapes of the reports that measured minutes before the one-pass scan
    for label, piece in {
        "api_key=value": "api_key=abcdefgh1234",
        "authorization-repeated": "Authorization: ",
        "jwt-segments": "aaaaaaaa.eyJ",
        "gitlab": "glpat-", "eyJ": "eyJ", "aws": "aws", "azure": "AccountKey=", "mailchimp": "-us1",
        "api_key=a=": "api_key=" + "a=" * 64, "authorization-a:": "Authorization: a:",
        "password-x:": "password=x:", "json-k=k": '{"api_key": "k=k=k=',
        "masks": "sk-…abcd1234 ****abcd1234 xxxx...", "pem": "-----BEGIN PRIVATE KEY-----",
        "bearer-run": "Bearer " + "a" * 300, "percent": "%41%42%2F%3D",
    }.items():
        out[piece] = f"report:{label}"
    return sorted((label, piece) for piece, label in out.items())


def _cost(redact: Callable[[str], object], text: str, tries: int = 3) -> float:
    """Best of `tries` CPU times (the cyclic collector held off: a worker's heap holding
    every SDK of the suite costs a collection its own second)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        best = float("inf")
        for _ in range(tries):
            start = time.process_time()
            redact(text)
            best = min(best, time.process_time() - start)
            if best < FLOOR / 4:
                break
        return best
    finally:
        if collecting:
            gc.enable()


def _redactor() -> Redactor:
    secrets = RunSecrets({})
    secrets.add("OPENAI_API_KEY", "sk-proj-" + "Qw3rTy7u" * 6)  # masks and variants too
    return Redactor(secrets)


REDACTOR = _redactor()


@pytest.mark.slow  # a thousand hostile lines at two sizes, timed
class TestHostileLines:
    """Every rule's and name's hostile lines cost linear time in the redactor."""

    @pytest.mark.parametrize(("label", "piece"), _cases(), ids=[c[0] for c in _cases()])
    def test_linear(self, label: str, piece: str) -> None:
        """3x the text costs at most 5x (measured once, and again best of three when once
        says more: a busy machine may slow one run, never three)."""
        texts = _fill(piece, SMALL), _fill(piece, LARGE)
        small, large = (_cost(REDACTOR.redact_text, text, tries=1) for text in texts)
        if large > FLOOR and large > GROWTH * max(small, FLOOR / 3):
            small, large = (_cost(REDACTOR.redact_text, text) for text in texts)
            if large > FLOOR:
                assert large <= GROWTH * max(small, FLOOR / 3), f"{small:.3f} s -> {large:.3f} s"

    # One shape per mechanism at half a megabyte and three times that, where a cost that
    # a memory search hides at 96 KB shows (a search back to a line's start at every name
    # of a one-line text cost 6.8x there); the bar is the issue's: 3x the text, <= 3.5x.
    @pytest.mark.parametrize("label", [
        "report:api_key=value", "report:authorization-repeated", "report:jwt-segments",
        "report:masks", "report:percent", "report:json-k=k", "name:cookie:keyword'='",
    ])
    def test_linear_at_half_a_megabyte(self, label: str) -> None:
        """3x the text costs at most 3.5x (measured as test_linear does)."""
        piece = dict(_cases())[label]
        texts = _fill(piece, 512 * KB), _fill(piece, 3 * 512 * KB)
        small, large = (_cost(REDACTOR.redact_text, text, tries=1) for text in texts)
        if large > 3.5 * small:
            small, large = (_cost(REDACTOR.redact_text, text) for text in texts)
        assert large <= 3.5 * small, f"{small:.3f} s -> {large:.3f} s"

    def test_every_rule_is_covered(self) -> None:
        """The cases are generated from every rule of the rules file."""
        labels = {label.split(":")[0] for label, _ in _cases()}
        assert {rule.name for rule in DEFAULT_RULES} <= labels


class TestExtraPatterns:
    """A configuration's own patterns: linear ones run, pathological ones are refused."""

    def test_linear_extra_pattern_runs(self) -> None:
        """A bounded pattern is accepted and finds its shape."""
        redactor = Redactor(extra_patterns={"acme": r"acme_[0-9a-f]{16}"})
        assert redactor.redact_text("use acme_" + "0123456789abcdef" + " now") == (
            "use [REDACTED] now"
        )

    @pytest.mark.parametrize(
        "pattern",
        [r"(a+)+b", r"(?:x|xx)+y", r"[A-Za-z0-9]*://[a-z]*:([a-z]+)@", r"(\w+\s?)+$"],
    )
    def test_pathological_extra_pattern_is_refused(self, pattern: str) -> None:
        """A pattern that backtracks on long runs is a clear error naming it."""
        with pytest.raises(UsageError, match=r"extra pattern .acme. is too slow"):
            Redactor(extra_patterns={"acme": re.compile(pattern)})


def test_rules_are_data() -> None:
    """Each rule is a `Rule` read from the rules file, with a bounded window."""
    assert all(isinstance(rule, Rule) and rule.width > 0 for rule in DEFAULT_RULES)
