"""Names of plugins for people: labels with parameters, and errors for unknown names with
"did you mean" suggestions (as in Gymnasium's registry)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from ladderlab.utils.locations import location_free


def unknown_name_error(kind: str, name: str, known: Iterable[str]) -> ValueError:
    """A ``ValueError`` naming the unknown ``name``, its near misses and every known name."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
    return ValueError(f"unknown {kind} {name!r}{hint} Known: {', '.join(known)}")


def plugin_label(plugin_id: str, params: str | dict[str, Any]) -> str:
    """``ladder-t(alpha=0.15)`` from a plugin id and its parameters (a dict or its JSON);
    floats to 4 significant digits. A local file plugin is named by its file name and
    class (``my_attack.py:MyAttack``), not by the file's whole path; a challenge file as the scenario
    wrote it (:mod:`ladderlab.utils.locations`)."""
    values = location_free(json.loads(params) if isinstance(params, str) else params)
    inside = ", ".join(f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}" for name, value in values.items())
    location, colon, class_name = plugin_id.rpartition(":")
    name = f"{PurePath(location).name}:{class_name}" if colon and location.endswith(".py") else plugin_id
    return f"{name}({inside})" if inside else name
