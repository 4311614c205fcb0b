"""Linear time: every rule's cost grows with the length of the text, not its square.

Each rule (built-in, and a configuration's extra patterns) runs over adversarial 1 MB
strings made for it: its keywords repeated, its examples repeated glued together, each
example cut one character short and repeated (near misses), and one long run of the
example's own characters after its prefix. A pattern that backtracks from every start
position takes minutes on these; a linear one takes milliseconds.
"""

from __future__ import annotations

import gc
import json
import re
import time
from pathlib import Path

import pytest

from redactkey import Redactor
from redactkey._errors import UsageError
from redactkey.commands._cli import main
from redactkey.scan._detectors import DEFAULT_RULES, Detectors, Rule

MB = 1 << 20
# Seconds per MB for one rule on one adversarial string. Linear rules take 1-50 ms here;
# the quadratic `url-password` of old took minutes on 300 KB. Loose, for a busy machine.
BUDGET_PER_MB = 1.5


def _fill(piece: str, size: int = MB) -> str:
    return (piece * (size // max(1, len(piece)) + 1))[:size]


def adversarial(rule: Rule) -> dict[str, str]:
    """Strings of 1 MB that make a backtracking pattern slow."""
    out: dict[str, str] = {}
    keywords = rule.keywords or ("",)
    out["keywords-glued"] = _fill("".join(keywords))
    out["keywords-spaced"] = _fill(" ".join(keywords) + " ")
    for example in rule.examples[:1]:
        out["examples-glued"] = _fill(example)
        out["near-misses-glued"] = _fill(example[:-1])
        body = "".join(sorted(set(example))) or "a"
        out["run-of-example-characters"] = keywords[0] + " " + keywords[0] + _fill(body, MB - 64)
    for char in ":%":
        out[f"run-{char!r}"] = keywords[0] + _fill(char, MB - 64)
    return out


def _rule_id(rule: Rule) -> str:
    return f"{rule.name}:{DEFAULT_RULES.index(rule)}"


def _timed(detectors: Detectors, text: str) -> float:
    """CPU seconds of one scan, the cyclic collector held off: in a worker whose heap holds
    every SDK of the suite, one full collection during the scan costs a second or more,
    which is the heap's cost, not the rule's."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        detectors.spans(text)
        return time.process_time() - start
    finally:
        if collecting:
            gc.enable()


@pytest.mark.slow  # seven adversarial megabytes per rule, timed
class TestBuiltInRules:
    """Every built-in rule is linear on its own adversarial strings."""

    @pytest.mark.parametrize("rule", DEFAULT_RULES, ids=_rule_id)
    def test_within_budget_per_mb(self, rule: Rule) -> None:
        """Each adversarial megabyte costs less than the budget."""
        detectors = Detectors([rule])
        slow = {}
        for label, text in adversarial(rule).items():
            seconds = _timed(detectors, text)
            if seconds > BUDGET_PER_MB * len(text) / MB:
                slow[label] = round(seconds, 2)
        assert not slow, f"{rule.name} is slow on {slow}"


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


def long_line_recording(directory: Path, size: int = 3 * MB) -> Path:
    """A vcrpy-style cassette whose URL and body hold one long URL-safe run (a HAR or a
    recording with a big generated value): the shape that used to stall every command."""
    run = "x" * size
    doc = {
        "interactions": [
            {
                "request": {"method": "GET", "uri": "https://api.example.com/v1?q=" + run,
                            "headers": {"accept": ["*/*"]}, "body": None},
                "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                             "body": {"string": "see https://example.com/" + run}},
            }
        ],
        "version": 1,
    }
    path = directory / "cassettes" / "long.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


class TestLongLines:
    """check, audit and scrub finish on a recording with a 3 MB line (they used to hang)."""

    # Under 2 s each on a development machine; the quadratic pattern took minutes.
    SECONDS = 15.0

    @pytest.mark.parametrize("command", ["check", "audit", "scrub"])
    def test_command_finishes(self, tmp_path: Path, command: str,
                              capsys: pytest.CaptureFixture[str]) -> None:
        """The command runs to the end on the 3 MB line, well within the bound."""
        path = long_line_recording(tmp_path)
        target = str(path if command == "check" else path.parent)
        start = time.process_time()
        code = main([command, target])
        elapsed = time.process_time() - start
        capsys.readouterr()
        assert code in (0, 1)
        assert elapsed < self.SECONDS, f"redact {command} took {elapsed:.1f} CPU-s"
