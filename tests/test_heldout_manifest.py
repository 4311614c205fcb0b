"""The held-out labelled set of `bench_check_precision.py` parses, is sourced, and builds."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import random
import re
import string
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml

from redactkey import Redactor

BENCHMARKS = Path(__file__).resolve().parent / "benchmarks"
LABELS = {"secret", "benign", "placeholder"}
KINDS = {"generated", "checksum-fails", "wrong-length", "sequential", "repeated-char",
         "repeated-block", "placeholder-word", "template", "documented-example",
         "weak-password", "short", "wrong-prefix", "fragment", "code", "prose", "identifier",
         "punctuation-run", "publishable-key"}
# The project's rules were tuned on these: a held-out set takes nothing from them.
TUNED_ON = ("gitleaks", "detect-secrets")


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _load("bench_check_precision")
MANIFEST = json.loads((BENCHMARKS / "heldout_manifest.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = MANIFEST["cases"]


def test_every_source_names_a_file_at_a_commit_under_a_licence() -> None:
    sources = MANIFEST["sources"]
    assert len({source["scanner"] for source in sources.values()}) >= 4
    for key, source in sources.items():
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), key
        assert source["repo"].count("/") == 1, key
        assert source["path"], key
        assert source["licence"], key
        assert not any(name in source["repo"].lower() for name in TUNED_ON), key


def test_every_case_is_labelled() -> None:
    for index, case in enumerate(CASES):
        where = f"case {index}"
        assert case["label"] in LABELS, where
        assert case["kind"] in KINDS, where
        assert case["says"] in ("detect", "ignore"), where
        assert case["source"] in MANIFEST["sources"], where
        assert isinstance(case["rule"], str), where
        assert case["rule"], where
        assert case["shape"] is False or case["label"] == "secret", where
        assert "{s}" in case.get("context", "{s}"), where


def test_no_secret_is_stored_literally() -> None:
    for index, case in enumerate(CASES):
        if case["label"] != "secret":
            assert isinstance(bench.literal(case), str), f"case {index}"
            continue
        assert "value" not in case, f"case {index}"
        generated = [part for part in case["parts"] if isinstance(part, dict)]
        assert generated or case["kind"] == "weak-password", f"case {index}"


def test_no_literal_reads_as_a_provider_key() -> None:
    """A stand-in that a provider's pattern matches is split in two parts, so that no
    scanner reading this repository takes the manifest for a leak."""
    exempt = {"url-password", "sensitive-key", "private-key", "jwt"}
    redactor = Redactor()
    for index, case in enumerate(CASES):
        for part in [case.get("value", "")] + [p for p in case.get("parts", [])
                                               if isinstance(p, str)]:
            rules = {f.rule for f in redactor.findings(part)}
            assert not {r for r in rules - exempt if not r.endswith("near-miss")}, \
                f"case {index}"


def test_every_placeholder_shows_what_makes_it_a_stand_in() -> None:
    for index, case in enumerate(CASES):
        if case["label"] != "placeholder":
            continue
        if case["kind"] == "documented-example":
            assert case.get("note"), f"case {index}: name the document"
        else:
            assert case["kind"] in bench.fake_signs(bench.literal(case)), f"case {index}"


@pytest.mark.parametrize(("text", "signs"), [
    ("gsk_aBcDeFgHiJkLmNoPqRsT1234567890", {"sequential"}),
    ("glrt-t1_xY9kLmNpQrStUvWx", {"sequential"}),
    ("sk-ant-oat01-zQ9wX8cV7bN6mD5sT4fR", {"sequential"}),
    ("pk_live_AAAAAAAAAAAA", {"repeated-char"}),
    ("AKIA" + "DEADBEEFDEADBEEF", {"repeated-block"}),
    ("https://user:${PASSWORD}@example.com", {"template", "placeholder-word"}),
])
def test_fake_signs(text: str, signs: set[str]) -> None:
    assert bench.fake_signs(text) == signs


def test_a_random_key_shows_no_sign() -> None:
    rng = random.Random(7)
    for _ in range(200):
        body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(40))
        assert bench.fake_signs(body) == set(), body


def test_every_case_builds_in_every_context(tmp_path: Path) -> None:
    outcomes = []
    rng = random.Random(bench.SEED)
    for index, case in enumerate(CASES):
        value = bench.labelled.build(case, rng)
        text = bench.labelled.embed(case, value, {})
        assert value in text
        paths = bench.labelled.write_contexts(tmp_path, f"case{index:03d}", text)
        outcomes.append((value, paths))
    for value, paths in outcomes:
        assert set(paths) == set(bench.CONTEXTS)
        for path in paths.values():
            text = path.read_text(encoding="utf-8")
            document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
            assert any(value in string for string in _strings(document)), path


def _strings(node: Any) -> list[str]:
    """Every string of a document, URL-decoded, and the strings of those that are JSON."""
    if isinstance(node, dict):
        return [s for item in node.values() for s in _strings(item)]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    if not isinstance(node, str):
        return []
    out = [node, unquote(node)]
    with contextlib.suppress(ValueError):
        out += _strings(json.loads(node))
    return out
