"""Placeholder styles other projects commit are clean, each proven by a real recording.

Each style maps to a real file that uses it. Where the file is in ../shared (third-party
corpora), the test reads the value from its line there and runs `check` and `audit`
over the whole file: nothing but notes at that line (skipped when ../shared is absent).
Where the file is in a public repository, only its one value line is embedded below,
with the repository and path in a comment, and a minimal recording of the same format
around it must be clean in both commands; the same recording with a real-looking value
(built at run time) must be reported at that line, so the clean results can fail.

All cases are files of one temporary directory (plus the shared files) read by one
`check` run and one `audit` run for the module, in process, as the CLI does.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED as SHARED_DIR
from redactkey.commands._cli import main
from redactkey.scan._placeholders import looks_redacted


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
    slot: str  # the header (or, with place "query", the query parameter) holding it
    value: str
    format: str = "vcrpy"  # the recording format the line was committed in
    place: str = "header"


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
    # JupiterOne/graph-okta src/okta/__recordings__/delayNextApiRequest_2022936668/
    # recording.har (Polly.JS via @jupiterone/integration-sdk-testing,
    # redactedRequestHeaders: ['Authorization'], commit af086f0e):
    # `"name": "authorization",` / `"value": "[REDACTED]"`
    Public("[REDACTED]", "JupiterOne/graph-okta src/okta/__recordings__/"
           "delayNextApiRequest_2022936668/recording.har", "authorization", "[REDACTED]",
           "har"),
    # AxelOhlander/upsales-python-sdk tests/cassettes/integration/
    # test_currencies_integration/test_get_master_currency.yaml (vcrpy
    # filter_headers=[("cookie", "REDACTED"), ...], commit dc949a47): the session
    # cookie `cookie:` / `- REDACTED`
    Public("REDACTED", "AxelOhlander/upsales-python-sdk tests/cassettes/integration/"
           "test_currencies_integration/test_get_master_currency.yaml", "cookie", "REDACTED"),
    # cal-itp/data-infra airflow/tests/hooks/cassettes/test_airtable_hook/
    # TestAirtableHook.test_retrieve.yaml (vcrpy filter_headers=[("Authorization",
    # "FILTERED"), ...], commit d3eed3bd): the Airtable token `Authorization:` / `- FILTERED`
    Public("FILTERED", "cal-itp/data-infra airflow/tests/hooks/cassettes/test_airtable_hook/"
           "TestAirtableHook.test_retrieve.yaml", "Authorization", "FILTERED"),
    # CardTapp/yext-api spec/cassettes/Yext_Api_KnowledgeApi_HealthCheck_Health/index/
    # gets_a_list_of_health.yml (Ruby VCR filter_sensitive_data("fake_api_key"), commit
    # 76cfb0fc): the API key as a query parameter
    # `uri: https://sandbox.yext.com/v2/healthy?api_key=fake_api_key&v=20161012`
    Public("fake_*", "CardTapp/yext-api spec/cassettes/Yext_Api_KnowledgeApi_HealthCheck_"
           "Health/index/gets_a_list_of_health.yml", "api_key", "fake_api_key", "ruby-vcr",
           "query"),
    # datopian/giftless tests/storage/cassettes/TestAmazonS3StorageBackend.test_exists_
    # exists.yaml (vcrpy filter_headers=[("authorization", "fake-authz-header")] over
    # boto3's AWS SigV4 header, commit 65f4c5f6), line 29 of the file and of every
    # request after: `authorization:` / `- fake-authz-header`
    Public("fake-*", "datopian/giftless tests/storage/cassettes/TestAmazonS3StorageBackend."
           "test_exists_exists.yaml", "authorization", "fake-authz-header"),
]


def _vcrpy(header: str, value: str, place: str = "header") -> str:
    assert place == "header"
    return (
        "interactions:\n- request:\n    body: '{\"model\": \"m\"}'\n    headers:\n"
        f"      {header}:\n      - {json.dumps(value)}\n    method: POST\n"
        "    uri: https://api.example.com/v1/chat\n  response:\n    body:\n"
        "      string: '{\"ok\": true}'\n    headers: {}\n    status:\n      code: 200\n"
        "      message: OK\nversion: 1\n"
    )


def _har(header: str, value: str, place: str = "header") -> str:
    assert place == "header"
    entry = {
        "request": {"method": "GET", "url": "https://api.example.com/v1/users",
                    "httpVersion": "HTTP/1.1", "cookies": [],
                    "headers": [{"name": header, "value": value}], "queryString": [],
                    "headersSize": -1, "bodySize": 0},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                     "cookies": [], "headers": [{"name": "content-type",
                                                 "value": "application/json"}],
                     "content": {"mimeType": "application/json", "size": 12,
                                 "text": '{"ok": true}'},
                     "redirectURL": "", "headersSize": -1, "bodySize": 12},
        "startedDateTime": "2020-12-03T14:54:43.077Z", "time": 1, "cache": {},
        "timings": {"send": 0, "wait": 1, "receive": 0},
    }
    log = {"version": "1.2", "creator": {"name": "Polly.JS", "version": "5.0.0"},
           "entries": [entry]}
    return json.dumps({"log": log}, indent=2) + "\n"


def _ruby_vcr(param: str, value: str, place: str = "header") -> str:
    assert place == "query"
    return (
        "---\nhttp_interactions:\n- request:\n    method: get\n"
        f"    uri: https://api.example.com/v2/healthy?{param}={value}&v=20161012\n"
        "    body:\n      encoding: US-ASCII\n      string: ''\n    headers:\n"
        "      User-Agent:\n      - Faraday v0.13.1\n  response:\n    status:\n"
        "      code: 200\n      message: OK\n    headers:\n      content-type:\n"
        "      - text/plain; charset=utf-8\n    body:\n      encoding: UTF-8\n"
        "      string: ok\n    http_version:\n"
        "  recorded_at: Mon, 22 Jan 2018 18:38:40 GMT\nrecorded_with: VCR 4.0.0\n"
    )


WRITERS = {"vcrpy": (_vcrpy, ".yaml"), "har": (_har, ".har"), "ruby-vcr": (_ruby_vcr, ".yml")}


def _real_looking(value: str) -> str:
    """A value of the same kind that is not a placeholder, built here (not a real key)."""
    body = "".join("abcdefghijkmnpqrstuvwxyz23456789"[(i * 7 + 3) % 32] for i in range(36))
    return f"Bearer {body}" if value.startswith("Bearer ") else body


def _line_of(text: str, value: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if value in line)




@dataclass(frozen=True)
class Runs:
    """What one `check` and one `audit` run said about every case file."""

    formats: dict[str, dict[Path, str]]  # command -> file -> format read
    reported: dict[str, dict[Path, list[tuple[int, str, str]]]]  # (line, rule, severity)
    cases: dict[str, tuple[Path, int, Path, int]]  # style -> clean file, line, twin, line


def _run(command: str, paths: list[Path]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([command, "--format", "json", *map(str, paths)])
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Every public case and its real-looking twin written to one directory, read together
    with the shared files by one run of each command."""
    folder = tmp_path_factory.mktemp("placeholder-sources")
    cases = {}
    for n, case in enumerate(PUBLIC):
        write, suffix = WRITERS[case.format]
        clean, twin = folder / f"{n}-clean{suffix}", folder / f"{n}-real{suffix}"
        real = _real_looking(case.value)
        clean_text = write(case.slot, case.value, case.place)
        twin_text = write(case.slot, real, case.place)
        clean.write_text(clean_text, encoding="utf-8")
        twin.write_text(twin_text, encoding="utf-8")
        cases[case.style] = (clean, _line_of(clean_text, case.value),
                             twin, _line_of(twin_text, real))
    shared = [SHARED_DIR / s.path for s in SHARED if (SHARED_DIR / s.path).exists()]
    formats: dict[str, dict[Path, str]] = {}
    reported: dict[str, dict[Path, list[tuple[int, str, str]]]] = {}
    for command in ("check", "audit"):
        data = _run(command, [folder, *shared])
        formats[command] = {Path(f["path"]).resolve(): f["format"] for f in data["files"]}
        found: dict[Path, list[tuple[int, str, str]]] = {}
        for f in data["findings"]:
            found.setdefault(Path(f["path"]).resolve(), []).append(
                (f["line"], f["rule"], f["severity"]))
        reported[command] = found
    return Runs(formats, reported, cases)


@pytest.mark.parametrize("source", SHARED, ids=lambda s: s.style)
def test_style_in_a_shared_recording(source: Shared, shared_dir: Path, runs: Runs) -> None:
    """The value sits at its line under its header, and neither command reports it."""
    path = shared_dir / source.path
    if not path.exists():
        pytest.skip(f"{source.path} is not in ../shared here")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[source.line - 1].strip().endswith(source.value)
    assert source.header + ":" in "\n".join(lines[source.line - 3:source.line])
    assert looks_redacted(source.value)
    for command in ("check", "audit"):
        assert path.resolve() in runs.formats[command]
        found = runs.reported[command].get(path.resolve(), [])
        assert source.line not in {line for line, _, severity in found if severity != "note"}


@pytest.mark.parametrize("source", PUBLIC, ids=lambda s: s.style)
def test_style_in_a_public_recording(source: Public, runs: Runs) -> None:
    """The value line as committed in that repository is clean in check and audit."""
    clean, _, _, _ = runs.cases[source.style]
    assert looks_redacted(source.value)
    for command in ("check", "audit"):
        assert runs.formats[command][clean.resolve()] == source.format
        assert runs.reported[command].get(clean.resolve(), []) == []


@pytest.mark.parametrize("source", PUBLIC, ids=lambda s: s.style)
def test_a_real_value_in_the_same_place_is_reported(source: Public, runs: Runs) -> None:
    """The same recording with a real-looking value there is reported at that line (so the
    test above can fail)."""
    _, _, twin, line = runs.cases[source.style]
    for command in ("check", "audit"):
        assert runs.formats[command][twin.resolve()] == source.format
        found = runs.reported[command].get(twin.resolve(), [])
        assert [f for f in found if f[0] == line and f[2] != "note"], (command, found)


@pytest.mark.parametrize("value", ["Bearer not-a-placeholder-0123456789abcdefghij",
                                   "XXXXXXXX0123456789abcdefghijklmn"])
def test_a_placeholder_look_alike_is_reported(value: str, tmp_path: Path) -> None:
    """A value that only starts like a placeholder is an error."""
    path = tmp_path / "recording.yaml"
    path.write_text(_vcrpy("Authorization", value), encoding="utf-8")
    data = _run("audit", [path])
    assert [(f["line"], f["rule"]) for f in data["findings"]
            if f["severity"] != "note"] == [(6, "sensitive-key")]
