"""What the readers of several dialects share: the VCR-family message (a header map and
a body that may be `{string | base64_string | data}`, `!binary`, gzip'd), header lists
of other shapes, and bodies held as bytes.

A reader returns `(document, interactions)`: the document keeps the file's structure
(so JSON pointers map to its lines) with bodies decoded in place; each `Interaction`
points into it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from ...redact._redactor import nesting_exceeds
from .._cassettes import Bytes, Interaction, Message, note_problem
from .._limits import OverCap, bounded_decompress

__all__ = ["Binary", "body_of_bytes", "call", "decode_body_bytes", "decode_tree", "first_dict",
           "http_interactions", "maybe_json", "named_headers", "objects", "pair_headers",
           "read_message", "status_of"]


def decode_body_bytes(raw: bytes, encoding: str = "") -> str | None:
    """Text of a recorded body: gunzip/inflate/unbrotli when compressed (within the shared
    cap), then UTF-8; None if binary or undecodable (noted with `note_problem`)."""
    try:
        data = bounded_decompress(raw, encoding)
    except OverCap as exc:
        note_problem(f"a body {exc.problem}")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def maybe_json(text: str) -> JSONValue:
    """`text` parsed when it is a JSON object or array (within the nesting bound)."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "[") and len(text) < 32 * 1024 * 1024:
        try:
            parsed: JSONValue = json.loads(text)
        except (ValueError, RecursionError):
            return text
        return text if nesting_exceeds(parsed) else parsed
    return text


def decode_tree(value: Any, encoding: str = "") -> JSONValue:
    """Replace binary scalars by their text (or base64 when not text), recursively."""
    if isinstance(value, Bytes):
        text = decode_body_bytes(bytes(value), encoding)
        if text is None:
            return Binary(base64.b64encode(bytes(value)).decode("ascii"))
        return text
    if isinstance(value, dict):
        return {k: decode_tree(v, encoding) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_tree(v, encoding) for v in value]
    return value


class Binary(str):
    """Base64 text standing in a document for body bytes that are not text, so that a
    reader of the document can tell it from a text body."""


def status_of(response: Any) -> int | None:
    """The status code of a response object (`status`, `code` or `status_code`, an int
    or vcrpy's `{code, message}`)."""
    if not isinstance(response, dict):
        return None
    for key in ("status", "code", "status_code"):
        value = response.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, dict) and isinstance(value.get("code"), int):
            return int(value["code"])
    return None


def call(index: int, pointer: str, method: Any, uri: Any, request: Message,
         status: Any, response: Message | None) -> Interaction:
    """An `Interaction`, its method upper-cased, fields of the wrong type left out."""
    return Interaction(index, pointer, method.upper() if isinstance(method, str) else None,
                       uri if isinstance(uri, str) else None, request,
                       status if isinstance(status, int) else None, response)


def objects(items: list[Any], base: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(index, JSON pointer, object) of each object in the list at `base`: a dialect's calls."""
    for index, item in enumerate(items):
        if isinstance(item, dict):
            yield index, pointer_join(base, index), item


def first_dict(items: Any) -> dict[str, Any]:
    """The first object in a list, which tells a dialect by its members; {} if none."""
    if not isinstance(items, list):
        return {}
    return next((item for item in items if isinstance(item, dict)), {})


def body_of_bytes(data: bytes, encoding: str = "") -> JSONValue:
    """A body the client saw as `data`: its text (decompressed by `encoding` or its gzip
    magic), JSON parsed; base64 when it is not text."""
    text = decode_body_bytes(data, encoding)
    return maybe_json(text) if text is not None else Binary(base64.b64encode(data).decode())


def _decode_body(body: Any, encoding: str) -> tuple[JSONValue, str]:
    """(decoded body, pointer suffix of the text) of a VCR-family body: a string, bytes
    (`!binary`), or `{string}`, `{base64_string}` (Betamax: a `string` beside it may be
    empty), cloud-custodian's `{data: <parsed JSON>}`."""
    if isinstance(body, dict):
        encoded = body.get("base64_string")
        names = ("base64_string",) if isinstance(encoded, str) and encoded.strip() else ()
        for name in (*names, "string", "data", "base64_string"):
            if name not in body:
                continue
            inner = body[name]
            if name == "base64_string" and isinstance(inner, str):
                with contextlib.suppress(binascii.Error, ValueError):
                    inner = Bytes(base64.b64decode("".join(inner.split())))
            decoded = decode_tree(inner, encoding)
            return (maybe_json(decoded) if isinstance(decoded, str) else decoded), "/" + name
        return decode_tree(body, encoding), ""
    decoded = decode_tree(body, encoding)
    return (maybe_json(decoded) if isinstance(decoded, str) else decoded), ""


def read_message(raw: Mapping[str, Any], pointer: str) -> tuple[Message, dict[str, JSONValue]]:
    """A VCR-family request or response object: its `Message` and its decoded document."""
    headers_doc = decode_tree(raw.get("headers"))
    headers, pointers = pair_headers(headers_doc if isinstance(headers_doc, dict) else None,
                                     pointer_join(pointer, "headers"))
    encoding = next((",".join(values) for name, values in headers.items()
                     if name.lower() == "content-encoding"), "")
    doc: dict[str, JSONValue] = {}
    body: JSONValue = None
    body_pointer: str | None = None
    for key, value in raw.items():
        if key in ("parsed_body", "json"):  # a body recorded already parsed
            doc[key] = decode_tree(value)
            body, body_pointer = doc[key], pointer_join(pointer, key)
        elif key == "body":
            decoded, suffix = _decode_body(value, encoding)
            if suffix:
                inner = {k: decode_tree(v) for k, v in value.items()}
                inner[suffix[1:]] = decoded
                doc[key] = inner
            else:
                doc[key] = decoded
            if body_pointer is None or decoded not in (None, ""):
                body, body_pointer = decoded, pointer_join(pointer, key) + suffix
        else:
            doc[key] = decode_tree(value)
    return Message(pointer, headers, body, body_pointer, pointers), doc


def http_interactions(items: list[Any], base: str) -> tuple[list[Any], list[Interaction]]:
    """VCR-family interactions (`[{request, response}, ...]` at `base`): their decoded
    documents and calls, the request's `uri` or `url`."""
    decoded_items: list[Any] = []
    calls: list[Interaction] = []
    for index, item in enumerate(items):
        pointer = pointer_join(base, index)
        if not isinstance(item, dict):
            decoded_items.append(decode_tree(item))
            continue
        out = {k: decode_tree(v) for k, v in item.items() if k not in ("request", "response")}
        request = item.get("request")
        response = item.get("response")
        req_msg, req_doc = read_message(request if isinstance(request, dict) else {},
                                        pointer_join(pointer, "request"))
        if "request" in item:
            out["request"] = req_doc if isinstance(request, dict) else decode_tree(request)
        resp_msg: Message | None = None
        if isinstance(response, dict):
            resp_msg, out["response"] = read_message(response, pointer_join(pointer, "response"))
        elif "response" in item:
            out["response"] = decode_tree(response)
        fields = request if isinstance(request, dict) else {}
        uri = fields.get("uri") if "uri" in fields else fields.get("url")
        calls.append(call(index, pointer, fields.get("method"), uri, req_msg,
                          status_of(response), resp_msg))
        decoded_items.append({key: out[key] for key in item if key in out})
    return decoded_items, calls


def named_headers(value: Any, pointer: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Headers held as `[{name, value}, ...]` (HAR): (name -> values, name -> pointers)."""
    headers: dict[str, list[str]] = {}
    pointers: dict[str, list[str]] = {}
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            raw = item.get("value")
            headers.setdefault(item["name"], []).append(
                raw if isinstance(raw, str) else json.dumps(raw))
            pointers.setdefault(item["name"], []).append(
                pointer_join(pointer_join(pointer, index), "value"))
    return headers, pointers


def pair_headers(value: Any, pointer: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Headers held as a flat `[name, value, name, value, ...]` list or as a map of names
    to a value or a list of values: (name -> values, name -> pointers)."""
    headers: dict[str, list[str]] = {}
    pointers: dict[str, list[str]] = {}
    if isinstance(value, list):
        for index in range(0, len(value) - 1, 2):
            name, raw = value[index], value[index + 1]
            if isinstance(name, str):
                headers.setdefault(name, []).append(raw if isinstance(raw, str)
                                                    else json.dumps(raw))
                pointers.setdefault(name, []).append(pointer_join(pointer, index + 1))
    elif isinstance(value, dict):  # (a name with an empty list of values is kept)
        for name, raw in value.items():
            child = pointer_join(pointer, name)
            values, places = headers.setdefault(name, []), pointers.setdefault(name, [])
            for index, item in enumerate(raw if isinstance(raw, list) else [raw]):
                values.append(item if isinstance(item, str) else json.dumps(item))
                places.append(pointer_join(child, index) if isinstance(raw, list) else child)
    return headers, pointers
