"""`redact prune`: delete the fixtures a complete run did not use (docs/cli/prune.md).

The plan comes from a run report: its `unused` files, its `fixture_dirs` (the roots the
run accounted for) and its `partial` reasons; a partial run's report is refused unless
forced. Nothing outside the named roots is ever touched, nor a file whose name is not a
fixture's, nor a symbolic link; and a root is only a root inside the project that holds
the report, whatever the report names (`/`, `../elsewhere`, a link out of the tree).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import FixtureFormatError
from ..fixtures._store import contained, kind_for_file_name

__all__ = ["PrunePlan", "plan_prune", "read_run_report"]


@dataclass
class PrunePlan:
    """What prune would do: files to delete, files refused (with why), and the run's state."""

    roots: list[Path]
    partial: list[str]
    project: Path  # the report's directory: nothing outside it is ever deleted
    delete: list[Path] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        """True when the run was partial (and not forced): nothing may be deleted."""
        return bool(self.partial)

    def apply(self) -> list[tuple[Path, str]]:
        """Delete the planned files; returns the ones that could not be deleted, with why."""
        failed: list[tuple[Path, str]] = []
        for path in self.delete:
            try:
                if path.is_symlink():  # replaced by a link since the plan was made
                    raise OSError(f"{path.name} became a symbolic link; left alone")
                contained(path, self.project).unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed.append((path, exc.strerror or str(exc)))
        return failed


def read_run_report(report: Path, *names: str) -> list[list[str]]:
    """The lists `names` of a run report (`.redactkey-report.json`, written by the pytest
    plugin or `RunReport.write`), each required; `FixtureFormatError` naming the file."""
    if report.exists() and not report.is_file():  # a FIFO or device would block or never end
        raise FixtureFormatError(str(report), "not a regular file")
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FixtureFormatError(str(report), f"cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise FixtureFormatError(str(report), f"not valid JSON: {exc}") from None
    except RecursionError:
        raise FixtureFormatError(str(report), "JSON nested too deeply") from None
    if not isinstance(data, dict) or data.get("version") != 1:
        raise FixtureFormatError(str(report), "not a redactkey run report of version 1 (write "
                                 "one with pytest --redactkey-report)", pointer="/version")
    lists: list[list[str]] = []
    for name in names:
        value = data.get(name)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise FixtureFormatError(str(report), f"`{name}` must be a list of strings; run "
                                     "the suite again to write a new report", pointer=f"/{name}")
        lists.append(value)
    return lists


def plan_prune(report: str | os.PathLike[str], *, force: bool = False) -> PrunePlan:
    """The plan for a run report: which unused fixtures may go, which are refused."""
    where = Path(report)
    unused, roots_named, partial = read_run_report(where, "unused", "fixture_dirs", "partial")
    base = where.resolve().parent
    roots: list[Path] = []
    refused: list[tuple[str, str]] = []
    for root in roots_named:
        resolved = (base / root).resolve()
        if resolved == base or base in resolved.parents:
            roots.append(resolved)
        else:
            refused.append((root, f"a fixture root outside the project that holds the "
                                  f"report ({base}); not a root"))
    plan = PrunePlan(roots, [] if force else partial, base, refused=refused)
    for item in unused:
        candidate = base / item
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            plan.refused.append((item, "cannot be resolved"))
            continue
        if candidate.is_symlink():
            plan.refused.append((item, "a symbolic link"))
        elif not any(resolved == root or root in resolved.parents for root in roots):
            plan.refused.append((item, "outside the fixture roots the report names"))
        elif kind_for_file_name(resolved.name) is None:
            plan.refused.append((item, "not a fixture file name"))
        elif resolved.exists() and not resolved.is_file():
            plan.refused.append((item, "not a regular file"))
        elif resolved.exists():
            plan.delete.append(resolved)
    return plan
