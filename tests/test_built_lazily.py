"""What a run may never need is not imported, compiled or analysed until it is needed."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
import redactkey, redactkey.pytest_plugin
from redactkey import ModelFixtures, Redactor, RunSecrets
from redactkey.scan._rules import DEFAULT_RULES

redactor = Redactor(RunSecrets())
redactor.learn({"url": "https://api.example/v1?q=a", "note": "role: user"})
text = redactor.redact({"messages": [{"role": "user", "content": "plain words " * 200}]})
print(json.dumps({
    "modules": sorted(m for m in ("filelock", "detect_secrets", "requests") if m in sys.modules),
    "rules": len(DEFAULT_RULES),
    "compiled": sorted(r.name for r in DEFAULT_RULES if "regex" in r.__dict__),
}))
"""


# Records one model call, then replays it in a process of its own, as a test run does.
_REPLAY_PROBE = """
import json, sys
from redactkey import FixtureDir, ModelFixtures

request = {"model": "tiny", "messages": [{"role": "user", "content": "say it " * 40}]}
if sys.argv[1] == "record":
    ModelFixtures(FixtureDir("fixtures"), mode="record").call("text", request, lambda: "said")
    sys.exit()
layer = ModelFixtures(FixtureDir("fixtures"), mode="replay")
assert layer.call("text", request, None) == "said"
print(json.dumps({
    "modules": sorted(m for m in ("redactkey.commands._issues", "detect_secrets")
                      if m in sys.modules),
}))
"""


def _probe(cwd: str, probe: str = _PROBE, *args: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True,
        timeout=120, cwd=cwd,
    )
    out: dict[str, object] = json.loads(result.stdout)
    return out


class TestBuiltLazily:
    def test_a_run_without_cassettes_imports_no_lock_and_no_plugin(
        self, tmp_path: object
    ) -> None:
        """Importing the package and the plugin and redacting loads neither filelock (a
        cassette writer's lock) nor detect-secrets (and the `requests` it loads) while none
        of its rules fires."""
        assert _probe(str(tmp_path))["modules"] == []

    def test_rules_compile_only_where_their_keywords_occur(self, tmp_path: object) -> None:
        """Building a redactor and redacting text that holds no rule's keyword compiles no
        rule's pattern."""
        out = _probe(str(tmp_path))
        assert out["rules"] != 0
        assert out["compiled"] == []

    def test_a_replay_loads_no_check_module(self, tmp_path: object) -> None:
        """Replaying a call loads neither the findings of the checks nor detect-secrets."""
        subprocess.run([sys.executable, "-c", _REPLAY_PROBE, "record"], check=True,
                       timeout=120, cwd=str(tmp_path))
        out = _probe(str(tmp_path), _REPLAY_PROBE, "replay")
        assert out == {"modules": []}
