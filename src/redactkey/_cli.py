"""The `redact` command line: `main(argv) -> int`, exit 0 clean, 1 findings, 2 usage/input error."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click

from ._canonical import canonicalize
from ._errors import InputError, RedactkeyError
from ._keys import key_from_material, key_material

__all__ = ["main", "run"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class InputFailure(click.ClickException):
    """Bad input on stdin or in a file: one line on stderr, exit 2."""

    exit_code = EXIT_USAGE


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise InputFailure(
                f"stdin is not canonicalisable JSON: object key {key!r} appears twice; "
                "keep one of them"
            )
        out[key] = value
    return out


def _read_json_stdin() -> object:
    stream = getattr(sys.stdin, "buffer", None)
    raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogatepass")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFailure(
            f"stdin is not UTF-8: invalid byte at offset {exc.start}; save it as UTF-8"
        ) from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise InputFailure(
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
        raise InputFailure(str(exc)) from None
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


@cli.command()
@click.option("--kind", "-k", required=True,
              help='The call kind: "http" for an HTTP request document, else a model kind '
                   '("chat", "text", "structured", ...).')
@click.option("--material", is_flag=True,
              help="Print the canonical key material instead of the key.")
def key(kind: str, material: bool) -> None:
    """Print the key of the request on stdin (64 hex characters)."""
    request = _read_json_stdin()
    try:
        document = key_material(kind, request)
        out = canonicalize(document) if material else key_from_material(document).encode()
    except RedactkeyError as exc:
        raise InputFailure(str(exc)) from None
    sys.stdout.buffer.write(out + b"\n")
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
