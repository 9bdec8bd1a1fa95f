"""Run directories you can trust: checksums, quarantine, the lock, and stale plugins."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from ladderlab.cli.commands import main
from ladderlab.reports import report
from ladderlab.runs import rundir, runner
from ladderlab.runs.scenario import cells, load
from ladderlab.utils.checksums import sha256_file
from tests.helpers import scenario_file


def comparable(results: pd.DataFrame) -> pd.DataFrame:
    return results.drop(columns=["wall_time"]).sort_values(["cell", "replication"], ignore_index=True)


@pytest.fixture
def finished(tmp_path):
    """A finished run of the small scenario, and its results."""
    path = scenario_file(tmp_path)
    results = runner.run(path, tmp_path / "run")
    return path, tmp_path / "run", results


def damage_truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def damage_empty(path):
    path.write_bytes(b"")


def damage_flip_a_bit(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # inside the data pages: Parquet itself may not notice
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [damage_truncate, damage_empty, damage_flip_a_bit])
def test_a_damaged_cell_is_quarantined_by_name_and_computed_again(finished, damage, caplog):
    path, out, uninterrupted = finished
    victim = sorted((out / "cells").glob("*.parquet"))[1]
    damage(victim)
    resumed = runner.run(path, out)
    pd.testing.assert_frame_equal(comparable(uninterrupted), comparable(resumed))
    assert f"cells/{victim.stem}.parquet is damaged" in caplog.text
    (moved,) = (out / "quarantine").glob(f"{victim.stem}.*.parquet")
    assert moved.with_suffix(".reason.txt").read_text().strip()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["completed"][victim.stem]["sha256"] == sha256_file(victim)


def test_a_cell_file_without_a_manifest_entry_is_not_reused(finished, caplog):
    """The run was killed between renaming the cell file and recording its checksum."""
    path, out, uninterrupted = finished
    manifest = json.loads((out / "manifest.json").read_text())
    key = sorted(manifest["completed"])[0]
    del manifest["completed"][key]
    (out / "manifest.json").write_text(json.dumps(manifest))
    planted = uninterrupted.copy()  # even a perfectly readable file is not trusted without a checksum
    resumed = runner.run(path, out)
    assert "no checksum in the manifest" in caplog.text and key in caplog.text
    pd.testing.assert_frame_equal(comparable(planted), comparable(resumed))
    assert key in json.loads((out / "manifest.json").read_text())["completed"]


def test_the_manifest_records_checksums_and_plugin_fingerprints(finished):
    _, out, _ = finished
    manifest = json.loads((out / "manifest.json").read_text())
    for key, record in manifest["completed"].items():
        assert record["sha256"] == sha256_file(out / "cells" / f"{key}.parquet")
        assert set(record["plugins"]) == {"task", "mechanism", "attack"}
    boosting = manifest["plugins"]["attack:boosting"]
    assert boosting["version"] and len(boosting["source_sha256"]) == 64
    assert boosting["source_files"][0].endswith("boosting.py")


def test_report_names_a_damaged_cell_and_reports_the_rest(finished, capsys):
    _, out, results = finished
    victim = sorted((out / "cells").glob("*.parquet"))[0]
    damage_truncate(victim)
    assert main(["report", str(out), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert f"cells/{victim.stem}.parquet" in captured.err and "damaged" in captured.err
    table = pd.read_csv(__import__("io").StringIO(captured.out))
    assert len(table[table.section == "duels"]) == results.cell.nunique() - 1
    assert victim.exists()  # report only reads
    run = report.load_run(out)
    assert not run.status.complete and f"cells/{victim.stem}.parquet" in run.damaged


def test_a_second_run_into_the_same_directory_is_refused(tmp_path, capsys):
    path = scenario_file(tmp_path)
    with rundir.RunLock(tmp_path / "run", command="the first run"):
        with pytest.raises(rundir.RunLockedError, match=rf"in use by another run \(pid {os.getpid()} on host .*, started 20"):
            runner.run(path, tmp_path / "run")
        assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
        assert "the first run" in capsys.readouterr().err
    assert not list((tmp_path / "run" / "cells").glob("*.parquet"))


@pytest.fixture
def lock_holder(tmp_path):
    """Another process that holds the lock of ``tmp_path / "run"`` (killed at the end)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time
            from ladderlab.runs.rundir import RunLock
            RunLock({str(tmp_path / 'run')!r}).acquire()
            print("locked", flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    yield holder
    holder.kill()
    holder.wait()
    holder.stdout.close()


def test_a_concurrent_run_in_another_process_is_refused(tmp_path, lock_holder):
    with pytest.raises(rundir.RunLockedError, match=rf"pid {lock_holder.pid}"):
        runner.run(scenario_file(tmp_path), tmp_path / "run")


def test_the_stale_lock_of_a_killed_run_is_taken_over(tmp_path, lock_holder, caplog):
    path = scenario_file(tmp_path)
    lock_holder.send_signal(signal.SIGKILL)
    lock_holder.wait()
    assert json.loads((tmp_path / "run" / "lock").read_text())["pid"] == lock_holder.pid
    results = runner.run(path, tmp_path / "run")
    assert f"taking over the stale lock of pid {lock_holder.pid}" in caplog.text
    assert len(results) == len(cells(load(path))) * 3
    assert (tmp_path / "run" / "lock").read_text() == ""  # released cleanly


PLUGIN = """
from ladderlab.mechanisms.kaggle import Kaggle


class Shifted(Kaggle):
    id = "shifted"

    def _release(self, P):
        return super()._release(P) + SHIFT
"""


def test_a_changed_local_plugin_is_refused_then_recomputed_with_rerun_stale(tmp_path, capsys):
    plugin = tmp_path / "shifted.py"
    plugin.write_text(PLUGIN.replace("SHIFT", "0.0"))
    path = scenario_file(tmp_path, f'{{ id = "{plugin}:Shifted" }}, {{ id = "kaggle" }}')
    before = runner.run(path, tmp_path / "run")
    plugin.write_text(PLUGIN.replace("SHIFT", "0.5"))
    with pytest.raises(rundir.StaleCellsError, match=r"(?s)2 finished cells .* mechanism '.*shifted.py:Shifted'"):
        runner.run(path, tmp_path / "run")
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
    assert "--rerun-stale" in capsys.readouterr().err
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--rerun-stale"]) == 0
    after = runner.load_results(tmp_path / "run")
    fresh = runner.run(path, tmp_path / "fresh")
    pd.testing.assert_frame_equal(comparable(after), comparable(fresh))
    shifted = before.mechanism.str.endswith("Shifted")
    assert (after[shifted].final_released >= 0.5).all() and (before[shifted].final_released < 0.5).all()
    pd.testing.assert_frame_equal(comparable(before[~shifted]).reset_index(drop=True),
                                  comparable(after[~shifted]).reset_index(drop=True))
    assert len(list((tmp_path / "run" / "quarantine").glob("*.parquet"))) == 2


def test_recomputing_the_cells_of_a_new_plugin_version_records_that_version(tmp_path):
    plugin = tmp_path / "shifted.py"
    plugin.write_text(PLUGIN.replace("SHIFT", "0.0") + '    version = "1"\n')
    path = scenario_file(tmp_path, f'{{ id = "{plugin}:Shifted" }}, {{ id = "kaggle" }}')
    runner.run(path, tmp_path / "run")
    versions = json.loads((tmp_path / "run" / "manifest.json").read_text())["versions"]
    assert versions["mechanism:" + str(plugin) + ":Shifted"] == "1"
    plugin.write_text(PLUGIN.replace("SHIFT", "0.5") + '    version = "2"\n')
    runner.run(path, tmp_path / "run", rerun_stale=True)
    recorded = json.loads((tmp_path / "run" / "manifest.json").read_text())["versions"]
    assert recorded == {**versions, "mechanism:" + str(plugin) + ":Shifted": "2"}


HELPED_PLUGIN = """
from ladderlab.mechanisms.kaggle import Kaggle

import helper


class Helped(Kaggle):
    id = "helped"

    def _release(self, P):
        return super()._release(P) + helper.SHIFT
"""


def test_a_changed_helper_module_makes_the_cells_of_the_plugin_importing_it_stale(tmp_path):
    """A plugin file's fingerprint covers the local modules it imports (issue 30, item 5)."""
    (tmp_path / "helped.py").write_text(HELPED_PLUGIN)
    (tmp_path / "helper.py").write_text("SHIFT = 0.0\n")
    path = scenario_file(tmp_path, f'{{ id = "{tmp_path / "helped.py"}:Helped" }}, {{ id = "kaggle" }}')
    before = runner.run(path, tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    files = next(record["source_files"] for plugin, record in manifest["plugins"].items() if "Helped" in plugin)
    assert [os.path.basename(file) for file in files] == ["helped.py", "helper.py", "kaggle.py"]
    (tmp_path / "helper.py").write_text("SHIFT = 0.25  # edited\n")
    with pytest.raises(rundir.StaleCellsError, match=r"(?s)2 finished cells .* mechanism '.*helped.py:Helped'"):
        runner.run(path, tmp_path / "run")
    after = runner.run(path, tmp_path / "run", rerun_stale=True)
    pd.testing.assert_frame_equal(comparable(after), comparable(runner.run(path, tmp_path / "fresh")))
    helped = before.mechanism.str.endswith("Helped")
    assert (after[helped].final_released >= 0.25).all() and not before[helped].final_released.equals(
        after[helped].final_released)
