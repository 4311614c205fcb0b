"""`redact show`, `redact diff` and `redact git-setup`: recordings reviewed as conversations."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._errors import RedactkeyError
from ._cli_options import _CONFIG, _SECRET_ENV, InputFailure, environment_redactor, input_failures

__all__ = ["diff_command", "git_setup", "show"]


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=str))
@click.option("--plain", is_flag=True, help="Plain text even on a terminal.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Output format.")
@click.option("--textconv", is_flag=True,
              help="For git's textconv: plain text without the file's name and age, and a "
                   "file that holds no recording shown as it is.")
@_SECRET_ENV
@_CONFIG
def show(files: tuple[str, ...], plain: bool, fmt: str, textconv: bool,
         secret_env: tuple[str, ...], config_path: Path | None) -> int:
    """Show recordings as conversations: the call, the answer, the key and the age.

    Reads redactkey fixtures and cassettes and other tools' cassettes (vcrpy, HAR, ...).
    Rich text on a terminal, plain text when piped or with --plain. Exit 0 shown,
    2 a file could not be read.
    """
    if not files:
        raise click.UsageError("give the recordings to show")
    from ._show import run_show

    _config, redactor = environment_redactor(config_path, secret_env, quiet=textconv)
    rich = fmt == "text" and not (plain or textconv) and sys.stdout.isatty()
    return run_show(files, fmt=fmt, rich=rich, textconv=textconv, redactor=redactor)


@click.command(name="diff")
@click.argument("files", nargs=-1, type=click.Path(path_type=str))
@click.option("--all", "everything", is_flag=True,
              help="Compare everything recorded: headers, each event, volatile fields.")
@click.option("--ignore", multiple=True, metavar="POINTER",
              help="Also hide this JSON pointer of the answer (repeatable; * matches one "
                   "token), as [tool.redactkey.verify] ignore does.")
@click.option("--git", "git", is_flag=True,
              help="Take the arguments git passes an external diff driver (path old-file "
                   "old-hex old-mode new-file new-hex new-mode) and exit 0 both ways.")
@_SECRET_ENV
@_CONFIG
def diff_command(files: tuple[str, ...], everything: bool, ignore: tuple[str, ...], git: bool,
                 secret_env: tuple[str, ...], config_path: Path | None) -> int:
    """Compare two recordings by meaning: A B.

    JSON by value, streams by their joined answer and kinds of events; ids, timestamps,
    usage and headers hidden unless --all. Exit 0 same by meaning, 1 differs,
    2 unreadable input.
    """
    if len(files) not in ((7, 9) if git else (2,)):
        raise click.UsageError("--git takes the 7 arguments git passes an external diff "
                               "driver" if git else "give two recordings: redact diff A B")
    from ..fixtures._verify import VerifyRules
    from ._diff import run_diff

    config, redactor = environment_redactor(config_path, secret_env, quiet=git)
    settings = config.verify
    try:
        rules = VerifyRules(ignore=(*settings.ignore, *ignore), exact=settings.exact,
                            presets=settings.presets)
        return run_diff(files, git=git, everything=everything, rules=rules,
                        redactor=redactor, echo=click.echo)
    except (RedactkeyError, ValueError) as exc:
        raise InputFailure(str(exc)) from None


@click.command(name="git-setup")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--external", is_flag=True,
              help="Set up `redact diff --git` as git's external diff driver instead of "
                   "the textconv `redact show --textconv`.")
def git_setup(paths: tuple[str, ...], external: bool) -> int:
    """Make git show fixture changes as conversations (idempotent).

    Adds `PATH/** diff=redactkey` for each fixture directory PATH (default
    **/fixtures/**) to .gitattributes and the driver to the repository's git config,
    and prints what it changed.
    """
    from ._gitsetup import git_setup as setup

    with input_failures():
        return setup(paths, "external" if external else "textconv", click.echo)
