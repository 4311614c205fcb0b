"""Secrets in two nested contexts, for the `Redactor` and for `redact check` / `audit`:
inside base64 of a JSON body, and inside a JSON string inside a YAML string."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from redactkey import Redactor
from redactkey.commands._cli import main
from redactkey.scan._validators import fake

KEY = "sk-" + "proj-" + fake(48, seed="nested-context")
# no provider prefix: only the field's name says it is a credential
NAMED = fake(40, seed="nested-named")


def _b64_json(payload: object) -> str:
    return base64.b64encode(json.dumps(payload).encode()).decode()


def _run(capsys: pytest.CaptureFixture[str], command: str, path: str) -> tuple[int, dict]:
    code = main([command, "--format", "json", path])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


class TestBase64OfJsonBody:
    """A JSON body held as base64 text in a recording."""

    def document(self) -> dict[str, object]:
        body = _b64_json({"model": "m", "messages": [{"role": "user", "content": f"use {KEY}"}],
                          "api_key": NAMED})
        return {"interactions": [{"request": {"method": "POST", "uri": "https://api.example.com/v1",
                                              "headers": {}, "body": body},
                                  "response": {"status": {"code": 200}, "headers": {},
                                               "body": {"string": "ok"}}}]}

    def test_redactor(self) -> None:
        """Both secrets leave the decoded body; the body stays base64 of JSON."""
        document = self.document()
        out = Redactor().redact(document)
        body = out["interactions"][0]["request"]["body"]
        decoded = json.loads(base64.b64decode(body))
        text = json.dumps(decoded)
        assert KEY not in text
        assert NAMED not in text
        assert decoded["model"] == "m"
        findings = Redactor().findings(document)
        assert [f.rule for f in findings] == ["base64-text"]
        assert findings[0].pointer == "/interactions/0/request/body"
        assert KEY not in repr(findings)
        assert NAMED not in repr(findings)

    @pytest.mark.parametrize("command", ["check", "audit"])
    def test_commands(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                      command: str) -> None:
        """check and audit report the body's line as an error; no part of a key is printed."""
        text = json.dumps(self.document(), indent=2)
        (workdir / "cassette.json").write_text(text, encoding="utf-8")
        line = next(i for i, row in enumerate(text.splitlines(), 1) if '"body": "' in row)
        code, report = _run(capsys, command, "cassette.json")
        assert code == 1
        errors = [f for f in report["findings"] if f["severity"] == "error"]
        assert [(f["rule"], f["line"]) for f in errors] == [("base64-text", line)]
        dumped = json.dumps(report)
        assert KEY[:12] not in dumped
        assert NAMED[:12] not in dumped


class TestJsonInsideYamlString:
    """A JSON document in a YAML string (a vcrpy body), the secret in one of its strings,
    and once more in a JSON text held in that JSON (tool-call arguments)."""

    def cassette(self) -> str:
        answer = {"choices": [{"message": {
            "content": f"your key is {KEY}",
            "tool_calls": [{"function": {"name": "login",
                                         "arguments": json.dumps({"api_key": NAMED})}}]}}]}
        return yaml.safe_dump({"interactions": [{
            "request": {"method": "POST", "uri": "https://api.example.com/v1/chat",
                        "headers": {}, "body": None},
            "response": {"status": {"code": 200, "message": "OK"}, "headers": {},
                         "body": {"string": json.dumps(answer)}}}], "version": 1},
            width=10**6)

    def test_redactor(self) -> None:
        """Both secrets leave the YAML string; it stays JSON, its arguments stay JSON."""
        document = yaml.safe_load(self.cassette())
        out = Redactor().redact(document)
        body = out["interactions"][0]["response"]["body"]["string"]
        answer = json.loads(body)
        message = answer["choices"][0]["message"]
        assert KEY not in body
        assert NAMED not in body
        assert "your key is" in message["content"]
        arguments = json.loads(message["tool_calls"][0]["function"]["arguments"])
        assert set(arguments) == {"api_key"}
        pointers = {f.pointer for f in Redactor().findings(document)}
        base = "/interactions/0/response/body/string/choices/0/message"
        assert pointers == {f"{base}/content",
                            f"{base}/tool_calls/0/function/arguments/api_key"}

    @pytest.mark.parametrize("command", ["check", "audit"])
    def test_commands(self, workdir: Path, capsys: pytest.CaptureFixture[str],
                      command: str) -> None:
        """Both secrets are errors on the body's line; no part of a key is printed."""
        text = self.cassette()
        (workdir / "cassette.yaml").write_text(text, encoding="utf-8")
        line = next(i for i, row in enumerate(text.splitlines(), 1) if "string:" in row)
        code, report = _run(capsys, command, "cassette.yaml")
        assert code == 1
        errors = sorted((f["rule"], f["line"]) for f in report["findings"]
                        if f["severity"] == "error")
        assert errors == [("openai-api-key", line), ("sensitive-key", line)]
        dumped = json.dumps(report)
        assert KEY[:12] not in dumped
        assert NAMED[:12] not in dumped
