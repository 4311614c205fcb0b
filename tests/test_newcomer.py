"""A new user's first runs through the pytest plugin: dummy keys, settings in reach."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT
from redactkey.commands._cli import main
from redactkey.commands._issues import RULES, rule_for
from test_cli_check import leaky_cassette

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


TOOL_TEST = """
    def test_tool(tool_fixtures):
        live = None if tool_fixtures.mode == "replay" else (lambda: {"hits": 3})
        assert tool_fixtures.call("search", {"q": "cats"}, live) == {"hits": 3}
"""


class TestPluginOptions:
    """`tool_fixtures`, `--redactkey-store`, `--redactkey-block-network`, paths."""

    def test_tool_fixtures_record_then_replay(self, pytester: pytest.Pytester) -> None:
        """The `tool_fixtures` fixture records a tool call and replays it."""
        pytester.makepyfile(test_app=TOOL_TEST)
        run(pytester, "--redactkey-mode=record").assert_outcomes(passed=1)
        files = [p.name for p in (pytester.path / "fixtures" / "test_app").iterdir()]
        assert len(files) == 1
        assert files[0].startswith("search.")
        result = run(pytester)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["replayed 1, recorded 0, missing 0*"])

    def test_cassette_store(self, pytester: pytest.Pytester) -> None:
        """`--redactkey-store=cassette` records into `<fixture dir>.json` and replays it."""
        pytester.makepyfile(test_app=TOOL_TEST + TEST_CHAT)
        run(pytester, "--redactkey-mode=record", "--redactkey-store=cassette").assert_outcomes(
            passed=2)
        cassette = pytester.path / "fixtures" / "test_app.json"
        assert len(json.loads(cassette.read_text(encoding="utf-8"))["entries"]) == 2
        assert not (pytester.path / "fixtures" / "test_app").exists()
        run(pytester, "--redactkey-store=cassette").assert_outcomes(passed=2)
        run(pytester).assert_outcomes(failed=2)  # the directory store has nothing

    def test_block_network_guards_every_test(self, pytester: pytest.Pytester) -> None:
        """`--redactkey-block-network` refuses connections in tests without redactkey."""
        pytester.makepyfile(test_app="""
            import socket

            def test_plain():
                socket.create_connection(("192.0.2.1", 9), timeout=0.01)
        """)
        result = run(pytester, "--redactkey-block-network")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*NetworkRefusedError*192.0.2.1:9*"])

    def test_redactor_alone_turns_the_guard_on(self, pytester: pytest.Pytester) -> None:
        """A test that uses only `redactor` (or `run_secrets`) is guarded in replay."""
        pytester.makepyfile(test_app="""
            import socket

            def test_redactor(redactor):
                socket.create_connection(("192.0.2.1", 9), timeout=0.01)
        """)
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*NetworkRefusedError*"])

    def test_module_path_has_no_doubled_root(self, pytester: pytest.Pytester) -> None:
        """`tests/recorded/{module_path}` for tests/test_app.py is tests/recorded/test_app."""
        pytester.makeini("[pytest]\nredactkey_fixture_dir = tests/recorded/{module_path}\n")
        (pytester.path / "tests").mkdir()
        (pytester.path / "tests" / "test_app.py").write_text(
            "def test_show(redactkey_settings):\n"
            "    print('DIR', redactkey_settings.fixture_dir)\n",
            encoding="utf-8")
        result = run(pytester, "-s")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"*DIR {pytester.path / 'tests' / 'recorded' / 'test_app'}"])

    def test_summary_paths_are_normalised(self, pytester: pytest.Pytester) -> None:
        """A marker path with `..` is shown normalised in the summary."""
        (pytester.path / "tests").mkdir()
        (pytester.path / "tests" / "test_app.py").write_text(
            "import pytest\n\n"
            "@pytest.mark.redactkey(path='../shared/chat')\n"
            "def test_chat(model_fixtures):\n"
            "    model_fixtures.call('chat', {'model': 'm', 'prompt': 'p'}, None)\n",
            encoding="utf-8")
        result = run(pytester)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["  tests/test_app.py::test_chat: chat * in shared/chat"])
        assert "tests/../shared" not in result.stdout.str()


class TestCliPolish:
    """The CLI's first impressions: config hint, a line when clean, plural agreement."""

    def test_private_file_with_tool_header_gets_a_hint(self, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
        """`[tool.redactkey]` in .redactkey.toml is exit 2 saying where the header belongs."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / ".redactkey.toml").write_text('[tool.redactkey]\nplaceholder = "X"\n',
                                                  encoding="utf-8")
        (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
        assert main(["check", "a.txt"]) == 2
        err = capsys.readouterr().err
        assert "belongs in pyproject.toml" in err
        assert "top level" in err

    def test_counts_agree_with_their_nouns(self, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
        """One file, one note: singular nouns in the audit's closing line."""
        (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
        main(["audit", "--no-color", str(tmp_path)])
        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert "1 files" not in last
        assert "1 notes" not in last
        assert "1 warnings" not in last

    def test_clean_check_prints_one_summary_line(self, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A clean `redact check` says so in one line (the hook's log shows it ran)."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
        (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
        assert main(["check", "a.txt"]) == 0
        out, err = capsys.readouterr()
        assert out.splitlines() == ["check: 1 file read (1 text file); no findings -> "
                                    "clean (exit 0)"]
        assert err == ""

    @pytest.mark.parametrize("command", ["check", "audit"])
    def test_allowlist_paths_are_relative_to_the_config_file(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str], command: str) -> None:
        """An allowlisted finding stays accepted when the command runs from a subdirectory,
        and an entry does not accept a same-named file elsewhere."""
        (tmp_path / "pyproject.toml").write_text(
            '[[tool.redactkey.allowlist]]\npath = "tests/cassettes/*.yaml"\n'
            'rule = "sensitive-key"\n', encoding="utf-8")
        for folder in ("tests/cassettes", "tests/other/tests/cassettes"):
            (tmp_path / folder).mkdir(parents=True)
            (tmp_path / folder / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        for cwd, path in ((tmp_path, "tests/cassettes"), (tmp_path / "tests", "cassettes"),
                          (tmp_path / "tests" / "cassettes", ".")):
            monkeypatch.chdir(cwd)
            main([command, "--format", "json", path])
            report = json.loads(capsys.readouterr().out)
            assert report["findings"] == [], (cwd, path)
            assert report["allowlisted"] == 1, (cwd, path)
        # tests/other/tests/cassettes/c.yaml is not tests/cassettes/*.yaml of the config dir
        monkeypatch.chdir(tmp_path / "tests" / "other")
        main([command, "--format", "json", "tests/cassettes"])
        report = json.loads(capsys.readouterr().out)
        assert [f["rule"] for f in report["findings"]] == ["sensitive-key"]

    def test_scrub_prints_one_line_per_file(self, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
        """`scrub --write` prints one line per scrubbed file, then the closing line."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
        (tmp_path / "a.yaml").write_text(leaky_cassette(), encoding="utf-8")
        (tmp_path / "b.yaml").write_text(leaky_cassette(), encoding="utf-8")
        assert main(["scrub", "--write", "a.yaml", "b.yaml"]) == 0
        assert capsys.readouterr().out.splitlines() == [
            "a.yaml: scrubbed (1 finding redacted)",
            "b.yaml: scrubbed (1 finding redacted)",
            "scrub: 2 files read; done",
        ]

    def test_no_maybe_plural_in_messages(self) -> None:
        """Messages count with agreeing nouns (`1 file`, `2 files`), never `file(s)`."""
        found = [f"{path.name}:{number}: {line.strip()}"
                 for path in sorted((ROOT / "src" / "redactkey").glob("*.py"))
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if any(word != "http" for word in re.findall(r"([a-z]+)\(s\)", line))]
        assert found == []

    def test_fix_texts_name_pages_and_sections_that_exist(self) -> None:
        """A fix text that names a docs page names an existing one, and the section it
        quotes is a heading of that page."""
        named = 0
        for rule in RULES.values():
            for page, section in re.findall(r"(docs/[\w/.-]+\.md)(?:, '([^']+)')?", rule.fix):
                named += 1
                text = (ROOT / page).read_text(encoding="utf-8")
                if section:
                    assert f"## {section}\n" in text, (rule.id, page, section)
        assert named >= 4

    def test_volatile_fix_points_at_the_normalizers_page(self) -> None:
        """The audit's fix text names the page that documents normalizers."""
        fix = rule_for("volatile-key-material").fix
        assert "docs/keys.md" in fix
        assert "normalizers" in (ROOT / "docs" / "keys.md").read_text(encoding="utf-8")


class TestOwnFixtureNames:
    """A project's own fixture named like a generic redactkey fixture is left alone."""

    def test_local_redactor_fixture_is_not_guarded(self, pytester: pytest.Pytester) -> None:
        """A test module's own `redactor` fixture makes no redactkey test (no guard, no
        report)."""
        pytester.makepyfile(test_app="""
            import pytest

            @pytest.fixture
            def redactor():
                return "mine"

            def test_it(redactor):
                assert redactor == "mine"
        """)
        run(pytester).assert_outcomes(passed=1)
        assert not (pytester.path / ".redactkey-report.json").exists()
        run(pytester, "--redactkey-block-network").assert_outcomes(passed=1)
