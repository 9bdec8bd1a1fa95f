"""Running competition cells and reading their results: one Parquet row per replication.

Each replication's row holds the measures of :mod:`ladderlab.competition.measures`,
every team's public, private and population score (for the shake-up plots) and the
per-group measures as JSON. The cells themselves come from the scenario's
``[[competition]]`` tables (:mod:`ladderlab.competition.scenario`).
"""

from __future__ import annotations

import json
import logging
import math
import time
import traceback
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import stats

from ladderlab.competition.engine import Rules, compete
from ladderlab.competition.measures import MEASURE_NAMES, gap_z_scores, measures
from ladderlab.competition.scenario import CompetitionCell
from ladderlab.isolation.protocol import Isolation
from ladderlab.naming import plugin_label
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs import rundir
from ladderlab.runs.duel import Incompatible
from ladderlab.seeding import stream
from ladderlab.stats.replications import (
    COMPETITION_MEASURES,
    median_interval,
    status_counts,
    summary_columns,
)
from ladderlab.utils.locations import location_free

log = logging.getLogger("ladderlab.run")

SCORE_COLUMNS = ("team_public", "team_private", "team_population")
ACTIVITY_COLUMNS = ("team_submissions", "team_improvements", "team_first_round")
"""Per team: its submissions, how often its public value improved, the round it could first submit."""
SOTA_REPETITIONS = 300


def run_replication(cell: CompetitionCell, seed: int, replication: int, isolation: Isolation = "none",
                    secret_seed: int | None = None, teams: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One replication of a competition cell: a row (status ok, failed or skipped). ``teams``
    adds to each team of the cell its policy's ``identity`` and ``honest`` flag, so that
    isolated teams' code is never loaded here."""
    row: dict[str, Any] = {"replication": replication, "status": "ok", "error": None}
    start = time.perf_counter()
    try:
        task = TASKS.make(cell.task[0], **cell.task[1])
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        result = compete(task, mechanism, cell.team_specs(teams), Rules(**cell.rules), seed, replication,
                         isolation=isolation, secret_seed=secret_seed)
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
        scored = gap_z_scores(result)
        row.update(team_submissions=result.submissions.tolist(), team_improvements=result.improvements.tolist(),
                   team_first_round=result.first_round.tolist(),
                   team_gap_z=[math.nan] * len(result.labels) if scored is None else scored[1].tolist())
    row["wall_time"] = time.perf_counter() - start
    return row


SCHEMA = pa.schema(
    [(name, pa.string()) for name in ("cell", "task", "task_params", "mechanism", "mechanism_params", "rules", "mix", "teams")]
    + [("seed", pa.int64()), ("replication", pa.int64()), ("status", pa.string()), ("error", pa.string()),
       ("wall_time", pa.float64()), ("best_population", pa.float64()), ("sign", pa.float64())]
    + [(name, pa.float64()) for name in MEASURE_NAMES]
    + [("groups", pa.string()), ("team_labels", pa.list_(pa.string())), ("team_honest", pa.list_(pa.bool_()))]
    + [(name, pa.list_(pa.float64())) for name in SCORE_COLUMNS]
    + [(name, pa.list_(pa.int64())) for name in ACTIVITY_COLUMNS] + [("team_gap_z", pa.list_(pa.float64()))]
)


def rows_table(cell: CompetitionCell, seed: int, rows: list[dict[str, Any]]) -> pa.Table:
    """A competition cell's table from its rows (every replication, in order; the runner may
    have played ranges of them in different workers)."""
    task, mechanism, teams = location_free((cell.task, cell.mechanism, cell.teams))
    fixed = {
        "cell": cell.key, "task": task[0], "task_params": json.dumps(task[1], sort_keys=True),
        "mechanism": mechanism[0], "mechanism_params": json.dumps(mechanism[1], sort_keys=True),
        "rules": json.dumps(cell.rules, sort_keys=True), "mix": cell.mix, "teams": json.dumps(teams, sort_keys=True),
        "seed": seed,
    }
    columns = {name: [value] * len(rows) for name, value in fixed.items()}
    for name in SCHEMA.names:
        if name not in columns:
            columns[name] = [row.get(name) for row in rows]
    return pa.table(columns, schema=SCHEMA)


def load_competition_results(out: str | Path, teams: bool = False) -> pd.DataFrame:
    """Every completed competition cell's rows; ``teams=True`` keeps the per-team lists. A file
    that does not match its checksum in the manifest is left out, with a warning naming it."""
    out = Path(out)
    files, damaged = rundir.verified_files(out, CompetitionCell.directory)
    for path, reason in damaged.items():
        log.warning("ladderlab: left out %s: %s", path.relative_to(out), reason)
    return read_competition_files(files, teams)


def read_competition_files(files: list[Path], teams: bool = False) -> pd.DataFrame:
    """The rows of the given competition cell files, sorted by cell and replication."""
    if not files:
        return pd.DataFrame()
    per_team = (*SCORE_COLUMNS, *ACTIVITY_COLUMNS, "team_gap_z", "team_labels", "team_honest")
    columns = SCHEMA.names if teams else [n for n in SCHEMA.names if n not in per_team]
    frames = [pq.read_table(f, columns=columns).to_pandas() for f in files]
    return pd.concat(frames, ignore_index=True).sort_values(["cell", "replication"], ignore_index=True)


GROUP_KEYS = ["task", "task_params", "mechanism", "mechanism_params", "rules", "mix"]
SUMMARY_MEASURES = COMPETITION_MEASURES


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """One row per competition cell (in the order of ``results``): counts by status, and the
    median, 2.5% and 97.5% quantiles of every measure; for ``best_team_wins``, the share of
    replications the truly best team won and its exact 95% (Clopper–Pearson) interval."""
    columns = ["cell", *GROUP_KEYS, "n_ok", "n_failed", "n_skipped", "wall_time_median",
               *summary_columns(SUMMARY_MEASURES)]
    if results.empty:
        return pd.DataFrame(columns=columns)
    table = status_counts(results, GROUP_KEYS)
    finished = results[results.status == "ok"]
    table = table.join(finished.groupby("cell").wall_time.median().rename("wall_time_median"))
    for name in SUMMARY_MEASURES:
        quantiles = median_interval(finished, name, name)
        if name == "best_team_wins":
            quantiles = finished.groupby("cell")[name].apply(_share_interval).apply(pd.Series)
            quantiles.columns = summary_columns([name])
        table = table.join(quantiles, how="left")
    return table.reset_index()[columns]


def _share_interval(wins: pd.Series) -> tuple[float, float, float]:
    """The share of replications won, with its Clopper–Pearson 95% interval (NaN without any)."""
    known = wins.dropna()
    if known.empty:
        return float("nan"), float("nan"), float("nan")
    won = int(known.sum())
    interval = stats.binomtest(won, known.size).proportion_ci(confidence_level=0.95, method="exact")
    return won / known.size, float(interval.low), float(interval.high)


def group_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell (in the order of ``results``) and team group (in the mix's order): the means
    over replications of the group measures."""
    rows = []
    for row in results[results.status == "ok"].itertuples(index=False):
        for label, values in json.loads(row.groups).items():
            rows.append({"cell": row.cell, **{key: getattr(row, key) for key in GROUP_KEYS}, "group": label, **values})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    return frame.groupby(["cell", *GROUP_KEYS, "group"], sort=False).mean(numeric_only=True).reset_index()


def incomplete(expected: list[dict[str, Any]], results: pd.DataFrame) -> bool:
    """Some competition cell has no results yet, or a replication failed."""
    finished = set(results.cell) if not results.empty else set()
    failed = not results.empty and (results.status == "failed").any()
    return failed or any(cell["key"] not in finished for cell in expected)


def rules_label(rules: str | dict[str, Any]) -> str:
    """A competition's rules as ``rounds=60, per_round=5, …`` (the rules left unset omitted)."""
    values = json.loads(rules) if isinstance(rules, str) else rules
    return ", ".join(f"{k}={v}" for k, v in values.items() if v is not None)


def status_lines(expected: list[dict[str, Any]], results: pd.DataFrame, damaged: Collection[str] = ()) -> list[str]:
    """Finished and missing competition cells (``damaged``: the keys of cells whose file is
    damaged and left out), failed and skipped replications, in words."""
    finished = set(results.cell) if not results.empty else set()
    missing = [cell for cell in expected if cell["key"] not in finished]
    lines = [f"{len(expected) - len(missing)} of {len(expected)} competition cells finished"]
    lines += [f"  - {'damaged, left out' if cell['key'] in damaged else 'no results yet'}: {_cell_label(cell)}"
              for cell in missing]
    if not results.empty:
        for status, verb in (("failed", "failed"), ("skipped", "were skipped")):
            for (_, error), group in results[results.status == status].groupby(["cell", "error"], sort=True):
                first = group.iloc[0]
                label = f"{plugin_label(first.task, first.task_params)} × {plugin_label(first.mechanism, first.mechanism_params)} × {first.mix}"
                lines.append(f"{len(group)} competition replications {verb} in {label}: {error}")
    return lines


def _cell_label(cell: dict[str, Any]) -> str:
    return f"{plugin_label(*cell['task'])} × {plugin_label(*cell['mechanism'])} × {cell['mix']}"
