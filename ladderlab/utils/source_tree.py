"""The plugin packages of a source checkout, however ladderlab was installed.

pyproject.toml maps ``ladderlab.mechanisms``, ``ladderlab.attacks`` and ``ladderlab.scenarios`` to
folders beside ``ladderlab/`` (setuptools' ``package-dir``). A non-editable ``pip install .`` copies
them into the installed package, but Python started in the checkout imports the source folder
``ladderlab/`` first, where they are absent, and fails with ``No module named
'ladderlab.mechanisms'``. :func:`find_plugin_folders` reads those mappings from the checkout's
pyproject.toml and :class:`SourceTreeFinder` resolves them there, as an editable install does.

A new interpreter that must run the code this process runs (the sandbox of isolated attacks) gets
:func:`import_prologue`: it imports ladderlab and its plugin packages from the folders this process
imported them from (:func:`package_folders`), whatever its own ``sys.path`` would find first.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import tomllib
from pathlib import Path


class SourceTreeFinder(importlib.abc.MetaPathFinder):
    """Finds the packages that pyproject.toml's ``package-dir`` places outside ``ladderlab/``."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = folders

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])


def find_plugin_folders(package_folder: Path) -> dict[str, Path]:
    """Map each package that a checkout's pyproject.toml keeps outside ``package_folder`` to its folder.

    Empty when ``package_folder`` is not in a checkout (an installed copy has no pyproject.toml beside it).
    """
    root = package_folder.parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    package_dir = tomllib.loads(pyproject.read_text()).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    folders = {name: root / folder for name, folder in package_dir.items()}
    return {name: folder for name, folder in folders.items()
            if name.startswith(f"{package_folder.name}.") and (folder / "__init__.py").is_file()
            and folder.resolve() != (package_folder / name.rpartition(".")[2]).resolve()}


PLUGIN_PACKAGES = ("ladderlab.mechanisms", "ladderlab.attacks", "ladderlab.scenarios")


def package_folders() -> dict[str, list[str]]:
    """The folders this process imports ``ladderlab`` and each of :data:`PLUGIN_PACKAGES` from."""
    import importlib

    return {name: [str(Path(folder).resolve()) for folder in importlib.import_module(name).__path__]
            for name in ("ladderlab", *PLUGIN_PACKAGES)}


def import_prologue(folders: dict[str, list[str]]) -> str:
    """Statements (one line, for ``python -c``) that make a new interpreter import ``ladderlab`` from
    ``folders["ladderlab"]`` and every other package of ``folders`` from its own: the new interpreter
    then runs the code of the process that gave ``folders`` (:func:`package_folders`), even where its
    ``sys.path`` finds another ``ladderlab`` first, such as a source checkout's beside an installed copy."""
    core = folders["ladderlab"]
    others = {name: paths[0] for name, paths in folders.items() if name != "ladderlab"}
    return ("import importlib.util as _util, sys as _sys; "
            f"_spec = _util.spec_from_file_location('ladderlab', {str(Path(core[0]) / '__init__.py')!r}, "
            f"submodule_search_locations={core!r}); "
            "_sys.modules['ladderlab'] = _util.module_from_spec(_spec); _spec.loader.exec_module(_sys.modules['ladderlab']); "
            f"from ladderlab.utils import source_tree as _tree; _tree.pin({others!r})")


def pin(folders: dict[str, str]) -> None:
    """Import each package of ``folders`` from its folder, before any other finder looks."""
    sys.meta_path.insert(0, SourceTreeFinder({name: Path(folder) for name, folder in folders.items()}))


def install(package_folder: Path) -> None:
    """Let ``import`` find the checkout's plugin packages (once per process)."""
    if any(isinstance(finder, SourceTreeFinder) for finder in sys.meta_path):
        return
    folders = find_plugin_folders(package_folder)
    if folders:
        sys.meta_path.append(SourceTreeFinder(folders))
