"""Local files named so that they open from anywhere and identify results wherever they lie.

A scenario names its local plugin files (``attacks/my_attack.py:MyAttack``) and challenge
files relative to its own folder; ``ladderlab certify`` takes them relative to the working
directory. Where something must open them (a worker in another process or directory), the
name must be absolute; what identifies results (a scenario's hash, a cell's key, the columns
of its result file) must not depend on where the project folder lies, or moving or cloning it
would make every finished cell look like another one. Both come from one string: the folder,
a ``/./`` mark, and the name as written, ``/home/me/study/./attacks/my_attack.py:MyAttack``.
The operating system reads ``/./`` as nothing, so the anchored name opens as it is;
:func:`location_free` cuts it back to the name as written. What the file holds is checked
apart from its name: a plugin's fingerprint and a challenge's data hash
(:mod:`ladderlab.runs.rundir`), so two different files with one name are never confused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARK = "/./"
"""Between the folder a name is relative to and the name; an absolute name written by a person holds none."""


def anchored(folder: str | Path, name: str) -> str:
    """``name`` (a path, or ``path.py:Class``) made openable from anywhere: relative to ``folder``
    with the mark; an absolute name stays as written (normalised if it holds the mark)."""
    location, class_name = _split(name)
    if not os.path.isabs(location):
        location = f"{Path(folder).resolve()}{MARK}{os.path.normpath(location)}"
    elif MARK in location:
        location = os.path.normpath(location)
    return f"{location}:{class_name}" if class_name else location


def plugin_reference(name: str) -> bool:
    """Whether ``name`` names a class in a plugin file (``path/to/file.py:Class``)."""
    location, colon, class_name = name.rpartition(":")
    return bool(colon and class_name and location.endswith(".py"))


def _split(name: str) -> tuple[str, str]:
    """The path of ``name`` and its class name (empty for a plain path)."""
    return (name.rpartition(":")[0], name.rpartition(":")[2]) if plugin_reference(name) else (name, "")


def _each_anchored(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (a string, or lists, tuples and dicts of them) with ``change`` applied to every
    anchored name; anything else unchanged."""
    if isinstance(value, str):
        return change(value) if value.startswith("/") and MARK in value else value
    if isinstance(value, dict):
        return {key: _each_anchored(item, change) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_each_anchored(item, change) for item in value)
    return value


def location_free(value: Any) -> Any:
    """``value`` with every anchored name replaced by the name as written, relative to its folder."""
    return _each_anchored(value, lambda name: name.partition(MARK)[2])


def anchored_at(value: Any, folder: str | Path) -> Any:
    """``value`` with every anchored name made the absolute path it has under ``folder``: the names
    a run directory recorded before names were location-free (:func:`ladderlab.runs.runner.migrate`)."""

    def absolute(name: str) -> str:
        location, class_name = _split(name.partition(MARK)[2])
        resolved = str((Path(folder) / location).resolve())
        return f"{resolved}:{class_name}" if class_name else resolved

    return _each_anchored(value, absolute)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return [text for item in items for text in _strings(item)]


def former_folders(value: Any, recorded: Any) -> list[Path]:
    """The folders ``value``'s anchored names may have lain in when ``recorded`` (the same data,
    written with absolute, resolved names) was written: their folder now, and every folder that an
    absolute name of ``recorded`` ends in one of the names as written (``/old/study`` from
    ``/old/study/attacks/a.py`` and ``attacks/a.py``; ``/old/study`` from ``/old/shared/a.py`` and
    ``../shared/a.py`` in ``/new/study``, the folder having kept its name); the first is the likeliest."""
    names = [text for text in _strings(value) if text.startswith("/") and MARK in text]
    folders = list(dict.fromkeys(Path(text.partition(MARK)[0]) for text in names))
    written = {(Path(text.partition(MARK)[0]), _split(text.partition(MARK)[2])[0]) for text in names}
    for text in _strings(recorded):
        path = _split(text)[0]
        for now, name in written:
            folder = _former_folder(path, now, name)
            if folder is not None and folder not in folders:
                folders.append(folder)
    return folders


def _former_folder(recorded: str, now: Path, name: str) -> Path | None:
    """The folder that ``name`` (as written, relative to its folder ``now``) was resolved in to give
    ``recorded``: ``name``'s leading ``..`` climb out of folders that kept their names."""
    parts = Path(name).parts
    up = next((i for i, part in enumerate(parts) if part != ".."), len(parts))
    rest = "/".join(parts[up:])
    if not rest or not recorded.endswith(f"/{rest}") or up > len(now.parts) - 1:
        return None
    return Path(recorded[: -len(rest) - 1]).joinpath(*now.parts[len(now.parts) - up:])


def local_names(value: Any) -> list[str]:
    """The absolute names of local files in ``value`` (a layout-1 scenario, :mod:`ladderlab.runs.runner`)."""
    return [text for text in _strings(value) if os.path.isabs(_split(text)[0])]
