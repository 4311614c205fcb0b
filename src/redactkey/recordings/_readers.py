"""A reader per recording format, behind one entry point: `read_recording`.

Formats read as recordings (with their request/response headers and decoded bodies):

| format | recognised by |
| --- | --- |
| `vcrpy` | YAML `interactions:` with `request.uri` (also `requests:`/`responses:` lists) |
| `ruby-vcr` / `rvcr-json` | `http_interactions:` (YAML / JSON) |
| `betamax` | JSON `http_interactions` with `recorded_with: betamax…` |
| `go-vcr` | YAML `interactions:` whose requests have `url` (go-vcr v1 and v2) |
| `cassetter` | `version: 1` with `body: {type, content}` bodies (YAML) or `body_type` (TOML) |
| `har` | JSON `log.entries` (HAR 1.2: Polly.js, browser exports) |
| `nock` | a JSON list of `{scope, method, path, …}` (nock.back recordings) |
| `dd-test-agent` | only `{request, response}`, with `status: {code, message}` (dd-trace) |
| `http-exchange` | any other JSON object with `request.url` and `response` |
| `fixture` / `store` | redactkey's own files |

Anything else that parses is `json`, `yaml` or `toml` (scanned as generic data).
The document of a `Recording` keeps the file's structure (so JSON pointers map to
the file's lines) with bodies decoded in place: base64, gzip/deflate/br,
nock's hex-encoded gzip arrays, JSON bodies parsed. Nothing in a file is ever
executed or constructed: YAML tags are read as data.

`exchanges(recording)` yields each call as an `Exchange` (method, url, headers,
body; status, headers, body and stream events), the shape other code builds on.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ahocorasick_rs
import tomli

from .._errors import FixtureFormatError
from ..http._eventstream import FrameDecoder, FrameError, encode_frame
from ..keys._canonical import JSONValue, pointer_join
from ..redact._redactor import nesting_exceeds
from ._cassettes import (
    Interaction,
    LineMap,
    Message,
    Recording,
    build_recording,
    collect_problems,
    decode_body_bytes,
    decode_tree,
    http_interactions,
    load_document,
    maybe_json,
    read_message,
)
from ._limits import MAX_NESTING

__all__ = [
    "RECORDING_FORMATS",
    "STREAM_FILE_SUFFIXES",
    "STREAM_HINTS",
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
    "stream_kind",
    "write_stream",
]

#: Formats whose interactions (requests and responses) are read.
RECORDING_FORMATS = frozenset({
    "vcrpy", "ruby-vcr", "rvcr-json", "betamax", "go-vcr", "cassetter", "har", "nock",
    "dd-test-agent", "http-exchange", "grpc", "websocket",
})


# --------------------------------------------------------------------------- detection


def detect_format(raw: Any, is_json: bool, suffix: str) -> str | None:
    """The recording format of a loaded document (None: leave it to `_cassettes`)."""
    if isinstance(raw, list):
        first = next((item for item in raw if isinstance(item, dict)), None)
        if first is not None and "scope" in first and ("path" in first or "method" in first):
            return "nock"
        return None
    if not isinstance(raw, dict):
        return None
    log = raw.get("log")
    if isinstance(log, dict) and isinstance(log.get("entries"), list):
        return "har"
    recorded_with = raw.get("recorded_with")
    if isinstance(raw.get("http_interactions"), list) and isinstance(recorded_with, str) \
            and recorded_with.lower().startswith("betamax"):
        return "betamax"
    items = raw.get("interactions")
    if isinstance(items, list):
        first = next((item for item in items if isinstance(item, dict)), {})
        request = first.get("request") if isinstance(first, dict) else None
        if isinstance(request, dict):
            body = request.get("body")
            if "body_type" in request or (isinstance(body, dict) and "type" in body):
                return "cassetter"
            if "url" in request and "uri" not in request:
                return "go-vcr"
    if "grpc_interactions" in raw or "ws_interactions" in raw:
        return "cassetter"
    if isinstance(raw.get("requests"), list) and isinstance(raw.get("responses"), list):
        return "vcrpy-split"
    request, response = raw.get("request"), raw.get("response")
    if isinstance(request, dict) and isinstance(response, dict) and "url" in request \
            and "version" not in raw:
        return "dd-test-agent" if _dd_test_agent(raw, request, response) else "http-exchange"
    if suffix == ".toml":
        return "toml"
    return None


def _dd_test_agent(raw: dict[str, Any], request: dict[str, Any],
                   response: dict[str, Any]) -> bool:
    """The dd-trace test agent's shape: only `request` and `response`, a request of
    `method`/`url`/`headers`/`body`, a response of `headers`/`body` and a vcrpy-like
    `status: {code, message}`. Any other `{request, response}` is an `http-exchange`."""
    return (set(raw) == {"request", "response"}
            and set(request) <= {"method", "url", "headers", "body"}
            and set(response) <= {"status", "headers", "body"}
            and isinstance(response.get("status"), dict) and "code" in response["status"])


# --------------------------------------------------------------------------- readers


def _status(response: Any) -> int | None:
    if not isinstance(response, dict):
        return None
    for key in ("status", "code", "status_code"):
        value = response.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, dict) and isinstance(value.get("code"), int):
            return int(value["code"])
    return None


def _read_http_items(items: list[Any], base: str) -> tuple[list[Any], list[Interaction]]:
    """vcrpy-like items (go-vcr, betamax, cassetter, dd): the vcrpy reader, then the url,
    status and body fields that these formats name differently."""
    decoded, calls = http_interactions(items, base)
    fixed: list[Interaction] = []
    for call in calls:
        item = items[call.index] if call.index < len(items) else {}
        request = item.get("request", {}) if isinstance(item, dict) else {}
        response = item.get("response") if isinstance(item, dict) else None
        uri = call.uri
        if uri is None and isinstance(request, dict) and isinstance(request.get("url"), str):
            uri = request["url"]
        req_msg = _cassetter_body(call.request, decoded[call.index].get("request")
                                  if isinstance(decoded[call.index], dict) else None)
        resp_msg = call.response
        if resp_msg is not None and isinstance(decoded[call.index], dict):
            resp_msg = _cassetter_body(resp_msg, decoded[call.index].get("response"))
        fixed.append(Interaction(call.index, call.pointer, call.method, uri, req_msg,
                                 call.status if call.status is not None else _status(response),
                                 resp_msg))
    return decoded, fixed


def _cassetter_body(message: Message, doc: Any) -> Message:
    """cassetter keeps a body as `{type, content}` (YAML) or `body_content` (TOML)."""
    if not isinstance(doc, dict):
        return message
    body = doc.get("body")
    if isinstance(body, dict) and "type" in body and "content" in body:
        return Message(message.pointer, message.headers, body.get("content"),
                       pointer_join(pointer_join(message.pointer, "body"), "content"),
                       message.header_pointers)
    if "body_content" in doc:
        content = doc["body_content"]
        if isinstance(content, str) and doc.get("body_type") == "json":
            content = maybe_json(content)
            doc["body_content"] = content
        return Message(message.pointer, message.headers, content,
                       pointer_join(message.pointer, "body_content"), message.header_pointers)
    return message


def _read_vcrpy_split(raw: dict[str, Any]) -> tuple[dict[str, Any], list[Interaction]]:
    """vcrpy's `requests:` / `responses:` lists (paired by position)."""
    requests, responses = raw["requests"], raw["responses"]
    document: dict[str, Any] = {k: decode_tree(v) for k, v in raw.items()
                                if k not in ("requests", "responses")}
    req_docs: list[Any] = []
    resp_docs: list[Any] = []
    calls: list[Interaction] = []
    for index, request in enumerate(requests):
        pointer = pointer_join("/requests", index)
        if not isinstance(request, dict):
            req_docs.append(decode_tree(request))
            continue
        req_msg, req_doc = read_message(request, pointer)
        req_docs.append(req_doc)
        response = responses[index] if index < len(responses) else None
        resp_msg = None
        if isinstance(response, dict):
            resp_msg, _ = read_message(response, pointer_join("/responses", index))
        method, uri = request.get("method"), request.get("uri")
        calls.append(Interaction(index, pointer,
                                 method.upper() if isinstance(method, str) else None,
                                 uri if isinstance(uri, str) else None,
                                 req_msg, _status(response), resp_msg))
    for index, response in enumerate(responses):
        if isinstance(response, dict):
            _, resp_doc = read_message(response, pointer_join("/responses", index))
            resp_docs.append(resp_doc)
        else:
            resp_docs.append(decode_tree(response))
    document["requests"] = req_docs
    document["responses"] = resp_docs
    return document, calls


def _har_headers(value: Any, pointer: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    headers: dict[str, list[str]] = {}
    pointers: dict[str, list[str]] = {}
    if not isinstance(value, list):
        return headers, pointers
    for index, item in enumerate(value):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            name = item["name"]
            raw = item.get("value")
            headers.setdefault(name, []).append(raw if isinstance(raw, str) else json.dumps(raw))
            pointers.setdefault(name, []).append(
                pointer_join(pointer_join(pointer, index), "value"))
    return headers, pointers


def _decode_text(text: str, *, base64_encoded: bool, encoding: str) -> JSONValue:
    """A body held as text (maybe base64 of maybe-compressed bytes): its text or JSON."""
    if base64_encoded:
        try:
            raw = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            return text
        decoded = decode_body_bytes(raw, encoding)
        if decoded is None:
            return text
        text = decoded
    return maybe_json(text)


def _read_har(raw: dict[str, Any]) -> tuple[Any, list[Interaction]]:
    document: Any = decode_tree(raw)
    entries = document["log"]["entries"]
    calls: list[Interaction] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        pointer = pointer_join("/log/entries", index)
        request: dict[str, Any] = entry["request"] if isinstance(entry.get("request"), dict) \
            else {}
        response: dict[str, Any] | None = entry["response"] \
            if isinstance(entry.get("response"), dict) else None
        req_ptr = pointer_join(pointer, "request")
        headers, pointers = _har_headers(request.get("headers"), pointer_join(req_ptr, "headers"))
        body: JSONValue = None
        body_ptr: str | None = None
        post = request.get("postData")
        if isinstance(post, dict) and isinstance(post.get("text"), str):
            post["text"] = _decode_text(post["text"], base64_encoded=False, encoding="")
            body, body_ptr = post["text"], pointer_join(pointer_join(req_ptr, "postData"), "text")
        req_msg = Message(req_ptr, headers, body, body_ptr, pointers)
        resp_msg: Message | None = None
        status = None
        if response is not None:
            resp_ptr = pointer_join(pointer, "response")
            rh, rp = _har_headers(response.get("headers"), pointer_join(resp_ptr, "headers"))
            rbody: JSONValue = None
            rbody_ptr: str | None = None
            content = response.get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                encoding = next((v[0] for k, v in rh.items()
                                 if k.lower() == "content-encoding" and v), "")
                content["text"] = _decode_text(
                    content["text"], base64_encoded=content.get("encoding") == "base64",
                    encoding=encoding)
                rbody = content["text"]
                rbody_ptr = pointer_join(pointer_join(resp_ptr, "content"), "text")
            resp_msg = Message(resp_ptr, rh, rbody, rbody_ptr, rp)
            status = response.get("status") if isinstance(response.get("status"), int) else None
        method, url = request.get("method"), request.get("url")
        calls.append(Interaction(index, pointer,
                                 method.upper() if isinstance(method, str) else None,
                                 url if isinstance(url, str) else None,
                                 req_msg, status, resp_msg))
    return document, calls


def _nock_headers(value: Any, pointer: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    headers: dict[str, list[str]] = {}
    pointers: dict[str, list[str]] = {}
    if isinstance(value, list):  # rawHeaders: [name, value, name, value, ...]
        for index in range(0, len(value) - 1, 2):
            name, raw = value[index], value[index + 1]
            if isinstance(name, str):
                headers.setdefault(name, []).append(raw if isinstance(raw, str)
                                                    else json.dumps(raw))
                pointers.setdefault(name, []).append(pointer_join(pointer, index + 1))
    elif isinstance(value, dict):
        for name, raw in value.items():
            items = raw if isinstance(raw, list) else [raw]
            for index, item in enumerate(items):
                headers.setdefault(name, []).append(item if isinstance(item, str)
                                                    else json.dumps(item))
                child = pointer_join(pointer, name)
                pointers.setdefault(name, []).append(
                    pointer_join(child, index) if isinstance(raw, list) else child)
    return headers, pointers


def _nock_response(value: Any, encoding: str) -> JSONValue:
    """nock's response: JSON, text, or (compressed bodies) a list of hex chunks."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        joined = "".join(value)
        try:
            raw = bytes.fromhex(joined)
        except ValueError:
            return value
        text = decode_body_bytes(raw, encoding)
        return maybe_json(text) if text is not None else value
    if isinstance(value, str):
        return maybe_json(value)
    return value


def _read_nock(raw: list[Any]) -> tuple[Any, list[Interaction]]:
    document: Any = decode_tree(raw)
    calls: list[Interaction] = []
    for index, item in enumerate(document):
        if not isinstance(item, dict):
            continue
        pointer = pointer_join("", index)
        req_headers, req_ptrs = _nock_headers(item.get("reqheaders"),
                                              pointer_join(pointer, "reqheaders"))
        resp_key = "rawHeaders" if "rawHeaders" in item else "headers"
        resp_headers, resp_ptrs = _nock_headers(item.get(resp_key),
                                                pointer_join(pointer, resp_key))
        encoding = next((v[0] for k, v in resp_headers.items()
                         if k.lower() == "content-encoding" and v), "")
        if "response" in item:
            item["response"] = _nock_response(item["response"], encoding)
        body = item.get("body")
        if isinstance(body, str):
            item["body"] = body = maybe_json(body)
        scope, path = item.get("scope"), item.get("path")
        url = f"{scope}{path}" if isinstance(scope, str) and isinstance(path, str) else None
        method = item.get("method")
        status = item.get("status") if isinstance(item.get("status"), int) else None
        calls.append(Interaction(
            index, pointer, method.upper() if isinstance(method, str) else None, url,
            Message(pointer, req_headers, body, pointer_join(pointer, "body"), req_ptrs),
            status,
            Message(pointer, resp_headers, item.get("response"),
                    pointer_join(pointer, "response"), resp_ptrs),
        ))
    return document, calls


def _read_single(raw: dict[str, Any]) -> tuple[Any, list[Interaction]]:
    """dd test-agent and other `{request, response}` files: one call per file."""
    document: dict[str, Any] = {k: decode_tree(v) for k, v in raw.items()
                                if k not in ("request", "response")}
    req_msg, req_doc = read_message(raw["request"], "/request")
    resp_msg, resp_doc = read_message(raw["response"], "/response")
    document["request"] = req_doc
    document["response"] = resp_doc
    method, url = raw["request"].get("method"), raw["request"].get("url")
    return document, [Interaction(0, "", method.upper() if isinstance(method, str) else None,
                                  url if isinstance(url, str) else None, req_msg,
                                  _status(raw["response"]), resp_msg)]


# --------------------------------------------------------------------------- entry points


def _load_toml(path: Path, text: str) -> Any:
    try:
        raw = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise FixtureFormatError(str(path), f"not valid TOML: {exc}") from None
    if nesting_exceeds(raw):
        raise FixtureFormatError(str(path), f"nested deeper than {MAX_NESTING} levels")
    return json.loads(json.dumps(raw, default=str))  # dates and times as text


def read_recording(path: Path, text: str, *, suffix: str | None = None,
                   normalise: bool = True) -> Recording:
    """Read the text of a recording or fixture file into a `Recording` (any JSON, YAML or
    TOML structure is accepted); `FixtureFormatError` when it does not parse.

    `suffix` is the suffix that names the format (`.yaml` for `a.yaml.gz`).
    """
    suffix = path.suffix.lower() if suffix is None else suffix
    named = path if path.suffix.lower() == suffix else path.with_name("file" + suffix)
    with collect_problems() as problems:
        lines: LineMap
        if suffix == ".toml":
            raw: Any = _load_toml(path, text)
            lines, is_json = LineMap(), False
        else:
            raw, lines, is_json = load_document(named, text)
        fmt = detect_format(raw, is_json, suffix)
        calls: list[Interaction] = []
        document: Any
        if fmt is None:
            recording = build_recording(path, text, raw, lines, is_json, normalise=normalise)
            recording.problems.extend(problems)
            return recording
        if fmt == "har":
            document, calls = _read_har(raw)
        elif fmt == "nock":
            document, calls = _read_nock(raw)
        elif fmt == "vcrpy-split":
            document, calls = _read_vcrpy_split(raw)
            fmt = "vcrpy"
        elif fmt in ("dd-test-agent", "http-exchange"):
            document, calls = _read_single(raw)
        elif fmt in ("go-vcr", "betamax", "cassetter"):
            list_key = "http_interactions" if fmt == "betamax" else "interactions"
            items = raw.get(list_key) if isinstance(raw.get(list_key), list) else []
            decoded, calls = _read_http_items(items, "/" + list_key)
            document = {k: (decode_tree(v) if k != list_key else decoded)
                        for k, v in raw.items()}
        else:  # toml
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


_HEADER_MAP_KEYS: dict[tuple[Any, ...], bool] = {}  # member names -> a header map by them


_HEADER_PARENTS: dict[str, bool] = {}  # member name -> it names a header map


def _is_header_map(value: dict[str, Any], parent: str) -> bool:
    by_name = _HEADER_PARENTS.get(parent)
    if by_name is None:
        lowered = parent.lower()
        by_name = "header" in lowered or lowered in ("metadata", "reqheaders")
        if len(_HEADER_PARENTS) < 4096:  # the same few names in every interaction
            _HEADER_PARENTS[parent] = by_name
    if by_name:
        return True
    if len(value) < 2:
        return False
    if len(value) > 16:
        return sum(map(_COMMON_HEADERS.__contains__, map(str.lower, map(str, value)))) >= 2
    names = tuple(value)  # the objects of one recording repeat a few shapes
    known = _HEADER_MAP_KEYS.get(names)
    if known is None:
        known = sum(map(_COMMON_HEADERS.__contains__, map(str.lower, map(str, value)))) >= 2
        if len(_HEADER_MAP_KEYS) < 4096:
            _HEADER_MAP_KEYS[names] = known
    return known


def _flat_pairs(value: list[Any]) -> bool:
    return (len(value) >= 2 and len(value) % 2 == 0
            and all(isinstance(value[i], str) and _HEADER_NAME.match(value[i])
                    for i in range(0, len(value), 2))
            and all(isinstance(value[i], str) for i in range(1, len(value), 2)))


_HEADER_NAMES: dict[str, bool] = {}  # member name -> shaped like a header name


def _header_name(key: str) -> bool:
    known = _HEADER_NAMES.get(key)
    if known is None:
        known = _HEADER_NAME.match(key) is not None
        if len(_HEADER_NAMES) < 4096:  # names repeat in every interaction
            _HEADER_NAMES[key] = known
    return known


def _token(key: str) -> str:
    """A member name as a JSON pointer token (RFC 6901 escaping)."""
    return key if "~" not in key and "/" not in key else key.replace("~", "~0").replace("/", "~1")


def _generic_sites(document: JSONValue) -> Iterator[tuple[str, str, str]]:
    # Only containers go on the stack, and a pointer is built only for what is kept:
    # most members of a recording are scalars that hold no header.
    stack: list[tuple[Any, str, str, int]] = [(document, "", "", 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, pointer, parent, depth = pop()
        if depth > MAX_NESTING:
            continue
        if isinstance(node, dict):
            header_map_here = _is_header_map(node, parent)
            for key, value in node.items():
                if header_map_here and isinstance(key, str) and _header_name(key):
                    if isinstance(value, str):
                        yield key, value, f"{pointer}/{_token(key)}"
                        continue
                    if isinstance(value, list):
                        for item in value:
                            if not isinstance(item, str):
                                break
                        else:
                            child = f"{pointer}/{_token(key)}"
                            for index, item in enumerate(value):
                                yield key, item, f"{child}/{index}"
                            continue
                if isinstance(value, (dict, list)):
                    child = f"{pointer}/{key}" if type(key) is str and "~" not in key \
                        and "/" not in key else pointer_join(pointer, key)
                    push((value, child, str(key), depth + 1))
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
                push((item, f"{pointer}/{index}", parent, depth + 1))


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


# --------------------------------------------------------------------------- streams

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


def stream_kind(body: JSONValue, content_type: str = "") -> str | None:
    """The kind of stream a body is (`sse`, `ndjson`, `eventstream`), by its content type
    or, for SSE, its shape; None when it is not a stream."""
    ctype = content_type.lower()
    for marker, kind in _STREAM_TYPES:
        if marker in ctype:
            return kind if isinstance(body, str) or kind == "eventstream" else None
    if isinstance(body, str) and _SSE_SHAPE.match(body) and "\ndata:" in "\n" + body:
        return "sse"
    return None


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
    """A streamed body split into its events, or None when it is not a stream (or its
    frames do not decode). An event-stream body may be given as its bytes or as base64."""
    kind = stream_kind(body, content_type)
    if kind is None:
        return None
    if kind == "eventstream":
        raw: bytes | None = bytes(body) if isinstance(body, (bytes, bytearray)) else None
        if isinstance(body, str):
            try:
                raw = base64.b64decode("".join(body.split()), validate=True)
            except (binascii.Error, ValueError):
                raw = None
        if raw is None:
            return None
        frames = _frames(raw)
        return None if frames is None else BodyStream(kind, pointer, raw, frames)
    assert isinstance(body, str)
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
    changed = [(event, new) for event, new in zip(stream.events, values, strict=True)
               if new != event.value]
    if stream.kind == "eventstream":
        if not changed:
            return stream.body
        assert isinstance(stream.body, bytes)
        replaced = {event.index: new for event, new in changed}
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
    replaced_text = {event.index: new for event, new in changed}
    if framing is None and not replaced_text:
        return text
    pieces: list[str] = []
    at = 0
    for event in stream.events:
        gap = text[at:event.start]
        pieces.append(framing(gap) if framing is not None and gap else gap)
        piece = text[event.start:event.end]
        if event.index in replaced_text:
            new = replaced_text[event.index]
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


# A JSON string token: nothing outside a string holds a quote, so a scan from the start
# meets exactly the string tokens of a JSON text, in order.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(?P<key>\s*:)?', re.DOTALL)


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
    strings = [m for m in _JSON_STRING.finditer(payload) if m.group("key") is None]
    olds = [(b, a) for b, a in zip(before, after, strict=True) if isinstance(b, str)]
    if len(strings) != len(olds):
        return None
    pieces: list[str] = []
    at = 0
    for match, (was, now) in zip(strings, olds, strict=True):
        if was == now or not isinstance(was, str):
            continue
        token = match.group(0)
        try:
            if json.loads(token) != was:
                return None
        except ValueError:
            return None
        pieces.append(payload[at:match.start()])
        # a token that escaped its non-ASCII text (`\u00e9`) is written the same way
        pieces.append(json.dumps(now, ensure_ascii=token.isascii() and not was.isascii()))
        at = match.end()
    pieces.append(payload[at:])
    patched = "".join(pieces)
    try:
        if json.loads(patched) != new:
            return None
    except ValueError:
        return None
    return patched
