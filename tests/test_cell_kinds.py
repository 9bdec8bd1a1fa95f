"""The runner plays kinds of cells registered under an entry-point group (ladderlab.runs.cell_kinds, issue 48):
every path that plays cells finds them (a script, the command line, loky and Dask workers, an isolated run's
fresh workers) and gives the same values; a third-party package adds a kind of its own the same way."""

import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from ladderlab.reports import report
from ladderlab.runs import cell_kinds, runner
from ladderlab.runs.scenario import ScenarioError, load

EVERY_KIND = """
schema_version = 1
name = "every-kind"
replications = 2
seed = 11

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 100, n_holdout = 300 } }]
mechanisms = [{ id = "ladder" }]
attacks = [{ id = "boosting", params = { k = 20 }, budget = 20 },
           { id = "boosting", params = { k = 20 }, budget = 10, accounts = 3 }]

[[competition]]
tasks = [{ id = "latent-classification", params = { n_train = 200, n_public = 100, n_holdout = 300, n_features = 4 } }]
mechanisms = [{ id = "kaggle" }]
rules = [{ rounds = 2, per_round = 2, public_fraction = 0.4, selection = 2 }]

[[competition.mixes]]
name = "mix"
teams = [{ policy = "progressive-analyst", count = 3, params = { view = 2, batch = 1 } }]

[[extrapolation]]
mixture = { classes = 5, dimension = 3, training = 8, testing = 10 }
classifiers = ["qda"]
step = 2
"""
"""A duel, a duel with three accounts, a competition and an extrapolation: one cell of each kind."""


def values(out) -> dict[str, pd.DataFrame]:
    """Every value a run directory holds, of every kind, but the times it took."""
    run = report.load_run(out)
    frames = {"duels": run.results, "competitions": run.competitions, "extrapolations": run.extrapolations}
    return {name: frame.drop(columns=[c for c in ("wall_time", "cpu_time") if c in frame]).reset_index(drop=True)
            for name, frame in frames.items()}


def assert_same_values(out, other) -> None:
    ours, theirs = values(out), values(other)
    for name in ours:
        pd.testing.assert_frame_equal(ours[name], theirs[name], check_exact=True, obj=name)


def ladderlab(*arguments, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ladderlab", "--quiet", *arguments], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_built_in_kinds_register_through_the_entry_point_group():
    """Duels first (their cells come first in a scenario), then the other kinds by table key."""
    kinds = cell_kinds.kinds()
    built_in = {"duel": "ladderlab.runs.duels", "sybil-duel": "ladderlab.competition.accounts",
                "competition": "ladderlab.competition.cell_kind", "extrapolation": "ladderlab.extrapolation.cell_kind"}
    assert {name: type(kinds[name]).__module__ for name in built_in} == built_in
    keys = [kind.table_key for kind in cell_kinds.table_kinds()]
    assert keys[0] == "matrix" and keys[1:] == sorted(keys[1:]) and {"competition", "extrapolation"} <= set(keys)


@pytest.mark.slow
def test_every_kind_plays_alike_from_python_the_command_line_loky_and_dask(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "every-kind.toml"
    path.write_text(EVERY_KIND)
    cells = runner.cells(load(path))
    assert sorted(cell.kind for cell in cells) == ["competition", "duel", "extrapolation", "sybil-duel"]
    runner.run(path, tmp_path / "python")
    played = values(tmp_path / "python")
    assert len(played["duels"]) == 4 and (played["duels"].status == "ok").all()
    assert len(played["competitions"]) == 2 and len(played["extrapolations"]) > 2
    command = ladderlab("run", str(path), "--out", str(tmp_path / "command"), cwd=tmp_path)
    assert command.returncode == 0, command.stderr
    runner.run(path, tmp_path / "loky", jobs=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        runner.run(path, tmp_path / "dask", backend="dask", scheduler=cluster.scheduler_address)
    for other in ("command", "loky", "dask"):
        assert_same_values(tmp_path / "python", tmp_path / other)


@pytest.mark.slow
def test_an_isolated_run_plays_every_kind_in_fresh_workers_alike(tmp_path):
    """Under isolation the cells play in fresh worker processes (spawned), which load the kinds themselves."""
    from ladderlab.isolation import sandbox

    try:
        sandbox.require()
    except ValueError as reason:
        pytest.skip(str(reason))
    path = tmp_path / "isolated.toml"
    path.write_text(EVERY_KIND.replace(",\n           { id = \"boosting\", params = { k = 20 }, budget = 10, accounts = 3 }", ""))
    runner.run(path, tmp_path / "plain")
    runner.run(path, tmp_path / "isolated", isolation="process", jobs=2)
    assert_same_values(tmp_path / "plain", tmp_path / "isolated")


COIN_KIND = '''
import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa
from pydantic import Field, StrictInt

from ladderlab.runs import workload
from ladderlab.runs.cell_kinds import CellKind
from ladderlab.runs.schema import StrictModel
from ladderlab.seeding import stream


class CoinTable(StrictModel):
    flips: list[StrictInt] = Field(min_length=1)


@dataclass(frozen=True)
class CoinCell:
    flips: int
    kind: str = "coin"
    directory: ClassVar[str] = "coins"

    @property
    def key(self):
        return f"coin-{self.flips}"

    @property
    def label(self):
        return f"{self.flips} coin flips"

    def plugin_ids(self):
        return []


class CoinKind(CellKind):
    name = "coin"
    table_key = "coin"
    table = CoinTable
    directory = "coins"

    def cells(self, tables):
        return [CoinCell(flips) for table in tables for flips in table.flips]

    def play(self, cell, seed, replication, isolation="none", secret_seed=None, isolated=None):
        heads = int(stream(seed, "coin", cell.flips, replication).integers(0, 2, cell.flips).sum())
        return {"replication": replication, "heads": heads}

    def result_table(self, cell, seed, rows):
        return pa.table({"cell": [cell.key] * len(rows), "seed": [seed] * len(rows),
                         "replication": [row["replication"] for row in rows], "heads": [row["heads"] for row in rows]})

    def estimate(self, group, replications, force=False):
        return workload.Estimate(group[0].label, None, workload.WORKING_BYTES, 0.0)


COINS = CoinKind()
'''


@pytest.mark.slow
def test_a_third_party_package_adds_a_kind_of_cell_with_a_table_of_its_own(tmp_path):
    """A package advertising a kind under the entry-point group: its table is a scenario key (with
    "did you mean" for a typo), its cells are played, written, resumed and listed in the manifest."""
    site = tmp_path / "site"
    (site / "coinkind-1.0.dist-info").mkdir(parents=True)
    (site / "coinkind-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: coinkind\nVersion: 1.0\n")
    (site / "coinkind-1.0.dist-info" / "entry_points.txt").write_text("[ladderlab.cell_kinds]\ncoin = coinkind:COINS\n")
    (site / "coinkind.py").write_text(textwrap.dedent(COIN_KIND))
    scenario = tmp_path / "coins.toml"
    scenario.write_text(textwrap.dedent("""
        schema_version = 1
        name = "coins"
        replications = 3

        [[matrix]]
        tasks = [{ id = "random-labels", params = { n_public = 100, n_holdout = 300 } }]
        mechanisms = [{ id = "kaggle" }]
        attacks = [{ id = "boosting", params = { k = 10 } }]

        [[coin]]
        flips = [10, 1000]
        """))
    env = {**os.environ, "PYTHONPATH": str(site)}
    played = ladderlab("run", str(scenario), "--out", str(tmp_path / "run"), cwd=tmp_path, env=env)
    assert played.returncode == 0, played.stderr
    heads = pd.read_parquet(tmp_path / "run" / "coins" / "coin-1000.parquet")
    assert heads.replication.tolist() == [0, 1, 2] and heads.heads.between(400, 600).all()
    resumed = ladderlab("run", str(scenario), "--out", str(tmp_path / "run"), cwd=tmp_path, env=env)
    assert resumed.returncode == 0 and pd.read_parquet(tmp_path / "run" / "coins" / "coin-1000.parquet").equals(heads)
    scenario.write_text(scenario.read_text().replace("[[coin]]", "[[coins]]"))
    typo = ladderlab("run", str(scenario), "--out", str(tmp_path / "other"), cwd=tmp_path, env=env)
    assert typo.returncode == 2 and "unknown key 'coins'; did you mean 'coin'" in typo.stderr
    without = ladderlab("run", str(scenario), "--out", str(tmp_path / "other"), cwd=tmp_path)
    assert without.returncode == 2 and "did you mean 'coin'" not in without.stderr


def test_a_scenario_without_the_newer_tables_keeps_its_hash():
    """A kind added after the first release hashes nothing when its tables are absent (run directories of
    older scenarios keep their hash); the first release's competition tables hashed their empty list."""
    scenario = load("quickstart")
    assert not scenario.extrapolation and scenario.identity() == "a4722b09a9cb861a"


def test_a_cell_of_an_unregistered_kind_is_named(tmp_path):
    class Stray:
        kind = "stray"

    with pytest.raises(ValueError, match="unknown kind of cell .* 'stray'"):
        cell_kinds.kind_of(Stray())
    with pytest.raises(ScenarioError, match="unknown key 'competitions'; did you mean 'competition'"):
        path = tmp_path / "typo.toml"
        path.write_text(EVERY_KIND.replace("[[competition]]", "[[competitions]]").replace("[[competition.mixes]]",
                                                                                         "[[competitions.mixes]]"))
        load(path)
