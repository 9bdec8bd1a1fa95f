"""The scenario runner: reproducible, resumable, parallel, with clear errors."""

import math

import numpy as np
import pandas as pd
import pytest

from ladderlab.cli.commands import main
from ladderlab.reports import report
from ladderlab.runs import runner
from ladderlab.runs.scenario import ScenarioError, builtin_scenarios, cells, load
from tests.helpers import SMALL, failing_mechanism, scenario_file


def comparable(results: pd.DataFrame) -> pd.DataFrame:
    return results.drop(columns=["wall_time"]).sort_values(["cell", "replication"], ignore_index=True)


def test_grid_expands_list_parameters(tmp_path):
    scenario = load(scenario_file(tmp_path))
    assert len(cells(scenario)) == 2 * 2
    assert {c.attack[1]["k"] for c in cells(scenario)} == {50, 100}


def test_interrupted_run_resumes_to_the_same_results(tmp_path):
    path = scenario_file(tmp_path)
    uninterrupted = runner.run(path, tmp_path / "a")
    scenario = load(path)
    runner.prepare(scenario, tmp_path / "b")
    first = cells(scenario)[0]
    runner.run_cell(first, scenario.seed, scenario.replications, str(tmp_path / "b"))  # then "killed"
    (tmp_path / "b" / "cells" / ".stale.parquet.tmp").write_bytes(b"half a file")  # a write in flight
    # the cell's file was renamed into place but its checksum never recorded: not trusted
    assert len(runner.pending_cells(scenario, tmp_path / "b")) == len(cells(scenario))
    resumed = runner.run(path, tmp_path / "b")
    pd.testing.assert_frame_equal(comparable(uninterrupted), comparable(resumed))


def test_rerun_skips_completed_cells(tmp_path):
    path = scenario_file(tmp_path)
    runner.run(path, tmp_path / "run")
    files = sorted((tmp_path / "run" / "cells").glob("*.parquet"))
    stamps = [f.stat().st_mtime_ns for f in files]
    runner.run(path, tmp_path / "run")
    assert [f.stat().st_mtime_ns for f in files] == stamps


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_workers(tmp_path):
    path = scenario_file(tmp_path)
    serial = runner.run(path, tmp_path / "serial", jobs=1)
    parallel = runner.run(path, tmp_path / "parallel", jobs=2)
    pd.testing.assert_frame_equal(comparable(serial), comparable(parallel))


def test_adding_a_mechanism_changes_no_other_result(tmp_path):
    """Streams derive from identities, not positions: common random numbers across scenarios."""
    alone = runner.run(scenario_file(tmp_path, '{ id = "ladder-boot", params = { b = 5 } }', "a.toml"), tmp_path / "a")
    more = runner.run(
        scenario_file(tmp_path, '{ id = "full-disclosure" }, { id = "ladder-boot", params = { b = 5 } }', "b.toml"), tmp_path / "b"
    )
    pd.testing.assert_frame_equal(comparable(alone), comparable(more[more.mechanism == "ladder-boot"]))


def test_a_failing_cell_is_recorded_and_the_rest_completes(tmp_path):
    path = scenario_file(tmp_path, failing_mechanism(tmp_path) + ', { id = "kaggle" }')
    results = runner.run(path, tmp_path / "run")
    failed = results[results.mechanism.str.endswith(":Failing")]
    assert len(failed) and (failed.status == "failed").all()
    assert failed.error.str.contains("the release failed on purpose").all()
    assert (results[results.mechanism == "kaggle"].status == "ok").all()


def test_incompatible_pairs_are_skipped_with_the_reason(tmp_path):
    text = SMALL.replace('"random-labels", params = { n_public = 200, n_holdout = 600 }', '"diabetes", params = { scorer = "ccc" }')
    text = text.replace('{ id = "boosting", params = { k = [50, 100], variant = "kaggle" } }', '{ id = "freedman" }')
    path = scenario_file(tmp_path, '{ id = "ladder-t" }, { id = "bayesboot-ladder", params = { B = 50 } }', text=text)
    results = runner.run(path, tmp_path / "run")
    skipped = results[results.mechanism == "ladder-t"]
    assert (skipped.status == "skipped").all() and skipped.error.str.contains("bayesboot-ladder").all()
    assert (results[results.mechanism == "bayesboot-ladder"].status == "ok").all()
    table = report.summary(results)
    assert table.set_index("mechanism").loc["ladder-t", "n_skipped"] == 3


@pytest.mark.slow
def test_dask_backend_equals_the_serial_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = scenario_file(tmp_path)
    serial = runner.run(path, tmp_path / "serial")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_dask = runner.run(path, tmp_path / "dask", backend="dask", scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(comparable(serial), comparable(on_dask))


def test_a_changed_scenario_is_refused_in_an_existing_run_directory(tmp_path):
    runner.run(scenario_file(tmp_path), tmp_path / "run")
    with pytest.raises(runner.RunDirectoryError, match="different scenario"):
        runner.run(scenario_file(tmp_path, '{ id = "kaggle" }'), tmp_path / "run")


@pytest.mark.parametrize(
    "change, message",
    [
        (("replications = 3", "replicatons = 3"), r"small.toml: replicatons: unknown key 'replicatons'; did you mean 'replications'"),
        (("replications = 3", 'replications = "many"'), r"small.toml: replications: Input should be a valid integer"),
        (('id = "boosting"', 'id = "bosting"'), r"matrix\[0\].attacks\[0\].id: unknown attack 'bosting'; did you mean 'boosting'"),
        (("k = [50, 100]", "kk = [50, 100]"), r"matrix\[0\].attacks\[0\].params.kk: unknown parameter of 'boosting' 'kk'; did you mean 'k'"),
        (("schema_version = 1", "schema_version = 2"), r"small.toml: schema_version: Input should be 1"),
        (("seed = 7", "seed = = 7"), r"small.toml: not valid TOML"),
    ],
)
def test_invalid_scenario_files_name_the_file_table_and_key(tmp_path, change, message):
    path = scenario_file(tmp_path, '{ id = "kaggle" }', text=SMALL.replace(*change))
    with pytest.raises(ScenarioError, match=message):
        load(path)


def test_unknown_scenario_name_suggests_builtins():
    with pytest.raises(ScenarioError, match="did you mean 'quickstart'"):
        load("quikstart")


def test_a_directory_named_like_a_builtin_scenario_does_not_hide_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart").mkdir()  # e.g. the run directory of `ladderlab run quickstart --out quickstart`
    assert load("quickstart").name == "quickstart"
    (tmp_path / "mine").mkdir()
    with pytest.raises(ScenarioError, match="mine: a directory, not a scenario file"):
        load("mine")


def test_every_builtin_scenario_is_valid_and_listed(capsys):
    for path in builtin_scenarios().values():
        assert cells(load(path))
    assert main(["list", "scenarios"]) == 0
    out = capsys.readouterr().out
    for name in builtin_scenarios():
        assert f"  {name} " in out


def test_quickstart_reproduces_the_papers_findings(tmp_path, capsys):
    """Kaggle overfits under boosting and the Ladder does not (Blum & Hardt Fig. 3); the t-test
    Ladder falls to step-forward further than LadderBoot (Chaibub Neto Fig. 6). Hoeffding at
    δ = 1e-9: a vector chosen without looking has public loss ≥ ½ − 0.051 at n = 4000."""
    assert main(["run", "quickstart", "--out", str(tmp_path / "qs")]) == 0
    assert "Δ median [95%]" in capsys.readouterr().out
    results = runner.load_results(tmp_path / "qs")
    assert (results.status == "ok").all()
    median = results.groupby(["mechanism", "attack_params"]).median(numeric_only=True)
    margin = math.sqrt(math.log(1 / 1e-9) / (2 * 4000))
    kaggle = median.loc[("kaggle", '{"k": 400, "variant": "kaggle"}')]
    ladder = median.loc[("ladder-free", '{"k": 400, "variant": "ladder"}')]
    assert kaggle.final_released < 0.5 - margin < ladder.final_released
    assert abs(kaggle.final_final - 0.5) < 0.02 and abs(ladder.final_final - 0.5) < 0.02
    step = results[results.attack == "step-forward"].groupby("mechanism").delta.median()
    assert step["ladder-t"] < step["ladder-boot"] < 0


def test_per_submission_records_are_kept(tmp_path):
    runner.run(scenario_file(tmp_path, '{ id = "kaggle" }'), tmp_path / "run")
    results = runner.load_results(tmp_path / "run", submissions=True)
    row = results.iloc[0]
    assert len(row.released) == len(row.public) == len(row.final) == row.submissions + 1
    np.testing.assert_allclose(row.released, np.round(np.asarray(row.public) / 1e-5) * 1e-5)


def test_a_group_that_would_keep_one_worker_busy_alone_is_split_into_replication_ranges():
    jobs = runner.replication_ranges([10.0, 1.0, 1.0, 0.0], replications=100, workers=2)
    for index in range(4):  # each group's ranges cover its replications once, in order
        ranges = sorted((first, stop) for group, first, stop in jobs if group == index)
        assert ranges[0][0] == 0 and ranges[-1][1] == 100
        assert all(stop == first for (_, stop), (first, _) in zip(ranges[:-1], ranges[1:]))
    pieces = [stop - first for group, first, stop in jobs if group == 0]
    target = 12 / (4 * 2) * 100  # a quarter of an even share per worker
    assert len(pieces) == 7 and max(pieces) * 10.0 <= target
    assert [group for group, _, _ in jobs].count(1) == 1
    costs = [[10.0, 1.0, 1.0, 0.0][group] * (stop - first) for group, first, stop in jobs]
    assert costs == sorted(costs, reverse=True)


def test_the_refusal_of_a_changed_scenario_names_what_changed(tmp_path):
    runner.run(scenario_file(tmp_path), tmp_path / "run")
    reseeded = scenario_file(tmp_path, name="reseeded.toml")
    reseeded.write_text(reseeded.read_text().replace("seed = 7", "seed = 8"))
    with pytest.raises(runner.RunDirectoryError, match=r"different scenario \(hash \w+, this one \w+; "
                                                       r"seed: 7 there, 8 here\): choose another --out"):
        runner.run(reseeded, tmp_path / "run")
    with pytest.raises(runner.RunDirectoryError, match=r'matrix\[0\]\.mechanisms: 2 entries there, 1 here'):
        runner.run(scenario_file(tmp_path, '{ id = "kaggle" }'), tmp_path / "run")


def _finished_at(run_dir) -> dict[str, str]:
    import json

    return {key: record["finished"] for key, record in json.loads((run_dir / "manifest.json").read_text())["completed"].items()}


def test_a_scenario_that_only_adds_cells_keeps_the_finished_ones_and_equals_a_fresh_run(tmp_path, caplog):
    """A researcher adds a mechanism to a matrix that ran: only its cells are computed, and the
    directory holds what a fresh run of the grown scenario gives, bit for bit."""
    runner.run(scenario_file(tmp_path), tmp_path / "run")
    before = _finished_at(tmp_path / "run")
    grown_file = scenario_file(tmp_path, '{ id = "kaggle" }, { id = "ladder-boot", params = { b = 5 } }, { id = "ladder-free" }',
                               name="grown.toml")
    grown = runner.run(grown_file, tmp_path / "run")
    assert "keeps its 4 cells, seed and replications, and adds 2: its 4 finished cells are kept" in caplog.text
    after = _finished_at(tmp_path / "run")
    assert {key: after[key] for key in before} == before and len(after) == 6
    fresh = runner.run(grown_file, tmp_path / "fresh")
    comparable = lambda frame: frame.drop(columns=["wall_time"]).sort_values(["cell", "replication"], ignore_index=True)  # noqa: E731
    pd.testing.assert_frame_equal(comparable(grown), comparable(fresh))
    assert len(report.load_run(tmp_path / "run").results) == len(grown) == 6 * 3


@pytest.mark.parametrize("change, step, named", [
    ("seed = 7", 1, "seed: 7 there, 8 here"),
    ("replications = 3", -1, "holds 3 replications of every cell and this run asks for 2: a run directory's "
                             "replications only grow; run it with 3 or more, or choose another --out")])
def test_a_grown_scenario_with_another_seed_or_fewer_replications_is_refused(tmp_path, change, step, named):
    runner.run(scenario_file(tmp_path), tmp_path / "run")
    grown = scenario_file(tmp_path, '{ id = "kaggle" }, { id = "ladder-boot", params = { b = 5 } }, { id = "ladder-free" }',
                          name="grown.toml")
    value = int(change.split(" = ")[1]) + step
    grown.write_text(grown.read_text().replace(change, f"{change.split(' = ')[0]} = {value}"))
    with pytest.raises(runner.RunDirectoryError, match=named):
        runner.run(grown, tmp_path / "run")
