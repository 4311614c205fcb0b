"""The modes (their table is in docs/modes.md), and the one place a mode is read from the
environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from .._errors import ConfigError, UsageError

__all__ = [
    "DEFAULT_MODE",
    "MODEL_MODE_ENV",
    "MODES",
    "MODE_ENV",
    "Mode",
    "how_to_record",
    "parse_mode",
    "settled_mode",
    "settled_modes",
]

Mode = Literal["live", "record", "replay", "auto", "verify"]
MODES: tuple[Mode, ...] = ("live", "record", "replay", "auto", "verify")
MODE_ENV = "REDACTKEY_MODE"
MODEL_MODE_ENV = "REDACTKEY_MODEL_MODE"
DEFAULT_MODE: Mode = "replay"


def parse_mode(value: str | None, source: str) -> Mode | None:
    """`value` as a mode, None when it is unset or blank.

    Anything else is an error naming where it came from: a `UsageError` for
    ``source="argument"``, else a `ConfigError` naming `source` (an environment
    variable, a command-line option, a marker).
    """
    if value in MODES:
        return value
    if value is None or value == "":
        return None
    problem = f"{value!r} is not a mode; use one of {', '.join(MODES)}"
    if source == "argument":
        raise UsageError(f"mode {problem}")
    raise ConfigError(source, problem)


def settled_mode(
    mode: str | None, *, model: bool, environ: Mapping[str, str] | None = None
) -> tuple[Mode, str]:
    """The mode and where it came from: "argument", an environment variable, or "default".

    `REDACTKEY_MODE` covers tool, HTTP and model calls, so one setting means "offline";
    with `model=True`, `REDACTKEY_MODEL_MODE` overrides it for model calls (replay the
    tools, keep a live model while iterating on a prompt). Blanks and case do not matter.
    """
    if mode is not None:
        return parse_mode(mode, "argument") or DEFAULT_MODE, "argument"
    env = os.environ if environ is None else environ
    for name in (MODEL_MODE_ENV, MODE_ENV) if model else (MODE_ENV,):
        value = parse_mode(env.get(name, "").strip().lower(), name)
        if value is not None:
            return value, name
    return DEFAULT_MODE, "default"


def settled_modes(
    mode: str | None, model_mode: str | None, environ: Mapping[str, str] | None = None
) -> tuple[tuple[Mode, str], tuple[Mode, str]]:
    """The tool and model modes with their sources: each argument, else its environment
    variable; the model mode falls back to the tool mode."""
    tool = settled_mode(mode, model=False, environ=environ)
    env = os.environ if environ is None else environ
    if model_mode is None and not env.get(MODEL_MODE_ENV, "").strip():
        return tool, tool
    return tool, settled_mode(model_mode, model=True, environ=environ)


def how_to_record(source: str, *, model: bool) -> str:
    """What a replay miss advises, for a mode that came from `source`."""
    if source == "argument":
        return "pass mode='auto' (records only what is missing) or mode='record'"
    override = f" ({MODEL_MODE_ENV}=auto for model calls alone)" if model else ""
    return (f"set {MODE_ENV}=auto (records only what is missing){override} "
            f"or {MODE_ENV}=record, and run again")
