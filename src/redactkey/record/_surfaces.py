"""The surfaces over `ModelFixtures`: a decorator over a client function and an adapter
over a client object, whose calls are keyed on their arguments."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ._replay import ModelFixtures

__all__ = ["ClientAdapter", "wrap_function"]


def bound_request(fn: Callable[..., Any], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> dict[str, Any]:
    """A function's arguments as one mapping: positional by name, **kwargs flattened."""
    signature = inspect.signature(fn)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise UsageError(f"{fn.__qualname__}: {exc}") from None
    bound.apply_defaults()
    request: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        param = signature.parameters[name]
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            request.update(value)
        elif param.kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                request[name] = list(value)
        elif name not in {"self", "cls"}:
            request[name] = value
    return request


def wrap_function(
    fixtures: ModelFixtures,
    fn: Callable[..., Any],
    kind: str,
    *,
    stream: bool,
    schema: Mapping[str, Any] | None,
    decode: Callable[[Any], Any] | None,
) -> Callable[..., Any]:
    def keyed(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, list[bool]]:
        """The request, the live callee (its result awaited or iterated by the layer), and
        whether the answer is replayed (`decode` applies only then)."""
        replayed = [True]

        def live() -> Any:
            replayed[0] = False
            return fn(*args, **kwargs)

        return bound_request(fn, args, kwargs), live, replayed

    def finish(value: Any, replayed: list[bool]) -> Any:
        return decode(value) if (decode is not None and replayed[0]) else value

    is_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
    if not stream and not is_async:
        @functools.wraps(fn)
        def sync_call(*args: Any, **kwargs: Any) -> Any:
            request, live, replayed = keyed(args, kwargs)
            return finish(fixtures.call(kind, request, live, schema=schema), replayed)

        return sync_call
    if not stream:
        @functools.wraps(fn)
        async def async_call(*args: Any, **kwargs: Any) -> Any:
            request, live, replayed = keyed(args, kwargs)
            return finish(await fixtures.acall(kind, request, live, schema=schema), replayed)

        return async_call
    if not is_async:
        @functools.wraps(fn)
        def sync_stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
            request, live, replayed = keyed(args, kwargs)
            chunks = fixtures.stream(kind, request, live)
            return (finish(chunk, replayed) for chunk in chunks)

        return sync_stream

    @functools.wraps(fn)
    def async_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        request, live, replayed = keyed(args, kwargs)
        chunks = fixtures.astream(kind, request, live)

        async def decoded() -> AsyncIterator[Any]:
            async for chunk in chunks:
                yield finish(chunk, replayed)

        return decoded()

    return async_stream


class ClientAdapter:
    """A client object whose chosen methods record and replay; the rest is the client's."""

    def __init__(
        self,
        fixtures: ModelFixtures,
        client: Any,
        methods: Mapping[str, str],
        *,
        streams: Mapping[str, str] | None = None,
        decode: Callable[[Any], Any] | None = None,
        _prefix: str = "",
    ) -> None:
        self._fixtures = fixtures
        self._client = client
        self._methods = dict(methods)
        self._streams = dict(streams or {})
        self._decode = decode
        self._prefix = _prefix

    def __repr__(self) -> str:
        return f"ClientAdapter({self._client!r}, {self._fixtures!r})"

    def __getattr__(self, name: str) -> Any:
        path = self._prefix + name
        client = self.__dict__["_client"]
        for table, stream in ((self._methods, False), (self._streams, True)):
            if path in table:
                target = getattr(client, name, None) if client is not None else None
                fn = target if target is not None else _offline(path)
                return wrap_function(self._fixtures, _as_kwargs(fn), table[path],
                                      stream=stream, schema=None, decode=self._decode)
        if any(m.startswith(path + ".") for m in (*self._methods, *self._streams)):
            inner = getattr(client, name) if client is not None else None
            return ClientAdapter(self._fixtures, inner, self._methods, streams=self._streams,
                                 decode=self._decode, _prefix=path + ".")
        if client is None:
            raise UsageError(f"{path}: the adapter has no client (replay); only "
                             f"{sorted({*self._methods, *self._streams})} are available")
        return getattr(client, name)


def _offline(path: str) -> Callable[..., Any]:
    def unavailable(**request: Any) -> Any:
        raise UsageError(f"{path}: no client to call in this mode; pass one to adapt()")

    return unavailable


def _as_kwargs(fn: Callable[..., Any]) -> Callable[..., Any]:
    """SDK methods take keyword arguments; key them by name whatever their signature says."""
    if inspect.iscoroutinefunction(fn):
        async def acall(**request: Any) -> Any:
            return await fn(**request)

        return acall

    def call(**request: Any) -> Any:
        return fn(**request)

    return call
