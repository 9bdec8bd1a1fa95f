"""Every import the README and the docs show a user resolves (issue 32: the core may move into
packages, but the imports plugin authors and users were shown keep working)."""

import importlib
import importlib.util
import re
import warnings
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


def imports_documented_in_0_2() -> list[str]:
    """The import lines the README and the docs showed before the core moved into area packages."""
    lines = (ROOT / "tests" / "data" / "documented_imports_0.2.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("line", imports_documented_in_0_2())
def test_an_import_documented_before_the_move_still_works_and_says_where_it_moved(line):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(line, {})
    moved = [str(warning.message) for warning in caught if issubclass(warning.category, DeprecationWarning)]
    assert all(" moved to ladderlab." in message for message in moved), moved


def test_an_old_name_is_the_module_at_its_new_place():
    import sys

    import ladderlab.engines.ladder

    sys.modules.pop("ladderlab.ladder", None)
    with pytest.warns(DeprecationWarning, match="ladderlab.ladder moved to ladderlab.engines.ladder"):
        old = importlib.import_module("ladderlab.ladder")
    assert old is ladderlab.engines.ladder


def test_an_old_name_leaves_the_module_its_own_spec():
    """Importing a module by its old name must not give the module the old name's spec: its spec names
    its file, which find_spec and the page stamps' hashes of core modules read."""
    import subprocess
    import sys

    probe = ("import warnings, importlib.util; warnings.simplefilter('ignore'); import ladderlab.runs.duel as duel; "
             "import ladderlab.duel; from ladderlab.runs.page_stamps import core_token; "
             "print(duel.__spec__.name, duel.__spec__.origin == duel.__file__, core_token('ladderlab.runs.duel') is not None)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["ladderlab.runs.duel", "True", "True"], result.stderr
