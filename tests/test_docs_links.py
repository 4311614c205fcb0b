"""The documentation hangs together: relative links resolve and the guide reaches every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _relative_links(page: Path) -> list[str]:
    return [target for target in _LINK.findall(page.read_text(encoding="utf-8"))
            if not re.match(r"[a-z]+:", target)]


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+ (.*)$", page.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


class TestDocsLinks:
    """Relative links between README and docs pages."""

    @pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
    def test_relative_links_resolve(self, page: Path) -> None:
        """Every relative link names an existing file (and heading, for an anchor)."""
        broken = []
        for target in _relative_links(page):
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            bad_anchor = (resolved.exists() and bool(anchor) and resolved.suffix == ".md"
                          and anchor not in _anchors(resolved))
            if not resolved.exists() or bad_anchor:
                broken.append(target)
        assert broken == []

    def test_readme_links_the_user_guide(self) -> None:
        """README links docs/index.md."""
        assert "docs/index.md" in _relative_links(ROOT / "README.md")

    def test_user_guide_reaches_every_page(self) -> None:
        """Each page of docs/ and docs/cli/ is linked from the user guide."""
        targets = _relative_links(DOCS / "index.md")
        linked = {(DOCS / t.partition("#")[0]).resolve() for t in targets}
        pages = [*DOCS.glob("*.md"), *(DOCS / "cli").glob("*.md")]
        missing = [str(p.relative_to(DOCS)) for p in pages
                   if p.name != "index.md" and p.resolve() not in linked]
        assert missing == []
