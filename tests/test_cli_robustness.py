"""Bad input to `redact`: exit 2 (or a normal report) with one line naming the file, never a
traceback, and nothing half-written."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from redactkey.commands._cli import main
from test_cli_check import FAKE_OPENAI, leaky_cassette
from test_cli_scrub import _leaky_fixture


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


def nested(depth: int, inner: str = "1") -> str:
    return '{"interactions":' + "[" * depth + inner + "]" * depth + "}"


def feed_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


class TestDeeplyNestedFiles:
    """JSON/YAML nested past the recursion limit is reported or scanned as text, never crashes."""

    @pytest.mark.parametrize("depth", [300, 950, 100_000])
    @pytest.mark.parametrize("suffix", [".json", ".yaml"])
    @pytest.mark.parametrize("command", [["check"], ["scrub"], ["scrub", "--write"]])
    def test_no_recursion_error(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                                depth: int, suffix: str, command: list[str]) -> None:
        """check and scrub of a deep file finish with a normal exit code."""
        (workdir / f"deep{suffix}").write_text(nested(depth), encoding="utf-8")
        code, out = run(capsys, *command, f"deep{suffix}")
        assert code == 0, out
        assert "Traceback" not in out

    @pytest.mark.parametrize("depth", [300, 100_000])
    def test_audit_names_the_file(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                                  depth: int) -> None:
        """audit reports the deep file as unparsable, on one line naming it."""
        (workdir / "deep.json").write_text(nested(depth), encoding="utf-8")
        code, out = run(capsys, "audit", "deep.json")
        assert code == 1
        assert any(line.startswith("deep.json:1: unparsable-file") and "nested" in line
                   for line in out.splitlines()), out

    def test_secret_in_deep_file_still_found(self, workdir: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
        """A key inside a too-deep document is still found by the text scan."""
        (workdir / "deep.json").write_text(nested(300, f'"{FAKE_OPENAI}"'), encoding="utf-8")
        code, out = run(capsys, "check", "deep.json")
        assert code == 1
        assert "deep.json:1:" in out
        assert FAKE_OPENAI not in out

    @pytest.mark.parametrize("depth", [950, 100_000])
    def test_secret_in_deep_embedded_json(self, workdir: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          depth: int) -> None:
        """A body string holding very deep JSON is scanned as text, not opened."""
        body = "[" * depth + f'"{FAKE_OPENAI}"' + "]" * depth
        (workdir / "c.yaml").write_text(leaky_cassette("x").replace(
            "'{\"data\": []}'", f"'{body}'"), encoding="utf-8")
        code, out = run(capsys, "check", "c.yaml")
        assert code == 1, out
        assert FAKE_OPENAI not in out


class TestDeepStdin:
    """`redact key` and `redact canon` refuse stdin nested too deeply with one line."""

    @pytest.mark.parametrize("depth", [150, 950, 100_000])
    def test_key(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 depth: int) -> None:
        """key: exit 2, `stdin` named, no traceback."""
        feed_stdin(monkeypatch, ('{"messages":' + "[" * depth + "]" * depth + "}").encode())
        code, out = run(capsys, "key", "--kind", "chat")
        assert code == 2
        assert out.startswith("Error: stdin"), out
        assert out.count("\n") == 1, out

    @pytest.mark.parametrize("depth", [950, 100_000])
    def test_canon(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                   depth: int) -> None:
        """canon: exit 2 with one line saying it nests too deeply."""
        feed_stdin(monkeypatch, ("[" * depth + "]" * depth).encode())
        code, out = run(capsys, "canon")
        assert code == 2
        assert "nest" in out
        assert out.count("\n") == 1, out

    def test_canon_keeps_moderate_depth(self, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """canon still canonicalises 200 levels (the nesting cap is for requests only)."""
        feed_stdin(monkeypatch, ("[" * 200 + "]" * 200).encode())
        code, out = run(capsys, "canon")
        assert code == 0
        assert out == "[" * 200 + "]" * 200


class TestBadConfig:
    """A configuration file that cannot be used is one line naming it, exit 2."""

    @pytest.mark.parametrize(("name", "data", "expected"), [
        ("pyproject.toml", b"\xff\xfe[tool.redactkey]\n", "not UTF-8"),
        (".redactkey.toml", b"placeholder = '\xff'\n", "not UTF-8"),
        (".redactkey.toml", b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    ])
    def test_unusable_file(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str], name: str, data: bytes,
                           expected: str) -> None:
        """Non-UTF-8 or too-deep TOML: exit 2, the file and the problem on one line."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / name).write_bytes(data)
        (tmp_path / "f.txt").write_text("hello\n", encoding="utf-8")
        code, out = run(capsys, "check", "f.txt")
        assert code == 2
        assert str(tmp_path / name) in out
        assert expected in out
        assert out.count("\n") == 1, out

    def test_console_script_no_traceback(self, tmp_path: Path) -> None:
        """The installed `redact` script: one line, no traceback, for a non-UTF-8 pyproject."""
        (tmp_path / "pyproject.toml").write_bytes(b"\xff[tool.redactkey]\n")
        (tmp_path / "f.txt").write_text("hello\n", encoding="utf-8")
        script = Path(sys.executable).parent / "redact"
        if not script.exists():  # pragma: no cover - the script sits beside the venv's python
            script = Path(sys.executable).with_name("redact.exe")
        done = subprocess.run([str(script), "check", "f.txt"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert "pyproject.toml" in done.stderr
        assert "not UTF-8" in done.stderr


class TestScrubWriteFailure:
    """scrub --write that cannot write leaves every file as it was and exits 2."""

    def test_unwritable_directory(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
        """A refused rename: the cassette is unchanged, no temporary file, one line naming it."""
        (workdir / "c.yaml").write_text(leaky_cassette(), encoding="utf-8")
        before = (workdir / "c.yaml").read_bytes()

        def refuse(src: object, dst: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr("redactkey.fixtures._store.os.replace", refuse)
        code, out = run(capsys, "scrub", "--write", "c.yaml")
        assert code == 2
        assert (workdir / "c.yaml").read_bytes() == before
        assert sorted(p.name for p in workdir.iterdir()) == [".redactkey.toml", "c.yaml"]
        assert any(line.startswith("c.yaml: cannot write: Permission denied")
                   for line in out.splitlines()), out
        assert "Traceback" not in out
        assert FAKE_OPENAI not in out

    def test_failed_rename_keeps_one_file(self, workdir: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """When the old fixture cannot be removed after a re-key, the new one is taken back."""
        directory = workdir / "fx"
        _leaky_fixture(directory)
        before = {p.name: p.read_bytes() for p in directory.iterdir()}
        real_unlink = os.unlink

        def refuse(path: object, *args: object, **kwargs: object) -> None:
            if str(path) in {str(directory / name) for name in before}:
                raise PermissionError(13, "Permission denied")
            real_unlink(path)  # type: ignore[arg-type]

        monkeypatch.setattr("redactkey.commands._scrub.os.unlink", refuse)
        code, out = run(capsys, "scrub", "--write", str(directory))
        assert code == 2, out
        assert {p.name: p.read_bytes() for p in directory.iterdir()} == before
        assert "Traceback" not in out


class TestBadRunReport:
    """`redact audit --run-report` with an unusable report: one line naming it, exit 2."""

    def test_too_deep(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A report nested past the recursion limit is refused without a traceback."""
        (workdir / "r.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
        (workdir / "f.txt").write_text("hello\n", encoding="utf-8")
        code, out = run(capsys, "audit", "--run-report", "r.json", "f.txt")
        assert code == 2
        assert out.startswith("Error: r.json: JSON nested too deeply"), out
        assert out.count("\n") == 1, out

    def test_fifo(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A FIFO given as the report is refused before it is opened (it would block)."""
        fifo(workdir / "r.json")
        (workdir / "f.txt").write_text("hello\n", encoding="utf-8")
        code, out = run(capsys, "audit", "--run-report", "r.json", "f.txt")
        assert code == 2
        assert out.startswith("Error: r.json: not a regular file"), out

    def test_config_fifo(self, workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A FIFO given as --config is refused before it is opened (it would block)."""
        fifo(workdir / "c.toml")
        (workdir / "f.txt").write_text("hello\n", encoding="utf-8")
        code, out = run(capsys, "check", "--config", "c.toml", "f.txt")
        assert code == 2
        assert out.startswith("Error: c.toml: not a regular file"), out


def fifo(path: Path) -> None:
    """A FIFO at `path`; a writer opens and closes it after a few seconds, so a regression
    that reads it fails instead of blocking the suite."""
    os.mkfifo(path)

    def unblock() -> None:
        time.sleep(3)
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()


class TestUnopenablePaths:
    """A named path that cannot be opened says why, on one line naming it; exit 2."""

    @pytest.mark.parametrize(("make", "expected"), [
        ("loop", "symbolic link loop"),
        ("broken", "broken symbolic link"),
        ("under-file", "a parent of this path is a file"),
        ("missing", "no such file or directory"),
    ])
    @pytest.mark.parametrize("command", ["check", "audit", "scrub"])
    def test_reason(self, workdir: Path, capsys: pytest.CaptureFixture[str], make: str,
                    expected: str, command: str) -> None:
        """Loops, dangling links and paths below a file are told apart from absence."""
        if make == "loop":
            os.symlink("b.json", workdir / "a.json")
            os.symlink("a.json", workdir / "b.json")
            target = "a.json"
        elif make == "broken":
            os.symlink("gone.json", workdir / "a.json")
            target = "a.json"
        elif make == "under-file":
            (workdir / "f.json").write_text("{}", encoding="utf-8")
            target = "f.json/x.json"
        else:
            target = "a.json"
        code, out = run(capsys, command, target)
        assert code == 2
        assert f"{target}: cannot read: {expected}" in out, out
        assert "Traceback" not in out
