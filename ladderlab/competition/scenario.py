"""Competitions as scenario matrices: ``[[competition]]`` tables beside the duels' ``[[matrix]]``.

Cells cross tasks × mechanisms × rules × team mixes (a parameter list expands into a
grid, as for duels). Each cell runs like a duel cell (same seeding, Parquet per cell
under ``competitions/``, resume, joblib and Dask) with one row per replication: the
measures of :mod:`ladderlab.competition.measures`, every team's public, private and
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
from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from ladderlab.competition.engine import RULES_CONSTRAINTS, TeamSpec
from ladderlab.engines.linked_ranking import DEFAULT_LINKED_POLICY
from ladderlab.naming import plugin_label
from ladderlab.params import INT64_LIMIT, ParameterError, check_value
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import spec
from ladderlab.runs.grid import expand
from ladderlab.runs.schema import StrictModel
from ladderlab.utils.locations import location_free

Number = StrictFloat | StrictInt


class CompetitionPlugin(StrictModel):
    """A task or mechanism of a `[[competition]]` table; list-valued parameters span a grid."""

    id: StrictStr = Field(description="registered id or `path/file.py:ClassName`")
    params: dict[str, Any] = Field(default_factory=dict, description="constructor parameters")


class TeamEntry(StrictModel):
    """`count` teams playing one policy (`ladderlab.competition.TeamSpec`)."""

    policy: StrictStr = Field(description="an attack id (honest participants are attacks too)")
    params: dict[str, Any] = Field(default_factory=dict, description="the policy's parameters (scalars)")
    count: StrictInt = Field(default=1, ge=1, lt=INT64_LIMIT, description="teams playing this policy, each with its own random stream")
    accounts: StrictInt = Field(default=1, ge=1, lt=INT64_LIMIT, description="accounts per team; ≥ 2 makes a Sybil team probing on the extra ones")
    label: StrictStr | None = Field(default=None, pattern=r"\S", description="the group's name in results (default: the policy id); each group of a mix has its own")
    honest: StrictBool | None = Field(default=None, description="counts in the honest utility (default: the policy class's `honest`)")
    activity: Literal["kaggle"] | None = Field(
        default=None, description="an activity profile: each team draws when it arrives, how long it stays and how many "
                                  "submissions it makes, as Kaggle teams do (`ladderlab.competition.kaggle_calibration`); default: every round, the whole quota")


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
    link: StrictBool | list[StrictBool] = Field(default=False, description="link near-identical accounts (the default link rule)")
    linked: StrictStr | list[StrictStr] = Field(
        default=DEFAULT_LINKED_POLICY, description="what the final ranking does with teams linked to each other: "
                                                   "`flag`, `merge` or `disqualify`")


LINK_RULES = {"link", "linked"}
"""Rules a cell holds only where they differ from their defaults, so that the cells of a scenario
written before them keep their keys (and their result files)."""


class CompetitionMatrix(StrictModel):
    """A `[[competition]]` table: tasks × mechanisms × rules × mixes, one cell each."""

    tasks: list[CompetitionPlugin] = Field(min_length=1, description="tasks the competitions run on")
    mechanisms: list[CompetitionPlugin] = Field(min_length=1, description="leaderboard mechanisms")
    rules: list[RulesEntry] = Field(default_factory=lambda: [RulesEntry()], min_length=1, description="platform rules")
    mixes: list[Mix] = Field(min_length=1, description="team populations")

    @model_validator(mode="before")
    @classmethod
    def _valid_rules(cls, data: Any) -> Any:
        """Every value of every rules entry (each item of a list: a grid) is a valid rule
        (:data:`ladderlab.competition.RULES_CONSTRAINTS`), checked before the types so that a bad
        value is one error naming the entry and the rule. The plugins are checked with the
        duels' (:class:`ladderlab.runs.scenario.Scenario`)."""
        entries = data.get("rules") if isinstance(data, dict) else None
        for j, entry in enumerate(entries if isinstance(entries, list) else []):
            for name, value in entry.items() if isinstance(entry, dict) else ():
                if name not in RULES_CONSTRAINTS:
                    continue
                if value == []:
                    raise ValueError(f"rules[{j}].{name}: an empty list is an empty grid (no cells); give at least one value")
                for item in value if isinstance(value, list) else [value]:
                    try:
                        check_value("rules", name, item, RULES_CONSTRAINTS[name])
                    except ParameterError as error:
                        raise ValueError(f"rules[{j}].{name}: {error}") from None
        return data


KEYS = {name for model in (CompetitionMatrix, TeamEntry, Mix, RulesEntry) for name in model.model_fields}


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
        """A stable file name for the cell's results, whatever folder its local files lie in."""
        parts = location_free([self.kind, self.task, self.mechanism, self.rules, self.mix, self.teams])
        text = json.dumps(parts, sort_keys=True, default=str)
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
    """Every cell of every competition matrix, in file order. A cell listed twice, two mixes
    of a table with one name, two team groups of a mix with one label, and two cells that
    differ only in their teams (the report could not tell them apart) are errors naming
    where, as for duels."""
    found: dict[str, CompetitionCell] = {}
    first_seen: dict[str, str] = {}
    shown: dict[str, str] = {}
    for i, matrix in enumerate(matrices):
        names: dict[str, int] = {}
        for m, mix in enumerate(matrix.mixes):
            if mix.name in names:
                raise ValueError(f"competition[{i}].mixes[{m}].name: {mix.name!r} is also the name of mixes[{names[mix.name]}]; "
                                 "the report tells mixes apart by name: rename one")
            names[mix.name] = m
        mixes = [(mix.name, tuple(_teams(mix, f"competition[{i}].mixes[{m}]"))) for m, mix in enumerate(matrix.mixes)]
        for task in matrix.tasks:
            for task_params in expand(task.params, TASKS.get(task.id)):
                for mechanism in matrix.mechanisms:
                    for mechanism_params in expand(mechanism.params, MECHANISMS.get(mechanism.id)):
                        for rules_entry in matrix.rules:
                            for rules in expand(rules_entry.model_dump(exclude=LINK_RULES)
                                                | rules_entry.model_dump(exclude_defaults=True, include=LINK_RULES)):
                                for name, teams in mixes:
                                    cell = CompetitionCell((task.id, task_params), (mechanism.id, mechanism_params), rules, name, teams)
                                    if cell.key in found:
                                        raise ValueError(
                                            f"competition[{i}]: the competition {cell.label} is listed twice "
                                            f"(also in {first_seen[cell.key]}): remove one")
                                    looks = json.dumps([cell.task, cell.mechanism, rules, name], sort_keys=True, default=str)
                                    if looks in shown:
                                        raise ValueError(
                                            f"competition[{i}]: the competition {cell.label} has other teams than the one "
                                            f"of the same name in {shown[looks]}; the report could not tell them apart: "
                                            "rename one of the mixes")
                                    found[cell.key], first_seen[cell.key] = cell, f"competition[{i}]"
                                    shown[looks] = f"competition[{i}]"
    return list(found.values())


def _teams(mix: Mix, where: str) -> list[dict[str, Any]]:
    """The team groups of a mix: one per team entry and value of its parameter grid, each
    with its own label (the group's name in results); two groups with one label are refused."""
    teams: list[dict[str, Any]] = []
    labelled: dict[str, int] = {}
    for j, entry in enumerate(mix.teams):
        grid = expand(entry.params, ATTACKS.get(entry.policy))
        varying = [k for k in entry.params if len({json.dumps(p[k], sort_keys=True, default=str) for p in grid}) > 1]
        labels = set()
        for params in grid:
            label = entry.label or entry.policy
            if varying:
                label = plugin_label(label, {k: params[k] for k in varying})
            if label in labels:
                raise ValueError(f"{where}.teams[{j}].params: two values of the grid make the same group {label!r}: "
                                 "remove the repeated value")
            if label in labelled:
                raise ValueError(
                    f"{where}.teams[{j}]: its group is labelled {label!r}, as is teams[{labelled[label]}]'s; "
                    "the results would merge them: give each entry its own label")
            labels.add(label)
            team = {"policy": entry.policy, "params": params, "count": entry.count,
                    "accounts": entry.accounts, "label": label, "honest": entry.honest}
            if entry.activity is not None:  # only then: the keys of cells without one stay as they were
                team["activity"] = entry.activity
            teams.append(team)
        labelled.update(dict.fromkeys(labels, j))
    return teams
