"""The source files a plugin's code comes from: its own file and the local modules it imports.

A local module is one the plugin's own code brings with it, found by reading its import
statements (never by running them), transitively:

- for a plugin file (``path/to/file.py:Class``, whose folder is importable while it loads),
  the modules and packages in that folder that it imports, and what they import there;
- for a plugin in an installed or importable package (``mypkg.attacks:Class``, an entry
  point), the modules of the same top-level package that it imports.

ladderlab's built-in plugins have no local modules: the rest of ladderlab is the library,
not part of a plugin. Imports that only happen at run time (``importlib.import_module``
of a computed name) are not seen.

Run directories fingerprint these files (:func:`ladderlab.plugin.fingerprint`), so that an
edited helper makes the cells of the plugins that import it stale, and the sandbox of
:mod:`ladderlab.isolation.sandbox` shows an isolated attack these files and nothing else of its folder.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

LOCAL_MODULE_PREFIX = "ladderlab_local_"
"""The prefix of the module names under which :mod:`ladderlab.registry` loads plugin files."""


def local_imports(path: Path, search: Path, package: str = "", top: str | None = None) -> list[Path]:
    """The files of the local modules that ``path`` imports, transitively, in the order found.

    ``search`` is the folder in which top-level module names are looked up, ``package`` the
    package ``path`` belongs to ("" for a plugin file), and ``top``, when given, the only
    top-level name that counts as local (a plugin's own package).
    """
    found: list[Path] = []
    pending = [(Path(path), package)]
    while pending:
        source, source_package = pending.pop(0)
        for name in imported_names(source, source_package):
            if top is not None and name.split(".")[0] != top:
                continue
            for file, module_package in _module_files(name, search):
                if file != Path(path) and file not in found:
                    found.append(file)
                    pending.append((file, module_package))
    return found


def plugin_file_sources(path: Path) -> list[Path]:
    """A plugin file and the local modules it imports (transitively): what its code is."""
    return [path, *local_imports(path, path.parent)]


def module_source_files(module_name: str, path: Path) -> list[Path]:
    """The file of the module ``module_name`` (at ``path``) and its local modules."""
    path = Path(path)
    if module_name.startswith(LOCAL_MODULE_PREFIX):
        return plugin_file_sources(path)
    top = module_name.split(".")[0]
    if top == "ladderlab" or "." not in module_name:
        return [path]
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return [path]
    search = Path(next(iter(spec.submodule_search_locations))).parent
    return [path, *local_imports(path, search, module_name.rpartition(".")[0] if path.name != "__init__.py"
                                 else module_name, top)]


def imported_names(path: Path, package: str = "") -> list[str]:
    """The absolute module names that the import statements of ``path`` may load, at module
    level or inside functions; for ``from a import b`` both ``a`` and ``a.b`` (``b`` may be
    a submodule)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, package)
            if base is None:
                continue
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def _absolute(module: str | None, level: int, package: str) -> str | None:
    """The absolute name of ``from <level dots><module> import …`` inside ``package``."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts) or not parts:
        return None
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def _module_files(name: str, search: Path) -> list[tuple[Path, str]]:
    """The files Python runs to import ``name`` from ``search`` (each package's
    ``__init__.py`` on the way, then the module), with the package each belongs to."""
    files: list[tuple[Path, str]] = []
    folder = search
    parts = name.split(".")
    for depth, part in enumerate(parts):
        dotted = ".".join(parts[: depth + 1])
        package_init = folder / part / "__init__.py"
        module = folder / f"{part}.py"
        if package_init.is_file():
            files.append((package_init, dotted))
            folder = folder / part
        elif module.is_file():
            files.append((module, ".".join(parts[:depth])))
            break
        else:
            break
    return files
