"""``ladderlab dev bench-competitions``: one replication of every competition cell of some scenarios, timed.

Each cell plays one replication in a fresh process (so that its peak memory is its own), with
the runner's settings (one BLAS thread, freed memory kept, :func:`ladderlab.runs.runner.cell_worker`),
and reports its CPU and wall seconds, its submissions, its peak resident memory and, as the
floor, the bare cost of scoring the same number of submissions: every submission's public and
private score by one plain numpy expression per block of rows (the 0/1 loss as a mean of
mismatches, log loss as the mean of its formula), timed in the same process right after the
competition, so that the ratio compares timings made under the same load. ``--out`` writes the
table as a Markdown page (docs/competition-speed.md is this command's output).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ladderlab.runs.rundir import machine

DEFAULT_SCENARIOS = ("kaggle-like", "kaggle-scale")
FLOOR_ELEMENTS = 1 << 21
"""Prediction values in the block the floor is timed on (16 MiB), scaled to the cell's submissions."""


def time_cell(scenario: str, key: str, replication: int) -> dict[str, Any]:
    """One replication of the competition cell ``key`` of ``scenario``, timed (in this process)."""
    from ladderlab.competition.engine import Rules, compete
    from ladderlab.competition.measures import measures
    from ladderlab.competition.scenario import CompetitionCell
    from ladderlab.registry import MECHANISMS, TASKS
    from ladderlab.runs.runner import cell_worker
    from ladderlab.runs.scenario import cells, load
    from ladderlab.seeding import stream

    loaded = load(scenario)
    cell = next(cell for cell in cells(loaded) if isinstance(cell, CompetitionCell) and cell.key == key)
    with cell_worker():
        cpu, wall = time.process_time(), time.perf_counter()
        task = TASKS.make(cell.task[0], **cell.task[1])
        result = compete(task, MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1]), cell.team_specs(),
                         Rules(**cell.rules), loaded.seed, replication)
        measures(result, stream(loaded.seed, "competition-measures", cell.key, replication), 300)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        submissions = int(result.submissions.sum()) + len(result.labels)  # the final selections too
        floor = floor_seconds(task, loaded.seed, replication, submissions)
    return {"scenario": loaded.name, "cell": cell_label(cell), "teams": len(result.labels), "submissions": submissions,
            "holdout": int(result.n_public + result.n_private), "cpu_seconds": cpu, "wall_seconds": wall,
            "floor_seconds": floor, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "process": os.getpid()}


def cell_label(cell: Any) -> str:
    """``task × mechanism, mix M``: how the table names a cell, and what ``--cells`` matches."""
    from ladderlab.naming import plugin_label

    return f"{plugin_label(*cell.task)} × {plugin_label(*cell.mechanism)}, mix {cell.mix}"


def floor_seconds(task: Any, seed: int, replication: int, submissions: int) -> float:
    """CPU seconds plain numpy needs to score ``submissions`` random valid predictions on the
    task's public and private rows (best of five timings of a 16 MiB block, scaled)."""
    from ladderlab.runs.duel import spec
    from ladderlab.seeding import stream

    split = task.split(stream(seed, "task", spec(task), replication))
    rng = np.random.default_rng(0)
    n = split.y_holdout.size
    rows = max(1, FLOOR_ELEMENTS // n)
    log_loss = split.public.scorer == "log-loss"
    P = rng.uniform(0.01, 0.99, (rows, n)) if log_loss else rng.integers(0, 2, (rows, n)).astype(float)
    parts = [(split.public_rows, split.y_public), (split.final_rows, split.y_final)]

    def bare() -> None:
        for positions, labels in parts:
            predictions = P[:, positions]
            if log_loss:
                (-(labels * np.log(predictions) + (1 - labels) * np.log1p(-predictions))).mean(axis=1)
            else:
                (predictions != labels).mean(axis=1)

    best = np.inf
    for _ in range(5):
        start = time.process_time()
        bare()
        best = min(best, time.process_time() - start)
    return best * submissions / rows


def run(scenarios: Sequence[str], replication: int = 0, jobs: int = 1, only: str | None = None) -> list[dict[str, Any]]:
    """Time one replication of every competition cell of ``scenarios`` (whose label contains ``only``)."""
    from ladderlab.competition.scenario import CompetitionCell
    from ladderlab.runs.scenario import cells, load

    todo = []
    for scenario in scenarios:
        for cell in cells(load(scenario)):
            if isinstance(cell, CompetitionCell) and (only is None or only in cell_label(cell)):
                todo.append((scenario, cell.key))
    if not todo:
        raise ValueError(f"no competition cell in {', '.join(scenarios)}" + (f" whose label contains {only!r}" if only else ""))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"), max_tasks_per_child=1) as pool:
        futures = [pool.submit(time_cell, scenario, key, replication) for scenario, key in todo]
        return [future.result() for future in futures]


def table(rows: list[dict[str, Any]]) -> str:
    """The timings as a Markdown table."""
    lines = ["| scenario | cell | teams | submissions | CPU s | wall s | µs per submission | floor s | CPU ÷ floor | peak MB |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        lines.append(
            f"| {row['scenario']} | {row['cell']} | {row['teams']} | {row['submissions']:,} | {row['cpu_seconds']:.1f} | "
            f"{row['wall_seconds']:.1f} | {1e6 * row['cpu_seconds'] / row['submissions']:.0f} | {row['floor_seconds']:.1f} | "
            f"{row['cpu_seconds'] / row['floor_seconds']:.1f} | {row['peak_mb']:.0f} |")
    return "\n".join(lines)


def page(rows: list[dict[str, Any]], command: str, load_before: tuple[float, ...], load_after: tuple[float, ...]) -> str:
    """The Markdown page ``--out`` writes."""
    return f"""# Competition speed

Written by `{command}` on {time.strftime('%Y-%m-%d')}: one replication of every competition cell,
each in a fresh process with one BLAS thread, on {os.cpu_count()} cores of a {platform.machine()} machine
({machine()['processor']}) shared with other jobs (load average {load_before[0]:.1f} when the command started,
{load_after[0]:.1f} when it ended). CPU seconds are the process's own (user + system); wall seconds
grow with the other jobs' load. The *floor* is the bare cost of scoring the same number of
submissions (each one's public and private score by one numpy expression per block of rows,
timed in the same process right after the competition); *CPU ÷ floor* compares two timings
made under the same load. The peak is the process's peak resident memory, imports included.

{table(rows)}

How the engine gets there, and why none of it changes a transcript:
[competitions](competitions.md#speed).
"""


def add_subcommand(commands: Any) -> None:
    """``ladderlab dev bench-competitions``."""
    bench = commands.add_parser(
        "bench-competitions", help="time one replication of every competition cell against the bare cost of scoring",
        description="One replication of every [[competition]] cell of the scenarios, each in a fresh process: CPU and "
                    "wall seconds, submissions, peak memory, and the bare cost of scoring the same submissions.")
    bench.add_argument("scenarios", nargs="*", default=list(DEFAULT_SCENARIOS),
                       help=f"built-in scenario names or files (default: {' '.join(DEFAULT_SCENARIOS)})")
    bench.add_argument("--replication", type=int, default=0, help="which replication to play (default 0)")
    bench.add_argument("--jobs", type=int, default=1, help="cells timed at once, each in its own process (default 1)")
    bench.add_argument("--cells", help="only the cells whose label contains this text")
    bench.add_argument("--out", help="write the table as a Markdown page (docs/competition-speed.md)")
    bench.add_argument("--json", help="write the timings as JSON")
    bench.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    for path in (args.out, args.json):
        if path and not Path(path).parent.exists():
            raise ValueError(f"{path}: the folder {Path(path).parent} does not exist")
    load_before = os.getloadavg()
    rows = run(args.scenarios, args.replication, args.jobs, args.cells)
    print(table(rows))
    from ladderlab.runs.rundir import write_atomically

    command = "ladderlab dev bench-competitions " + " ".join(
        [*args.scenarios] + ([f"--cells '{args.cells}'"] if args.cells else []) + ([f"--jobs {args.jobs}"] if args.jobs > 1 else []))
    if args.out:
        write_atomically(Path(args.out), page(rows, command, load_before, os.getloadavg()).encode())
    if args.json:
        write_atomically(Path(args.json), json.dumps(rows, indent=2).encode())
    return 0
