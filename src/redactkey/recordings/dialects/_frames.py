"""pydantic-ai's websocket and gRPC cassettes: frames, not HTTP exchanges (read for
their secrets; `redact migrate` refuses them)."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, Message
from ._common import decode_tree, first_dict

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    first = first_dict(raw.get("interactions") if isinstance(raw, dict) else None)
    if "request_sample" in first or "response_sample" in first:
        return "grpc"
    if "direction" in first and "data" in first:
        return "websocket"
    return None


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    decoded: list[Any] = []
    calls: list[Interaction] = []
    for index, item in enumerate(raw["interactions"]):
        value = decode_tree(item)
        decoded.append(value)
        if not isinstance(value, dict):
            continue
        pointer = pointer_join("/interactions", index)
        if "request_sample" in value or "response_sample" in value:
            sides = []
            for side in ("request_sample", "response_sample"):
                sample = value.get(side)
                sides.append(Message(pointer_join(pointer, side), {},
                                     sample.get("json") if isinstance(sample, dict) else sample,
                                     pointer_join(pointer, side)))
            calls.append(Interaction(index, pointer, "GRPC", None, sides[0], None, sides[1]))
        elif "direction" in value:
            # one websocket message per interaction; what was sent is the "request"
            message = Message(pointer, {}, value.get("data"), pointer_join(pointer, "data"))
            sent = value.get("direction") == "sent"
            calls.append(Interaction(
                index, pointer, "WS", None, message if sent else Message(pointer, {}, None, None),
                None, None if sent else message))
    return {k: (decoded if k == "interactions" else decode_tree(v)) for k, v in raw.items()}, calls
