"""`redact check` errors on secrets, not on stand-ins: a key-shaped value that is made up
(letters or digits stepping through the alphabet, one character repeated, a repeated block,
a fake's word) is a warning that says so; the same shape with a random body is an error."""

from __future__ import annotations

import json
import random
import secrets
import string
from pathlib import Path

import pytest

from redactkey import Redactor
from redactkey.commands._cli import main
from redactkey.scan._placeholders import made_up


def _random(length: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> tuple[int, dict]:
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps({"headers": {"x-note": f"key {value}"}}), encoding="utf-8")
    code = main(["check", "--format", "json", str(path)])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("body", [
    "abcdefghij1234567890ABCDEFGHIJ1234567890abcdefgh",  # letters and digits stepping
    "Qz8Lk2Vd" + "q" * 40,  # one character repeated
    "Qz8Lk2Vd" * 6,  # a block repeated
    "thisisafakekeyforthedocs0000" + "Qz8Lk2Vd9Pw3",  # a fake's word
])
def test_made_up_key_is_a_warning_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    body: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert made_up("sk-proj-" + body)
    code, report = _check(tmp_path, capsys, "sk-proj-" + body)
    assert code == 1  # still reported: a made-up key in a fixture is worth a look
    [finding] = [f for f in report["findings"] if f["rule"] == "openai-api-key"]
    assert finding["severity"] == "warning"
    assert "made up" in finding["detail"]


def test_masked_key_is_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A provider prefix over a mask (`sk-proj-XXXX…`) is a placeholder, not a key."""
    monkeypatch.chdir(tmp_path)
    code, report = _check(tmp_path, capsys, "sk-proj-" + "X" * 48)
    assert (code, report["findings"]) == (0, [])


def test_random_key_of_the_same_shape_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    key = "sk-proj-" + _random(48)
    assert not made_up(key)
    code, report = _check(tmp_path, capsys, key)
    assert code == 1
    [finding] = [f for f in report["findings"] if f["rule"] == "openai-api-key"]
    assert finding["severity"] == "error"


def test_random_keys_are_rarely_taken_for_made_up() -> None:
    """Issued keys are random: of 20,000 random bodies of 40 characters (a fixed draw), at
    most one is taken for made up (about one in 100,000 spells a fake's word by chance)."""
    draw = random.Random(20261204)
    alphabet = string.ascii_letters + string.digits
    bodies = ["".join(draw.choice(alphabet) for _ in range(40)) for _ in range(20000)]
    assert len([body for body in bodies if made_up(body)]) <= 1


@pytest.mark.parametrize("token", [
    lambda: "xoxd-" + _random(60, string.ascii_letters + string.digits + "%"),
    lambda: "xoxc-" + "-".join(_random(12, string.digits) for _ in range(3)) + "-"
    + _random(64, string.hexdigits.lower()[:16]),
    lambda: "sk-None-" + _random(48),
    lambda: "sk-svc-acct-" + _random(20) + "T3BlbkFJ" + _random(20),
])
def test_provider_shapes_found(token: object) -> None:
    value = token()  # type: ignore[operator]
    assert Redactor().findings({"note": f"here {value} there"}), value


def test_oauth_token_named_token_is_found() -> None:
    """GitHub's `POST /authorizations` answers `"token": "<40 hex>"`."""
    found = Redactor().findings({"token": _random(40, "0123456789abcdef")})
    assert found
