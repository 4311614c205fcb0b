"""vcrpy and pytest-recording cassettes, and the Ruby VCR schema they share: `vcrpy`,
`ruby-vcr`, `rvcr-json` (the Rust rVCR crate) and `betamax`, each told and read as the
formats table of docs/cli/audit.md says."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction
from ._common import call, decode_tree, http_interactions, objects, read_message, status_of

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("http_interactions"), list):
        recorded_with = raw.get("recorded_with")
        if is_json and isinstance(recorded_with, str) \
                and recorded_with.lower().startswith("betamax"):
            return "betamax"
        return "rvcr-json" if is_json else "ruby-vcr"
    if isinstance(raw.get("interactions"), list):
        return "vcrpy"
    if isinstance(raw.get("requests"), list) and isinstance(raw.get("responses"), list):
        return "vcrpy"
    return None


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    list_key = "interactions" if "interactions" in raw else "http_interactions"
    if list_key not in raw:
        return _read_split(raw)
    items, calls = http_interactions(raw[list_key], "/" + list_key)
    return {k: (items if k == list_key else decode_tree(v)) for k, v in raw.items()}, calls


def _read_split(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    """vcrpy's `requests:` / `responses:` lists, paired by position."""
    document: dict[str, Any] = {k: decode_tree(v) for k, v in raw.items()}
    calls: list[Interaction] = []
    for side in ("requests", "responses"):
        document[side] = [read_message(item, pointer_join("/" + side, i))[1]
                          if isinstance(item, dict) else decode_tree(item)
                          for i, item in enumerate(raw[side])]
    responses = raw["responses"]
    for index, pointer, request in objects(raw["requests"], "/requests"):
        response = responses[index] if index < len(responses) else None
        resp_msg = read_message(response, pointer_join("/responses", index))[0] \
            if isinstance(response, dict) else None
        calls.append(call(index, pointer, request.get("method"), request.get("uri"),
                          read_message(request, pointer)[0], status_of(response), resp_msg))
    return document, calls
