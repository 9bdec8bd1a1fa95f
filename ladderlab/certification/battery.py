"""Sequential replication of a certification battery: each group of cells until a stop rule is met.

``ladderlab certify`` replicates every grid point only until its verdict is decided
(:mod:`ladderlab.stats.sequential`). Here that is a :class:`Group` (the cells that share a
transcript, :mod:`ladderlab.runs.sharing`) with a stop rule: given the rows of its
replications 0 … r − 1, the number of replications it needs, or None for more. The
undecided groups advance in rounds to 1 replication (the pilot, whose cost gives the
estimate), then 8, 16, 32, … and the maximum; a round's replications of a group that
would cost a worker long are split into pieces that run in parallel. Stop rules and the
pruning between rounds see whole prefixes and ignore replications past a stopping time,
so what a group uses depends on its replications alone, never on the number of workers
or on how rounds were split: the same seed gives the same certificate.

Nothing is lost on interruption. Every piece is written atomically to
``chunks/<group>/<first>-<last + 1>.parquet`` in the battery directory as soon as it is
back (one file per piece, holding every cell of the group), and a run of the same
battery reads them and computes only what is missing: Ctrl-C, then the same command,
resumes. A group's identity is its cells' keys and its replications are functions of
(cell, seed, replication) only, so pieces computed under one maximum or confidence serve
another. The group's folder records the fingerprints of the plugins that computed its pieces
(``plugins.json``, :mod:`ladderlab.runs.rundir`): pieces of a plugin whose version, source or data
changed since are moved into ``quarantine/`` and computed again, never reused. Each piece's
SHA-256 and size are recorded once it is written (``checksums.json``): a piece that does not
match them, or cannot be read, is quarantined in the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    wait,
)
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ladderlab.isolation.protocol import Isolation
from ladderlab.isolation.untrusted import sandboxed_when_isolated
from ladderlab.runs.rundir import QUARANTINE, damage, quarantine, write_atomically
from ladderlab.runs.runner import (
    cell_table,
    isolated_cell,
    loaded_foreign_attack_code,
    play_replications,
    plugin_tokens,
    write_table,
)
from ladderlab.runs.scenario import Cell
from ladderlab.utils.checksums import sha256_bytes
from ladderlab.utils.progress import progress_bar

log = logging.getLogger("ladderlab.run")

Rows = dict[str, list[dict[str, Any]]]
"""Rows by cell key, one per replication, in order."""
StopRule = Callable[[Rows], int | None]
CHUNK_ENDS = (1, 8)
"""The first chunks end after these replications; later ones double."""
PIECE_SECONDS = 8.0
"""A chunk whose replications would cost one worker more than this (estimated from the pilot) is split."""
CHUNK_FOLDER = "chunks"
FINGERPRINTS = "plugins.json"
"""In a group's chunk folder: the fingerprints of the plugins that computed its pieces."""
CHECKSUMS = "checksums.json"
"""In a group's chunk folder: each piece's SHA-256 and size, recorded once it was written."""


@dataclass
class Group:
    """Cells played together, replication by replication, and the rule that says when to stop."""

    cells: list[Cell]
    stop: StopRule
    at_most: int | None = None
    """The most replications the stop rule can need, where it is known (a fixed count)."""

    @property
    def key(self) -> str:
        return hashlib.sha256(" ".join(sorted(cell.key for cell in self.cells)).encode()).hexdigest()[:20]


@dataclass
class _State:
    group: Group
    rows: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)
    used: int | None = None
    seconds: list[float] = field(default_factory=list)
    stored: frozenset[int] = frozenset()
    """The replications the store held when the battery started (a resumed battery's)."""

    def left_below(self, target: int) -> int:
        """How many of the replications 0 … ``target`` − 1 the store did not hold."""
        return target - sum(1 for r in self.stored if r < target)

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
    """The battery's cost, estimated from one replication of every group: of the replications
    left, not of the ``stored`` ones a resumed battery reads back."""

    groups: int
    seconds_per_replication: float
    fewest_seconds: float
    most_seconds: float
    workers: int
    stored: int = 0

    def text(self) -> str:
        resumed = f" ({self.stored} replications were stored: this is what is left)" if self.stored else ""
        return (f"estimate{resumed}: {_duration(self.fewest_seconds / self.workers)} on {self.workers} worker"
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
        """Every stored replication of ``group``: {replication: {cell key: row}}. Pieces computed by
        plugins that have changed since (their fingerprints, recorded with the group's first piece)
        are moved into ``quarantine/``, with a warning, and computed again."""
        folder = self.directory / CHUNK_FOLDER / group.key
        recorded = folder / FINGERPRINTS
        if recorded.is_file() and json.loads(recorded.read_text()) != _fingerprints(group):
            target = self.directory / QUARANTINE / f"{CHUNK_FOLDER}-{group.key}.{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
            target.parent.mkdir(exist_ok=True)
            os.replace(folder, target)
            log.warning("ladderlab: %s: the stored replications of %s were computed by a plugin that has changed since "
                        "(another version, source or data); moved to %s, they will be computed again",
                        self.directory, group.cells[0].label, target.relative_to(self.directory))
        rows: dict[int, dict[str, dict[str, Any]]] = {}
        keys = {cell.key for cell in group.cells}
        checksums = _checksums(folder)
        for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
            table = None
            try:
                reason = damage(path, checksums.get(path.name), CHECKSUMS) if (folder / CHECKSUMS).is_file() else None
                table = None if reason else pq.read_table(path)
            except (OSError, pa.ArrowException) as error:
                reason = f"unreadable: {error}"
            if table is None or reason:
                target = quarantine(self.directory, path, reason, f"{CHUNK_FOLDER}-{group.key}-{path.stem}")
                log.warning("ladderlab: %s: a stored piece of %s (%s) is damaged: %s; moved to %s, its replications "
                            "will be computed again", self.directory, group.cells[0].label,
                            path.relative_to(self.directory), reason, target.relative_to(self.directory))
                continue
            if path.name not in checksums:  # kept before pieces had checksums: whole (written atomically), readable
                self._record(folder, path.name, path.read_bytes())
            for row in table.to_pylist():
                if row["cell"] in keys:
                    rows.setdefault(row["replication"], {})[row["cell"]] = row
        return {r: cells for r, cells in rows.items() if set(cells) == keys}

    def save(self, group: Group, start: int, stop: int, rows: Rows) -> None:
        folder = self.directory / CHUNK_FOLDER / group.key
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / FINGERPRINTS).is_file():
            write_atomically(folder / FINGERPRINTS, json.dumps(_fingerprints(group), sort_keys=True))
        table = pa.concat_tables([cell_table(cell, self.seed, rows[cell.key]) for cell in group.cells])
        name = f"{start:06d}-{stop:06d}.parquet"
        self._record(folder, name, write_table(folder / name, table))

    @staticmethod
    def _record(folder: Path, name: str, data: bytes) -> None:
        """Add the checksum of piece ``name`` (its bytes ``data``) to the folder's :data:`CHECKSUMS`."""
        checksums = {**_checksums(folder), name: {"sha256": sha256_bytes(data), "bytes": len(data)}}
        write_atomically(folder / CHECKSUMS, json.dumps(checksums, sort_keys=True, indent=1))


def _checksums(folder: Path) -> dict[str, dict[str, Any]]:
    """The recorded checksums of a group's pieces, by file name (none before the first is recorded)."""
    path = folder / CHECKSUMS
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        return {}


def _fingerprints(group: Group) -> dict[str, dict[str, str | None]]:
    """The fingerprint tokens of every cell's plugins, by cell key (:mod:`ladderlab.runs.rundir`)."""
    return {cell.key: plugin_tokens(cell) for cell in group.cells}


@sandboxed_when_isolated
def play_piece(cells: list[Cell], seed: int, start: int, stop: int, isolation: Isolation,
               secret_seed: int | None, identities: dict[str, Any] | None = None) -> tuple[Rows, float]:
    """Replications ``start`` … ``stop`` − 1 of a group, and the CPU seconds they took
    (``identities``: :func:`ladderlab.runs.runner.isolated_cell` of each cell under isolation)."""
    began = time.process_time()
    rows = play_replications(cells, seed, range(start, stop), isolation, secret_seed, identities)
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
    prune: Callable[[dict[str, Rows], set[str]], set[str]] | None = None,
    desc: str = "replications",
) -> tuple[Rows, dict[str, int], set[str]]:
    """Replicate every group until its stop rule is met (at most ``maximum`` replications).

    The groups advance in rounds to the same number of replications (1, 8, 16, 32, …),
    the pieces of a round in parallel, longest first. After each round, ``prune``
    receives every group's rows (those it uses, by group key) and the keys of the groups
    still undecided, and names those that need no more: they stop where they are, which
    depends on the rows alone.
    Returns the rows of every cell (the complete prefix computed, stored replications
    included), by group key how many replications each group uses, and the pruned
    groups. ``announce`` receives the estimate after the first round, of the replications
    the store did not hold; ``first_look``, the fewest replications a stop rule can stop at,
    is its lower figure.
    """
    states = [_State(group) for group in groups]
    for state in states:
        state.rows = store.load(state.group)
        state.stored = frozenset(state.rows)
        state.seconds = [sum(row.get("wall_time") or 0.0 for row in cells.values()) for cells in state.rows.values()]
    workers = max(1, jobs if jobs > 0 else multiprocessing.cpu_count())
    pruned: set[str] = set()
    bar = progress_bar(total=0, progress=progress, desc=desc, unit="rep")
    try:
        with _executor(workers, isolation) as executor:
            done = 0
            while True:
                for state in states:
                    if state.used is None and done:
                        _judge(state, done, maximum)
                undecided = [state for state in states if state.used is None]
                if done and prune and undecided:
                    used = {state.group.key: {key: rows[: state.used or done] for key, rows in state.prefix_rows().items()}
                            for state in states}
                    stop = prune(used, {state.group.key for state in undecided})
                    for state in undecided:
                        if state.group.key in stop:
                            state.used = done
                            pruned.add(state.group.key)
                    undecided = [state for state in undecided if state.used is None]
                if done == 1 and announce is not None:
                    announce(_estimate(states, maximum, workers, first_look))
                if not undecided:
                    break
                done = next_target(done, maximum)
                _play_round(executor, [(state, min(done, state.group.at_most or done)) for state in undecided], seed,
                            isolation, secret_seed, store, workers, bar)
    finally:
        bar.close()
    all_rows: Rows = {}
    for state in states:
        all_rows.update(state.prefix_rows())
    return all_rows, {state.group.key: state.used for state in states}, pruned


def _judge(state: _State, done: int, maximum: int) -> None:
    """Apply the stop rule after a round of ``done`` replications; set ``used`` if it is met."""
    needed = state.group.stop({key: rows[:done] for key, rows in state.prefix_rows().items()})
    if needed is not None and needed <= done:
        state.used = needed
    elif done >= maximum:
        state.used = maximum


def _play_round(executor: Executor, targets: list[tuple[_State, int]], seed: int, isolation: Isolation,
                secret_seed: int | None, store: Store, workers: int, bar: Any) -> None:
    """Play every missing replication below each state's target, longest pieces first, at most
    ``workers`` + 1 in flight; store each piece as it comes back."""
    pending = _pieces(targets)
    bar.total += sum(stop - start for _, start, stop in pending)
    bar.refresh()
    running: dict[Future, tuple[_State, int, int]] = {}
    while pending or running:
        while pending and len(running) <= workers:
            state, start, stop = pending.pop(0)
            identities = ({cell.key: isolated_cell(cell) for cell in state.group.cells}  # named as in-process
                          if isolation == "process" else None)
            future = executor.submit(play_piece, state.group.cells, seed, start, stop, isolation, secret_seed,
                                     identities)
            running[future] = (state, start, stop)
        finished, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in finished:
            state, start, stop = running.pop(future)
            rows, seconds = future.result()
            store.save(state.group, start, stop, rows)
            state.seconds += [seconds / (stop - start)] * (stop - start)
            for r in range(start, stop):
                state.rows[r] = {key: rows[key][r - start] for key in rows}
            bar.update(stop - start)


def _pieces(targets: list[tuple[_State, int]]) -> list[tuple[_State, int, int]]:
    """The missing replications below each target, in pieces of at most ``PIECE_SECONDS`` of
    estimated CPU, most expensive first (unknown costs first of all)."""
    pieces = []
    for state, target in targets:
        missing = [r for r in range(target) if r not in state.rows]
        if not missing:
            continue
        per_piece = len(missing)
        if math.isfinite(state.cost) and state.cost * len(missing) > PIECE_SECONDS:
            per_piece = max(1, math.ceil(PIECE_SECONDS / max(state.cost, 1e-9)))
        for start, stop in _runs(missing):
            for first in range(start, stop, per_piece):
                pieces.append((state, first, min(stop, first + per_piece)))
    return sorted(pieces, key=lambda piece: -(piece[0].cost if math.isfinite(piece[0].cost) else math.inf)
                  * (piece[2] - piece[1]))


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
    fewest = sum(cost * state.left_below(state.used if state.used is not None else min(maximum, first_look))
                 for cost, state in zip(costs, states))
    most = sum(cost * state.left_below(maximum) for cost, state in zip(costs, states))
    return Estimate(len(states), sum(costs), fewest, most, workers, sum(len(state.stored) for state in states))


class _Inline(Executor):
    """Runs each submission at once in this process (one worker, no isolation)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@contextmanager
def _executor(workers: int, isolation: Isolation) -> Iterator[Executor]:
    """Workers for the pieces: this process for one worker, loky's processes for several, fresh
    spawned processes under process isolation when this process has loaded attack code other
    than ladderlab's or there are several workers (as ``ladderlab run`` decides)."""
    if isolation == "process" and (workers != 1 or loaded_foreign_attack_code()):
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            yield pool
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return
    if workers == 1:
        yield _Inline()
        return
    from joblib.executor import get_memmapping_executor

    pool = get_memmapping_executor(workers)  # joblib's own: a later joblib.Parallel reuses the same pool
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, kill_workers=True)
        raise

