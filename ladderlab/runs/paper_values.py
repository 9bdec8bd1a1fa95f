"""The papers' values, declared in a scenario file beside the cells that reproduce them.

```toml
[[paper_values]]
source = "Chaibub Neto et al. 2016, Fig. 4"
where = { mechanism = "ladder-t", "mechanism.alpha" = 0.15, attack = "step-forward", "attack.iterations" = 5 }
measure = "delta_median"
value = -0.07
note = "read off the figure"
```

``where`` selects exactly one cell of the scenario: by plugin id (``task``, ``mechanism``,
``attack``), ``budget``, a competition's team ``mix``, and by a parameter as the scenario
writes it (``task.NAME``, ``mechanism.NAME``, ``attack.NAME``, a competition's
``rules.NAME``). ``measure`` is a column of that cell's summary: for a duel
``delta``, ``lberr``, ``final_released``, ``final_public`` (the exact public score) or ``final_final``, for a competition one of
:data:`ladderlab.stats.replications.COMPETITION_MEASURES`, each followed by ``_median``,
``_lo`` or ``_hi``; or such a measure followed by ``_mean``, for a paper that averages its
runs (Blum & Hardt's Fig. 3 averages 5). Reports put our value beside the paper's (our 95%
interval beside a median, and a Student-t 95% interval beside a mean). Paper values do not change what a scenario computes, so they are not
part of its identity: adding one keeps the run directories of the scenario.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import Field, StrictFloat, StrictInt, StrictStr, model_validator

from ladderlab.runs.schema import StrictModel
from ladderlab.stats.replications import (
    COMPETITION_MEASURES,
    DUEL_MEASURES,
    summary_columns,
)

Scalar = StrictStr | StrictInt | StrictFloat | bool
KINDS = {"duel": ("task", "mechanism", "attack", "budget"), "competition": ("task", "mechanism", "mix", "rules")}
"""The keys of ``where`` for a cell of each kind (``rules`` only as ``rules.NAME``)."""
REPLICATION_COLUMNS = {"duel": DUEL_MEASURES, "competition": {measure: measure for measure in COMPETITION_MEASURES}}
"""Per kind of cell, each measure's column in the replications' table (a ``_mean`` is computed from it)."""
MEASURES = {kind: summary_columns(columns) + [f"{measure}_mean" for measure in columns]
            for kind, columns in REPLICATION_COLUMNS.items()}
NOTE = ("The papers' values the scenario declares ([[paper_values]]), beside ours: for a median, ours is the "
        "median [2.5%, 97.5%] over replications; for a mean, the mean over replications with its Student-t 95% "
        "interval.")


def mean_interval(values: Iterable[float]) -> tuple[float, float, float]:
    """The mean of the finite ``values`` and its Student-t 95% confidence interval (NaN bounds
    with fewer than two values; all NaN with none)."""
    from scipy import (
        stats,  # imported here: scipy.stats is slow to import, and scenarios load this module
    )

    finite = np.asarray([value for value in values if math.isfinite(value)], dtype=float)
    if finite.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(finite.mean())
    if finite.size < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, finite.size - 1) * finite.std(ddof=1) / math.sqrt(finite.size))
    return mean, mean - half, mean + half


class PaperValue(StrictModel):
    """A value a paper reports for one cell of the scenario (`[[paper_values]]`)."""

    source: StrictStr = Field(min_length=1, description="the paper and the figure, table or page")
    where: dict[str, Scalar] = Field(min_length=1, description="selects one cell: `mechanism`, `attack`, `task`, "
                                     "`budget`, `mix`, and parameters as `mechanism.alpha`, `rules.rounds` …")
    measure: StrictStr = Field(description="a column of the cell's summary, e.g. `delta_median`, `spearman_median`")
    value: StrictFloat | StrictInt = Field(description="the paper's value")
    note: StrictStr = Field(default="", description="how the value was obtained (e.g. read off the figure)")

    @model_validator(mode="after")
    def _known_keys(self) -> PaperValue:
        keys = {key for keys in KINDS.values() for key in keys}
        for key in self.where:
            role, dot, name = key.partition(".")
            if role not in keys or (dot and not name) or (role in ("budget", "mix") and dot) or (role == "rules" and not dot):
                raise ValueError(f"where: unknown key {key!r}; use {', '.join(sorted(keys - {'rules'}))}, "
                                 "or a parameter as task.NAME, mechanism.NAME, attack.NAME or rules.NAME")
        if not math.isfinite(self.value):
            raise ValueError(f"value must be a finite number, got {self.value!r}")
        return self


def kind(cell: dict[str, Any]) -> str:
    """``competition`` or ``duel``, for a cell as the manifest records it."""
    return "competition" if cell.get("kind") == "competition" else "duel"


def _equal(wanted: Any, found: Any) -> bool:
    if isinstance(wanted, float) or isinstance(found, float):
        return isinstance(found, (int, float)) and not isinstance(found, bool) and math.isclose(wanted, found, rel_tol=1e-12)
    return json.dumps(wanted, sort_keys=True) == json.dumps(found, sort_keys=True)


def matches(where: dict[str, Any], cell: dict[str, Any]) -> bool:
    """Whether a cell (as the manifest records it) has every property ``where`` asks for."""
    for key, wanted in where.items():
        role, dot, name = key.partition(".")
        if role not in KINDS[kind(cell)]:
            return False
        value = cell.get(role)
        if role == "rules":
            found = value.get(name)
        elif role in ("task", "mechanism", "attack"):
            plugin_id, params = value
            if not dot:
                found = plugin_id
            elif name in params:
                found = params[name]
            else:
                return False
        else:
            found = value
        if not _equal(wanted, found):
            return False
    return True


def where_text(where: dict[str, Any]) -> str:
    """``mechanism=ladder-t, mechanism.alpha=0.15, …``."""
    return ", ".join(f"{key}={value}" for key, value in where.items())


def locate(value: PaperValue, cells: Iterable[dict[str, Any]], label: Any = str) -> dict[str, Any]:
    """The one cell ``value.where`` selects; a ``ValueError`` saying what is wrong otherwise
    (no cell, several, or a measure the cell's summary does not have). ``label`` names a cell."""
    found = [cell for cell in cells if matches(value.where, cell)]
    if not found:
        raise ValueError(f"where {{{where_text(value.where)}}} selects no cell of the scenario")
    if len(found) > 1:
        listed = "; ".join(label(cell) for cell in found[:4]) + ("; …" if len(found) > 4 else "")
        raise ValueError(f"where {{{where_text(value.where)}}} selects {len(found)} cells ({listed}): "
                         "add keys that tell them apart")
    known = MEASURES[kind(found[0])]
    if value.measure not in known:
        raise ValueError(f"measure {value.measure!r} is not a column of a {kind(found[0])} summary; "
                         f"choose from {', '.join(known)}")
    return found[0]
