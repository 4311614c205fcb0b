"""`ToolFixtures`: plain Python tool functions recorded and replayed like model calls."""

from __future__ import annotations

import inspect
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any, TypeVar, cast

from .._errors import raised_at_entry
from ..fixtures._store import FixtureStore
from ._codec import StreamRedactor
from ._modes import Mode
from ._replay import ModelFixtures
from ._surfaces import wrap_function

__all__ = ["ToolFixtures"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class ToolFixtures:
    """Record and replay of plain Python tool functions, keyed on tool name and arguments.

    `mode=None` reads `REDACTKEY_MODE` (the model override does not apply to tools); the
    other keyword arguments are `ModelFixtures`'s. The kind is "tool:<tool>"
    (docs/modes.md, "Tool calls").
    """

    def __init__(self, store: FixtureStore, *, mode: str | None = None,
                 redactor: StreamRedactor | None = None, **options: Any) -> None:
        self.fixtures = ModelFixtures(store, mode=mode, redactor=redactor,
                                      **{**options, "model": False})

    @property
    def mode(self) -> Mode:
        return self.fixtures.mode

    def __repr__(self) -> str:
        return f"ToolFixtures({self.fixtures.store!r}, mode={self.mode!r})"

    @raised_at_entry
    def call(self, name: str, arguments: Mapping[str, Any], live: Callable[[], T] | None) -> Any:
        """The result of tool `name` with `arguments`: replayed, or from `live` and recorded."""
        return self.fixtures.call("tool:" + name, dict(arguments), live)

    @raised_at_entry
    async def acall(
        self, name: str, arguments: Mapping[str, Any], live: Callable[[], Awaitable[T]] | None
    ) -> Any:
        """Async twin of `call`."""
        return await self.fixtures.acall("tool:" + name, dict(arguments), live)

    @raised_at_entry
    def stream(
        self, name: str, arguments: Mapping[str, Any], live: Callable[[], Iterable[Any]] | None
    ) -> Iterator[Any]:
        """The chunks of streamed tool `name`: replayed, or passed through from `live` and
        recorded once the stream has been read to its end (like a model stream)."""
        return self.fixtures.stream("tool:" + name, dict(arguments), live)

    @raised_at_entry
    def astream(
        self,
        name: str,
        arguments: Mapping[str, Any],
        live: Callable[[], AsyncIterable[Any] | Awaitable[AsyncIterable[Any]]] | None,
    ) -> AsyncIterator[Any]:
        """Async twin of `stream`: `live` returns an async iterable."""
        return self.fixtures.astream("tool:" + name, dict(arguments), live)

    def tool(self, fn: F | None = None, *, name: str | None = None,
             decode: Callable[[Any], Any] | None = None) -> Any:
        """Decorator: `@tools.tool` or `@tools.tool(name="search")` on a sync or async
        function, or on a generator or async-generator function (its chunks are recorded
        and replayed like a model stream's)."""
        def decorate(func: F) -> F:
            kind = "tool:" + (name or func.__name__)
            self.fixtures.keying.spec_for(kind)  # a name that cannot name a file is refused now
            streams = inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func)
            return cast(F, wrap_function(self.fixtures, func, kind, stream=streams,
                                         schema=None, decode=decode))

        return decorate(fn) if fn is not None else decorate
