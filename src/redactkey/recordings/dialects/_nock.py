"""nock recordings (`nock.back`): a JSON list of `{scope, method, path, ...}`; header
maps or flat `rawHeaders` arrays; compressed response bodies as lists of hex chunks."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, Message
from ._common import call, decode_body_bytes, decode_tree, first_dict, maybe_json, pair_headers

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    first = first_dict(raw)
    if "scope" in first and ("path" in first or "method" in first):
        return "nock"
    return None


def _response(value: Any, encoding: str) -> JSONValue:
    """nock's response: JSON, text, or (compressed bodies) a list of hex chunks."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        try:
            raw = bytes.fromhex("".join(value))
        except ValueError:
            return value
        text = decode_body_bytes(raw, encoding)
        return maybe_json(text) if text is not None else value
    return maybe_json(value) if isinstance(value, str) else value


def read(raw: list[Any]) -> tuple[JSONValue, list[Interaction]]:
    document: Any = decode_tree(raw)
    calls: list[Interaction] = []
    for index, item in enumerate(document):
        if not isinstance(item, dict):
            continue
        pointer = pointer_join("", index)
        req_headers, req_ptrs = pair_headers(item.get("reqheaders"),
                                             pointer_join(pointer, "reqheaders"))
        resp_key = "rawHeaders" if "rawHeaders" in item else "headers"
        resp_headers, resp_ptrs = pair_headers(item.get(resp_key),
                                               pointer_join(pointer, resp_key))
        encoding = next((v[0] for k, v in resp_headers.items()
                         if k.lower() == "content-encoding" and v), "")
        if "response" in item:
            item["response"] = _response(item["response"], encoding)
        if isinstance(item.get("body"), str):
            item["body"] = maybe_json(item["body"])
        scope, path = item.get("scope"), item.get("path")
        url = f"{scope}{path}" if isinstance(scope, str) and isinstance(path, str) else None
        calls.append(call(
            index, pointer, item.get("method"), url,
            Message(pointer, req_headers, item.get("body"), pointer_join(pointer, "body"),
                    req_ptrs),
            item.get("status"),
            Message(pointer, resp_headers, item.get("response"),
                    pointer_join(pointer, "response"), resp_ptrs)))
    return document, calls
