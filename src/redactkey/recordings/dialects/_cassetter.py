"""cassetter recordings: `version: 1` with bodies as `{type, content}` (YAML) or as
`body_type` / `body_content` (TOML)."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, Message
from ._common import decode_tree, first_dict, http_interactions, maybe_json

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    if not isinstance(raw, dict):
        return None
    if "grpc_interactions" in raw or "ws_interactions" in raw:
        return "cassetter"
    request = first_dict(raw.get("interactions")).get("request")
    if isinstance(request, dict) and ("body_type" in request or (
            isinstance(request.get("body"), dict) and "type" in request["body"])):
        return "cassetter"
    return None


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    items: list[Any] = raw["interactions"] if isinstance(raw.get("interactions"), list) else []
    decoded, calls = http_interactions(items, "/interactions")
    for at, found in enumerate(calls):
        item = decoded[found.index]
        request, response = (item.get(side) if isinstance(item, dict) else None
                             for side in ("request", "response"))
        calls[at] = Interaction(
            found.index, found.pointer, found.method, found.uri, _body(found.request, request),
            found.status, None if found.response is None else _body(found.response, response))
    document = {k: (decoded if k == "interactions" else decode_tree(v)) for k, v in raw.items()}
    return document, calls


def _body(message: Message, doc: Any) -> Message:
    """A message whose body cassetter keeps as `{type, content}` or `body_content`."""
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
            content = doc["body_content"] = maybe_json(content)
        return Message(message.pointer, message.headers, content,
                       pointer_join(message.pointer, "body_content"), message.header_pointers)
    return message
