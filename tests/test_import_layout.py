"""The core's modules import each other without circles (issue 32): a module that needs
another's helper imports it from where it lives, never back through a module that imports it."""

import ast
import graphlib
from pathlib import Path

import ladderlab

PACKAGE = Path(ladderlab.__file__).parent
DEFERRED = {("ladderlab.sandbox", "ladderlab.isolation"):
            "the sandbox server, a process of its own, imports the attack side of the protocol when it forks an attack"}
"""Imports inside a function that close a circle, each with why it is not one at import time."""


def _module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("ladderlab", *path.relative_to(PACKAGE).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every ladderlab module ``path`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {name for name in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if name in modules}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (module -> modules it imports), or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def test_no_module_of_the_core_imports_itself_back_through_another():
    modules = _module_names()
    graph = {name: {other for other in _imports(path, modules) - {name, *_ancestors(name)} if (name, other) not in DEFERRED}
             for name, path in modules.items()}
    assert _cycle(graph) is None


def _ancestors(name: str) -> set[str]:
    """A module's parent packages: importing ``ladderlab.stats.x`` runs ``ladderlab.stats`` first,
    so a submodule's ``from ladderlab.stats import y`` is the package's own business."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_the_cycle_finder_finds_a_circle():
    assert set(_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})) == {"a", "b", "c"}
    assert _cycle({"a": {"b"}, "b": {"c"}, "d": {"a"}}) is None
