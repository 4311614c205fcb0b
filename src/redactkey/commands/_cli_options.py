"""What the `redact` commands share: the error for bad input, the redactor over the
environment's secrets, and the common options."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import click

from .._errors import RedactkeyError
from ..record._config import Config, load_config
from ..redact._redactor import Redactor
from ._check import build_redactor
from ._issues import EXIT_USAGE
from ._parallel import default_jobs

__all__ = ["InputFailure", "environment_redactor", "input_failures", "report_options", "warn"]

F = TypeVar("F", bound=Callable[..., object])


class InputFailure(click.ClickException):
    """Bad input on stdin or in a file: one line on stderr, exit 2."""

    exit_code = EXIT_USAGE


@contextlib.contextmanager
def input_failures() -> Iterator[None]:
    """redactkey's own errors inside raised again as `InputFailure`."""
    try:
        yield
    except RedactkeyError as exc:
        raise InputFailure(str(exc)) from None


def warn(text: str) -> None:
    """A warning of a command on stderr."""
    click.echo(f"redact: {text}", err=True)


def environment_redactor(config_path: Path | None, secret_env: Sequence[str], *,
                         quiet: bool = False) -> tuple[Config, Redactor]:
    """The configuration and a redactor over the environment's secrets; `quiet` for git's
    drivers, which run once per file (a skipped variable is said by the other commands)."""
    with input_failures():
        config = load_config(explicit=config_path)
        return config, build_redactor(config, secret_env=secret_env,
                                      warn=None if quiet else warn)


_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]),
                       default="text", show_default=True, help="Output format.")
_SECRET_ENV = click.option(
    "--secret-env", "secret_env", multiple=True, metavar="NAME",
    help="Also look for the value of this environment variable (repeatable).")
_CONFIG = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Configuration file (default: nearest .redactkey.toml or pyproject.toml).")
_OUTPUT = click.option(
    "--output", "-o", "output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None, help="Write the report to this file instead of stdout.")
_COLOR = click.option("--color/--no-color", "color", default=None,
                      help="Force colours on or off (default: only on a terminal).")
_EXIT_ZERO = click.option("--exit-zero", "exit_zero", is_flag=True,
                          help="Report findings but exit 0 (unreadable input still exits 2).")
_STRICT = click.option("--strict", is_flag=True,
                       help="A file that may hold a recording but cannot be read (gzip "
                            "over the cap or corrupt, an undecodable body, a file scrub "
                            "cannot hold whole) is an error, not a warning.")
_JOBS = click.option("--jobs", "-j", "jobs", type=click.IntRange(min=1), default=default_jobs,
                     help="Read files in N processes (default: the machine's free cores, "
                          "its cores less the 1-minute load average); the report is the "
                          "same, in the same order.")
_VERBOSE = click.option("--verbose", "-v", is_flag=True,
                        help="Also list notes (request ids) in the text report.")


def report_options(command: F) -> F:
    """The options of the commands that write a report (`check`, `audit`)."""
    for option in reversed((_FORMAT, _SECRET_ENV, _CONFIG, _OUTPUT, _COLOR, _EXIT_ZERO,
                            _STRICT, _JOBS)):
        command = option(command)
    return command
