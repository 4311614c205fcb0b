"""Fixed requests whose keys are pinned in test_keys.py (the golden table).

Plain data only, so the same module runs under every supported Python version.
"""

from __future__ import annotations

from typing import Any

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}

GOLDEN_REQUESTS: list[tuple[str, str, Any]] = [
    ("empty-chat", "chat", {}),
    ("minimal-chat", "chat", {"model": "gpt-4o-mini",
                              "messages": [{"role": "user", "content": "Hi"}]}),
    ("corpus-chat", "chat", {
        "model": "gpt-4o-mini", "temperature": 0.2, "timeout": 30,
        "messages": [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Name the capital of France."}]}),
    ("sampling", "chat", {"model": "gpt-4o", "temperature": 0.7, "top_p": 1.0,
                          "max_tokens": 256, "seed": 7, "stop": ["\n\n", "END"],
                          "messages": [{"role": "user", "content": "Count to 3."}]}),
    ("tools", "chat", {"model": "gpt-4o", "tools": [WEATHER_TOOL], "tool_choice": "auto",
                       "messages": [{"role": "user", "content": "Weather in Paris?"}]}),
    ("response-format", "structured", {
        "model": "gpt-4o-2024-08-06",
        "messages": [{"role": "user", "content": "Extract the name: Ada Lovelace"}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "person", "strict": True,
            "schema": {"type": "object", "properties": {"name": {"type": "string"}},
                       "required": ["name"]}}}}),
    ("anthropic", "chat", {
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "Answer in French.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "thinking": {"type": "enabled", "budget_tokens": 2048}}),
    ("responses-api", "text", {"model": "o4-mini", "instructions": "Be brief.",
                               "input": "Why is the sky blue?",
                               "reasoning": {"effort": "low"}}),
    ("prompt-text", "text", {"prompt": "Once upon a time", "model": "davinci-002",
                             "max_tokens": 5}),
    ("unicode", "chat", {"model": "m", "messages": [
        {"role": "user", "content": "Grüße, 東京, emoji 😀, tab\there, \u0007 bell"}]}),
    ("non-bmp-keys", "text", {"model": "m", "response_schema": {
        "\U0001f600": 1, "\ue000": 2, "a": 3, "\u20ac": [True, False, None]}}),
    ("floats", "structured", {"model": "m", "temperature": 1e-05, "top_p": 0.95,
                              "frequency_penalty": -0.5, "presence_penalty": 2.0,
                              "logit_bias": {"50256": -100}}),
    ("noise-only-differs", "chat", {
        "model": "gpt-4o-mini", "temperature": 0.2, "user": "u-42",
        "metadata": {"run": "x"}, "stream_options": {"include_usage": True},
        "extra_headers": {"x-trace": "1"}, "request_id": "abc",
        "messages": [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Name the capital of France."}]}),
    ("stream", "chat", {"model": "gpt-4o-mini", "stream": True,
                        "messages": [{"role": "user", "content": "Hi"}]}),
    ("bare-prompt", "text", "Say hello"),
    ("http-get", "http", {"method": "get",
                          "url": "https://API.example.com:443/v1/items?b=2&a=1&a=0#frag",
                          "headers": {"accept": "application/json"}}),
    ("http-credentials-dropped", "http", {
        "method": "GET",
        "url": "https://api.example.com/v1/items?a=1&a=0&b=2&api_key=XYZ&_=1700000000"
               "&X-Amz-Signature=abc&timestamp=1",
        "headers": {"authorization": "Bearer [REDACTED]"}}),
    ("http-json", "http", {"method": "POST",
                           "url": "https://api.openai.com/v1/chat/completions",
                           "headers": {"content-type": "application/json"},
                           "json": {"model": "gpt-4o-mini", "messages": [
                               {"role": "user", "content": "Hi"}], "temperature": 0.0}}),
    ("http-text", "http", {"method": "POST", "url": "http://localhost:8080/form",
                           "text": "a=1&b=two"}),
    ("http-base64", "http", {"method": "PUT", "url": "http://localhost:8080/blob",
                             "base64": "AAECAwQF/w=="}),
    ("http-no-body", "http", {"method": "DELETE", "url": "https://api.example.com/v1/items/7"}),
]
