"""boto placebo responses: one JSON file per answer, `{"status_code", "data"}`, named
`<service>.<Operation>_<n>.json`. What is kept is botocore's parsed answer, not the
HTTP exchange: the file is read for its secrets, and `redact migrate` refuses it."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue
from .._cassettes import Interaction, Message
from ._common import decode_tree

__all__ = ["NOT_HTTP", "detect", "read"]

NOT_HTTP = ("a boto placebo response: botocore's parsed answer without its HTTP request; "
            "record the call again through `use_botocore` (docs/http-clients.md)")


def detect(raw: Any, is_json: bool) -> str | None:
    if isinstance(raw, dict) and set(raw) == {"status_code", "data"} \
            and isinstance(raw["status_code"], int):
        return "placebo"
    return None


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    document: Any = decode_tree(raw)
    answer = Message("", {}, document["data"], "/data")
    return document, [Interaction(0, "", None, None, Message("", {}, None, None),
                                  document["status_code"], answer)]
