"""Fixed requests and their pinned keys (the golden table), checked by test_keys.py and
test_crossversion.py.

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

# Computed once with KEY_SCHEME_VERSION 1 and pinned; identical on CPython 3.10.13,
# 3.11.7, 3.12.1 and 3.13.0 with PYTHONHASHSEED 0, 1 and 12345 (test_crossversion.py
# re-checks every installed 3.10-3.13). A change here is a change of every recorded
# fixture's file name: bump KEY_SCHEME_VERSION instead.
GOLDEN_KEYS: dict[str, str] = {
    "empty-chat": "af969bee6fa2b9b123df6d056a71fb258133fc8cc9487cef430620849a637730",
    "minimal-chat": "3049ef0a986557d3e0dddda6812190e47c391ce8d1668f35748a3c3ad2ccec91",
    "corpus-chat": "0b2f3762dfb7e52f11e1f32fba8d4f43a2e4cf762b201e6714c6ad3f7f438ee7",
    "sampling": "633a74b1dd095538678e3c158ed68f464584b40368e8778f36b5f3ac034ff4ef",
    "tools": "5ba4fcb2f1769c194f4bf9a0e8f66475d64d07041eb6ca07d306c64e2668ab04",
    "response-format": "d49dd0db8ddad9ed357b2f1b57c4588fba4664c4f6792cfa7a67ba70d158fbde",
    "anthropic": "5f529b5e52654cf26a12a9bc3a689e708a899d1cfd497967ef628b54d1b28dae",
    "responses-api": "e56bda6db2b1fd2b7c32599a87ce8b41c4a34694fea469b476f828dcf242faab",
    "prompt-text": "09b7ca6809340111093a35ae73fb3b7c5e02f1f8942795950aae651c6a788a8f",
    "unicode": "060abd40904821671cd1a74611c739b4e4892ddfaa2cd4e0c983c4ad143183a4",
    "non-bmp-keys": "9724a786e833fe557bebae4d4ce11ae8941054443fbf2017bb675c1245ba3ac2",
    "floats": "b13496c950657956b9a5b765a02462f360b75679a8220c27c91eed407daef424",
    "noise-only-differs": "0b2f3762dfb7e52f11e1f32fba8d4f43a2e4cf762b201e6714c6ad3f7f438ee7",
    "stream": "19149845d66ebec69c62b4fa1c25f5b0f7957e92512f299deb1350ca59771965",
    "bare-prompt": "f94a68eaac016b8f249c70f2bdc1f523f884eba461d2e9c9c2043da0be5add57",
    "http-get": "ffe7ccb046577ad0887f8a8d865f0acba2400d1cc1b8ea8d1cc40fca2b3a67ad",
    "http-credentials-dropped": "ffe7ccb046577ad0887f8a8d865f0acba2400d1cc1b8ea8d1cc40fca2b3a67ad",
    "http-json": "9fe52b9ee9c6840cf438e23e52bee137f7e6a861694eb1c4b1cc4ee534a442a4",
    "http-text": "f83526d430a5630a6e63d6dfcb01ff55f5056f5fde26954ad9d3c6ac93f348fc",
    "http-base64": "02d075175831f08356a71f597d04a9b48d41308714e5ef523f7fa46255cce3bf",
    "http-no-body": "dd51ab7f2ba60152cf5ae9ad8cef11d1674bb45c66aa2f6fdcf4515d53b91655",
}
