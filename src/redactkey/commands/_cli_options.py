"""What the `redact` commands share: the error for bad input, and the common options."""

from __future__ import annotations

from pathlib import Path

import click

from ._issues import EXIT_USAGE

__all__ = ["InputFailure"]


class InputFailure(click.ClickException):
    """Bad input on stdin or in a file: one line on stderr, exit 2."""

    exit_code = EXIT_USAGE


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
_JOBS = click.option("--jobs", "-j", "jobs", type=click.IntRange(min=1), default=None,
                     help="Read files in N processes (default: the machine's free cores, "
                          "its cores less the 1-minute load average); the report is the "
                          "same, in the same order.")
_VERBOSE = click.option("--verbose", "-v", is_flag=True,
                        help="Also list notes (request ids) in the text report.")
