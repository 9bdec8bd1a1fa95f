"""A project folder that moves keeps its results: local plugins and challenge files are named as the
scenario writes them, and their contents, not their place, decide whether a finished cell is reused."""

import json
import shutil
import textwrap

import pandas as pd
import pytest

from ladderlab import rundir, runner
from tests.serve_helpers import write_challenge

SCENARIO = """
schema_version = 1
name = "moving"
replications = 3
seed = 11

[[matrix]]
tasks = [{ id = "challenge", params = { path = "data/contest.toml" } },
         { id = "random-labels", params = { n_public = 100, n_holdout = 300 } }]
mechanisms = [{ id = "kaggle" }, { id = "mechanisms/helped.py:Helped" }]
attacks = [{ id = "attacks/probing.py:Probing", params = { k = 20 }, budget = 30 }]
"""

HELPED = """
from ladderlab.mechanisms.kaggle import Kaggle

import helper


class Helped(Kaggle):
    id = "helped"

    def _release(self, P):
        return super()._release(P) + helper.SHIFT
"""

PROBING = """
from ladderlab.attacks.boosting import Boosting


class Probing(Boosting):
    id = "probing"
"""


def make_project(folder):
    """A scenario whose mechanism file imports a helper module, with a local attack and a challenge file."""
    (folder / "mechanisms").mkdir(parents=True)
    (folder / "attacks").mkdir()
    (folder / "mechanisms" / "helped.py").write_text(HELPED)
    (folder / "mechanisms" / "helper.py").write_text("SHIFT = 0.0\n")
    (folder / "attacks" / "probing.py").write_text(PROBING)
    write_challenge(folder / "data", n=200, name="contest")
    (folder / "scenario.toml").write_text(textwrap.dedent(SCENARIO))
    return folder / "scenario.toml"


class Interrupt(KeyboardInterrupt):
    """Ctrl-C after some cells were recorded."""


def interrupted_run(scenario, out, monkeypatch, cells_before_interrupt):
    """Run ``scenario`` into ``out`` until ``cells_before_interrupt`` cells are finished, then interrupt it."""
    finished = []
    run_cells = runner.run_cells

    def counting(*args, **kwargs):
        if len(finished) == cells_before_interrupt:
            raise Interrupt
        records = run_cells(*args, **kwargs)
        finished.extend(records)
        return records

    with monkeypatch.context() as patched:
        patched.setattr(runner, "run_cells", counting)
        with pytest.raises(Interrupt):
            runner.run(scenario, out)


def completed(out):
    return json.loads((out / "manifest.json").read_text())["completed"]


def comparable(results):
    return results.drop(columns=["wall_time"]).sort_values(["cell", "replication"], ignore_index=True)


def test_a_moved_project_reuses_its_finished_cells_and_recomputes_exactly_what_a_changed_helper_touches(
        tmp_path, monkeypatch):
    scenario = make_project(tmp_path / "project")
    in_place = runner.run(scenario, tmp_path / "project" / "uninterrupted")
    interrupted_run(scenario, tmp_path / "project" / "run", monkeypatch, cells_before_interrupt=2)
    before_move = completed(tmp_path / "project" / "run")
    assert len(before_move) == 2

    shutil.move(tmp_path / "project", tmp_path / "elsewhere")
    moved = tmp_path / "elsewhere"
    resumed = runner.run(moved / "scenario.toml", moved / "run")

    after_move = completed(moved / "run")
    reused = [key for key, record in before_move.items() if after_move.get(key) == record]
    assert len(reused) == 2 and len(after_move) == 4
    pd.testing.assert_frame_equal(comparable(resumed), comparable(in_place))

    (moved / "mechanisms" / "helper.py").write_text("SHIFT = 0.0 \n")  # one byte more: the same value, new source
    with pytest.raises(rundir.StaleCellsError, match=r"(?s)2 finished cells .*mechanism 'mechanisms/helped.py:Helped'"):
        runner.run(moved / "scenario.toml", moved / "run")
    again = runner.run(moved / "scenario.toml", moved / "run", rerun_stale=True)
    kept = [key for key, record in after_move.items() if completed(moved / "run")[key] == record]
    helped = {cell["key"] for cell in json.loads((moved / "run" / "manifest.json").read_text())["cells"]
              if cell["mechanism"][0] == "mechanisms/helped.py:Helped"}
    assert set(after_move) - set(kept) == helped and len(helped) == 2
    pd.testing.assert_frame_equal(comparable(again), comparable(in_place))


def test_a_copied_run_directory_is_not_reused_for_another_plugin_of_the_same_name(tmp_path):
    scenario = make_project(tmp_path / "first")
    runner.run(scenario, tmp_path / "first" / "run")
    other = make_project(tmp_path / "second")
    (tmp_path / "second" / "mechanisms" / "helper.py").write_text("SHIFT = 0.5\n")
    shutil.copytree(tmp_path / "first" / "run", tmp_path / "second" / "run")
    with pytest.raises(rundir.StaleCellsError, match=r"(?s)2 finished cells .*mechanism 'mechanisms/helped.py:Helped'"):
        runner.run(other, tmp_path / "second" / "run")


def test_a_changed_challenge_label_makes_exactly_its_cells_stale_after_a_move(tmp_path):
    scenario = make_project(tmp_path / "project")
    runner.run(scenario, tmp_path / "project" / "run")
    shutil.move(tmp_path / "project", tmp_path / "moved")
    labels = tmp_path / "moved" / "data" / "labels.csv"
    table = pd.read_csv(labels)
    table.loc[0, "label"] = 1 - table.loc[0, "label"]
    table.to_csv(labels, index=False)
    with pytest.raises(rundir.StaleCellsError, match=r"(?s)2 finished cells .*challenge\(path=data/contest.toml\).*task"):
        runner.run(tmp_path / "moved" / "scenario.toml", tmp_path / "moved" / "run")
