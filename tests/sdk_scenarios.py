"""Calls through the real openai and anthropic SDKs, run once to record and once to replay.

`run(...)` drives every scenario through every client flavour (httpx2 and httpx,
sync and async) with a `FixtureTransport`, and returns a JSON summary: answers, tool
calls, structured output and stream chunk counts. The recording test compares the
summary of a live recording with the one a fresh, network-less replay process prints
(`python tests/sdk_scenarios.py replay ...`). Not collected by pytest.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pydantic

from redactkey import FixtureDir, FixtureTransport, MissingFixtureError, Redactor, RunSecrets

FLAVOURS = ("httpx2-sync", "httpx2-async", "httpx-sync", "httpx-async")

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
}
OPENAI_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather now.",
                 "parameters": WEATHER_PARAMETERS},
}
RESPONSES_TOOL = {"type": "function", "name": "get_weather", "description": "Weather now.",
                  "parameters": WEATHER_PARAMETERS, "strict": True}
ANTHROPIC_TOOL = {"name": "get_weather", "description": "Weather now.",
                  "input_schema": WEATHER_PARAMETERS}


class Weather(pydantic.BaseModel):
    city: str
    temperature_c: int


def _transport(store: Path, mode: str, redactor: Redactor) -> FixtureTransport:
    return FixtureTransport(FixtureDir(store), mode=mode, redactor=redactor)  # type: ignore[arg-type]


def _client(flavour: str, transport: FixtureTransport, hooks: list[Any]) -> Any:
    library: Any = httpx2 if flavour.startswith("httpx2") else httpx
    cls = library.AsyncClient if flavour.endswith("async") else library.Client
    return cls(transport=transport, event_hooks={"request": hooks})


def _prompt(token: str, what: str) -> str:
    return f"{what} ECHO:{token}"


# -- openai --------------------------------------------------------------------------------


def _openai_sync(client: openai.OpenAI, token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    chat = client.chat.completions.create(
        model="gpt-fake", messages=[{"role": "user", "content": _prompt(token, "chat")}]
    )
    out["chat"] = chat.choices[0].message.content
    chunks = list(client.chat.completions.create(
        model="gpt-fake", stream=True,
        messages=[{"role": "user", "content": _prompt(token, "chat stream")}],
    ))
    out["chat_stream"] = ["".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
                          len(chunks)]
    tool = client.chat.completions.create(
        model="gpt-fake", tools=[OPENAI_TOOL],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "weather in Paris?"}],
    )
    calls = tool.choices[0].message.tool_calls or []
    out["chat_tool"] = [[c.function.name, json.loads(c.function.arguments)] for c in calls]  # type: ignore[union-attr]
    parsed = client.chat.completions.parse(
        model="gpt-fake", response_format=Weather,
        messages=[{"role": "user", "content": "weather as JSON"}],
    )
    out["chat_structured"] = parsed.choices[0].message.parsed.model_dump()  # type: ignore[union-attr]
    out["chat_after_429"] = client.chat.completions.create(
        model="rate-limited-once", messages=[{"role": "user", "content": "retry me"}]
    ).choices[0].message.content
    response = client.responses.create(model="gpt-fake", input=_prompt(token, "responses"))
    out["responses"] = response.output_text
    events = list(client.responses.create(
        model="gpt-fake", input=_prompt(token, "responses stream"), stream=True
    ))
    out["responses_stream"] = ["".join(getattr(e, "delta", "") for e in events
                                       if e.type == "response.output_text.delta"), len(events)]
    tool_response = client.responses.create(
        model="gpt-fake", input="weather in Paris?", tools=[RESPONSES_TOOL]  # type: ignore[list-item]
    )
    out["responses_tool"] = [[o.name, json.loads(o.arguments)] for o in tool_response.output
                             if o.type == "function_call"]
    structured = client.responses.parse(model="gpt-fake", input="weather", text_format=Weather)
    out["responses_structured"] = structured.output_parsed.model_dump()  # type: ignore[union-attr]
    return out


async def _openai_async(client: openai.AsyncOpenAI, token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    chat = await client.chat.completions.create(
        model="gpt-fake", messages=[{"role": "user", "content": _prompt(token, "chat")}]
    )
    out["chat"] = chat.choices[0].message.content
    stream = await client.chat.completions.create(
        model="gpt-fake", stream=True,
        messages=[{"role": "user", "content": _prompt(token, "chat stream")}],
    )
    chunks = [c async for c in stream]
    out["chat_stream"] = ["".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
                          len(chunks)]
    tool = await client.chat.completions.create(
        model="gpt-fake", tools=[OPENAI_TOOL],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "weather in Paris?"}],
    )
    calls = tool.choices[0].message.tool_calls or []
    out["chat_tool"] = [[c.function.name, json.loads(c.function.arguments)] for c in calls]  # type: ignore[union-attr]
    parsed = await client.chat.completions.parse(
        model="gpt-fake", response_format=Weather,
        messages=[{"role": "user", "content": "weather as JSON"}],
    )
    out["chat_structured"] = parsed.choices[0].message.parsed.model_dump()  # type: ignore[union-attr]
    after = await client.chat.completions.create(
        model="rate-limited-once", messages=[{"role": "user", "content": "retry me"}]
    )
    out["chat_after_429"] = after.choices[0].message.content
    response = await client.responses.create(model="gpt-fake", input=_prompt(token, "responses"))
    out["responses"] = response.output_text
    event_stream = await client.responses.create(
        model="gpt-fake", input=_prompt(token, "responses stream"), stream=True
    )
    events = [e async for e in event_stream]
    out["responses_stream"] = ["".join(getattr(e, "delta", "") for e in events
                                       if e.type == "response.output_text.delta"), len(events)]
    tool_response = await client.responses.create(
        model="gpt-fake", input="weather in Paris?", tools=[RESPONSES_TOOL]  # type: ignore[list-item]
    )
    out["responses_tool"] = [[o.name, json.loads(o.arguments)] for o in tool_response.output
                             if o.type == "function_call"]
    structured = await client.responses.parse(
        model="gpt-fake", input="weather", text_format=Weather
    )
    out["responses_structured"] = structured.output_parsed.model_dump()  # type: ignore[union-attr]
    return out


# -- anthropic -------------------------------------------------------------------------------


def _anthropic_sync(client: anthropic.Anthropic, token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    message = client.messages.create(
        model="claude-fake", max_tokens=64,
        messages=[{"role": "user", "content": _prompt(token, "messages")}],
    )
    out["messages"] = message.content[0].text  # type: ignore[union-attr]
    events = list(client.messages.create(
        model="claude-fake", max_tokens=64, stream=True,
        messages=[{"role": "user", "content": _prompt(token, "messages stream")}],
    ))
    out["messages_stream"] = ["".join(e.delta.text for e in events  # type: ignore[union-attr]
                                      if e.type == "content_block_delta"), len(events)]
    with client.messages.stream(
        model="claude-fake", max_tokens=64,
        messages=[{"role": "user", "content": _prompt(token, "helper stream")}],
    ) as helper:
        out["messages_helper"] = helper.get_final_text()
    tool = client.messages.create(
        model="claude-fake", max_tokens=64, tools=[ANTHROPIC_TOOL],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "weather in Paris?"}],
    )
    out["messages_tool"] = [[b.name, b.input] for b in tool.content if b.type == "tool_use"]
    parsed = client.messages.parse(
        model="claude-fake", max_tokens=64, output_format=Weather,
        messages=[{"role": "user", "content": "weather as JSON"}],
    )
    out["messages_structured"] = parsed.parsed_output.model_dump()  # type: ignore[union-attr]
    return out


async def _anthropic_async(client: anthropic.AsyncAnthropic, token: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    message = await client.messages.create(
        model="claude-fake", max_tokens=64,
        messages=[{"role": "user", "content": _prompt(token, "messages")}],
    )
    out["messages"] = message.content[0].text  # type: ignore[union-attr]
    stream = await client.messages.create(
        model="claude-fake", max_tokens=64, stream=True,
        messages=[{"role": "user", "content": _prompt(token, "messages stream")}],
    )
    events = [e async for e in stream]
    out["messages_stream"] = ["".join(e.delta.text for e in events  # type: ignore[union-attr]
                                      if e.type == "content_block_delta"), len(events)]
    async with client.messages.stream(
        model="claude-fake", max_tokens=64,
        messages=[{"role": "user", "content": _prompt(token, "helper stream")}],
    ) as helper:
        out["messages_helper"] = await helper.get_final_text()
    tool = await client.messages.create(
        model="claude-fake", max_tokens=64, tools=[ANTHROPIC_TOOL],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "weather in Paris?"}],
    )
    out["messages_tool"] = [[b.name, b.input] for b in tool.content if b.type == "tool_use"]
    parsed = await client.messages.parse(
        model="claude-fake", max_tokens=64, output_format=Weather,
        messages=[{"role": "user", "content": "weather as JSON"}],
    )
    out["messages_structured"] = parsed.parsed_output.model_dump()  # type: ignore[union-attr]
    return out


def _raw_messages_sync(client: httpx.Client, base_url: str, key: str, token: str) -> dict[str, Any]:
    """anthropic refuses classic httpx clients, so httpx speaks the messages API directly."""
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    body = {"model": "claude-fake", "max_tokens": 64,
            "messages": [{"role": "user", "content": _prompt(token, "raw")}]}
    answer = client.post(f"{base_url}/v1/messages", json=body, headers=headers).json()
    with client.stream("POST", f"{base_url}/v1/messages", json={**body, "stream": True},
                       headers=headers) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data:")]
    return {"raw_messages": answer["content"][0]["text"], "raw_stream_events": len(lines)}


async def _raw_messages_async(
    client: httpx.AsyncClient, base_url: str, key: str, token: str
) -> dict[str, Any]:
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    body = {"model": "claude-fake", "max_tokens": 64,
            "messages": [{"role": "user", "content": _prompt(token, "raw")}]}
    answer = (await client.post(f"{base_url}/v1/messages", json=body, headers=headers)).json()
    async with client.stream("POST", f"{base_url}/v1/messages", json={**body, "stream": True},
                             headers=headers) as response:
        lines = [line async for line in response.aiter_lines() if line.startswith("data:")]
    return {"raw_messages": answer["content"][0]["text"], "raw_stream_events": len(lines)}


# -- driver ----------------------------------------------------------------------------------


async def _in_async(client: Any, scenario: Callable[..., Any], *args: Any) -> Any:
    async with client:
        return await scenario(client, *args)


def redactor_for(token: str) -> Redactor:
    secrets = RunSecrets()
    secrets.add("TOOL_TOKEN", token)
    return Redactor(secrets)


def run(
    *, mode: str, store: Path, base_url: str, keys: dict[str, str], token: str,
    flavours: tuple[str, ...] = FLAVOURS,
) -> dict[str, Any]:
    """Every scenario through every flavour; returns {flavour: {scenario: result}}."""
    redactor = redactor_for(token)
    summary: dict[str, Any] = {}

    def http(flavour: str) -> Any:  # one client per SDK: an async pool belongs to one loop
        # One store per flavour, so that each flavour replays only what it recorded.
        return _client(flavour, _transport(store / flavour, mode, redactor), [])

    for flavour in flavours:
        results: dict[str, Any] = {}
        is_async = flavour.endswith("async")
        openai_kw = {"api_key": keys["openai"], "base_url": f"{base_url}/v1"}
        anthropic_kw = {"api_key": keys["anthropic"], "base_url": base_url}
        if is_async:
            results.update(asyncio.run(_in_async(
                openai.AsyncOpenAI(**openai_kw, http_client=http(flavour)), _openai_async, token
            )))
        else:
            with openai.OpenAI(**openai_kw, http_client=http(flavour)) as client:
                results.update(_openai_sync(client, token))
        if flavour.startswith("httpx2") and is_async:
            results.update(asyncio.run(_in_async(
                anthropic.AsyncAnthropic(**anthropic_kw, http_client=http(flavour)),
                _anthropic_async, token,
            )))
        elif flavour.startswith("httpx2"):
            with anthropic.Anthropic(**anthropic_kw, http_client=http(flavour)) as aclient:
                results.update(_anthropic_sync(aclient, token))
        elif is_async:
            results.update(asyncio.run(_in_async(
                http(flavour), _raw_messages_async, base_url, keys["anthropic"], token
            )))
        else:
            with http(flavour) as raw:
                results.update(_raw_messages_sync(raw, base_url, keys["anthropic"], token))
        summary[flavour] = results
    return summary


def _miss(flavour: str, sdk: str, call: Callable[[], Any], sent: list[str]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result = call()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    except BaseException as exc:  # the test asserts on what arrived
        cause = exc if isinstance(exc, MissingFixtureError) else exc.__cause__
        return {
            "flavour": flavour,
            "sdk": sdk,
            "raised": type(exc).__name__,
            "is_missing_fixture": isinstance(cause, MissingFixtureError),
            "message": str(cause),
            "seconds": time.monotonic() - started,
            "attempts": len(sent),
        }
    return {"flavour": flavour, "sdk": sdk, "raised": None, "attempts": len(sent)}


def _counting_client(flavour: str, transport: FixtureTransport, sent: list[str]) -> Any:
    def count(request: Any) -> None:
        sent.append(str(request.url))

    async def acount(request: Any) -> None:
        sent.append(str(request.url))

    return _client(flavour, transport, [acount if flavour.endswith("async") else count])


def misses(*, store: Path, base_url: str, keys: dict[str, str], token: str) -> list[dict[str, Any]]:
    """Unrecorded calls through each SDK and flavour; what each raised and how often it sent."""
    redactor = redactor_for(token)
    found = []
    prompt: Any = [{"role": "user", "content": "never recorded"}]
    for flavour in FLAVOURS:
        is_async = flavour.endswith("async")
        sent: list[str] = []
        http = _counting_client(flavour, _transport(store / flavour, "replay", redactor), sent)
        kw = {"api_key": keys["openai"], "base_url": f"{base_url}/v1", "http_client": http}
        client: Any = openai.AsyncOpenAI(**kw) if is_async else openai.OpenAI(**kw)
        found.append(_miss(flavour, "openai", functools.partial(
            client.chat.completions.create, model="gpt-fake", messages=prompt), sent))
        if flavour.startswith("httpx2"):
            sent = []
            http = _counting_client(flavour, _transport(store / flavour, "replay", redactor), sent)
            kw = {"api_key": keys["anthropic"], "base_url": base_url, "http_client": http}
            aclient: Any = anthropic.AsyncAnthropic(**kw) if is_async else anthropic.Anthropic(**kw)
            found.append(_miss(flavour, "anthropic", functools.partial(
                aclient.messages.create, model="claude-fake", max_tokens=5, messages=prompt), sent))
    return found


def refuse_network() -> list[str]:
    """Make every socket connection fail; returns the list the attempts are logged in."""
    attempts: list[str] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(repr(address))
        raise ConnectionRefusedError("network disabled for replay")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    return attempts


if __name__ == "__main__":
    # python tests/sdk_scenarios.py replay STORE BASE_URL TOKEN  (keys from the environment)
    import os

    attempts = refuse_network()
    _, _, store_arg, url_arg, token_arg = sys.argv
    env_keys = {
        "openai": os.environ["OPENAI_API_KEY"], "anthropic": os.environ["ANTHROPIC_API_KEY"]
    }
    replayed = run(mode="replay", store=Path(store_arg), base_url=url_arg, keys=env_keys,
                   token=token_arg)
    missed = misses(store=Path(store_arg), base_url=url_arg, keys=env_keys, token=token_arg)
    print(json.dumps({"summary": replayed, "misses": missed, "connects": attempts}))
