"""`redact show`: a recording read as the conversation it holds (docs/cli/show.md).

Every file the readers read becomes a list of `Call`s; `view(call)` picks out what a
reviewer reads, and `lines(...)` lays it out one line per line of a message, so that a
line diff of two renderings reads as a change of words.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from .._errors import InputError, RedactkeyError
from ..fixtures._age import FixtureAge, FixtureAges, format_duration
from ..fixtures._format import parse_cassette, parse_fixture
from ..fixtures._verify import _fold
from ..http._documents import is_stream_type, request_document
from ..keys._keys import request_key
from ..recordings._classify import Target, Unreadable, open_target
from ..recordings._readers import Exchange, exchanges, read_recording
from ..redact._redactor import Redactor
from ._inplace import json_container

__all__ = ["Call", "Recorded", "answer_text", "lines", "read_calls", "recording_lines",
           "run_show", "view"]


@dataclass(frozen=True)
class Call:
    """One recorded call in the shape `show` and `diff` read: the request body (a model
    call's request), and the answer or body, or a stream's event payloads."""

    kind: str
    key: str | None
    method: str | None
    url: str | None
    request: Any
    status: int | None = None
    content_type: str = ""
    answer: Any = None
    events: list[Any] | None = None
    error: Any = None
    headers: dict[str, Any] = field(default_factory=dict)  # {"request": …, "response": …}


@dataclass(frozen=True)
class Recorded:
    """A file's calls and the format they were read from."""

    display: str
    format: str
    calls: list[Call]


def read_calls(path: Path, display: str, redactor: Redactor) -> Recorded:
    """The calls a recording holds; `InputError` naming the file when it cannot be read or
    holds none. `redactor` keys the calls of other tools' cassettes (as `migrate` would)."""
    try:
        opened = open_target(Target(path, display))
        recording = read_recording(path, opened.text, suffix=opened.suffix)
        entries: list[Any]
        if recording.format == "fixture":
            entries = [parse_fixture(display, opened.text.encode("utf-8"))]
        elif recording.format == "store":
            entries = list(parse_cassette(display, opened.text.encode("utf-8")).entries)
        else:
            calls = [_exchange_call(call, redactor) for call in exchanges(recording)]
            if not calls:
                raise InputError(f"{display}: holds no recorded call ({recording.format}); "
                                 "give a fixture or a cassette")
            return Recorded(display, recording.format, calls)
    except Unreadable as exc:
        raise InputError(str(exc)) from None
    return Recorded(display, recording.format, [_fixture_call(e.entry_document())
                                                for e in entries])


def _payload(event: Any) -> Any:
    """A stored event's data: `{"json": …}` or `{"data": …}` (SSE), `{"text": …}`."""
    if isinstance(event, Mapping):
        for name in ("json", "data", "text"):
            if name in event:
                return event[name]
    return event


def _fixture_call(doc: dict[str, Any]) -> Call:
    material = doc["request"]
    request = material.get("request") if isinstance(material, Mapping) \
        and "scheme" in material else material
    chunks = doc.get("chunks")
    if doc["kind"] != "http":
        return Call(doc["kind"], doc["key"], None, None, request, answer=doc.get("answer"),
                    events=chunks, error=doc.get("error"))
    sent = request if isinstance(request, Mapping) else {}
    url, method = (sent.get(k) if isinstance(sent.get(k), str) else None for k in ("url", "method"))
    query = [tuple(p) for p in _listed(sent.get("query")) if isinstance(p, list) and len(p) == 2]
    if isinstance(url, str) and query:
        url += "?" + urllib.parse.urlencode(query)
    head: Any = (chunks[0] if chunks else {}) if chunks is not None else doc.get("answer")
    head = head if isinstance(head, Mapping) else {}
    headers = head.get("headers") if isinstance(head.get("headers"), Mapping) else {}
    events: list[Any] | None = None
    answer: Any = None
    if chunks is not None and is_stream_type(headers.get("content-type")):
        events = [_payload(chunk) for chunk in chunks[1:]]
    elif chunks is not None:  # any other body, sent in parts: stored whole after the head
        answer = _payload(chunks[1]) if len(chunks) > 1 else None
    elif "events" in head:
        events = [_payload(event) for event in _listed(head["events"])]
    elif "answer" in doc:
        body = {k: v for k, v in head.items() if k in ("json", "text", "base64")}
        answer = _payload(body) if body else None
    return Call("http", doc["key"], method, url, _payload(sent.get("body")),
                head.get("status"), str(headers.get("content-type", "")), answer, events,
                doc.get("error"), {"request": sent.get("headers", {}), "response": headers})


def _exchange_call(call: Exchange, redactor: Redactor) -> Call:
    body = call.request_body
    pairs = [(name, value) for name, values in call.request_headers.items() for value in values]
    try:  # the key `redact migrate` gives the call
        data = body if isinstance(body, str) else "" if body is None else json.dumps(
            body, ensure_ascii=False)
        document = request_document(call.method or "", call.url or "", pairs, data.encode())
        key: str | None = request_key("http", document, redactor=redactor)
    except (RedactkeyError, UnicodeEncodeError):
        key = None
    ctype = next((v for k, vs in call.response_headers.items() if k.lower() == "content-type"
                  for v in vs), "")
    streamed = bool(call.events)
    return Call("http", key, call.method, call.url, body, call.status, ctype,
                None if streamed else call.response_body, call.events if streamed else None,
                headers={"request": call.request_headers, "response": call.response_headers})


# --------------------------------------------------------------------------- the view

_SYSTEM = ("system", "instructions", "systemInstruction", "system_instruction", "preamble")
_TURNS = ("messages", "input", "contents", "prompt")
_MODEL_ANSWER = frozenset({"choices", "output", "candidates", "content", "message",
                           "completion", "generation", "response", "delta"})
_TEXTS = frozenset({"text", "content", "output_text", "response", "completion", "generation"})
_FINISH = frozenset({"finish_reason", "stop_reason", "finishReason", "done_reason"})
_MODEL_IN_URL = re.compile(r"/models?/([^/:?]+)")


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _tool_call(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """A tool call in any provider's shape: OpenAI/Cohere `function`, responses
    `function_call`, Anthropic `tool_use`, Gemini `functionCall`."""
    function = node.get("function") or node.get("functionCall")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        arguments = function.get("arguments", function.get("args"))
    elif node.get("type") in ("function_call", "tool_use") and isinstance(node.get("name"), str):
        function, arguments = node, node.get("arguments", node.get("input"))
    else:
        return None
    parsed = json_container(arguments) if isinstance(arguments, str) else None
    return {"name": function["name"], "arguments": arguments if parsed is None else parsed}


def _text(value: Any) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text for text in map(_text, value) if text)
    if isinstance(value, Mapping):
        for name in ("text", "content", "parts", "output"):
            if name in value:
                return _text(value[name])
        call = _tool_call(value)
        return "" if call is not None else f"[{value.get('type', 'data')}]"
    return "" if value is None else json.dumps(value)


def _parts(node: Any, found: dict[str, Any], depth: int = 0) -> None:
    """Texts, tool calls and the finish reason of an answer, in the order it holds them."""
    if depth > 64:
        return
    if isinstance(node, list):
        for item in node:
            _parts(item, found, depth + 1)
    elif isinstance(node, Mapping):
        call = _tool_call(node)
        if call is not None:
            found["tool_calls"].append(call)
            return
        for name, value in node.items():
            if name in _TEXTS and isinstance(value, str):
                found["texts"].append(value)
            elif name in _FINISH and isinstance(value, str):
                found["finish"] = value
            else:
                _parts(value, found, depth + 1)


def answer_text(call: Call) -> tuple[Any, dict[str, Any]]:
    """(the answer to compare, its parts): a stream folded into the answer it spells out
    (its text joined, when no fold knows its provider); `parts` holds `text`,
    `tool_calls` and `finish` when the answer is a model's, else nothing."""
    found: dict[str, Any] = {"texts": [], "tool_calls": [], "finish": None}
    if call.events is not None:
        folded = _fold([event for event in call.events if isinstance(event, Mapping)])
        _parts(folded if folded is not None else call.events, found)
        joined = ("\n" if folded is not None else "").join(found["texts"])
        answer = folded if folded is not None else {"text": joined}
    else:
        answer = call.answer
        if isinstance(answer, str) and call.kind != "http":
            found["texts"].append(answer)
        elif call.kind != "http" or (isinstance(answer, Mapping) and _MODEL_ANSWER & set(answer)):
            _parts(answer, found)
        joined = "\n".join(found["texts"])
    parts = {name: value for name, value in (("text", joined), ("tool_calls", found["tool_calls"]),
                                             ("finish", found["finish"])) if value}
    return answer, parts


def _ask(body: Any, url: str | None) -> dict[str, Any]:
    if not isinstance(body, Mapping) or not any(name in body for name in (*_SYSTEM, *_TURNS)):
        return {} if body is None else {"body": body}
    found = _MODEL_IN_URL.search(url or "")
    model = body.get("model") or (urllib.parse.unquote(found.group(1)) if found else None)
    messages: list[dict[str, Any]] = [{"role": "system", "text": _text(body[name])}
                                      for name in _SYSTEM if name in body]
    for name in _TURNS:
        turns = body.get(name)
        for turn in turns if isinstance(turns, list) else [] if turns is None else [turns]:
            if isinstance(turn, Mapping) and ("role" in turn or "type" in turn):
                message: dict[str, Any] = {
                    "role": str(turn.get("role") or turn.get("type")),
                    "text": _text(turn.get("content", turn.get("parts", turn.get("output"))))}
                asked = [turn, *_listed(turn.get("tool_calls"))]
                calls = [c for c in (_tool_call(t) for t in asked if isinstance(t, Mapping))
                         if c is not None]
                messages.append({**message, "tool_calls": calls} if calls else message)
            else:
                messages.append({"role": "user", "text": _text(turn)})
    tools = []
    for tool in _listed(body.get("tools") or body.get("functions")):
        if not isinstance(tool, Mapping):
            continue
        declared = _listed(tool.get("functionDeclarations") or tool.get(
            "function_declarations")) or [tool.get("function") if isinstance(
                tool.get("function"), Mapping) else tool]
        tools += [str(d.get("name") or d.get("type")) for d in declared if isinstance(d, Mapping)]
    shown = {"model", "tools", "functions", *_SYSTEM, *_TURNS}
    out: dict[str, Any] = {"model": model, "messages": messages, "tools": tools,
                           "parameters": {k: v for k, v in body.items() if k not in shown}}
    return {name: value for name, value in out.items() if value}


def view(call: Call, redactor: Redactor) -> dict[str, Any]:
    """What a reviewer reads of a call, redacted: `call` (method, url, model, messages,
    tools, parameters or body) and `answer` (status, text, tool calls, structured output,
    events, error, or the body of an answer that is not a model's)."""
    url = redactor.redact_url(call.url) if call.url else None
    ask = {"kind": call.kind, "method": call.method, "url": url, **_ask(call.request, url)}
    if call.kind.startswith("tool:") and "body" in ask:
        ask["arguments"] = ask.pop("body")
    answer, parts = answer_text(call)
    told: dict[str, Any] = {"status": call.status, "content_type": call.content_type or None,
                            "events": None if call.events is None else len(call.events)}
    text = parts.get("text")
    structured = json_container(text) if text else None
    if structured is not None:
        told["structured"] = structured
    elif text:
        told["text"] = text
    told.update((name, parts[name]) for name in ("tool_calls", "finish") if name in parts)
    tool = call.kind.startswith("tool:")
    if not parts and answer is not None and call.events is None:
        told["result" if tool else "structured" if call.kind != "http" else "body"] = answer
    told["error"] = call.error
    shown = {"call": {k: v for k, v in ask.items() if v is not None},
             "answer": {k: v for k, v in told.items() if v is not None}}
    return {"key": call.key, **redactor.redact(shown)}


# --------------------------------------------------------------------------- text


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _block(style: str, text: str) -> Iterator[tuple[str, str]]:
    for line in text.splitlines() or [""]:
        yield style, "  " + line


def _pretty(style: str, value: Any) -> Iterator[tuple[str, str]]:
    yield from _block(style, value if isinstance(value, str)
                      else json.dumps(value, indent=2, ensure_ascii=False))


def lines(shown: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A view as (style, line) pairs: labels, roles and texts, each text line its own."""
    ask, told = shown["call"], shown["answer"]
    if shown.get("key"):
        yield "label", f"key     {shown['key']}"
    yield "label", "call    " + " ".join(str(ask[k]) for k in ("method", "url") if k in ask) \
        if "method" in ask else f"call    {ask['kind']}"
    for name in ("model", "tools"):
        if name in ask:
            yield "label", f"{name:<8}{', '.join(ask[name]) if name == 'tools' else ask[name]}"
    if "parameters" in ask:
        yield "label", "params  " + " ".join(f"{k}={_compact(v)}"
                                             for k, v in ask["parameters"].items())
    for message in ask.get("messages", ()):
        yield "role", f"[{message['role']}]"
        if message["text"] or "tool_calls" not in message:
            yield from _block("text", message["text"])
        for call in message.get("tool_calls", ()):
            yield "text", f"  tool call {call['name']} {_compact(call['arguments'])}"
    for name in ("body", "arguments"):
        if name in ask:
            yield "role", f"[{'request body' if name == 'body' else name}]"
            yield from _pretty("text", ask[name])
    head = " ".join(str(told[k]) for k in ("status", "content_type") if k in told)
    count = told.get("events")
    streamed = "" if count is None else f", streamed in {count} event{'s' * (count != 1)}"
    if ask["kind"] == "http" and not head:
        head = "(no response)"
    yield "label", f"answer  {head}{streamed}".rstrip()
    if "text" in told:
        yield "role", "[assistant]"
        yield from _block("answer", told["text"])
    for name, title in (("structured", "structured output"), ("body", "body"),
                        ("result", "result")):
        if name in told:
            yield "role", f"[{title}]"
            yield from _pretty("answer", told[name])
    for call in told.get("tool_calls", ()):
        yield "answer", f"tool call {call['name']} {_compact(call['arguments'])}"
    if "finish" in told:
        yield "label", f"finish  {told['finish']}"
    if "error" in told:
        yield "error", f"error   {_compact(told['error'])}"


def recording_lines(recorded: Recorded, views: list[dict[str, Any]],
                    age: FixtureAge | None, *, heading: bool = True) -> Iterator[tuple[str, str]]:
    """Every call of a file, under `== path  format, N calls, recorded 3d ago by git`
    (no heading for git's textconv: the same bytes show the same text anywhere)."""
    count = len(views)
    about = [recorded.format] + ([f"{count} calls"] if count != 1 else [])
    if age is not None:
        about.append(f"recorded {format_duration(age.age())} ago by {age.described_source}")
    if heading:
        yield "file", f"== {recorded.display}  {', '.join(about)}"
    for number, shown in enumerate(views, 1):
        if count > 1:
            yield "file", f"-- call {number} of {count}"
        yield from lines(shown)


_STYLES = {"file": "bold reverse", "label": "cyan", "role": "bold magenta", "text": "",
           "answer": "green", "error": "bold red"}


def run_show(files: tuple[str, ...], *, fmt: str, rich: bool, textconv: bool,
             redactor: Redactor) -> int:
    """Show each file (exit 0), or say why one cannot be shown (exit 2). For git's
    textconv a file that holds no recording is shown as it is."""
    ages = FixtureAges()
    code = 0
    found: list[dict[str, Any]] = []
    console = Console(highlight=False, soft_wrap=True) if rich else None
    for name in files:
        path = Path(name)
        try:
            if not path.is_file():
                raise InputError(f"{name}: " + ("a directory; give its files" if path.is_dir()
                                                 else "no such file"))
            recorded = read_calls(path, name, redactor)
        except InputError as exc:
            if textconv and path.is_file():
                click.echo(path.read_bytes().decode("utf-8", "replace").rstrip("\n"))
            else:
                click.echo(f"redact show: {exc}", err=True)
                code = 2
            continue
        views = [view(call, redactor) for call in recorded.calls]
        age = None if textconv else ages.age_of(path)
        if fmt == "json":
            found.append({"path": name, "format": recorded.format, "calls": views,
                          "age": None if age is None else {
                              "seconds": int(age.age().total_seconds()),
                              "source": age.described_source}})
            continue
        if name != files[0] and not textconv:
            click.echo("")
        for style, line in recording_lines(recorded, views, age, heading=not textconv):
            if console is not None:
                console.print(Text(line, style=_STYLES[style]))
            else:
                click.echo(line)
    if fmt == "json":
        click.echo(json.dumps({"files": found}, indent=2, ensure_ascii=False))
    return code
