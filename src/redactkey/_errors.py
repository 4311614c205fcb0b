"""The exception tree, split by who is at fault.

    RedactkeyError
    ├── InputError                  bad data handed to redactkey (fix the input)
    │   ├── CanonicalizationError   a value JSON / RFC 8785 cannot hold
    │   ├── SecretError             a secret slot that cannot be used safely
    │   ├── FixtureFormatError      a fixture file that is corrupt or schema-invalid
    │   ├── ConfigError             bad `[tool.redactkey]` configuration
    │   └── StructuredOutputError   a model's structured answer broke its schema
    ├── FixtureError                the fixtures do not match the run (re-record)
    │   ├── MissingFixtureError     replay found no recorded call for a request
    │   ├── StaleFixtureError       a recorded answer no longer fits its schema
    │   ├── DriftError              verify: the live answer differs in meaning from its recording
    │   └── ExpiredFixtureError     a fixture is older than the allowed maximum age
    ├── RecordedError               a callee's own failure, recorded and raised again
    ├── UsageError                  redactkey used the wrong way (fix the calling code)
    ├── VolatileValueWarning        (a warning) key material that changes on every run
    └── ExpiredFixtureWarning       (a warning) a replayed fixture is older than its maximum age

Every error names *where* (file, JSON pointer, slot) and ends with what to do.
No message ever contains a secret value.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

__all__ = [
    "CanonicalizationError",
    "ConfigError",
    "DriftError",
    "DummySecretWarning",
    "ExpiredFixtureError",
    "ExpiredFixtureWarning",
    "FixtureError",
    "FixtureFormatError",
    "InputError",
    "MissingFixtureError",
    "RecordedError",
    "RedactkeyError",
    "SecretError",
    "StaleFixtureError",
    "StructuredOutputError",
    "UsageError",
    "VolatileValueWarning",
    "pointer_join",
    "raised_at_entry",
    "warn_at_caller",
]


def pointer_join(pointer: str, token: str | int) -> str:
    """Append one reference token to a JSON pointer (RFC 6901 escaping).

    The pointers errors and findings name, at every stage: it lives here, below them all.
    """
    text = str(token).replace("~", "~0").replace("/", "~1")
    return f"{pointer}/{text}"


class RedactkeyError(Exception):
    """Root of every error redactkey raises on purpose."""


class InputError(RedactkeyError, ValueError):
    """Data handed to redactkey cannot be used as it is."""


class CanonicalizationError(InputError):
    """A value cannot be brought to RFC 8785 JSON.

    `pointer` is the JSON pointer (RFC 6901) of the offending value.
    """

    def __init__(self, pointer: str, problem: str, fix: str) -> None:
        self.pointer = pointer
        self.problem = problem
        self.fix = fix
        where = pointer if pointer else "(root)"
        super().__init__(f"cannot canonicalize value at {where}: {problem}; {fix}")


class SecretError(InputError):
    """A secret slot cannot be used safely (too short, unreadable, wrong type)."""

    def __init__(self, slot: str, problem: str, fix: str) -> None:
        self.slot = slot
        self.problem = problem
        self.fix = fix
        super().__init__(f"secret slot {slot!r}: {problem}; {fix}")


class FixtureFormatError(InputError):
    """A fixture or cassette file is unreadable, corrupt or schema-invalid."""

    def __init__(self, path: str, problem: str, *, pointer: str = "") -> None:
        self.path = path
        self.problem = problem
        self.pointer = pointer
        where = f"{path} at {pointer}" if pointer else path
        super().__init__(
            f"{where}: {problem}; fix or delete the file and re-record it "
            "(it was not overwritten)"
        )


class ConfigError(InputError):
    """Configuration (`[tool.redactkey]`, `.redactkey.toml`) is invalid."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


class StructuredOutputError(InputError):
    """A model's structured answer broke its schema: the model's own failure.

    It is recorded like an answer and raised again on replay without a call, so a
    workflow that shows `problems` to the model and asks again is retraced exactly.
    `answer` is the offending answer (redacted when it comes from a fixture).
    """

    def __init__(self, kind: str, problems: list[str], *, answer: object = None) -> None:
        self.kind = kind
        self.problems = list(problems)
        self.answer = answer
        listed = "; ".join(self.problems) if self.problems else "no detail"
        super().__init__(
            f"the {kind!r} answer breaks its schema: {listed}; show the problems to the "
            "model and ask again, or fix the schema"
        )


class FixtureError(RedactkeyError):
    """The recorded fixtures do not fit this run; re-recording fixes it."""


class MissingFixtureError(FixtureError, LookupError):
    """Replay found no recorded call for a request.

    The message names the kind, the key, the store, the nearest recorded call of
    the same kind with the JSON pointers that differ, and how to record.
    """

    def __init__(
        self,
        kind: str,
        key: str,
        store: str,
        *,
        nearest: str | None = None,
        diff: list[str] | None = None,
        how_to_record: str = "set REDACTKEY_MODE=record (or auto) and run again",
    ) -> None:
        self.kind = kind
        self.key = key
        self.store = store
        self.nearest = nearest
        self.diff = list(diff or [])
        self.how_to_record = how_to_record
        lines = [f"no recorded {kind!r} call with key {key} in {store}"]
        if nearest is not None:
            lines.append(f"nearest recorded {kind!r} call: {nearest}")
            lines.extend(f"  {d}" for d in self.diff)
        else:
            lines.append(f"no {kind!r} call is recorded there at all")
        lines.append(f"to record it: {how_to_record}")
        super().__init__("\n".join(lines))


class StaleFixtureError(FixtureError):
    """A recorded answer no longer fits the current schema: re-record it."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: recorded answer is stale: {problem}; re-record it")


class DriftError(FixtureError):
    """Verify mode: a live answer differs in meaning from its recording.

    `path` names the fixture, `differences` lists ``(pointer, description)`` pairs
    whose description shows the recorded and the live value (redacted, shortened),
    and `how_to_record` says how to re-record just this call. The recording is
    left as it was.
    """

    def __init__(
        self,
        path: str,
        kind: str,
        key: str,
        differences: list[tuple[str, str]],
        *,
        how_to_record: str = "re-record it with REDACTKEY_MODE=record",
    ) -> None:
        self.path = path
        self.kind = kind
        self.key = key
        self.differences = list(differences)
        self.how_to_record = how_to_record
        lines = [f"{path}: the live {kind!r} answer drifted from its recording "
                 f"({len(self.differences)} "
                 f"{'difference' if len(self.differences) == 1 else 'differences'}):"]
        lines.extend(f"  {pointer or '(root)'}: {what}" for pointer, what in self.differences)
        lines.append(f"to re-record it: {how_to_record}")
        super().__init__("\n".join(lines))

    @property
    def pointers(self) -> list[str]:
        """The JSON pointers that differ, in order."""
        return [pointer for pointer, _ in self.differences]


class ExpiredFixtureError(FixtureError):
    """A fixture is older than the allowed maximum age (`on_expiry="fail"`): re-record it."""

    def __init__(self, path: str, age: str, max_age: str, *, how_to_record: str,
                 source: str = "git") -> None:
        self.path = path
        self.age = age
        self.max_age = max_age
        self.source = source
        self.how_to_record = how_to_record
        super().__init__(
            f"{path}: recorded {age} ago (by {source}), older than the maximum age "
            f"{max_age}; re-record it: {how_to_record}"
        )


class RecordedError(RedactkeyError):
    """A failure of the callee that was recorded (a user predicate said it is deterministic).

    Replay raises it with the recorded `type` (the original class's qualified name),
    the redacted `message` and optional `data`; nothing from the file is imported or run.
    `path` names the fixture.
    """

    def __init__(self, type: str, message: str, *, data: object = None, path: str = "") -> None:
        self.type = type
        self.message = message
        self.data = data
        self.path = path
        where = f" (recorded in {path})" if path else ""
        super().__init__(f"{type}: {message}{where}")


class UsageError(RedactkeyError, TypeError):
    """redactkey was called the wrong way; the calling code must change."""


class VolatileValueWarning(RedactkeyError, UserWarning):
    """Key material holds a value that looks different on every run (UUID, timestamp).

    A call keyed on it records but never replays; keep the value out of the request
    or add a normalizer (`ReplaceVolatile`) to its `KeySpec`.
    """

    def __init__(self, kind: str, pointer: str, reason: str) -> None:
        self.kind = kind
        self.pointer = pointer
        self.reason = reason
        super().__init__(
            f"{kind!r} call: key material at {pointer} looks like a {reason} and will differ "
            "on every run, so the call would never replay; keep it out of the request or "
            "add a normalizer (redactkey.ReplaceVolatile) to the KeySpec"
        )


class ExpiredFixtureWarning(RedactkeyError, UserWarning):
    """A replayed fixture is older than the allowed maximum age (`on_expiry="warn"`)."""

    def __init__(self, path: str, age: str, max_age: str, *, source: str = "git") -> None:
        self.path = path
        self.age = age
        self.max_age = max_age
        self.source = source
        super().__init__(
            f"{path}: recorded {age} ago (by {source}), older than the maximum age {max_age}; "
            "re-record it"
        )


class DummySecretWarning(RedactkeyError, UserWarning):
    """A secret slot holds a stand-in value (too short, or a placeholder) and was skipped.

    Only while nothing is recorded: a replay needs no real credential, so a dummy
    `OPENAI_API_KEY=dummy` is passed over instead of stopping the run. A record run
    refuses such a value with a `SecretError`.
    """

    def __init__(self, slot: str, reason: str) -> None:
        self.slot = slot
        self.reason = reason
        super().__init__(
            f"secret slot {slot!r} skipped: {reason}; fine for replay, which needs no real "
            "credential (a record run refuses it)"
        )


P = ParamSpec("P")
R = TypeVar("R")


def raised_at_entry(fn: Callable[P, R]) -> Callable[P, R]:
    """Re-raise redactkey's own errors from this public entry point, inner frames dropped.

    pytest prints the arguments of the frame an error was raised in, and the inner
    frames of redaction, keying and replay hold raw requests and secret values. The
    error keeps its type, message and attributes; only the traceback is cut, and the
    entry frame itself is hidden from pytest (`__tracebackhide__`).
    """
    if inspect.iscoroutinefunction(fn):
        coroutine: Callable[P, Awaitable[object]] = fn

        @functools.wraps(fn)
        async def async_entry(*args: P.args, **kwargs: P.kwargs) -> object:
            __tracebackhide__ = True
            try:
                return await coroutine(*args, **kwargs)
            except RedactkeyError as exc:
                raise exc.with_traceback(None) from exc.__cause__

        return async_entry  # type: ignore[return-value]

    @functools.wraps(fn)
    def entry(*args: P.args, **kwargs: P.kwargs) -> R:
        __tracebackhide__ = True
        try:
            return fn(*args, **kwargs)
        except RedactkeyError as exc:
            raise exc.with_traceback(None) from exc.__cause__

    return entry


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_at_caller(warning: Warning) -> None:
    """Issue `warning` at the first frame outside redactkey: the user's own call site.

    A fixed `stacklevel` breaks as soon as a call goes through one more helper or
    wrapper; walking out of the package always names the line the user wrote.
    """
    level = 2
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _PACKAGE_DIR
    ):
        frame = frame.f_back
        level += 1
    warnings.warn(warning, stacklevel=level)
