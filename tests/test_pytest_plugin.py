"""The pytest plugin, driven through pytester: options, markers, fixture directories, guard."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


FAKEPROVIDER = Path(__file__).with_name("fakeprovider.py")

# hypothesis's plugin costs ~0.6 s per inner session and is not needed there.
QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
        monkeypatch.delenv(name, raising=False)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in-process on the pytester project."""
    return pytester.runpytest(*QUIET, *args)


SHOW_SETTINGS = """
    def test_show(redactkey_settings):
        print("MODE", redactkey_settings.mode, redactkey_settings.model_mode)
        print("DIR", redactkey_settings.fixture_dir)
"""


class TestModeOptions:
    """`--redactkey-mode`, `--redactkey-model-mode`, the environment and the marker."""

    @pytest.mark.parametrize(
        ("env", "args", "expected"),
        [
            ({}, [], "MODE replay replay"),
            ({"REDACTKEY_MODE": "record"}, [], "MODE record record"),
            ({"REDACTKEY_MODE": "record"}, ["--redactkey-mode=auto"], "MODE auto auto"),
            ({}, ["--redactkey-mode=live"], "MODE live live"),
            ({"REDACTKEY_MODEL_MODE": "live"}, [], "MODE replay live"),
            (
                {"REDACTKEY_MODEL_MODE": "live"},
                ["--redactkey-model-mode=record"],
                "MODE replay record",
            ),
            ({"REDACTKEY_MODE": "record"}, ["--redactkey-model-mode=replay"], "MODE record replay"),
            ({"REDACTKEY_MODE": " Auto "}, [], "MODE auto auto"),
        ],
        ids=[
            "default", "env", "option-wins", "option", "model-env", "model-option", "model-only",
            "env-case",
        ],
    )
    def test_resolution(
        self,
        pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch,
        env: dict[str, str],
        args: list[str],
        expected: str,
    ) -> None:
        """The option beats the environment; the model mode falls back to the mode."""
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        pytester.makepyfile(SHOW_SETTINGS)
        result = run(pytester, "-s", *args)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"*{expected}"])

    def test_marker_beats_option(self, pytester: pytest.Pytester) -> None:
        """A marker's mode is the most specific setting and wins over the option."""
        pytester.makepyfile(
            """
            import pytest

            pytestmark = pytest.mark.redactkey(mode="auto")

            @pytest.mark.redactkey(model_mode="live")
            def test_show(redactkey_settings):
                print("MODE", redactkey_settings.mode, redactkey_settings.model_mode)
            """
        )
        result = run(pytester, "-s", "--redactkey-mode=record")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*MODE auto live"])

    def test_bad_env_mode_is_a_usage_error(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bad REDACTKEY_MODE stops the run with the variable and the valid modes."""
        monkeypatch.setenv("REDACTKEY_MODE", "recrod")
        pytester.makepyfile(SHOW_SETTINGS)
        result = run(pytester)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*REDACTKEY_MODE='recrod'*live, record, replay, auto*"])

    def test_bad_option_mode_is_rejected(self, pytester: pytest.Pytester) -> None:
        """argparse rejects a mode that is not one of the four."""
        pytester.makepyfile(SHOW_SETTINGS)
        result = run(pytester, "--redactkey-mode=replay-all")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--redactkey-mode*invalid choice*"])

    def test_bad_marker_mode_fails_the_test(self, pytester: pytest.Pytester) -> None:
        """A marker with an unknown mode names the test and the valid modes."""
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(mode="sometimes")
            def test_show(redactkey_settings):
                pass
            """
        )
        result = run(pytester)
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*test_show*mode='sometimes'*live, record, replay, auto*"])

    def test_marker_rejects_unknown_keywords(self, pytester: pytest.Pytester) -> None:
        """A typo in a marker keyword is an error, not silently ignored."""
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(pth="x")
            def test_show(redactkey_settings):
                pass
            """
        )
        result = run(pytester)
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*unknown keyword pth*"])

    def test_marker_is_registered_for_strict_markers(self, pytester: pytest.Pytester) -> None:
        """`--strict-markers` accepts the marker and lists it in `--markers`."""
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(path="here")
            def test_ok():
                pass
            """
        )
        run(pytester, "--strict-markers").assert_outcomes(passed=1)
        run(pytester, "--markers").stdout.fnmatch_lines(["@pytest.mark.redactkey(path=*"])

    def test_coexists_with_pytest_recording_options(self, pytester: pytest.Pytester) -> None:
        """pytest-recording's option names (`--record-mode`, ...) do not clash with ours."""
        # The options pytest-recording registers, as it registers them.
        pytester.makeconftest(
            """
            def pytest_addoption(parser):
                group = parser.getgroup("recording")
                group.addoption("--record-mode", action="store", default=None,
                                choices=["once", "new_episodes", "none", "all", "rewrite"])
                group.addoption("--block-network", action="store_true", default=False)
                group.addoption("--allowed-hosts", action="store", default=None)
                group.addoption("--disable-recording", action="store_true", default=False)

            def pytest_report_header(config):
                return "record-mode=" + str(config.getoption("record_mode"))
            """
        )
        pytester.makepyfile(SHOW_SETTINGS)
        result = run(pytester, "-s", "--record-mode=none", "--redactkey-mode=record")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["record-mode=none", "*MODE record record"])


class TestFixtureDirectory:
    """Where a test's fixtures live: per module by default, ini and marker to change it."""

    def test_default_is_per_module(self, pytester: pytest.Pytester) -> None:
        """By default it is `<test dir>/fixtures/<module name>`."""
        pytester.makepyfile(test_calls=SHOW_SETTINGS)
        result = run(pytester, "-s")
        result.stdout.fnmatch_lines([f"*DIR {pytester.path / 'fixtures' / 'test_calls'}"])

    @pytest.mark.parametrize(
        ("ini", "expected"),
        [
            ("recorded/{module}", "recorded/test_calls"),
            ("recorded/{module_path}", "recorded/sub/test_calls"),
            ("recorded", "recorded"),
        ],
        ids=["module", "module-path", "shared"],
    )
    def test_ini_template(self, pytester: pytest.Pytester, ini: str, expected: str) -> None:
        """The ini option is relative to the rootdir and fills {module} / {module_path}."""
        pytester.makeini(f"[pytest]\nredactkey_fixture_dir = {ini}\n")
        sub = pytester.mkpydir("sub")
        (sub / "test_calls.py").write_text(SHOW_SETTINGS.replace("\n    ", "\n"))
        result = run(pytester, "-s", "--strict-config")  # our ini options are registered
        result.stdout.fnmatch_lines([f"*DIR {pytester.path / expected}"])

    def test_marker_path_is_relative_to_the_test_file(self, pytester: pytest.Pytester) -> None:
        """A marker path is relative to the test file, and beats the ini option."""
        pytester.makeini("[pytest]\nredactkey_fixture_dir = elsewhere\n")
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.redactkey(path="shared/calls")
            def test_show(redactkey_settings):
                print("DIR", redactkey_settings.fixture_dir)
            """
        )
        result = run(pytester, "-s")
        result.stdout.fnmatch_lines([f"*DIR {pytester.path / 'shared' / 'calls'}"])


# A local TCP server for the loopback cases, started inside the inner test.
SERVER = """
import json
import socket
import threading

import pytest


@pytest.fixture
def server():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(5)
    def accept():
        try:
            conn, _ = listener.accept()
        except OSError:  # closed before anyone connected (the guard refused)
            return
        conn.close()
    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()
    listener.close()
"""

REMOTE = '("192.0.2.1", 9)'  # TEST-NET-1: documentation range, never routed


class TestNetworkGuard:
    """In replay, a redactkey test cannot reach the network; the patch ends with the test."""

    def test_refuses_with_test_name_and_how_to_record(self, pytester: pytest.Pytester) -> None:
        """The error names the test, the target and how to record."""
        pytester.makepyfile(
            f"""
            import socket

            def test_remote(redactkey_settings):
                sock = socket.socket()
                sock.settimeout(0.5)
                sock.connect({REMOTE})
            """
        )
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "*NetworkRefusedError: test_refuses_with_test_name_and_how_to_record.py::test_remote:"
            " network connection to 192.0.2.1:9 refused*--redactkey-mode=record*",
        ])

    @pytest.mark.parametrize(
        ("module", "call"),
        [
            ("socket", f"socket.socket().connect_ex({REMOTE})"),
            ("socket", f"socket.create_connection({REMOTE}, timeout=0.5)"),
            ("asyncio", f"asyncio.run(asyncio.wait_for(asyncio.open_connection(*{REMOTE}), 0.5))"),
            ("httpx2", "httpx2.Client(timeout=0.5).get('http://192.0.2.1:9/')"),
            ("httpx", "httpx.Client(timeout=0.5).get('http://192.0.2.1:9/')"),
        ],
        ids=["connect_ex", "create_connection", "asyncio", "httpx2", "httpx"],
    )
    def test_every_path_is_refused(
        self, pytester: pytest.Pytester, module: str, call: str
    ) -> None:
        """connect_ex, create_connection, asyncio and the httpx clients all hit the guard."""
        pytester.makepyfile(
            f"""
            import {module}

            import pytest
            from redactkey.pytest_plugin import NetworkRefusedError

            def test_remote(redactkey_settings):
                with pytest.raises(NetworkRefusedError, match="192.0.2.1:9"):
                    {call}
            """
        )
        run(pytester).assert_outcomes(passed=1)

    @pytest.mark.parametrize(
        ("args", "outcome"),
        [
            ([], "failed"),
            (["--redactkey-allow-loopback"], "passed"),
            (["--redactkey-mode=record"], "passed"),
            (["--redactkey-model-mode=live"], "passed"),
        ],
        ids=["replay", "allow-loopback", "record", "live-model"],
    )
    def test_loopback(self, pytester: pytest.Pytester, args: list[str], outcome: str) -> None:
        """Loopback is refused in replay unless allowed; other modes are not guarded."""
        pytester.makeconftest(SERVER)
        pytester.makepyfile(
            """
            import socket

            def test_local(redactkey_settings, server):
                socket.create_connection(server, timeout=2).close()
            """
        )
        result = run(pytester, *args)
        result.assert_outcomes(**{outcome: 1})

    def test_loopback_ini(self, pytester: pytest.Pytester) -> None:
        """The ini option allows loopback too."""
        pytester.makeini("[pytest]\nredactkey_allow_loopback = true\n")
        pytester.makeconftest(SERVER)
        pytester.makepyfile(
            """
            import socket

            def test_local(redactkey_settings, server):
                socket.create_connection(server, timeout=2).close()
            """
        )
        run(pytester).assert_outcomes(passed=1)

    @pytest.mark.parametrize(
        ("guard", "outcomes"),
        [
            ("used", {"passed": 1, "failed": 1}),
            ("all", {"failed": 2}),
            ("off", {"passed": 2}),
        ],
    )
    def test_guard_scope(
        self, pytester: pytest.Pytester, guard: str, outcomes: dict[str, int]
    ) -> None:
        """By default only tests that use redactkey are guarded; `all` and `off` change it."""
        pytester.makeini(f"[pytest]\nredactkey_network_guard = {guard}\n")
        pytester.makeconftest(SERVER)
        pytester.makepyfile(
            """
            import socket

            def test_plain(server):
                socket.create_connection(server, timeout=2).close()

            def test_redactkey(redactkey_settings, server):
                socket.create_connection(server, timeout=2).close()
            """
        )
        run(pytester).assert_outcomes(**outcomes)

    def test_marker_alone_guards(self, pytester: pytest.Pytester) -> None:
        """The marker makes a test a redactkey test even without the fixtures."""
        pytester.makeconftest(SERVER)
        pytester.makepyfile(
            """
            import socket
            import pytest

            @pytest.mark.redactkey
            def test_marked(server):
                socket.create_connection(server, timeout=2).close()
            """
        )
        run(pytester).assert_outcomes(failed=1)

    def test_patch_is_test_scoped(self, pytester: pytest.Pytester) -> None:
        """After a guarded test the next test connects again and `socket` is restored."""
        pytester.makeconftest(SERVER)
        pytester.makepyfile(
            f"""
            import socket
            import pytest
            from redactkey.pytest_plugin import NetworkRefusedError

            def test_guarded(redactkey_settings):
                assert "connect" in socket.socket.__dict__
                with pytest.raises(NetworkRefusedError):
                    socket.create_connection({REMOTE}, timeout=0.5)

            def test_after(server):
                assert "connect" not in socket.socket.__dict__
                socket.create_connection(server, timeout=2).close()
            """
        )
        run(pytester).assert_outcomes(passed=2)
        assert "connect" not in socket.socket.__dict__
        assert "connect_ex" not in socket.socket.__dict__

    @pytest.mark.parametrize("own", [(), ("connect",), ("connect", "connect_ex")])
    def test_a_patch_found_in_place_is_put_back(
        self, monkeypatch: pytest.MonkeyPatch, own: tuple[str, ...]
    ) -> None:
        """What `socket.socket` held as its own before a phase (another tool's patch) is
        what it holds after it; an inherited method is inherited again."""
        from redactkey.clients._guard import NetworkGuard, NetworkRefusedError

        def theirs(self: socket.socket, address: object) -> None:
            raise AssertionError("not reached inside the guard")

        for name in own:
            monkeypatch.setattr(socket.socket, name, theirs, raising=False)
        before = {name: socket.socket.__dict__.get(name) for name in ("connect", "connect_ex")}
        guard = NetworkGuard("t.py::t", "replay", allow_loopback=False, blocked={},
                             how_to_record="record it")
        for _ in range(2):  # two phases of one test
            with guard:
                sock = socket.socket()
                with pytest.raises(NetworkRefusedError):
                    sock.connect(("192.0.2.1", 9))
            after = {name: socket.socket.__dict__.get(name) for name in ("connect", "connect_ex")}
            assert after == before

    def test_fixture_setup_is_guarded(self, pytester: pytest.Pytester) -> None:
        """A fixture that calls out during setup is refused too."""
        pytester.makepyfile(
            f"""
            import socket
            import pytest

            @pytest.fixture
            def remote(redactkey_settings):
                socket.create_connection({REMOTE}, timeout=0.5)

            def test_uses(remote):
                pass
            """
        )
        result = run(pytester)
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*NetworkRefusedError*test_uses*192.0.2.1:9*"])

    def test_swallowed_error_is_still_reported(self, pytester: pytest.Pytester) -> None:
        """When client code hides the error, the failure report still says what happened."""
        pytester.makepyfile(
            f"""
            import socket

            def test_hides(redactkey_settings):
                try:
                    socket.create_connection({REMOTE}, timeout=0.5)
                except Exception:
                    raise AssertionError("connection error") from None
            """
        )
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "*redactkey*",
            "network connection to 192.0.2.1:9 refused: redactkey replays*run with "
            "--redactkey-mode=record*",
        ])


# A stand-in for the record/replay layer: it stores and looks up calls by hand.
CALLS = """
import hashlib

from redactkey import Fixture


def key(n):
    return hashlib.sha256(str(n).encode()).hexdigest()


def call(store, n, mode):
    found = store.get("chat", key(n))
    if found is not None and mode != "record":
        return found.answer
    assert mode != "replay", f"missing call {n}"
    store.put(Fixture(key=key(n), kind="chat", request={"n": n}, answer=f"answer {n}"))
    return f"answer {n}"
"""


def _project(pytester: pytest.Pytester, calls: dict[str, list[int]]) -> None:
    pytester.makeconftest(CALLS)
    body = ["from conftest import call\n"]
    for name, numbers in calls.items():
        body.append(
            f"def {name}(fixture_store, redactkey_settings):\n"
            f"    for n in {numbers!r}:\n"
            f"        assert call(fixture_store, n, redactkey_settings.mode) == f'answer {{n}}'\n"
        )
    pytester.makepyfile(test_calls="\n".join(body))


class TestSessionSummary:
    """The end-of-session summary, the run report and `--redactkey-fail-unused`."""

    def test_record_then_replay(self, pytester: pytest.Pytester) -> None:
        """A first run records, a second replays the same calls and reports them."""
        _project(pytester, {"test_one": [1, 2], "test_two": [3]})
        first = run(pytester, "--redactkey-mode=record")
        first.assert_outcomes(passed=2)
        first.stdout.fnmatch_lines([
            "*= redactkey =*", "replayed 0, recorded 3, missing 0, unused files 0",
        ])
        second = run(pytester)
        second.assert_outcomes(passed=2)
        second.stdout.fnmatch_lines(["replayed 3, recorded 0, missing 0, unused files 0"])

    def test_missing_names_the_test(self, pytester: pytest.Pytester) -> None:
        """A call with no recording is listed with the test that made it."""
        _project(pytester, {"test_one": [1]})
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "missing (no recorded call; each failed test says how to record it):",
            "  test_calls.py::test_one: chat 6b86b273ff34… in fixtures/test_calls",
        ])

    def test_unused_files_reported_and_fail_with_option(self, pytester: pytest.Pytester) -> None:
        """Files no test used are listed; with the option the run fails."""
        _project(pytester, {"test_one": [1, 2]})
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        _project(pytester, {"test_one": [1]})
        result = run(pytester)
        result.assert_outcomes(passed=1)
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines([
            "replayed 1, recorded 0, missing 0, unused files 1",
            "unused fixture files (no test replayed or recorded them):",
            "  fixtures/test_calls/@model.chat.d4735e3a*.json",
        ])
        failing = run(pytester, "--redactkey-fail-unused")
        failing.assert_outcomes(passed=1)
        assert failing.ret == pytest.ExitCode.TESTS_FAILED
        failing.stdout.fnmatch_lines(
            ["FAILED: 1 unused fixture file (--redactkey-fail-unused)*"]
        )

    def test_partial_runs_do_not_count_unused(self, pytester: pytest.Pytester) -> None:
        """With tests deselected, their directory is not checked and the option does not fail."""
        _project(pytester, {"test_one": [1], "test_two": [2]})
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=2)
        result = run(pytester, "-k", "one", "--redactkey-fail-unused")
        result.assert_outcomes(passed=1, deselected=1)
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines([
            "*unused files 0",
            "unused files not checked in fixtures/test_calls: 1 test using it did not run",
        ])

    def test_report_document(self, pytester: pytest.Pytester) -> None:
        """The JSON report lists each call with its test, file and outcome, paths relative."""
        _project(pytester, {"test_one": [1]})
        run(pytester, "--redactkey-mode=record", "--redactkey-report=out/report.json")
        doc = json.loads((pytester.path / "out" / "report.json").read_text())
        assert doc["mode"] == "record"
        assert (doc["missing"], doc["replayed"], doc["unused"]) == ([], [], [])
        [event] = doc["recorded"]
        assert event["test"] == "test_calls.py::test_one"
        # Relative to the report's directory, as `redact audit --run-report` reads them.
        assert event["file"].startswith("../fixtures/test_calls/@model.chat.6b86b273")

    def test_audit_reads_the_unused_files(
        self, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`redact audit --run-report` flags the files the report lists as unused."""
        from redactkey.commands._cli import main

        _project(pytester, {"test_one": [1, 2]})
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        _project(pytester, {"test_one": [1]})
        run(pytester, "--redactkey-report=build/report.json").assert_outcomes(passed=1)
        fixtures = pytester.path / "fixtures" / "test_calls"
        report = pytester.path / "build" / "report.json"
        capsys.readouterr()
        assert main(["audit", str(fixtures), "--run-report", str(report)]) == 1
        out = capsys.readouterr().out
        flagged = [line for line in out.splitlines() if ".json:1: unused-fixture" in line]
        assert len(flagged) == 1
        assert "@model.chat.d4735e3a" in flagged[0]

    def test_report_reads_back_as_a_run_report(self, pytester: pytest.Pytester) -> None:
        """`RunReport.load` reads the plugin's report: one format for both writers."""
        from redactkey import RunReport

        _project(pytester, {"test_one": [1, 2], "test_two": [3]})
        run(pytester, "--redactkey-mode=record", "-k", "one")
        run(pytester)  # test_two misses
        report = RunReport.load(pytester.path / ".redactkey-report.json")
        hits = [(e.test, e.outcome) for e in report.hits]
        assert hits == [("test_calls.py::test_one", "replayed")] * 2
        assert [(e.test, e.kind) for e in report.missed] == [("test_calls.py::test_two", "chat")]

    def test_header_names_the_modes(self, pytester: pytest.Pytester) -> None:
        """The report header says which modes the session runs in."""
        pytester.makepyfile("def test_plain():\n    pass\n")
        run(pytester).stdout.fnmatch_lines(
            ["redactkey: mode replay (default), model calls replay"]
        )
        run(pytester, "--redactkey-mode=auto", "--redactkey-model-mode=live").stdout.fnmatch_lines(
            ["redactkey: mode auto, model calls live"]
        )

    def test_collect_only_prints_no_summary(self, pytester: pytest.Pytester) -> None:
        """Collecting redactkey tests without running them writes nothing."""
        _project(pytester, {"test_one": [1]})
        result = run(pytester, "--collect-only")
        assert "= redactkey =" not in result.stdout.str()
        assert not (pytester.path / ".redactkey-report.json").exists()

    def test_plugin_can_be_disabled(self, pytester: pytest.Pytester) -> None:
        """`-p no:redactkey` removes the plugin: its options are unknown."""
        pytester.makepyfile("def test_plain():\n    pass\n")
        result = run(pytester, "-p", "no:redactkey", "--redactkey-mode=record")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*unrecognized arguments: --redactkey-mode=record*"])

    def test_no_report_without_redactkey_tests(self, pytester: pytest.Pytester) -> None:
        """A session that never uses redactkey prints no summary and writes no report."""
        pytester.makepyfile("def test_plain():\n    pass\n")
        result = run(pytester)
        result.assert_outcomes(passed=1)
        assert "= redactkey =" not in result.stdout.str()
        assert not (pytester.path / ".redactkey-report.json").exists()


MODEL_CALLS = """
import pytest


@pytest.mark.parametrize("n", range({count}))
def test_call(model_fixtures, redactkey_settings, n):
    request = {{"model": "tiny", "prompt": f"say {{n}}"}}
    # In replay there is no live callable at all: a live call cannot happen.
    replay = redactkey_settings.model_mode == "replay"
    live = None if replay else (lambda: {{"text": f"said {{n}}"}})
    assert model_fixtures.call("text", request, live) == {{"text": f"said {{n}}"}}
"""


class TestModelFixtures:
    """`model_fixtures` records and replays through the plugin, also under xdist."""

    @pytest.mark.slow  # two pytest runs of two workers each
    def test_xdist_records_120_calls_then_replays_all(self, pytester: pytest.Pytester) -> None:
        """Two workers record 120 calls into one tree; a replay run hits all of them."""
        pytester.makepyfile(test_many=MODEL_CALLS.format(count=120))
        first = pytester.runpytest_subprocess(*QUIET, "-n", "2", "--redactkey-mode=record")
        first.assert_outcomes(passed=120)
        first.stdout.fnmatch_lines(["replayed 0, recorded 120, missing 0, unused files 0"])
        tree = pytester.path / "fixtures" / "test_many"
        files = sorted(tree.iterdir())
        assert len(files) == 120
        assert all(f.name.startswith("@model.text.") for f in files)
        assert all(json.loads(f.read_text())["answer"]["text"].startswith("said ") for f in files)
        # The controller merges the workers' shares: every hit counts, and the one planted
        # file no test uses (and only it) is unused and fails the run.
        (tree / ("@model.text." + "0" * 64 + ".json")).write_bytes(files[0].read_bytes())
        second = pytester.runpytest_subprocess(*QUIET, "-n", "2", "--redactkey-fail-unused")
        second.assert_outcomes(passed=120)
        second.stdout.fnmatch_lines([
            "replayed 120, recorded 0, missing 0, unused files 1",
            "unused fixture files (no test replayed or recorded them):",
            "  fixtures/test_many/@model.text.0000000000000000*.json",
        ])
        assert second.ret == pytest.ExitCode.TESTS_FAILED
        report = json.loads((pytester.path / ".redactkey-report.json").read_text())
        assert len(report["replayed"]) == 120
        assert {e["test"] for e in report["replayed"]} == {
            f"test_many.py::test_call[{n}]" for n in range(120)
        }

    def test_missing_call_shows_the_nearest_recording(self, pytester: pytest.Pytester) -> None:
        """A changed request fails with the nearest recorded call and what differs."""
        pytester.makepyfile(test_calls=MODEL_CALLS.format(count=1))
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        pytester.makepyfile(
            test_calls=MODEL_CALLS.format(count=1).replace("say {n}", "tell {n}")
        )
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "*MissingFixtureError*no recorded 'text' call with key*",
            "*nearest recorded 'text' call: *fixtures/test_calls/@model.text.*",
            "*/prompt*",
            "*--redactkey-mode=record*",
        ])
        result.stdout.fnmatch_lines([
            "missing (no recorded call*",
            "  test_calls.py::test_call[[]0[]]: text * in fixtures/test_calls",
        ])

    def test_corrupt_neighbour_does_not_hide_the_nearest_recording(
        self, pytester: pytest.Pytester
    ) -> None:
        """A broken file beside the recordings is passed over: the miss still shows the
        nearest readable call, not "no call is recorded there"."""
        pytester.makepyfile(test_calls=MODEL_CALLS.format(count=1))
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        tree = pytester.path / "fixtures" / "test_calls"
        # Sorts before the real recording, so a store that stops at it sees nothing.
        (tree / ("@model.text." + "0" * 64 + ".json")).write_text("{not json")
        pytester.makepyfile(
            test_calls=MODEL_CALLS.format(count=1).replace("say {n}", "tell {n}")
        )
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([
            "*nearest recorded 'text' call: *fixtures/test_calls/@model.text.*",
            "*/prompt*",
        ])
        result.stdout.no_fnmatch_line("*is recorded there at all*")
        assert "0" * 64 not in result.stdout.str().split("nearest recorded")[1].split("\n")[0]

    def test_model_override_keeps_tools_in_replay(self, pytester: pytest.Pytester) -> None:
        """`--redactkey-model-mode=record` records model calls while tools stay in replay."""
        pytester.makepyfile(test_calls=MODEL_CALLS.format(count=2))
        result = run(pytester, "--redactkey-model-mode=record")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["replayed 0, recorded 2, missing 0, unused files 0"])


# The docs/pytest.md examples, run against the local fake provider: while recording,
# `redactkey_inner_transport` sends the SDKs' requests (to the real API hosts) to it.
SDK_CONFTEST = """
import os

import anthropic
import httpx
import httpx2
import openai
import pytest

from fakeprovider import FakeProvider


class ToFake:
    # A transport for httpx and httpx2 (sync and async) that sends every request to the fake.

    def __init__(self, url):
        self.url = url
        self.sync = {httpx: httpx.HTTPTransport(), httpx2: httpx2.HTTPTransport()}
        self.asyncs = {httpx: httpx.AsyncHTTPTransport(), httpx2: httpx2.AsyncHTTPTransport()}

    def _moved(self, request):
        library = httpx2 if isinstance(request, httpx2.Request) else httpx
        url = library.URL(self.url)
        request.url = request.url.copy_with(scheme=url.scheme, host=url.host, port=url.port)
        return library, request

    def handle_request(self, request):
        library, request = self._moved(request)
        return self.sync[library].handle_request(request)

    async def handle_async_request(self, request):
        library, request = self._moved(request)
        return await self.asyncs[library].handle_async_request(request)

    def close(self):
        for transport in self.sync.values():
            transport.close()

    async def aclose(self):
        for transport in self.asyncs.values():
            await transport.aclose()


@pytest.fixture(scope="session")
def fake():
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def redactkey_inner_transport(request, redactkey_settings):
    if redactkey_settings.model_mode == "replay":
        return None  # nothing goes live; the network guard refuses any attempt
    return ToFake(request.getfixturevalue("fake").url)


@pytest.fixture
def openai_client(redactkey_transport):
    api_key = os.environ.get("OPENAI_API_KEY", "sk-replay-placeholder")
    with httpx2.Client(transport=redactkey_transport) as http_client:
        yield openai.OpenAI(api_key=api_key, http_client=http_client, max_retries=0)


@pytest.fixture
def claude(redactkey_transport):
    api_key = os.environ.get("ANTHROPIC_API_KEY", "sk-ant-replay-placeholder")
    with httpx2.Client(transport=redactkey_transport) as http_client:
        yield anthropic.Anthropic(api_key=api_key, http_client=http_client, max_retries=0)
"""

SDK_TESTS = """
import asyncio
import socket

import httpx
import httpx2
import openai
import pytest

from redactkey.pytest_plugin import NetworkRefusedError

HELLO = "Hello from the fake provider."


def test_openai_chat(openai_client):
    completion = openai_client.chat.completions.create(
        model="gpt-4o-mini", temperature=0,
        messages=[{"role": "user", "content": "Say hello."}],
    )
    assert completion.choices[0].message.content == HELLO


def test_openai_stream(openai_client):
    stream = openai_client.chat.completions.create(
        model="gpt-4o-mini", stream=True,
        messages=[{"role": "user", "content": "Say hello, streamed."}],
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == HELLO


def test_openai_async(redactkey_transport):
    async def main():
        async with httpx2.AsyncClient(transport=redactkey_transport) as http_client:
            client = openai.AsyncOpenAI(api_key="sk-replay-placeholder",
                                        http_client=http_client, max_retries=0)
            completion = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Async hello."}],
            )
            return completion.choices[0].message.content
    assert asyncio.run(main()) == HELLO


def test_openai_with_legacy_httpx(redactkey_transport):
    with httpx.Client(transport=redactkey_transport) as http_client:
        client = openai.OpenAI(api_key="sk-replay-placeholder", http_client=http_client,
                               max_retries=0)
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Legacy hello."}],
        )
    assert completion.choices[0].message.content == HELLO


def test_anthropic_message(claude):
    message = claude.messages.create(
        model="claude-sonnet-5", max_tokens=100,
        messages=[{"role": "user", "content": "Say hello."}],
    )
    assert message.content[0].text == HELLO


def test_anthropic_stream(claude):
    with claude.messages.stream(
        model="claude-sonnet-5", max_tokens=100,
        messages=[{"role": "user", "content": "Say hello, streamed."}],
    ) as stream:
        assert "".join(stream.text_stream) == HELLO


def test_sockets_are_refused_in_replay(redactkey_settings):
    if redactkey_settings.mode != "replay":
        return
    with pytest.raises(NetworkRefusedError):
        socket.create_connection(("192.0.2.1", 443), timeout=1)
"""


@pytest.fixture(scope="class")
def _sdk_modules() -> None:
    # Imported before pytester snapshots sys.modules, so the inner runs reuse them
    # instead of importing openai and anthropic afresh each time (seconds each).
    import anthropic
    import openai

    del anthropic, openai


@pytest.mark.usefixtures("_sdk_modules")
class TestRunSecrets:
    """`run_secrets` is built once per run and copied for each test."""

    def test_each_test_gets_its_own_copy(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A secret one test adds is not another test's; the environment's are everyone's,
        and a change of the environment is seen."""
        monkeypatch.setenv("BENCH_API_KEY", "env-" + "v" * 16)
        pytester.makepyfile(
            """
            def test_adds(run_secrets):
                assert "BENCH_API_KEY" in run_secrets
                run_secrets.add("ADDED_TOKEN", "added-" + "w" * 12)
                assert "ADDED_TOKEN" in run_secrets

            def test_does_not_see_it(run_secrets):
                assert "BENCH_API_KEY" in run_secrets
                assert "ADDED_TOKEN" not in run_secrets

            import pytest

            @pytest.fixture
            def later_key(monkeypatch):
                monkeypatch.setenv("LATER_API_KEY", "later-" + "z" * 12)

            def test_sees_a_changed_environment(later_key, run_secrets):
                assert "LATER_API_KEY" in run_secrets

            def test_after_the_change(run_secrets):
                assert "LATER_API_KEY" not in run_secrets  # monkeypatch undid it
                assert "BENCH_API_KEY" in run_secrets
            """
        )
        run(pytester).assert_outcomes(passed=4)


class TestSDKClients:
    """openai and anthropic clients record through `redactkey_transport`, then replay offline."""

    def test_record_then_replay_with_sockets_refused(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A run records every SDK call; a second run replays them with the network refused."""
        api_key = "sk-proj-" + "Qx7v" * 12
        monkeypatch.setenv("OPENAI_API_KEY", api_key)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "Zr4k" * 20)
        pytester.makepyfile(fakeprovider=FAKEPROVIDER.read_text(encoding="utf-8"))
        pytester.makeconftest(SDK_CONFTEST)
        pytester.makepyfile(test_sdk=SDK_TESTS)
        first = run(pytester, "--redactkey-mode=record")
        first.assert_outcomes(passed=7)
        first.stdout.fnmatch_lines(["replayed 0, recorded 6, missing 0, unused files 0"])
        files = sorted((pytester.path / "fixtures" / "test_sdk").iterdir())
        assert [f.name[:5] for f in files] == ["http."] * 6
        for path in files:
            text = path.read_text(encoding="utf-8")
            assert api_key not in text
            assert "sk-ant-api03-" not in text
        monkeypatch.delenv("OPENAI_API_KEY")
        monkeypatch.delenv("ANTHROPIC_API_KEY")
        second = run(pytester, "--redactkey-fail-unused")
        second.assert_outcomes(passed=7)
        second.stdout.fnmatch_lines(["replayed 6, recorded 0, missing 0, unused files 0"])
        assert second.ret == pytest.ExitCode.OK

    def test_changed_request_names_the_nearest_recording(
        self, pytester: pytest.Pytester
    ) -> None:
        """A changed SDK request fails in replay with the nearest call and how to record."""
        pytester.makepyfile(fakeprovider=FAKEPROVIDER.read_text(encoding="utf-8"))
        pytester.makeconftest(SDK_CONFTEST)
        pytester.makepyfile(test_sdk=SDK_TESTS)
        run(pytester, "--redactkey-mode=record", "-k", "anthropic_message").assert_outcomes(
            passed=1, deselected=6
        )
        pytester.makepyfile(test_sdk=SDK_TESTS.replace("max_tokens=100", "max_tokens=300"))
        result = run(pytester, "-k", "anthropic_message")
        result.assert_outcomes(failed=1, deselected=6)
        result.stdout.fnmatch_lines([
            "E *MissingFixtureError: POST https://api.anthropic.com/v1/messages: no recorded "
            "'http' call with key *",
            "E * nearest recorded 'http' call: *fixtures/test_sdk/http.*.json",
            "E * /request/body/json/max_tokens: 100 -> 300",
            "E *to record it: run with --redactkey-mode=record*",
        ])
        result.stdout.fnmatch_lines([
            "a recorded call is missing; to record it: run with --redactkey-mode=record*",
        ])

    def test_tool_transport_follows_the_tool_mode(self, pytester: pytest.Pytester) -> None:
        """With only the model mode recording, the tool transport still replays."""
        pytester.makepyfile(
            """
            import httpx2
            import pytest
            from redactkey import MissingFixtureError

            @pytest.fixture
            def redactkey_inner_transport():
                return httpx2.MockTransport(lambda request: httpx2.Response(200, json={"ok": 1}))

            def test_both(redactkey_transport, redactkey_tool_transport):
                with httpx2.Client(transport=redactkey_transport) as model_client:
                    assert model_client.get("https://api.example.com/model").json() == {"ok": 1}
                with httpx2.Client(transport=redactkey_tool_transport) as tool_client:
                    with pytest.raises(MissingFixtureError):
                        tool_client.get("https://api.example.com/tool")
            """
        )
        result = run(pytester, "--redactkey-model-mode=record")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["replayed 0, recorded 1, missing 1, unused files 0"])


class TestDocs:
    """docs/pytest.md stays runnable."""

    def test_python_blocks_compile(self) -> None:
        """Every Python block of the pytest page is valid Python."""
        page = Path(__file__).resolve().parent.parent / "docs" / "pytest.md"
        blocks = page.read_text(encoding="utf-8").split("```python\n")[1:]
        assert len(blocks) >= 6
        for block in blocks:
            code = block.split("```", 1)[0]
            compile(code, str(page), "exec")


class TestTrackedStore:
    """The per-test store wrapper that the summary counts with."""

    @pytest.mark.parametrize(
        ("steps", "outcome"),
        [
            (["put", "get"], "recorded"),
            (["get-miss", "put"], "recorded"),
            (["get-miss"], "missing"),
            (["get-hit"], "replayed"),
            (["get-hit", "get-hit"], "replayed"),
        ],
        ids=["record-repeat", "auto-miss", "replay-miss", "replay-hit", "two-hits"],
    )
    def test_outcome_per_call(self, tmp_path: Path, steps: list[str], outcome: str) -> None:
        """Each (kind, key) ends as recorded, replayed or missing, with its test and file."""
        from redactkey import Fixture, FixtureDir
        from redactkey.pytest_plugin import TrackedStore

        key = "ab" * 32
        recorded = Fixture(key=key, kind="chat", request={"q": 1}, answer="a")
        if "get-hit" in steps:
            FixtureDir(tmp_path / "fx").put(recorded)
        store = TrackedStore(FixtureDir(tmp_path / "fx"), "t.py::test_x")
        for step in steps:
            if step == "put":
                store.put(recorded)
            else:
                found = store.get("chat", key)
                assert (found is not None) == (step != "get-miss")
        [event] = store.events(tmp_path)
        assert event == {
            "test": "t.py::test_x", "outcome": outcome, "kind": "chat", "key": key,
            "store": "fx", "file": f"fx/@model.chat.{key}.json",
        }
