"""Placeholder styles other projects commit are clean, each proven by a real recording.

Each style maps to a real file that uses it. Where the file is in ../shared (third-party
corpora), the test reads the value from its line there and runs `check` and `audit`
over the whole file: nothing but notes at that line (skipped when ../shared is absent).
Where the file is in a public repository, only its one value line is embedded below,
with the repository and path in a comment, and a minimal recording around it must be
clean in both commands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from redactkey._cli import main
from redactkey._placeholders import is_placeholder, looks_redacted


@dataclass(frozen=True)
class Shared:
    """A style and the line of a file in ../shared where its authors used it."""

    style: str
    path: str
    line: int
    header: str
    value: str


SHARED = [
    Shared("<NAME>", "realworld/alexrudall__ruby-openai/spec/fixtures/cassettes/"
           "groq_llama3-8b-8192_streamed_chat.yml", 13, "Authorization",
           "Bearer <OPENAI_ACCESS_TOKEN>"),
    Shared("XXXX…", "realworld/pydantic__pydantic-ai/tests/models/cassettes/"
           "test_openai_responses/test_background_mode_streaming_vcr.yaml", 87,
           "openai-organization", "XXXXXX"),
    Shared("DUMMY_*", "realworld2/files/traceloop__openllmetry/packages__opentelemetry-"
           "instrumentation-google-generativeai__tests__cassettes__test_generate_content__"
           "test_generate_metrics.yaml", 22, "x-goog-api-key", "DUMMY_GOOGLE_API_KEY"),
    Shared("test_*_key", "realworld2/files/open-telemetry__opentelemetry-python-contrib/"
           "instrumentation-genai__opentelemetry-instrumentation-openai-v2__tests__cassettes__"
           "test_responses_create_with_all_params[content_mode0].yaml", 48, "authorization",
           "Bearer test_openai_api_key"),
    Shared("fake", "realworld/pydantic__pydantic-ai/tests/models/cassettes/"
           "test_openai_responses/test_openai_responses_model_mcp_server_tool_with_"
           "connector.yaml", 30, "authorization", "fake"),
]


@dataclass(frozen=True)
class Public:
    """A style and the one value line of a public repository's recording."""

    style: str
    source: str  # repository and path
    header: str
    value: str


PUBLIC = [
    # dvcrn/ex_openai test/fixture/vcr_cassettes/chat_basic_completion.json (ExVCR's
    # filter_request_headers): `"Authorization": "***",`
    Public("***", "dvcrn/ex_openai test/fixture/vcr_cassettes/chat_basic_completion.json",
           "Authorization", "***"),
    # andrewdieken/clockface spec/fixtures/vcr_cassettes/PersonGroup_Operations_Create/
    # creates_a_person_group.yml (Ruby VCR filter_sensitive_data("[#{var}]")):
    # `Ocp-Apim-Subscription-Key:` / `- "[FACE_API_KEY]"`
    Public("[NAME]", "andrewdieken/clockface spec/fixtures/vcr_cassettes/"
           "PersonGroup_Operations_Create/creates_a_person_group.yml",
           "Ocp-Apim-Subscription-Key", "[FACE_API_KEY]"),
]


def _findings(capsys: pytest.CaptureFixture[str], command: str, path: Path
              ) -> list[tuple[int, str]]:
    main([command, "--format", "json", str(path)])
    data = json.loads(capsys.readouterr().out)
    assert data["files"], data["skipped"]
    return [(f["line"], f["rule"]) for f in data["findings"] if f["severity"] != "note"]


@pytest.mark.parametrize("source", SHARED, ids=lambda s: s.style)
def test_style_in_a_shared_recording(source: Shared, shared_dir: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The value sits at its line under its header, and neither command reports it."""
    path = shared_dir / source.path
    if not path.exists():
        pytest.skip(f"{source.path} is not in ../shared here")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[source.line - 1].strip().endswith(source.value)
    assert source.header + ":" in "\n".join(lines[source.line - 3:source.line])
    assert looks_redacted(source.value, is_placeholder)
    for command in ("check", "audit"):
        assert source.line not in {line for line, _ in _findings(capsys, command, path)}


def _cassette(header: str, value: str) -> str:
    return (
        "interactions:\n- request:\n    body: '{\"model\": \"m\"}'\n    headers:\n"
        f"      {header}:\n      - {json.dumps(value)}\n    method: POST\n"
        "    uri: https://api.example.com/v1/chat\n  response:\n    body:\n"
        "      string: '{\"ok\": true}'\n    headers: {}\n    status:\n      code: 200\n"
        "      message: OK\nversion: 1\n"
    )


@pytest.mark.parametrize("source", PUBLIC, ids=lambda s: s.style)
def test_style_in_a_public_recording(source: Public, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The value line as committed in that repository is clean in check and audit."""
    path = tmp_path / "recording.yaml"
    path.write_text(_cassette(source.header, source.value), encoding="utf-8")
    for command in ("check", "audit"):
        assert _findings(capsys, command, path) == []


@pytest.mark.parametrize("value", ["Bearer not-a-placeholder-0123456789abcdefghij",
                                   "XXXXXXXX0123456789abcdefghijklmn"])
def test_a_real_value_under_the_same_header_is_reported(
        value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same minimal recording with a real-looking value is a finding (so the tests
    above can fail)."""
    path = tmp_path / "recording.yaml"
    path.write_text(_cassette("Authorization", value), encoding="utf-8")
    assert _findings(capsys, "audit", path) == [(6, "sensitive-key")]
