"""HAR 1.2 (`log.entries`): Polly.js recordings (JSON or YAML), browser exports; the
bodies read are listed in the formats table of docs/cli/audit.md."""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, Message
from ._common import body_of_bytes, call, decode_tree, maybe_json, named_headers, objects

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    log = raw.get("log") if isinstance(raw, dict) else None
    return "har" if isinstance(log, dict) and isinstance(log.get("entries"), list) else None


def _chunks(text: str) -> bytes | None:
    """The bytes of base64 text, or of Polly's JSON array of base64 chunks (each a piece
    of the one gzip'd body, which the `content-encoding` header then opens)."""
    pieces: Any = [text]
    if text.lstrip().startswith("["):
        try:
            pieces = json.loads(text)
        except ValueError:
            return None
        if not isinstance(pieces, list) or not all(isinstance(p, str) for p in pieces):
            return None
    try:
        return b"".join(base64.b64decode("".join(p.split()), validate=True) for p in pieces)
    except (binascii.Error, ValueError):
        return None


def _request(request: dict[str, Any], pointer: str) -> Message:
    headers, pointers = named_headers(request.get("headers"), pointer_join(pointer, "headers"))
    post = request.get("postData")
    at = pointer_join(pointer, "postData")
    if not isinstance(post, dict):
        return Message(pointer, headers, None, None, pointers)
    if isinstance(post.get("text"), str):
        post["text"] = maybe_json(post["text"])
        return Message(pointer, headers, post["text"], pointer_join(at, "text"), pointers)
    if "textJSON" in post:
        return Message(pointer, headers, post["textJSON"], pointer_join(at, "textJSON"),
                       pointers)
    params = post.get("params")
    if isinstance(params, list) and params and "multipart" not in str(post.get("mimeType")):
        form = urllib.parse.urlencode([(str(p.get("name")), str(p.get("value") or ""))
                                       for p in params if isinstance(p, dict)])
        return Message(pointer, headers, form, pointer_join(at, "params"), pointers)
    return Message(pointer, headers, None, None, pointers)


def _response(response: dict[str, Any], pointer: str) -> Message:
    headers, pointers = named_headers(response.get("headers"), pointer_join(pointer, "headers"))
    content = response.get("content")
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return Message(pointer, headers, None, None, pointers)
    text: JSONValue = content["text"]
    if content.get("encoding") == "base64":
        data = _chunks(content["text"])
        encoding = next((v[0] for k, v in headers.items()
                         if k.lower() == "content-encoding" and v), "")
        if data is not None:
            text = body_of_bytes(data, encoding)
    content["text"] = text = maybe_json(text) if isinstance(text, str) else text
    return Message(pointer, headers, text, pointer_join(pointer_join(pointer, "content"),
                                                        "text"), pointers)


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    document: Any = decode_tree(raw)
    calls: list[Interaction] = []
    for index, pointer, entry in objects(document["log"]["entries"], "/log/entries"):
        request: dict[str, Any] = entry["request"] if isinstance(entry.get("request"), dict) \
            else {}
        response = entry.get("response")
        resp_msg = _response(response, pointer_join(pointer, "response")) \
            if isinstance(response, dict) else None
        status = response.get("status") if isinstance(response, dict) else None
        calls.append(call(index, pointer, request.get("method"), request.get("url"),
                          _request(request, pointer_join(pointer, "request")),
                          status, resp_msg))
    return document, calls
