"""`redact check --baseline`: findings accepted as they are, by place, rule and value tag."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .._errors import UsageError
from ._issues import Issue

__all__ = ["BASELINE_VERSION", "Baseline"]

BASELINE_VERSION = 1


@dataclass(frozen=True)
class Baseline:
    """Findings accepted as they are: (path, rule, fingerprint, value tag), never a value.

    A finding is in the baseline while its place, rule, preview and value tag are the
    same; a new value at the same place gets a new tag and is reported again.
    """

    entries: frozenset[tuple[str, str, str, str]]

    @classmethod
    def of(cls, issues: Iterable[Issue]) -> Baseline:
        """The baseline accepting `issues`."""
        return cls(frozenset((i.path, i.rule, i.fingerprint, i.tag) for i in issues))

    def __contains__(self, issue: object) -> bool:
        return isinstance(issue, Issue) and (
            issue.path, issue.rule, issue.fingerprint, issue.tag) in self.entries

    def to_bytes(self) -> bytes:
        """The baseline file: canonical JSON, sorted, with a trailing newline."""
        rows = [{"path": p, "rule": r, "fingerprint": f, "tag": t}
                for p, r, f, t in sorted(self.entries)]
        doc = {"version": BASELINE_VERSION, "tool": "redactkey", "findings": rows}
        return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """Read a baseline written by `redact check --write-baseline`."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"baseline {path}: cannot read it: {exc.strerror or exc}") \
                from None
        except ValueError as exc:
            raise UsageError(f"baseline {path}: not JSON ({exc}); write it again with "
                             "`redact check --write-baseline`") from None
        if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION:
            raise UsageError(f"baseline {path}: not a version {BASELINE_VERSION} redactkey "
                             "baseline; write it again with `redact check --write-baseline`")
        rows = doc.get("findings")
        keys = ("path", "rule", "fingerprint", "tag")
        if not isinstance(rows, list) or not all(
            isinstance(row, dict) and all(isinstance(row.get(k), str) for k in keys)
            for row in rows
        ):
            raise UsageError(f"baseline {path}: /findings must be a list of "
                             "{path, rule, fingerprint, tag} strings")
        return cls(frozenset((row["path"], row["rule"], row["fingerprint"], row["tag"])
                             for row in rows))
