"""A new user's first runs through the pytest plugin: dummy keys, settings in reach."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly")
REAL_LOOKING = "sk-proj-" + "Qz8Rw3Tk" * 5

TEST_CHAT = """
    def test_chat(model_fixtures):
        request = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}
        assert model_fixtures.call("chat", request, lambda: {"text": "hello"}) == {
            "text": "hello"}
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


class TestDummyKeys:
    """`OPENAI_API_KEY=dummy pytest` replays; recording with it names the slot and setting."""

    def test_dummy_key_replays_green(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Recorded with a real-looking key, replayed with `dummy`: green, one summary note."""
        pytester.makepyfile(test_app=TEST_CHAT)
        monkeypatch.setenv("OPENAI_API_KEY", REAL_LOOKING)
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        result = run(pytester, "-W", "error")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([
            "stand-in secrets skipped*",
            "  OPENAI_API_KEY: its value is shorter than the safe minimum of 8 characters",
        ])
        assert result.stdout.str().count("OPENAI_API_KEY") == 1

    def test_recording_with_dummy_names_slot_and_setting(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """In record mode the dummy is an error naming the slot and `min-secret-length`."""
        pytester.makepyfile(test_app=TEST_CHAT)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        result = run(pytester, "--redactkey-mode=record")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*'OPENAI_API_KEY'*min-secret-length*"])

    @pytest.mark.parametrize("where", ["ini", "pyproject"])
    def test_minimum_lowered_from_pytest_or_pyproject(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
    ) -> None:
        """`min-secret-length` in pyproject or the ini `redactkey_min_secret_length` lets a
        short credential record, redacted."""
        if where == "ini":
            pytester.makeini("[pytest]\nredactkey_min_secret_length = 5\n")
        else:
            pytester.makepyprojecttoml("[tool.redactkey]\nmin-secret-length = 5\n")
        pytester.makepyfile(test_app="""
            import os

            def test_chat(model_fixtures):
                request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
                key = os.environ["SHORT_API_KEY"]
                model_fixtures.call("chat", request, lambda: {"text": "key " + key})
        """)
        monkeypatch.setenv("SHORT_API_KEY", "Qz8Rw3")
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        written = "".join(p.read_text() for p in pytester.path.rglob("*.json"))
        assert "key [REDACTED]" in written
        assert "Qz8Rw3" not in written

    def test_bad_ini_minimum_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        """A minimum outside 4..256 is refused with the setting's name."""
        pytester.makeini("[pytest]\nredactkey_min_secret_length = 2\n")
        pytester.makepyfile(test_app=TEST_CHAT)
        result = run(pytester)
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*redactkey_min_secret_length*4 to 256*"])
