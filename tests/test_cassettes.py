"""Reading vcrpy, Ruby VCR, rVCR and other cassettes into interactions with line numbers."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest

from conftest import SHARED
from helpers import load_recording
from redactkey._errors import FixtureFormatError
from redactkey.recordings._readers import read_recording


def _manifest_rows() -> list[list[str]]:
    manifest = SHARED / "realworld" / "MANIFEST.tsv"
    if not manifest.is_file():
        return [["absent", "absent", "", "", "", "0"]]
    rows = [line.split("\t") for line in manifest.read_text(encoding="utf-8").splitlines()[1:]]
    return [row for row in rows if len(row) > 5]


_ROWS = _manifest_rows()
_EXPECTED_FORMATS = {"vcrpy-yaml": {"vcrpy"}, "json": {"rvcr-json"},
                     "other": {"ruby-vcr", "websocket", "grpc"}}


class TestRealworldCassettes:
    """Every third-party cassette in ../shared/realworld loads."""

    @pytest.mark.parametrize("row", _ROWS, ids=[row[1] for row in _ROWS])
    def test_loads_with_all_interactions(self, shared_dir: Path, row: list[str]) -> None:
        """The file loads, in its manifest's format, with the manifest's interaction count."""
        path = shared_dir / "realworld" / row[0].replace("/", "__") / row[1]
        cassette = load_recording(path)
        assert cassette.format in _EXPECTED_FORMATS[row[2]]
        assert len(cassette.interactions) == int(row[5])
        assert cassette.lines.line_for(cassette.interactions[0].pointer) > 1


def _vcr_yaml(body_yaml: str, extra_headers: str = "") -> str:
    return (
        "interactions:\n"
        "- request:\n"
        "    body: '{\"model\":\"gpt-4o\"}'\n"
        "    headers:\n"
        "      authorization:\n"
        "      - Bearer abc\n"
        f"{extra_headers}"
        "    method: POST\n"
        "    uri: https://api.example.com/v1/chat\n"
        "  response:\n"
        f"{body_yaml}"
        "    headers:\n"
        "      Content-Encoding:\n"
        "      - gzip\n"
        "    status:\n"
        "      code: 200\n"
        "      message: OK\n"
        "version: 1\n"
    )


class TestVcrpyYaml:
    """vcrpy cassettes: bodies decoded, headers and lines kept."""

    def test_gzip_binary_body_is_decoded(self) -> None:
        """A `!!binary` gzip body becomes its text and, being JSON, its parsed value."""
        packed = base64.b64encode(gzip.compress(b'{"answer": "hi"}')).decode()
        text = _vcr_yaml(f"    body:\n      string: !!binary |\n        {packed}\n")
        cassette = read_recording(Path("c.yaml"), text)
        (call,) = cassette.interactions
        assert cassette.format == "vcrpy"
        assert call.method == "POST"
        assert call.status == 200
        assert call.response is not None
        assert call.response.body == {"answer": "hi"}
        assert call.request.body == {"model": "gpt-4o"}
        assert call.request.header("Authorization") == ["Bearer abc"]

    def test_line_numbers_point_at_values(self) -> None:
        """Pointers map to the real line of the value in the file."""
        text = _vcr_yaml("    body:\n      string: plain\n")
        cassette = read_recording(Path("c.yaml"), text)
        assert cassette.line_for("/interactions/0/request/headers/authorization/0") == 6
        assert cassette.line_for("/interactions/0/request/uri") == 8
        assert cassette.line_for("/interactions/0/response/body/string") == 11

    def test_literal_block_offsets_map_to_lines(self) -> None:
        """An offset inside a `|` block maps to the line holding it."""
        text = _vcr_yaml("    body:\n      string: |\n        one\n        two\n        three\n")
        cassette = read_recording(Path("c.yaml"), text)
        pointer = "/interactions/0/response/body/string"
        value = cassette.interactions[0].response.body  # type: ignore[union-attr]
        assert isinstance(value, str)
        assert cassette.line_for(pointer, value.index("three")) == 14

    def test_pydantic_ai_parsed_body(self) -> None:
        """pydantic-ai's `parsed_body` is the request body."""
        text = (
            "interactions:\n- request:\n    method: POST\n    parsed_body:\n"
            "      model: gpt-4o\n    uri: https://x\n  response:\n    parsed_body:\n"
            "      id: r1\n    status:\n      code: 200\n"
        )
        (call,) = read_recording(Path("c.yaml"), text).interactions
        assert call.request.body == {"model": "gpt-4o"}
        assert call.response is not None
        assert call.response.body == {"id": "r1"}


class TestUnsafeTags:
    """Language-specific YAML tags are read as data; nothing is executed."""

    @pytest.mark.parametrize(
        "tagged",
        [
            "!!python/object/apply:os.system ['echo pwned > /tmp/redactkey-pwned']",
            "!ruby/object:Net::HTTPResponse {code: 200}",
            "!ruby/hash:ActiveSupport::HashWithIndifferentAccess {a: 1}",
            "!custom 12",
        ],
    )
    def test_tag_read_as_plain_data(self, tagged: str) -> None:
        """The tagged node becomes plain JSON data."""
        text = f"http_interactions:\n- request:\n    x: {tagged}\n"
        cassette = read_recording(Path("c.yml"), text)
        value = cassette.document["http_interactions"][0]["request"]["x"]  # type: ignore[index]
        assert isinstance(value, (str, list, dict))
        assert not Path("/tmp/redactkey-pwned").exists()

    def test_ruby_binary_tag_decoded(self) -> None:
        """Ruby's `!binary` body is base64-decoded to text."""
        packed = base64.b64encode(b"data: hello").decode()
        text = (
            "---\nhttp_interactions:\n- request:\n    method: post\n    uri: https://x\n"
            "  response:\n    status:\n      code: 200\n    body:\n      encoding: ASCII-8BIT\n"
            f"      string: !binary |-\n        {packed}\nrecorded_with: VCR 6.1.0\n"
        )
        cassette = read_recording(Path("c.yml"), text)
        assert cassette.format == "ruby-vcr"
        assert cassette.interactions[0].response.body == "data: hello"  # type: ignore[union-attr]

    @pytest.mark.slow  # expands YAML aliases up to the 2 million node cap
    def test_alias_bomb_is_refused(self) -> None:
        """Exponential alias expansion stops with a named error."""
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for i in range(1, 9):
            refs = ", ".join([f"*a{i - 1}"] * 10)
            lines.append(f"a{i}: &a{i} [{refs}]")
        with pytest.raises(FixtureFormatError, match=r"bomb\.yaml"):
            read_recording(Path("bomb.yaml"), "\n".join(lines) + "\n")


class TestJsonAndErrors:
    """JSON cassettes get line numbers; broken files are named errors."""

    def test_rvcr_json_lines(self) -> None:
        """rVCR JSON interactions load and their values have lines."""
        doc = {"http_interactions": [{"request": {"method": "post", "uri": "https://x",
                                                   "headers": {"Cookie": ["a=b"]}},
                                      "response": {"status": {"code": 201},
                                                   "body": {"string": "{\"k\": 1}"}}}]}
        text = json.dumps(doc, indent=2)
        cassette = read_recording(Path("c.json"), text)
        assert cassette.format == "rvcr-json"
        (call,) = cassette.interactions
        assert call.status == 201
        assert call.response is not None
        assert call.response.body == {"k": 1}
        expected = next(i for i, line in enumerate(text.splitlines(), 1) if "a=b" in line)
        assert cassette.line_for("/http_interactions/0/request/headers/Cookie/0") == expected

    @pytest.mark.parametrize(
        ("name", "text", "problem"),
        [
            ("bad.json", '{"a": ', "not valid JSON"),
            ("bad.yaml", "a: [1, 2\nb: 3\n", "not valid YAML at line"),
        ],
    )
    def test_unparsable_file_is_named(self, name: str, text: str, problem: str) -> None:
        """The error names the file and the problem."""
        with pytest.raises(FixtureFormatError, match=problem) as info:
            read_recording(Path(name), text)
        assert info.value.path == name


class TestExactLines:
    """Findings inside folded or quoted multi-line YAML strings map to their own line."""

    def test_folded_quoted_body(self) -> None:
        """A value inside a JSON body held in a quoted multi-line scalar gets its real line."""
        text = (
            "interactions:\n"
            "- request:\n"
            "    body: '{\"batch\": [{\"event\": \"query\", \"properties\": {\"a\": 1}}],\n"
            "      \"historical_migration\": false,\n"
            "      \"api_key\": \"phc_" + "Q" * 20 + "\"}'\n"
            "    method: POST\n"
            "    uri: https://x.test/batch\n"
        )
        cassette = read_recording(Path("c.yaml"), text)
        assert cassette.line_for("/interactions/0/request/body/api_key") == 5
        assert cassette.line_for("/interactions/0/request/body/historical_migration") == 3
