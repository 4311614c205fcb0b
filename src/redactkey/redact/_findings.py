"""What the redactor reports: a `Finding` per thing taken out, never the value itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..scan._validators import looks_high_entropy
from ..secrets._run_secrets import mask

__all__ = ["Finding", "shown_pointer"]


class _TextRedactor(Protocol):
    def redact_text(self, text: str) -> str: ...


def shown_pointer(
    pointer: str, redactor: _TextRedactor | None = None, *, min_length: int = 8
) -> str:
    """`pointer` as it may be printed: a member name that holds a credential (a token map
    keyed by the token) is masked to `sk-p…`. The real pointer stays on the object.

    A name is masked when it is at least `min_length` characters, not an array index,
    and looks like a credential (high entropy or a detector's match), or when
    `redactor` (which knows the run's secrets) would change it.
    """
    if not pointer:
        return pointer
    from ._redactor import default_scanner

    tokens = pointer.split("/")
    changed = False
    for index, token in enumerate(tokens[1:], 1):
        if len(token) < min_length or token.isdigit():
            continue
        name = token.replace("~1", "/").replace("~0", "~")
        if (
            looks_high_entropy(name)
            or any(span.rule != "sensitive-key" for span in default_scanner().scan(name))
            or (redactor is not None and redactor.redact_text(name) != name)
        ):
            tokens[index] = mask(name).replace("~", "~0").replace("/", "~1")
            changed = True
    return "/".join(tokens) if changed else pointer


@dataclass(frozen=True, repr=False)
class Finding:
    """One thing the redactor takes out: where, found by what, and a masked preview.

    `pointer` is the JSON pointer of the string (or `""` for a bare string); `start`
    and `end` are offsets inside that string. `slot` names the run secret for a known
    value (`rule == "known-value"`); `preview` never shows more than 4 characters.
    """

    pointer: str
    rule: str
    slot: str | None
    preview: str
    start: int = 0
    end: int = 0

    def __repr__(self) -> str:
        return (f"Finding(pointer={shown_pointer(self.pointer)!r}, rule={self.rule!r}, "
                f"slot={self.slot!r}, preview={self.preview!r}, start={self.start}, "
                f"end={self.end})")
