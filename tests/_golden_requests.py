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
    ("http-text-json", "http", {"method": "POST",
                                "url": "https://api.openai.com/v1/chat/completions",
                                "headers": {},
                                "text": '{"temperature": 0.0, "model": "gpt-4o-mini", '
                                        '"messages": [{"role": "user", "content": "Hi"}]}'}),
    ("http-form-reordered", "http", {"method": "POST", "url": "http://localhost:8080/form",
                                     "text": "b=two&a=1"}),
    ("http-text-plain", "http", {"method": "POST", "url": "http://localhost:8080/echo",
                                 "text": "hello, world"}),
    ("http-base64", "http", {"method": "PUT", "url": "http://localhost:8080/blob",
                             "base64": "AAECAwQF/w=="}),
    ("http-no-body", "http", {"method": "DELETE", "url": "https://api.example.com/v1/items/7"}),
]

# Computed with KEY_SCHEME_VERSION 2 and pinned (version 2 keys an HTTP text body that is
# a JSON document or a form by its meaning: "http-text-json" keys as "http-json" does,
# "http-form-reordered" as "http-text"); test_crossversion.py re-checks the table under
# every installed CPython 3.10-3.13 and several PYTHONHASHSEED values. A change here is
# a change of every recorded fixture's file name: bump KEY_SCHEME_VERSION instead.
GOLDEN_KEYS: dict[str, str] = {
    "empty-chat": "8658e09ecf3d7d9ab2007f87fddf8d1ecfa9458a529dad13dfded08c38ee89d1",
    "minimal-chat": "cd44485b0ea3a3fbb1362fff95422b289413f3ac9311b8041bc3608a7634502f",
    "corpus-chat": "cad631d8a1bfc2d76927e05c3b1f96b928fc12c672d73f70568644d789c9c6bf",
    "sampling": "2cdc20f2bb8ac8903b01bae427dfe1a250c46f7b0b9988ff40f1229d33428495",
    "tools": "c5b9d159183217f1ef9ee6913394bef8952345c90d09ed32075c211699c9a152",
    "response-format": "0644e1bdb766114f2350ffbd9a6e8d2dc5f5c226a6cd5f949252c58b68eb2d60",
    "anthropic": "6588ab8a1ba8054e4f44b0d71ff19331f4e10307a229908d76484ec3083ce0a5",
    "responses-api": "6995979eff58fb8b951b75546a9139672711ced20c116e2363a6ab4434260126",
    "prompt-text": "c721ad003f50d17d1095cf01023f3d8ffa8313e04d07d64e44e1accd92e60ddb",
    "unicode": "a58cffc0f2f30d599608ba243a47bae452bc84026bca9ff4dcf06c69378ae391",
    "non-bmp-keys": "fe91ef5554882b98f14fdeb81a3f505faa6095dc2ab1b578a2ecde1863130ac1",
    "floats": "3d5c94323c21ec978deb303d5350da9a116e9d22b2c23277683cb9a1566abf84",
    "noise-only-differs": "cad631d8a1bfc2d76927e05c3b1f96b928fc12c672d73f70568644d789c9c6bf",
    "stream": "7aae6647301e2b7d3893c303866ef5a0837eaa9b0384bfff12b22c6dc28e77d9",
    "bare-prompt": "22517a775f455e8947c79b1fa527194812bf97db1eb246a1ed7e83a875ececf8",
    "http-get": "701eaee80f3c57651749089ebae51d7ceb488b7b836a474f85a601298e2f7d09",
    "http-credentials-dropped": "701eaee80f3c57651749089ebae51d7ceb488b7b836a474f85a601298e2f7d09",
    "http-json": "cfcbb15e8f392d8dda15e5b3f3db7060c5bf27a3249344dee1e13202181ad760",
    "http-text": "d85831eaee486baa7153e2535ab2ed5c82c17a724ad02195e6374e135f6ac80f",
    "http-text-json": "cfcbb15e8f392d8dda15e5b3f3db7060c5bf27a3249344dee1e13202181ad760",
    "http-form-reordered": "d85831eaee486baa7153e2535ab2ed5c82c17a724ad02195e6374e135f6ac80f",
    "http-text-plain": "1760a8f7831f22aaf05716fa0ecf68c48fe50a5ef52b2c59dbca2ce2563416a0",
    "http-base64": "4cd9f90b934021bc04eceecdb030658576a1fbb977e4614817fc83b72fc29827",
    "http-no-body": "d136de619c6de8bb20d3c7584ccf6d6b0a91c797b71d366863fc2aa351e50114",
}
