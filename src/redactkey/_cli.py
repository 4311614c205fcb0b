"""The `redact` command line: `main(argv) -> int`, exit 0 clean, 1 findings, 2 usage/input error."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click

from ._canonical import canonicalize
from ._errors import InputError

__all__ = ["main", "run"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def _read_json_stdin() -> object:
    text = sys.stdin.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.UsageError(
            f"stdin is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="redactkey")
def cli() -> None:
    """Keep recorded model and tool calls safe to commit and stable to replay."""


@cli.command()
def canon() -> None:
    """Canonicalise JSON from stdin (RFC 8785) to stdout."""
    value = _read_json_stdin()
    try:
        data = canonicalize(value)
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code instead of exiting."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None,
                          prog_name="redact", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_USAGE
    return int(result) if isinstance(result, int) else EXIT_OK


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
