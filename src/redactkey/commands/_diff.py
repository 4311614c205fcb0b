"""`redact diff`: two recordings compared by meaning (docs/cli/diff.md: what a call's
meaning is, what stays hidden unless `--all`, how calls pair up)."""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..fixtures._verify import VerifyRules, _collapsed
from ..redact._redactor import Redactor
from ._inplace import json_container
from ._show import Call, Recorded, answer_text, read_calls, recording_lines, view

__all__ = ["Change", "differences", "run_diff", "word_diff"]

DEV_NULL = "/dev/null"
_LONG = 80


ABSENT: Any = object()  # a member or item one side lacks, printed as (none)


@dataclass(frozen=True)
class Change:
    """One difference: the field (a path into the call's meaning) and both values."""

    field: str
    old: Any
    new: Any


def _event_type(payload: Any) -> str:
    if isinstance(payload, Mapping):
        named = payload.get("type") or payload.get("object")
        return named if isinstance(named, str) else "json"
    return payload if payload == "[DONE]" else "text"


def meaning(call: Call, everything: bool) -> dict[str, Any]:
    """What of a call is compared (everything recorded, with `everything`)."""
    asked = {"method": call.method, "url": call.url, "body": call.request} \
        if call.kind == "http" else call.request
    doc: dict[str, Any] = {"request": asked, "status": call.status}
    if everything:
        doc.update(headers=call.headers, answer=call.answer, events=call.events)
    else:
        doc["content type"] = call.content_type.split(";", 1)[0].strip().lower()
        doc["answer"] = answer_text(call)[0]
        if call.events is not None:
            doc["event types"] = _collapsed(map(_event_type, call.events))
    if call.error is not None:
        doc["error"] = call.error
    return doc


def differences(old: Any, new: Any, hidden: Callable[[tuple[str, ...]], bool],
                tokens: tuple[str, ...] = ()) -> Iterator[Change]:
    """Where `old` and `new` differ by value, places `hidden` names passed over."""
    if hidden(tokens):
        return
    if isinstance(old, str) and isinstance(new, str) and old != new:
        a, b = json_container(old), json_container(new)
        if a is not None and b is not None:
            old, new = a, b
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for name in [*old, *(name for name in new if name not in old)]:
            yield from differences(old.get(name, ABSENT), new.get(name, ABSENT), hidden,
                                   (*tokens, str(name)))
    elif isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(itertools.zip_longest(old, new, fillvalue=ABSENT)):
            yield from differences(a, b, hidden, (*tokens, str(index)))
    elif old != new or isinstance(old, bool) != isinstance(new, bool):
        yield Change("/".join(tokens), old, new)


def word_diff(old: str, new: str) -> str:
    """`new` against `old` word by word, as `git diff --word-diff=plain` shows it."""
    a, b = re.findall(r"\s+|\S+", old), re.findall(r"\s+|\S+", new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + "".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + "".join(b[j1:j2]) + "+}")
    return "".join(out)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else "(none)" if value is ABSENT \
        else json.dumps(value, ensure_ascii=False)


def change_lines(change: Change) -> Iterator[str]:
    old, new = change.old, change.new
    if isinstance(old, str) and isinstance(new, str) and (
            max(len(old), len(new)) > _LONG or "\n" in old + new):
        yield f"  {change.field} (word diff)"
        yield from ("    " + line for line in word_diff(old, new).splitlines())
    else:
        yield f"  {change.field}"
        yield f"    - {_shown(old)}"
        yield f"    + {_shown(new)}"


def _paired(old: list[Call], new: list[Call]) -> list[tuple[Call | None, Call | None]]:
    """Calls with the same key, then the others in file order."""
    left = list(new)
    pairs: list[tuple[Call | None, Call | None]] = []
    unmatched: list[Call] = []
    for call in old:
        twin = next((i for i, n in enumerate(left) if call.key and n.key == call.key), None)
        if twin is None:
            unmatched.append(call)
        else:
            pairs.append((call, left.pop(twin)))
    return pairs + list(itertools.zip_longest(unmatched, left))


def _volatile(rules: VerifyRules, answer: Any,
              everything: bool) -> Callable[[tuple[str, ...]], bool]:
    """What verify ignores in the answer (nothing, with `everything`)."""
    return lambda tokens: (not everything and len(tokens) > 1 and tokens[0] == "answer"
                           and rules.ignores(answer, tokens[1:]))


def compare(old: list[Call], new: list[Call], redactor: Redactor, rules: VerifyRules,
            everything: bool) -> list[str]:
    """The lines that tell how `new` differs from `old` (none: the same by meaning)."""
    out: list[str] = []
    for number, (a, b) in enumerate(_paired(old, new), 1):
        either = a if a is not None else b
        assert either is not None
        label = f"{either.method} {redactor.redact_url(either.url)}" \
            if either.method and either.url else either.kind
        if a is None or b is None:
            out.append(f"call {number} {'added' if a is None else 'removed'}: {label}")
            continue
        was, now = redactor.redact(meaning(a, everything)), redactor.redact(meaning(b, everything))
        changes = list(differences(was, now, _volatile(rules, was.get("answer"), everything)))
        if changes:
            out.append(f"call {number}: {label}")
            out.extend(line for change in changes for line in change_lines(change))
    return out


def _side(path: str, redactor: Redactor) -> Recorded | None:
    if path == DEV_NULL:
        return None
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file; give two recordings")
    return read_calls(Path(path), path, redactor)


def _text_diff(path: str, old: str, new: str) -> Iterator[str]:
    def text(name: str) -> list[str]:
        if name == DEV_NULL:
            return []
        return Path(name).read_bytes().decode("utf-8", "replace").splitlines()

    yield from difflib.unified_diff(text(old), text(new), f"a/{path}", f"b/{path}",
                                    lineterm="")


def run_diff(args: tuple[str, ...], *, git: bool, everything: bool, rules: VerifyRules,
             redactor: Redactor, echo: Callable[[str], None]) -> int:
    """Compare two recordings (or, with `git`, the seven or nine arguments git passes an
    external diff driver: path, old file, hex, mode, new file, hex, mode[, new path,
    similarity]). Exit 0 same by meaning, 1 differs, 2 unreadable; under git 0 both ways
    (git stops at a driver's other exit codes) and text that is no recording gets a line
    diff."""
    path, old, new = (args[0], args[1], args[4]) if git else (args[1], *args)
    if git:
        echo(f"diff --redactkey a/{path} b/{args[7] if len(args) == 9 else path}")
    try:
        was, now = _side(old, redactor), _side(new, redactor)
    except InputError:
        if not git:
            raise
        for line in _text_diff(path, old, new):
            echo(line)
        return 0
    if was is None or now is None:
        if was is None and now is None:
            raise InputError("both sides are /dev/null; give at least one recording")
        side, mark = (now, "+") if was is None else (was, "-")
        assert side is not None
        echo(f"{'new' if mark == '+' else 'deleted'} recording ({side.format})")
        views = [view(call, redactor) for call in side.calls]
        for _style, line in recording_lines(side, views, None, heading=False):
            echo(f"{mark} {line}")
        return 0 if git else 1
    found = compare(was.calls, now.calls, redactor, rules, everything)
    if found:
        if not git:
            echo(f"--- {old}\n+++ {new}")
        for line in found:
            echo(line)
        return 0 if git else 1
    hidden = len(compare(was.calls, now.calls, redactor, rules, True)) if not everything else 0
    echo("same by meaning" + (" (volatile fields, headers or event boundaries differ; "
                              "--all shows them)" if hidden else ""))
    return 0
