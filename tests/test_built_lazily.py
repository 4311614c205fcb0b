"""What a run may never need is not imported, compiled or analysed until it is needed."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
import redactkey, redactkey.pytest_plugin
from redactkey import ModelFixtures, Redactor, RunSecrets
from redactkey._detectors import DEFAULT_RULES, DeferredPattern

redactor = Redactor(RunSecrets())
redactor.learn({"url": "https://api.example/v1?q=a", "note": "role: user"})
text = redactor.redact({"messages": [{"role": "user", "content": "plain words " * 200}]})
deferred = [rule for rule in DEFAULT_RULES if isinstance(rule.pattern, DeferredPattern)]
print(json.dumps({
    "modules": sorted(m for m in ("filelock", "tomllib", "tomli", "detect_secrets", "requests")
                      if m in sys.modules),
    "deferred": len(deferred),
    "compiled": sorted(r.name for r in deferred if r.pattern._compiled is not None),
    "worked_out": sum(b is not None for b in redactor._detectors._bounds),
}))
"""


def _probe(cwd: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True,
        timeout=120, cwd=cwd,
    )
    out: dict[str, object] = json.loads(result.stdout)
    return out


class TestBuiltLazily:
    def test_a_run_without_config_or_cassettes_imports_no_lock_and_no_toml_parser(
        self, tmp_path: object
    ) -> None:
        """Importing the package and the plugin and redacting loads neither filelock (a
        cassette writer's lock) nor a TOML parser (a configuration file's), nor
        detect-secrets (and the `requests` it loads) while none of its rules fires."""
        assert _probe(str(tmp_path))["modules"] == []

    def test_rules_compile_and_reach_only_where_their_keywords_occur(
        self, tmp_path: object
    ) -> None:
        """Building a redactor and redacting text that holds no rule's keyword compiles no
        rule pattern and works out no rule's reach."""
        out = _probe(str(tmp_path))
        assert out["deferred"] != 0
        assert out["compiled"] == []
        assert out["worked_out"] == 0
