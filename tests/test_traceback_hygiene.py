"""A failing test's traceback never shows a secret that redactkey was handed.

pytest prints the arguments of the frames in a traceback; redactkey's public entry
points re-raise their own errors with the inner frames (raw requests, secret values)
cut away.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

# Built at run time; the fake value only has to be long and unusual.
SECRET = "zqTb" + "Xy7Kp9Lm2Nb4Vc6" * 2
SHORT = "Qw7" + "zK9"

PROJECT = f'''
import math
import pytest
from redactkey import (FixtureDir, ModelFixtures, Redactor, RunSecrets, canonicalize,
                       collect_run_secrets, request_key)

SECRET = {SECRET!r}
SHORT = {SHORT!r}

def secrets():
    s = RunSecrets()
    s.add("TOOL_TOKEN", SECRET)
    return s

def test_short_secret():
    RunSecrets(skip_short=False).add("PIN_TOKEN", SHORT)

def test_short_secret_from_env():
    RunSecrets.from_env({{"SERVICE_API_KEY": SHORT, "REDACTKEY_MODE": "record"}})

def test_short_secret_from_component():
    class Tool:
        secret_slots = {{"PIN_TOKEN": lambda: SHORT}}
    collect_run_secrets([Tool()], skip_short=False)

def test_replay_miss():
    fixtures = ModelFixtures(FixtureDir("fx"), mode="replay", redactor=Redactor(secrets()))
    fixtures.call("chat", {{"model": "m", "messages": [{{"role": "user",
                  "content": "token " + SECRET}}]}}, None)

def test_stream_miss():
    fixtures = ModelFixtures(FixtureDir("fx"), mode="replay", redactor=Redactor(secrets()))
    fixtures.stream("chat", {{"model": "m", "prompt": SECRET}}, None)

def test_uncanonicalisable_request():
    request_key("chat", {{"model": "m", "prompt": SECRET, "temperature": math.nan}},
                redactor=Redactor(secrets()))

def test_uncanonicalisable_value():
    canonicalize({{"token": SECRET, "bad": {{1, 2}}}})
'''


@pytest.mark.slow  # a pytest subprocess per test
class TestTracebacks:
    @pytest.mark.parametrize("style", ["auto", "long"])
    def test_no_secret_in_failure_output(self, pytester: pytest.Pytester, style: str) -> None:
        """Every error type fails its test without the secret in the printed traceback."""
        pytester.makepyfile(test_project=PROJECT)
        result = pytester.runpytest_subprocess(f"--tb={style}", "-p", "no:cacheprovider")
        result.assert_outcomes(failed=7)
        output = result.stdout.str() + result.stderr.str()
        for name in ("SecretError", "MissingFixtureError", "CanonicalizationError"):
            assert name in output
        # The test's own source line may show the literal name SECRET, never its value.
        assert SECRET not in output
        assert SHORT not in output

    def test_plugin_fixture_error_shows_no_secret(self, pytester: pytest.Pytester) -> None:
        """A too-short declared secret fails the test's setup by slot name, value unseen."""
        pytester.makeconftest(
            f"""
            import pytest

            @pytest.fixture
            def redactkey_secret_slots():
                return [{{"PIN_TOKEN": lambda: {SHORT!r}}}]
            """
        )
        pytester.makepyfile(test_uses="def test_it(run_secrets):\n    pass\n")
        result = pytester.runpytest_subprocess("--tb=long", "-p", "no:cacheprovider",
                                               "--redactkey-mode=record")
        result.assert_outcomes(errors=1)
        output = result.stdout.str() + result.stderr.str()
        assert "PIN_TOKEN" in output
        assert SHORT not in output
