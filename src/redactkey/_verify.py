"""Verify: compare a live answer with its recording by meaning, not by bytes.

A provider's answer is never the same twice: ids, timestamps, token counts and the
wording of a reply change on every call. What a test relies on is the *shape*: the
status, which members exist and their JSON types, which tool the model chose and
with which argument names, whether a structured answer still fits its schema, the
kinds of events a stream sends. That is what is compared:

- every JSON value: the same type (integer and float are both "number"); objects
  with the same members; arrays of the same length;
- numbers and booleans: the same value (numbers within a tolerance);
- strings: the same type only, except at pointers whose meaning lives in the
  value (a finish reason, a tool name, an object type), which compare exactly;
- pointers ignored by `VerifyRules.ignore` (RFC 6901, ``*`` matches one token)
  are skipped with everything under them.

Presets per provider answer (chosen by the answer's own shape, so a local fake
provider is compared like the real one) ignore what always changes (`id`,
`created`, `system_fingerprint`, usage counts) and pin what carries meaning. A
stream is folded into one answer first (its text and tool-call arguments joined),
so chunk boundaries never matter; the sequence of its event types is compared
with repeats collapsed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._canonical import pointer_join

__all__ = ["Difference", "VerifyRules", "compare_answers", "compare_streams"]

HTTP_KIND: Final = "http"


@dataclass(frozen=True)
class Difference:
    """One difference in meaning: where (a JSON pointer), what, and both sides' values."""

    pointer: str
    what: str
    recorded: Any
    live: Any


def _tokens(pointer: str) -> tuple[str, ...]:
    if pointer in ("", "/"):
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer (RFC 6901); start it with '/'")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


class _Patterns:
    """JSON pointer patterns in which a ``*`` token matches any one token."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._patterns = tuple(_tokens(p) for p in patterns)

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def covers(self, tokens: tuple[str, ...]) -> bool:
        """True when a pattern matches `tokens` or one of its ancestors."""
        return any(
            len(p) <= len(tokens)
            and all(a in ("*", b) for a, b in zip(p, tokens[: len(p)], strict=True))
            for p in self._patterns
        )

    def matches(self, tokens: tuple[str, ...]) -> bool:
        """True when a pattern matches `tokens` exactly."""
        return any(
            len(p) == len(tokens) and all(a in ("*", b) for a, b in zip(p, tokens, strict=True))
            for p in self._patterns
        )


@dataclass(frozen=True)
class _Preset:
    name: str
    ignore: tuple[str, ...] = ()
    exact: tuple[str, ...] = ()
    # JSON text whose parsed structure is compared (tool arguments, structured content)
    json_text: tuple[str, ...] = ()
    # subtrees whose member names and types count but not their values (tool arguments)
    keys_only: tuple[str, ...] = ()


_OPENAI_CHAT = _Preset(
    "openai-chat",
    ignore=("/id", "/created", "/system_fingerprint", "/usage", "/service_tier",
            "/choices/*/logprobs", "/choices/*/message/tool_calls/*/id", "/model"),
    exact=("/object", "/choices/*/finish_reason", "/choices/*/message/role",
           "/choices/*/message/tool_calls/*/type",
           "/choices/*/message/tool_calls/*/function/name"),
    json_text=("/choices/*/message/tool_calls/*/function/arguments",
               "/choices/*/message/content"),
    keys_only=("/choices/*/message/tool_calls/*/function/arguments",
               "/choices/*/message/content"),
)
_OPENAI_RESPONSES = _Preset(
    "openai-responses",
    ignore=("/id", "/created_at", "/usage", "/output/*/id", "/output/*/call_id",
            "/output/*/content/*/annotations", "/output/*/content/*/logprobs", "/model",
            "/service_tier", "/completed_at"),
    exact=("/object", "/status", "/output/*/type", "/output/*/role", "/output/*/name",
           "/output/*/status", "/output/*/content/*/type"),
    json_text=("/output/*/arguments", "/output/*/content/*/text"),
    keys_only=("/output/*/arguments", "/output/*/content/*/text"),
)
_ANTHROPIC = _Preset(
    "anthropic-messages",
    ignore=("/id", "/usage", "/content/*/id", "/model", "/stop_sequence"),
    exact=("/type", "/role", "/stop_reason", "/content/*/type", "/content/*/name"),
    json_text=("/content/*/text",),
    keys_only=("/content/*/input", "/content/*/text"),
)
_GENERIC = _Preset("json")


def _preset_for(answer: Any) -> _Preset:
    if isinstance(answer, Mapping):
        obj = answer.get("object")
        if obj in ("chat.completion", "chat.completion.chunk"):
            return _OPENAI_CHAT
        if obj == "response":
            return _OPENAI_RESPONSES
        if answer.get("type") == "message" and answer.get("role") == "assistant":
            return _ANTHROPIC
    return _GENERIC


class VerifyRules:
    """How verify compares: pointers to ignore or pin, number tolerance, provider presets.

    `ignore` and `exact` are JSON pointers (RFC 6901) into the answer (for HTTP calls,
    into the response body), where ``*`` matches any one token: ``/choices/*/message``.
    An ignored pointer skips its whole subtree; an `exact` one compares a string's
    value, not only its type. Numbers match when `math.isclose(recorded, live,
    rel_tol=rel_tol, abs_tol=abs_tol)`. `presets=False` turns the per-provider
    defaults off.
    """

    def __init__(
        self,
        *,
        ignore: Iterable[str] = (),
        exact: Iterable[str] = (),
        rel_tol: float = 1e-6,
        abs_tol: float = 1e-9,
        presets: bool = True,
    ) -> None:
        self.ignore = tuple(ignore)
        self.exact = tuple(exact)
        self._ignore = _Patterns(self.ignore)
        self._exact = _Patterns(self.exact)
        if rel_tol < 0 or abs_tol < 0:
            raise ValueError("rel_tol and abs_tol must not be negative")
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol
        self.presets = presets

    def __repr__(self) -> str:
        return (f"VerifyRules(ignore={list(self.ignore)!r}, exact={list(self.exact)!r}, "
                f"rel_tol={self.rel_tol!r}, abs_tol={self.abs_tol!r}, presets={self.presets!r})")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


class _Comparer:
    def __init__(self, rules: VerifyRules, preset: _Preset, base: str) -> None:
        self.rules = rules
        self.preset = preset if rules.presets else _GENERIC
        self.base = base  # where the compared document sits (e.g. "/json" in an HTTP answer)
        self._ignore = _Patterns(self.preset.ignore)
        self._exact = _Patterns(self.preset.exact)
        self._json_text = _Patterns(self.preset.json_text)
        self._keys_only = _Patterns(self.preset.keys_only)
        self.out: list[Difference] = []

    def _add(self, tokens: tuple[str, ...], what: str, recorded: Any, live: Any) -> None:
        pointer = self.base
        for token in tokens:
            pointer = pointer_join(pointer, token)
        self.out.append(Difference(pointer, what, recorded, live))

    def compare(self, recorded: Any, live: Any, tokens: tuple[str, ...] = (),
                *, values: bool = True) -> None:
        if self.rules._ignore.covers(tokens) or self._ignore.covers(tokens):
            return
        if values and self._keys_only.covers(tokens):
            values = False
        if (isinstance(recorded, str) and isinstance(live, str)
                and self._json_text.matches(tokens)):
            parsed = _parsed_json(recorded)
            if parsed is not None:
                live_parsed = _parsed_json(live)
                if live_parsed is None:
                    self._add(tokens, "no longer JSON text", recorded, live)
                else:
                    self.compare(parsed[0], live_parsed[0], tokens, values=values)
                return
        kind, live_kind = _json_type(recorded), _json_type(live)
        if kind != live_kind:
            self._add(tokens, f"type {kind} -> {live_kind}", recorded, live)
            return
        if kind == "object":
            for name in sorted(set(recorded) | set(live)):
                child = (*tokens, name)
                if self.rules._ignore.covers(child) or self._ignore.covers(child):
                    continue
                if name not in live:
                    self._add(child, "member removed", recorded[name], None)
                elif name not in recorded:
                    self._add(child, "member added", None, live[name])
                else:
                    self.compare(recorded[name], live[name], child, values=values)
        elif kind == "array":
            if len(recorded) != len(live):
                self._add(tokens, f"length {len(recorded)} -> {len(live)}",
                          len(recorded), len(live))
            common = min(len(recorded), len(live))
            for index, (old, new) in enumerate(zip(recorded[:common], live[:common],
                                                   strict=True)):
                self.compare(old, new, (*tokens, str(index)), values=values)
        elif kind == "number":
            if values and not math.isclose(recorded, live, rel_tol=self.rules.rel_tol,
                                           abs_tol=self.rules.abs_tol):
                self._add(tokens, "value", recorded, live)
        elif kind == "boolean":
            if values and recorded != live:
                self._add(tokens, "value", recorded, live)
        elif kind == "string" and recorded != live and (
                self._exact.matches(tokens) or self.rules._exact.matches(tokens)):
            self._add(tokens, "value", recorded, live)


def _parsed_json(text: str) -> tuple[Any] | None:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return (json.loads(stripped),)
    except ValueError:
        return None


def _compare_json(recorded: Any, live: Any, rules: VerifyRules, base: str = "") -> list[Difference]:
    comparer = _Comparer(rules, _preset_for(recorded), base)
    comparer.compare(recorded, live)
    return comparer.out


def _mime(headers: Any) -> str:
    if not isinstance(headers, Mapping):
        return ""
    return str(headers.get("content-type", "")).split(";", 1)[0].strip().lower()


def _compare_head(recorded: Any, live: Any) -> list[Difference]:
    out: list[Difference] = []
    if not isinstance(recorded, Mapping) or not isinstance(live, Mapping):
        return [Difference("", "not an HTTP response document", recorded, live)]
    if recorded.get("status") != live.get("status"):
        out.append(Difference("/status", "value", recorded.get("status"), live.get("status")))
    old, new = _mime(recorded.get("headers")), _mime(live.get("headers"))
    if old != new:
        out.append(Difference("/headers/content-type", "value", old, new))
    return out


_BODY_FIELDS: Final = ("json", "text", "base64", "events")


def _body_field(document: Mapping[str, Any]) -> str | None:
    return next((name for name in _BODY_FIELDS if name in document), None)


def _compare_http(recorded: Any, live: Any, rules: VerifyRules) -> list[Difference]:
    out = _compare_head(recorded, live)
    if any(d.pointer == "/status" for d in out) or not isinstance(recorded, Mapping):
        return out
    old_field, new_field = _body_field(recorded), _body_field(live)
    if old_field != new_field:
        out.append(Difference("/" + (old_field or new_field or ""), "body kind "
                              f"{old_field or 'empty'} -> {new_field or 'empty'}", None, None))
        return out
    if old_field == "json":
        out.extend(_compare_json(recorded["json"], live["json"], rules, "/json"))
    elif old_field == "events":
        out.extend(_compare_events(recorded["events"], live["events"], rules, "/events"))
    return out


def compare_answers(kind: str, recorded: Any, live: Any, rules: VerifyRules) -> list[Difference]:
    """Differences in meaning between a recorded answer and a live one (both redacted).

    For kind "http" both are response documents (status, headers, body); otherwise
    they are the answers themselves.
    """
    if kind == HTTP_KIND:
        return _compare_http(recorded, live, rules)
    return _compare_json(recorded, live, rules)


def compare_streams(
    kind: str, recorded: Sequence[Any], live: Sequence[Any], rules: VerifyRules
) -> list[Difference]:
    """Differences in meaning between two recorded streams, whatever their chunk boundaries."""
    if kind == HTTP_KIND:
        if not recorded or not live:
            return [Difference("", "stream length", len(recorded), len(live))]
        out = _compare_head(recorded[0], live[0])
        if any(d.pointer == "/status" for d in out):
            return out
        head = recorded[0] if isinstance(recorded[0], Mapping) else {}
        if _mime(head.get("headers")) == "text/event-stream":
            out.extend(_compare_events(list(recorded[1:]), list(live[1:]), rules, "/events"))
        else:
            out.extend(_compare_http({**head, **_joined_body(recorded[1:])},
                                     {**head, **_joined_body(live[1:])}, rules))
        return out
    return _compare_chunks(list(recorded), list(live), rules)


def _joined_body(chunks: Sequence[Any]) -> dict[str, Any]:
    texts = []
    for chunk in chunks:
        if isinstance(chunk, Mapping):
            if "json" in chunk:
                texts.append(json.dumps(chunk["json"]))
            elif "text" in chunk:
                texts.append(str(chunk["text"]))
    text = "".join(texts)
    if not text:
        return {}
    parsed = _parsed_json(text)
    return {"json": parsed[0]} if parsed is not None else {"text": text}


# -- streams ---------------------------------------------------------------------------


def _event_type(event: Any) -> str:
    if not isinstance(event, Mapping):
        return _json_type(event)
    data = event.get("json")
    named = event.get("event")
    if isinstance(data, Mapping):
        inner = data.get("type") or data.get("object")
        if isinstance(inner, str):
            return f"{named}:{inner}" if isinstance(named, str) and named != inner else inner
    if isinstance(named, str):
        return named
    if "data" in event:
        return "data:[DONE]" if event.get("data") == "[DONE]" else "data"
    return "message"


def _collapsed(types: Iterable[str]) -> list[str]:
    out: list[str] = []
    for name in types:
        if not out or out[-1] != name:
            out.append(name)
    return out


def _compare_events(recorded: list[Any], live: list[Any], rules: VerifyRules,
                    base: str) -> list[Difference]:
    out: list[Difference] = []
    old_types = _collapsed(_event_type(e) for e in recorded)
    new_types = _collapsed(_event_type(e) for e in live)
    if old_types != new_types:
        out.append(Difference(base, "event types", old_types, new_types))
    old_data = [e["json"] for e in recorded if isinstance(e, Mapping) and "json" in e]
    new_data = [e["json"] for e in live if isinstance(e, Mapping) and "json" in e]
    if old_data or new_data:
        out.extend(_compare_chunks(old_data, new_data, rules, base, types_done=True))
    else:
        old_text = "".join(str(e.get("data", "")) for e in recorded if isinstance(e, Mapping))
        new_text = "".join(str(e.get("data", "")) for e in live if isinstance(e, Mapping))
        old_json, new_json = _parsed_json(old_text), _parsed_json(new_text)
        if old_json is not None:
            if new_json is None:
                out.append(Difference(base, "joined data no longer JSON", old_text, new_text))
            else:
                out.extend(_compare_json(old_json[0], new_json[0], rules, base + "/*"))
    return out


def _compare_chunks(recorded: list[Any], live: list[Any], rules: VerifyRules,
                    base: str = "", *, types_done: bool = False) -> list[Difference]:
    folded_old, folded_new = _fold(recorded), _fold(live)
    if folded_old is not None and folded_new is not None:
        return _compare_json(folded_old, folded_new, rules, base + "/*")
    if all(isinstance(c, str) for c in recorded) and all(isinstance(c, str) for c in live):
        old_json, new_json = _parsed_json("".join(recorded)), _parsed_json("".join(live))
        if old_json is None:
            return []  # joined free text: its type is all that counts
        if new_json is None:
            return [Difference(base, "joined text no longer JSON", "".join(recorded),
                               "".join(live))]
        return _compare_json(old_json[0], new_json[0], rules, base + "/*")
    out: list[Difference] = []
    if not types_done:
        old_types = _collapsed(_event_type(c) for c in recorded)
        new_types = _collapsed(_event_type(c) for c in live)
        if old_types != new_types:
            out.append(Difference(base, "chunk types", old_types, new_types))
    old_shape, new_shape = _shape(recorded, rules), _shape(live, rules)
    for pointer in sorted(set(old_shape) | set(new_shape)):
        old, new = old_shape.get(pointer), new_shape.get(pointer)
        if old != new:
            shown = base + "/*" + pointer
            if new is None:
                out.append(Difference(shown, "member removed", sorted(old or ()), None))
            elif old is None:
                out.append(Difference(shown, "member added", None, sorted(new)))
            else:
                out.append(Difference(shown, f"type {'|'.join(sorted(old))} -> "
                                      f"{'|'.join(sorted(new))}", None, None))
    return out


def _shape(chunks: list[Any], rules: VerifyRules) -> dict[str, set[str]]:
    """Every (pointer with array indexes as *, JSON type) that occurs in any chunk."""
    ignore = rules._ignore
    preset = _Patterns(_preset_for(chunks[0] if chunks else None).ignore) if rules.presets \
        else _Patterns(())
    shape: dict[str, set[str]] = {}

    def walk(value: Any, tokens: tuple[str, ...]) -> None:
        if ignore.covers(tokens) or preset.covers(tokens):
            return
        pointer = "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)
        shape.setdefault(pointer, set()).add(_json_type(value))
        if isinstance(value, Mapping):
            for name, item in value.items():
                walk(item, (*tokens, str(name)))
        elif isinstance(value, list):
            for item in value:
                walk(item, (*tokens, "*"))

    for chunk in chunks:
        walk(chunk, ())
    return shape


def _fold(chunks: list[Any]) -> dict[str, Any] | None:
    """A provider stream folded into the answer it spells out, or None when it is not one."""
    dicts = [c for c in chunks if isinstance(c, Mapping)]
    if not dicts or len(dicts) != len(chunks):
        return None
    if all(c.get("object") == "chat.completion.chunk" for c in dicts):
        return _fold_chat(dicts)
    completed = [c for c in dicts if c.get("type") == "response.completed"]
    if completed and isinstance(completed[-1].get("response"), Mapping):
        return dict(completed[-1]["response"])
    if dicts[0].get("type") == "message_start":
        return _fold_anthropic(dicts)
    return None


def _fold_chat(chunks: list[Mapping[str, Any]]) -> dict[str, Any]:
    choices: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping):
                continue
            index = choice.get("index", 0)
            slot = choices.setdefault(index if isinstance(index, int) else 0,
                                      {"message": {}, "finish_reason": None})
            delta = choice.get("delta") or {}
            message = slot["message"]
            if isinstance(delta, Mapping):
                if "role" in delta:
                    message["role"] = delta["role"]
                if isinstance(delta.get("content"), str):
                    message["content"] = message.get("content", "") + delta["content"]
                for call in delta.get("tool_calls") or []:
                    if not isinstance(call, Mapping):
                        continue
                    calls = message.setdefault("tool_calls", {})
                    entry = calls.setdefault(call.get("index", 0),
                                             {"type": None, "function": {"name": "",
                                                                         "arguments": ""}})
                    if call.get("type"):
                        entry["type"] = call["type"]
                    function = call.get("function") or {}
                    if isinstance(function, Mapping):
                        if isinstance(function.get("name"), str):
                            entry["function"]["name"] += function["name"]
                        if isinstance(function.get("arguments"), str):
                            entry["function"]["arguments"] += function["arguments"]
            if choice.get("finish_reason") is not None:
                slot["finish_reason"] = choice["finish_reason"]
    listed = []
    for index in sorted(choices):
        slot = choices[index]
        message = slot["message"]
        if "tool_calls" in message:
            calls = message["tool_calls"]
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        listed.append({"index": index, **slot})
    return {"object": "chat.completion", "choices": listed}


def _fold_anthropic(chunks: list[Mapping[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "message", "role": "assistant", "content": [],
                               "stop_reason": None}
    partial: dict[int, str] = {}
    for chunk in chunks:
        kind = chunk.get("type")
        if kind == "content_block_start" and isinstance(chunk.get("content_block"), Mapping):
            block = dict(chunk["content_block"])
            message["content"].append(block)
            if block.get("type") == "tool_use":
                block["input"] = {}
                partial[len(message["content"]) - 1] = ""
        elif kind == "content_block_delta" and isinstance(chunk.get("delta"), Mapping):
            index = chunk.get("index", len(message["content"]) - 1)
            delta = chunk["delta"]
            if not isinstance(index, int) or not 0 <= index < len(message["content"]):
                continue
            block = message["content"][index]
            if isinstance(delta.get("text"), str):
                block["text"] = block.get("text", "") + delta["text"]
            if isinstance(delta.get("partial_json"), str):
                partial[index] = partial.get(index, "") + delta["partial_json"]
        elif (kind == "message_delta" and isinstance(chunk.get("delta"), Mapping)
              and "stop_reason" in chunk["delta"]):
            message["stop_reason"] = chunk["delta"]["stop_reason"]
    for index, text in partial.items():
        parsed = _parsed_json(text) if text else ({},)
        message["content"][index]["input"] = parsed[0] if parsed is not None else text
    return message
