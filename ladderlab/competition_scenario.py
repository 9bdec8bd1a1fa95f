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
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.competition_measures import MEASURE_NAMES, measures
from ladderlab.duel import Incompatible
from ladderlab.naming import plugin_label, unknown_name_error
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.seeding import stream

SCORE_COLUMNS = ("team_public", "team_private", "team_population")
SOTA_REPETITIONS = 300


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CompetitionPlugin(_Strict):
    id: str
    params: dict[str, Any] = Field(default_factory=dict)


class TeamEntry(_Strict):
    policy: str = Field(description="an attack id (honest participants are attacks too)")
    params: dict[str, Any] = Field(default_factory=dict)
    count: int = Field(default=1, ge=1)
    accounts: int = Field(default=1, ge=1)
    label: str | None = None
    honest: bool | None = None


class Mix(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+$")
    teams: list[TeamEntry] = Field(min_length=1)


class RulesEntry(_Strict):
    rounds: int | list[int] = 60
    per_round: int | list[int] = 5
    total: int | None | list[int] = None
    public_fraction: float | None | list[float] = None
    precision: float | None | list[float] = None
    selection: str | int | list[str | int] = "best-public"


class CompetitionMatrix(_Strict):
    tasks: list[CompetitionPlugin] = Field(min_length=1)
    mechanisms: list[CompetitionPlugin] = Field(min_length=1)
    rules: list[RulesEntry] = Field(default_factory=lambda: [RulesEntry()], min_length=1)
    mixes: list[Mix] = Field(min_length=1)

    @model_validator(mode="after")
    def _known(self) -> CompetitionMatrix:
        for key, registry in (("tasks", TASKS), ("mechanisms", MECHANISMS)):
            for j, entry in enumerate(getattr(self, key)):
                _check_params(registry, entry.id, entry.params, f"{key}[{j}]")
        for i, mix in enumerate(self.mixes):
            for j, team in enumerate(mix.teams):
                _check_params(ATTACKS, team.policy, team.params, f"mixes[{i}].teams[{j}]")
        for j, rules in enumerate(self.rules):
            for values in _grid(rules.model_dump()):
                try:
                    Rules(**values)
                except ValueError as error:
                    raise ValueError(f"rules[{j}]: {error}") from None
        return self


KEYS = {name for model in (CompetitionMatrix, TeamEntry, Mix, RulesEntry) for name in model.model_fields}


def _check_params(registry: Any, plugin_id: str, params: dict[str, Any], where: str) -> None:
    try:
        cls = registry.get(plugin_id)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    known = cls.parameter_defaults()
    for name in params:
        if name not in known:
            raise ValueError(f"{where}.params: {unknown_name_error(f'parameter of {plugin_id!r}', name, known)}")


def _grid(params: dict[str, Any]) -> list[dict[str, Any]]:
    from ladderlab.scenario import expand  # ladderlab.scenario imports this module


    return expand(params)


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
    def key(self) -> str:
        text = json.dumps([self.kind, self.task, self.mechanism, self.rules, self.mix, self.teams], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def team_specs(self) -> list[TeamSpec]:
        return [TeamSpec(**team) for team in self.teams]

    def plugin_ids(self) -> list[tuple[Any, str]]:
        """(registry, id) of every plugin the cell uses."""
        return [(TASKS, self.task[0]), (MECHANISMS, self.mechanism[0])] + [(ATTACKS, t["policy"]) for t in self.teams]


def competition_cells(matrices: list[CompetitionMatrix]) -> list[CompetitionCell]:
    """Every cell of every competition matrix, in file order, without duplicates."""
    found: dict[str, CompetitionCell] = {}
    for matrix in matrices:
        mixes = [(mix.name, tuple(_teams(mix))) for mix in matrix.mixes]
        for task in matrix.tasks:
            for task_params in _grid(task.params):
                for mechanism in matrix.mechanisms:
                    for mechanism_params in _grid(mechanism.params):
                        for rules_entry in matrix.rules:
                            for rules in _grid(rules_entry.model_dump()):
                                for name, teams in mixes:
                                    cell = CompetitionCell((task.id, task_params), (mechanism.id, mechanism_params), rules, name, teams)
                                    found.setdefault(cell.key, cell)
    return list(found.values())


def _teams(mix: Mix) -> list[dict[str, Any]]:
    teams = []
    for entry in mix.teams:
        grid = _grid(entry.params)
        for params in grid:
            label = entry.label or entry.policy
            if len(grid) > 1:
                label = plugin_label(label, {k: v for k, v in params.items() if isinstance(entry.params[k], list)})
            teams.append({"policy": entry.policy, "params": params, "count": entry.count,
                          "accounts": entry.accounts, "label": label, "honest": entry.honest})
    return teams


def run_replication(cell: CompetitionCell, seed: int, replication: int) -> dict[str, Any]:
    """One replication of a competition cell: a row (status ok, failed or skipped)."""
    row: dict[str, Any] = {"replication": replication, "status": "ok", "error": None}
    start = time.perf_counter()
    try:
        task = TASKS.make(cell.task[0], **cell.task[1])
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        result = compete(task, mechanism, cell.team_specs(), Rules(**cell.rules), seed, replication)
        found = measures(result, stream(seed, "competition-measures", cell.key, replication), SOTA_REPETITIONS)
    except Incompatible as reason:
        row.update(status="skipped", error=str(reason))
    except Exception as error:  # a failing cell is recorded, and the run goes on
        row.update(status="failed", error="".join(traceback.format_exception_only(error)).strip())
    else:
        row.update({name: found[name] for name in MEASURE_NAMES})
        row.update(groups=json.dumps(found["groups"]), team_labels=result.labels,
                   team_honest=result.honest.tolist(), team_public=result.public.tolist(),
                   team_private=result.private.tolist(), team_population=result.population.tolist(),
                   best_population=result.best_population, sign=result.sign)
    row["wall_time"] = time.perf_counter() - start
    return row


SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("cell", "task", "task_params", "mechanism", "mechanism_params", "rules", "mix", "teams")]
    + [("seed", pa.int64()), ("replication", pa.int64()), ("status", pa.string()), ("error", pa.string()),
       ("wall_time", pa.float64()), ("best_population", pa.float64()), ("sign", pa.float64())]
    + [(name, pa.float64()) for name in MEASURE_NAMES]
    + [("groups", pa.string()), ("team_labels", pa.list_(pa.string())), ("team_honest", pa.list_(pa.bool_()))]
    + [(name, pa.list_(pa.float64())) for name in SCORE_COLUMNS]
)


def cell_table(cell: CompetitionCell, seed: int, replications: int) -> pa.Table:
    """Every replication of a competition cell as a Parquet table."""
    rows = [run_replication(cell, seed, replication) for replication in range(replications)]
    fixed = {
        "cell": cell.key, "task": cell.task[0], "task_params": json.dumps(cell.task[1], sort_keys=True),
        "mechanism": cell.mechanism[0], "mechanism_params": json.dumps(cell.mechanism[1], sort_keys=True),
        "rules": json.dumps(cell.rules, sort_keys=True), "mix": cell.mix, "teams": json.dumps(cell.teams, sort_keys=True),
        "seed": seed,
    }
    columns = {name: [value] * len(rows) for name, value in fixed.items()}
    for name in SCHEMA.names:
        if name not in columns:
            columns[name] = [row.get(name) for row in rows]
    return pa.table(columns, schema=SCHEMA)


def load_competition_results(out: str | Path, teams: bool = False) -> pd.DataFrame:
    """Every completed competition cell's rows; ``teams=True`` keeps the per-team lists."""
    files = sorted((Path(out) / CompetitionCell.directory).glob("*.parquet"))
    if not files:
        return pd.DataFrame()
    columns = SCHEMA.names if teams else [n for n in SCHEMA.names if n not in (*SCORE_COLUMNS, "team_labels", "team_honest")]
    frames = [pq.read_table(f, columns=columns).to_pandas() for f in files]
    return pd.concat(frames, ignore_index=True).sort_values(["cell", "replication"], ignore_index=True)


GROUP_KEYS = ["task", "task_params", "mechanism", "mechanism_params", "rules", "mix"]
SUMMARY_MEASURES = ("spearman", "kendall", "top10_overlap", "best_team_wins", "best_team_private_rank",
                    "winner_delta", "leaderboard_error", "honest_utility", "sota_estimate", "sota_true")


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """One row per competition cell: counts by status, and the median, 2.5% and 97.5%
    quantiles of every measure (``best_team_wins_median`` is replaced by its mean, the
    share of replications the truly best team won)."""
    columns = GROUP_KEYS + ["n_ok", "n_failed", "n_skipped", "wall_time_median"] + [
        f"{m}_{s}" for m in SUMMARY_MEASURES for s in ("median", "lo", "hi")]
    if results.empty:
        return pd.DataFrame(columns=columns)
    counts = results.groupby("cell", sort=False).status.value_counts().unstack(fill_value=0)
    for status in ("ok", "failed", "skipped"):
        if status not in counts:
            counts[status] = 0
    table = results.drop_duplicates("cell").set_index("cell")[GROUP_KEYS]
    table = table.join(counts[["ok", "failed", "skipped"]].rename(columns=lambda s: f"n_{s}"))
    ok = results[results.status == "ok"].groupby("cell")
    table = table.join(ok.wall_time.median().rename("wall_time_median"))
    for name in SUMMARY_MEASURES:
        quantiles = ok[name].quantile([0.5, 0.025, 0.975]).unstack()
        quantiles.columns = [f"{name}_median", f"{name}_lo", f"{name}_hi"]
        if name == "best_team_wins":
            quantiles[f"{name}_median"] = ok[name].mean()
        table = table.join(quantiles, how="left")
    return table.reset_index()[["cell", *columns]]


def group_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell and team group: the means over replications of the group measures."""
    rows = []
    for _, row in results[results.status == "ok"].iterrows():
        for label, values in json.loads(row.groups).items():
            rows.append({"cell": row.cell, "mechanism": plugin_label(row.mechanism, row.mechanism_params),
                         "task": plugin_label(row.task, row.task_params), "rules": row.rules, "mix": row.mix,
                         "group": label, **values})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    keys = ["cell", "task", "mechanism", "rules", "mix", "group"]
    return frame.groupby(keys, sort=False).mean(numeric_only=True).reset_index()


def text_summary(table: pd.DataFrame) -> str:
    """The competition summary for a terminal: median [95%] of the main measures."""
    if table.empty:
        return "no finished competition replications yet"
    shown = pd.DataFrame({
        "task": [plugin_label(t, p) for t, p in zip(table.task, table.task_params)],
        "mechanism": [plugin_label(m, p) for m, p in zip(table.mechanism, table.mechanism_params)],
        "rules": [_rules_label(r) for r in table.rules],
        "mix": table.mix,
        "ok/failed/skipped": [f"{o}/{f}/{s}" for o, f, s in zip(table.n_ok, table.n_failed, table.n_skipped)],
    })
    for name in ("spearman", "top10_overlap", "winner_delta", "honest_utility", "leaderboard_error"):
        shown[name] = [_interval(m, lo, hi) for m, lo, hi in zip(table[f"{name}_median"], table[f"{name}_lo"], table[f"{name}_hi"])]
    shown["best wins"] = table.best_team_wins_median.map(lambda v: "–" if pd.isna(v) else f"{v:.2f}")
    with pd.option_context("display.width", 400, "display.max_colwidth", 50, "display.max_rows", 1000):
        return shown.to_string(index=False)


def _rules_label(rules: str) -> str:
    values = json.loads(rules)
    return ", ".join(f"{k}={v}" for k, v in values.items() if v is not None)


def _interval(median: float, lo: float, hi: float) -> str:
    if pd.isna(median):
        return "–"
    return f"{median:.3f} [{lo:.3f}, {hi:.3f}]"
