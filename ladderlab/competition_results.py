"""Running competition cells and reading their results: one Parquet row per replication.

Each replication's row holds the measures of :mod:`ladderlab.competition_measures`,
every team's public, private and population score (for the shake-up plots) and the
per-group measures as JSON. The cells themselves come from the scenario's
``[[competition]]`` tables (:mod:`ladderlab.competition_scenario`).
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ladderlab import rundir
from ladderlab.competition import Rules, compete
from ladderlab.competition_measures import MEASURE_NAMES, measures
from ladderlab.competition_scenario import CompetitionCell
from ladderlab.duel import Incompatible
from ladderlab.isolation import Isolation
from ladderlab.naming import plugin_label
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.replications import median_interval, status_counts
from ladderlab.seeding import stream

log = logging.getLogger("ladderlab.run")

SCORE_COLUMNS = ("team_public", "team_private", "team_population")
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


def cell_table(cell: CompetitionCell, seed: int, replications: int, isolation: Isolation = "none",
               secret_seed: int | None = None, teams: list[dict[str, Any]] | None = None) -> pa.Table:
    """Every replication of a competition cell as a Parquet table (arguments as in :func:`run_replication`)."""
    rows = [run_replication(cell, seed, replication, isolation, secret_seed, teams) for replication in range(replications)]
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
    table = status_counts(results, GROUP_KEYS)
    finished = results[results.status == "ok"]
    table = table.join(finished.groupby("cell").wall_time.median().rename("wall_time_median"))
    for name in SUMMARY_MEASURES:
        quantiles = median_interval(finished, name, name)
        if name == "best_team_wins":
            quantiles[f"{name}_median"] = finished.groupby("cell")[name].mean()
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
