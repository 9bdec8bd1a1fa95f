"""The scenario runner: every cell of a scenario, replication by replication, into a run directory.

Layout of a run directory (asv-style results as files):

- ``manifest.json``: the resolved scenario, its hash, every cell it expands to, the
  package version and the version of every plugin it uses (so that a report needs
  nothing but the directory). A run directory belongs to one scenario: running
  a different one into it is refused. Its ``layout`` 2 names local files as the scenario
  writes them (:mod:`ladderlab.utils.locations`), so the directory moves with its project; a
  layout-1 directory is migrated on first use (:func:`migrate`).
- ``cells/<key>.parquet``: one file per completed cell, one row per replication,
  written to a temporary file, flushed and renamed, so a killed run loses at most the
  cells in flight. The manifest's ``completed`` records each file's SHA-256 and the
  fingerprints (version, source hash) of the plugins that computed it; a re-run
  verifies every finished cell, quarantines a damaged one and computes it again, and
  refuses cells whose plugin changed (see :mod:`ladderlab.runs.rundir`). Each record says how
  many replications (0 on) its file holds: a run with more replications computes only the
  ones a cell lacks and writes its file again, stored rows first (:func:`grows`); fewer are refused.
- ``lock``: held by the run writing into the directory; a second run is refused.

Each job is one cell, or the cells that share one transcript per replication (they
differ only in their attack's ``final_only_params``, :mod:`ladderlab.runs.sharing`), run
replication by replication (joblib: ``loky`` locally, ``dask`` for a cluster). Jobs
get plain specs and seeds, build their plugins themselves and write their own files.
With several local workers, replication 0 of every group is played first (in
parallel); its CPU time estimates the group's cost. A group that would cost more than a
quarter of an even share per worker is split into ranges of replications (the workers
return their rows and the run writes the group's cells once every range is back; an
interrupted run computes an unfinished group again), and the jobs start longest first,
so no worker is left with a long job at the end. Every job runs single-threaded (BLAS,
OpenMP and nested joblib calls such as a random forest's), so that floating-point
sums happen in the same order on every backend. None of this changes a result: every
replication depends only on (cell, seed, replication).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import multiprocessing
import socket
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import ladderlab
from ladderlab.attack import Attack
from ladderlab.isolation.multiplexing import WINDOW
from ladderlab.isolation.protocol import (
    AttackRef,
    Isolation,
    check_isolation,
    play_together,
)
from ladderlab.isolation.untrusted import sandboxed_when_isolated
from ladderlab.naming import plugin_label
from ladderlab.plugin import fingerprint
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import rundir, workload
from ladderlab.runs.cell_kinds import kind_of
from ladderlab.runs.duel import AttackCrashed, DuelResult, Incompatible, duel, keeping_crashes
from ladderlab.runs.rundir import RunDirectoryError
from ladderlab.runs.scenario import (
    BaseScenario,
    Cell,
    cells,
    identity_of,
    load,
    preflight,
    transcript_groups,
)
from ladderlab.seeding import secret_fingerprint
from ladderlab.utils.checksums import sha256_bytes
from ladderlab.utils.determinism import single_threaded
from ladderlab.utils.locations import (
    anchored_at,
    former_folders,
    local_names,
    location_free,
)
from ladderlab.utils.memory import retain_freed_memory
from ladderlab.utils.progress import progress_bar
from ladderlab.utils.sources import LOCAL_MODULE_PREFIX

log = logging.getLogger("ladderlab.run")

SUBMISSION_COLUMNS = ("released", "public", "final")
CRASH_AND_SIDES = ("leaderboard_optimism", "leaderboard_lag", "crashed")
"""The sides of the leaderboard error (:func:`ladderlab.runs.duel.leaderboard_deviations`) and whether the attack
raised (a ``failed`` row that carries what it submitted before: :class:`ladderlab.runs.duel.AttackCrashed`)."""


@contextmanager
def cell_worker() -> Iterator[None]:
    """How every cell runs: on one thread (:mod:`ladderlab.utils.determinism`), keeping freed memory (:mod:`ladderlab.utils.memory`)."""
    retain_freed_memory()
    with single_threaded():
        yield


def _versions(scenario: BaseScenario) -> dict[str, str]:
    versions = {"ladderlab": ladderlab.__version__}
    for cell in cells(scenario):
        versions.update({f"{registry.kind}:{location_free(plugin_id)}": registry.get(plugin_id).version
                         for registry, plugin_id in cell.plugin_ids()})
    return versions


def _plugin_fingerprints(scenario: BaseScenario) -> dict[str, dict[str, Any]]:
    """The current fingerprint (version, source hash) of every plugin the scenario uses."""
    return {f"{registry.kind}:{location_free(plugin_id)}": fingerprint(registry.get(plugin_id))
            for cell in cells(scenario) for _, registry, plugin_id in _cell_plugins(cell)}


def _cell_plugins(cell: Any) -> list[tuple[str, Any, str]]:
    """(role, registry, id) of every plugin a cell runs (:meth:`ladderlab.runs.cell_kinds.CellKind.plugin_roles`)."""
    return kind_of(cell).plugin_roles(cell)


def prepare(scenario: BaseScenario, out: Path, secret_seed: int | None = None) -> None:
    """Create ``out`` with its manifest, or check that it belongs to this scenario (and secret)."""
    manifest_path = out / "manifest.json"
    secret = secret_fingerprint(secret_seed)
    if manifest_path.exists():
        manifest = rundir.read_manifest(out)
        if manifest.get("layout", 1) < LAYOUT and manifest.get("scenario_hash") != scenario.identity():
            manifest = migrate(scenario, out, manifest)
        if manifest.get("scenario_hash") != scenario.identity() and grows(manifest, scenario, secret):
            manifest = _grow(scenario, out, manifest)
        held = (manifest.get("scenario") or {}).get("replications")
        if manifest.get("scenario_hash") != scenario.identity() and isinstance(held, int) and held > scenario.replications \
                and grows(manifest, scenario.model_copy(update={"replications": held}), secret):
            raise RunDirectoryError(
                f"{out} holds {held} replications of every cell and this run asks for {scenario.replications}: a run "
                f"directory's replications only grow; run it with {held} or more, or choose another --out")
        if manifest.get("scenario_hash") != scenario.identity():
            former = local_names(manifest.get("scenario")) if manifest.get("layout", 1) < LAYOUT else []
            hint = (f"; if it is this scenario's, written by an older ladderlab that named local files by absolute "
                    f"path ({former[0]}), put them where the scenario names them relative to its folder as they "
                    "were then, or run it once in the folder it was written in, to migrate it") if former else ""
            changed = scenario_differences(manifest.get("scenario") or {}, location_free(scenario.model_dump(mode="json")))
            raise RunDirectoryError(
                f"{out} holds results of a different scenario (hash {manifest.get('scenario_hash')}, "
                f"this one {scenario.identity()}{'; ' + '; '.join(changed) if changed else ''}): "
                f"choose another --out, or delete the directory{hint}"
            )
        recorded = manifest.get("secret_seed_sha256")
        if recorded != secret:
            started = "with a secret seed" if recorded else "without a secret seed"
            now = "none" if not secret else "another one" if recorded else "one"
            raise RunDirectoryError(
                f"{out} was started {started}, and this run has {now}: "
                "resume it with the same --secret-seed, or choose another --out"
            )
        dump = location_free(scenario.model_dump(mode="json"))
        if manifest.get("scenario") != dump:  # the same computation, with other paper values
            manifest["scenario"] = dump
            _write_atomically(manifest_path, json.dumps(manifest, indent=2).encode())
        return
    for folder in rundir.cell_folders():
        (out / folder).mkdir(parents=True, exist_ok=True)
    manifest = {
        "layout": LAYOUT,
        "scenario": location_free(scenario.model_dump(mode="json")),
        "scenario_hash": scenario.identity(),
        "versions": _versions(scenario),
        "plugins": _plugin_fingerprints(scenario),
        "cells": cell_records(scenario),
        "completed": {},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": rundir.machine(),
    }
    if secret:
        manifest["secret_seed_sha256"] = secret
    _write_atomically(manifest_path, json.dumps(manifest, indent=2).encode())


def grows(manifest: dict[str, Any], scenario: BaseScenario, secret: str | None) -> bool:
    """Whether ``scenario`` keeps every cell of the run directory's (``manifest``) with the same seed and
    secret, and only adds cells or replications: a cell's replication depends on its own plugins, the
    seed and its index alone (every stream is derived from their identity, :mod:`ladderlab.seeding`,
    never from the count), so its finished cells and replications are this scenario's too."""
    recorded = manifest.get("scenario") or {}
    keys = {cell.key for cell in cells(scenario)}
    return (manifest.get("layout", 1) == LAYOUT and recorded.get("seed") == scenario.seed
            and isinstance(recorded.get("replications"), int) and recorded["replications"] <= scenario.replications
            and manifest.get("secret_seed_sha256") == secret
            and {record["key"] for record in manifest.get("cells", [])} <= keys)


def _grow(scenario: BaseScenario, out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest of ``out`` rewritten for ``scenario``, which :func:`grows` it; its finished cells kept,
    each recording the replications its file holds (the rest are computed by the run: :func:`pending_cells`)."""
    before, held = len(manifest.get("cells", [])), manifest["scenario"]["replications"]
    for record in manifest.get("completed", {}).values():
        record.setdefault("replications", held)
    manifest.update(scenario=location_free(scenario.model_dump(mode="json")), scenario_hash=scenario.identity(),
                    cells=cell_records(scenario), versions={**_versions(scenario), **manifest.get("versions", {})},
                    plugins={**_plugin_fingerprints(scenario), **manifest.get("plugins", {})})
    _write_atomically(out / "manifest.json", json.dumps(manifest, indent=2).encode())
    finished = len(manifest.get("completed", {}))
    if held == scenario.replications:
        log.warning("ladderlab: %s: the scenario has changed but keeps its %d cells, seed and replications, and adds %d: "
                    "its %d finished cells are kept", out, before, len(manifest["cells"]) - before, finished)
    else:
        added = len(manifest["cells"]) - before
        log.warning("ladderlab: %s: replications raised from %d to %d%s: the %d finished cells keep their stored "
                    "replications and compute only the ones they lack", out, held, scenario.replications,
                    f", and {added} cells added" if added else "", finished)
    return manifest


def held_replications(manifest: dict[str, Any]) -> dict[str, int]:
    """Per finished cell: how many replications its file holds, from 0 on (a run directory written
    before replications could grow records none: then its scenario's)."""
    count = (manifest.get("scenario") or {}).get("replications")
    return {key: record.get("replications", count) for key, record in manifest.get("completed", {}).items()}


def scenario_differences(recorded: Any, current: Any, where: str = "", limit: int = 3) -> list[str]:
    """Where a run directory's scenario and this one differ, as ``replications: 20 there, 25 here``
    (at most ``limit`` places; the papers' values, which do not change results, left out)."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        found: list[str] = []
        for key in sorted(recorded.keys() | current.keys()):
            if key == "paper_values" and not where:
                continue
            path = f"{where}.{key}" if where else key
            if key not in recorded or key not in current:
                found.append(f"{path}: {'absent' if key not in recorded else 'present'} there, "
                             f"{'absent' if key not in current else 'present'} here")
            else:
                found += scenario_differences(recorded[key], current[key], path, limit - len(found))
            if len(found) >= limit:
                break
        return found[:limit]
    if isinstance(recorded, list) and isinstance(current, list) and len(recorded) == len(current):
        found = []
        for index, (old, new) in enumerate(zip(recorded, current)):
            found += scenario_differences(old, new, f"{where}[{index}]", limit - len(found))
            if len(found) >= limit:
                break
        return found[:limit]
    if recorded == current:
        return []
    if isinstance(recorded, list) and isinstance(current, list):
        return [f"{where}: {len(recorded)} entries there, {len(current)} here"]
    return [f"{where}: {_shortened(json.dumps(recorded))} there, {_shortened(json.dumps(current))} here"]


def _shortened(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


LAYOUT = 2
"""The run directory's layout (the manifest's ``layout``): 2 names local plugin and challenge files
as the scenario wrote them (:mod:`ladderlab.utils.locations`); 1 (no ``layout``) named them by absolute path."""


def migrate(scenario: BaseScenario, out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Bring a layout-1 run directory of ``scenario`` to layout 2, wherever the folder it was made in
    lies now: find where the scenario's local files lay then (the folder whose absolute names give the
    recorded hash), write each finished cell's rows again under its location-free key and names, replace
    the manifest atomically, and only then delete the old files (a crash before leaves the old
    directory whole; after, an old file without a record, which the run quarantines). A cell file that
    does not match its checksum is left where it is, to be quarantined and computed again. A directory
    that is not this scenario's is returned unchanged."""
    dump = scenario.model_dump(mode="json")
    folder = next((folder for folder in former_folders(dump, manifest.get("scenario"))
                   if identity_of(anchored_at(dump, folder)) == manifest.get("scenario_hash")), None)
    if folder is None:
        return manifest
    ids = {anchored_at(plugin_id, folder): location_free(plugin_id)
           for cell in cells(scenario) for _, _, plugin_id in _cell_plugins(cell)}

    def renamed(name: str, separator: str) -> str:
        prefix, _, plugin_id = name.partition(separator)
        return f"{prefix}{separator}{ids.get(plugin_id, plugin_id)}" if plugin_id else name

    completed = manifest.get("completed", {})
    replaced = []
    for cell in cells(scenario):
        former = dataclasses.replace(cell, **{field.name: anchored_at(getattr(cell, field.name), folder)
                                              for field in dataclasses.fields(cell)})
        if former.key == cell.key or former.key not in completed:
            continue
        source = out / completed[former.key]["file"]
        if rundir.damage(source, completed[former.key]) is not None:
            continue
        record = completed.pop(former.key)
        stored = pq.read_table(source)
        rows = kind_of(cell).stored_rows(stored)
        table = kind_of(cell).result_table(cell, stored.column("seed")[0].as_py(), rows)
        written = _write_cell(cell, table, str(out), {renamed(role, " "): token
                                                      for role, token in record.get("plugins", {}).items()}, len(rows))
        completed[cell.key] = {**record, **{name: written[name] for name in ("key", "file", "sha256", "bytes")}}
        replaced.append(source)
    manifest.update(layout=LAYOUT, scenario=location_free(dump), scenario_hash=scenario.identity(),
                    cells=cell_records(scenario), completed=completed,
                    versions={renamed(name, ":"): version for name, version in manifest.get("versions", {}).items()},
                    plugins={renamed(name, ":"): print_ for name, print_ in manifest.get("plugins", {}).items()})
    _write_atomically(out / "manifest.json", json.dumps(manifest, indent=2).encode())
    for source in replaced:
        source.unlink()
    log.warning("ladderlab: %s: migrated from layout 1 (local files named by their absolute path, in %s) to layout %d "
                "(named as the scenario writes them): %d finished cells kept under their new names", out, folder, LAYOUT,
                len(replaced))
    return manifest


def cell_records(scenario: BaseScenario) -> list[dict[str, Any]]:
    """Every cell of ``scenario`` as plain data (key, task, mechanism, attack, budget, oracle),
    as the manifest lists them."""
    return [{"key": cell.key, **location_free(dataclasses.asdict(cell))} for cell in cells(scenario)]


_write_atomically = rundir.write_atomically


def check_accounts(scenario: BaseScenario, isolation: Isolation, secret_seed: int | None) -> None:
    """Refuse a scenario whose attackers hold several accounts under process isolation or a secret
    seed: their duels are competitions (:mod:`ladderlab.competition.accounts`), played in this process from the public seed."""
    several = next((cell for cell in cells(scenario) if isinstance(cell, Cell) and cell.accounts > 1), None)
    if several is not None and (isolation == "process" or secret_seed is not None):
        option = "isolation='process'" if isolation == "process" else "a secret seed"
        raise ValueError(f"{several.label}: an attacker with several accounts plays as a competition team, "
                         f"which {option} does not support; drop accounts or {option}")


def run_replication(cell: Cell, seed: int, replication: int, isolation: Isolation = "none",
                    secret_seed: int | None = None, attack_identity: tuple[str, dict[str, Any]] | None = None,
                    play: Callable[[Any, Any, Any], DuelResult] | None = None) -> dict[str, Any]:
    """One replication of a cell: a row of the cell's table (status ok, failed or skipped).

    Under ``isolation="process"`` the attack's code is never loaded here: it is named by
    reference (``attack_identity``, its id and full parameters, names its random stream).
    ``play(task, mechanism, attack)`` plays the duel in place of :func:`ladderlab.runs.duel.duel`
    (a kind of duel of its own: :class:`ladderlab.competition.accounts.SybilDuels`)."""
    task = TASKS.make(cell.task[0], **cell.task[1])
    mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
    if isolation == "process":
        attack: Attack | AttackRef = AttackRef.from_spec(cell.attack[0], cell.attack[1], attack_identity)
    else:
        attack = ATTACKS.make(cell.attack[0], **cell.attack[1])
    row: dict[str, Any] = {"replication": replication, "status": "ok", "error": None}
    start = time.perf_counter()
    try:
        if play is not None:
            result = play(task, mechanism, attack)
        else:
            with keeping_crashes():
                result = duel(task, mechanism, attack, seed, replication, budget=cell.budget, oracle=cell.oracle,
                              isolation=isolation, secret_seed=secret_seed)
    except Incompatible as reason:
        row.update(status="skipped", error=str(reason))
    except AttackCrashed as crash:  # failed, with what the attack submitted before it raised
        row.update(status="failed", error=str(crash), crashed=True, submissions=0)
        if crash.partial is not None:
            row.update(_measures(crash.partial))
    except Exception as error:  # a failing cell is recorded, and the run goes on
        row.update(status="failed", error="".join(traceback.format_exception_only(error)).strip())
    else:
        row.update(_measures(result))
    row["wall_time"] = time.perf_counter() - start
    return row


def _measures(result: DuelResult) -> dict[str, Any]:
    """A duel's measures as a row's columns."""
    measures = dict(
        submissions=result.submissions,
        leaderboard_error=result.leaderboard_error,
        leaderboard_optimism=result.leaderboard_optimism,
        leaderboard_lag=result.leaderboard_lag,
        final_released=result.final_released,
        final_public=result.final_public,
        final_final=result.final_final,
        delta=result.delta,
        optimism=result.optimism,
        reported=result.reported,
        loss_bound=result.loss_bound,
        population=result.population,
        released=result.released,
        public=result.public,
        final=result.final,
        marks=json.dumps(result.marks),
    )
    if result.attack_fingerprint:
        measures["attack_fingerprint"] = result.attack_fingerprint
    return measures


def cell_table(cell: Cell, seed: int, rows: list[dict[str, Any]]) -> pa.Table:
    """A duel cell's rows (one per replication, as :func:`run_replication` makes them) as its Parquet table."""
    task, mechanism, attack = location_free((cell.task, cell.mechanism, cell.attack))
    columns: dict[str, list[Any]] = {
        "cell": [cell.key] * len(rows),
        "task": [task[0]] * len(rows),
        "task_params": [json.dumps(task[1], sort_keys=True)] * len(rows),
        "mechanism": [mechanism[0]] * len(rows),
        "mechanism_params": [json.dumps(mechanism[1], sort_keys=True)] * len(rows),
        "attack": [attack[0]] * len(rows),
        "attack_params": [json.dumps(attack[1], sort_keys=True)] * len(rows),
        "budget": [cell.budget] * len(rows),
        "seed": [seed] * len(rows),
    }
    for name in ("replication", "status", "error", "marks", "wall_time", "submissions", "reported", "leaderboard_error",
                 "final_released", "final_public", "final_final", "delta", "optimism", "loss_bound", "population",
                 *CRASH_AND_SIDES):
        columns[name] = [row.get(name) for row in rows]
    for name in SUBMISSION_COLUMNS:
        columns[name] = [None if row.get(name) is None else np.asarray(row[name]).tolist() for row in rows]
    schema = pa.schema(
        [(name, pa.string()) for name in ("cell", "task", "task_params", "mechanism", "mechanism_params", "attack", "attack_params")]
        + [("budget", pa.int64()), ("seed", pa.int64()), ("replication", pa.int64()), ("status", pa.string()),
           ("error", pa.string()), ("marks", pa.string()), ("wall_time", pa.float64()), ("submissions", pa.int64()),
           ("reported", pa.int64())]
        + [(name, pa.float64()) for name in ("leaderboard_error", "final_released", "final_public", "final_final",
                                             "delta", "optimism", "loss_bound", "population")]
        + [(name, pa.list_(pa.float64())) for name in SUBMISSION_COLUMNS]
        + [("leaderboard_optimism", pa.float64()), ("leaderboard_lag", pa.float64()), ("crashed", pa.bool_())]
    )
    return pa.table(columns, schema=schema)


def run_cell(cell: Cell, seed: int, replications: int, out: str, isolation: Isolation = "none",
             secret_seed: int | None = None, attack_identity: tuple[str, dict[str, Any]] | None = None,
             ) -> dict[str, Any]:
    """Run every replication of ``cell`` and write its Parquet file atomically; return what the
    manifest records of it (see :func:`run_cells`)."""
    identities = {cell.key: attack_identity} if attack_identity else None
    return run_cells([cell], seed, replications, out, isolation, secret_seed, identities)[0]


def isolated_cell(cell: Any) -> Any:
    """What an isolated run computes of a cell's attack code in its own process (from the
    stand-ins of :mod:`ladderlab.isolation.untrusted`, which checked the scenario): a duel's attack
    identity, or a competition's teams (:meth:`ladderlab.runs.cell_kinds.CellKind.isolated`; None: nothing)."""
    return kind_of(cell).isolated(cell)


@sandboxed_when_isolated
def run_cells(
    group: list[Cell],
    seed: int,
    replications: int,
    out: str,
    isolation: Isolation = "none",
    secret_seed: int | None = None,
    identities: dict[str, Any] | None = None,
    progress: bool | None = False,
    start: int = 0,
) -> list[dict[str, Any]]:
    """Run the cells of a transcript group single-threaded, replication by replication (each
    replication's cells together, so they share its transcript); write each cell's file
    atomically; return what the manifest records of each (file, SHA-256, size, plugin
    fingerprints, replications). A cell of another kind than a duel (a competition, an
    extrapolation) is alone in its group; its files are under its kind's folder. ``identities`` holds
    :func:`isolated_cell` of each cell under isolation. ``progress`` shows a bar over the group's
    replications (a run in this process: the run's own bar moves per group). Replications
    before ``start`` are those the cells' files hold already (a top-up): kept, not computed."""
    rows = play_replications(group, seed, range(start, replications), isolation, secret_seed, identities,
                             progress=progress)
    rows = {cell.key: stored_rows(cell, out, start) + rows[cell.key] for cell in group}
    return write_cells(group, seed, rows, out, isolation, identities)


def play_replications(
    group: list[Cell],
    seed: int,
    replications: range,
    isolation: Isolation = "none",
    secret_seed: int | None = None,
    identities: dict[str, Any] | None = None,
    first_rows: dict[str, dict[str, Any]] | None = None,
    progress: bool | None = False,
) -> dict[str, list[dict[str, Any]]]:
    """The rows of ``replications`` of every cell of a transcript group (or of one cell of another
    kind), by cell key, single-threaded (``progress``: a bar over the cells' replications, below the run's),
    each played by its kind (:meth:`ladderlab.runs.cell_kinds.CellKind.play`).

    Isolated duels of the same attack are played a window at a time
    (:func:`ladderlab.isolation.protocol.play_together`), with the same results; the duels of a window
    share its wall time evenly."""
    identities = identities or {}
    first_rows = first_rows or {}
    kind = kind_of(group[0])

    def play(cell: Any, replication: int) -> Any:
        return kind.play(cell, seed, replication, isolation, secret_seed, identities.get(cell.key))

    plays = [(cell, replication) for replication in replications for cell in group
             if not (replication == replications.start and cell.key in first_rows)]
    together = isolation == "process" and kind.plays_together
    if together:  # a window plays one attack's code
        plays.sort(key=lambda pair: str(pair[0].attack[0]))
    windows = [plays[start:start + WINDOW] for start in range(0, len(plays), WINDOW)] if together else [[pair] for pair in plays]
    found: dict[tuple[str, int], dict[str, Any]] = {}
    with cell_worker(), progress_bar(total=len(plays), progress=progress, desc=group[0].label, unit="replication",
                                     position=1, leave=False) as bar:
        for window in windows:
            if len(window) == 1:  # a duel alone: nothing to share
                played = [play(*window[0])]
            else:
                began = time.perf_counter()
                played = play_together([functools.partial(play, *pair) for pair in window])
                share = (time.perf_counter() - began) / len(played)
                for row in played:
                    row["wall_time"] = share
            found.update(zip(((cell.key, replication) for cell, replication in window), played))
            bar.update(len(window))
    return {cell.key: [found.get((cell.key, replication)) or first_rows[cell.key] for replication in replications]
            for cell in group}


def write_cells(group: list[Any], seed: int, rows: dict[str, list[Any]], out: str,
                isolation: Isolation = "none", identities: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Write each cell of a group from its rows (every replication, in order: its kind's
    :meth:`~ladderlab.runs.cell_kinds.CellKind.result_table`); return the manifest records. Under
    isolation, the plugin tokens come from what the run computed of each cell (``identities``)."""
    kind = kind_of(group[0])
    return [_write_cell(cell, kind.result_table(cell, seed, rows[cell.key]), out,
                        plugin_tokens(cell, rows[cell.key], isolation, (identities or {}).get(cell.key)),
                        len(rows[cell.key])) for cell in group]


@dataclasses.dataclass
class Piece:
    """The rows of a range of replications of one transcript group, for the run to write once
    every range of the group is back (a long group split so that no worker idles at the end)."""

    group: int
    start: int
    rows: dict[str, list[dict[str, Any]]]


def run_piece(index: int, group: list[Cell], seed: int, start: int, stop: int, secret_seed: int | None,
              first_rows: dict[str, dict[str, Any]] | None) -> Piece:
    """Replications ``start`` … ``stop`` − 1 of group ``index`` (see :class:`Piece`)."""
    return Piece(index, start, play_replications(group, seed, range(start, stop), secret_seed=secret_seed,
                                                 first_rows=first_rows))


def write_table(path: Path, table: pa.Table) -> bytes:
    """Write ``table`` as Parquet to ``path`` atomically; return the bytes written."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    _write_atomically(path, data)
    return data


def plugin_tokens(cell: Any, rows: Sequence[Any] = (), isolation: Isolation = "none", isolated: Any = None,
                  ) -> dict[str, str | None]:
    """The fingerprint tokens of the plugins that computed a cell, by role (its kind's
    :meth:`~ladderlab.runs.cell_kinds.CellKind.tokens`). An attack played in its own process has the
    fingerprint of the snapshot its sandbox showed, hashed by this process
    (:func:`ladderlab.isolation.protocol.snapshot_fingerprint`), which never loaded its code."""
    return kind_of(cell).tokens(cell, rows, isolation, isolated)


def _write_cell(cell: Any, table: pa.Table, out: str, plugins: dict[str, str | None],
                replications: int) -> dict[str, Any]:
    """Write a cell's table atomically; return its manifest record (file, SHA-256, size, plugin tokens,
    and how many replications, 0 on, the file holds)."""
    path = Path(out) / cell.directory / f"{cell.key}.parquet"
    data = write_table(path, table)
    return {"key": cell.key, "file": str(path.relative_to(out)), "sha256": sha256_bytes(data),
            "bytes": len(data), "plugins": plugins, "replications": replications,
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def first_replication(group: list[Any], seed: int, secret_seed: int | None, start: int = 0,
                      ) -> tuple[float, dict[str, dict[str, Any]]]:
    """Replication ``start`` (the first the group lacks) of every cell of a group, single-threaded:
    its CPU seconds, and the rows, by cell key."""
    began = time.process_time()
    rows = {key: replication[0] for key, replication
            in play_replications(group, seed, range(start, start + 1), secret_seed=secret_seed).items()}
    return time.process_time() - began, rows


def longest_first(
    groups: list[list[Cell]], seed: int, replications: int, jobs: int, secret_seed: int | None,
    starts: Sequence[int] | None = None,
) -> tuple[list[tuple[int, int, int]], dict[str, dict[str, Any]]]:
    """The jobs of :func:`replication_ranges`, from the CPU time of the first replication each
    group lacks (``starts``, 0 by default), and that replication's rows (played in parallel first, and kept)."""
    starts = list(starts) if starts is not None else [0] * len(groups)
    pilots = joblib.Parallel(n_jobs=jobs)(joblib.delayed(first_replication)(group, seed, secret_seed, start)
                                          for group, start in zip(groups, starts))
    first_rows = {key: row for _, rows in pilots for key, row in rows.items()}
    workers = jobs if jobs > 0 else joblib.cpu_count()
    return replication_ranges([cost for cost, _ in pilots], replications, workers, starts), first_rows


def replication_ranges(costs: Sequence[float], replications: int, workers: int,
                       starts: Sequence[int] | None = None) -> list[tuple[int, int, int]]:
    """Jobs as (group index, first replication, last + 1), longest first by estimated cost
    (a group's cost per replication × the replications it lacks, from ``starts`` on, 0 by default,
    to ``replications``). A group that costs more than a quarter of an even share per worker is
    split into ranges of about that cost."""
    starts = list(starts) if starts is not None else [0] * len(costs)
    totals = [cost * (replications - start) for cost, start in zip(costs, starts)]
    target = sum(totals) / (4 * workers)
    jobs = []
    for index, (total, start) in enumerate(zip(totals, starts)):
        lacking = replications - start
        count = min(lacking, max(1, math.ceil(total / target))) if target > 0 else 1
        bounds = [start + round(i * lacking / count) for i in range(count + 1)]
        jobs += [(index, first, stop) for first, stop in zip(bounds[:-1], bounds[1:])]
    return sorted(jobs, key=lambda job: -costs[job[0]] * (job[2] - job[1]))


def estimate(scenario: BaseScenario, out: Path, jobs: int = 1, force: bool = False) -> workload.Estimate:
    """The work left of ``scenario`` run into ``out`` (:func:`ladderlab.runs.workload.scenario_work`):
    the cells ``out`` holds already are not estimated again, and the estimate says how many they are."""
    pending = {cell.key for cell in pending_cells(scenario, out)}
    return workload.scenario_work(scenario, jobs, force, finished={cell.key for cell in cells(scenario)} - pending)


def pending_cells(scenario: BaseScenario, out: Path) -> list[Any]:
    """The scenario's cells that have no verified result file yet, or one with fewer replications
    than the scenario's (a run whose replications were raised: :func:`grows`)."""
    manifest = rundir.read_manifest(out) if (out / "manifest.json").exists() else {}
    held = held_replications(manifest)
    return [cell for cell in cells(scenario)
            if held.get(cell.key, 0) < scenario.replications or not (out / cell.directory / f"{cell.key}.parquet").exists()]


def stored_rows(cell: Any, out: str | Path, count: int) -> list[Any]:
    """The rows of replications 0 … ``count`` − 1 that a finished cell's file holds (checked by :func:`verify`),
    as its kind played them (:meth:`~ladderlab.runs.cell_kinds.CellKind.stored_rows`)."""
    return kind_of(cell).stored_rows(pq.read_table(Path(out) / cell.directory / f"{cell.key}.parquet")) if count else []


def _stored_replications(path: Path) -> list[int]:
    """The replications a cell file holds, in the order of their first row."""
    return list(dict.fromkeys(pq.read_table(path, columns=["replication"]).column("replication").to_pylist()))


def _current_tokens(scenario: BaseScenario) -> dict[str, dict[str, str | None]]:
    """Per cell key: the fingerprint tokens its plugins have now."""
    return {cell.key: plugin_tokens(cell) for cell in cells(scenario)}


def verify(scenario: BaseScenario, out: Path, rerun_stale: bool = False) -> dict[str, Any]:
    """Check every finished cell of ``out`` before a run resumes (call it under the lock).

    A damaged cell file (unreadable, not matching its checksum, or without one) is moved
    into ``quarantine/`` and computed again. A cell computed by a plugin whose version or
    source changed since is refused (:class:`~ladderlab.runs.rundir.StaleCellsError`, naming
    the cells), or with ``rerun_stale`` quarantined and computed again. Returns the
    updated manifest.
    """
    manifest = rundir.read_manifest(out)
    completed: dict[str, dict[str, Any]] = manifest.setdefault("completed", {})
    labels = {cell.key: _label(cell) for cell in cells(scenario)}
    changed = False
    for path, reason in rundir.damaged_cells(out, completed).items():
        target = rundir.quarantine(out, path, reason)
        log.warning("ladderlab: cell %s (%s): %s is damaged: %s; moved to %s, it will be computed again",
                    labels.get(path.stem, "not in this scenario"), path.stem, path.relative_to(out), reason,
                    target.relative_to(out))
        changed |= completed.pop(path.stem, None) is not None
    for key in [key for key, record in completed.items() if not (out / record["file"]).exists()]:
        log.warning("ladderlab: cell %s (%s): its file is missing; it will be computed again", labels.get(key, "?"), key)
        del completed[key]
        changed = True
    for key, count in held_replications(manifest).items():
        path = out / completed[key]["file"]
        if count < scenario.replications and key in labels and _stored_replications(path) != list(range(count)):
            reason = f"it does not hold replications 0 to {count - 1}, as the manifest records"
            target = rundir.quarantine(out, path, reason)
            log.warning("ladderlab: cell %s (%s): %s; moved to %s, it will be computed again",
                        labels[key], key, reason, target.relative_to(out))
            del completed[key]
            changed = True
    current = _current_tokens(scenario)
    stale = {key: [role for role, token in record.get("plugins", {}).items() if token != current[key].get(role)]
             for key, record in completed.items() if key in current}
    stale = {key: roles for key, roles in stale.items() if roles}
    if stale and not rerun_stale:
        lines = [f"  - {labels[key]}: {', '.join(_changed_plugin(scenario, key, role) for role in roles)}"
                 for key, roles in stale.items()]
        raise rundir.StaleCellsError(
            f"{out}: {len(stale)} finished cells were computed by a plugin that has changed since "
            "(another version or source):\n" + "\n".join(lines)
            + "\nre-run them with --rerun-stale (rerun_stale=True), or choose another --out"
        )
    for key, roles in stale.items():
        target = rundir.quarantine(out, out / completed[key]["file"], f"stale: {', '.join(roles)} changed since it was computed")
        log.warning("ladderlab: cell %s: computed by an older %s; moved to %s, it will be computed again",
                    labels[key], " and ".join(roles), target.relative_to(out))
        del completed[key]
        changed = True
    # every cell left was computed by the plugins' current versions; ladderlab's own stays the first run's
    versions = {**manifest.get("versions", {}),
                **{name: version for name, version in _versions(scenario).items() if name != "ladderlab"}}
    if versions != manifest.get("versions"):
        manifest["versions"] = versions
        changed = True
    manifest["plugins"] = {**manifest.get("plugins", {}), **_plugin_fingerprints(scenario)}
    if changed:
        _write_atomically(out / "manifest.json", json.dumps(manifest, indent=2).encode())
    return manifest


def _label(cell: Any) -> str:
    if not isinstance(cell, Cell):
        return cell.label
    return " × ".join(plugin_label(plugin_id, json.dumps(params, sort_keys=True))
                      for plugin_id, params in (cell.task, cell.mechanism, cell.attack))


def _changed_plugin(scenario: BaseScenario, key: str, role: str) -> str:
    cell = next(cell for cell in cells(scenario) if cell.key == key)
    plugin_id = next(plugin_id for name, _, plugin_id in _cell_plugins(cell) if name == role)
    return f"{role.split()[0]} {location_free(plugin_id)!r}"


@sandboxed_when_isolated
def run(
    scenario: BaseScenario | str | Path,
    out: str | Path | None = None,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    replications: int | None = None,
    progress: bool | None = None,
    isolation: Isolation = "none",
    rerun_stale: bool = False,
    secret_seed: int | None = None,
    force: bool = False,
) -> pd.DataFrame:
    """Run (or resume) a scenario into ``out``; return one row per cell × replication.

    Before anything runs, the scenario's work is estimated (:mod:`ladderlab.runs.workload`); one
    whose memory cannot fit raises :class:`~ladderlab.runs.workload.TooLarge` unless ``force``.

    ``backend="dask"`` runs the cells on the Dask cluster at ``scheduler`` through
    joblib's dask backend. Results do not depend on the backend or on ``jobs``.
    ``isolation="process"`` plays every attack, and every competition team's policy, in a
    sandboxed process of its own (:mod:`ladderlab.isolation.protocol`, :mod:`ladderlab.isolation.sandbox`);
    the cells then run in fresh worker processes, never in this one, which has loaded the
    attacks' code to validate the scenario. ``rerun_stale`` computes again the cells whose
    plugin changed; ``secret_seed`` (:func:`ladderlab.seeding.read_secret_seed`) hides the
    simulated data from anyone who knows only the scenario's seed.
    """
    if not isinstance(scenario, BaseScenario):
        scenario = load(scenario, replications)
    elif replications is not None:
        scenario = scenario.model_copy(update={"replications": replications})
    check_isolation(isolation)
    check_backend(backend, scheduler, jobs)
    check_accounts(scenario, isolation, secret_seed)
    out = Path(out) if out is not None else Path("runs") / scenario.name
    work = estimate(scenario, out, jobs, force)
    workload.refuse_if_too_large(work, force, hint=SMALLER_SCENARIO)
    preflight(scenario)
    log.info("ladderlab: estimated %s", work)
    with rundir.RunLock(out):
        rundir.remove_temporary_files(out)
        prepare(scenario, out, secret_seed)
        manifest = verify(scenario, out, rerun_stale)
        todo = pending_cells(scenario, out)
        held = held_replications(manifest)
        groups = [[cell for cell in group if held.get(cell.key, 0) == count]
                  for group in transcript_groups(todo) for count in sorted({held.get(cell.key, 0) for cell in group})]
        starts = [held.get(group[0].key, 0) for group in groups]
        isolated = {cell.key: isolated_cell(cell) for cell in todo} if isolation == "process" else {}
        identities = {key: value for key, value in isolated.items() if value is not None}
        jobs_to_run: list[Any] = []
        pieces_of: dict[int, int] = {}
        fresh_workers = isolation == "process" and (jobs != 1 or loaded_foreign_attack_code())
        if backend == "loky" and isolation == "none" and jobs != 1 and groups:
            pieces, first_rows = longest_first(groups, scenario.seed, scenario.replications, jobs, secret_seed, starts)
            for index, start, stop in pieces:
                pieces_of[index] = pieces_of.get(index, 0) + 1
                group = groups[index]
                rows = {cell.key: first_rows[cell.key] for cell in group} if start == starts[index] else None
                jobs_to_run.append(joblib.delayed(run_piece)(index, group, scenario.seed, start, stop, secret_seed, rows))
        else:
            in_process = backend == "loky" and jobs == 1 and not fresh_workers
            jobs_to_run = [
                joblib.delayed(run_cells)(group, scenario.seed, scenario.replications, str(out), isolation, secret_seed,
                                          {cell.key: identities[cell.key] for cell in group if cell.key in identities},
                                          progress if in_process else False, start)
                for group, start in zip(groups, starts)
            ]
        played: dict[int, list[Piece]] = {}

        def finished_cells(result: list[dict[str, Any]] | Piece) -> list[dict[str, Any]]:
            """The manifest records of the cells a job finished (a group's last piece writes them)."""
            if not isinstance(result, Piece):
                return result
            played.setdefault(result.group, []).append(result)
            if len(played[result.group]) < pieces_of[result.group]:
                return []
            group = groups[result.group]
            ordered = sorted(played.pop(result.group), key=lambda piece: piece.start)
            rows = {cell.key: stored_rows(cell, out, starts[result.group])
                    + [row for piece in ordered for row in piece.rows[cell.key]] for cell in group}
            return write_cells(group, scenario.seed, rows, str(out))

        def record(results: Any) -> None:
            for result in progress_bar(results, progress=progress, total=len(jobs_to_run), desc="jobs", unit="job"):
                for cell_record in finished_cells(result):
                    manifest["completed"][cell_record["key"]] = cell_record
                _write_atomically(out / "manifest.json", json.dumps(manifest, indent=2).encode())

        tasks = iter(jobs_to_run)
        if backend == "dask":
            from dask.distributed import Client

            with Client(scheduler, timeout=SCHEDULER_TIMEOUT) if scheduler else Client(processes=False):
                with joblib.parallel_backend("dask"):
                    record(joblib.Parallel(return_as="generator")(tasks))
        elif fresh_workers:
            workers = None if jobs == -1 else jobs
            with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                record(future.result() for future in as_completed([pool.submit(function, *args, **kwargs)
                                                                   for function, args, kwargs in jobs_to_run]))
        else:
            with warnings.catch_warnings():
                # loky retires a worker whose memory grew by 300 MB (a long cell's transcripts)
                # after its job, and warns when it starts the replacement; no job is lost
                warnings.filterwarnings("ignore", "A worker stopped while some jobs were given", UserWarning)
                record(joblib.Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks))
    return load_results(out)


def loaded_foreign_attack_code() -> bool:
    """Whether this process has loaded attack code other than ladderlab's own attacks (a
    plugin file, a third-party plugin): an isolated run then plays its cells in fresh worker
    processes that never load it, rather than here."""
    classes, pending = set(), [Attack]
    while pending:
        for cls in pending.pop().__subclasses__():
            if cls not in classes:
                classes.add(cls)
                pending.append(cls)
    return (any(not cls.__module__.startswith("ladderlab.") for cls in classes)
            or any(name.startswith(LOCAL_MODULE_PREFIX) for name in sys.modules))


SMALLER_SCENARIO = "fewer replications, budgets, rounds, teams or accounts, smaller tasks, or fewer --jobs need less"


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


def load_results(out: str | Path, submissions: bool = False) -> pd.DataFrame:
    """Every verified cell's rows; ``submissions=True`` keeps the per-submission score lists.

    A cell file that does not match the manifest's checksum (or has none) is left out
    with a warning naming it; :func:`verified_cell_files` says which and why.
    """
    files, damaged = verified_cell_files(out)
    for path, reason in damaged.items():
        log.warning("ladderlab: left out %s: %s", path.relative_to(out), reason)
    return read_cell_files(files, submissions)


def verified_cell_files(out: str | Path) -> tuple[list[Path], dict[Path, str]]:
    """The duel cell files of ``out`` that match their checksums, and the others with the reason."""
    return rundir.verified_files(Path(out), Cell.directory)


def read_cell_files(files: list[Path], submissions: bool = False) -> pd.DataFrame:
    """The rows of the given cell files, sorted by cell and replication."""
    if not files:
        return pd.DataFrame()

    def columns(path: Path) -> list[str]:  # a cell written before a column was added lacks it
        names = pq.read_schema(path).names
        return names if submissions else [name for name in names if name not in SUBMISSION_COLUMNS]

    frames = [pq.read_table(f, columns=columns(f)).to_pandas() for f in files]
    return pd.concat(frames, ignore_index=True).sort_values(["cell", "replication"], ignore_index=True)
