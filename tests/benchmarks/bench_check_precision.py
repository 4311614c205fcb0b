"""Held-out precision and recall of `redact check`, on other scanners' test values.

    python tests/benchmarks/bench_check_precision.py [--keep DIR]

The cases of `heldout_manifest.json` come from the test suites and rule examples of
scanners this project was not tuned on (its `about` and `sources` say which, and how
each value was labelled). Each case is built at run time (a secret is a prefix plus a
generated body, never the source's literal) and written into the four contexts of
`bench_detectors_labelled.py` (a chat message, a cassette body, a cassette header, a URL
query), then `redact check --format json` runs once over the tree.

Printed: the share of non-secret files (benign values and placeholders) that get an
*error* (warnings do not count; goal <= 5%), the recall on secrets whose shape names a
provider that a rule here claims (any finding counts: a warning fails the check too;
goal >= 98%), and a table of every non-secret value that errored and every such secret
that was missed, grouped by cause (the rule that fired or should have, and what the
value looks like). Exit 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_detectors_labelled as labelled  # noqa: E402

MANIFEST = HERE / "heldout_manifest.json"
CONTEXTS = labelled.CONTEXTS
FP_GOAL = 0.05
RECALL_GOAL = 0.98
SEED = 20261208

# What makes a value a stand-in a person can tell by rule (the manifest's `placeholder`).
PLACEHOLDER_WORDS = ("fake", "dummy", "example", "sample", "placeholder", "your", "replace",
                     "notreal", "notareal", "invalid", "changeme", "test", "xxxx", "password",
                     "secret")
_TEMPLATE = re.compile(r"\$\{[^}]*\}|\{\{[^}]*\}\}|\{[A-Za-z_]\w*\}|\$\([^)]*\)|\$[A-Za-z_]\w*"
                       r"|<[A-Za-z_][^<>]*>|&lt;")
_RUN = 6  # letters or digits stepping through the alphabet; a block repeated is 8 or more
_BLOCK = 8


def fake_signs(value: str) -> set[str]:
    """The kinds of stand-in `value` shows (`sequential`, `repeated-char`, `repeated-block`,
    `placeholder-word`, `template`); empty for a value that could be a real key."""
    signs = set()
    lowered = value.lower()
    letters = [ord(c) for c in lowered if c.isascii() and c.isalpha()]
    digits = [int(c) for c in value if c.isascii() and c.isdigit()]
    if _stepping_run(letters) >= _RUN or _stepping_run(digits) >= _RUN:
        signs.add("sequential")
    if re.search(rf"(.)\1{{{_RUN - 1},}}", value):
        signs.add("repeated-char")
    if any(value.find(value[i:i + _BLOCK], i + _BLOCK) >= 0
           for i in range(len(value) - 2 * _BLOCK + 1)):
        signs.add("repeated-block")
    if any(word in lowered for word in PLACEHOLDER_WORDS):
        signs.add("placeholder-word")
    if _TEMPLATE.search(value):
        signs.add("template")
    return signs


def _stepping_run(codes: list[int]) -> int:
    """The longest run that steps by +1 or by -1 throughout, doubled items set aside."""
    collapsed = [c for i, c in enumerate(codes) if i == 0 or c != codes[i - 1]]
    best = run = 1 if collapsed else 0
    step = 0
    for previous, current in itertools.pairwise(collapsed):
        delta = current - previous
        if delta in (1, -1) and (run == 1 or delta == step):
            run, step = run + 1, delta
        elif delta in (1, -1):
            run, step = 2, delta
        else:
            run, step = 1, 0
        best = max(best, run)
    return best


def literal(case: dict[str, Any]) -> str | None:
    """A benign value's or a placeholder's text (`value`, or `parts` that are all literal);
    None for a secret, whose body is generated."""
    if "value" in case:
        return str(case["value"])
    parts = case["parts"]
    return "".join(parts) if all(isinstance(part, str) for part in parts) else None


def describe(case: dict[str, Any], width: int = 70) -> str:
    """A case's text as printed: literals as they are, a generated secret as its shape
    (`<alnum36>`), inside its source line when it has one."""
    text = literal(case)
    value = text if text is not None else _shape(case["parts"])
    text = labelled.embed(case, value, {}).replace("\n", "\\n").replace("\t", " ").strip()
    return text if len(text) <= width else text[:width - 3] + "..."


def _shape(parts: list[Any]) -> str:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif "base64_of" in part or "base64url_of" in part:
            out.append("<b64 " + _shape(part.get("base64_of") or part["base64url_of"]) + ">")
        else:
            crc = "+crc" if part.get("checksum") else ""
            out.append(f"<{part['alphabet']}{part['length']}{crc}>")
    return "".join(out)


@dataclass
class Outcome:
    """What `redact check` said of one case in each context."""

    case: dict[str, Any]
    value: str
    paths: dict[str, Path]
    rules: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # context -> findings

    def errors(self, context: str) -> list[str]:
        return sorted({rule for rule, severity in self.rules[context] if severity == "error"})

    def found(self, context: str) -> bool:
        return bool(self.rules[context])


def run(root: Path, manifest: dict[str, Any]) -> list[Outcome]:
    """Every case written into the four contexts, and one `redact check` over the tree."""
    rng = random.Random(SEED)
    (root / ".redactkey.toml").write_text("", encoding="utf-8")
    outcomes = []
    for index, case in enumerate(manifest["cases"]):
        value = labelled.build(case, rng)
        text = labelled.embed(case, value, {})
        paths = labelled.write_contexts(root, f"case{index:03d}", text)
        outcomes.append(Outcome(case, value, paths))
    findings = labelled.check_findings(root)
    for outcome in outcomes:
        outcome.rules = {context: findings.get(path.relative_to(root).as_posix(), [])
                         for context, path in outcome.paths.items()}
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="write the tree here and keep it")
    options = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    sources = manifest["sources"]
    root = options.keep or Path(tempfile.mkdtemp(prefix="redactkey-heldout-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        outcomes = run(root, manifest)
        return report(outcomes, sources, root)
    finally:
        if options.keep is None:
            shutil.rmtree(root, ignore_errors=True)


def report(outcomes: list[Outcome], sources: dict[str, Any], root: Path) -> int:
    def scanner(outcome: Outcome) -> str:
        return str(sources[outcome.case["source"]]["scanner"])

    clean = [o for o in outcomes if o.case["label"] != "secret"]
    secrets = [o for o in outcomes if o.case["label"] == "secret"]
    claimed = [o for o in secrets if o.case["shape"] and o.case["rule"] != "none"]
    gaps = [o for o in secrets if o.case["shape"] and o.case["rule"] == "none"]
    n = len(CONTEXTS)
    print(f"{len(outcomes)} values x {n} contexts = {len(outcomes) * n} files, from "
          f"{len({scanner(o) for o in outcomes})} scanners")

    def error_rate(group: list[Outcome]) -> tuple[float, int, int]:
        files = sum(bool(o.errors(c)) for o in group for c in CONTEXTS)
        values = sum(any(o.errors(c) for c in CONTEXTS) for o in group)
        return files / max(1, len(group) * n), files, values

    fp, fp_files, fp_values = error_rate(clean)
    print(f"\nnon-secret values: {len(clean)}; error on {fp_files} of {len(clean) * n} files "
          f"= {fp:.1%} (goal <= {FP_GOAL:.0%}); {fp_values} values error in some context")
    warned = sum(bool(o.rules[c]) and not o.errors(c) for o in clean for c in CONTEXTS)
    print(f"  warnings only (near misses and notes, not counted): {warned} files")
    for label in ("benign", "placeholder"):
        group = [o for o in clean if o.case["label"] == label]
        rate, _, values = error_rate(group)
        print(f"  {label:11} {len(group):3d} values: {rate:5.1%} of files, {values} values")
    for name in sorted({scanner(o) for o in clean}):
        group = [o for o in clean if scanner(o) == name]
        rate, _, _ = error_rate(group)
        print(f"  from {name:12} {len(group):3d} values: {rate:5.1%} of files")

    def found_rate(group: list[Outcome], errors_only: bool = False) -> float:
        hits = sum((bool(o.errors(c)) if errors_only else o.found(c))
                   for o in group for c in CONTEXTS)
        return hits / max(1, len(group) * n)

    recall = found_rate(claimed)
    print(f"\nshape-identified secrets of a family a rule here claims: {len(claimed)}; "
          f"reported in {recall:.1%} of files (goal >= {RECALL_GOAL:.0%}), as an error in "
          f"{found_rate(claimed, True):.1%}")
    print(f"all secrets: {len(secrets)}; reported in {found_rate(secrets):.1%} of files; "
          f"not shape-identified: {len(secrets) - len(claimed) - len(gaps)} values, reported in "
          f"{found_rate([o for o in secrets if not o.case['shape']]):.1%}")
    print(f"shape-identified secrets no rule here claims (coverage gaps, not in the goal): "
          f"{len(gaps)}, reported in {found_rate(gaps):.1%}")

    _false_alarms(clean, scanner)
    _misses(claimed, scanner, root, "missed shape-identified secrets (counted in the goal)")
    _warned(claimed, scanner)
    _misses([o for o in secrets if o not in claimed], scanner, root,
            "missed secrets outside the goal (no provider shape, or no rule claims it)")
    return 0 if fp <= FP_GOAL and recall >= RECALL_GOAL else 1


def _where(contexts: list[str]) -> str:
    return "all" if len(contexts) == len(CONTEXTS) else ",".join(contexts)


def _false_alarms(clean: list[Outcome], scanner: Any) -> None:
    groups: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for outcome in clean:
        rules = sorted({r for c in CONTEXTS for r in outcome.errors(c)})
        if rules:
            groups[(" + ".join(rules), outcome.case["kind"])].append(outcome)
    print(f"\n== non-secret values with an error: {sum(map(len, groups.values()))} values, "
          "by rule and by what the value looks like")
    for (rules, kind), group in sorted(groups.items(), key=lambda item: -len(item[1])):
        files = sum(bool(o.errors(c)) for o in group for c in CONTEXTS)
        print(f"\n-- {rules} on {kind} ({len(group)} values, {files} files)")
        for outcome in group:
            contexts = [c for c in CONTEXTS if outcome.errors(c)]
            print(f"   {outcome.case['label']:11} {scanner(outcome):11} {_where(contexts):28} "
                  f"{describe(outcome.case)}")


def _misses(group: list[Outcome], scanner: Any, root: Path, title: str) -> None:
    missed = [o for o in group if not all(o.found(c) for c in CONTEXTS)]
    groups: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for outcome in missed:
        groups[(outcome.case["rule"], outcome.case["kind"])].append(outcome)
    print(f"\n== {title}: {len(missed)} values")
    for (rule, kind), items in sorted(groups.items(), key=lambda item: -len(item[1])):
        print(f"\n-- {rule}, {kind} ({len(items)} values)")
        for outcome in items:
            contexts = [c for c in CONTEXTS if not outcome.found(c)]
            redacted = [c for c in contexts
                        if labelled.redactor_hits(outcome.paths[c], outcome.value)]
            why = (f"Redactor replaces it in {_where(redacted)}: check dismissed it"
                   if redacted else "no rule matched")
            print(f"   {scanner(outcome):11} missed in {_where(contexts):28} "
                  f"{describe(outcome.case)}  [{why}]")


def _warned(claimed: list[Outcome], scanner: Any) -> None:
    warned = [o for o in claimed
              if all(o.found(c) for c in CONTEXTS) and not all(o.errors(c) for c in CONTEXTS)]
    print(f"\n== shape-identified secrets reported only as a warning somewhere: {len(warned)}")
    for outcome in warned:
        contexts = [c for c in CONTEXTS if not outcome.errors(c)]
        rules = sorted({r for c in contexts for r, _ in outcome.rules[c]})
        print(f"   {scanner(outcome):11} {' + '.join(rules):30} in {_where(contexts):28} "
              f"{describe(outcome.case)}")


if __name__ == "__main__":
    sys.exit(main())
