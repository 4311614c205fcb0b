"""redactkey leaves the host process alone: logging, warnings, and where warnings point."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT
from redactkey import FixtureDir, ModelFixtures, Redactor, RunSecrets, VolatileValueWarning

VOLATILE = {
    "model": "m",
    "messages": [{"role": "user", "content": "id 123e4567-e89b-12d3-a456-426614174000"}],
}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        cwd=ROOT, timeout=120, check=False,
    )


class TestImport:
    """Importing redactkey changes no process-wide logging or warnings state."""

    def test_host_warnings_still_printed(self) -> None:
        """`import redactkey; warnings.warn(...)` prints the warning on stderr."""
        done = _run("""
            import warnings
            import redactkey
            import redactkey.pytest_plugin
            redactkey.Redactor().redact("x")
            warnings.warn("host-warning-marker")
        """)
        assert done.returncode == 0, done.stderr
        assert "UserWarning: host-warning-marker" in done.stderr

    def test_logging_state_unchanged(self) -> None:
        """Warnings capture, the warnings hook and detect-secrets' logger are as before."""
        done = _run("""
            import logging, warnings
            hook = warnings.showwarning
            import redactkey
            redactkey.Redactor().findings("sk-proj-" + "Ab3dE5gH" * 6)
            assert warnings.showwarning is hook, "warnings.showwarning replaced"
            assert logging.getLogger("py.warnings").handlers == []
            assert logging.getLogger("detect-secrets").handlers == []
            print("ok")
        """)
        assert done.stdout.strip() == "ok", done.stderr

    def test_logging_state_unchanged_when_detect_secrets_loads_mid_run(self) -> None:
        """A detect-secrets pattern is read from its plugin class's body the first time its
        rule fires, without importing detect-secrets; where the body cannot be read so, the
        plugin module is imported then, long after import; the host's warnings hook and
        loggers are as before either way."""
        done = _run("""
            import logging, sys, warnings
            import redactkey
            from redactkey.scan import _rules
            hook = warnings.showwarning
            assert "detect_secrets" not in sys.modules
            token = "xox" + "b-" + "1234567890" + "-" + "1234567890123" + "-" + "Ab3dE5gH" * 3
            found = redactkey.Redactor().findings("token " + token)
            assert [f.rule for f in found] == ["slack-token"], found
            assert "detect_secrets" not in sys.modules
            _rules._class_denylist = lambda module, name: None  # the import path
            _rules._plugin_pattern.cache_clear()
            for rule in _rules.DEFAULT_RULES:
                rule.__dict__.pop("regex", None)
            found = redactkey.Redactor().findings("token " + token)
            assert "detect_secrets" in sys.modules
            assert [f.rule for f in found] == ["slack-token"], found
            assert warnings.showwarning is hook, "warnings.showwarning replaced"
            assert logging.getLogger("py.warnings").handlers == []
            assert logging.getLogger("detect-secrets").handlers == []
            print("ok")
        """)
        assert done.stdout.strip() == "ok", done.stderr

    def test_host_capture_kept(self) -> None:
        """A host that captures warnings into logging itself keeps doing so."""
        done = _run("""
            import logging, warnings
            logging.captureWarnings(True)
            hook = warnings.showwarning
            import redactkey
            assert warnings.showwarning is hook
            print("ok")
        """)
        assert done.stdout.strip() == "ok", done.stderr


class TestWarningLocation:
    """A redactkey warning names the line of the user's call, not a redactkey module."""

    def _fixtures(self, tmp_path: Path) -> ModelFixtures:
        return ModelFixtures(FixtureDir(tmp_path), mode="record",
                             redactor=Redactor(RunSecrets({})))

    def test_call(self, tmp_path: Path) -> None:
        """`call` warns at the caller's line."""
        fixtures = self._fixtures(tmp_path)
        with pytest.warns(VolatileValueWarning) as caught:
            fixtures.call("text", VOLATILE, lambda: "answer")
        assert {Path(w.filename).name for w in caught} == {Path(__file__).name}

    def test_stream_and_decorator(self, tmp_path: Path) -> None:
        """`stream` and a `wrap`-decorated function warn at the caller's line too."""
        fixtures = self._fixtures(tmp_path)
        with pytest.warns(VolatileValueWarning) as caught:
            list(fixtures.stream("chat", VOLATILE, lambda: iter(["a", "b"])))

        @fixtures.wrap(kind="text")
        def complete(model: str, messages: list[dict[str, str]]) -> str:
            return "answer"

        with pytest.warns(VolatileValueWarning) as caught_wrapped:
            complete(**VOLATILE)  # type: ignore[arg-type]
        names = {Path(w.filename).name for w in [*caught, *caught_wrapped]}
        assert names == {Path(__file__).name}
