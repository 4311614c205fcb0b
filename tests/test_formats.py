"""Every recording format is read by check, audit and scrub alike, at exact lines.

The files under tests/data/formats are hand-made: one leaking and one clean file
per format. Their tokens are fake (`not-a-real-token-…`) and never credentials.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from helpers import assert_one_answer, checksummed_token
from redactkey.commands._cli import main
from redactkey.recordings._readers import (
    BodyStream,
    body_streams,
    exchanges,
    read_recording,
    split_events,
)
from redactkey.scan._placeholders import PLACEHOLDER_STYLES, looks_redacted

DATA = ROOT / "tests" / "data" / "formats"

# file -> (format, [(line, rule), ...] of every error and warning)
LEAKY: dict[str, tuple[str, list[tuple[int, str]]]] = {
    "vcrpy-leaky.yaml": ("vcrpy", [(6, "sensitive-key"), (16, "identifying-header"),
                                   (18, "cookie")]),
    "aiohttp-leaky.yaml": ("vcrpy", [(7, "sensitive-key"), (17, "identifying-header")]),
    "ruby-vcr-leaky.yml": ("ruby-vcr", [(11, "sensitive-key"), (18, "identifying-header")]),
    "har-leaky.har": ("har", [(16, "bearer-token"), (34, "identifying-header"),
                              (45, "sensitive-key")]),
    "nock-leaky.json": ("nock", [(10, "sensitive-key"), (20, "identifying-header"),
                                 (25, "sensitive-key")]),
    "betamax-leaky.json": ("betamax", [(11, "sensitive-key"), (27, "cookie")]),
    "go-vcr-v1-leaky.yaml": ("go-vcr", [(9, "sensitive-key"), (18, "identifying-header")]),
    "go-vcr-v2-leaky.yaml": ("go-vcr", [(15, "sensitive-key"), (24, "identifying-header")]),
    "cassetter-leaky.yaml": ("cassetter", [(8, "sensitive-key"), (17, "cookie")]),
    "cassetter-leaky.toml": ("cassetter", [(13, "sensitive-key"), (21, "identifying-header")]),
    "dd-leaky.json": ("dd-test-agent", [(6, "sensitive-key"), (17, "identifying-header")]),
    "har-gzip-leaky.har": ("har", [(49, "github-token"), (49, "sensitive-key")]),
    # streams saved as files of their own: SSE (a key split across events 1-2, a token in
    # an `id:` line, a credential header inside an event) and NDJSON
    "stream-leaky.sse": ("sse", [(10, "openai-api-key"), (17, "github-token"),
                                 (18, "sensitive-key")]),
    "stream-leaky.ndjson": ("ndjson", [(2, "github-token"), (4, "sensitive-key")]),
}
CLEAN = {name.replace("-leaky", "-clean"): fmt for name, (fmt, _) in LEAKY.items()}


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def files(data: dict[str, object]) -> list[tuple[str, str]]:
    listed = data["files"]
    assert isinstance(listed, list)
    return [(Path(f["path"]).name, f["format"]) for f in listed]


def findings(data: dict[str, object]) -> list[tuple[int, str]]:
    listed = data["findings"]
    assert isinstance(listed, list)
    return sorted((f["line"], f["rule"]) for f in listed if f["severity"] != "note")


class TestEveryFormat:
    """A leaking and a clean file per format: the format is named, the lines exact."""

    @pytest.mark.parametrize("command", ["audit", "check"])
    @pytest.mark.parametrize("name", sorted(LEAKY))
    def test_leaky(self, name: str, command: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Every credential, cookie and identifying header at its line, in both commands."""
        fmt, expected = LEAKY[name]
        code, data = run_json(capsys, command, str(DATA / name))
        assert code == 1
        assert files(data) == [(name, fmt)]
        assert findings(data) == expected

    @pytest.mark.parametrize("name", sorted(CLEAN))
    def test_clean(self, name: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Already-redacted values are clean: exit 0 and the format still named."""
        code, data = run_json(capsys, "audit", str(DATA / name))
        assert (code, findings(data)) == (0, [])
        assert files(data) == [(name, CLEAN[name])]

    @pytest.mark.parametrize("name", ["vcrpy-leaky.yaml", "har-leaky.har", "nock-leaky.json"])
    def test_gzipped_variant(self, name: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
        """`x.yaml.gz`, `x.har.gz`, `x.json.gz`: the same findings at the same lines."""
        fmt, expected = LEAKY[name]
        target = tmp_path / (name + ".gz")
        target.write_bytes(gzip.compress((DATA / name).read_bytes(), mtime=0))
        code, data = run_json(capsys, "audit", str(target))
        assert code == 1
        assert files(data) == [(target.name, fmt)]
        assert findings(data) == expected

    @pytest.mark.parametrize("name", sorted(LEAKY))
    def test_scrub_leaves_nothing_the_audit_reports(self, name: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
        """After `scrub --write` the audit reports no error or warning (TOML recordings
        are edited in place too)."""
        target = tmp_path / name
        shutil.copy(DATA / name, target)
        code = main(["scrub", "--write", str(target)])
        capsys.readouterr()
        assert code == 0
        code, data = run_json(capsys, "audit", str(target))
        assert (code, findings(data)) == (0, [])


class TestOneAnswer:
    """check, audit and scrub over every hand-made file, streams saved as files and
    streams sent as request bodies included."""

    def test_three_commands_agree(self) -> None:
        """The same files, formats and skipped; the same rule at the same line."""
        from redactkey.commands._audit import audit_paths
        from redactkey.commands._check import check_paths
        from redactkey.commands._cli import _setup
        from redactkey.commands._scrub import plan_paths

        roots = [str(DATA)]
        _config, checker = _setup(None, (), normalise=False)
        _config, auditing = _setup(None, ())
        reports = {
            "check": check_paths(roots, checker),
            "audit": audit_paths(roots, auditing),
            "scrub": plan_paths(roots, auditing, write=False, echo=lambda _line: None),
        }
        assert_one_answer(reports)
        read = dict(reports["audit"].read_files)
        assert {Path(path).name: fmt for path, fmt in read.items()
                if Path(path).name.startswith("stream-")} == {
            "stream-clean.ndjson": "ndjson", "stream-clean.sse": "sse",
            "stream-leaky.ndjson": "ndjson", "stream-leaky.sse": "sse"}
        scrubbed = {(Path(i.path).name, i.line, i.rule) for i in reports["scrub"].issues}
        assert {f for f in scrubbed if "request" in f[0] or f[0].startswith("stream-")} == {
            ("ndjson-request-leaky.yaml", 5, "openai-api-key"),
            ("ndjson-request-leaky.yaml", 7, "sensitive-key"),
            ("sse-request-leaky.har", 21, "github-token"),
            ("sse-request-leaky.har", 21, "sensitive-key"),
            ("stream-leaky.ndjson", 2, "github-token"),
            ("stream-leaky.ndjson", 4, "sensitive-key"),
            ("stream-leaky.sse", 10, "openai-api-key"),
            ("stream-leaky.sse", 17, "github-token"),
            ("stream-leaky.sse", 18, "sensitive-key"),
        }


class TestReadersAPI:
    """`read_recording` and `exchanges`: the format-neutral view of a recording."""

    def test_nock_hex_gzip_body_is_decoded(self) -> None:
        """nock's hex-encoded gzip response array reads as the JSON it holds."""
        path = DATA / "nock-leaky.json"
        recording = read_recording(path, path.read_text(encoding="utf-8"))
        (call,) = list(exchanges(recording))
        assert call.method == "POST"
        assert call.url == "https://api.openai.com:443/v1/chat/completions"
        assert isinstance(call.response_body, dict)
        assert call.response_body["id"] == "chatcmpl-2"
        assert call.response_headers["openai-organization"] == ["org-handmade0000000000000"]

    def test_har_base64_body_is_decoded(self) -> None:
        """HAR `content.text` with `encoding: base64` reads as its text."""
        path = DATA / "har-clean.har"
        (call,) = list(exchanges(read_recording(path, path.read_text(encoding="utf-8"))))
        assert call.status == 200
        assert call.response_body == {"data": [{"url": "https://example.com/img.png"}]}

    def test_request_sent_as_a_stream(self) -> None:
        """A request body sent as NDJSON splits into its events like a response's."""
        path = DATA / "ndjson-request-clean.yaml"
        (call,) = list(exchanges(read_recording(path, path.read_text(encoding="utf-8"))))
        assert len(call.request_events) == 4
        assert call.request_events[3] == {"title": "more", "text": "rotated today",
                                          "password": "[REDACTED]"}
        assert call.events == []  # the answer is one JSON document

    def test_sse_and_ndjson_events(self) -> None:
        """A streamed body splits into its events."""
        sse = 'data: {"a": 1}\n\ndata: {"a": 2}\n\ndata: [DONE]\n\n'
        assert split_events(sse, "text/event-stream") == [{"a": 1}, {"a": 2}, "[DONE]"]
        assert split_events('{"b": 1}\n{"b": 2}\n', "application/x-ndjson") == [
            {"b": 1}, {"b": 2}]
        assert split_events("plain", "text/plain") == []

    def test_write_stream_keeps_every_other_byte(self) -> None:
        """Only the strings that changed are written again: spacing, key order and
        `\\u` escapes stay; a change that is not a string's (a number under a credential
        name) writes that event whole, compactly; the framing is rewritten by `framing`."""
        from redactkey.recordings._readers import read_stream, write_stream

        body = ('id: a\ndata: { "k" :  "caf\\u00e9 x" , "n": 1 }\n\n'
                'data: {"pin": 12345678, "m": "y"}\n\n')
        stream = read_stream(body, "text/event-stream")
        assert stream is not None
        values = [{"k": "caf\u00e9 [R]", "n": 1}, {"pin": "[R]", "m": "y"}]
        renamed = write_stream(stream, values,
                               framing=lambda text: text.replace("id: a", "id: b"))
        assert renamed == (
            'id: b\ndata: { "k" :  "caf\\u00e9 [R]" , "n": 1 }\n\n'
            'data: {"pin":"[R]","m":"y"}\n\n')
        assert write_stream(stream, [e.value for e in stream.events]) is body


class TestWalk:
    """What the walk reads, what it skips and why, the same for every command."""

    def test_skipped_files_and_unreadable(self, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """Licence texts and binaries are skipped; a binary `.json` or a corrupt `.gz` is
        an `unreadable-file` warning, an error with `--strict`."""
        shutil.copy(DATA / "vcrpy-clean.yaml", tmp_path / "ok.yaml")
        (tmp_path / "LICENSE").write_text("MIT\n", encoding="utf-8")
        (tmp_path / "logo.png").write_bytes(b"\x89PNG\0\0\0binary")
        (tmp_path / "broken.json").write_bytes(b"\0\0\0binary")
        (tmp_path / "cut.yaml.gz").write_bytes(gzip.compress(b"interactions: []\n")[:12])
        for command in ("audit", "check"):
            code, data = run_json(capsys, command, str(tmp_path))
            assert code == 1
            assert files(data) == [("ok.yaml", "vcrpy")]
            reasons = {Path(s["path"]).name: s["reason"] for s in data["skipped"]}  # type: ignore[attr-defined]
            assert reasons["LICENSE"] == "licence text"
            assert reasons["logo.png"] == "binary"
            assert set(reasons) == {"LICENSE", "logo.png", "broken.json", "cut.yaml.gz"}
            unreadable = {(Path(f["path"]).name, f["severity"]) for f in data["findings"]  # type: ignore[attr-defined]
                          if f["rule"] == "unreadable-file"}
            assert unreadable == {("broken.json", "warning"), ("cut.yaml.gz", "warning")}
        code, data = run_json(capsys, "audit", "--strict", str(tmp_path))
        assert {f["severity"] for f in data["findings"]  # type: ignore[attr-defined]
                if f["rule"] == "unreadable-file"} == {"error"}

    def test_empty_directory_is_a_usage_error(self, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
        """An empty directory is exit 2 in every command, never "clean"."""
        for command in ("audit", "check", "scrub"):
            assert main([command, str(tmp_path)]) == 2
            assert "holds no files" in capsys.readouterr().out

    def test_text_report_ends_with_counts(self, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
        """The text report's last line counts the files read and skipped, with reasons."""
        shutil.copy(DATA / "har-clean.har", tmp_path / "recording.har")
        (tmp_path / "LICENSE.txt").write_text("MIT\n", encoding="utf-8")
        assert main(["audit", "--no-color", str(tmp_path)]) == 0
        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert last == ("audit: 1 file read (1 HAR file), 1 skipped (1 licence text); "
                        "0 errors, 0 warnings, 1 note in 1 file -> clean (exit 0)")


class TestPlaceholders:
    """Values already redacted are clean; a real-looking value beside a placeholder is not."""

    @pytest.mark.parametrize("style", PLACEHOLDER_STYLES, ids=lambda s: s.name)
    def test_each_style(self, style: object) -> None:
        """Every style met in real recordings counts as redacted."""
        assert looks_redacted(style.example)  # type: ignore[attr-defined]

    @pytest.mark.parametrize("value", [
        "AWS4-HMAC-SHA256 Credential=AKIA" + "Z7Q2" * 4 + "/20240101/us-east-1/bedrock/"
        "aws4_request, SignedHeaders=host, Signature=<AWS_SIGV4_SIGNATURE>",
        "AWS4-HMAC-SHA256 Credential=<AWS_ACCESS_KEY_ID>/20240101/us-east-1/bedrock/"
        "aws4_request, SignedHeaders=host, Signature=" + "0a1b2c3d" * 8,
        "Bearer not-a-real-token-0123456789abcdef",
    ])
    def test_not_placeholders(self, value: str) -> None:
        """A credential part that is not a placeholder keeps the value a finding."""
        assert not looks_redacted(value)


class TestJobs:
    """`--jobs N` gives the same report, in the same order, as one process."""

    def test_same_report(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """70 files (enough for worker processes): byte-identical JSON for -j 1 and -j 2,
        in audit, check and scrub (a dry run, whose JSON lists what it would scrub)."""
        for index in range(70):
            name = sorted(LEAKY)[index % len(LEAKY)]
            shutil.copy(DATA / name, tmp_path / f"{index:02d}-{name}")
        for command in ("audit", "check", "scrub"):
            outputs = []
            for jobs in ("1", "2"):
                code = main([command, "-j", jobs, "--format", "json", str(tmp_path)])
                assert code == 1
                outputs.append(capsys.readouterr().out)
            assert outputs[0] == outputs[1]
            assert len(json.loads(outputs[0])["files"]) == 70


    def test_forked_and_spawned_workers_agree(self, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
        """A fresh `redact audit -j 2` process (one thread: its workers are forked) and
        spawned workers (each building its checker) give the report of `-j 1`."""
        import subprocess
        import sys

        from redactkey.commands import _parallel

        for index in range(70):
            name = sorted(LEAKY)[index % len(LEAKY)]
            shutil.copy(DATA / name, tmp_path / f"{index:02d}-{name}")
        assert main(["audit", "-j", "1", "--format", "json", str(tmp_path)]) == 1
        serial = capsys.readouterr().out
        forked = subprocess.run(
            [sys.executable, "-c", "import sys; from redactkey.commands._cli import main; "
             "from redactkey.commands._parallel import start_method; "
             "assert start_method() == 'fork'; sys.exit(main(sys.argv[1:]))",
             "audit", "-j", "2", "--format", "json", str(tmp_path)],
            capture_output=True, text=True, check=False)
        assert (forked.returncode, forked.stdout) == (1, serial)
        monkeypatch.setattr(_parallel, "start_method", lambda: "spawn")
        assert main(["audit", "-j", "2", "--format", "json", str(tmp_path)]) == 1
        assert capsys.readouterr().out == serial


class TestVocabulary:
    """One meaning per header name, in every command and format."""

    @pytest.mark.parametrize(("name", "meaning"), [
        ("openai-organization", "identifying-header"),
        ("OpenAI-Project", "identifying-header"),
        ("anthropic-organization-id", "identifying-header"),
        ("anthropic-workspace-id", "identifying-header"),
        ("x-goog-user-project", "identifying-header"),
        ("x-ms-client-request-id", "identifying-header"),
        ("set-cookie", "cookie"),
        ("x-request-id", "request-id"),
        ("content-type", None),
    ])
    def test_header_class(self, name: str, meaning: str | None) -> None:
        """The header's meaning, whatever its case."""
        from redactkey.scan._vocabulary import header_class

        assert header_class(name) == meaning


# streamed bodies -> [(line, rule, pointer, detail)] of every finding, and the events
# scrub rewrites
STREAMED: dict[str, tuple[str, list[tuple[int, str, str, str]], list[int]]] = {
    "sse-leaky.yaml": ("vcrpy", [
        (14, "openai-api-key", "/interactions/0/response/body/string/1/choices/0/delta/content",
         "sse events 1-2 (split across them)"),
        (18, "github-token", "/interactions/0/response/body/string/3/choices/0/delta/content",
         "sse event 3"),
    ], [1, 2, 3]),
    "ndjson-leaky.har": ("har", [
        (36, "github-token", "/log/entries/0/response/content/text/1/message/content",
         "ndjson events 1-2 (split across them)"),
        (36, "openai-api-key", "/log/entries/0/response/content/text/3/message/content",
         "ndjson event 3"),
    ], [1, 2, 3]),
    "eventstream-leaky.yaml": ("vcrpy", [
        (14, "openai-api-key", "/interactions/0/response/body/string/1/delta/text",
         "eventstream events 1-2 (split across them)"),
    ], [1, 2]),
    # streams sent as a request body: an NDJSON bulk upload, an SSE body posted to an API
    "ndjson-request-leaky.yaml": ("vcrpy", [
        (5, "openai-api-key", "/interactions/0/request/body/1/text", "ndjson event 1"),
        (7, "sensitive-key", "/interactions/0/request/body/3/password", "ndjson event 3"),
    ], [1, 3]),
    "sse-request-leaky.har": ("har", [
        (21, "github-token", "/log/entries/0/request/postData/text/1/line",
         "sse events 1-2 (split across them)"),
        (21, "sensitive-key", "/log/entries/0/request/postData/text/3/api_key", "sse event 3"),
    ], [1, 2, 3]),
}


class TestStreamedBodies:
    """SSE, NDJSON and AWS event-stream bodies, of responses and of requests (a stream sent
    as a request body), are read event by event in every command."""

    @pytest.mark.parametrize("command", ["audit", "check"])
    @pytest.mark.parametrize("name", sorted(STREAMED))
    def test_leaky(self, name: str, command: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Each finding names its event (pointer: body, event index, place in the event) at
        the event's line; a key split across two deltas is one finding on the joined text."""
        fmt, expected, _changed = STREAMED[name]
        code, data = run_json(capsys, command, str(DATA / name))
        assert code == 1
        assert files(data) == [(name, fmt)]
        listed = data["findings"]
        assert isinstance(listed, list)
        assert sorted((f["line"], f["rule"], f["pointer"], f["detail"]) for f in listed) == \
            expected

    @pytest.mark.parametrize("name", sorted(STREAMED))
    def test_clean(self, name: str, capsys: pytest.CaptureFixture[str]) -> None:
        """The same streams with placeholders (split across events too) are clean."""
        clean = name.replace("-leaky", "-clean")
        for command in ("audit", "check"):
            code, data = run_json(capsys, command, str(DATA / clean))
            assert (code, findings(data)) == (0, [])

    @pytest.mark.parametrize("name", sorted(STREAMED))
    def test_scrub_keeps_the_framing(self, name: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
        """`scrub --write` rewrites the events that held a secret and nothing else: the
        stream still splits into the same number of events (event-stream frames decode,
        lengths and CRCs right), the untouched events are equal, the audit is clean."""
        target = tmp_path / name
        shutil.copy(DATA / name, target)
        before = _streams(target)
        assert before
        assert main(["scrub", "--write", str(target)]) == 0
        after = _streams(target)
        capsys.readouterr()
        assert [s.kind for s in after] == [s.kind for s in before]
        assert [s.pointer for s in after] == [s.pointer for s in before]
        for old, new in zip(before, after, strict=True):
            assert len(new.events) == len(old.events)
            changed = [e.index for e, n in zip(old.events, new.events, strict=True)
                       if e.value != n.value]
            assert changed == STREAMED[name][2]
            if old.kind == "eventstream":
                assert [e.headers for e in new.events] == [e.headers for e in old.events]
        code, data = run_json(capsys, "audit", str(target))
        assert (code, findings(data)) == (0, [])


class TestStreamFiles:
    """A stream saved as a file of its own (`.sse`, `.ndjson`, `.jsonl`) is read event by
    event too: no `unreadable-file` for NDJSON, a key split across lines found once."""

    def test_split_keys_in_stream_files(self, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
        """Each file's split key at the line of the event where it starts."""
        token = checksummed_token("gh" + "p_", "HandMadeTestValue0123456789" + "abc")
        lines = [{"message": {"content": "hello"}},
                 {"message": {"content": "the token is " + token[:14]}},
                 {"message": {"content": token[14:] + " ok"}}]
        ndjson = "".join(json.dumps(line) + "\n" for line in lines)
        (tmp_path / "chat.ndjson").write_text(ndjson, encoding="utf-8")
        (tmp_path / "log.jsonl").write_text(ndjson, encoding="utf-8")
        (tmp_path / "answer.sse").write_text(
            "event: delta\n" + "".join(f"data: {json.dumps(line)}\n\n" for line in lines)
            + "data: [DONE]\n\n", encoding="utf-8")
        for command in ("check", "audit"):
            code, data = run_json(capsys, command, str(tmp_path))
            assert code == 1
            listed = data["findings"]
            assert isinstance(listed, list)
            assert sorted((Path(f["path"]).name, f["line"], f["rule"], f["pointer"],
                           f["detail"]) for f in listed) == [
                ("answer.sse", 4, "github-token", "/1/message/content",
                 "sse events 1-2 (split across them)"),
                ("chat.ndjson", 2, "github-token", "/1/message/content",
                 "ndjson events 1-2 (split across them)"),
                ("log.jsonl", 2, "github-token", "/1/message/content",
                 "ndjson events 1-2 (split across them)"),
            ]


# the lines `scrub --write` changes in each stream file, as they read afterwards
STREAM_FILE_SCRUBBED = {
    "stream-leaky.sse": {
        10: 'data: {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": '
            '{"content": "Use [REDACTED]"}}]}',
        14: 'data: {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": ""}}]}',
        17: "id: [REDACTED]",
        18: 'data: {"type": "tool_call", "headers": {"Authorization": "[REDACTED]"}}',
    },
    "stream-leaky.ndjson": {
        2: '{"model": "llama3", "message": {"role": "assistant", "content": '
           '"the token is [REDACTED]"}, "done": false}',
        3: '{"model": "llama3", "message": {"role": "assistant", "content": " ok"}, '
           '"done": false}',
        4: '{"model": "llama3", "message": {"role": "tool", "content": "called"}, '
           '"headers": {"x-api-key": "[REDACTED]"}, "done": false}',
    },
}


class TestScrubStreamFiles:
    """`scrub --write` rewrites a stream file event by event: every byte but the redacted
    values stays (SSE `event:`/`id:`/`data:` lines, blank lines, one JSON per NDJSON line
    with its own spacing), and the audit is clean afterwards."""

    @pytest.mark.parametrize("name", sorted(STREAM_FILE_SCRUBBED))
    def test_only_the_values_change(self, name: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
        """The dry run lists the audit's findings and exits 1; `--write` changes exactly
        the lines that held them, and only their values."""
        target = tmp_path / name
        shutil.copy(DATA / name, target)
        code, data = run_json(capsys, "scrub", str(target))
        assert code == 1
        assert files(data) == [(name, LEAKY[name][0])]
        assert findings(data) == LEAKY[name][1]
        assert target.read_bytes() == (DATA / name).read_bytes()  # a dry run writes nothing
        assert main(["scrub", "--write", str(target)]) == 0
        before = (DATA / name).read_text(encoding="utf-8").splitlines(keepends=True)
        after = target.read_text(encoding="utf-8").splitlines(keepends=True)
        assert len(after) == len(before)
        changed = {n: line.rstrip("\n") for n, (old, line)
                   in enumerate(zip(before, after, strict=True), 1) if old != line}
        assert changed == STREAM_FILE_SCRUBBED[name]
        capsys.readouterr()
        code, data = run_json(capsys, "audit", str(target))
        assert (code, findings(data)) == (0, [])

    @pytest.mark.parametrize("name", sorted(STREAM_FILE_SCRUBBED))
    def test_clean_file_is_left_alone(self, name: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
        """A stream file of placeholders (a key split across events too): nothing to do."""
        clean = name.replace("-leaky", "-clean")
        target = tmp_path / clean
        shutil.copy(DATA / clean, target)
        assert main(["scrub", "--write", str(target)]) == 0
        assert target.read_bytes() == (DATA / clean).read_bytes()
        assert "scrubbed" not in capsys.readouterr().out

    def test_crlf_gzip_and_bom_are_kept(self, tmp_path: Path) -> None:
        """A gzip'd SSE file with CRLF lines and a UTF-8 byte-order mark stays all three."""
        text = (DATA / "stream-leaky.sse").read_text(encoding="utf-8")
        target = tmp_path / "answer.sse.gz"
        target.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
                                         mtime=0))
        assert main(["scrub", "--write", str(target)]) == 0
        lines = text.splitlines()
        for number, line in STREAM_FILE_SCRUBBED["stream-leaky.sse"].items():
            lines[number - 1] = line
        expected = "".join(line + "\r\n" for line in lines)
        assert gzip.decompress(target.read_bytes()) == b"\xef\xbb\xbf" + expected.encode()


def _streams(path: Path) -> list[BodyStream]:
    recording = read_recording(path, path.read_text(encoding="utf-8"))
    return list(body_streams(recording))


class TestScrubEncodings:
    """scrub writes a body back the way it was stored: TOML edited in place, base64 kept."""

    def test_toml_keeps_its_layout(self, tmp_path: Path) -> None:
        """Only the values with findings change; every other line is byte-identical."""
        target = tmp_path / "cassetter-leaky.toml"
        shutil.copy(DATA / target.name, target)
        assert main(["scrub", "--write", str(target)]) == 0
        before = (DATA / target.name).read_text(encoding="utf-8").splitlines()
        after = target.read_text(encoding="utf-8").splitlines()
        assert len(after) == len(before)
        changed = [(n, line) for n, (old, line) in enumerate(zip(before, after, strict=True), 1)
                   if old != line]
        assert changed == [(13, 'authorization = ["[REDACTED]"]'),
                           (21, 'openai-organization = ["[REDACTED]"]')]

    def test_nock_hex_gzip_body(self, tmp_path: Path) -> None:
        """nock's hex-encoded gzip response is decoded, redacted and written back as hex
        gzip, its `content-encoding` header kept (so nock still replays it)."""
        target = tmp_path / "nock-leaky.json"
        shutil.copy(DATA / target.name, target)
        assert main(["scrub", "--write", str(target)]) == 0
        (call,) = json.loads(target.read_text(encoding="utf-8"))
        assert call["rawHeaders"][:2] == ["content-encoding", "gzip"]
        body = json.loads(gzip.decompress(bytes.fromhex("".join(call["response"]))))
        assert body == {"id": "chatcmpl-2", "api_key": "[REDACTED]"}

    def test_har_base64_gzip_body(self, tmp_path: Path) -> None:
        """A HAR `content.text` of base64 gzip'd JSON is decoded, redacted, gzip'd and
        base64'd again; the other members of the body are untouched."""
        import base64

        target = tmp_path / "har-gzip-leaky.har"
        shutil.copy(DATA / target.name, target)
        assert main(["scrub", "--write", str(target)]) == 0
        content = json.loads(target.read_text(encoding="utf-8"))["log"]["entries"][0][
            "response"]["content"]
        assert content["encoding"] == "base64"
        body = json.loads(gzip.decompress(base64.b64decode(content["text"])))
        assert body == {"data": [{"url": "https://example.com/img.png"}],
                        "debug": {"api_key": "[REDACTED]", "echo": "[REDACTED]"}}


class TestNames:
    """A format is named for what marks it, not for the first format of its shape."""

    def test_plain_request_response_json_is_an_http_exchange(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """corpus/benign's `{request, response}` files carry no dd test-agent marker;
        dd-trace's shape (`status: {code, message}`, string bodies) keeps its name."""
        benign = ROOT / "corpus" / "benign" / "openai_chat_completion.json"
        _, data = run_json(capsys, "audit", str(benign), str(DATA / "dd-clean.json"))
        assert sorted(files(data)) == [("dd-clean.json", "dd-test-agent"),
                                       ("openai_chat_completion.json", "http-exchange")]
        (call,) = list(exchanges(read_recording(benign, benign.read_text(encoding="utf-8"))))
        assert (call.method, call.status) == ("POST", 200)
        assert isinstance(call.request_body, dict)
        assert "messages" in call.request_body


class TestProgressBar:
    """A terminal gets a progress bar for a tree of a few hundred files; a pipe does not."""

    def test_bar_on_a_forced_terminal(self, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
        """250 files with `--color` (a terminal forced): the bar is drawn on stderr and
        counts every file; without it (stderr is not a terminal here) nothing is drawn."""
        for index in range(250):
            (tmp_path / f"{index:03d}.txt").write_text("nothing to see\n", encoding="utf-8")
        assert main(["check", "-j", "1", "--color", str(tmp_path)]) == 0
        err = capsys.readouterr().err
        assert "scanning" in err
        assert "250/250" in err
        assert main(["check", "-j", "1", str(tmp_path)]) == 0
        assert "scanning" not in capsys.readouterr().err
