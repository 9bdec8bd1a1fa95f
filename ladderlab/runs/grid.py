"""Parameter grids: a scenario's parameter table stands for every combination of its lists
(asv's parameter grids). Scenarios, competitions and extrapolation tables expand theirs here."""

from __future__ import annotations

import itertools
from typing import Any

from ladderlab.params import list_valued
from ladderlab.plugin import Plugin


def grid_values(cls: type[Plugin] | None, name: str, value: Any) -> list[Any]:
    """The values a parameter table entry stands for: a list is a grid of its items, except
    for a parameter ``cls`` declares list-valued, where a list is one value and only a
    list of lists is a grid."""
    if not isinstance(value, list):
        return [value]
    if cls is not None and list_valued(cls, name):
        return value if value and all(isinstance(v, list) for v in value) else [value]
    return value


def expand(params: dict[str, Any], cls: type[Plugin] | None = None) -> list[dict[str, Any]]:
    """The grid of a parameter table: one dict per combination of grid values (see :func:`grid_values`)."""
    names = list(params)
    values = [grid_values(cls, name, value) for name, value in params.items()]
    return [dict(zip(names, combination)) for combination in itertools.product(*values)]
