"""Every import the README and the docs show a user resolves (issue 32: the core may move into
packages, but the imports plugin authors and users were shown keep working)."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
IMPORT = re.compile(r"^\s*from (ladderlab[\w.]*) import \(?([\w, ]+?)\)?\s*$|^\s*import (ladderlab[\w.]*)\s*$", re.M)


def documented_imports() -> list[tuple[str, str, str]]:
    """(page, module, name) for every ``from ladderlab… import name`` and ``import ladderlab…`` line."""
    found = []
    for page in PAGES:
        for match in IMPORT.finditer(page.read_text(encoding="utf-8")):
            if match[3]:
                found.append((page.relative_to(ROOT).as_posix(), match[3], ""))
                continue
            for item in match[2].split(","):
                name = item.split(" as ")[0].strip()
                if name:
                    found.append((page.relative_to(ROOT).as_posix(), match[1], name))
    return sorted(set(found))


def test_the_pages_show_imports_to_check():
    assert len(documented_imports()) >= 30


@pytest.mark.parametrize(("page", "module", "name"), documented_imports())
def test_a_documented_import_resolves(page, module, name):
    imported = importlib.import_module(module)
    if name:
        assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}") is not None, \
            f"{page}: from {module} import {name}"
