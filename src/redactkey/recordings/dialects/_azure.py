"""Azure SDK test-proxy recordings (`SessionRecords`): `{"Entries": [{RequestUri,
RequestMethod, RequestHeaders, RequestBody, StatusCode, ResponseHeaders, ResponseBody}],
"Variables"}`, as every Azure SDK and openai-dotnet record them.

A body is read as the test proxy reads it back: `null` is none; under a text content
type (one `Content-Type` that is `text/*`, JSON, XML or a form, or says `charset=utf-8`)
a string is the text, a list of strings its lines joined, anything else the JSON
itself; under any other content type a string is base64 of the bytes.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, Message
from ._common import body_of_bytes, call, decode_tree, first_dict, maybe_json, objects, pair_headers

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    entries = raw.get("Entries") if isinstance(raw, dict) else None
    return "azure-test-proxy" if isinstance(entries, list) and (
        "RequestUri" in first_dict(entries) or not entries) else None


def _is_text(headers: dict[str, list[str]]) -> bool:
    types = [v for k, values in headers.items() if k.lower() == "content-type" for v in values]
    if len(types) != 1:
        return False
    kind = types[0].lower()
    return ("; charset=utf-8" in kind
            or kind.startswith(("text/", "application/json", "application/x-www-form-urlencoded"))
            or kind.endswith(("json", "xml", "-urlencoded")))


def _body(value: Any, headers: dict[str, list[str]]) -> JSONValue:
    if value is None:
        return None
    if _is_text(headers):
        if isinstance(value, list):
            return maybe_json("".join(str(line) for line in value))
        return maybe_json(value) if isinstance(value, str) else value
    if not isinstance(value, str):
        return ""  # the proxy reads an empty body this way
    try:
        return body_of_bytes(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return value


def _message(entry: dict[str, Any], side: str, pointer: str) -> Message:
    headers, pointers = pair_headers(entry.get(side + "Headers"),
                                     pointer_join(pointer, side + "Headers"))
    name = side + "Body"
    body = _body(entry.get(name), headers)
    if name in entry and isinstance(body, str) and not isinstance(entry[name], dict):
        entry[name] = body  # decoded in place (a list of lines as one text, base64 opened)
    return Message(pointer, headers, body, pointer_join(pointer, name) if name in entry
                   else None, pointers)


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    document: Any = decode_tree(raw)
    return document, [call(index, pointer, entry.get("RequestMethod"), entry.get("RequestUri"),
                           _message(entry, "Request", pointer), entry.get("StatusCode"),
                           _message(entry, "Response", pointer))
                      for index, pointer, entry in objects(document["Entries"], "/Entries")]
