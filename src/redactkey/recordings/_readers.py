"""Every recording dialect read through one entry point: `read_recording`.

A text dialect is told by its first line (`_TEXT_DIALECTS`), any other file by the
shape of its JSON, YAML or TOML document: redactkey's own files first, then the first
of `_DIALECTS` whose `detect` names a format; the dialect's module in
`recordings.dialects` reads it into a `Recording` (the file's structure with bodies
decoded in place, and its calls in file order). Anything else that parses is `json`,
`yaml` or `toml`, scanned as generic data. Nothing in a file is ever executed or
constructed: YAML tags are read as data, PyGithub's Python literals with
`ast.literal_eval`.

`exchanges(recording)` yields each call as an `Exchange` (method, url, headers, body;
status, headers, body and stream events), the shape other code builds on;
`header_sites` every recorded header with its JSON pointer.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli

from .._errors import FixtureFormatError
from ..keys._canonical import JSONValue, pointer_join
from ..redact._redactor import nesting_exceeds
from ._cassettes import (
    LineMap,
    Recording,
    collect_problems,
    load_document,
)
from ._limits import MAX_NESTING
from ._streams import (
    STREAM_FILE_SUFFIXES,
    STREAM_HINTS,
    BodyStream,
    StreamEvent,
    body_streams,
    file_stream,
    names_a_stream,
    read_stream,
    write_stream,
)
from .dialects import (
    _azure,
    _cassetter,
    _frames,
    _go_vcr,
    _har,
    _httprr,
    _nock,
    _placebo,
    _pygithub,
    _single,
    _vcrpy,
)
from .dialects._common import Binary, decode_body_bytes, decode_tree

__all__ = [
    "NOT_HTTP",
    "RECORDING_FORMATS",
    "STREAM_FILE_SUFFIXES",
    "STREAM_HINTS",
    "Binary",
    "BodyStream",
    "Exchange",
    "StreamEvent",
    "body_streams",
    "exchanges",
    "file_stream",
    "header_sites",
    "names_a_stream",
    "read_recording",
    "read_stream",
    "split_events",
    "write_stream",
]

_TEXT_DIALECTS = (_httprr, _pygithub)
# in the order they are tried: the first whose `detect` names a format reads the file
_DIALECTS = (_nock, _har, _azure, _placebo, _frames, _cassetter, _go_vcr, _vcrpy, _single)

#: Formats of text files that are not JSON, YAML or TOML.
TEXT_DIALECTS = frozenset(dialect.FORMAT for dialect in _TEXT_DIALECTS)
#: Formats whose interactions (requests and responses) are read.
RECORDING_FORMATS = frozenset({
    "vcrpy", "ruby-vcr", "rvcr-json", "betamax", "go-vcr", "cassetter", "har", "nock",
    "dd-test-agent", "http-exchange", "grpc", "websocket", "azure-test-proxy", "placebo",
    _httprr.FORMAT, _pygithub.FORMAT,
})
#: Formats read for their secrets that hold no HTTP exchange to replay: why.
NOT_HTTP = {"placebo": _placebo.NOT_HTTP}
# Formats whose JSON the fast path of `check` keeps as parsed (see `read_recording`).
_AS_PARSED = frozenset({"vcrpy", "rvcr-json", "grpc", "websocket", "fixture", "store", "json"})


def _own(raw: Any) -> str | None:
    """redactkey's own files: a fixture, or a cassette store."""
    if isinstance(raw, dict) and {"version", "key", "kind", "request"} <= set(raw):
        return "fixture"
    if isinstance(raw, dict) and "version" in raw and isinstance(raw.get("entries"), list):
        return "store"
    return None


def _load_toml(path: Path, text: str) -> Any:
    try:
        raw = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise FixtureFormatError(str(path), f"not valid TOML: {exc}") from None
    if nesting_exceeds(raw):
        raise FixtureFormatError(str(path), f"nested deeper than {MAX_NESTING} levels")
    return json.loads(json.dumps(raw, default=str))  # dates and times as text


def _probe_encoded_bodies(raw: Any) -> None:
    """The fast path keeps a JSON document as parsed (the redactor opens JSON and base64
    held in strings itself); its `base64_string` bodies are still decoded within the
    cap, so that a body which cannot be read is noted as in the full reading."""
    stack: list[tuple[Any, int]] = [(raw, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            continue
        if isinstance(node, dict):
            encoded = node.get("base64_string")
            if isinstance(encoded, str) and len(encoded) > 64:
                with contextlib.suppress(binascii.Error, ValueError):
                    decode_body_bytes(base64.b64decode("".join(encoded.split())))
            stack.extend((value, depth + 1) for value in node.values()
                         if isinstance(value, (dict, list)))
        elif isinstance(node, list):
            stack.extend((value, depth + 1) for value in node if isinstance(value, (dict, list)))


def read_recording(path: Path, text: str, *, suffix: str | None = None,
                   normalise: bool = True) -> Recording:
    """Read the text of a recording or fixture file into a `Recording` (any JSON, YAML or
    TOML structure is accepted); `FixtureFormatError` when it does not parse.

    `suffix` is the suffix that names the format (`.yaml` for `a.yaml.gz`). With
    `normalise=False` the JSON of a vcrpy, rVCR, frame or own file, or of plain JSON, is
    kept as parsed and no interactions are built: the fast path of `redact check`, whose
    redactor opens JSON bodies held in strings by itself.
    """
    suffix = path.suffix.lower() if suffix is None else suffix
    with collect_problems() as problems:
        for dialect in _TEXT_DIALECTS:
            if dialect.sniff(text):
                parsed = dialect.parse(text, str(path))
                return Recording(path=path, format=dialect.FORMAT, document=parsed[0],
                                 lines=parsed[1], interactions=parsed[2], text=text,
                                 problems=list(problems))
        lines: LineMap
        if suffix == ".toml":
            raw: Any = _load_toml(path, text)
            lines, is_json = LineMap(), False
        else:
            named = path if path.suffix.lower() == suffix else path.with_name("file" + suffix)
            raw, lines, is_json = load_document(named, text)
        fmt = _own(raw)
        reader = None
        for dialect in _DIALECTS if fmt is None else ():
            fmt = dialect.detect(raw, is_json)
            if fmt is not None:
                reader = dialect
                break
        fmt = fmt or ("toml" if suffix == ".toml" else "json" if is_json else "yaml")
        calls: list[Any] = []
        document: Any
        if is_json and not normalise and fmt in _AS_PARSED:
            document = raw
            if "base64_string" in text or "\\u" in text:  # else no such member to probe
                _probe_encoded_bodies(raw)
        elif reader is not None:
            document, calls = reader.read(raw)
        else:
            document = decode_tree(raw)
    return Recording(path=path, format=fmt, document=document, lines=lines,
                     interactions=calls, text=text, problems=list(problems))


# --------------------------------------------------------------------------- exchanges


@dataclass(frozen=True)
class Exchange:
    """One recorded call in a format-neutral shape."""

    method: str | None
    url: str | None
    request_headers: dict[str, list[str]]
    request_body: JSONValue
    status: int | None
    response_headers: dict[str, list[str]]
    response_body: JSONValue
    events: list[JSONValue] = field(default_factory=list)  # SSE / NDJSON, split
    request_events: list[JSONValue] = field(default_factory=list)  # a request sent as one


def split_events(body: JSONValue, content_type: str = "") -> list[JSONValue]:
    """The events of a streamed body: SSE `data:` payloads, NDJSON lines or event-stream
    frame payloads (JSON parsed); empty for a body that is not a stream."""
    stream = read_stream(body, content_type)
    return [event.value for event in stream.events] if stream is not None else []


def exchanges(recording: Recording) -> Iterator[Exchange]:
    """Every call a recording holds, in file order."""
    for call in recording.interactions:
        response = call.response
        ctype = ""
        if response is not None:
            ctype = next(iter(response.header("content-type")), "")
        sent_as = next(iter(call.request.header("content-type")), "")
        yield Exchange(
            method=call.method, url=call.uri,
            request_headers=dict(call.request.headers), request_body=call.request.body,
            status=call.status,
            response_headers=dict(response.headers) if response is not None else {},
            response_body=response.body if response is not None else None,
            events=split_events(response.body, ctype) if response is not None else [],
            request_events=split_events(call.request.body, sent_as),
        )


# --------------------------------------------------------------------------- header sites

_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,80}$")
# Names common enough that a map holding two of them is a header map, whatever its key.
_COMMON_HEADERS = frozenset({
    "accept", "accept-encoding", "authorization", "cache-control", "connection",
    "content-encoding", "content-length", "content-type", "cookie", "date", "host", "server",
    "set-cookie", "transfer-encoding", "user-agent", "vary", "x-request-id", "cf-ray",
    "strict-transport-security", "alt-svc", "via", "etag", "x-api-key",
})


def _is_header_map(value: dict[str, Any], parent: str) -> bool:
    lowered = parent.lower()
    if "header" in lowered or lowered in ("metadata", "reqheaders"):
        return True
    return sum(str(name).lower() in _COMMON_HEADERS for name in value) >= 2


def _flat_pairs(value: list[Any]) -> bool:
    return (len(value) >= 2 and len(value) % 2 == 0
            and all(isinstance(value[i], str) and _HEADER_NAME.match(value[i])
                    for i in range(0, len(value), 2))
            and all(isinstance(value[i], str) for i in range(1, len(value), 2)))


def _generic_sites(document: JSONValue) -> Iterator[tuple[str, str, str]]:
    stack: list[tuple[Any, str, str, int]] = [(document, "", "", 0)]
    while stack:
        node, pointer, parent, depth = stack.pop()
        if depth > MAX_NESTING:
            continue
        if isinstance(node, dict):
            header_map_here = _is_header_map(node, parent)
            for key, value in node.items():
                if header_map_here and isinstance(key, str) and _HEADER_NAME.match(key):
                    if isinstance(value, str):
                        yield key, value, pointer_join(pointer, key)
                        continue
                    if isinstance(value, list) and all(isinstance(item, str) for item in value):
                        for index, item in enumerate(value):
                            yield key, item, pointer_join(pointer_join(pointer, key), index)
                        continue
                if isinstance(value, (dict, list)):
                    stack.append((value, pointer_join(pointer, key), str(key), depth + 1))
        elif isinstance(node, list):
            headerish = "header" in parent.lower()
            if headerish and _flat_pairs(node):
                for index in range(0, len(node), 2):
                    yield node[index], node[index + 1], pointer_join(pointer, index + 1)
                continue
            for index, item in enumerate(node):
                if isinstance(item, dict):
                    name = item.get("name")
                    if (isinstance(name, str) and isinstance(item.get("value"), str)
                            and (headerish or name.lower() in _COMMON_HEADERS)):
                        yield name, item["value"], pointer_join(
                            pointer_join(pointer, index), "value")
                        continue
                elif not isinstance(item, list):
                    continue
                stack.append((item, pointer_join(pointer, index), parent, depth + 1))


def header_sites(recording: Recording) -> Iterator[tuple[str, str, str]]:
    """(name, value, JSON pointer) of every recorded header: from the interactions of a
    recording format, else from the header-shaped maps and lists of a generic document."""
    if recording.interactions:
        for call in recording.interactions:
            for message in (call.request, call.response):
                if message is None:
                    continue
                for name, values in message.headers.items():
                    for index, value in enumerate(values):
                        yield name, value, message.header_pointer(name, index)
        return
    yield from _generic_sites(recording.document)
