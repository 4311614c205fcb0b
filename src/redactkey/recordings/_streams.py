"""Streamed bodies of recordings, event by event: server-sent events, NDJSON and AWS
event-stream frames; read (`read_stream`, `body_streams`, `file_stream`) and written
back with every byte but the changed values kept (`write_stream`)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ahocorasick_rs

from ..http._eventstream import FrameDecoder, FrameError, encode_frame
from ..keys._canonical import JSONValue
from ..redact._redactor import nesting_exceeds
from ._cassettes import Recording

__all__ = [
    "STREAM_FILE_SUFFIXES",
    "STREAM_HINTS",
    "BodyStream",
    "StreamEvent",
    "body_streams",
    "file_stream",
    "json_string_end",
    "names_a_stream",
    "read_stream",
    "write_stream",
]

#: Content types of streamed bodies, by the kind of stream they hold.
_STREAM_TYPES = (("event-stream", "sse"), ("amazon.eventstream", "eventstream"),
                 ("ndjson", "ndjson"), ("jsonl", "ndjson"), ("json-seq", "ndjson"))
_SSE_DATA = re.compile(r"(?m)^data:[ ]?(?P<payload>[^\r\n]*)(?=\r?$)")
# A body shaped like SSE without a content type saying so.
_SSE_SHAPE = re.compile(r"^(?:data|event|id|retry):|^:", re.ASCII)
# Markers in a file's text that it may hold a streamed body named by its content type.
STREAM_HINTS = ("event-stream", "ndjson", "amazon.eventstream", "jsonl", "json-seq")
_STREAM_HINT_FINDER = ahocorasick_rs.AhoCorasick(
    list(STREAM_HINTS), implementation=ahocorasick_rs.Implementation.DFA)


def names_a_stream(text: str) -> bool:
    """Whether `text` holds one of `STREAM_HINTS` (one pass over the text for all)."""
    try:
        return bool(_STREAM_HINT_FINDER.find_matches_as_indexes(text))
    except UnicodeEncodeError:  # lone surrogates
        return any(hint in text for hint in STREAM_HINTS)


@dataclass(frozen=True)
class StreamEvent:
    """One event of a streamed body: its payload (JSON parsed where it is JSON) and where
    the payload sits in the body's text (`start`/`end`; -1 for a binary frame)."""

    index: int
    value: JSONValue
    start: int = -1
    end: int = -1
    is_json: bool = False
    headers: list[Any] = field(default_factory=list)  # event-stream frame headers
    wrapped: bool = False  # event-stream payload `{"bytes": base64(JSON)}`, opened
    at: int = -1  # event-stream: the frame's first byte in the body


@dataclass(frozen=True)
class BodyStream:
    """A streamed body of a recording: its kind, where it is and its events."""

    kind: str  # sse | ndjson | eventstream
    pointer: str  # the body's JSON pointer in the recording's document
    body: str | bytes  # the body as read (event-stream: its bytes)
    events: list[StreamEvent]


def _payload(text: str) -> tuple[JSONValue, bool]:
    if text[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return text, False
        if isinstance(value, (dict, list)) and not nesting_exceeds(value):
            return value, True
    return text, False


def _frames(raw: bytes) -> list[StreamEvent] | None:
    decoder = FrameDecoder()
    try:
        frames = decoder.feed(raw)
        decoder.finish()
    except (FrameError, IndexError, UnicodeDecodeError, struct.error):
        return None
    starts = [0]
    for _ in frames[:-1]:
        starts.append(starts[-1] + struct.unpack_from(">I", raw, starts[-1])[0])
    events: list[StreamEvent] = []
    for index, (headers, payload) in enumerate(frames):
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            events.append(StreamEvent(index, None, headers=headers, at=starts[index]))
            continue
        value, is_json = _payload(text)
        wrapped = False
        inner = value.get("bytes") if isinstance(value, dict) else None
        if is_json and isinstance(value, dict) and isinstance(inner, str) and len(value) <= 2:
            # invoke_model_with_response_stream: `{"bytes": base64(JSON chunk), "p": …}`
            try:
                opened, ok = _payload(base64.b64decode(inner, validate=True).decode("utf-8"))
            except (binascii.Error, ValueError):
                opened, ok = None, False
            if ok:
                value = {**value, "bytes": opened}
                wrapped = True
        events.append(StreamEvent(index, value, is_json=is_json, headers=headers,
                                  wrapped=wrapped, at=starts[index]))
    return events


def read_stream(body: JSONValue, content_type: str = "", pointer: str = ""
                ) -> BodyStream | None:
    """A streamed body split into its events, or None when it is not a stream (by its
    content type or, for SSE, its shape) or its frames do not decode. A body is text: an
    event-stream body is base64 of its bytes."""
    if not isinstance(body, str):
        return None
    ctype = content_type.lower()
    kind = next((kind for marker, kind in _STREAM_TYPES if marker in ctype), None)
    if kind is None and _SSE_SHAPE.match(body) and "\ndata:" in "\n" + body:
        kind = "sse"
    if kind is None:
        return None
    if kind == "eventstream":
        try:
            raw = base64.b64decode("".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            return None
        frames = _frames(raw)
        return None if frames is None else BodyStream(kind, pointer, raw, frames)
    events: list[StreamEvent] = []
    if kind == "sse":
        for match in _SSE_DATA.finditer(body):
            value, is_json = _payload(match.group("payload"))
            events.append(StreamEvent(len(events), value, match.start("payload"),
                                      match.end("payload"), is_json))
    else:
        at = 0
        for line in body.splitlines(keepends=True):
            text = line.rstrip("\r\n")
            if text.strip():
                value, is_json = _payload(text.strip())
                lead = len(text) - len(text.lstrip())
                events.append(StreamEvent(len(events), value, at + lead,
                                          at + lead + len(text.strip()), is_json))
            at += len(line)
    return BodyStream(kind, pointer, body, events) if events else None


def body_streams(recording: Recording) -> Iterator[BodyStream]:
    """The streamed bodies of a recording's interactions, in file order: a request body
    sent as a stream (a batch upload of NDJSON, an SSE body) as well as a response's."""
    for call in recording.interactions:
        for message in (call.request, call.response):
            if message is None or message.body_pointer is None:
                continue
            ctype = next(iter(message.header("content-type")), "")
            stream = read_stream(message.body, ctype, message.body_pointer)
            if stream is not None:
                yield stream


#: Files that are a stream of their own, by suffix: the content type they stand for.
STREAM_FILE_SUFFIXES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson",
                        ".jsonl": "application/jsonl"}


def file_stream(text: str, suffix: str) -> BodyStream | None:
    """The events of a file that is a stream (its pointer is empty: the file is the body):
    named `.sse`/`.ndjson`/`.jsonl`, or text starting like SSE; None for any other text."""
    ctype = STREAM_FILE_SUFFIXES.get(suffix)
    if ctype is None and not text.startswith(("data:", "event:")):
        return None
    return read_stream(text, ctype or "", "")


def write_stream(stream: BodyStream, values: list[JSONValue], *,
                 framing: Callable[[str], str] | None = None) -> str | bytes:
    """The body of `stream` with its events' payloads replaced by `values` (one per event,
    in order), the framing kept: SSE and NDJSON lines stay in place byte for byte, and in
    a JSON event only the strings that changed are written again (the event's spacing
    and key order stay); event-stream frames are encoded again with their headers
    (lengths and CRCs recomputed). Events whose value did not change keep their bytes.

    `framing`, for a text stream, rewrites the text between the events (SSE `event:`,
    `id:` and comment lines) piece by piece: the redaction of a secret there.
    """
    replaced = {event.index: new for event, new in zip(stream.events, values, strict=True)
                if new != event.value}
    if stream.kind == "eventstream":
        if not replaced:
            return stream.body
        assert isinstance(stream.body, bytes)
        out = bytearray()
        decoder = FrameDecoder()
        for event, (headers, payload) in zip(stream.events, decoder.feed(stream.body),
                                             strict=True):
            if event.index in replaced:
                new = replaced[event.index]
                if event.wrapped and isinstance(new, dict) and not isinstance(new.get("bytes"),
                                                                                  str):
                    packed = json.dumps(new["bytes"], ensure_ascii=False,
                                        separators=(",", ":")).encode("utf-8")
                    new = {**new, "bytes": base64.b64encode(packed).decode("ascii")}
                payload = (json.dumps(new, ensure_ascii=False, separators=(",", ":"))
                           if event.is_json else str(new)).encode("utf-8")
            out += encode_frame(headers, payload)
        return bytes(out)
    assert isinstance(stream.body, str)
    text: str = stream.body
    if framing is None and not replaced:
        return text
    pieces: list[str] = []
    at = 0
    for event in stream.events:
        gap = text[at:event.start]
        pieces.append(framing(gap) if framing is not None and gap else gap)
        piece = text[event.start:event.end]
        if event.index in replaced:
            new = replaced[event.index]
            patched = _patch_json(piece, event.value, new) if event.is_json else None
            if patched is None:
                patched = (json.dumps(new, ensure_ascii=False, separators=(",", ":"))
                           if event.is_json else str(new))
            piece = patched
        pieces.append(piece)
        at = event.end
    tail = text[at:]
    pieces.append(framing(tail) if framing is not None and tail else tail)
    out_text = "".join(pieces)
    return text if out_text == text else out_text


def json_string_end(text: str, at: int) -> int:
    """Where the JSON string whose opening quote is at `at` ends (past its closing quote),
    or the end of `text` when it is not closed. A search from quote to quote: its memory does
    not grow with the string, as a regular expression's repeat does (~120 bytes a character:
    360 MB for one 3 MB string)."""
    start = at + 1
    while True:
        quote = text.find('"', start)
        if quote < 0:
            return len(text)
        escapes = quote
        while escapes > start and text[escapes - 1] == "\\":
            escapes -= 1
        if (quote - escapes) % 2 == 0:
            return quote + 1
        start = quote + 1


def _json_strings(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is a member name) of each string token of a JSON text, in order: nothing
    outside a string holds a quote, so a scan from the start meets exactly those."""
    at = text.find('"')
    while at >= 0:
        end = json_string_end(text, at)
        after = end
        while after < len(text) and text[after].isspace():
            after += 1
        yield at, end, text.startswith(":", after)
        at = text.find('"', end)


def _leaves(value: JSONValue, out: list[JSONValue]) -> None:
    """The leaves of a JSON value in the order its text holds them."""
    if isinstance(value, dict):
        for item in value.values():
            _leaves(item, out)
    elif isinstance(value, list):
        for item in value:
            _leaves(item, out)
    else:
        out.append(value)


def _same_shape(old: JSONValue, new: JSONValue) -> bool:
    if isinstance(old, dict):
        return (isinstance(new, dict) and list(old) == list(new)
                and all(_same_shape(old[k], new[k]) for k in old))
    if isinstance(old, list):
        return (isinstance(new, list) and len(old) == len(new)
                and all(_same_shape(a, b) for a, b in zip(old, new, strict=True)))
    return isinstance(old, str) == isinstance(new, str) and (isinstance(old, str) or old == new)


def _patch_json(payload: str, old: JSONValue, new: JSONValue) -> str | None:
    """The JSON text `payload` (of `old`) with only the string values that differ in
    `new` written again, every other byte kept; None where that cannot be done exactly
    (a changed key or number, duplicate keys): the caller writes the event whole."""
    if not _same_shape(old, new):
        return None
    before: list[JSONValue] = []
    after: list[JSONValue] = []
    _leaves(old, before)
    _leaves(new, after)
    strings = [(start, end) for start, end, key in _json_strings(payload) if not key]
    olds = [(b, a) for b, a in zip(before, after, strict=True) if isinstance(b, str)]
    if len(strings) != len(olds):
        return None
    pieces: list[str] = []
    at = 0
    for (start, end), (was, now) in zip(strings, olds, strict=True):
        if was == now or not isinstance(was, str):
            continue
        token = payload[start:end]
        try:
            if json.loads(token) != was:
                return None
        except ValueError:
            return None
        pieces.append(payload[at:start])
        # a token that escaped its non-ASCII text (`\u00e9`) is written the same way
        pieces.append(json.dumps(now, ensure_ascii=token.isascii() and not was.isascii()))
        at = end
    pieces.append(payload[at:])
    patched = "".join(pieces)
    try:
        if json.loads(patched) != new:
            return None
    except ValueError:
        return None
    return patched
