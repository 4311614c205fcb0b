"""The exception tree, split by who is at fault.

    RedactkeyError
    ├── InputError                  bad data handed to redactkey (fix the input)
    │   ├── CanonicalizationError   a value JSON / RFC 8785 cannot hold
    │   ├── SecretError             a secret slot that cannot be used safely
    │   ├── FixtureFormatError      a fixture file that is corrupt or schema-invalid
    │   └── ConfigError             bad `[tool.redactkey]` configuration
    ├── FixtureError                the fixtures do not match the run (re-record)
    │   ├── MissingFixtureError     replay found no recorded call for a request
    │   └── StaleFixtureError       a recorded answer no longer fits its schema
    └── UsageError                  redactkey used the wrong way (fix the calling code)

Every error names *where* (file, JSON pointer, slot) and ends with what to do.
No message ever contains a secret value.
"""

from __future__ import annotations

__all__ = [
    "CanonicalizationError",
    "ConfigError",
    "FixtureError",
    "FixtureFormatError",
    "InputError",
    "MissingFixtureError",
    "RedactkeyError",
    "SecretError",
    "StaleFixtureError",
    "UsageError",
]


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

    def __str__(self) -> str:  # LookupError would quote a single arg; keep it readable
        return str(self.args[0]) if self.args else ""


class StaleFixtureError(FixtureError):
    """A recorded answer no longer fits the current schema: re-record it."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: recorded answer is stale: {problem}; re-record it")


class UsageError(RedactkeyError, TypeError):
    """redactkey was called the wrong way; the calling code must change."""
