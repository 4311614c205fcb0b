"""Files of one call, a `{request, response}` object: `dd-test-agent` when it holds
only a request of `method`, `url`, `headers`, `body` and a response of `headers`, `body`
and a vcrpy-like `status: {code, message}` (dd-trace's test agent); `http-exchange` for
any other JSON object with `request.url` and a `response` object."""

from __future__ import annotations

from typing import Any

from ...keys._canonical import JSONValue
from .._cassettes import Interaction
from ._common import call, decode_tree, read_message, status_of

__all__ = ["detect", "read"]


def detect(raw: Any, is_json: bool) -> str | None:
    request = raw.get("request") if isinstance(raw, dict) else None
    response = raw.get("response") if isinstance(raw, dict) else None
    if not (isinstance(request, dict) and isinstance(response, dict) and "url" in request
            and "version" not in raw):
        return None
    if (set(raw) == {"request", "response"}
            and set(request) <= {"method", "url", "headers", "body"}
            and set(response) <= {"status", "headers", "body"}
            and isinstance(response.get("status"), dict) and "code" in response["status"]):
        return "dd-test-agent"
    return "http-exchange"


def read(raw: dict[str, Any]) -> tuple[JSONValue, list[Interaction]]:
    document: dict[str, Any] = {k: decode_tree(v) for k, v in raw.items()}
    request, document["request"] = read_message(raw["request"], "/request")
    response, document["response"] = read_message(raw["response"], "/response")
    return document, [call(0, "", raw["request"].get("method"), raw["request"].get("url"),
                           request, status_of(raw["response"]), response)]
