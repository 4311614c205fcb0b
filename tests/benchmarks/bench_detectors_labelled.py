"""Labelled detector benchmark: recall and false positives per rule, in four contexts.

    python tests/benchmarks/bench_detectors_labelled.py [--keep DIR] [--no-detect-secrets]

Every case of the manifest (`labelled_manifest.json` beside this script: value, rule,
label, source, licence) is built at run time (a real-looking key is a prefix plus a body
generated from a seeded RNG, never a real credential; cases marked `made-up` were written
for this benchmark). A case may put its value inside one of the sample forms gitleaks'
rule tests use (`template`: `githubToken := "{s}"`, an XML element, a YAML literal
block, ...) or inside a literal line of a gitleaks rule test (`context`); the case's text
is then written into four contexts, one file each:

- a JSON chat message (`{"role": "user", "content": "... <value> ..."}`),
- a YAML response body of a vcrpy cassette,
- a vcrpy header list (a non-credential header name, so only the value can tell),
- a URL query value (`?q=<value>`).

Then, per rule and overall:

- `Redactor` (no run secrets): recall = secret values gone from the redacted document;
  false positives = benign values changed;
- `redact check` (one subprocess over the tree): recall = a finding on a secret's file;
  false positives = an *error* on a benign value's file (warnings are not counted);
- `detect-secrets` 1.5 with its default plugins: recall and false positives by any
  finding in the file.

Targets: `Redactor` recall >= 95% on values whose shape identifies them (`shape` true);
`redact check` errors on <= 5% of benign values. Exit 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/ for helpers

from helpers import checksummed_token  # noqa: E402

MANIFEST = HERE / "labelled_manifest.json"
ALPHABETS = {
    "alnum": string.ascii_letters + string.digits,
    "urlsafe": string.ascii_letters + string.digits + "_-",
    "lower": string.ascii_lowercase + string.digits,
    "hex": "0123456789abcdef",
    "upper": string.ascii_uppercase + string.digits,
    "letters": string.ascii_letters,
    "base64": string.ascii_letters + string.digits + "+/",
    "digits": string.digits,
}
CONTEXTS = ("json-message", "yaml-body", "vcr-header", "url-query")
RECALL_TARGET = 0.95
FP_TARGET = 0.05


def build(case: dict[str, Any], rng: random.Random) -> str:
    """The case's value: a literal, or `parts` (literals and generated bodies) joined."""
    if "value" in case:
        return str(case["value"])
    return _parts(case["parts"], rng)


def embed(case: dict[str, Any], value: str, templates: dict[str, str]) -> str:
    """The text written into each context: the value alone, or the value inside one of
    gitleaks' sample forms (`template`: `{i}` the identifier, `{s}` the value) or inside a
    literal line of a rule test (`context`)."""
    form = templates[case["template"]] if "template" in case else case.get("context")
    if form is None:
        return value
    return form.replace("{i}", str(case.get("identifier", ""))).replace("{s}", value)


def _parts(parts: list[Any], rng: random.Random) -> str:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif "base64_of" in part:
            out.append(base64.b64encode(_parts(part["base64_of"], rng).encode()).decode())
        elif "base64url_of" in part:  # a JWT segment: URL-safe, unpadded
            encoded = base64.urlsafe_b64encode(_parts(part["base64url_of"], rng).encode())
            out.append(encoded.decode().rstrip("="))
        else:
            alphabet = ALPHABETS[part["alphabet"]]
            body = "".join(rng.choice(alphabet) for _ in range(int(part["length"])))
            out.append(checksummed_token("", body) if part.get("checksum") else body)
    return "".join(out)


def write_contexts(root: Path, name: str, value: str) -> dict[str, Path]:
    """One file per context holding `value` (a key, or a line with a key in it)."""
    paths: dict[str, Path] = {}
    message = {"messages": [{"role": "user", "content": f"Please use {value} for the call."}]}
    paths["json-message"] = root / "json" / f"{name}.json"
    body = {"output": f"configured: {value}"}
    paths["yaml-body"] = root / "yaml" / f"{name}.yaml"
    paths["vcr-header"] = root / "header" / f"{name}.yaml"
    header_cassette = {"interactions": [{
        "request": {"method": "GET", "uri": "https://api.example.com/v1/items", "body": None,
                    "headers": {"x-trace-note": [value], "accept": ["*/*"]}},
        "response": {"status": {"code": 204, "message": "No Content"}, "headers": {},
                     "body": {"string": ""}}}], "version": 1}
    paths["url-query"] = root / "url" / f"{name}.json"
    from urllib.parse import quote

    query = {"request": {"method": "GET",
                         "url": "https://api.example.com/v1/search?q=" + quote(value, safe="")}}
    body_only = {"interactions": [{
        "request": {"method": "GET", "uri": "https://api.example.com/v1/items", "body": None,
                    "headers": {}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                     "body": {"string": json.dumps(body)}}}], "version": 1}
    docs = {"json-message": json.dumps(message, indent=2),
            "yaml-body": yaml.safe_dump(body_only, width=10**9),
            "vcr-header": yaml.safe_dump(header_cassette, width=10**9),
            "url-query": json.dumps(query, indent=2)}
    for context, path in paths.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(docs[context], encoding="utf-8")
    return paths


def redactor_hits(path: Path, value: str) -> bool:
    """Whether the Redactor (no run secrets) takes the value out of the parsed document."""
    from urllib.parse import quote

    from redactkey import Redactor

    text = path.read_text(encoding="utf-8")
    document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    out = json.dumps(Redactor().redact(document))
    forms = {value, json.dumps(value)[1:-1], quote(value, safe="")}
    return not any(form in out for form in forms)


def run_check(root: Path) -> dict[str, set[str]]:
    """Severities of `redact check` findings per file (one subprocess over the tree)."""
    return {path: {severity for _, severity in found}
            for path, found in check_findings(root).items()}


def check_findings(root: Path) -> dict[str, list[tuple[str, str]]]:
    """(rule, severity) of every `redact check` finding per file, one subprocess over
    the tree (paths relative to `root`, with `/`)."""
    bindir = Path(sys.executable).parent
    redact = shutil.which("redact", path=str(bindir)) or "redact"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REDACTKEY") and "KEY" not in k and "TOKEN" not in k}
    proc = subprocess.run([redact, "check", "--format", "json", "."], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    report = json.loads(proc.stdout)
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for finding in report["findings"]:
        out[finding["path"].replace(os.sep, "/")].append((finding["rule"], finding["severity"]))
    return out


def run_detect_secrets(paths: list[Path]) -> set[str]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    found: set[str] = set()
    with default_settings():
        for path in paths:
            collection = SecretsCollection()
            collection.scan_file(str(path))
            if collection.data:
                found.add(str(path))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--no-detect-secrets", action="store_true")
    options = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    rng = random.Random(20261201)
    root = options.keep or Path(tempfile.mkdtemp(prefix="redactkey-labelled-"))
    root.mkdir(parents=True, exist_ok=True)
    (root / ".redactkey.toml").write_text("", encoding="utf-8")
    try:
        cases = []
        templates = manifest.get("templates", {})
        for index, case in enumerate(manifest["cases"]):
            value = build(case, rng)
            paths = write_contexts(root, f"case{index:03d}", embed(case, value, templates))
            cases.append((case, value, paths))
        check = run_check(root)
        all_paths = [p for _, _, paths in cases for p in paths.values()]
        ds = set() if options.no_detect_secrets else run_detect_secrets(all_paths)
        rows: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        totals = {"secret": [0, 0, 0, 0], "benign": [0, 0, 0, 0], "shape": [0, 0, 0, 0]}
        misses = []
        for case, value, paths in cases:
            label = case["label"]
            for context, path in paths.items():
                rel = path.relative_to(root).as_posix()
                ours = redactor_hits(path, value)
                severities = check.get(rel, set())
                checked = bool(severities) if label == "secret" else "error" in severities
                theirs = str(path) in ds
                for key in ((case["rule"], label), ("ALL", label)):
                    row = rows[key]
                    row[0] += 1
                    row[1] += ours
                    row[2] += checked
                    row[3] += theirs
                for bucket in ([label] + (["shape"] if case.get("shape") else [])):
                    t = totals[bucket]
                    t[0] += 1
                    t[1] += ours
                    t[2] += checked
                    t[3] += theirs
                if label == "secret" and case.get("shape") and not ours:
                    misses.append(f"missed {case['rule']} in {context}")
                if label == "benign" and "error" in severities:
                    misses.append(f"check error on benign {case['rule']} in {context}")
        print(f"{len(cases)} cases x {len(CONTEXTS)} contexts = {len(all_paths)} files")
        print(f"{'rule':34} {'label':7} {'n':>4}  {'Redactor':>9} {'check':>7} {'d-s':>7}")
        for (rule, label), (n, a, b, c) in sorted(rows.items()):
            print(f"{rule:34} {label:7} {n:4d}  {a / n:9.0%} {b / n:7.0%} {c / n:7.0%}")
        s, b, sh = totals["secret"], totals["benign"], totals["shape"]
        recall = sh[1] / max(1, sh[0])
        fp = b[2] / max(1, b[0])
        n = max(1, s[0])
        print(f"\nsecrets: Redactor recall {s[1] / n:.1%}, check {s[2] / n:.1%}, "
              f"detect-secrets {s[3] / n:.1%}")
        print(f"shape-identified secrets: Redactor recall {recall:.1%} (target >= "
              f"{RECALL_TARGET:.0%})")
        print(f"benign: Redactor changed {b[1] / max(1, b[0]):.1%}, check errors {fp:.1%} "
              f"(target <= {FP_TARGET:.0%}), detect-secrets flagged {b[3] / max(1, b[0]):.1%}")
        for line in misses:
            print("  " + line)
        return 0 if recall >= RECALL_TARGET and fp <= FP_TARGET else 1
    finally:
        if options.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
