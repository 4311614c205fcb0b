"""Answer normalizers: pin or drop the answer fields that differ on every call.

A provider stamps each answer with a fresh id, a creation time and a backend
fingerprint; recorded as they come, re-recording an unchanged call rewrites the file.
An answer normalizer is a pure callable from plain JSON to plain JSON, run on a
recorded answer (and on each recorded chunk of a stream) after redaction and before
it is written. Nothing flows back into requests, so keys never change.

For an HTTP fixture the normalizer sees the response document; `PinFields`,
`DropFields` and `PROVIDER_ANSWERS` act on its JSON body (`json`), or on the answer
itself when it is plain data.

Only fields that no later request repeats are pinned by the preset: a tool call id
or a Responses API `id` (sent back as `previous_response_id`) is left alone, since
a pinned copy would make the next request key differently in replay than it did
when recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._canonical import JSONValue
from ._errors import UsageError

__all__ = [
    "PROVIDER_ANSWERS",
    "AnswerNormalizer",
    "DropFields",
    "PinFields",
    "ProviderAnswers",
    "normalize_answer",
    "pinned",
]

AnswerNormalizer = Callable[[JSONValue], JSONValue]
"""Rewrites a recorded answer or stream chunk before it is written; must be pure."""

# Members of a stored HTTP response document or server-sent event around the body.
_ENVELOPE = frozenset({"status", "headers", "json", "text", "base64", "event", "id", "retry",
                       "data"})
_ID_PREFIX = re.compile(r"^[A-Za-z]+[-_]")


def pinned(value: JSONValue) -> JSONValue:
    """The fixed stand-in for a volatile value: an id keeps its prefix (`chatcmpl-`,
    `msg_`), a number becomes 0, anything else null."""
    if isinstance(value, str):
        prefix = _ID_PREFIX.match(value)
        return (prefix.group(0) if prefix else "") + "pinned"
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return 0
    return None


def _on_body(value: JSONValue, rewrite: Callable[[JSONValue], JSONValue]) -> JSONValue:
    """Apply `rewrite` to the JSON body of a response document or event, else to `value`."""
    if isinstance(value, Mapping) and "json" in value and set(value) <= _ENVELOPE:
        return {**value, "json": rewrite(value["json"])}
    return rewrite(value)


def _tokens(pointer: str) -> list[str]:
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise UsageError(
            f"answer field {pointer!r} is not a JSON pointer such as '/id' or "
            "'/choices/*/index' (* matches one member or index)"
        )
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _rewrite_at(value: JSONValue, tokens: list[str], leaf: Callable[[Any], Any] | None
                ) -> JSONValue:
    """`value` with the members at `tokens` passed through `leaf` (None: removed)."""
    if not tokens:
        return value
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, Mapping):
        names = list(value) if head == "*" else [head] if head in value else []
        out = dict(value)
        for name in names:
            if rest:
                out[name] = _rewrite_at(value[name], rest, leaf)
            elif leaf is None:
                del out[name]
            else:
                out[name] = leaf(value[name])
        return out
    if isinstance(value, list):
        if head == "*":
            indexes = range(len(value))
        elif head.isdigit() and int(head) < len(value):
            indexes = range(int(head), int(head) + 1)
        else:
            return value
        items = list(value)
        for index in sorted(indexes, reverse=True):
            if rest:
                items[index] = _rewrite_at(value[index], rest, leaf)
            elif leaf is None:
                del items[index]
            else:
                items[index] = leaf(value[index])
        return items
    return value


class PinFields:
    """Answer normalizer: replace the values at JSON pointers in the answer body with a
    fixed stand-in (`pinned`): `PinFields("/id", "/created")`. `*` matches one member
    or index."""

    def __init__(self, *pointers: str) -> None:
        self.pointers = tuple(pointers)
        self._tokens = [_tokens(p) for p in pointers]

    def __repr__(self) -> str:
        return f"PinFields(*{list(self.pointers)!r})"

    def __call__(self, value: JSONValue) -> JSONValue:
        def rewrite(body: JSONValue) -> JSONValue:
            for tokens in self._tokens:
                body = _rewrite_at(body, tokens, pinned)
            return body

        return _on_body(value, rewrite)


class DropFields:
    """Answer normalizer: remove the members at JSON pointers in the answer body:
    `DropFields("/usage")`. `*` matches one member or index."""

    def __init__(self, *pointers: str) -> None:
        self.pointers = tuple(pointers)
        self._tokens = [_tokens(p) for p in pointers]

    def __repr__(self) -> str:
        return f"DropFields(*{list(self.pointers)!r})"

    def __call__(self, value: JSONValue) -> JSONValue:
        def rewrite(body: JSONValue) -> JSONValue:
            for tokens in self._tokens:
                body = _rewrite_at(body, tokens, None)
            return body

        return _on_body(value, rewrite)


# OpenAI chat completions (and their stream chunks) and Anthropic messages: the answer's
# own id is never sent back. Responses API ids are (previous_response_id), so they stay.
_OWN_ID_OBJECTS = frozenset({"chat.completion", "chat.completion.chunk", "message"})
_ALWAYS = ("created", "system_fingerprint", "responseId")


class ProviderAnswers:
    """The built-in preset for OpenAI, Anthropic and Gemini answers.

    Pins the answer's own `id` (OpenAI chat completions and chunks, Anthropic messages
    and their `message_start` event), `created`, `system_fingerprint` and Gemini's
    `responseId`. Response headers such as `x-request-id`, `request-id`, `date`,
    `openai-processing-ms` and `cf-ray` never reach a fixture in the first place (the
    transport keeps an allowlist of response headers).
    """

    def __repr__(self) -> str:
        return "PROVIDER_ANSWERS"

    def __call__(self, value: JSONValue) -> JSONValue:
        return _on_body(value, self._body)

    def _body(self, body: JSONValue) -> JSONValue:
        if not isinstance(body, Mapping):
            return body
        out = dict(body)
        kind = body.get("object", body.get("type"))
        if kind in _OWN_ID_OBJECTS and isinstance(body.get("id"), str):
            out["id"] = pinned(body["id"])
        for name in _ALWAYS:
            if name in out:
                out[name] = pinned(out[name])
        message = body.get("message")
        if body.get("type") == "message_start" and isinstance(message, Mapping):
            out["message"] = self._body(message)
        return out


PROVIDER_ANSWERS = ProviderAnswers()
"""The preset instance: `answer_normalizers=[PROVIDER_ANSWERS]`."""

_PRESETS: dict[str, AnswerNormalizer] = {"providers": PROVIDER_ANSWERS}


def preset(name: str) -> AnswerNormalizer:
    """A built-in answer normalizer by its configuration name ("providers")."""
    try:
        return _PRESETS[name]
    except KeyError:
        raise UsageError(
            f"unknown answer preset {name!r}; use one of {sorted(_PRESETS)}"
        ) from None


def normalize_answer(value: JSONValue, normalizers: Iterable[AnswerNormalizer]) -> JSONValue:
    """`value` passed through each normalizer in order."""
    for normalizer in normalizers:
        value = normalizer(value)
    return value
