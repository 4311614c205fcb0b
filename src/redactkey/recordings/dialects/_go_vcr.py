"""go-vcr cassettes (v1 to v4): YAML `interactions:` whose requests have a `url`."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue
from .._cassettes import Interaction
from ._common import decode_tree, first_dict, http_interactions

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    items = raw.get("interactions") if isinstance(raw, dict) else None
    request = first_dict(items).get("request")
    if isinstance(request, dict) and "url" in request and "uri" not in request \
            and "body_type" not in request and not isinstance(request.get("body"), dict):
        return "go-vcr"
    return None


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    items, calls = http_interactions(raw["interactions"], "/interactions")
    return {k: (items if k == "interactions" else decode_tree(v)) for k, v in raw.items()}, calls
