"""What the pytest plugin builds once per session and what it builds per test.

The settings, stores, run secrets and redactor are shared where nothing can differ
between tests; these tests pin that what may differ still does: a secret a test adds,
a changed environment, a changed configuration, a project's own fixtures, and each
fixture directory's store.
"""

from __future__ import annotations

import json
import os
import textwrap
from typing import Any

import pytest

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
        monkeypatch.delenv(name, raising=False)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


def report(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / ".redactkey-report.json").read_text("utf-8"))
    return data


class TestSecrets:
    """The redactor of each test sees exactly that test's secrets."""

    def test_a_secret_added_in_a_test_is_redacted_there_only(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A value a test adds to `run_secrets` is redacted by that test's `redactor`
        (added after the redactor was built), and by no later test's."""
        monkeypatch.setenv("PIECES_API_KEY", "env-" + "q" * 16)
        pytester.makepyfile(
            """
            ADDED = "added-" + "w" * 12
            FROM_ENV = "env-" + "q" * 16

            def test_adds(redactor, run_secrets):
                assert redactor.redact(f"x {FROM_ENV}") == "x [REDACTED]"
                assert redactor.redact(f"x {ADDED}") == f"x {ADDED}"
                run_secrets.add("ADDED_TOKEN", ADDED)
                assert redactor.redact(f"x {ADDED}") == "x [REDACTED]"

            def test_next_does_not_see_it(redactor):
                assert redactor.redact(f"x {ADDED}") == f"x {ADDED}"
                assert redactor.redact(f"x {FROM_ENV}") == "x [REDACTED]"
            """
        )
        run(pytester).assert_outcomes(passed=2)

    def test_a_learned_credential_stays_in_its_test(self, pytester: pytest.Pytester) -> None:
        """A credential one test's request sends by name is learned for that test alone."""
        pytester.makepyfile(
            """
            import pytest

            SENT = "sent-" + "Zq3x9Lm2" + "Pw8Rt4"

            @pytest.mark.redactkey(mode="record")
            def test_sends(model_fixtures, redactor):
                request = {"api_key": SENT, "q": "hi"}
                model_fixtures.call("text", request, lambda: {"text": "ok"})
                assert redactor.redact(f"echo {SENT}") == "echo [REDACTED]"

            def test_after(redactor):
                assert redactor.redact(f"echo {SENT}") == f"echo {SENT}"
            """
        )
        run(pytester).assert_outcomes(passed=2)

    def test_a_changed_environment_reaches_the_redactor(
        self, pytester: pytest.Pytester
    ) -> None:
        """A secret the environment gains mid-session is redacted while it is set, and not
        after the change is undone."""
        pytester.makepyfile(
            """
            import pytest

            LATER = "later-" + "z" * 12

            def test_before(redactor):
                assert redactor.redact(LATER) == LATER

            @pytest.fixture
            def later_key(monkeypatch):
                monkeypatch.setenv("LATER_API_KEY", LATER)

            def test_while_set(later_key, redactor):
                assert redactor.redact(LATER) == "[REDACTED]"

            def test_after(redactor):
                assert redactor.redact(LATER) == LATER
            """
        )
        run(pytester).assert_outcomes(passed=3)


class TestConfiguration:
    """Each session reads `[tool.redactkey]` afresh."""

    def test_a_config_change_between_sessions_is_picked_up(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PIECES_API_KEY", "env-" + "q" * 16)
        pytester.makepyfile(
            """
            import os

            def test_placeholder(redactor):
                print("SHOWN", redactor.redact(os.environ["PIECES_API_KEY"]))
            """
        )
        for placeholder in ("[GONE]", "[CUT]"):
            pytester.makepyprojecttoml(
                f'[tool.redactkey]\nplaceholder = "{placeholder}"\n'
            )
            result = run(pytester, "-s")
            result.assert_outcomes(passed=1)
            assert f"SHOWN {placeholder}\n" in result.stdout.str()


class TestOverrides:
    """A project's own `redactkey` (and secret slots) is what the plugin's other fixtures
    are views of."""

    def test_overridden_pieces_are_used(self, pytester: pytest.Pytester) -> None:
        pytester.makeconftest(
            """
            import pytest
            from redactkey import Redactor

            @pytest.fixture
            def redactkey_secret_slots():
                return [{"SLOT_TOKEN": lambda: "slot-" + "s" * 14}]

            class Counting:
                def __init__(self, inner):
                    self.inner, self.gets = inner, 0

                def __getattr__(self, name):
                    return getattr(self.inner, name)

                def get(self, kind, key):
                    self.gets += 1
                    return self.inner.get(kind, key)

            @pytest.fixture
            def redactkey(redactkey):
                return redactkey.replace(
                    store_or_path=Counting(redactkey.store),
                    redactor=Redactor(redactkey.secrets, placeholder="[MINE]"))
            """
        )
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(mode="auto")
            def test_call(model_fixtures, fixture_store):
                request = {"model": "m", "messages": [
                    {"role": "user", "content": "tell " + "slot-" + "s" * 14}]}
                answer = model_fixtures.call("text", request, lambda: {"text": "ok"})
                assert answer == {"text": "ok"}
                assert fixture_store.gets == 1
                assert model_fixtures.redactor.placeholder == "[MINE]"
            """
        )
        run(pytester).assert_outcomes(passed=1)
        files = list((pytester.path / "fixtures" / "test_overridden_pieces_are_used").glob("*"))
        assert len(files) == 1
        assert '"tell [MINE]"' in files[0].read_text("utf-8")
        doc = report(pytester)
        assert [e["outcome"] for e in doc["recorded"]] == ["recorded"]


class TestFixtureCost:
    """The plugin's fixtures ask pytest for nothing per test beyond themselves."""

    def test_the_fixtures_take_no_request(self, pytester: pytest.Pytester) -> None:
        """pytest builds a fixture definition of its own for every `request` a fixture
        takes; the plugin's fixtures take none (and none of their pieces)."""
        pytester.makepyfile(
            """
            from redactkey.pytest_plugin import REDACTKEY_FIXTURES

            def test_names(request):
                manager = request.session._fixturemanager
                taken = {}
                for name in sorted(REDACTKEY_FIXTURES | {"redactkey_secret_slots"}):
                    [definition] = manager.getfixturedefs(name, request.node)
                    taken[name] = definition.argnames
                assert taken == {name: () for name in taken}
            """
        )
        run(pytester).assert_outcomes(passed=1)

    def test_a_piece_is_the_test_s_own_when_fixtures_are_asked_late(
        self, pytester: pytest.Pytester
    ) -> None:
        """A test that asks for `model_fixtures` while it runs gets its own pieces: its
        node id labels the calls it records."""
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(mode="record")
            @pytest.mark.parametrize("n", [1, 2])
            def test_late(request, n):
                layer = request.getfixturevalue("model_fixtures")
                assert layer.label == request.node.nodeid
                layer.call("text", {"n": n}, lambda: {"text": "ok"})
            """
        )
        run(pytester).assert_outcomes(passed=2)
        doc = report(pytester)
        assert sorted(e["test"].split("::")[1] for e in doc["recorded"]) == [
            "test_late[1]", "test_late[2]"]


    def test_nothing_of_a_test_s_network_guard_is_kept(self, pytester: pytest.Pytester) -> None:
        """A guarded test's guard (its socket wrappers) is dropped when the test ends: a
        run of many tests keeps none of them alive."""
        pytester.makeconftest(
            """
            from redactkey.pytest_plugin._run import _GUARD_KEY

            def pytest_sessionfinish(session):
                kept = [item.nodeid for item in session.items if _GUARD_KEY in item.stash]
                with open("kept.txt", "w") as out:
                    out.write(repr(kept))
            """
        )
        pytester.makepyfile(
            """
            import socket
            import pytest
            from redactkey.pytest_plugin import NetworkRefusedError

            @pytest.mark.parametrize("n", [1, 2])
            def test_guarded(model_fixtures, n):
                with pytest.raises(NetworkRefusedError):
                    socket.create_connection(("192.0.2.1", 9), timeout=0.1)
            """
        )
        run(pytester, "--redactkey-mode=replay").assert_outcomes(passed=2)
        assert (pytester.path / "kept.txt").read_text() == "[]"

    def test_a_guard_is_freed_without_the_collector(self, pytester: pytest.Pytester) -> None:
        """A test's guard and its socket wrappers hold no reference cycle: they are freed
        as the test ends, with the cyclic garbage collector off."""
        pytester.makeconftest(
            """
            import gc, weakref
            import pytest
            from redactkey.pytest_plugin._run import _GUARD_KEY

            refs = []

            def pytest_configure(config):
                gc.disable()

            @pytest.hookimpl(trylast=True)
            def pytest_runtest_call(item):
                refs.append(weakref.ref(item.stash[_GUARD_KEY]))

            def pytest_sessionfinish(session):
                with open("alive.txt", "w") as out:
                    out.write(repr([ref() is not None for ref in refs]))
                gc.enable()
            """
        )
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.parametrize("n", [1, 2, 3])
            def test_guarded(model_fixtures, n):
                pass
            """
        )
        run(pytester, "--redactkey-mode=replay").assert_outcomes(passed=3)
        assert (pytester.path / "alive.txt").read_text() == "[False, False, False]"

    def test_the_environment_is_compared_as_it_is(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The run's secrets are read again when any variable changes, is added or goes;
        not when only the variable pytest sets for every test does."""
        from redactkey.pytest_plugin._run import _environment

        monkeypatch.setenv("SOME_API_KEY", "first-" + "v" * 12)
        monkeypatch.setenv("PYTEST_CURRENT_TEST", "test_a.py::test_one (setup)")
        seen = _environment()
        assert _environment() == seen
        monkeypatch.setenv("PYTEST_CURRENT_TEST", "test_a.py::test_two (call)")
        assert _environment() == seen
        monkeypatch.delenv("PYTEST_CURRENT_TEST")
        assert _environment() == seen
        monkeypatch.setenv("SOME_API_KEY", "other-" + "v" * 12)
        assert _environment() != seen
        seen = _environment()
        monkeypatch.setenv("NEW_API_KEY", "new-" + "v" * 12)
        assert _environment() != seen
        seen = _environment()
        monkeypatch.delenv("SOME_API_KEY")
        assert _environment() != seen

class TestStores:
    """One store per fixture directory, shared by its tests, never by another directory."""

    REQUEST = '{"model": "m", "messages": [{"role": "user", "content": "the same call"}]}'

    def test_directories_keep_their_own_calls(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(
            f"""
            import pytest

            @pytest.mark.redactkey(path="a", mode="record")
            def test_records_in_a(model_fixtures):
                model_fixtures.call("text", {self.REQUEST}, lambda: {{"text": "a"}})

            @pytest.mark.redactkey(path="b", mode="replay")
            def test_misses_in_b(model_fixtures):
                model_fixtures.call("text", {self.REQUEST}, None)
            """
        )
        result = run(pytester)
        result.assert_outcomes(passed=1, failed=1)
        assert "FAILED test_directories_keep_their_own_calls.py::test_misses_in_b" in (
            result.stdout.str()
        )
        doc = report(pytester)
        assert [(e["test"].split("::")[1], e["store"]) for e in doc["recorded"]] == [
            ("test_records_in_a", "a")
        ]
        assert [(e["test"].split("::")[1], e["store"]) for e in doc["missing"]] == [
            ("test_misses_in_b", "b")
        ]

    @pytest.mark.parametrize("store", ["dir", "cassette"])
    def test_a_later_test_replays_what_an_earlier_one_recorded(
        self, pytester: pytest.Pytester, store: str
    ) -> None:
        """The shared store never serves a stale view: a call recorded by one test is
        replayed by the next one in the same session."""
        pytester.makepyfile(
            f"""
            import pytest

            @pytest.mark.redactkey(mode="record")
            def test_1_records(model_fixtures):
                model_fixtures.call("text", {self.REQUEST}, lambda: {{"text": "first"}})

            @pytest.mark.redactkey(mode="replay")
            def test_2_replays(model_fixtures):
                assert model_fixtures.call("text", {self.REQUEST}, None) == {{"text": "first"}}
            """
        )
        run(pytester, f"--redactkey-store={store}").assert_outcomes(passed=2)
        doc = report(pytester)
        assert [e["test"].split("::")[1] for e in doc["recorded"]] == ["test_1_records"]
        assert [e["test"].split("::")[1] for e in doc["replayed"]] == ["test_2_replays"]

    def test_one_store_for_all_fixtures_of_a_test(self, pytester: pytest.Pytester) -> None:
        """`fixture_store`, `model_fixtures` and `tool_fixtures` of one test share its
        store, so each call is reported once, under the test."""
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(mode="record")
            def test_both(model_fixtures, tool_fixtures, fixture_store):
                assert model_fixtures.store is fixture_store
                assert tool_fixtures.fixtures.store is fixture_store
                model_fixtures.call("text", {"q": 1}, lambda: {"text": "m"})
                tool_fixtures.call("search", {"q": 1}, lambda: ["t"])
            """
        )
        run(pytester).assert_outcomes(passed=1)
        doc = report(pytester)
        assert sorted(e["kind"] for e in doc["recorded"]) == ["text", "tool:search"]


class TestCollection:
    """pytest does not visit fixture files one by one: they hold no tests (docs/performance.md)."""

    PROBE = """
        import json, os

        seen = []

        def pytest_collect_file(file_path):
            seen.append(os.path.relpath(file_path, os.path.dirname(__file__)))

        def pytest_sessionfinish(session):
            with open(os.path.join(os.path.dirname(__file__), "seen.json"), "w") as f:
                json.dump(sorted(seen), f)
        """

    TESTS = """
        import pytest

        @pytest.mark.parametrize("n", range(3))
        def test_call(model_fixtures, n):
            assert model_fixtures.call("text", {"n": n}, lambda: {"text": "t"}) == {"text": "t"}
        """

    def _seen(self, pytester: pytest.Pytester, *args: str, passed: int) -> list[str]:
        run(pytester, *args).assert_outcomes(passed=passed)
        seen: list[str] = json.loads((pytester.path / "seen.json").read_text("utf-8"))
        return [name for name in seen if name not in (".redactkey-report.json", "seen.json")]

    def test_a_directory_of_fixtures_is_passed_over(self, pytester: pytest.Pytester) -> None:
        pytester.makeconftest(self.PROBE)
        pytester.makepyfile(test_calls=self.TESTS)
        self._seen(pytester, "--redactkey-mode=record", passed=3)
        fixtures = sorted((pytester.path / "fixtures" / "test_calls").iterdir())
        assert len(fixtures) == 3  # the calls were recorded where the next run collects
        seen = self._seen(pytester, "--redactkey-mode=replay", passed=3)
        assert seen == ["conftest.py", "test_calls.py"]
        # With the plugin disabled pytest visits every file, fixtures included.
        (pytester.path / "conftest.py").write_text(
            textwrap.dedent(self.PROBE)
            + "\n\nimport pytest\n\n@pytest.fixture\ndef model_fixtures():\n"
            "    class Live:\n        def call(self, kind, request, live):\n"
            "            return live()\n    return Live()\n",
            "utf-8",
        )
        seen = self._seen(pytester, "-p", "no:redactkey", passed=3)
        assert [name for name in seen if name.endswith(".json")] == [
            os.path.join("fixtures", "test_calls", f.name) for f in fixtures
        ]

    def test_tests_and_other_files_beside_fixtures_are_still_collected(
        self, pytester: pytest.Pytester
    ) -> None:
        pytester.makeconftest(self.PROBE)
        pytester.makepyfile(test_calls=self.TESTS)
        self._seen(pytester, "--redactkey-mode=record", passed=3)
        recorded = pytester.path / "fixtures" / "test_calls"
        (recorded / "test_inside.py").write_text("def test_inside():\n    pass\n", "utf-8")
        data = pytester.path / "fixtures" / "other"
        data.mkdir()
        fixture = next(recorded.glob("@model.*.json"))
        (data / fixture.name).write_bytes(fixture.read_bytes())
        (data / "notes.json").write_text("{}", "utf-8")
        seen = self._seen(pytester, "--redactkey-mode=replay", passed=4)
        assert seen == sorted([
            "conftest.py",
            "test_calls.py",
            os.path.join("fixtures", "other", "notes.json"),
            os.path.join("fixtures", "test_calls", "test_inside.py"),
        ])
