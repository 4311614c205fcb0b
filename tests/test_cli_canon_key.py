"""`redact canon` and `redact key`: stdin to stdout, one-line errors with exit 2."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from redactkey import KeySpec, request_key
from redactkey.commands._cli import main

CHAT = json.loads((ROOT / "corpus" / "requests" / "chat.json").read_text(encoding="utf-8"))


class _Stdin(io.TextIOWrapper):
    """A text stdin with a binary `.buffer`, like the real one."""


def _run(monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes],
         argv: list[str], stdin: bytes) -> tuple[int, bytes, str]:
    monkeypatch.setattr(sys, "stdin", _Stdin(io.BytesIO(stdin), encoding="utf-8"))
    code = main(argv)
    out, err = capsysbinary.readouterr()
    # Drop notes about short environment secrets the machine running the tests may have.
    lines = err.decode("utf-8").splitlines(keepends=True)
    return code, out, "".join(line for line in lines if not line.startswith("redact: skipping"))


class TestCanonCommand:
    def test_canonical_bytes_on_stdout(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        """Members sorted, no whitespace, UTF-8 kept, numbers in ES6 form."""
        code, out, err = _run(monkeypatch, capsysbinary, ["canon"],
                              '{"b": [1.0, 1e-7], "a": "é\\u00e9"}'.encode())
        assert (code, err) == (0, "")
        assert out == '{"a":"éé","b":[1,1e-7]}'.encode()

    @pytest.mark.parametrize(
        ("stdin", "message"),
        [
            (b'{"a": 1 "b": 2}', "stdin is not JSON: Expecting ',' delimiter at line 1 column 9"),
            (b'{"a": [1, NaN]}', "/a/1: nan is not a JSON number"),
            (b'{"a": {"b": 9007199254740992}}', "/a/b: integer beyond"),
            (b'{"a": "\\ud800"}', "/a: string holds a lone surrogate"),
            (b'{"a": 1, "a": 2}', "object key 'a' appears twice"),
            (b'"\xff"', "stdin is not UTF-8: invalid byte at offset 1"),
        ],
    )
    def test_bad_input_is_one_line_exit_2(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes],
        stdin: bytes, message: str,
    ) -> None:
        """Bad JSON or an uncanonicalisable value: one line naming where, exit 2."""
        code, out, err = _run(monkeypatch, capsysbinary, ["canon"], stdin)
        assert code == 2
        assert out == b""
        assert err.count("\n") == 1
        assert message in err
        assert "Traceback" not in err


class TestKeyCommand:
    def test_prints_request_key(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        """The key of the corpus request, as `request_key` computes it."""
        code, out, _ = _run(monkeypatch, capsysbinary, ["key", "--kind", "chat"],
                            json.dumps(CHAT).encode())
        assert code == 0
        assert out == (request_key("chat", CHAT) + "\n").encode()

    def test_material_option(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        """`--material` prints the canonical key material instead."""
        code, out, _ = _run(monkeypatch, capsysbinary, ["key", "-k", "chat", "--material"],
                            json.dumps(CHAT).encode())
        assert code == 0
        material = json.loads(out)
        assert material["scheme"] == 2
        assert "timeout" not in material["request"]

    def test_http_kind(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        """Kind http keys an HTTP request document."""
        request: dict[str, Any] = {"method": "GET", "url": "https://h/x?b=1&a=2"}
        code, out, _ = _run(monkeypatch, capsysbinary, ["key", "--kind", "http"],
                            json.dumps(request).encode())
        assert code == 0
        assert out.decode().strip() == request_key("http", request)

    @pytest.mark.parametrize(
        ("argv", "stdin", "message"),
        [
            (["key", "--kind", "chat"], b'{"messages": [{"content": Infinity}]}',
             "/messages/0/content: inf is not a JSON number"),
            (["key", "--kind", "http"], b'{"method": "GET"}', "needs string 'method' and 'url'"),
            (["key", "--kind", "chat"], b"[1, 2", "stdin is not JSON"),
        ],
    )
    def test_bad_request_is_one_line_exit_2(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes],
        argv: list[str], stdin: bytes, message: str,
    ) -> None:
        """An unkeyable request is one line on stderr and exit 2."""
        code, out, err = _run(monkeypatch, capsysbinary, argv, stdin)
        assert (code, out) == (2, b"")
        assert err.count("\n") == 1
        assert message in err

    def test_redacts_like_recording_by_default(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        """A credential in the request is redacted before keying unless --no-redact."""
        fake = "sk-proj-" + "A1b2" * 12
        request = {"model": "m", "messages": [{"role": "user", "content": f"use {fake}"}]}
        code, out, _ = _run(monkeypatch, capsysbinary, ["key", "-k", "chat", "--material"],
                            json.dumps(request).encode())
        assert code == 0
        assert fake.encode() not in out
        assert b"[REDACTED]" in out
        code, raw, _ = _run(monkeypatch, capsysbinary,
                            ["key", "-k", "chat", "--material", "--no-redact"],
                            json.dumps(request).encode())
        assert code == 0
        assert fake.encode() in raw
        code, keyed, _ = _run(monkeypatch, capsysbinary, ["key", "-k", "chat"],
                              json.dumps(request).encode())
        assert keyed.decode().strip() != request_key("chat", request)

    def test_config_key_spec_applies(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes],
        tmp_path: Path,
    ) -> None:
        """`[keys.<kind>]` in the configuration narrows the spec, as for recording."""
        config = tmp_path / ".redactkey.toml"
        config.write_text('[keys.chat]\nignore = ["temperature"]\n', encoding="utf-8")
        code, out, _ = _run(monkeypatch, capsysbinary,
                            ["key", "-k", "chat", "--config", str(config)],
                            json.dumps(CHAT).encode())
        assert code == 0
        spec = KeySpec.model().narrow("temperature")
        assert out.decode().strip() == request_key("chat", CHAT, spec=spec)
        assert out.decode().strip() != request_key("chat", CHAT)

    def test_missing_kind_is_usage_error(
        self, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
    ) -> None:
        """`--kind` is required."""
        code, _, err = _run(monkeypatch, capsysbinary, ["key"], b"{}")
        assert code == 2
        assert "--kind" in err

    def test_real_subprocess(self) -> None:
        """The installed entry point works end to end on the corpus request."""
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        data = (ROOT / "corpus" / "requests" / "chat.json").read_bytes()
        key = subprocess.run(
            [sys.executable, "-c", "from redactkey.commands._cli import run; run()",
             "key", "-k", "chat"],
            input=data, capture_output=True, check=False, env=env,
        )
        assert (key.returncode, key.stderr) == (0, b"")
        assert key.stdout.decode().strip() == request_key("chat", CHAT)
        bad = subprocess.run(
            [sys.executable, "-c", "from redactkey.commands._cli import run; run()", "canon"],
            input=b'{"a": NaN}', capture_output=True, check=False, env=env,
        )
        assert bad.returncode == 2
        assert bad.stdout == b""
        assert bad.stderr.decode().count("\n") == 1
        assert b"Traceback" not in bad.stderr
