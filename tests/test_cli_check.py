"""`redact check`: exit codes, masked output, line numbers, formats, allowlist, config errors."""

from __future__ import annotations

import contextlib
import io
import json
import os
import string
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from redactkey.commands._cli import main
from test_report import validate_sarif

FAKE_OPENAI = "sk-proj-" + "A1b2" * 12
FAKE_ANTHROPIC = "sk-ant-api03-" + "Zq9X" * 10
CLEAN_TEXT_FILE = "check: 1 file read (1 text file); no findings -> clean (exit 0)\n"


def leaky_cassette(key: str = FAKE_OPENAI) -> str:
    """A vcrpy cassette whose authorization header (line 6) holds `key`."""
    return (
        "interactions:\n"
        "- request:\n"
        "    body: null\n"
        "    headers:\n"
        "      authorization:\n"
        f"      - Bearer {key}\n"
        "    method: GET\n"
        "    uri: https://api.openai.com/v1/models\n"
        "  response:\n"
        "    body:\n"
        "      string: '{\"data\": []}'\n"
        "    headers: {}\n"
        "    status:\n"
        "      code: 200\n"
        "      message: OK\n"
        "version: 1\n"
    )


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory (no configuration above it is picked up)."""
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


class TestCheckExitCodes:
    """0 clean, 1 findings, 2 usage or unreadable input."""

    def test_leak_is_found_masked_with_line(self, workdir: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
        """A leaked key prints `path:line: rule (slot) preview` and never the key."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        code, out, err = run_cli(capsys, "check", "c.yaml")
        assert code == 1
        assert "c.yaml:6: sensitive-key (authorization) Bear…" in out
        assert FAKE_OPENAI not in out + err
        assert FAKE_OPENAI[8:20] not in out + err

    def test_clean_file_prints_one_summary_line(self, workdir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
        """A file with only placeholders exits 0 with one summary line, nothing on stderr."""
        text = leaky_cassette().replace(f"Bearer {FAKE_OPENAI}", "AUTHORIZATION-XXX")
        (workdir / "c.yaml").write_text(text, encoding="utf-8")
        assert run_cli(capsys, "check", "c.yaml") == (
            0, "check: 1 file read (1 vcrpy cassette); no findings -> clean (exit 0)\n", "")

    @pytest.mark.parametrize("placeholder", [
        "Bearer <OPENAI_ACCESS_TOKEN>", "<CENSORED>", "scrubbed", "[REDACTED]", "fake"])
    def test_third_party_placeholders_are_clean(self, workdir: Path, placeholder: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
        """Placeholders other projects use count as redacted."""
        text = leaky_cassette().replace(f"Bearer {FAKE_OPENAI}", placeholder)
        (workdir / "c.yaml").write_text(text, encoding="utf-8")
        assert run_cli(capsys, "check", "c.yaml")[0] == 0

    def test_missing_file_is_exit_2_named(self, workdir: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """An unreadable input is named, exit 2, no traceback."""
        code, out, err = run_cli(capsys, "check", "nope.yaml")
        assert code == 2
        assert "nope.yaml: cannot read: no such file or directory" in out
        assert "Traceback" not in out + err

    def test_no_files_is_usage_error(self, workdir: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """No arguments is a usage error (exit 2)."""
        code, _out, err = run_cli(capsys, "check")
        assert code == 2
        assert "give the files" in err


class TestCheckSources:
    """Detectors, env secrets in any encoding, text files, broken YAML."""

    def test_detector_in_json_body_line(self, workdir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """A provider key inside a JSON fixture is reported at its line."""
        doc = {"answer": {"content": f"use {FAKE_ANTHROPIC} here"}, "kind": "chat"}
        (workdir / "f.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "f.json")
        assert code == 1
        assert "f.json:3: anthropic-api-key sk-a…" in out
        assert FAKE_ANTHROPIC not in out

    def test_env_secret_base64_in_text(self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """The base64 form of an environment secret is found and named by its slot."""
        import base64

        value = "plain" + "Secret" * 4 + "42"
        monkeypatch.setenv("ACME_SERVICE_TOKEN", value)
        encoded = base64.b64encode(f"user:{value}".encode()).decode()
        (workdir / "notes.txt").write_text(f"line one\nheader {encoded} end\n",
                                           encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "notes.txt")
        assert code == 1
        assert "notes.txt:2: known-value (ACME_SERVICE_TOKEN)" in out
        assert value not in out

    def test_secret_env_flag(self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
        """`--secret-env NAME` adds a variable whose name does not look secret."""
        value = "opaque-" + "Qx7" * 6
        monkeypatch.setenv("DEPLOY_BLOB", value)
        (workdir / "a.txt").write_text(f"x = {value}\n", encoding="utf-8")
        assert run_cli(capsys, "check", "a.txt")[0] == 0
        code, out, _ = run_cli(capsys, "check", "--secret-env", "DEPLOY_BLOB", "a.txt")
        assert code == 1
        assert "a.txt:1: known-value (DEPLOY_BLOB)" in out
        assert value not in out

    def test_secret_env_missing_is_skipped_with_a_warning(
        self, workdir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unset variable in the hook args is a warning naming it, not a failed commit."""
        (workdir / "a.txt").write_text("x\n", encoding="utf-8")
        code, _out, err = run_cli(capsys, "check", "--secret-env", "NOT_SET_ANYWHERE_X", "a.txt")
        assert code == 0
        assert "skipping --secret-env NOT_SET_ANYWHERE_X: not set" in err

    def test_secret_env_dummy_is_skipped_with_a_warning(
        self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A stand-in value in a --secret-env variable is skipped as the library skips it."""
        monkeypatch.setenv("ACME_PIN", "dummy")
        (workdir / "a.txt").write_text("dummy\n", encoding="utf-8")
        code, _out, err = run_cli(capsys, "check", "--secret-env", "ACME_PIN", "a.txt")
        assert code == 0
        assert "skipping ACME_PIN: its value is shorter than the safe minimum of 8" in err

    def test_configured_secret_env_unset_is_passed_over(
        self, workdir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A configured `secret-env` name is searched when set and passed over when unset."""
        value = "opaque-" + "Qx7" * 6
        (workdir / ".redactkey.toml").write_text('secret-env = ["DEPLOY_BLOB"]\n',
                                                 encoding="utf-8")
        (workdir / "a.txt").write_text(f"x = {value}\n", encoding="utf-8")
        monkeypatch.delenv("DEPLOY_BLOB", raising=False)
        assert run_cli(capsys, "check", "a.txt")[0] == 0
        monkeypatch.setenv("DEPLOY_BLOB", value)
        code, out, _ = run_cli(capsys, "check", "a.txt")
        assert code == 1
        assert "a.txt:1: known-value (DEPLOY_BLOB)" in out

    def test_yaml_comment_scanned(self, workdir: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
        """A key in a YAML comment (not part of the data) is still found at its line."""
        text = leaky_cassette().replace(f"Bearer {FAKE_OPENAI}", "AUTHORIZATION-XXX")
        (workdir / "c.yaml").write_text(f"# recorded with {FAKE_OPENAI}\n{text}",
                                        encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "c.yaml")
        assert code == 1
        assert "c.yaml:1: openai-api-key sk-p…" in out

    def test_broken_yaml_still_scanned(self, workdir: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
        """A YAML file that does not parse is scanned as text."""
        (workdir / "b.yaml").write_text(f"a: [\nkey: {FAKE_OPENAI}\n", encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "b.yaml")
        assert code == 1
        assert "b.yaml:2: openai-api-key sk-p…" in out


class TestCheckFormats:
    """JSON and SARIF output."""

    def test_json(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`--format json` lists the finding with location and fingerprint."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "--format", "json", "c.yaml")
        data = json.loads(out)
        assert code == data["exit_code"] == 1
        (finding,) = data["findings"]
        assert (finding["path"], finding["line"], finding["rule"]) == ("c.yaml", 6,
                                                                      "sensitive-key")
        assert FAKE_OPENAI not in out

    def test_sarif(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`--format sarif` validates against the SARIF 2.1.0 schema."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "--format", "sarif", "c.yaml")
        assert code == 1
        log = json.loads(out)
        validate_sarif(log)
        result = log["runs"][0]["results"][0]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "c.yaml"
        assert FAKE_OPENAI not in out

    def test_output_file(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`--output` writes the report to a file and a summary to stderr."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        code, _out, err = run_cli(capsys, "check", "--format", "sarif", "-o", "r.sarif",
                                  "c.yaml")
        assert code == 1
        validate_sarif(json.loads((workdir / "r.sarif").read_text(encoding="utf-8")))
        assert "c.yaml:6" in err


class TestCheckConfig:
    """The allowlist and configuration errors."""

    def test_allowlist_by_fingerprint(self, workdir: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
        """An allowlist entry with the finding's fingerprint silences exactly it."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        _, out, _ = run_cli(capsys, "check", "--format", "json", "c.yaml")
        fingerprint = json.loads(out)["findings"][0]["fingerprint"]
        (workdir / ".redactkey.toml").write_text(
            f'[[allowlist]]\npath = "c.yaml"\nrule = "sensitive-key"\n'
            f'fingerprint = "{fingerprint}"\nreason = "test"\n', encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "--format", "json", "c.yaml")
        assert code == 0
        assert json.loads(out)["allowlisted"] == 1

    def test_extra_detector(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A configured regex detector reports under its own rule name."""
        (workdir / ".redactkey.toml").write_text(
            '[[detectors]]\nname = "acme-token"\npattern = "acme_[a-z0-9]{16}"\n',
            encoding="utf-8")
        (workdir / "a.json").write_text('{\n  "t": "acme_0123456789abcdef"\n}\n',
                                        encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "a.json")
        assert code == 1
        assert "a.json:2: acme-token acme…" in out

    def test_config_error_names_file_and_key(self, workdir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
        """A bad setting is exit 2 naming the file and key, without a traceback."""
        (workdir / ".redactkey.toml").write_text("min-secret-lenght = 3\n", encoding="utf-8")
        (workdir / "a.txt").write_text("x\n", encoding="utf-8")
        code, out, err = run_cli(capsys, "check", "a.txt")
        assert code == 2
        assert ".redactkey.toml" in err
        assert "min-secret-lenght: unknown setting" in err
        assert "Traceback" not in out + err


class TestCheckSubprocess:
    """The installed `redact` script behaves the same."""

    def test_subprocess_exit_and_mask(self, tmp_path: Path) -> None:
        """Exit 1 and a masked line from a real process; 0 on a clean file."""
        (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
        (tmp_path / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        (tmp_path / "ok.yaml").write_text("a: 1\n", encoding="utf-8")
        script = Path(sys.executable).with_name("redact")
        env = {k: v for k, v in os.environ.items() if not k.startswith("REDACTKEY")}
        leak = subprocess.run([str(script), "check", "c.yaml"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False)
        assert leak.returncode == 1, leak.stderr
        assert "c.yaml:6: sensitive-key (authorization) Bear…" in leak.stdout
        assert FAKE_OPENAI not in leak.stdout + leak.stderr
        clean = subprocess.run([str(script), "check", "ok.yaml"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, check=False)
        assert (clean.returncode, clean.stdout) == (
            0, "check: 1 file read (1 other YAML); no findings -> clean (exit 0)\n")
        missing = subprocess.run([str(script), "check", "gone.json"], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, check=False)
        assert missing.returncode == 2
        assert "Traceback" not in missing.stdout + missing.stderr


_SHAPES = {
    "openai": ("sk-proj-", 48), "anthropic": ("sk-ant-api03-", 40), "github": ("ghp_", 36),
    "huggingface": ("hf_", 34), "google": ("AIza", 35),
}


class TestCheckNeverPrintsSecrets:
    """Property: whatever the key and wherever it sits, output never holds it."""

    @settings(max_examples=30, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(shape=st.sampled_from(sorted(_SHAPES)),
           suffix=st.text(alphabet=string.ascii_letters + string.digits, min_size=60,
                          max_size=60),
           where=st.sampled_from(["header", "body", "uri", "comment"]),
           fmt=st.sampled_from(["text", "json", "sarif"]))
    def test_no_leak(self, tmp_path: Path, shape: str, suffix: str, where: str,
                     fmt: str) -> None:
        """The key is reported (exit 1) and no 8 characters of its random part are printed."""
        prefix, length = _SHAPES[shape]
        key = prefix + suffix[:length]
        # one repeated character (`sk-0000…`) is a placeholder, not a finding
        assume(len(set(suffix[:length])) > 2)
        text = leaky_cassette().replace(f"Bearer {FAKE_OPENAI}", "AUTHORIZATION-XXX")
        if where == "header":
            text = text.replace("AUTHORIZATION-XXX", f"Bearer {key}")
        elif where == "body":
            text = text.replace('{\\"data\\": []}', f'{{\\"data\\": [\\"{key}\\"]}}')
            text = text.replace("'{\"data\": []}'", f"'{{\"data\": [\"{key}\"]}}'")
        elif where == "uri":
            text = text.replace("/v1/models", f"/v1/models?key={key}")
        else:
            text = f"# {key}\n{text}"
        directory = Path(tempfile.mkdtemp(dir=tmp_path))
        (directory / ".redactkey.toml").write_text("", encoding="utf-8")
        (directory / "c.yaml").write_text(text, encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(directory)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["check", "--format", fmt, "c.yaml"])
        finally:
            os.chdir(cwd)
        printed = out.getvalue() + err.getvalue()
        assert code == 1, printed
        random_part = key[len(prefix):]
        for start in range(0, len(random_part) - 8):
            assert random_part[start:start + 8] not in printed


class TestCheckDocumentationExamples:
    """Placeholders in prose and code are not leaks; a real-looking key in prose is."""

    @pytest.mark.parametrize("line", [
        "OPENAI_API_KEY=sk-... pytest --redactkey-mode=record",
        "$ ANTHROPIC_API_KEY=sk-ant-... pytest",
        "credentials only as URL query parameters (`?key=AIza...`).",
        "a database URL (`postgres://user:password@host`)",
        "    secret: str,",
        "(`cookie`, `set-cookie`, `?key=` (rule",
        "Authorization: Bearer <OPENAI_ACCESS_TOKEN>",
    ])
    def test_placeholder_prose_is_clean(self, workdir: Path, line: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """The line alone in a text file exits 0."""
        (workdir / "doc.md").write_text(line + "\n", encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "doc.md")
        assert (code, out) == (0, CLEAN_TEXT_FILE)

    def test_real_key_in_prose_is_found(self, workdir: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """A key-shaped value in prose is still reported."""
        (workdir / "doc.md").write_text(f"run with OPENAI_API_KEY={FAKE_OPENAI}\n",
                                        encoding="utf-8")
        code, out, _ = run_cli(capsys, "check", "doc.md")
        assert code == 1
        assert "doc.md:1:" in out
