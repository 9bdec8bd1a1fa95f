"""Extrapolation experiments as a kind of cell the runner plays: the ``[[extrapolation]]`` tables of a
scenario (:mod:`ladderlab.extrapolation.scenario`), rows per replication × k × convention, registered
under the entry-point group of :mod:`ladderlab.runs.cell_kinds`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from ladderlab.extrapolation import scenario
from ladderlab.extrapolation.scenario import KEYS, ExtrapolationCell, ExtrapolationTable, extrapolation_cells
from ladderlab.runs import workload
from ladderlab.runs.cell_kinds import CellKind


class ExtrapolationKind(CellKind):
    """Zheng et al.'s Figure 3 experiment: a classifier on a mixture design, every k and convention."""

    name: ClassVar[str] = "extrapolation"
    table_key: ClassVar[str | None] = "extrapolation"
    table: ClassVar[Any] = ExtrapolationTable
    description: ClassVar[str] = "`[[extrapolation]]` tables (Zheng et al.'s Figure 3 experiment)"
    directory: ClassVar[str] = ExtrapolationCell.directory

    def keys(self) -> set[str]:
        return KEYS

    def cells(self, tables: list[ExtrapolationTable]) -> list[ExtrapolationCell]:
        return extrapolation_cells(tables)

    def play(self, cell: ExtrapolationCell, seed: int, replication: int, isolation: str = "none",
             secret_seed: int | None = None, isolated: Any = None) -> pa.Table:
        """The replication's rows as a table (it draws simulated data of ladderlab's own: no attack
        code to isolate, no secret to derive them from)."""
        return scenario.replication_table(cell, seed, replication)

    def result_table(self, cell: ExtrapolationCell, seed: int, rows: Sequence[pa.Table]) -> pa.Table:
        return pa.concat_tables(rows)

    def stored_rows(self, table: pa.Table) -> list[pa.Table]:
        """The table's runs of rows of one replication each."""
        replications = table.column("replication").to_numpy()
        edges = [0, *(np.flatnonzero(np.diff(replications)) + 1), len(replications)]
        return [table.slice(first, stop - first) for first, stop in zip(edges[:-1], edges[1:])]

    def estimate(self, group: list[ExtrapolationCell], replications: int, force: bool = False) -> workload.Estimate:
        (cell,) = group
        return workload.extrapolation_cell(cell, replications)


EXTRAPOLATIONS = ExtrapolationKind()
"""The extrapolations' kind (entry point ``extrapolation``)."""
