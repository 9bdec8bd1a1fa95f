"""Competitions as a kind of cell the runner plays: the ``[[competition]]`` tables of a scenario
(:mod:`ladderlab.competition.scenario`), one row per replication (:mod:`ladderlab.competition.results`),
registered under the entry-point group of :mod:`ladderlab.runs.cell_kinds`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from ladderlab.competition import results
from ladderlab.competition.engine import WAVE_ELEMENTS, Rules, public_rows
from ladderlab.competition.kaggle_calibration import mean_submissions
from ladderlab.competition.scenario import KEYS, CompetitionCell, CompetitionMatrix, competition_cells
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import workload
from ladderlab.runs.cell_kinds import CellKind, plugin_tokens
from ladderlab.runs.scenario import _check_entry, playable, raw_entries
from ladderlab.tasks import Split, Task
from ladderlab.utils.locations import location_free


@dataclass(frozen=True)
class IsolatedTeams:
    """What an isolated run hands the process that plays a competition cell, so that it never
    loads the teams' code: each team's identity and honest flag, and the cell's plugin tokens."""

    teams: list[dict[str, Any]]
    tokens: dict[str, str | None]


class CompetitionKind(CellKind):
    """Simulated competitions: tasks × mechanisms × rules × team mixes."""

    name: ClassVar[str] = "competition"
    table_key: ClassVar[str | None] = "competition"
    table: ClassVar[Any] = CompetitionMatrix
    description: ClassVar[str] = "`[[competition]]` tables"
    directory: ClassVar[str] = CompetitionCell.directory
    hashed_when_empty: ClassVar[bool] = True

    def keys(self) -> set[str]:
        return KEYS

    def check_entries(self, tables: list[CompetitionMatrix]) -> None:
        """Every task, mechanism and team policy exists and takes its parameters (as duels' entries)."""
        for i, table in enumerate(tables):
            for key, registry in (("tasks", TASKS), ("mechanisms", MECHANISMS)):
                for j, entry in enumerate(getattr(table, key)):
                    _check_entry(entry, registry, f"competition[{i}].{key}[{j}]")
            for m, mix in enumerate(table.mixes):
                for j, team in enumerate(mix.teams):
                    _check_entry(team, ATTACKS, f"competition[{i}].mixes[{m}].teams[{j}]", id_key="policy")

    def cells(self, tables: list[CompetitionMatrix]) -> list[CompetitionCell]:
        return competition_cells(tables)

    def plugin_entries(self, tables: Any) -> list[tuple[dict[str, Any], str]]:
        """Tasks and mechanisms (``id``), and every mix's teams (``policy``)."""
        return ([(entry, "id") for entry in raw_entries(tables, ("tasks", "mechanisms"))]
                + [(team, "policy") for team in raw_entries(raw_entries(tables, ("mixes",)), ("teams",))])

    def preflight(self, cell: CompetitionCell, first_split: Callable[[Task], Split]) -> str | None:
        """Every team's policy must play, or the competition is skipped; the rules' public share must
        leave public and private rows."""
        split = first_split(TASKS.make(cell.task[0], **cell.task[1]))
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        attacks = [ATTACKS.make(team["policy"], **team["params"]) for team in cell.teams]
        if cell.rules["public_fraction"] is not None:
            public_rows(Rules(**cell.rules), split.y_holdout.size)
        return playable(split, mechanism, attacks)

    def plugin_roles(self, cell: CompetitionCell) -> list[tuple[str, Any, str]]:
        """Task, mechanism, and each distinct team policy (role ``team <id>``)."""
        policies = sorted({team["policy"] for team in cell.teams})
        return [("task", TASKS, cell.task[0]), ("mechanism", MECHANISMS, cell.mechanism[0])] + [
            (f"team {location_free(policy)}", ATTACKS, policy) for policy in policies]

    def isolated(self, cell: CompetitionCell) -> IsolatedTeams:
        return IsolatedTeams(cell.resolved_teams(), self.tokens(cell))

    def play(self, cell: CompetitionCell, seed: int, replication: int, isolation: str = "none",
             secret_seed: int | None = None, isolated: IsolatedTeams | None = None) -> dict[str, Any]:
        return results.run_replication(cell, seed, replication, isolation, secret_seed,
                                       isolated.teams if isolated is not None else None)

    def result_table(self, cell: CompetitionCell, seed: int, rows: Sequence[dict[str, Any]]) -> pa.Table:
        return results.rows_table(cell, seed, list(rows))

    def tokens(self, cell: CompetitionCell, rows: Sequence[Any] = (), isolation: str = "none",
               isolated: IsolatedTeams | None = None) -> dict[str, str | None]:
        """Those the isolated run computed before it played the cell elsewhere, or computed here."""
        return isolated.tokens if isolated is not None else plugin_tokens(cell, self.plugin_roles(cell))

    def estimate(self, group: list[CompetitionCell], replications: int, force: bool = False) -> workload.Estimate:
        """Every team's state and every account's bound mechanism, the submissions the rules (or the
        teams' activity profiles) allow, and the wave of predictions scored at once."""
        (cell,) = group
        data, split = workload.task_data(*cell.task, force=force)
        n_holdout = int(split.y_holdout.size)
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        rules = Rules(**cell.rules)
        n_public = int(split.public_rows.size)
        if rules.public_fraction is not None:
            try:
                n_public = public_rows(rules, n_holdout)
            except ValueError:  # the preflight refuses it, in its words
                n_public = n_holdout
        teams = sum(team["count"] for team in cell.teams)
        accounts = sum(team["count"] * team["accounts"] for team in cell.teams)
        submitted = sum(team["count"] * team["accounts"] * account_submissions(team, rules) for team in cell.teams)
        return workload.competition_cell(cell.label, n_holdout, n_public, data, teams, accounts, submitted, rules,
                                         replications, mechanism.resampled_values(n_public), WAVE_ELEMENTS)


def account_submissions(team: dict[str, Any], rules: Rules) -> float:
    """What one account of a team entry submits: the rules' cap, or the mean of its activity profile."""
    if team.get("activity") is None:
        return rules.cap
    return mean_submissions(team["activity"], rules.rounds, rules.per_round, rules.cap)


COMPETITIONS = CompetitionKind()
"""The competitions' kind (entry point ``competition``)."""
