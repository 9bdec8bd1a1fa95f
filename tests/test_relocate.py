"""A project folder that moves keeps its results: local plugins and challenge files are named as the
scenario writes them, and their contents, not their place, decide whether a finished cell is reused."""

import json
import shutil
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from ladderlab.certification.challenge_certify import certify_challenge
from ladderlab.plugin import fingerprint, fingerprint_token
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import rundir, runner
from ladderlab.runs.rundir import RunDirectoryError
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


LAYOUT_1 = Path(__file__).parent / "data" / "layout1" / "project"
"""A finished run directory written by ladderlab before names were location-free (see its README)."""
LAYOUT_1_WRITTEN_IN = "/tmp/relocate-layout1/project"


def copy_layout_1(fixture: Path, written_in: str, destination: Path) -> None:
    """Copy a layout-1 fixture to ``destination`` with the plugin fingerprints its manifest recorded
    brought up to the code as it is now. They are hashes of the plugins' source files, built-in
    ones (kaggle.py, tasks.py) among them, so any later edit of those would make every cell stale;
    these tests are about reading the layout, and staleness is tested on fresh run directories.
    Each recorded token becomes the token the same plugin has now (local files loaded from the copy)."""
    shutil.copytree(fixture, destination)
    manifest_path = next(destination.rglob("manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    current: dict[str, str] = {}
    for name, recorded in manifest["plugins"].items():
        kind, _, plugin_id = name.partition(":")
        registry = {"task": TASKS, "mechanism": MECHANISMS, "attack": ATTACKS}[kind]
        now = fingerprint(registry.get(plugin_id.replace(written_in, str(destination))))
        current[fingerprint_token(recorded)] = fingerprint_token(now)
        recorded["source_sha256"] = now["source_sha256"]
    for record in manifest["completed"].values():
        for role, token in record["plugins"].items():
            code, data_mark, data = token.partition(":data ")  # a task's token ends with its data's hash
            record["plugins"][role] = current[code] + data_mark + data
    manifest_path.write_text(json.dumps(manifest, indent=2))


def test_a_layout_1_run_directory_is_migrated_where_it_lies_now_and_keeps_every_finished_cell(tmp_path, caplog):
    copy_layout_1(LAYOUT_1, LAYOUT_1_WRITTEN_IN, tmp_path / "project")
    written_then = completed(tmp_path / "project" / "run")
    migrated = runner.run(tmp_path / "project" / "scenario.toml", tmp_path / "project" / "run")
    assert "migrated from layout 1" in caplog.text and "4 finished cells kept" in caplog.text
    manifest = json.loads((tmp_path / "project" / "run" / "manifest.json").read_text())
    assert manifest["layout"] == runner.LAYOUT
    assert [record["finished"] for record in manifest["completed"].values()] == [
        record["finished"] for record in written_then.values()]  # none computed again
    assert sorted(path.stem for path in (tmp_path / "project" / "run" / "cells").iterdir()) == sorted(manifest["completed"])
    assert not (tmp_path / "project" / "run" / "quarantine").exists()
    fresh = runner.run(tmp_path / "project" / "scenario.toml", tmp_path / "project" / "fresh")
    added = list(runner.CRASH_AND_SIDES)  # columns added since the layout-1 cells were written: they lack them
    pd.testing.assert_frame_equal(comparable(migrated).drop(columns=added), comparable(fresh).drop(columns=added))


def test_a_layout_1_run_directory_of_another_scenario_is_still_refused(tmp_path):
    copy_layout_1(LAYOUT_1, LAYOUT_1_WRITTEN_IN, tmp_path / "project")
    scenario = tmp_path / "project" / "scenario.toml"
    scenario.write_text(scenario.read_text().replace("seed = 11", "seed = 12"))
    with pytest.raises(RunDirectoryError, match="holds results of a different scenario"):
        runner.run(scenario, tmp_path / "project" / "run")
    assert "layout" not in json.loads((tmp_path / "project" / "run" / "manifest.json").read_text())


LAYOUT_1_OUTSIDE = Path(__file__).parent / "data" / "layout1-outside" / "project"
"""A layout-1 run directory whose only local file lies outside the scenario's folder (see its README)."""
LAYOUT_1_OUTSIDE_WRITTEN_IN = "/tmp/relocate-layout1-outside/project"


def test_a_layout_1_run_directory_whose_local_file_lies_outside_the_scenario_folder_is_migrated(tmp_path, caplog):
    copy_layout_1(LAYOUT_1_OUTSIDE, LAYOUT_1_OUTSIDE_WRITTEN_IN, tmp_path / "project")
    written_then = completed(tmp_path / "project" / "study" / "run")
    runner.run(tmp_path / "project" / "study" / "scenario.toml", tmp_path / "project" / "study" / "run")
    assert "migrated from layout 1" in caplog.text and "1 finished cells kept" in caplog.text
    manifest = json.loads((tmp_path / "project" / "study" / "run" / "manifest.json").read_text())
    assert manifest["layout"] == runner.LAYOUT
    assert [record["finished"] for record in manifest["completed"].values()] == [
        record["finished"] for record in written_then.values()]  # none computed again


def test_a_layout_1_run_directory_whose_local_file_is_not_where_it_was_is_refused_naming_it_and_what_to_do(tmp_path):
    """The shared folder renamed (and the scenario changed to name it): the file no longer lies,
    relative to the scenario, where it did, so no former folder gives the recorded hash."""
    copy_layout_1(LAYOUT_1_OUTSIDE, LAYOUT_1_OUTSIDE_WRITTEN_IN, tmp_path / "project")
    (tmp_path / "project" / "shared").rename(tmp_path / "project" / "lib")
    scenario = tmp_path / "project" / "study" / "scenario.toml"
    scenario.write_text(scenario.read_text().replace("../shared/", "../lib/"))
    with pytest.raises(RunDirectoryError, match=r"(?s)different scenario.*/tmp/relocate-layout1-outside/project/shared/"
                                                r"probing\.py:Probing.*relative to its folder as they were then"):
        runner.run(scenario, tmp_path / "project" / "study" / "run")
    assert "layout" not in json.loads((tmp_path / "project" / "study" / "run" / "manifest.json").read_text())


COMPETITION = """
[[competition]]
tasks = [{ id = "challenge", params = { path = "data/contest.toml" } }]
mechanisms = [{ id = "mechanisms/helped.py:Helped" }]
rules = [{ rounds = 2, per_round = 2, selection = 1 }]

[[competition.mixes]]
name = "mix"
teams = [{ policy = "attacks/probing.py:Probing", count = 2, params = { k = 10 } },
         { policy = "boosting", count = 1, params = { k = 10 } }]
"""


def test_a_moved_competition_keeps_its_finished_cells(tmp_path):
    scenario = make_project(tmp_path / "project")
    scenario.write_text(scenario.read_text() + COMPETITION)
    runner.run(scenario, tmp_path / "project" / "run")
    finished = completed(tmp_path / "project" / "run")
    shutil.move(tmp_path / "project", tmp_path / "moved")
    runner.run(tmp_path / "moved" / "scenario.toml", tmp_path / "moved" / "run")
    assert completed(tmp_path / "moved" / "run") == finished
    assert sum(record["file"].startswith("competitions/") for record in finished.values()) == 1


def chunks(battery):
    return {path.relative_to(battery): path.stat().st_mtime_ns for path in (battery / "chunks").rglob("*.parquet")}


def test_a_moved_project_certifies_from_the_battery_it_kept(tmp_path, monkeypatch):
    """``certify`` names the challenge file and the plugin files as given, relative to the working
    directory: run again from the moved project, it finds its battery (by the same key in the cache)
    and computes nothing again."""
    make_project(tmp_path / "project")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path / "project")
    options = dict(attacks=["attacks/probing.py:Probing(k=10)"], default_battery=False, replications=8,
                   honest_replications=1, budgets=[10])
    first = certify_challenge("data/contest.toml", "mechanisms/helped.py:Helped", **options)
    kept = chunks(Path(first["run_dir"]))
    shutil.move(tmp_path / "project", tmp_path / "moved")
    monkeypatch.chdir(tmp_path / "moved")
    second = certify_challenge("data/contest.toml", "mechanisms/helped.py:Helped", **options)
    assert second["run_dir"] == first["run_dir"] and chunks(Path(second["run_dir"])) == kept and kept
    assert second["battery"] == first["battery"]


def test_a_kept_battery_computed_by_a_plugin_that_changed_since_is_set_aside_and_computed_again(tmp_path, monkeypatch,
                                                                                                   caplog):
    make_project(tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    options = dict(attacks=["attacks/probing.py:Probing(k=10)"], default_battery=False, replications=8,
                   honest_replications=1, budgets=[10], run_dir="battery")
    certify_challenge("data/contest.toml", "mechanisms/helped.py:Helped", **options)
    kept = chunks(tmp_path / "project" / "battery")
    (tmp_path / "project" / "mechanisms" / "helper.py").write_text("SHIFT = 0.5\n")
    certify_challenge("data/contest.toml", "mechanisms/helped.py:Helped", **options)
    assert "computed by a plugin that has changed since" in caplog.text
    again = chunks(tmp_path / "project" / "battery")
    changed = [path for path in kept if again.get(path) != kept[path]]
    set_aside = list((tmp_path / "project" / "battery" / "quarantine").glob("chunks-*"))
    assert changed and len(set_aside) == len({path.parts[1] for path in changed})
    assert all(again.get(path) == kept[path] for path in kept if path not in changed)
