"""`redact check` prints the same bytes as the committed expected output (text and JSON) for
a sample tree: every recording format in tests/data/formats plus rVCR-shaped JSON documents
(the generic header walk: header maps of lists and of strings, name/value lists, flat pairs,
escaped names, request ids, cookies, identifying headers, a credential as a member name).

Work on the speed of `check` must not change a byte of what it reports. After a deliberate
change of the output, write the expected files again with
`python tests/test_check_output_pinned.py --write` and review the diff.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from redactkey.commands._cli import main

DATA = Path(__file__).resolve().parent / "data"
EXPECTED = DATA / "check-output"

# fake keys built at run time, shaped like real ones, valid for nothing
FAKE_OPENAI = "sk-proj-" + "Qw3rTy7u" * 6
FAKE_ANTHROPIC = "sk-ant-api03-" + "Mn4bVc2x" * 5
FAKE_GOOGLE = "AIza" + "Kj8hGf5d" * 4 + "abc"
TOKEN_NAME = "tok_" + "Pl0kIj9u" * 4


def _interaction(n: int, *, secret: str | None = None) -> dict[str, object]:
    answer = {"id": f"chatcmpl-{n:04d}", "choices": [{"message": {
        "role": "assistant", "content": f"answer {n}" + (f" echoed {secret}" if secret
                                                          and n % 2 else "")}}]}
    request_headers: dict[str, object] = {
        "content-type": ["application/json"], "user-agent": ["OpenAI/Python 1.99.0"],
        "authorization": [f"Bearer {secret}" if secret and n % 3 == 0 else "Bearer [REDACTED]"],
    }
    if n % 4 == 1:
        request_headers["cookie"] = [f"session=s{n:03d}Xy7Qw3rTy7uMn4bVc2x"]
        request_headers["x~odd"] = [f"value-{n}"]
    return {
        "request": {"method": "post", "uri": "https://api.openai.com/v1/chat/completions"
                    + (f"?key={FAKE_GOOGLE}" if n == 2 else ""),
                    "headers": request_headers,
                    "body": {"encoding": "UTF-8", "string": json.dumps({"n": n})}},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"x-request-id": [f"req_{n:032d}"],
                                 "openai-organization": ["org-Hx72kLp0Qz9Wv3Ty"],
                                 "content-type": ["application/json"],
                                 "set-cookie": [f"__cf_bm=Ab{n:02d}Cd3fGh5jKl7mNp9qRs1tUv"]},
                     "body": {"encoding": None, "string": json.dumps(answer, indent=2)}},
        "recorded_at": "Thu, 08 Feb 2024 13:31:33 GMT",
    }


def write_sample(root: Path) -> None:
    """The sample tree under `root` (deterministic)."""
    shutil.copytree(DATA / "formats", root / "formats")
    rvcr = root / "rvcr"
    rvcr.mkdir()
    (rvcr / "chat.json").write_text(json.dumps(
        {"http_interactions": [_interaction(n, secret=FAKE_OPENAI) for n in range(7)],
         "recorded_with": "rVCR 0.1"}, indent=2), encoding="utf-8")
    (rvcr / "clean.json").write_text(json.dumps(
        {"http_interactions": [_interaction(n) for n in range(3)],
         "recorded_with": "rVCR 0.1"}, indent=2), encoding="utf-8")
    generic = {
        "calls": [
            {"meta": {"headers": {"X-Request-Id": "req_generic_0001", "X-Api-Key": FAKE_ANTHROPIC,
                                  "Accept": "*/*"}},
             "tokens": {TOKEN_NAME: "scope-read"},
             "pairs": {"rawHeaders": ["X-Request-Id", "req_flat_0002", "Cookie",
                                      "sid=Zz9Yy8Xx7Ww6Vv5Uu4Tt"]},
             "list": {"headers": [{"name": "x-request-id", "value": "req_named_0003"},
                                  {"name": "Authorization", "value": "Bearer [REDACTED]"}]},
             "unnamed": [{"name": "x-request-id", "value": "req_unnamed_0004"}],
             "metadata": {"request-id": "req_meta_0005", "host": "api.example.test"}},
        ],
    }
    (rvcr / "generic.json").write_text(json.dumps(generic, indent=1), encoding="utf-8")
    (rvcr / "compact.json").write_text(json.dumps(
        {"http_interactions": [_interaction(n, secret=FAKE_ANTHROPIC) for n in range(4)]},
        separators=(",", ":")), encoding="utf-8")


def run_check(root: Path, fmt: str) -> tuple[int, str]:
    """`redact check --format fmt formats rvcr` run in `root`: exit code and stdout."""
    out = StringIO()
    before = Path.cwd()
    os.chdir(root)
    try:
        with redirect_stdout(out):
            code = main(["check", "--format", fmt, "-j", "1", "formats", "rvcr"])
    finally:
        os.chdir(before)
    return code, out.getvalue()


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample tree, with no secret-looking environment variable picked up."""
    for name in list(os.environ):
        if any(part in name.upper() for part in ("KEY", "TOKEN", "SECRET", "PASS", "REDACTKEY")):
            monkeypatch.delenv(name)
    (tmp_path / ".redactkey.toml").write_text("", encoding="utf-8")
    write_sample(tmp_path)
    return tmp_path


class TestPinnedOutput:
    """The text and JSON reports of the sample tree match the committed bytes."""

    @pytest.mark.parametrize("fmt", ["text", "json"])
    def test_same_bytes(self, sample: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Exit 1 (findings) and the report byte for byte as committed."""
        code, out = run_check(sample, fmt)
        capsys.readouterr()
        expected = (EXPECTED / f"expected.{'txt' if fmt == 'text' else 'json'}").read_text(
            encoding="utf-8")
        assert code == 1
        assert out == expected

    def test_sample_exercises_the_header_walk(self, sample: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
        """The sample holds findings of every header class in the generic documents."""
        _, out = run_check(sample, "json")
        capsys.readouterr()
        rules = {(f["path"].split("/")[0], f["rule"]) for f in json.loads(out)["findings"]}
        for rule in ("request-id", "cookie", "identifying-header", "sensitive-key"):
            assert ("rvcr", rule) in rules, rule
        for value in (FAKE_OPENAI, FAKE_ANTHROPIC, TOKEN_NAME):
            assert value not in out


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / ".redactkey.toml").write_text("", encoding="utf-8")
        write_sample(root)
        EXPECTED.mkdir(exist_ok=True)
        for fmt, suffix in (("text", "txt"), ("json", "json")):
            _, text = run_check(root, fmt)
            (EXPECTED / f"expected.{suffix}").write_text(text, encoding="utf-8")
