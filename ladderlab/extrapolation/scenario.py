"""Accuracy-extrapolation experiments as scenario tables: ``[[extrapolation]]`` beside ``[[matrix]]``.

Zheng, Achanta & Benjamini's Figure 3 (arXiv:1606.05228, Sec. 5;
:mod:`ladderlab.extrapolation.experiment`): cells cross the mixture designs (a list value
of a ``mixture`` key spans a grid) with the classifiers; each cell computes, replication
by replication, every prediction of acc⁽ᴷ⁾ at every subset size k in every convention
listed, and writes one Parquet file under ``extrapolations/`` (resumed, verified and
reported like duel and competition cells: :mod:`ladderlab.extrapolation.cell_kind`).

```toml
[[extrapolation]]
classifiers = ["qda", "logistic", "network"]
conventions = ["ladderlab", "authors"]
mixture = { training = 20, testing = 30 }
```
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, StrictFloat, StrictInt, model_validator

from ladderlab.extrapolation.experiment import (
    CLASSIFIERS,
    PREDICTORS,
    MixtureDesign,
    run_replication,
)
from ladderlab.runs.grid import expand
from ladderlab.runs.schema import StrictModel
from ladderlab.stats.extrapolation import CONVENTIONS

Number = StrictFloat | StrictInt


class ExtrapolationTable(StrictModel):
    """An `[[extrapolation]]` table: Zheng et al.'s Figure 3 experiment for each classifier × mixture."""

    classifiers: list[Literal[tuple(CLASSIFIERS)]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: list(CLASSIFIERS), min_length=1, description="classifiers trained on the first k classes")
    conventions: list[Literal[CONVENTIONS]] = Field(  # type: ignore[valid-type]
        default_factory=lambda: ["ladderlab"], min_length=1,
        description="estimator conventions (ladderlab.stats; 'authors': the authors' R code), each a column set of every cell")
    mixture: dict[str, Number | list[Number]] = Field(
        default_factory=dict, description="MixtureDesign fields (classes, dimension, spread, noise, scale_spread, "
        "training, testing); a list spans a grid; the defaults are the authors' mixture")
    smallest: StrictInt = Field(default=3, ge=2, description="the smallest subset size k")
    step: StrictInt = Field(default=1, ge=1, description="every step-th k from the smallest (K itself always)")

    @model_validator(mode="after")
    def _valid_designs(self) -> ExtrapolationTable:
        fields = [field.name for field in dataclasses.fields(MixtureDesign)]
        for name in self.mixture:
            if name not in fields:
                raise ValueError(f"mixture.{name}: not a mixture parameter; choose from {', '.join(fields)}")
        for design in designs(self):
            for name in ("classes", "dimension", "training", "testing"):
                if not isinstance(getattr(design, name), int) or getattr(design, name) < 1:
                    raise ValueError(f"mixture.{name}: must be a whole number ≥ 1, got {getattr(design, name)!r}")
            if design.classes <= self.smallest:
                raise ValueError(f"mixture.classes = {design.classes} must exceed smallest = {self.smallest}")
            if design.training < 2 or design.testing < 1:
                raise ValueError(f"mixture: every class needs ≥ 2 training and ≥ 1 test points, got "
                                 f"training = {design.training}, testing = {design.testing}")
            for name in ("spread", "noise"):
                if not getattr(design, name) > 0:
                    raise ValueError(f"mixture.{name}: must be positive, got {getattr(design, name)!r}")
            if design.scale_spread < 0:
                raise ValueError(f"mixture.scale_spread: must be ≥ 0, got {design.scale_spread!r}")
        return self


KEYS = set(ExtrapolationTable.model_fields)


def designs(table: ExtrapolationTable) -> list[MixtureDesign]:
    """The table's grid of mixture designs."""
    return [MixtureDesign(**params) for params in expand(table.mixture)]


@dataclass(frozen=True)
class ExtrapolationCell:
    """One classifier on one mixture design, with the conventions and subset sizes to compute."""

    classifier: str
    mixture: dict[str, Any]
    conventions: tuple[str, ...]
    smallest: int
    step: int
    kind: str = "extrapolation"
    directory: ClassVar[str] = "extrapolations"

    @property
    def design(self) -> MixtureDesign:
        return MixtureDesign(**self.mixture)

    @property
    def label(self) -> str:
        changed = {k: v for k, v in self.mixture.items() if v != getattr(MixtureDesign(), k)}
        design = ", ".join(f"{k}={v}" for k, v in changed.items()) or "the authors' mixture"
        return f"extrapolation {self.classifier} ({design}; k ≥ {self.smallest}, step {self.step})"

    @property
    def key(self) -> str:
        text = json.dumps([self.kind, self.classifier, self.mixture, self.conventions, self.smallest, self.step],
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def plugin_ids(self) -> list[tuple[Any, str]]:
        """No plugins: the experiment is ladderlab's own code (its version is in the manifest)."""
        return []


def extrapolation_cells(tables: list[ExtrapolationTable]) -> list[ExtrapolationCell]:
    """Every cell of every table, in file order; a cell listed twice is an error naming both tables."""
    found: dict[str, ExtrapolationCell] = {}
    first_seen: dict[str, str] = {}
    for i, table in enumerate(tables):
        for design in designs(table):
            for classifier in table.classifiers:
                cell = ExtrapolationCell(classifier, dataclasses.asdict(design), tuple(table.conventions),
                                         table.smallest, table.step)
                if cell.key in found:
                    raise ValueError(f"extrapolation[{i}]: {cell.label} is listed twice (also in {first_seen[cell.key]})")
                found[cell.key], first_seen[cell.key] = cell, f"extrapolation[{i}]"
    return list(found.values())


SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("cell", "classifier", "mixture")]
    + [("seed", pa.int64()), ("replication", pa.int64()), ("status", pa.string()), ("error", pa.string()),
       ("cpu_time", pa.float64()), ("convention", pa.string()), ("k", pa.int64())]
    + [(name, pa.float64()) for name in (*PREDICTORS, "true")]
)


def replication_table(cell: ExtrapolationCell, seed: int, replication: int) -> pa.Table:
    """Replication ``replication`` of an extrapolation cell: one row per k × convention (one row with
    status ``failed`` and the error for a replication that raised)."""
    design = cell.design
    start = time.process_time()
    try:
        frame = run_replication(design, cell.classifier, replication, seed, design.subset_sizes(cell.smallest, cell.step),
                                cell.conventions)
        frame["status"], frame["error"] = "ok", None
    except Exception as error:  # a failing replication is recorded, and the run goes on
        frame = pd.DataFrame([{"replication": replication, "status": "failed",
                               "error": "".join(traceback.format_exception_only(error)).strip()}])
    frame["cpu_time"] = time.process_time() - start
    frame["cell"], frame["classifier"], frame["seed"] = cell.key, cell.classifier, seed
    frame["mixture"] = json.dumps(cell.mixture, sort_keys=True)
    for name in SCHEMA.names:
        if name not in frame:
            frame[name] = None
    return pa.Table.from_pandas(frame[SCHEMA.names], schema=SCHEMA, preserve_index=False)


def read_files(files: list[Path]) -> pd.DataFrame:
    """The rows of the given extrapolation cell files."""
    if not files:
        return pd.DataFrame(columns=SCHEMA.names)
    frame = pd.concat([pq.read_table(path).to_pandas() for path in files], ignore_index=True)
    order = {name: position for position, name in enumerate([*CLASSIFIERS, *CONVENTIONS])}
    return frame.sort_values(["mixture", "classifier", "convention", "replication", "k"], ignore_index=True,
                             key=lambda column: column.map(order) if column.name in ("classifier", "convention") else column)

