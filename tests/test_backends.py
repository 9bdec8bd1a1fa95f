"""Bit-identical results on every backend: serial, loky and a Dask cluster of processes with
several threads each (where a random forest used to average its trees in thread order)."""

import pandas as pd
import pytest

from ladderlab import runner

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


def everything_but_time(results: pd.DataFrame) -> pd.DataFrame:
    return results.drop(columns=["wall_time"]).sort_values(["cell", "replication"], ignore_index=True)


def test_serial_loky_and_dask_agree_value_for_value(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "backends.toml"
    path.write_text(EVERY_FAMILY)
    runner.run(path, tmp_path / "serial")
    serial = runner.load_results(tmp_path / "serial", submissions=True)
    runner.run(path, tmp_path / "loky", jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None) as cluster:
        runner.run(path, tmp_path / "dask", backend="dask", scheduler=cluster.scheduler_address)
    assert (serial.status == "ok").all() and serial.attack.eq("honest").sum() == 16
    for other in ("loky", "dask"):
        pd.testing.assert_frame_equal(everything_but_time(serial),
                                      everything_but_time(runner.load_results(tmp_path / other, submissions=True)),
                                      check_exact=True)
