"""`redact git-setup`: git shows fixture changes as conversations, through a
`.gitattributes` line and a diff driver in the repository's git configuration
(docs/cli/git-setup.md)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from .._errors import InputError
from ..fixtures._store import atomic_write

__all__ = ["DRIVERS", "git_setup"]

DRIVERS = {"textconv": ("diff.redactkey.textconv", "redact show --textconv"),
           "external": ("diff.redactkey.command", "redact diff --git")}
DEFAULT_PATTERN = "**/fixtures/**"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=False,
                              timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"git cannot be run ({exc}); install git") from None


def _pattern(top: Path, name: str) -> str:
    path = Path(name).resolve()
    try:
        relative = path.relative_to(top).as_posix()
    except ValueError:
        raise InputError(f"{name}: outside the repository {top}") from None
    if any(c.isspace() for c in relative):
        raise InputError(f"{name}: a path with spaces; write its .gitattributes line by hand")
    return relative if path.is_file() else ("" if relative == "." else relative + "/") + "**"


def git_setup(paths: tuple[str, ...], driver: str, echo: Callable[[str], None]) -> int:
    """Write what is missing of the setup (idempotent) and say what changed."""
    found = _git("rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise InputError("not in a git repository; run redact git-setup inside one")
    top = Path(found.stdout.strip()).resolve()
    patterns = [_pattern(top, name) for name in paths] or [DEFAULT_PATTERN]
    attributes = top / ".gitattributes"
    text = attributes.read_text(encoding="utf-8") if attributes.is_file() else ""
    present = {line.strip() for line in text.splitlines()}
    missing = [f"{p} diff=redactkey" for p in patterns if f"{p} diff=redactkey" not in present]
    if missing:
        gap = "\n" if text and not text.endswith("\n") else ""
        atomic_write(attributes, (text + gap + "\n".join(missing) + "\n").encode("utf-8"))
        for line in missing:
            echo(f"git-setup: added to .gitattributes: {line}")
    name, value = DRIVERS[driver]
    changed = bool(missing)
    if _git("config", "--get", name).stdout.strip() != value:
        written = _git("config", name, value)
        if written.returncode != 0:
            raise InputError(f"git config {name}: {written.stderr.strip()}")
        echo(f'git-setup: git config {name} "{value}"')
        changed = True
    for other, _ in DRIVERS.values():
        if other != name and _git("config", "--get", other).returncode == 0:
            _git("config", "--unset", other)
            echo(f"git-setup: git config --unset {other} (one driver at a time)")
            changed = True
    if not changed:
        echo("git-setup: already set up; nothing changed")
    return 0
