"""The `redact` command line: `main(argv) -> int`, exit 0 clean, 1 findings, 2 usage/input
error, 3 internal error (one line naming where, never a traceback)."""

from __future__ import annotations

import functools
import io
import json
import os
import sys
import traceback
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import click

from .._errors import RedactkeyError
from ..fixtures._store import atomic_write
from ..keys._canonical import canonicalize
from ..keys._keys import key_from_material, key_material, stored_request
from ..record._config import Config, load_config
from ..redact._redactor import MAX_NESTING, nesting_exceeds
from ._check import Baseline, Checker, CheckerSpec, build_redactor, check_paths, progress_bar
from ._cli_options import (
    _COLOR,
    _CONFIG,
    _JOBS,
    _SECRET_ENV,
    _STRICT,
    _VERBOSE,
    InputFailure,
    environment_redactor,
    input_failures,
    report_options,
    warn,
)
from ._cli_review import diff_command, git_setup, show
from ._issues import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Report, counted
from ._render import reason_kind, render

__all__ = ["main", "run"]

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
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise InputFailure(
            f"stdin is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise InputFailure("stdin: JSON nested too deeply to read; flatten it") from None
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="redactkey")
def cli() -> None:
    """Keep recorded model and tool calls safe to commit and stable to replay."""


@cli.command()
def canon() -> None:
    """Canonicalise JSON from stdin (RFC 8785) to stdout."""
    value = _read_json_stdin()
    with input_failures():
        data = canonicalize(value)
    click.echo(data, nl=False)


# --- check / audit / scrub ----------------------------------------------------------


def _setup(config_path: Path | None, secret_env: Sequence[str], **settings: bool
           ) -> tuple[Config, Checker]:
    """The configuration and a checker with `settings` (`CheckerSpec`'s), which worker
    processes build again."""
    config, redactor = environment_redactor(config_path, secret_env)
    return config, CheckerSpec(config, tuple(secret_env), **settings).build(redactor)


def _emit(report: Report, fmt: str, output: Path | None, color: bool | None,
          verbose: bool = False, exit_zero: bool = False) -> int:
    report.exit_zero = exit_zero
    if output is None:
        render(report, fmt, sys.stdout, color=color, verbose=verbose)
        sys.stdout.flush()
    else:
        buffer = io.StringIO()
        render(report, fmt, buffer, color=False)
        try:
            atomic_write(output, buffer.getvalue().encode("utf-8"))
        except OSError as exc:
            raise InputFailure(f"{output}: cannot write the report: {exc.strerror or exc}")\
                from None
        if fmt != "text":
            render(report, "text", sys.stderr, color=color, verbose=verbose)
    return report.exit_code


@cli.command()
@click.option("--kind", "-k", required=True,
              help='The call kind: "http" for an HTTP request document, else a model kind '
                   '("chat", "text", "structured", ...).')
@click.option("--material", is_flag=True,
              help="Print the canonical key material instead of the key.")
@click.option("--redact/--no-redact", "redact", default=True, show_default=True,
              help="Redact the request first (environment secrets, sensitive keys, "
                   "detectors), as recording does.")
@_SECRET_ENV
@_CONFIG
def key(kind: str, material: bool, redact: bool, secret_env: tuple[str, ...],
        config_path: Path | None) -> None:
    """Print the key of the request on stdin (64 hex characters)."""
    request = _read_json_stdin()
    if nesting_exceeds(request):
        raise InputFailure(
            f"stdin: request nested deeper than {MAX_NESTING} levels; no request needs that, "
            "pass the request document itself"
        )
    with input_failures():
        config = load_config(explicit=config_path)
        redactor = build_redactor(config, secret_env=secret_env, warn=warn) if redact else None
        request = stored_request(kind, request)
        document = key_material(kind, request, spec=config.key_spec(kind), redactor=redactor)
        out = canonicalize(document) if material else key_from_material(document).encode()
    click.echo(out)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=str))
@report_options
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Report only findings not in this baseline (written by --write-baseline).")
@click.option("--write-baseline", "write_baseline",
              type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every current finding to this baseline file (fingerprints only, "
                   "never values) and exit 0.")
def check(files: tuple[str, ...], fmt: str, secret_env: tuple[str, ...],
          config_path: Path | None, output: Path | None, color: bool | None,
          exit_zero: bool, strict: bool, jobs: int, baseline_path: Path | None,
          write_baseline: Path | None) -> int:
    """Find unredacted secrets in FILES (fixtures, cassettes, any text): the pre-commit hook.

    Prints `path:line: rule (slot) masked-preview` per finding. Exit 0 clean,
    1 findings, 2 usage error or unreadable input. A line holding `redact: allow`
    (or `pragma: allowlist secret`, `gitleaks:allow`) is passed over.
    """
    if not files:
        raise click.UsageError("give the files or directories to check")
    # JSON as parsed (the fast path of a pre-commit hook): the redactor opens bodies held
    # in strings itself; encoded bodies are still probed within the caps
    _config, checker = _setup(config_path, secret_env, normalise=False, strict=strict,
                              tagging=baseline_path is not None or write_baseline is not None)
    baseline = None
    if baseline_path is not None and write_baseline is None:
        with input_failures():
            baseline = Baseline.load(baseline_path)
    # writing a baseline records every current finding, the baselined ones too
    report = check_paths(files, checker, progress=progress_bar(color), baseline=baseline,
                         jobs=jobs)
    if write_baseline is not None and not report.problems:
        accepted = Baseline.of(report.issues)
        try:
            atomic_write(write_baseline, accepted.to_bytes())
        except OSError as exc:
            raise InputFailure(f"{write_baseline}: cannot write the baseline: "
                               f"{exc.strerror or exc}") from None
        click.echo(f"redact: wrote {len(accepted.entries)} findings to {write_baseline}",
                   err=True)
        return 0
    return _emit(report, fmt, output, color, exit_zero=exit_zero)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@report_options
@_VERBOSE
@click.option("--run-report", "run_report", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="A run report (.redactkey-report.json from the pytest plugin): the fixtures "
                   "it lists as unused are reported.")
@click.option("--max-age", "max_age", default=None, metavar="DURATION",
              help="Report recordings last committed longer ago than this (30d, 12h, 2w) as "
                   "expired-fixture (mtime outside git).")
def audit(paths: tuple[str, ...], fmt: str, secret_env: tuple[str, ...],
          config_path: Path | None, output: Path | None, color: bool | None,
          exit_zero: bool, strict: bool, jobs: int, verbose: bool,
          run_report: Path | None, max_age: str | None) -> int:
    """Audit fixture directories and recorded-HTTP cassettes under PATHS.

    Checks secrets, identifying headers, cookies, volatile values, keys vs file
    names, formatting, duplicates and sizes. Exit 0 clean (notes only), 1 findings,
    2 usage error or unreadable input.
    """
    if not paths:
        raise click.UsageError("give the fixture directories or cassettes to audit")
    age_limit = None
    if max_age is not None:
        from ..fixtures._age import parse_duration

        try:
            age_limit = parse_duration(max_age)
        except RedactkeyError as exc:
            raise click.UsageError(f"--max-age: {exc}") from None
    _config, checker = _setup(config_path, secret_env, strict=strict)
    from ._audit import audit_paths, load_unused_files  # jsonschema: only for the audit

    unused: frozenset[Path] = frozenset()
    if run_report is not None:
        with input_failures():
            unused = load_unused_files(run_report)
    report = audit_paths(paths, checker, unused=unused, progress=progress_bar(color), jobs=jobs,
                         max_age=age_limit)
    return _emit(report, fmt, output, color, verbose, exit_zero)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--write", is_flag=True,
              help="Apply the changes (atomically). Without it, only show what would change.")
@_SECRET_ENV
@_CONFIG
@_COLOR
@_STRICT
@_JOBS
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="Output format: json is the audit's report (files, skipped, findings: "
                   "what would be or remains scrubbed); the lines of the text report go "
                   "to stderr.")
def scrub(paths: tuple[str, ...], write: bool, secret_env: tuple[str, ...],
          config_path: Path | None, color: bool | None, strict: bool, jobs: int,
          fmt: str) -> int:
    """Redact fixtures and cassettes under PATHS in place (a dry run unless --write).

    Our fixtures are re-keyed and renamed when their key changes. Dry run: exit 1
    when something would change. --write: exit 0 when everything was scrubbed,
    1 when a finding remains or a rename was refused, 2 for unreadable input.
    """
    if not paths:
        raise click.UsageError("give the fixture directories or cassettes to scrub")
    from ._scrub import plan_paths

    # scrub rewrites what the audit reports as an error or a warning, in the same words;
    # it rewrites a file whole, so one over the whole-read bound is refused
    _config, checker = _setup(config_path, secret_env, strict=strict, pieces=False)
    as_json = fmt == "json"

    echo = functools.partial(click.echo, err=as_json)
    report = plan_paths(paths, checker, write=write, echo=echo, progress=progress_bar(color),
                        jobs=jobs)
    if as_json:
        return _emit(report, "json", None, color)
    for problem in report.problems:
        prefix = "" if problem.problem.startswith("cannot ") else "cannot read: "
        click.echo(f"{problem.path}: {prefix}{problem.problem}")
    skipped = {path for path, _ in report.skipped}
    unread = {issue.path: issue.detail for issue in report.issues  # (not licences)
              if issue.rule == "unreadable-file" and issue.path in skipped}
    for path, why in unread.items():
        click.echo(f"{path}: not read: {why}")
    changed = len({issue.path for issue in report.issues if issue.path not in unread}
                  | {problem.path for problem in report.problems})
    read = counted(report.files, "file") + " read" + (f", {len(unread)} not" if unread else "")
    if write:
        click.echo(f"scrub: {read}; " + ("done" if report.exit_code == 0
                                         else f"{counted(changed, 'file')} need attention"))
    else:
        click.echo(f"scrub (dry run): {read}; "
                   + (f"{changed} would change; run again with --write to apply"
                      if changed else "nothing to change"))
    return report.exit_code


@cli.command()
@click.option("--run-report", "run_report", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="The run report of a complete run (.redactkey-report.json).")
@click.option("--write", is_flag=True, help="Delete the files. Without it, only list them.")
@click.option("--force", is_flag=True,
              help="Prune although the report comes from a partial run (-k, -m, deselected "
                   "tests, collection errors, a lost xdist worker).")
def prune(run_report: Path, write: bool, force: bool) -> int:
    """Delete the fixtures a run report lists as unused (a dry run unless --write).

    Only files inside the fixture directories the report names, with fixture file
    names, are ever deleted. Exit 0 done (or nothing to do), 1 something refused
    (a partial run, a file outside the roots), 2 usage error or unreadable report.
    """
    from ._prune import plan_prune

    with input_failures():
        plan = plan_prune(run_report, force=force)
    shown_roots = ", ".join(_relative(root) for root in plan.roots) or "none"
    click.echo(f"prune: {run_report} (fixture roots: {shown_roots})")
    if plan.blocked:
        click.echo("refused: the report comes from a partial run, so fixtures of the tests "
                   "that did not run are listed as unused:")
        for reason in plan.partial:
            click.echo(f"  {reason}")
        click.echo("run the whole suite and prune with its report, or pass --force")
    for item, reason in plan.refused:
        click.echo(f"refused: {item}: {reason}")
    verb = "deleting" if write and not plan.blocked else "would delete"
    for path in plan.delete:
        click.echo(f"{verb} {_relative(path)}")
    failed = plan.apply() if write and not plan.blocked else []
    for gone, problem in failed:
        click.echo(f"cannot delete {_relative(gone)}: {problem}")
    count = len(plan.delete)
    refusals = f", {len(plan.refused)} refused" if plan.refused else ""
    if plan.blocked:
        click.echo(f"prune: nothing deleted; {counted(count, 'file')} listed as unused")
    elif write:
        click.echo(f"prune: {counted(count - len(failed), 'file')} deleted{refusals}")
    else:
        click.echo(f"prune (dry run): {counted(count, 'file')} would be deleted{refusals}"
                   + ("; run again with --write to delete them" if count else ""))
    refused = plan.blocked or bool(plan.refused) or bool(failed)
    return EXIT_FINDINGS if refused else EXIT_OK


@cli.command()
@click.argument("sources", nargs=-1, type=click.Path(path_type=str))
@click.option("--to", "to", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The fixture directory to write (the layout below each SOURCE is kept).")
@click.option("--write", is_flag=True,
              help="Write the fixtures. Without it, only print the plan.")
@click.option("--verbose", "-v", is_flag=True,
              help="List every planned fixture, duplicate and refusal (the default for up "
                   "to 50 interactions).")
@_SECRET_ENV
@_CONFIG
def migrate(sources: tuple[str, ...], to: Path, write: bool, verbose: bool,
            secret_env: tuple[str, ...], config_path: Path | None) -> int:
    """Turn vcrpy / pytest-recording, Ruby VCR and other cassettes into redactkey fixtures.

    Each interaction is redacted and keyed as FixtureTransport records it (kind
    "http"), SSE bodies split into events; duplicates are reported and unkeyable
    interactions listed with a reason. A dry run unless --write. Exit 0 everything
    migrated, 1 something was refused, 2 usage error.
    """
    if not sources:
        raise click.UsageError("give the cassettes or cassette directories to migrate")
    missing = [source for source in sources if not Path(source).exists()]
    if missing:
        raise click.UsageError(f"{missing[0]}: no such file or directory")
    if to.exists() and not to.is_dir():
        raise click.UsageError(f"--to {to}: not a directory")
    from ._migrate import migrate as run_migration

    _config, redactor = environment_redactor(config_path, secret_env)
    plan = run_migration(sources, to, redactor, write=write)
    if verbose or plan.interactions <= 50:
        for path, reason in plan.skipped:
            click.echo(f"skipped {path}: {reason}")
        for item in plan.planned:
            redacted = f"; redacted: {', '.join(item.redacted)}" if item.redacted else ""
            stream = " (stream)" if item.streamed else ""
            replaces = " (replaces a different file)" if item.replaces else ""
            if item.volatile:
                redacted += ("; volatile key material, will not replay until normalised: "
                             + ", ".join(item.volatile))
            verb = "wrote" if write else "write"
            click.echo(f"{verb} {_relative(item.target)}{replaces} <- {item.source}: "
                       f"{item.method} {redactor.redact_url(item.url)}{stream}"
                       f"{redacted}")
        for source, why in plan.duplicates:
            click.echo(f"duplicate {source}: {why}; not written")
        for refused in plan.refused:
            click.echo(f"refused {refused.source}: {refused.reason}")
    formats = ", ".join(f"{fmt} {n}" for fmt, n in sorted(plan.files.items())) or "none"
    refusals = Counter(reason_kind(item.reason) for item in plan.refused)
    reasons = "; ".join(f"{reason}: {n}" for reason, n in sorted(refusals.items())) or "none"
    click.echo(f"migrate: {counted(sum(plan.files.values()), 'file')} read ({formats}), "
               f"{len(plan.skipped)} skipped; {counted(plan.interactions, 'interaction')}: "
               f"{len(plan.planned)} migrated, {counted(len(plan.duplicates), 'duplicate')}, "
               f"{len(plan.refused)} refused ({reasons})")
    volatile = sum(1 for item in plan.planned if item.volatile)
    if volatile:
        click.echo(f"migrate: {counted(volatile, 'migrated call')} "
                   f"{'holds' if volatile == 1 else 'hold'} volatile key material (UUIDs, "
                   "timestamps) and will not replay until a normalizer replaces it "
                   "(docs/keys.md)")
    if write:
        click.echo(f"migrate: {counted(plan.written, 'fixture')} written to {to}")
    else:
        click.echo(f"migrate (dry run): {counted(len(plan.planned), 'fixture')} would be "
                   f"written to {to}" + ("; run again with --write" if plan.planned else ""))
    return EXIT_FINDINGS if plan.refused else EXIT_OK


for _command in (show, diff_command, git_setup):
    cli.add_command(_command)


def _relative(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


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
    except Exception as exc:  # a bug: exit 3, so a hook tells it from a finding
        return _internal_error(exc)
    return int(result) if isinstance(result, int) else EXIT_OK


def _internal_error(exc: Exception) -> int:
    """One line on stderr naming the error's type and the line of redactkey it came from;
    never its message, which may quote the data being read."""
    if os.environ.get("REDACTKEY_DEBUG"):
        traceback.print_exception(exc)
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if "redactkey" in frame.filename]
    where = ""
    if frames:
        path = frames[-1].filename.replace(os.sep, "/")
        where = f" at {path[path.rfind('redactkey/'):]}:{frames[-1].lineno}"
    click.echo(f"redact: internal error ({type(exc).__name__}{where}); this is a bug in "
               "redactkey: please report it with this line and the command you ran "
               "(REDACTKEY_DEBUG=1 shows the traceback)", err=True)
    return EXIT_INTERNAL


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
