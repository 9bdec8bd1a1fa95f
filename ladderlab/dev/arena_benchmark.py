"""``ladderlab dev bench-arena``: how long rating a large battles file takes, and what the sufficient statistics buy.

The issue's scale: two million battles over 250 models rated, with FastChat's 100 bootstrap rounds, in at
most 30 s on two cores. The benchmark draws such a file from the pairwise family (uniform pairs; a CSV in a
temporary folder), then times each step of ``ladderlab arena rate`` in this process: reading the file, the
cells and per-pair counts, FastChat's fit, the maximum-likelihood fit (for the optimizer's gap), the 100
multinomial resamples (FastChat's own draws, one stream), and their fits on ``--jobs`` workers; and, as the
plain loop in the same process, FastChat's likelihood over one row per distinct battle cell (as FastChat
fits it) and over one row per battle, each through the same L-BFGS-B, to show what aggregating buys.
``--write PAGE`` writes the table with its stamp.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ladderlab.plugin import fingerprint
from ladderlab.runs import page_stamps
from ladderlab.runs.arguments import count, output_file
from ladderlab.utils.cpu_time import tree_seconds
from ladderlab.utils.terminal import wrapped_markdown

TARGET_SECONDS = 30.0


class _Clock:
    """Wall and CPU seconds (this process and its workers) of each step."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []

    def time(self, step: str, work: Any) -> Any:
        wall, cpu = time.perf_counter(), tree_seconds()
        result = work()
        self.rows.append((step, time.perf_counter() - wall, tree_seconds() - cpu))
        return result


def _rows_fit(a: np.ndarray, b: np.ndarray, y: np.ndarray, w: np.ndarray, models: int) -> None:
    """FastChat's loss over rows (one per cell, or per battle with weight 1) through L-BFGS-B: the plain loop."""
    from scipy import optimize
    from scipy.special import expit

    from ladderlab.arena.bradley_terry import ALPHA

    def loss(r: np.ndarray) -> tuple[float, np.ndarray]:
        p = expit(ALPHA * (r[a] - r[b]))
        value = -(w * (y * np.log(p) + (1 - y) * np.log(1 - p))).sum()
        per_row = -ALPHA * (y - p) * w
        return float(value), np.bincount(a, per_row, models) - np.bincount(b, per_row, models)

    optimize.minimize(loss, np.zeros(models), jac=True, method="L-BFGS-B", options={"maxiter": 100, "gtol": 1e-6})


def measure(battles: int, models: int, jobs: int, seed: int = 0) -> dict[str, Any]:
    """Time every step of rating ``battles`` battles over ``models`` models (see the module docstring)."""
    from threadpoolctl import threadpool_limits

    from ladderlab.arena.battles import read_battles, to_frame
    from ladderlab.arena.bradley_terry import fit_exact, fit_fastchat
    from ladderlab.arena.family import PairwiseArena
    from ladderlab.arena.rating import REPLICATES, bootstrap_fits

    family = PairwiseArena(models=models, battles=battles)
    rng = np.random.default_rng(seed)
    drawn, _ = family.battles_of(rng, family.pool(rng))
    clock = _Clock()
    with tempfile.TemporaryDirectory() as folder, threadpool_limits(limits=1, user_api="blas"):
        path = Path(folder) / "battles.csv"
        to_frame(drawn).to_csv(path, index=False)
        size = path.stat().st_size
        read = clock.time("read the CSV (pyarrow), check it, number the models", lambda: read_battles(path))
        cells = clock.time("cells and per-pair counts", read.cells)
        clock.time("FastChat's fit (L-BFGS-B on pairs)", lambda: fit_fastchat(cells.pairs))
        clock.time("the maximum-likelihood fit (Newton), for the optimizer's gap", lambda: fit_exact(cells.pairs))
        draws = clock.time(f"{REPLICATES} multinomial resamples (FastChat's stream)", lambda: np.random.default_rng(0).multinomial(
            len(read), cells.count / cells.count.sum(), size=REPLICATES))
        resampled = clock.time("their per-pair counts", lambda: cells.pair_counts(draws))
        clock.time(f"{REPLICATES} bootstrap fits on {jobs} worker{'s' if jobs > 1 else ''}",
                   lambda: bootstrap_fits(resampled, len(read), "fastchat", jobs))
        total = sum(row[1] for row in clock.rows)
        plain = _Clock()
        plain.time("one fit, a row per distinct cell (FastChat's rows)", lambda: _rows_fit(
            cells.a, cells.b, cells.outcome / 2.0, cells.count, models))
        plain.time("one fit, a row per battle", lambda: _rows_fit(read.a, read.b, read.outcome / 2.0, np.ones(len(read)),
                                                                 models))
    pairs = cells.pairs
    return {"battles": battles, "models": models, "jobs": jobs, "file_megabytes": size / 1e6, "cells": int(cells.count.size),
            "pairs": int(pairs.i.size), "rows": clock.rows, "total_wall": total, "plain": plain.rows,
            "pair_fit": next(row for row in clock.rows if row[0].startswith("FastChat's fit"))}


def page(result: dict[str, Any], command: str, load: tuple[float, float]) -> str:
    """The benchmark's page: each step's wall and CPU seconds, the total against the target, the plain loop."""
    from ladderlab.arena.family import PairwiseArena

    lines = [f"Written by `{command}`: {result['battles']:,} battles over {result['models']} models "
             f"({result['file_megabytes']:.0f} MB of CSV; {result['cells']:,} cells, {result['pairs']:,} pairs), "
             f"{os.cpu_count()} cores of a {platform.machine()} machine (Linux {platform.release()}, Python "
             f"{platform.python_version()}), one-minute load average {load[0]:.1f} before and {load[1]:.1f} after, on a "
             "machine shared with other work.", "",
             "| step | wall s | CPU s |", "| --- | ---: | ---: |"]
    lines += [f"| {step} | {wall:.2f} | {cpu:.2f} |" for step, wall, cpu in result["rows"]]
    verdict = "within" if result["total_wall"] <= TARGET_SECONDS else "over"
    lines += [f"| **rated, with 95% intervals and Arena ranks** | **{result['total_wall']:.1f}** | |", "",
              f"The whole rating is {verdict} the {TARGET_SECONDS:.0f} s target.", "",
              "The plain loop, in the same process: FastChat's loss and gradient over rows, through the same L-BFGS-B.", "",
              "| one fit | wall s | CPU s | against the fit on pairs |", "| --- | ---: | ---: | ---: |"]
    pair_wall = result["pair_fit"][1]
    lines += [f"| {step} | {wall:.2f} | {cpu:.2f} | {wall / pair_wall:.1f}× |" for step, wall, cpu in result["plain"]]
    prints = {"arena family:pairwise": fingerprint(PairwiseArena)}
    code = page_stamps.code_record(prints, "arena") | {
        f"core:{module}": page_stamps.core_token(module) or "missing"
        for module in ("ladderlab.arena.battles", "ladderlab.arena.rating", "ladderlab.dev.arena_benchmark")}
    lines += ["", page_stamps.stamp(command, code)]
    return "\n".join(lines) + "\n"


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev bench-arena``: parser and handler."""
    parser = commands.add_parser("bench-arena", help="how long 'ladderlab arena rate' takes on two million battles over "
                                 "250 models, step by step, against a plain loop")
    parser.add_argument("--battles", type=count(2), default=2_000_000, help="battles (default 2,000,000)")
    parser.add_argument("--models", type=count(2), default=250, help="models (default 250)")
    parser.add_argument("--jobs", type=count(1), default=2, help="workers of the bootstrap fits (default 2)")
    parser.add_argument("--write", metavar="PAGE", help="write the table, stamped, to PAGE")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.utils.atomic import write_atomically

    output_file("--write", args.write)
    load_before = os.getloadavg()[0]
    result = measure(args.battles, args.models, args.jobs)
    text = page(result, args.command_line, (load_before, os.getloadavg()[0]))
    if args.write:
        write_atomically(args.write, text.encode())
        print(f"wrote {args.write}", file=sys.stderr)
    print(wrapped_markdown(text), end="")
    return 0
