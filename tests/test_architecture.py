"""The package's shape: stages import only the stages below them, and rooms stay small.

docs/architecture.md draws the stages; this module holds the tree to them. Imports are
read with `ast` at any depth (inside functions and `if TYPE_CHECKING:` blocks too), and
`importlib.import_module` calls with a literal name count as imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "src" / "redactkey"

# Bottom to top. A module may import its own stage and the stages before it in this list.
STAGES = ("secrets", "scan", "redact", "keys", "fixtures", "http", "record", "clients",
          "recordings", "commands", "pytest_plugin")
# Outside the order: the errors (usable by every stage, importing none) and the package's
# face (which re-exports, and may lazily name, anything).
OUTSIDE = ("_errors", "__init__")

MAX_CLASS_LINES = 300
MAX_MODULE_LINES = 600


@dataclass(frozen=True)
class Edge:
    """One import: where it is written and the redactkey module it names."""

    source: str  # e.g. "recordings/_classify.py:23"
    importer: str  # dotted module name, e.g. "redactkey.recordings._classify"
    imported: str  # dotted module name (or module.attribute for `from x import y`)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`redactkey.scan._detectors` for `src/redactkey/scan/_detectors.py`."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(importer: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a relative import `level` dots up from `importer`."""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _imported_by_name(call: ast.Call) -> str | None:
    """The literal module name of an `importlib.import_module(...)` call, else None."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "import_module" or not call.args:
        return None
    first = call.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) \
        else None


def imports_of(path: Path, package: Path = PACKAGE) -> list[Edge]:
    """Every import of a redactkey module in one file, at any depth."""
    importer = module_name(path, package)
    is_package = path.name == "__init__.py"
    where = path.relative_to(package).as_posix()
    edges: list[Edge] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = (_resolve(importer, is_package, node.level, node.module) if node.level
                      else node.module or "")
            # `from . import x` names a module; `from .m import y` may name a module too.
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and (target := _imported_by_name(node)) is not None:
            dots = len(target) - len(target.lstrip("."))
            names = [_resolve(importer, is_package, dots, target[dots:] or None) if dots
                     else target]
        edges.extend(Edge(f"{where}:{getattr(node, 'lineno', 0)}", importer, name)
                     for name in names if name == "redactkey" or name.startswith("redactkey."))
    return edges


def stage_of(module: str) -> str | None:
    """The stage a dotted redactkey name belongs to; None outside the order (or unknown)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return parts[1] if parts[1] in STAGES else None


def upward_edges(package: Path = PACKAGE) -> list[str]:
    """Imports of a higher stage by a lower one, as `where: importer -> imported`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for edge in imports_of(path, package):
            low, high = stage_of(edge.importer), stage_of(edge.imported)
            if low and high and STAGES.index(high) > STAGES.index(low):
                found.append(f"{edge.source}: {edge.importer} -> {edge.imported}")
    return found


def oversized(package: Path = PACKAGE) -> set[str]:
    """Classes over MAX_CLASS_LINES and modules over MAX_MODULE_LINES."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.add(f"module {where}")
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.ClassDef)
                    and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_CLASS_LINES):
                found.add(f"class {where} {node.name}")
    return found


class TestImportDirection:
    """Data flows one way: a stage never imports a stage above it."""

    def test_no_stage_imports_a_higher_one(self) -> None:
        """Every import between stages points down the pipeline (or stays in its stage)."""
        assert upward_edges() == []

    def test_every_module_has_a_stage(self) -> None:
        """Each module sits in a stage folder, or is one of the few outside the order; a
        new folder or root module must be placed in STAGES (and docs/architecture.md)."""
        homeless = [
            path.relative_to(PACKAGE).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
            if stage_of(module_name(path)) is None and path.stem not in OUTSIDE
        ]
        assert homeless == []

    def test_errors_import_no_stage(self) -> None:
        """The root errors module is usable by every stage because it imports none."""
        assert [e.source for e in imports_of(PACKAGE / "_errors.py")] == []

    def test_the_walk_sees_imports_at_any_depth(self, tmp_path: Path) -> None:
        """Imports inside functions, `TYPE_CHECKING` blocks and `import_module` calls, in
        every spelling, are found, resolved and judged."""
        package = tmp_path / "redactkey"
        for folder in ("secrets", "scan", "commands"):
            (package / folder).mkdir(parents=True)
            (package / folder / "__init__.py").write_text("")
        (package / "__init__.py").write_text("")
        (package / "secrets" / "_low.py").write_text(
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from ..commands._top import Thing\n"
            "def late():\n"
            "    import redactkey.scan._mid\n"
            "    from .. import commands\n"
            "    importlib.import_module('redactkey.commands._top')\n"
            "    from . import _other\n"
            "    from .._errors import UsageError\n")
        (package / "scan" / "_mid.py").write_text("from ..secrets import _low\n")
        (package / "commands" / "_top.py").write_text("from ..scan._mid import x\n")
        assert upward_edges(package) == [
            "secrets/_low.py:3: redactkey.secrets._low -> redactkey.commands._top",
            "secrets/_low.py:3: redactkey.secrets._low -> redactkey.commands._top.Thing",
            "secrets/_low.py:5: redactkey.secrets._low -> redactkey.scan._mid",
            "secrets/_low.py:6: redactkey.secrets._low -> redactkey.commands",
            "secrets/_low.py:7: redactkey.secrets._low -> redactkey.commands._top",
        ]


class TestRoomSizes:
    """No class over ~300 lines and no module over ~600: a room a reader can hold."""

    def test_no_oversized_rooms(self) -> None:
        """Every class and module is within the limits."""
        assert sorted(oversized()) == []
