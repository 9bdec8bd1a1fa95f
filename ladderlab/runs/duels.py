"""Duels as a kind of cell: the ``[[matrix]]`` tables' task × mechanism × attack cells
(:class:`ladderlab.runs.scenario.Cell`), played by :func:`ladderlab.runs.runner.run_replication`.

The runner's own kind (:mod:`ladderlab.runs.cell_kinds`), registered under the entry-point group as
every kind is. A duel whose attacker holds several accounts is a kind of its own, played by the
competition engine (:class:`ladderlab.competition.accounts.SybilDuels`, which extends this one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pyarrow as pa

from ladderlab.plugin import fingerprint_token
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import runner, workload
from ladderlab.runs.cell_kinds import CellKind, plugin_tokens
from ladderlab.runs.scenario import (
    AttackEntry,
    Cell,
    Matrix,
    PluginEntry,
    check_duplicates,
    check_matrices,
    duels,
    located_duels,
    matrix_plugin_entries,
    playable,
)
from ladderlab.scoring import get_scorer
from ladderlab.tasks import Split, Task


class DuelKind(CellKind):
    """Duels: one attacker, one mechanism, one task (:func:`ladderlab.runs.duel.duel`)."""

    name: ClassVar[str] = "duel"
    table_key: ClassVar[str | None] = "matrix"
    table: ClassVar[Any] = Matrix
    description: ClassVar[str] = "`[[matrix]]` tables of duels"
    directory: ClassVar[str] = Cell.directory
    hashed_when_empty: ClassVar[bool] = True
    plays_together: ClassVar[bool] = True

    def keys(self) -> set[str]:
        return {name for model in (Matrix, PluginEntry, AttackEntry) for name in model.model_fields}

    def check_entries(self, tables: list[Matrix]) -> None:
        check_matrices(tables)

    def check_cells(self, tables: list[Matrix]) -> None:
        check_duplicates(tables)

    def cells(self, tables: list[Matrix]) -> list[Cell]:
        return duels(tables)

    def located(self, tables: list[Matrix]) -> list[tuple[str, Cell]]:
        return located_duels(tables)

    def plugin_entries(self, tables: Any) -> list[tuple[dict[str, Any], str]]:
        return matrix_plugin_entries(tables)

    def preflight(self, cell: Cell, first_split: Callable[[Task], Split]) -> str | None:
        split = first_split(TASKS.make(cell.task[0], **cell.task[1]))
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        return playable(split, mechanism, [ATTACKS.make(cell.attack[0], **cell.attack[1])])

    def plugin_roles(self, cell: Cell) -> list[tuple[str, Any, str]]:
        return [("task", TASKS, cell.task[0]), ("mechanism", MECHANISMS, cell.mechanism[0]),
                ("attack", ATTACKS, cell.attack[0])]

    def isolated(self, cell: Cell) -> tuple[str, dict[str, Any]]:
        """The attack's identity (its id and every parameter), which names its random stream."""
        return ATTACKS.make(cell.attack[0], **cell.attack[1]).identity()

    def play(self, cell: Cell, seed: int, replication: int, isolation: str = "none", secret_seed: int | None = None,
             isolated: Any = None) -> dict[str, Any]:
        return runner.run_replication(cell, seed, replication, isolation, secret_seed, isolated)

    def result_table(self, cell: Cell, seed: int, rows: Sequence[dict[str, Any]]) -> pa.Table:
        return runner.cell_table(cell, seed, list(rows))

    def tokens(self, cell: Cell, rows: Sequence[Any] = (), isolation: str = "none", isolated: Any = None,
               ) -> dict[str, str | None]:
        """An attack played in its own process has the fingerprint of the snapshot its sandbox showed
        (the rows' ``attack_fingerprint``, :func:`ladderlab.isolation.protocol.snapshot_fingerprint`),
        hashed by the process that played it; this one never loads its code."""
        known: dict[str, str | None] = {}
        if isolation == "process":
            prints = [row["attack_fingerprint"] for row in rows if row.get("attack_fingerprint")]
            known["attack"] = fingerprint_token(prints[0]) if prints else None
        return plugin_tokens(cell, self.plugin_roles(cell), known)

    def estimate(self, group: list[Cell], replications: int, force: bool = False) -> workload.Estimate:
        """The group's transcript: the attack's submissions (its budget, or what it says it makes),
        each weighing the mechanism's bootstrap values; a Sybil's probes on A − 1 accounts, and a
        mechanism state per account."""
        cell = group[0]
        data, split = workload.task_data(*cell.task, force=force)
        n_holdout, n_public = int(split.y_holdout.size), int(split.public_rows.size)
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        planned = ATTACKS.make(cell.attack[0], **cell.attack[1]).max_submissions(split.public)
        budget = None if cell.budget is None else cell.budget * max(1, cell.accounts - 1)
        submissions = planned if budget is None else min(budget, budget if planned is None else planned)
        estimate = workload.duel_cells(cell.label, n_holdout, data, submissions, replications, len(group),
                                       mechanism.resampled_values(n_public, get_scorer(split.public.scorer)))
        if cell.accounts > 1:
            states = cell.accounts * (workload.BYTES_PER_ACCOUNT_ROW * n_public + workload.BYTES_PER_ACCOUNT)
            estimate = dataclasses.replace(estimate, peak_bytes=estimate.peak_bytes + states)
        return estimate


DUELS = DuelKind()
"""The duels' kind (entry point ``duel``)."""
