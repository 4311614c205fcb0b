"""Client faces: httpx/httpx2, requests, aiohttp, botocore and vcrpy over the record layer,
and SDK clients built with every HTTP slot filled (`redactkey.clients.openai(...)`).

Stage 8. May import the stages below it; an SDK or client library is imported on use
(the SDK helpers load the httpx transport only when first named).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "anthropic",
    "cohere",
    "google_genai",
    "groq",
    "http_clients",
    "langchain_openai",
    "mistral",
    "openai",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'redactkey.clients' has no attribute {name!r}")
    value = getattr(importlib.import_module("._sdks", __name__), name)
    globals()[name] = value
    return value
