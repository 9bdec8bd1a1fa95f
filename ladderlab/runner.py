"""The scenario runner: every cell of a scenario, replication by replication, into a run directory.

Layout of a run directory (asv-style results as files):

- ``manifest.json``: the resolved scenario, its hash, every cell it expands to, the
  package version and the version of every plugin it uses (so that a report needs
  nothing but the directory). A run directory belongs to one scenario: running
  a different one into it is refused.
- ``cells/<key>.parquet``: one file per completed cell, one row per replication,
  written to a temporary file and renamed, so a killed run loses at most the cells
  in flight. A re-run skips the cells whose file exists.

Each job is one cell, or the cells that share one transcript per replication (they
differ only in their attack's ``final_only_params``, :mod:`ladderlab.sharing`), run
replication by replication (joblib: ``loky`` locally, ``dask`` for a cluster). Jobs
get plain specs and seeds, build their plugins themselves and write their own files.
With several local workers, replication 0 of every job is played first (in parallel);
its CPU time estimates the job's cost, and the jobs start longest first, so no
worker is left with a long job at the end. Each worker's BLAS uses
cpu_count / jobs threads. None of this changes a result: every replication depends
only on (cell, seed, replication).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import tempfile
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from threadpoolctl import threadpool_limits
from tqdm import tqdm

import ladderlab
from ladderlab.duel import Incompatible, duel
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.competition_scenario import CompetitionCell
from ladderlab.competition_results import cell_table as competition_cell_table
from ladderlab.scenario import Cell, Scenario, cells, load, preflight
from ladderlab.sharing import shared_identity

SUBMISSION_COLUMNS = ("released", "public", "final")


class RunDirectoryError(ValueError):
    """The run directory holds another scenario's results."""


def _versions(scenario: Scenario) -> dict[str, str]:
    versions = {"ladderlab": ladderlab.__version__}
    for cell in cells(scenario):
        if isinstance(cell, CompetitionCell):
            versions.update({f"{registry.kind}:{plugin_id}": registry.get(plugin_id).version
                             for registry, plugin_id in cell.plugin_ids()})
            continue
        for registry, (plugin_id, _) in ((TASKS, cell.task), (MECHANISMS, cell.mechanism), (ATTACKS, cell.attack)):
            versions[f"{registry.kind}:{plugin_id}"] = registry.get(plugin_id).version
    return versions


def prepare(scenario: Scenario, out: Path) -> None:
    """Create ``out`` with its manifest, or check that it belongs to this scenario."""
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("scenario_hash") != scenario.identity():
            raise RunDirectoryError(
                f"{out} holds results of a different scenario (hash {manifest.get('scenario_hash')}, "
                f"this one {scenario.identity()}): choose another --out, or delete the directory"
            )
        return
    (out / "cells").mkdir(parents=True, exist_ok=True)
    (out / CompetitionCell.directory).mkdir(exist_ok=True)
    manifest = {
        "scenario": scenario.model_dump(mode="json"),
        "scenario_hash": scenario.identity(),
        "versions": _versions(scenario),
        "cells": cell_records(scenario),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _write_atomically(manifest_path, json.dumps(manifest, indent=2).encode())


def cell_records(scenario: Scenario) -> list[dict[str, Any]]:
    """Every cell of ``scenario`` as plain data (key, task, mechanism, attack, budget, oracle),
    as the manifest lists them."""
    return [{"key": cell.key, **dataclasses.asdict(cell)} for cell in cells(scenario)]


def _write_atomically(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as handle:
        handle.write(data)
        temporary = Path(handle.name)
    os.replace(temporary, path)


def run_replication(cell: Cell, seed: int, replication: int) -> dict[str, Any]:
    """One replication of a cell: a row of the cell's table (status ok, failed or skipped)."""
    task = TASKS.make(cell.task[0], **cell.task[1])
    mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
    attack = ATTACKS.make(cell.attack[0], **cell.attack[1])
    row: dict[str, Any] = {"replication": replication, "status": "ok", "error": None}
    start = time.perf_counter()
    try:
        result = duel(task, mechanism, attack, seed, replication, budget=cell.budget, oracle=cell.oracle)
    except Incompatible as reason:
        row.update(status="skipped", error=str(reason))
    except Exception as error:  # a failing cell is recorded, and the run goes on
        row.update(status="failed", error="".join(traceback.format_exception_only(error)).strip())
    else:
        row.update(
            submissions=result.submissions,
            leaderboard_error=result.leaderboard_error,
            final_released=result.final_released,
            final_public=result.final_public,
            final_final=result.final_final,
            delta=result.delta,
            optimism=result.optimism,
            population=result.population,
            released=result.released,
            public=result.public,
            final=result.final,
            marks=json.dumps(result.marks),
        )
    row["wall_time"] = time.perf_counter() - start
    return row


def _cell_table(cell: Cell, seed: int, rows: list[dict[str, Any]]) -> pa.Table:
    columns: dict[str, list[Any]] = {
        "cell": [cell.key] * len(rows),
        "task": [cell.task[0]] * len(rows),
        "task_params": [json.dumps(cell.task[1], sort_keys=True)] * len(rows),
        "mechanism": [cell.mechanism[0]] * len(rows),
        "mechanism_params": [json.dumps(cell.mechanism[1], sort_keys=True)] * len(rows),
        "attack": [cell.attack[0]] * len(rows),
        "attack_params": [json.dumps(cell.attack[1], sort_keys=True)] * len(rows),
        "budget": [cell.budget] * len(rows),
        "seed": [seed] * len(rows),
    }
    for name in ("replication", "status", "error", "marks", "wall_time", "submissions", "leaderboard_error",
                 "final_released", "final_public", "final_final", "delta", "optimism", "population"):
        columns[name] = [row.get(name) for row in rows]
    for name in SUBMISSION_COLUMNS:
        columns[name] = [None if row.get(name) is None else np.asarray(row[name]).tolist() for row in rows]
    schema = pa.schema(
        [(name, pa.string()) for name in ("cell", "task", "task_params", "mechanism", "mechanism_params", "attack", "attack_params")]
        + [("budget", pa.int64()), ("seed", pa.int64()), ("replication", pa.int64()), ("status", pa.string()),
           ("error", pa.string()), ("marks", pa.string()), ("wall_time", pa.float64()), ("submissions", pa.int64())]
        + [(name, pa.float64()) for name in ("leaderboard_error", "final_released", "final_public", "final_final",
                                             "delta", "optimism", "population")]
        + [(name, pa.list_(pa.float64())) for name in SUBMISSION_COLUMNS]
    )
    return pa.table(columns, schema=schema)


def run_cell(cell: Cell, seed: int, replications: int, out: str) -> str:
    """Run every replication of ``cell`` and write its Parquet file atomically; return the path."""
    return run_cells([cell], seed, replications, out)[0]


def run_cells(
    group: list[Cell],
    seed: int,
    replications: int,
    out: str,
    blas_threads: int | None = None,
    first_rows: dict[str, dict[str, Any]] | None = None,
) -> list[str]:
    """Run the cells of a transcript group replication by replication (each replication's
    cells together, so they share its transcript); write each cell's file; return the paths.
    ``first_rows`` holds replication 0's rows where they were already played."""
    if isinstance(group[0], CompetitionCell):
        (cell,) = group
        with threadpool_limits(blas_threads) if blas_threads else nullcontext():
            return [_write_cell(cell, competition_cell_table(cell, seed, replications), out)]
    rows: dict[str, list[dict[str, Any]]] = {cell.key: [] for cell in group}
    with threadpool_limits(blas_threads) if blas_threads else nullcontext():
        for replication in range(replications):
            for cell in group:
                if replication == 0 and first_rows and cell.key in first_rows:
                    rows[cell.key].append(first_rows[cell.key])
                else:
                    rows[cell.key].append(run_replication(cell, seed, replication))
    return [_write_cell(cell, _cell_table(cell, seed, rows[cell.key]), out) for cell in group]


def _write_cell(cell: Cell | CompetitionCell, table: pa.Table, out: str) -> str:
    path = Path(out) / cell.directory / f"{cell.key}.parquet"
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    _write_atomically(path, sink.getvalue().to_pybytes())
    return str(path)


def transcript_groups(todo: list[Cell]) -> list[list[Cell]]:
    """The cells grouped by shared transcript (equal but for the attack's ``final_only_params``), in order."""
    groups: dict[str, list[Cell]] = {}
    for cell in todo:
        if isinstance(cell, CompetitionCell):
            groups[cell.key] = [cell]
            continue
        final_only = ATTACKS.get(cell.attack[0]).final_only_params
        identity = shared_identity(*cell.attack, final_only)
        key = json.dumps([cell.task, cell.mechanism, identity, cell.budget, cell.oracle], sort_keys=True, default=str)
        groups.setdefault(key, []).append(cell)
    return list(groups.values())


def first_replication(group: list[Cell], seed: int, blas_threads: int | None) -> tuple[float, dict[str, dict[str, Any]]]:
    """Replication 0 of every cell of a group: its CPU seconds, and the rows, by cell key."""
    with threadpool_limits(blas_threads) if blas_threads else nullcontext():
        start = time.process_time()
        rows = {cell.key: run_replication(cell, seed, 0) for cell in group}
        return time.process_time() - start, rows


def longest_first(
    groups: list[list[Cell]], seed: int, jobs: int, blas_threads: int | None
) -> tuple[list[list[Cell]], dict[str, dict[str, Any]]]:
    """The groups ordered by estimated cost, longest first, and the rows of replication 0
    that estimate it (played in parallel first, and kept)."""
    pilots = joblib.Parallel(n_jobs=jobs)(joblib.delayed(first_replication)(group, seed, blas_threads) for group in groups)
    first_rows = {key: row for _, rows in pilots for key, row in rows.items()}
    order = sorted(range(len(groups)), key=lambda i: -pilots[i][0])
    return [groups[i] for i in order], first_rows


def pending_cells(scenario: Scenario, out: Path) -> list[Cell]:
    """The scenario's cells that have no result file yet."""
    return [cell for cell in cells(scenario) if not (out / cell.directory / f"{cell.key}.parquet").exists()]


def run(
    scenario: Scenario | str | Path,
    out: str | Path | None = None,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    replications: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Run (or resume) a scenario into ``out``; return one row per cell × replication.

    ``backend="dask"`` runs the cells on the Dask cluster at ``scheduler`` through
    joblib's dask backend. Results do not depend on the backend or on ``jobs``.
    """
    if not isinstance(scenario, Scenario):
        scenario = load(scenario, replications)
    elif replications is not None:
        scenario = scenario.model_copy(update={"replications": replications})
    check_backend(backend, scheduler, jobs)
    preflight(scenario)
    out = Path(out) if out is not None else Path("runs") / scenario.name
    prepare(scenario, out)
    groups = transcript_groups(pending_cells(scenario, out))
    show = sys.stderr.isatty() if progress is None else progress
    first_rows: dict[str, dict[str, Any]] = {}
    blas_threads = None
    if backend == "loky" and jobs != 1:
        blas_threads = max(1, (os.cpu_count() or 1) // joblib.effective_n_jobs(jobs))
        duel_groups = [group for group in groups if not isinstance(group[0], CompetitionCell)]
        if len(duel_groups) > 1:
            duel_groups, first_rows = longest_first(duel_groups, scenario.seed, jobs, blas_threads)
        groups = [group for group in groups if isinstance(group[0], CompetitionCell)] + duel_groups
    tasks = (
        joblib.delayed(run_cells)(
            group, scenario.seed, scenario.replications, str(out), blas_threads,
            {cell.key: first_rows[cell.key] for cell in group if cell.key in first_rows},
        )
        for group in groups
    )
    if backend == "dask":
        from dask.distributed import Client

        with Client(scheduler, timeout=SCHEDULER_TIMEOUT) if scheduler else Client(processes=False):
            with joblib.parallel_backend("dask"):
                _drain(joblib.Parallel(return_as="generator")(tasks), len(groups), show)
    else:
        _drain(joblib.Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks), len(groups), show)
    return load_results(out)


SCHEDULER_TIMEOUT = 10
"""Seconds to wait for a Dask scheduler that accepted the connection to answer."""


class BackendError(ValueError):
    """A backend, scheduler or worker count that cannot run the scenario."""


def check_backend(backend: str, scheduler: str | None, jobs: int) -> None:
    """Refuse a bad backend setup before any work: an unknown backend, a scheduler without
    the dask backend, a worker count below 1 (or -1, every core), an unreachable scheduler."""
    if backend not in ("loky", "dask"):
        raise BackendError(f"backend must be 'loky' or 'dask', got {backend!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not (jobs >= 1 or jobs == -1):
        raise BackendError(f"jobs must be a whole number ≥ 1 (or -1 for every core), got {jobs!r}")
    if scheduler is None:
        return
    if backend != "dask":
        raise BackendError(f"a scheduler ({scheduler!r}) needs the dask backend, not {backend!r}")
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        protocol, location = parse_address(scheduler)
        if protocol in ("tcp", "tls"):
            with socket.create_connection(parse_host_port(location), timeout=SCHEDULER_TIMEOUT):
                pass
    except (OSError, ValueError, TypeError) as error:
        raise BackendError(f"cannot reach the Dask scheduler at {scheduler!r}: {error}") from None


def _drain(results, total: int, show: bool) -> None:
    for _ in tqdm(results, total=total, desc="cells", unit="cell", disable=not show):
        pass


def load_results(out: str | Path, submissions: bool = False) -> pd.DataFrame:
    """Every completed cell's rows; ``submissions=True`` keeps the per-submission score lists."""
    files = sorted((Path(out) / "cells").glob("*.parquet"))
    if not files:
        return pd.DataFrame()
    names = pq.read_schema(files[0]).names
    columns = names if submissions else [name for name in names if name not in SUBMISSION_COLUMNS]
    frames = [pq.read_table(f, columns=columns).to_pandas() for f in files]
    return pd.concat(frames, ignore_index=True).sort_values(["cell", "replication"], ignore_index=True)

