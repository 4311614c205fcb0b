"""The fenced code blocks of README.md and docs/, for the tests that run them.

A block is a fence (```` ```python ````, ```` ```sh ````, ...) at any indentation (list
items indent theirs); its code is dedented. The line just before the fence may hold a
marker, `<!-- docs: word word=value ... -->`, whose words become the block's options.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PYTHON = ("python", "py")
SHELL = ("sh", "bash", "shell", "console")

_OPEN = re.compile(r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)\s*$")
_CLOSE = re.compile(r"^[ ]*```\s*$")
_MARKER = re.compile(r"<!--\s*docs:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    path: Path
    line: int  # the first line of code (1-based)
    lang: str
    code: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def _options(text: str) -> dict[str, str]:
    marker = _MARKER.search(text)
    if marker is None:
        return {}
    return {name: value for part in re.split(r"\s+", marker.group(1)) if part
            for name, _, value in [part.partition("=")]}


def fences(path: Path) -> list[Block]:
    """Every fenced block of one page, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    number = 0
    while number < len(lines):
        opened = _OPEN.match(lines[number])
        if opened is None:
            number += 1
            continue
        indent = len(opened.group("indent"))
        start = number + 1
        end = start
        while end < len(lines) and not _CLOSE.match(lines[end]):
            end += 1
        code = "".join(line[indent:] + "\n" if line[:indent].strip() == "" else line + "\n"
                       for line in lines[start:end])
        before = lines[number - 1] if number else ""
        found.append(Block(path, start + 1, opened.group("lang"), code, _options(before)))
        number = end + 1
    return found


def blocks(languages: tuple[str, ...]) -> list[Block]:
    """The blocks of README.md and docs/ in one of `languages`."""
    return [block for path in DOCS for block in fences(path) if block.lang in languages]


def fence_count(languages: tuple[str, ...]) -> int:
    """Fence openings in `languages`, counted by a plain search (a check on the parser)."""
    pattern = re.compile(r"^[ ]*```(?:" + "|".join(languages) + r")\s*$", re.M)
    return sum(len(pattern.findall(path.read_text(encoding="utf-8"))) for path in DOCS)
