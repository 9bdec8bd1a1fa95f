"""Bit-identical results on every backend: serial, loky and a Dask cluster of processes with
several threads each (where a random forest used to average its trees in thread order)."""

import threading

import pandas as pd
import pytest

from ladderlab.runs import runner

EVERY_FAMILY = """
schema_version = 1
name = "backends"
replications = 2
seed = 3

[[matrix]]
tasks = [{ id = "diabetes" }]
mechanisms = [{ id = "kaggle" }, { id = "full-disclosure" }, { id = "ladder" }, { id = "ladder-free" },
              { id = "ladder-t" }, { id = "ladder-boot", params = { b = 10 } },
              { id = "bayesboot-ladder", params = { B = 50 } }, { id = "bayesboot-ladderboot", params = { B = 50, b = 10 } }]
attacks = [{ id = "honest" }]

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 200, n_holdout = 600 } }]
mechanisms = [{ id = "kaggle" }, { id = "ladder-boot", params = { b = 10 } }]
attacks = [{ id = "boosting", params = { k = 40 } }]
"""


@pytest.fixture(scope="module")
def dask_scheduler():
    """A Dask cluster of two worker processes with two threads each, shared by the module's tests
    (starting one costs seconds of CPU)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def everything_but_time(results: pd.DataFrame) -> pd.DataFrame:
    return results.drop(columns=["wall_time"]).sort_values(["cell", "replication"], ignore_index=True)


@pytest.mark.slow
def test_serial_loky_and_dask_agree_value_for_value(tmp_path, dask_scheduler):
    path = tmp_path / "backends.toml"
    path.write_text(EVERY_FAMILY)
    runner.run(path, tmp_path / "serial")
    serial = runner.load_results(tmp_path / "serial", submissions=True)
    runner.run(path, tmp_path / "loky", jobs=2)
    runner.run(path, tmp_path / "dask", backend="dask", scheduler=dask_scheduler)
    assert (serial.status == "ok").all() and serial.attack.eq("honest").sum() == 16
    for other in ("loky", "dask"):
        pd.testing.assert_frame_equal(everything_but_time(serial),
                                      everything_but_time(runner.load_results(tmp_path / other, submissions=True)),
                                      check_exact=True)


def test_a_process_runs_one_cell_at_a_time_whatever_its_threads():
    """A Dask worker's threads ran cells at once, and their lazy imports of scikit-learn raced
    (a partially initialised ``sklearn.base``: replications failed on Dask only). A cell entered
    in a second thread waits until the first leaves."""
    first_inside, second_inside = threading.Event(), threading.Event()
    overlapped = []

    def first() -> None:
        with runner.cell_worker():
            first_inside.set()
            overlapped.append(second_inside.wait(timeout=1.0))

    def second() -> None:
        first_inside.wait()
        with runner.cell_worker():
            second_inside.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlapped == [False] and second_inside.is_set()


COMPETITION = """
schema_version = 1
name = "competition-backends"
replications = 4
seed = 5

[[competition]]
tasks = [{ id = "latent-classification", params = { n_train = 300, n_public = 200, n_holdout = 600, n_features = 6 } },
         { id = "latent-classification", params = { n_train = 300, n_public = 200, n_holdout = 600, n_features = 6, scorer = "log-loss" } }]
mechanisms = [{ id = "ladder-free" }, { id = "ladder-boot", params = { b = 10 } }, { id = "noisy" }]
rules = [{ rounds = 4, per_round = 3, public_fraction = 0.4, selection = 2 }]

[[competition.mixes]]
name = "mix"
teams = [
  { policy = "progressive-analyst", count = 6, params = { view = 3, batch = 2 } },
  { policy = "conservative-analyst", count = 3, accounts = 2, params = { view = 3, batch = 1 } },
  { policy = "honest", count = 1 },
]
"""


@pytest.mark.slow
def test_competitions_agree_value_for_value_on_every_backend(tmp_path, dask_scheduler):
    """Every measure and every team's scores, serially, with loky (which splits a cell's replications
    into ranges played by different workers) and on a Dask cluster of two worker processes."""
    from ladderlab.competition.results import load_competition_results

    path = tmp_path / "competition-backends.toml"
    path.write_text(COMPETITION)
    runner.run(path, tmp_path / "serial")
    serial = load_competition_results(tmp_path / "serial", teams=True)
    runner.run(path, tmp_path / "loky", jobs=2)
    runner.run(path, tmp_path / "dask", backend="dask", scheduler=dask_scheduler)
    assert (serial.status == "ok").all() and len(serial) == 6 * 4
    for other in ("loky", "dask"):
        pd.testing.assert_frame_equal(everything_but_time(serial),
                                      everything_but_time(load_competition_results(tmp_path / other, teams=True)),
                                      check_exact=True)


def test_a_competition_cell_is_split_into_ranges_of_replications(tmp_path):
    """As duel groups are: replication 0 is played first, and a cell that costs more than a quarter of
    a worker's even share is split into ranges of replications."""
    from ladderlab.competition.scenario import CompetitionCell
    from ladderlab.runs.scenario import cells, load

    path = tmp_path / "competition-backends.toml"
    path.write_text(COMPETITION)
    (cell, *_) = [cell for cell in cells(load(path)) if isinstance(cell, CompetitionCell)]
    pieces, first_rows = runner.longest_first([[cell]], seed=5, replications=4, jobs=2, secret_seed=None)
    assert sorted((start, stop) for _, start, stop in pieces) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert first_rows[cell.key]["status"] == "ok" and first_rows[cell.key]["replication"] == 0
