"""The HTTP request/response documents and the server-sent-event parser
(`redactkey.http._documents`)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai._streaming import SSEDecoder

from redactkey import Fixture
from redactkey.fixtures._format import parse_fixture, parse_replayed
from redactkey.http._documents import (
    RESPONSE_HEADERS,
    SSEParser,
    body_bytes,
    body_document,
    chunk_bytes,
    event_bytes,
    event_lines_bytes,
    is_environment_failure,
    request_document,
    response_document,
    stream_bytes,
    wants_stream,
)

# Control-free text, so an event survives a round trip unchanged.
_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028"),
    max_size=20,
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "event": _TEXT.filter(lambda s: s and "\n" not in s and "\r" not in s),
        "id": _TEXT.filter(lambda s: "\n" not in s and "\r" not in s and "\0" not in s),
        "retry": st.integers(0, 10_000),
    },
).flatmap(
    lambda head: st.one_of(
        st.just(head) if head else st.nothing(),
        st.dictionaries(_TEXT, _JSON, min_size=1, max_size=3).map(lambda v: {**head, "json": v}),
        _TEXT.filter(lambda s: s[:1] not in ("{", "[")).map(
            lambda s: {**head, "data": s.replace("\r", "")}
        ),
    )
)


def iter_events(chunks: list[bytes]) -> list[dict[str, Any]]:
    """Server-sent events from a byte stream cut anywhere."""
    parser = SSEParser()
    return [event for chunk in chunks for event in parser.feed(chunk)] + parser.finish()


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for point in [*points, len(data)]:
        pieces.append(data[start:point])
        start = point
    return pieces


class TestSSEParser:
    """Parsing server-sent events from a byte stream."""

    def test_openai_style_stream(self) -> None:
        """data-only events with JSON and the [DONE] sentinel."""
        raw = b'data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n'
        expected = [{"json": {"a": 1}}, {"json": {"a": 2}}, {"data": "[DONE]"}]
        assert list(iter_events([raw])) == expected

    def test_named_events_and_comments(self) -> None:
        """event names are kept, comments dropped, CRLF accepted."""
        raw = b": keep-alive\r\nevent: ping\r\ndata: {}\r\n\r\nevent: done\r\n\r\n"
        assert list(iter_events([raw])) == [{"event": "ping", "json": {}}, {"event": "done"}]

    @pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
    def test_chunks_cutting_lines(self, size: int) -> None:
        """Byte chunks that cut lines, fields and multi-byte characters parse the same."""
        raw = 'event: delta\r\ndata: {"text":"héllo wörld ✓"}\r\n\r\ndata: x\ndata: y\n\n'.encode()
        chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
        assert list(iter_events(chunks)) == [
            {"event": "delta", "json": {"text": "héllo wörld ✓"}},
            {"data": "x\ny"},
        ]

    def test_cr_at_chunk_end_waits_for_lf(self) -> None:
        """A chunk ending in CR does not end an event when LF starts the next chunk."""
        parser = SSEParser()
        assert parser.feed(b"data: a\r") == []
        assert parser.feed(b"\n\r") == []
        assert parser.feed(b"\n") == [{"data": "a"}]

    def test_unterminated_event_is_dropped(self) -> None:
        """An event without its blank line at the end of the stream is not dispatched."""
        assert list(iter_events([b"data: a\n\ndata: b\n"])) == [{"data": "a"}]

    def test_non_canonical_json_stays_text(self) -> None:
        """Data JSON cannot hold canonically (NaN) is kept as text, not lost."""
        assert list(iter_events([b"data: [NaN]\n\n"])) == [{"data": "[NaN]"}]

    # Nested JSON events are slow to draw on a loaded machine; the test itself is cheap.
    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(events=st.lists(_EVENT, max_size=6), cuts=st.lists(st.integers(0, 10_000), max_size=8))
    def test_round_trip_any_cut(self, events: list[dict[str, Any]], cuts: list[int]) -> None:
        """event_bytes then parsing, with the bytes cut anywhere, gives the events back."""
        raw = b"".join(event_bytes(e) for e in events)
        assert list(iter_events(_cut(raw, cuts))) == events

    @given(events=st.lists(_EVENT.filter(lambda e: "json" in e or "data" in e), max_size=6))
    def test_sdk_decoder_reads_replayed_bytes(self, events: list[dict[str, Any]]) -> None:
        """The openai SDK's SSE decoder sees the same events in the replayed bytes."""
        raw = b"".join(event_bytes(e) for e in events)
        pieces = [raw[i : i + 3] for i in range(0, len(raw), 3)]
        decoded = list(SSEDecoder().iter_bytes(iter(pieces)))
        assert len(decoded) == len(events)
        for sse, event in zip(decoded, events, strict=True):
            assert sse.event == event.get("event")
            if "json" in event:
                assert json.loads(sse.data) == event["json"]
            else:
                assert sse.data == event.get("data", "")


class TestBodyDocument:
    """The body field shared by request and response documents."""

    @pytest.mark.parametrize(
        ("content_type", "body", "expected"),
        [
            ("application/json", b'{"b": [1, 2]}', {"json": {"b": [1, 2]}}),
            ("application/problem+json; charset=utf-8", b"[1]", {"json": [1]}),
            ("application/json", b"{broken", {"text": "{broken"}),
            ("application/json", b"[1e999]", {"text": "[1e999]"}),
            ("application/json", b"[NaN]", {"text": "[NaN]"}),
            ("application/json", b"[9007199254740993]", {"text": "[9007199254740993]"}),
            ("application/json", b"[123456789012345678901234567890]",
             {"text": "[123456789012345678901234567890]"}),
            ("application/json", b"[-9223372036854775809]", {"text": "[-9223372036854775809]"}),
            ("application/json", b'["\\ud800"]', {"text": '["\\ud800"]'}),
            ("application/json", b"[9007199254740991, 1.5e300]",
             {"json": [9007199254740991, 1.5e300]}),
            ("text/plain", b"h\xc3\xa9", {"text": "hé"}),
            (None, b"\xff\x00", {"base64": base64.b64encode(b"\xff\x00").decode()}),
            ("application/json", b"", {}),
        ],
        ids=["json", "plus-json", "broken-json", "infinite", "nan", "beyond-2**53",
             "beyond-2**64", "below-int64", "lone-surrogate", "largest-exact", "text", "binary",
             "empty"],
    )
    def test_vectors(self, content_type: str | None, body: bytes, expected: dict[str, Any]) -> None:
        """Each kind of body lands in its own field."""
        assert body_document(content_type, body) == expected

    @pytest.mark.parametrize("body", [b"", b"plain", b"\x00\xff\xfe", "ünï".encode()])
    def test_bytes_round_trip(self, body: bytes) -> None:
        """body_bytes inverts body_document for non-JSON bodies."""
        assert body_bytes(body_document("application/octet-stream", body)) == body


class TestRequestDocument:
    """The request document keyed for kind "http"."""

    def test_shape(self) -> None:
        """Method upper-cased, header names lower-cased, JSON body parsed."""
        document = request_document(
            "post",
            "https://api.example.test/v1/x?a=1",
            [("Content-Type", "application/json"), ("X-Two", "a"), ("x-two", "b")],
            b'{"model": "m"}',
        )
        assert document == {
            "method": "POST",
            "url": "https://api.example.test/v1/x?a=1",
            "headers": {"content-type": "application/json", "x-two": "a, b"},
            "json": {"model": "m"},
        }

    @pytest.mark.parametrize(("pairs", "expected"), [
        ([("content-type", "a"), ("x-k", "b")], {"content-type": "a", "x-k": "b"}),
        ([("Content-Type", "a"), ("x-k", "b")], {"content-type": "a", "x-k": "b"}),
        ([("x-two", "a"), ("x-two", "b")], {"x-two": "a, b"}),
        ([("x-two", "a"), ("X-Two", "b"), ("x-k", "c")], {"x-two": "a, b", "x-k": "c"}),
        ([("x-\u0130", "a")], {"x-i\u0307": "a"}),  # lower() of a non-ASCII name
        ([], {}),
    ])
    def test_header_names_are_lowered_and_repeats_joined(
        self, pairs: list[tuple[str, str]], expected: dict[str, str]
    ) -> None:
        """Lower-case names pass as they are; any other name is lowered and a name sent
        twice, in any case, holds its values joined in the order sent."""
        document = request_document("GET", "http://h/u", pairs, b"")
        assert document["headers"] == expected
        assert list(document["headers"]) == list(expected)

    def test_multipart_boundary_is_stable(self) -> None:
        """Two uploads differing only in their random boundary give the same document."""

        def upload(boundary: str) -> dict[str, Any]:
            part = "content-disposition: form-data; name=f\r\n\r\nv"
            body = f"--{boundary}\r\n{part}\r\n--{boundary}--"
            headers = [("content-type", f"multipart/form-data; boundary={boundary}")]
            return request_document("POST", "http://h/u", headers, body.encode())

        assert upload("a1b2c3d4e5") == upload("ffeeddccbb")
        assert "a1b2c3d4e5" not in json.dumps(upload("a1b2c3d4e5"))

    def test_headers_as_a_map_or_as_pairs_give_one_document(self) -> None:
        """`request_document` takes a map of names as it takes pairs: names lower-cased,
        and a map with upper-case names is lower-cased like pairs."""
        pairs = [("Content-Type", "application/json"), ("X-Api-Key", "k")]
        by_pairs = request_document("POST", "http://h/u", pairs, b"{}")
        assert request_document("POST", "http://h/u", dict(pairs), b"{}") == by_pairs
        lower = {"content-type": "application/json", "x-api-key": "k"}
        assert request_document("POST", "http://h/u", lower, b"{}") == by_pairs
        assert by_pairs["headers"] == lower

    def test_a_map_of_headers_is_not_the_document_s(self) -> None:
        """The document holds its own map: a multipart boundary made stable there leaves
        the caller's map as it was."""
        headers = {"content-type": "multipart/form-data; boundary=a1b2c3"}
        document = request_document("POST", "http://h/u", headers, b"--a1b2c3--")
        assert headers == {"content-type": "multipart/form-data; boundary=a1b2c3"}
        assert document["headers"] is not headers
        assert "a1b2c3" not in document["headers"]["content-type"]


class TestWantsStream:
    """Whether a request asks for a streamed answer, read again and again alike."""

    @pytest.mark.parametrize(("document", "streams"), [
        ({"headers": {"accept": "text/event-stream"}}, True),
        ({"headers": {"accept": "application/json, text/event-stream;q=0.9"}}, True),
        ({"headers": {"accept": "application/x-ndjson"}}, True),
        ({"headers": {"accept": "application/json"}}, False),
        ({"headers": {"accept": "*/*"}}, False),
        ({"headers": {}}, False),
        ({}, False),
        ({"json": {"stream": True}, "headers": {"accept": "application/json"}}, True),
        ({"json": {"stream": False}}, False),
        ({"url": "https://g.example/v1:stream?alt=sse", "headers": {"accept": "*/*"}}, True),
    ])
    def test_the_request_says(self, document: dict[str, Any], streams: bool) -> None:
        assert [wants_stream({"url": "https://h.example/", **document})
                for _ in range(3)] == [streams] * 3


class TestStreamBytes:
    """A replayed stream's body is what its events give one by one."""

    @pytest.mark.parametrize("events", [
        [{"json": {"n": 1}}, {"json": [1, "two"]}, {"data": "[DONE]"}],
        [{"event": "ping", "id": "7", "json": {"a": 1}}, {"retry": 10, "data": "x\ny"}],
        [{"json": {"big": 2**70}}, {"json": {"n": 1}}],
        [{"data": "only text"}],
        [],
    ], ids=["json-and-done", "fields", "beyond-64-bits", "text", "none"])
    def test_the_body_joins_each_event(self, events: list[dict[str, Any]]) -> None:
        expected = b"".join(chunk_bytes("text/event-stream", event) for event in events)
        assert stream_bytes("text/event-stream", iter(events)) == expected
        assert stream_bytes("text/event-stream; charset=utf-8", events) == expected


_KEY = "0123456789abcdef" * 4


def _lines_after_the_head(events: list[dict[str, Any]]) -> tuple[bytes, bytes]:
    """The lines a fixture file holds `events` in, after its head's line, and the body
    those events give as replay parses them from the file (members sorted)."""
    head = {"headers": {"content-type": "text/event-stream"}, "status": 200}
    data = Fixture.model_validate({
        "version": 1, "key": _KEY, "kind": "http", "request": None,
        "chunks": [head, *events]}).dumps()
    chunks = iter(parse_replayed("f.json", data, kind="http", key=_KEY).chunks)
    assert next(chunks) == head
    lines = chunks.unread()
    assert lines is not None
    return lines, stream_bytes("text/event-stream", parse_fixture("f.json", data).chunks[1:])


class TestEventLines:
    """Stored events sent from the lines of their file, unparsed, are the bytes they give
    parsed; any event they cannot be sent so from is parsed."""

    @pytest.mark.parametrize("events", [
        [{"json": {"n": 1}}, {"json": [1, "two"]}, {"data": "[DONE]"}],
        [{"json": {"t": "a \"quoted\" },\n    {\"json\": text"}}, {"json": {"n": 2}}],
        [{"json": {"s": "Grüße \u2028 ✓"}}],
        [{"data": "[DONE]"}],
        [],
    ], ids=["json-and-done", "look-alike-text", "non-ascii", "done-only", "none"])
    def test_the_lines_are_the_events_bytes(self, events: list[dict[str, Any]]) -> None:
        lines, parsed = _lines_after_the_head(events)
        assert event_lines_bytes(lines) == parsed == stream_bytes("text/event-stream", events)

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.dictionaries(_TEXT, _TEXT | st.integers(-2**63, 2**63 - 1)
                                    | st.booleans() | st.none(), max_size=4), max_size=6))
    def test_any_json_events(self, objects: list[dict[str, Any]]) -> None:
        events = [{"json": value} for value in objects] + [{"data": "[DONE]"}]
        lines, parsed = _lines_after_the_head(events)
        assert event_lines_bytes(lines) == parsed

    @pytest.mark.parametrize("events", [
        [{"json": {"n": 1}}, {"event": "ping", "json": {"a": 1}}],
        [{"id": "7", "json": {"a": 1}}],
        [{"json": {"a": 1}, "retry": 10}],
        [{"json": {"n": 1}}, {"data": "x\ny"}],
        [{"data": "[DONE]"}, {"json": {"n": 1}}],
    ], ids=["event-name", "id", "retry", "text", "done-first"])
    def test_anything_else_is_parsed(self, events: list[dict[str, Any]]) -> None:
        assert event_lines_bytes(_lines_after_the_head(events)[0]) is None


class TestResponseDocument:
    """The stored form of a response."""

    def test_headers_outside_the_allowlist_are_dropped(self) -> None:
        """Cookies, ids, rate limits, dates, cf-ray and timings never reach a document."""
        headers = [
            ("Content-Type", "application/json"),
            ("Set-Cookie", "__cf_bm=abc"),
            ("openai-organization", "org-123"),
            ("openai-project", "proj_1"),
            ("anthropic-organization-id", "uuid"),
            ("x-request-id", "req_1"),
            ("request-id", "req_2"),
            ("x-ratelimit-remaining-tokens", "9"),
            ("anthropic-ratelimit-requests-remaining", "9"),
            ("date", "Sun, 29 Nov 2026 20:00:00 GMT"),
            ("cf-ray", "8a-AMS"),
            ("openai-processing-ms", "31"),
            ("content-encoding", "gzip"),
            ("content-length", "9"),
            ("retry-after-ms", "10"),
        ]
        document = response_document(200, headers, b'{"ok": true}')
        assert document == {
            "status": 200,
            "headers": {"content-type": "application/json", "retry-after-ms": "10"},
            "json": {"ok": True},
        }

    def test_allowlist_can_be_widened(self) -> None:
        """A caller-chosen allowlist keeps more headers; content-type always stays."""
        document = response_document(
            204, [("x-keep", "1"), ("content-type", "text/plain")], b"", keep=frozenset({"x-keep"})
        )
        assert document == {"status": 204, "headers": {"x-keep": "1", "content-type": "text/plain"}}

    def test_event_stream_is_stored_event_by_event(self) -> None:
        """A whole SSE body becomes the list of its events."""
        body = b'event: a\ndata: {"x":1}\n\nevent: b\ndata: done\n\n'
        document = response_document(200, [("content-type", "text/event-stream")], body)
        assert document["events"] == [
            {"event": "a", "json": {"x": 1}},
            {"event": "b", "data": "done"},
        ]

    def test_default_allowlist_has_no_identifying_header(self) -> None:
        """The default allowlist names no header that identifies an account or a request."""
        banned = {"set-cookie", "x-request-id", "request-id", "openai-organization", "date"}
        assert not banned & RESPONSE_HEADERS


class TestEnvironmentFailure:
    """Which statuses are the environment's and never recorded."""

    @pytest.mark.parametrize(
        ("status", "expected"),
        [(200, False), (400, False), (404, False), (422, False), (401, True), (403, True),
         (408, True), (409, True), (429, True), (500, True), (503, True)],
    )
    def test_vectors(self, status: int, expected: bool) -> None:
        """Credentials, quota, timing and server failures are the environment's."""
        assert is_environment_failure(status) is expected
