from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from redactkey import Fixture, FixtureFormatError
from redactkey.fixtures._format import (
    FORMAT_VERSION,
    Cassette,
    CassetteEntry,
    ChunkLines,
    cassette_json_schema,
    dump_document,
    fixture_json_schema,
    is_canonical_fixture,
    parse_cassette,
    parse_fixture,
    parse_replayed,
)
from redactkey.keys._canonical import long_digit_run

KEY = "0123456789abcdef" * 4
SCHEMA_DIR = ROOT / "docs" / "schema"


def _doc(**outcome: Any) -> dict[str, Any]:
    return {"version": FORMAT_VERSION, "key": KEY, "kind": "text",
            "request": {"prompt": "hi"}, **outcome}


class TestFixture:
    """The fixture model and its canonical bytes."""

    @pytest.mark.parametrize(
        "doc",
        [
            _doc(answer={"text": "hé 😀", "n": [1, 2.5, None, True]}),
            _doc(chunks=[{"status": 200, "headers": {}}, {"json": {"a": 1}}]),
            _doc(answer={"id": 2**63 + 1}),
            _doc(answer={"id": 123456789012345678901234567890}),
            _doc(answer={"id": -(2**63) - 1}),
            _doc(error={"type": "StructuredOutputError", "message": "m", "data": {"x": 1}}),
            {**_doc(answer=1), "kind": "tool:search"},
        ],
        ids=["answer", "chunks", "uint64", "beyond-2**64", "below-int64", "error", "tool"],
    )
    def test_fast_parse_equals_validation(self, doc: dict[str, Any]) -> None:
        """Reading a file gives what validating its JSON gives, however it is read."""
        data = json.dumps(doc).encode()
        parsed = parse_fixture("f.json", data)
        expected = Fixture.model_validate(json.loads(data))
        assert parsed == expected
        assert parsed.outcome == expected.outcome
        assert parsed.document() == expected.document()

    @pytest.mark.parametrize(
        ("doc", "problem"),
        [
            ({k: v for k, v in _doc(answer=1).items() if k != "version"}, "no format version"),
            ({**_doc(answer=1), "version": 1.0}, "format version 1.0 is not supported"),
            ({**_doc(answer=1), "version": True}, "format version of type bool"),
            ({**_doc(answer=1), "key": "ABC"}, "/key"),
            ({**_doc(answer=1), "kind": "../x"}, "/kind"),
            ({**_doc(answer=1), "extra": 1}, "/extra"),
            (_doc(answer=1, chunks=[]), "exactly one of answer, chunks, error"),
            (_doc(chunks={"a": 1}), "/chunks"),
        ],
        ids=["no-version", "float-version", "bool-version", "bad-key", "bad-kind", "extra",
             "two-outcomes", "chunks-not-a-list"],
    )
    def test_fast_parse_refuses_what_validation_refuses(
        self, doc: dict[str, Any], problem: str
    ) -> None:
        """A file the model would refuse is refused, naming the problem."""
        with pytest.raises(FixtureFormatError, match=problem.replace("*", r"\*")):
            parse_fixture("f.json", json.dumps(doc).encode())

    @pytest.mark.parametrize(
        ("outcome", "value"),
        [("answer", {"text": "héllo"}), ("answer", None), ("answer", [1, 2.5, True]),
         ("chunks", [{"delta": "a"}, {"delta": "b"}]), ("chunks", []),
         ("error", {"type": "StructuredOutputError", "message": "m", "data": {"x": 1}}),
         ("error", {"type": "E", "message": "m"})],
    )
    def test_round_trip(self, outcome: str, value: Any) -> None:
        """Each outcome parses and dumps back to the same document."""
        doc = _doc(**{outcome: value})
        fixture = parse_fixture("f.json", dump_document(doc))
        assert fixture.outcome == outcome
        assert fixture.document() == doc

    def test_canonical_bytes(self) -> None:
        """Bytes are sorted, 2-space indented, UTF-8 (not escaped) with a trailing newline."""
        fixture = Fixture(key=KEY, kind="text", request={"b": 1, "a": "é"}, answer="ü")
        expected = json.dumps(fixture.document(), indent=2, sort_keys=True,
                              ensure_ascii=False) + "\n"
        assert fixture.dumps() == expected.encode("utf-8")
        assert "é".encode() in fixture.dumps()

    def test_null_answer_is_an_answer(self) -> None:
        """An explicit `answer: null` is kept and differs from no outcome at all."""
        assert Fixture(key=KEY, kind="t", request={}, answer=None).document()["answer"] is None

    @pytest.mark.parametrize(
        ("doc", "needle", "pointer"),
        [
            (_doc(), "exactly one of answer, chunks, error (found: none)", ""),
            (_doc(answer=1, chunks=[]), "found: answer, chunks", ""),
            (_doc(answer=1, error={"type": "E", "message": ""}), "found: answer, error", ""),
            (_doc(chunks=None), "chunks must be a list", ""),
            ({**_doc(answer=1), "kind": "../etc"}, "should match pattern", "/kind"),
            ({**_doc(answer=1), "key": "ABC"}, "should match pattern", "/key"),
            ({**_doc(answer=1), "when": "2024"}, "Extra inputs", "/when"),
            (_doc(error={"type": "", "message": "m"}), "at least 1 character", "/error/type"),
            ({**_doc(answer=1), "version": 2}, "format version 2 is not supported", "/version"),
            ({**_doc(answer=1), "version": "1"}, "format version '1' is not supported",
             "/version"),
            ({k: v for k, v in _doc(answer=1).items() if k != "version"}, "no format version",
             "/version"),
        ],
    )
    def test_invalid_documents_name_file_and_pointer(
        self, doc: dict[str, Any], needle: str, pointer: str
    ) -> None:
        """A schema-invalid document raises FixtureFormatError naming the file and pointer."""
        with pytest.raises(FixtureFormatError) as info:
            parse_fixture("dir/bad.json", json.dumps(doc).encode())
        assert needle in str(info.value)
        assert info.value.path == "dir/bad.json"
        assert info.value.pointer == pointer
        assert str(info.value).startswith("dir/bad.json")

    @pytest.mark.parametrize(
        ("data", "needle"),
        [(b"{", "not valid JSON"), (b"\xff\xfe", "not UTF-8"), (b"[]", "JSON object"),
         (b"", "not valid JSON"), (b"[" * 100000, "not valid JSON")],
    )
    def test_corrupt_bytes(self, data: bytes, needle: str) -> None:
        """Truncated, non-UTF-8 or non-object files are named errors."""
        with pytest.raises(FixtureFormatError, match=r"bad\.json") as info:
            parse_fixture("bad.json", data)
        assert needle in str(info.value) or "nested too deeply" in str(info.value)


class TestCassette:
    """The cassette document."""

    def test_entries_sorted_by_key(self) -> None:
        """Entries are written sorted by key whatever order they were added in."""
        keys = ["f" * 64, "0" * 64, "a" * 64]
        entries = [CassetteEntry(key=k, kind="text", request={}, answer=k[:1]) for k in keys]
        doc = json.loads(Cassette(entries=entries).dumps())
        assert [e["key"] for e in doc["entries"]] == sorted(keys)
        assert doc["version"] == FORMAT_VERSION

    def test_entry_is_a_fixture_without_version(self) -> None:
        """An entry converts to and from a Fixture without loss."""
        fixture = Fixture(key=KEY, kind="tool:search", request={"q": 1}, chunks=[1, 2])
        assert CassetteEntry.from_fixture(fixture).to_fixture() == fixture

    def test_bad_cassette_names_entry(self) -> None:
        """An invalid entry is named by its pointer."""
        doc = {"version": 1, "entries": [{"key": KEY, "kind": "t", "request": {}}]}
        with pytest.raises(FixtureFormatError) as info:
            parse_cassette("c.json", json.dumps(doc).encode())
        assert info.value.pointer == "/entries/0"


class TestSchema:
    """The exported JSON Schema."""

    @pytest.mark.parametrize(
        ("name", "build"),
        [("fixture.schema.json", fixture_json_schema),
         ("cassette.schema.json", cassette_json_schema)],
    )
    def test_exported_schema_is_current(self, name: str, build: Any) -> None:
        """docs/schema holds exactly the schema the models produce."""
        on_disk = (SCHEMA_DIR / name).read_bytes()
        assert on_disk == dump_document(build()), (
            "regenerate: python -c \"from redactkey.fixtures._format import export_schemas; "
            "export_schemas('docs/schema')\""
        )

    @pytest.mark.parametrize(
        "doc",
        [_doc(answer={"a": 1}), _doc(answer=None), _doc(chunks=[1]),
         _doc(error={"type": "E", "message": "m"})],
    )
    def test_schema_accepts_valid(self, doc: dict[str, Any]) -> None:
        """jsonschema accepts every document the models accept."""
        jsonschema.Draft202012Validator(fixture_json_schema()).validate(doc)
        parse_fixture("f", json.dumps(doc).encode())

    @pytest.mark.parametrize(
        "doc",
        [_doc(), _doc(answer=1, chunks=[1]), _doc(chunks=None), _doc(error=None),
         {**_doc(answer=1), "version": 2}, {**_doc(answer=1), "kind": "a/b"},
         {k: v for k, v in _doc(answer=1).items() if k != "version"}],
    )
    def test_schema_rejects_invalid(self, doc: dict[str, Any]) -> None:
        """jsonschema and the models reject the same invalid documents."""
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(fixture_json_schema()).validate(doc)
        with pytest.raises(FixtureFormatError):
            parse_fixture("f", json.dumps(doc).encode())


class TestTrustedRead:
    """A fixture read by the cheap path is the model pydantic's `model_construct` builds."""

    @pytest.mark.parametrize("outcome", [{"answer": {"a": [1, "x"]}}, {"answer": None},
                                         {"chunks": [{"b": 1.5}, "data: x"]}])
    def test_same_as_model_construct(self, outcome: dict[str, Any]) -> None:
        """Fields, their order, the fields set and the pydantic slots all agree."""
        doc = _doc(**outcome)
        read = parse_fixture("f.json", json.dumps(doc).encode())
        built = Fixture.model_construct(_fields_set=set(doc), **doc)
        assert list(read.__dict__.items()) == list(built.__dict__.items())
        assert read.model_fields_set == built.model_fields_set
        assert read == built
        assert read.outcome == next(iter(outcome))
        assert read.dumps() == built.dumps()


_LEAVES = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
)
_FLOATLESS = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet=st.characters(codec="utf-8"), max_size=6), inner,
                      max_size=4),
    max_leaves=24,
)


def _by_json(doc: Any) -> bytes:
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


class TestReplayedRead:
    """Replay reads a file of the writer's own layout without its request; anything else
    is read whole, as `parse_fixture` reads it."""

    @settings(max_examples=200, deadline=None)
    @given(answer=_FLOATLESS, request=_FLOATLESS, chunks=st.booleans())
    def test_outcome_as_the_whole_read_gives_it(self, answer: Any, request: Any,
                                                chunks: bool) -> None:
        """Whatever the request and the outcome hold (a member named "request" or
        "version" inside either included), the lean read gives the outcome, key and kind
        the whole read gives, and no request."""
        outcome = {"chunks": [answer, {"request": answer, "version": 1}]} if chunks else {
            "answer": {"request": request, "x": answer}}
        data = Fixture.model_validate(_doc(**outcome) | {"request": request}).dumps()
        whole = parse_fixture("f.json", data, kind="text", key=KEY)
        lean = parse_replayed("f.json", data, kind="text", key=KEY)
        assert (lean.kind, lean.key, lean.outcome) == (whole.kind, whole.key, whole.outcome)
        assert (lean.answer, lean.chunks) == (whole.answer, whole.chunks)
        if lean.request is not None:  # read whole: only a long digit run sends it there
            assert long_digit_run(data)
            assert lean == whole

    def test_the_request_is_not_read(self) -> None:
        """A request member that is not even JSON is passed over (replay never reads it)."""
        data = Fixture.model_validate(_doc(answer={"a": 1})).dumps()
        broken = data.replace(b'"prompt": "hi"', b'"prompt": hi')
        with pytest.raises(FixtureFormatError):
            parse_fixture("f.json", broken)
        lean = parse_replayed("f.json", broken, kind="text", key=KEY)
        assert (lean.answer, lean.request, lean.outcome) == ({"a": 1}, None, "answer")

    @pytest.mark.parametrize("data", [
        json.dumps(_doc(answer={"a": 1})).encode(),  # another layout: one line
        json.dumps(_doc(answer={"a": 1}), indent=4, sort_keys=True).encode() + b"\n",
        Fixture.model_validate(_doc(error={"type": "E", "message": "m"})).dumps(),
    ], ids=["compact", "indent-4", "error"])
    def test_any_other_file_is_read_whole(self, data: bytes) -> None:
        """Another layout, or an error outcome, is read and validated whole."""
        whole = parse_fixture("f.json", data, kind="text", key=KEY)
        assert parse_replayed("f.json", data, kind="text", key=KEY) == whole
        assert whole.request == {"prompt": "hi"}

    @pytest.mark.parametrize("doc", [
        _doc(answer={"a": 1}) | {"kind": "@bad kind"},
        _doc(answer={"a": 1}, chunks=[]),
        _doc(answer={"a": 1}) | {"extra": 1},
        _doc(answer={"a": 1}) | {"version": 2},
    ], ids=["bad-kind", "two-outcomes", "unknown-member", "version-2"])
    def test_a_bad_file_is_refused_as_the_whole_read_refuses_it(
        self, doc: dict[str, Any]
    ) -> None:
        """What the lean read cannot vouch for takes the validating path and its error."""
        data = dump_document(doc)
        with pytest.raises(FixtureFormatError) as whole:
            parse_fixture("f.json", data, kind="text", key=KEY)
        with pytest.raises(FixtureFormatError) as lean:
            parse_replayed("f.json", data, kind="text", key=KEY)
        assert str(lean.value) == str(whole.value)
        assert lean.value.pointer == whole.value.pointer

    def test_a_file_of_another_key_is_read_whole(self) -> None:
        """A file holding another call than its name says is read whole (the store then
        names the mismatch)."""
        data = Fixture.model_validate(_doc(answer={"a": 1})).dumps()
        other = "f" * 64
        assert parse_replayed("f.json", data, kind="text", key=other).request == {
            "prompt": "hi"}

    @pytest.mark.parametrize("outcome_size", [10, 3_000, 5_000, 70_000])
    @pytest.mark.parametrize("request_size", [10, 3_000, 5_000, 70_000])
    def test_a_long_outcome_or_request_is_read_without_its_request(
        self, outcome_size: int, request_size: int
    ) -> None:
        """The request member is found however long the outcome before it and the
        request itself are (it is looked for from both ends of the file)."""
        data = Fixture.model_validate(
            _doc(chunks=[{"t": "a" * outcome_size}]) | {"request": {"p": "b" * request_size}}
        ).dumps()
        lean = parse_replayed("f.json", data, kind="text", key=KEY)
        assert (lean.request, lean.chunks) == (None, [{"t": "a" * outcome_size}])


_HEAD = {"headers": {"content-type": "text/event-stream"}, "status": 200}
_EVENTS = [
    _HEAD,
    {"json": {"choices": [{"delta": {"content": "Grüße "}, "index": 0}], "id": "c-1"}},
    {"json": {"choices": [{"delta": {"content": "\"quoted\",\n  next"}, "index": 0}]}},
    {"data": "[DONE]"},
]


def _http_doc(chunks: list[Any]) -> dict[str, Any]:
    return _doc(chunks=chunks) | {"kind": "http"}


class TestStreamLines:
    """A stream's chunks are written one per line, compact; replay keeps all but the
    first as their lines until something asks for them."""

    def test_each_chunk_is_one_compact_line(self) -> None:
        """Each chunk on a line of its own, as the standard library writes it compactly
        with sorted keys; the other members as before."""
        doc = _http_doc(_EVENTS)
        data = Fixture.model_validate(doc).dumps()
        lines = data.decode().split("\n")
        assert lines[:2] == ["{", '  "chunks": [']
        chunk_lines = lines[2: 2 + len(_EVENTS)]
        assert chunk_lines == [
            "    " + json.dumps(chunk, separators=(",", ":"), sort_keys=True,
                                ensure_ascii=False) + ("," if i < len(_EVENTS) - 1 else "")
            for i, chunk in enumerate(_EVENTS)
        ]
        assert lines[2 + len(_EVENTS)] == "  ],"
        others = {name: value for name, value in doc.items() if name != "chunks"}
        assert data.endswith(dump_document(others)[2:])
        assert json.loads(data) == doc

    @settings(max_examples=200, deadline=None)
    @given(chunks=st.lists(_FLOATLESS | st.floats(allow_nan=False, allow_infinity=False)
                           | st.integers(min_value=-2**80, max_value=2**80), min_size=1))
    def test_any_chunks_read_back_the_same(self, chunks: list[Any]) -> None:
        """Whatever the chunks hold (floats and integers beyond 64 bits included), the
        file reads back the same, each chunk on its line, and writes the same bytes
        again; the lean read gives what the whole read gives."""
        data = Fixture.model_validate(_doc(chunks=chunks)).dumps()
        whole = parse_fixture("f.json", data, kind="text", key=KEY)
        assert whole.chunks == chunks
        assert whole.dumps() == data
        assert data.count(b"\n") == len(chunks) + 10  # (the request takes three)
        lean = parse_replayed("f.json", data, kind="text", key=KEY)
        assert list(lean.chunks) == chunks

    def test_replay_reads_the_first_chunk_alone(self) -> None:
        """The lean read parses the first chunk only; the others stay lines until asked
        for, then read as the whole read reads them."""
        data = Fixture.model_validate(_http_doc(_EVENTS)).dumps()
        lean = parse_replayed("f.json", data, kind="http", key=KEY)
        assert type(lean.chunks) is ChunkLines
        chunks = iter(lean.chunks)
        assert next(chunks) == _HEAD
        lines = chunks.unread()
        assert lines is not None
        assert lines.split(b",\n    ")[1:] == [
            json.dumps(chunk, separators=(",", ":"), sort_keys=True,
                       ensure_ascii=False).encode() for chunk in _EVENTS[1:]]
        assert list(chunks) == _EVENTS[1:]
        assert chunks.unread() is None  # (taken: no longer the lines alone)
        assert lean.chunks == _EVENTS
        assert len(lean.chunks) == 4
        assert lean.chunks[1:3] == _EVENTS[1:3]
        assert repr(lean.chunks) == "ChunkLines(4 chunks)"  # (never their content)

    def test_the_earlier_layout_is_read_whole(self) -> None:
        """A stream written before chunks had lines of their own (indented) is read as a
        list, as the whole read reads it, and is still canonical."""
        doc = _http_doc(_EVENTS)
        data = dump_document(doc)
        lean = parse_replayed("f.json", data, kind="http", key=KEY)
        assert type(lean.chunks) is list
        assert lean.chunks == _EVENTS
        assert is_canonical_fixture(data, doc)
        assert is_canonical_fixture(Fixture.model_validate(doc).dumps(), doc)
        assert not is_canonical_fixture(json.dumps(doc, indent=4).encode(), doc)
        answer = _doc(answer={"a": 1})  # (an answer has one layout)
        assert not is_canonical_fixture(dump_document(answer)[:-1], answer)

    def test_a_line_broken_by_hand_names_the_file(self) -> None:
        """A later line that is no longer JSON fails when the chunks are read, naming the
        file, as the whole read fails."""
        data = Fixture.model_validate(_http_doc(_EVENTS)).dumps()
        broken = data.replace(b'"id":"c-1"', b'"id":c-1')
        lean = parse_replayed("f.json", broken, kind="http", key=KEY)
        chunks = iter(lean.chunks)
        assert next(chunks) == _HEAD
        with pytest.raises(FixtureFormatError, match=r"f\.json"):
            next(chunks)

    @pytest.mark.parametrize("first", [b"null", b"{", b"[1,"], ids=["null", "brace", "cut"])
    def test_a_first_line_that_is_not_one_chunk_is_read_whole(self, first: bytes) -> None:
        """A first line that is not one chunk by itself is read the long way."""
        doc = _doc(chunks=[None, {"a": 1}])
        data = Fixture.model_validate(doc).dumps().replace(b"    null,", b"    " + first + b",")
        if first == b"null":
            lean = parse_replayed("f.json", data, kind="text", key=KEY)
            assert type(lean.chunks) is list
            assert lean.chunks == [None, {"a": 1}]
        else:
            with pytest.raises(FixtureFormatError, match=r"f\.json"):
                parse_replayed("f.json", data, kind="text", key=KEY)


class TestDumpDocument:
    """File bytes are the standard library's canonical bytes, whoever writes them."""

    @settings(max_examples=300, deadline=None)
    @given(_FLOATLESS)
    def test_floatless_documents_are_written_as_json_writes_them(self, doc: Any) -> None:
        """orjson writes what `json.dumps(indent=2, sort_keys=True)` writes."""
        assert dump_document(doc) == _by_json(doc)

    @pytest.mark.parametrize("doc", [
        {"t": 0.1, "u": 1e-07, "v": 1e16}, [2.5], {"deep": [[{"x": 3.0}]]},
        {"big": 2**80}, {1: "int key"}, ("a", "tuple"),
    ])
    def test_anything_else_is_written_by_the_standard_library(self, doc: Any) -> None:
        """Floats (whose digits orjson writes otherwise), integers beyond 64 bits, non-str
        keys and tuples come out as the standard library writes them."""
        assert dump_document(doc) == _by_json(doc)

    def test_a_lone_surrogate_is_refused_as_before(self) -> None:
        """Text UTF-8 cannot hold fails as it does through the standard library."""
        with pytest.raises(UnicodeEncodeError):
            dump_document({"s": "lone \ud800"})

    def test_depth_past_orjson_s_limit_is_written(self) -> None:
        """orjson refuses 255 levels; such a document is still written, by json."""
        doc: Any = []
        for _ in range(300):
            doc = [doc]
        assert dump_document(doc) == _by_json(doc)
