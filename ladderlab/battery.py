"""Sequential replication of a certification battery: each group of cells until a stop rule is met.

``ladderlab certify`` replicates every grid point only until its verdict is decided
(:mod:`ladderlab.sequential`). Here that is a :class:`Group` (the cells that share a
transcript, :mod:`ladderlab.sharing`) with a stop rule: given the rows of its
replications 0 … r − 1, the number of replications it needs, or None for more. Groups
are replicated in chunks, replication 0 first (the pilot, whose cost gives the
estimate), then up to 8, 16, 32, … and the maximum; a chunk that would cost a worker
long is split into pieces that run in parallel. Only whole prefixes are judged, and a
stop rule ignores replications past its stopping time, so what a group uses depends on
its replications alone, never on the number of workers or on how chunks were split:
the same seed gives the same certificate.

Nothing is lost on interruption. Every piece is written atomically to
``chunks/<group>/<first>-<last + 1>.parquet`` in the battery directory as soon as it is
back (one file per piece, holding every cell of the group), and a run of the same
battery reads them and computes only what is missing: Ctrl-C, then the same command,
resumes. A group's identity is its cells' keys and its replications are functions of
(cell, seed, replication) only, so pieces computed under one maximum or confidence serve
another.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ladderlab.isolation import Isolation
from ladderlab.progress import progress_bar
from ladderlab.runner import cell_table, play_replications, write_table
from ladderlab.scenario import Cell

Rows = dict[str, list[dict[str, Any]]]
"""Rows by cell key, one per replication, in order."""
StopRule = Callable[[Rows], int | None]
CHUNK_ENDS = (1, 8)
"""The first chunks end after these replications; later ones double."""
PIECE_SECONDS = 8.0
"""A chunk whose replications would cost one worker more than this (estimated from the pilot) is split."""
CHUNK_FOLDER = "chunks"


@dataclass
class Group:
    """Cells played together, replication by replication, and the rule that says when to stop."""

    cells: list[Cell]
    stop: StopRule

    @property
    def key(self) -> str:
        return hashlib.sha256(" ".join(sorted(cell.key for cell in self.cells)).encode()).hexdigest()[:20]


@dataclass
class _State:
    group: Group
    rows: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)
    used: int | None = None
    target: int = 0
    seconds: list[float] = field(default_factory=list)
    in_flight: int = 0

    @property
    def prefix(self) -> int:
        """How many replications from 0 on are complete."""
        r = 0
        while r in self.rows:
            r += 1
        return r

    def prefix_rows(self) -> Rows:
        return {cell.key: [self.rows[r][cell.key] for r in range(self.prefix)] for cell in self.group.cells}

    @property
    def cost(self) -> float:
        """CPU seconds per replication, from the replications played so far (None until one is)."""
        return sum(self.seconds) / len(self.seconds) if self.seconds else math.nan


@dataclass(frozen=True)
class Estimate:
    """The battery's cost, estimated from one replication of every group."""

    groups: int
    seconds_per_replication: float
    fewest_seconds: float
    most_seconds: float
    workers: int

    def text(self) -> str:
        return (f"estimate: {_duration(self.fewest_seconds / self.workers)} on {self.workers} worker"
                f"{'s' if self.workers > 1 else ''} if every point is decided at its first look, "
                f"at most {_duration(self.most_seconds / self.workers)} if none is "
                f"({_duration(self.seconds_per_replication)} of CPU per replication of all {self.groups} groups)")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def next_target(done: int, maximum: int) -> int:
    """The end of the chunk after ``done`` replications: 1, 8, then doubling, at most ``maximum``."""
    for end in CHUNK_ENDS:
        if done < end:
            return min(end, maximum)
    return min(2 * done, maximum)


class Store:
    """The battery directory's pieces (see the module docstring)."""

    def __init__(self, directory: Path, seed: int):
        self.directory = Path(directory)
        self.seed = seed

    def load(self, group: Group) -> dict[int, dict[str, dict[str, Any]]]:
        """Every stored replication of ``group``: {replication: {cell key: row}}."""
        folder = self.directory / CHUNK_FOLDER / group.key
        rows: dict[int, dict[str, dict[str, Any]]] = {}
        keys = {cell.key for cell in group.cells}
        for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
            for row in pq.read_table(path).to_pylist():
                if row["cell"] in keys:
                    rows.setdefault(row["replication"], {})[row["cell"]] = row
        return {r: cells for r, cells in rows.items() if set(cells) == keys}

    def save(self, group: Group, start: int, stop: int, rows: Rows) -> None:
        folder = self.directory / CHUNK_FOLDER / group.key
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.concat_tables([cell_table(cell, self.seed, rows[cell.key]) for cell in group.cells])
        write_table(folder / f"{start:06d}-{stop:06d}.parquet", table)


def play_piece(cells: list[Cell], seed: int, start: int, stop: int, isolation: Isolation,
               secret_seed: int | None) -> tuple[Rows, float]:
    """Replications ``start`` … ``stop`` − 1 of a group, and the CPU seconds they took."""
    began = time.process_time()
    rows = play_replications(cells, seed, range(start, stop), isolation, secret_seed)
    return rows, time.process_time() - began


def replicate(
    groups: list[Group],
    seed: int,
    maximum: int,
    store: Store,
    jobs: int = 1,
    isolation: Isolation = "none",
    secret_seed: int | None = None,
    progress: bool | None = False,
    announce: Callable[[Estimate], None] | None = None,
    first_look: int = 1,
    desc: str = "replications",
) -> tuple[Rows, dict[str, int]]:
    """Replicate every group until its stop rule is met (at most ``maximum`` replications).

    Returns the rows of every cell (the complete prefix computed, stored replications
    included) and, by group key, how many replications the group uses. ``announce``
    receives the estimate once every group has one replication (not when all were stored
    already); ``first_look``, the fewest replications a stop rule can stop at, is its
    lower figure.
    """
    states = [_State(group) for group in groups]
    for state in states:
        state.rows = store.load(state.group)
        state.seconds = [sum(row.get("wall_time") or 0.0 for row in cells.values()) for cells in state.rows.values()]
        _judge(state, maximum)
    workers = max(1, jobs if jobs > 0 else multiprocessing.cpu_count())
    announced = announce is None or all(state.rows for state in states)
    bar = progress_bar(total=sum(state.target for state in states), progress=progress, desc=desc, unit="rep",
                       initial=sum(min(state.prefix, state.target) for state in states))
    try:
        with _executor(workers, isolation) as executor:
            running: dict[Future, tuple[_State, int, int]] = {}
            while True:
                if not announced and all(state.rows or state.used is not None for state in states):
                    announce(_estimate(states, maximum, workers, first_look))
                    announced = True
                ready = _ready_pieces(states, workers, pilot=not announced)
                for state, start, stop in ready[: max(0, workers + 1 - len(running))]:
                    state.in_flight += 1
                    future = executor.submit(play_piece, state.group.cells, seed, start, stop, isolation, secret_seed)
                    running[future] = (state, start, stop)
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    state, start, stop = running.pop(future)
                    rows, seconds = future.result()
                    store.save(state.group, start, stop, rows)
                    state.in_flight -= 1
                    state.seconds += [seconds / (stop - start)] * (stop - start)
                    for r in range(start, stop):
                        state.rows[r] = {key: rows[key][r - start] for key in rows}
                    before = state.target
                    bar.update(stop - start)
                    if state.in_flight == 0:
                        _judge(state, maximum)
                    if state.target != before:
                        bar.total += state.target - before
                        bar.refresh()
    finally:
        bar.close()
    all_rows: Rows = {}
    for state in states:
        for key, cell_rows in state.prefix_rows().items():
            all_rows[key] = cell_rows
    return all_rows, {state.group.key: state.used for state in states}


def _judge(state: _State, maximum: int) -> None:
    """Apply the stop rule to the complete prefix; set ``used`` or the next ``target``."""
    done = state.prefix
    if done:
        needed = state.group.stop(state.prefix_rows())
        if needed is not None and needed <= done:
            state.used, state.target = needed, needed
            return
        if done >= maximum:
            state.used = state.target = maximum
            return
    state.target = next_target(done, maximum)


def _ready_pieces(states: list[_State], workers: int, pilot: bool) -> list[tuple[_State, int, int]]:
    """The pieces that can start now, most expensive first; while ``pilot``, only replication 0s."""
    pieces = []
    for state in states:
        if state.used is not None or state.in_flight:
            continue
        target = min(state.target, 1) if pilot else state.target
        missing = [r for r in range(state.prefix, target) if r not in state.rows]
        if not missing:
            continue
        per_piece = len(missing)
        if math.isfinite(state.cost) and state.cost * len(missing) > PIECE_SECONDS:
            per_piece = max(1, math.ceil(PIECE_SECONDS / max(state.cost, 1e-9)))
        for start, stop in _runs(missing):
            for first in range(start, stop, per_piece):
                pieces.append((state, first, min(stop, first + per_piece)))
    return sorted(pieces, key=lambda piece: -(piece[0].cost if math.isfinite(piece[0].cost) else math.inf) * (piece[2] - piece[1]))


def _runs(replications: list[int]) -> Iterator[tuple[int, int]]:
    """Contiguous runs [start, stop) of a sorted list of replications."""
    start = previous = replications[0]
    for r in replications[1:]:
        if r != previous + 1:
            yield start, previous + 1
            start = r
        previous = r
    yield start, previous + 1


def _estimate(states: list[_State], maximum: int, workers: int, first_look: int) -> Estimate:
    costs = [state.cost if math.isfinite(state.cost) else 0.0 for state in states]
    fewest = sum(cost * (state.used if state.used is not None else min(maximum, first_look))
                 for cost, state in zip(costs, states))
    return Estimate(len(states), sum(costs), fewest, sum(costs) * maximum, workers)


class _Inline(Executor):
    """Runs each submission at once in this process (one worker, no isolation)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@contextmanager
def _executor(workers: int, isolation: Isolation) -> Iterator[Executor]:
    """Workers for the pieces: this process for one worker, loky's processes for several, fresh
    spawned processes under process isolation (this process has loaded the attacks' code)."""
    if isolation == "process":
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            yield pool
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return
    if workers == 1:
        yield _Inline()
        return
    from joblib.externals.loky import get_reusable_executor

    pool = get_reusable_executor(max_workers=workers)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, kill_workers=True)
        raise

