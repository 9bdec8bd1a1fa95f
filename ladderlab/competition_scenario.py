"""Competitions as scenario matrices: ``[[competition]]`` tables beside the duels' ``[[matrix]]``.

Cells cross tasks × mechanisms × rules × team mixes (a parameter list expands into a
grid, as for duels). Each cell runs like a duel cell (same seeding, Parquet per cell
under ``competitions/``, resume, joblib and Dask) with one row per replication: the
measures of :mod:`ladderlab.competition_measures`, every team's public, private and
population score (for the shake-up plots) and the per-group measures as JSON.

```toml
[[competition]]
tasks = [{ id = "latent-classification", params = { scorer = ["zero-one", "log-loss"] } }]
mechanisms = [{ id = "kaggle" }, { id = "ladder-free" }]
rules = [{ rounds = 60, per_round = 5, public_fraction = 0.3, selection = 2 }]

[[competition.mixes]]
name = "honest-and-boosting"
teams = [
  { policy = "progressive-analyst", count = 150, params = { lam = [0.5, 0.9] } },
  { policy = "boosting", count = 3, accounts = 2, params = { k = 300 } },
]
```
A team entry's list-valued parameter makes several groups (one per value) inside the
same mix, not several cells: the mix is the population of teams.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

from ladderlab.competition import Rules, TeamSpec
from ladderlab.duel import spec
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.schema import StrictModel


Number = StrictFloat | StrictInt


class CompetitionPlugin(StrictModel):
    """A task or mechanism of a `[[competition]]` table; list-valued parameters span a grid."""

    id: StrictStr = Field(description="registered id or `path/file.py:ClassName`")
    params: dict[str, Any] = Field(default_factory=dict, description="constructor parameters")


class TeamEntry(StrictModel):
    """`count` teams playing one policy (`ladderlab.competition.TeamSpec`)."""

    policy: StrictStr = Field(description="an attack id (honest participants are attacks too)")
    params: dict[str, Any] = Field(default_factory=dict, description="the policy's parameters (scalars)")
    count: StrictInt = Field(default=1, ge=1, description="teams playing this policy, each with its own random stream")
    accounts: StrictInt = Field(default=1, ge=1, description="accounts per team; ≥ 2 makes a Sybil team probing on the extra ones")
    label: StrictStr | None = Field(default=None, description="the group's name in results (default: the policy id)")
    honest: StrictBool | None = Field(default=None, description="counts in the honest utility (default: the policy class's `honest`)")


class Mix(StrictModel):
    """A named population of teams."""

    name: StrictStr = Field(pattern=r"^[A-Za-z0-9_.+-]+$", description="the mix's name in cell labels")
    teams: list[TeamEntry] = Field(min_length=1, description="the team entries")


class RulesEntry(StrictModel):
    """A platform's rules (`ladderlab.competition.Rules`); a list value spans a grid."""

    rounds: StrictInt | list[StrictInt] = Field(default=60, description="days of the competition")
    per_round: StrictInt | list[StrictInt] = Field(default=5, description="submissions per account and day")
    total: StrictInt | None | list[StrictInt] = Field(default=None, description="cap on an account's submissions (None: rounds × per_round)")
    public_fraction: Number | None | list[Number] = Field(default=None, description="share of the holdout on the public leaderboard (None: the task's split)")
    precision: Number | None | list[Number] = Field(default=None, description="released scores rounded to a multiple of it (None: as released)")
    selection: StrictStr | StrictInt | list[StrictStr | StrictInt] = Field(
        default="best-public", description="`last`, `best-public`, or k: the best private of the final and k − 1 best released others")


class CompetitionMatrix(StrictModel):
    """A `[[competition]]` table: tasks × mechanisms × rules × mixes, one cell each."""

    tasks: list[CompetitionPlugin] = Field(min_length=1, description="tasks the competitions run on")
    mechanisms: list[CompetitionPlugin] = Field(min_length=1, description="leaderboard mechanisms")
    rules: list[RulesEntry] = Field(default_factory=lambda: [RulesEntry()], min_length=1, description="platform rules")
    mixes: list[Mix] = Field(min_length=1, description="team populations")

    @model_validator(mode="after")
    def _valid_rules(self) -> CompetitionMatrix:
        """Every rules combination makes valid :class:`~ladderlab.competition.Rules`. The
        plugins are checked with the duels' (:class:`ladderlab.scenario.Scenario`)."""
        for j, rules in enumerate(self.rules):
            for values in _grid(rules.model_dump()):
                try:
                    Rules(**values)
                except ValueError as error:
                    raise ValueError(f"rules[{j}]: {error}") from None
        return self


KEYS = {name for model in (CompetitionMatrix, TeamEntry, Mix, RulesEntry) for name in model.model_fields}


def _grid(params: dict[str, Any], cls: type | None = None) -> list[dict[str, Any]]:
    """The grid of a parameter table (:func:`ladderlab.scenario.expand`: a list-valued
    parameter of ``cls`` is one value)."""
    from ladderlab.scenario import expand  # ladderlab.scenario imports this module

    return expand(params, cls)


@dataclass(frozen=True)
class CompetitionCell:
    """One task × mechanism × rules × team mix, with scalar parameters."""

    task: tuple[str, dict[str, Any]]
    mechanism: tuple[str, dict[str, Any]]
    rules: dict[str, Any]
    mix: str
    teams: tuple[dict[str, Any], ...]
    kind: str = "competition"
    directory: ClassVar[str] = "competitions"

    @property
    def label(self) -> str:
        """``task × mechanism``, the rules and the mix, for messages."""
        rules = ", ".join(f"{k}={v}" for k, v in self.rules.items() if v is not None)
        return f"{plugin_label(*self.task)} × {plugin_label(*self.mechanism)} ({rules}; mix {self.mix})"

    @property
    def key(self) -> str:
        text = json.dumps([self.kind, self.task, self.mechanism, self.rules, self.mix, self.teams], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def team_specs(self, resolved: list[dict[str, Any]] | None = None) -> list[TeamSpec]:
        """The teams; ``resolved`` adds fields to each (an isolated run's ``identity`` and ``honest``)."""
        return [TeamSpec(**{**team, **extra}) for team, extra in zip(self.teams, resolved or [{}] * len(self.teams))]

    def resolved_teams(self) -> list[dict[str, Any]]:
        """What an isolated run hands the process that plays the cell, so that it never loads
        the teams' code: each policy's identity and whether it counts as honest."""
        return [{"identity": spec(team.attack()), "honest": team.is_honest} for team in self.team_specs()]

    def plugin_ids(self) -> list[tuple[Any, str]]:
        """(registry, id) of every plugin the cell uses."""
        return [(TASKS, self.task[0]), (MECHANISMS, self.mechanism[0])] + [(ATTACKS, t["policy"]) for t in self.teams]


def competition_cells(matrices: list[CompetitionMatrix]) -> list[CompetitionCell]:
    """Every cell of every competition matrix, in file order; a cell listed twice is an error
    naming both tables, as for duels."""
    found: dict[str, CompetitionCell] = {}
    first_seen: dict[str, str] = {}
    for i, matrix in enumerate(matrices):
        mixes = [(mix.name, tuple(_teams(mix))) for mix in matrix.mixes]
        for task in matrix.tasks:
            for task_params in _grid(task.params, TASKS.get(task.id)):
                for mechanism in matrix.mechanisms:
                    for mechanism_params in _grid(mechanism.params, MECHANISMS.get(mechanism.id)):
                        for rules_entry in matrix.rules:
                            for rules in _grid(rules_entry.model_dump()):
                                for name, teams in mixes:
                                    cell = CompetitionCell((task.id, task_params), (mechanism.id, mechanism_params), rules, name, teams)
                                    if cell.key in found:
                                        raise ValueError(
                                            f"competition[{i}]: the competition {cell.label} is listed twice "
                                            f"(also in {first_seen[cell.key]}): remove one")
                                    found[cell.key], first_seen[cell.key] = cell, f"competition[{i}]"
    return list(found.values())


def _teams(mix: Mix) -> list[dict[str, Any]]:
    teams = []
    for entry in mix.teams:
        grid = _grid(entry.params, ATTACKS.get(entry.policy))
        varying = [k for k in entry.params if len({json.dumps(p[k], sort_keys=True, default=str) for p in grid}) > 1]
        for params in grid:
            label = entry.label or entry.policy
            if varying:
                label = plugin_label(label, {k: params[k] for k in varying})
            teams.append({"policy": entry.policy, "params": params, "count": entry.count,
                          "accounts": entry.accounts, "label": label, "honest": entry.honest})
    return teams
