"""The `redactkey` fixture: each test's Recorder, which every other fixture is a view of,
and the advice a miss ends with, which never names the command that was just run."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
        monkeypatch.delenv(name, raising=False)


def test_every_fixture_is_a_view_of_the_recorder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from redactkey import Recorder

        def test_views(redactkey, model_fixtures, tool_fixtures, fixture_store, redactor,
                       run_secrets, redactkey_transport, redactkey_settings):
            assert isinstance(redactkey, Recorder)
            assert model_fixtures is redactkey.models and tool_fixtures is redactkey.tools
            assert fixture_store is redactkey.store and redactor is redactkey.redactor
            assert run_secrets is redactkey.secrets
            assert redactkey_transport.mode == redactkey.model_mode == "replay"
            assert redactkey.mode == redactkey_settings.mode
        """
    )
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)


def test_the_recorder_follows_marker_and_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_option(redactkey):
            assert (redactkey.mode, redactkey.model_mode) == ("record", "live")

        @pytest.mark.redactkey(mode="auto")
        def test_marker(redactkey):
            assert (redactkey.mode, redactkey.model_mode) == ("auto", "auto")
            assert redactkey.requests_session().get_adapter("https://x.test/").mode == "auto"
        """
    )
    pytester.runpytest(*QUIET, "--redactkey-mode=record", "--redactkey-model-mode=live"
                       ).assert_outcomes(passed=2)


def test_an_override_of_redactkey_is_what_the_views_show(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def redactkey(redactkey):
            return redactkey.replace(label="mine")
        """
    )
    pytester.makepyfile(
        """
        def test_label(model_fixtures):
            assert model_fixtures.label == "mine"
        """
    )
    pytester.runpytest(*QUIET).assert_outcomes(passed=1)


class TestMissAdvice:
    """What a failed test says to do about a miss depends on where its mode came from."""

    TEST = """
        import pytest

        {marker}
        def test_call(redactkey):
            redactkey.models.call("text", {{"prompt": "not recorded"}}, lambda: "live")
        """

    def test_a_marker_that_keeps_replay_is_named(self, pytester: pytest.Pytester) -> None:
        """`pytest --redactkey-mode=record` with a marker that says replay: the advice is
        to change the marker, never to run the command just run."""
        pytester.makepyfile(self.TEST.format(marker='@pytest.mark.redactkey(mode="replay")'))
        result = pytester.runpytest(*QUIET, "--redactkey-mode=record")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*@pytest.mark.redactkey(mode='replay') sets it: change "
                                     "it to mode='record'*"])
        assert "run with --redactkey-mode=record" not in result.stdout.str()

    def test_a_model_mode_option_names_the_model_option(
        self, pytester: pytest.Pytester
    ) -> None:
        pytester.makepyfile(self.TEST.format(marker=""))
        result = pytester.runpytest(*QUIET, "--redactkey-mode=record",
                                    "--redactkey-model-mode=replay")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*to record it: run with --redactkey-model-mode=record*"])
        assert "run with --redactkey-mode=record" not in result.stdout.str()

    def test_the_default_replay_names_the_option(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(self.TEST.format(marker=""))
        result = pytester.runpytest(*QUIET)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*to record it: run with --redactkey-mode=record*"])

    def test_a_layer_built_apart_is_named(self, pytester: pytest.Pytester) -> None:
        """A client built from the store alone reads REDACTKEY_MODE, not the option: the
        report says so, and how to build it from the fixture."""
        pytester.makepyfile(
            """
            import httpx2
            from redactkey import FixtureTransport

            def test_apart(fixture_store):
                transport = FixtureTransport(fixture_store, inner=httpx2.MockTransport(
                    lambda request: httpx2.Response(200, json={})))
                with httpx2.Client(transport=transport) as client:
                    client.get("https://api.example.com/v1/x")
            """
        )
        result = pytester.runpytest(*QUIET, "--redactkey-mode=record")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "*set REDACTKEY_MODE=auto*",
            "*built apart from the redactkey fixture, which reads REDACTKEY_MODE itself*",
        ])
