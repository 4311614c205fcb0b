"""`redact prune`: delete the fixtures a complete run did not use.

The plan comes from a run report (`.redactkey-report.json`, written by the pytest
plugin or `RunReport.write`): its `unused` files, its `fixture_dirs` (the roots the
run accounted for) and its `partial` reasons. A report of a partial run (`-k`, `-m`,
deselected tests, collection errors, a lost xdist worker, an interrupted session)
lists as unused the fixtures of the tests that did not run, so it is refused unless
forced. Nothing outside the named fixture roots is ever touched, nor a file whose
name is not a fixture's, nor a symbolic link; and a root is only a root inside the
project that holds the report (its directory), whatever the report names (`/`,
`../elsewhere`, a link out of the tree).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import FixtureFormatError
from ..fixtures._store import contained, kind_for_file_name

__all__ = ["PrunePlan", "plan_prune"]


@dataclass
class PrunePlan:
    """What prune would do: files to delete, files refused (with why), and the run's state."""

    report: Path
    roots: list[Path]
    partial: list[str]
    project: Path  # the report's directory: nothing outside it is ever deleted
    delete: list[Path] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    already_gone: list[Path] = field(default_factory=list)

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


def _load(report: Path) -> dict[str, object]:
    if report.exists() and not report.is_file():
        raise FixtureFormatError(str(report), "not a regular file")
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FixtureFormatError(str(report), f"cannot be read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise FixtureFormatError(str(report), f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != 1:
        raise FixtureFormatError(str(report), "not a redactkey run report of version 1 (write "
                                 "one with pytest --redactkey-report)", pointer="/version")
    return data


def _strings(data: dict[str, object], name: str, report: Path) -> list[str] | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FixtureFormatError(str(report), f"`{name}` must be a list of strings",
                                 pointer=f"/{name}")
    return list(value)


def _stores(data: dict[str, object]) -> set[str]:
    stores: set[str] = set()
    for outcome in ("replayed", "recorded", "missing"):
        events = data.get(outcome)
        for event in events if isinstance(events, list) else []:
            if isinstance(event, dict) and isinstance(event.get("store"), str):
                stores.add(event["store"])
    return stores


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def plan_prune(report: str | os.PathLike[str], *, force: bool = False) -> PrunePlan:
    """The plan for a run report: which unused fixtures may go, which are refused."""
    where = Path(report)
    data = _load(where)
    base = where.resolve().parent
    unused = _strings(data, "unused", where)
    if unused is None:
        raise FixtureFormatError(str(where), "the report has no `unused` list", pointer="/unused")
    roots_named = _strings(data, "fixture_dirs", where)
    partial = _strings(data, "partial", where)
    reasons = list(partial or [])
    if partial is None:
        reasons.append("the report does not say whether the run was complete (written by an "
                       "older redactkey); run the suite again")
    if roots_named is None:
        # older reports: the stores its calls used are the only roots it names
        roots_named = sorted(_stores(data))
    roots: list[Path] = []
    refused: list[tuple[str, str]] = []
    for root in roots_named:
        resolved = (base / root).resolve()
        if resolved == base or base in resolved.parents:
            roots.append(resolved)
        else:
            refused.append((root, f"a fixture root outside the project that holds the "
                                  f"report ({base}); not a root"))
    plan = PrunePlan(where, roots, [] if force else reasons, base, refused=refused)
    for item in unused:
        candidate = base / item
        shown = item
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            plan.refused.append((shown, "cannot be resolved"))
            continue
        if candidate.is_symlink():
            plan.refused.append((shown, "a symbolic link"))
        elif not _inside(resolved, roots):
            plan.refused.append((shown, "outside the fixture roots the report names"))
        elif kind_for_file_name(resolved.name) is None:
            plan.refused.append((shown, "not a fixture file name"))
        elif not resolved.exists():
            plan.already_gone.append(resolved)
        elif not resolved.is_file():
            plan.refused.append((shown, "not a regular file"))
        else:
            plan.delete.append(resolved)
    return plan
