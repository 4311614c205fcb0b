"""Clients with every HTTP slot filled: the easy way not to bypass the transport.

Several SDKs keep one HTTP client for sync calls and another for async calls; a slot
left empty sends its calls straight to the network (recording nothing, and in replay
outside pytest, reaching the provider). Each helper builds the SDK's clients around one
`FixtureTransport` with every slot filled (docs/clients.md, "The easy way"). The SDKs
are imported when a helper is called, never by this module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, TypeAlias

from .._errors import UsageError
from ._httpx import FixtureTransport

if TYPE_CHECKING:
    from ..fixtures._store import FixtureStore
    from ..record._modes import Mode
    from ..redact._redactor import Redactor

    Store: TypeAlias = FixtureStore | FixtureTransport  # a store, or a transport built already

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


def _import(name: str, package: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise UsageError(f"{name} is not installed; pip install {package}") from None


def http_clients(store: Store, *, library: str = "httpx2", mode: Mode | None = None,
                 redactor: Redactor | None = None, inner: Any = None,
                 **client_kwargs: Any) -> tuple[Any, Any]:
    """``(Client, AsyncClient)`` of `library` ("httpx2" or "httpx") over one transport."""
    if library not in ("httpx", "httpx2"):
        raise UsageError(f"library is 'httpx' or 'httpx2', not {library!r}")
    module = _import(library, library)
    if not isinstance(store, FixtureTransport):
        transport = FixtureTransport(store, mode=mode, redactor=redactor, inner=inner)
    elif mode is not None or redactor is not None or inner is not None:
        raise UsageError("pass mode, redactor and inner when building the FixtureTransport, "
                         "or pass a store instead of a transport")
    else:
        transport = store
    return (module.Client(transport=transport, **client_kwargs),
            module.AsyncClient(transport=transport, **client_kwargs))


def openai(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
           inner: Any = None, **kwargs: Any) -> tuple[Any, Any]:
    """``(openai.OpenAI, openai.AsyncOpenAI)``, both over the transport (httpx2)."""
    sdk = _import("openai", "openai")
    sync, asynchronous = http_clients(store, mode=mode, redactor=redactor, inner=inner)
    return (sdk.OpenAI(http_client=sync, **kwargs),
            sdk.AsyncOpenAI(http_client=asynchronous, **kwargs))


def anthropic(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
              inner: Any = None, **kwargs: Any) -> tuple[Any, Any]:
    """``(anthropic.Anthropic, anthropic.AsyncAnthropic)``, both over the transport (httpx2)."""
    sdk = _import("anthropic", "anthropic")
    sync, asynchronous = http_clients(store, mode=mode, redactor=redactor, inner=inner)
    return (sdk.Anthropic(http_client=sync, **kwargs),
            sdk.AsyncAnthropic(http_client=asynchronous, **kwargs))


def groq(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
         inner: Any = None, **kwargs: Any) -> tuple[Any, Any]:
    """``(groq.Groq, groq.AsyncGroq)``, both over the transport (httpx)."""
    sdk = _import("groq", "groq")
    sync, asynchronous = http_clients(store, library="httpx", mode=mode, redactor=redactor,
                                      inner=inner)
    return (sdk.Groq(http_client=sync, **kwargs),
            sdk.AsyncGroq(http_client=asynchronous, **kwargs))


def cohere(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
           inner: Any = None, **kwargs: Any) -> tuple[Any, Any]:
    """``(cohere.ClientV2, cohere.AsyncClientV2)``, both over the transport (httpx)."""
    sdk = _import("cohere", "cohere")
    sync, asynchronous = http_clients(store, library="httpx", mode=mode, redactor=redactor,
                                      inner=inner)
    return (sdk.ClientV2(httpx_client=sync, **kwargs),
            sdk.AsyncClientV2(httpx_client=asynchronous, **kwargs))


def mistral(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
            inner: Any = None, **kwargs: Any) -> Any:
    """One ``mistralai`` client whose sync (`client`) and async (`async_client`) slots both
    use the transport (httpx2). The HTTP clients are yours to close (the SDK does not)."""
    sdk = _import("mistralai.client", "mistralai")
    sync, asynchronous = http_clients(store, mode=mode, redactor=redactor, inner=inner)
    return sdk.Mistral(client=sync, async_client=asynchronous, **kwargs)


def google_genai(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
                 inner: Any = None, **kwargs: Any) -> Any:
    """One ``google.genai.Client`` whose `httpx_client` and `httpx_async_client` both use
    the transport (httpx); `http_options` (a dict or `HttpOptions`) is merged in."""
    _import("google.genai", "google-genai")
    types = _import("google.genai.types", "google-genai")
    sync, asynchronous = http_clients(store, library="httpx", mode=mode, redactor=redactor,
                                      inner=inner)
    options = kwargs.pop("http_options", None) or {}
    if not isinstance(options, dict):
        options = options.model_dump(exclude_none=True)
    options = {**options, "httpx_client": sync, "httpx_async_client": asynchronous}
    genai = importlib.import_module("google.genai")
    return genai.Client(http_options=types.HttpOptions(**options), **kwargs)


def langchain_openai(store: Store, *, mode: Mode | None = None, redactor: Redactor | None = None,
                     inner: Any = None, **kwargs: Any) -> Any:
    """One ``langchain_openai.ChatOpenAI`` whose `http_client` and `http_async_client` both
    use the transport (httpx2)."""
    sdk = _import("langchain_openai", "langchain-openai")
    sync, asynchronous = http_clients(store, mode=mode, redactor=redactor, inner=inner)
    return sdk.ChatOpenAI(http_client=sync, http_async_client=asynchronous, **kwargs)
