"""More replications for a run directory that ran: only the new ones are computed, and the directory
then holds what a fresh run with the larger count gives, value for value (docs/run-directories.md)."""

import json
import signal
import subprocess
import sys
import time
from collections import Counter

import pandas as pd
import pytest

from ladderlab.cli.commands import main
from ladderlab.competition import results as competition_results
from ladderlab.extrapolation import scenario as extrapolation_scenario
from ladderlab.reports import report
from ladderlab.runs import rundir, runner
from ladderlab.runs.scenario import cells, load
from tests.helpers import SMALL, TINY_COMPETITION

EXTRAPOLATION = """
[[extrapolation]]
mixture = { classes = 8, dimension = 4, training = 15, testing = 20 }
classifiers = ["qda"]
step = 3
conventions = ["ladderlab"]
"""
EVERY_KIND = SMALL.replace("replications = 3", "replications = 2").replace(
    "MECHANISMS", '{ id = "kaggle" }, { id = "ladder-boot", params = { b = 5 } }') + TINY_COMPETITION.replace(
    'mechanisms = [{ id = "kaggle" }, { id = "ladder", params = { eta = [0.01, 0.02] } }]',
    'mechanisms = [{ id = "ladder", params = { eta = 0.01 } }]') + EXTRAPOLATION
"""Four duel cells, a competition cell and an extrapolation cell, 2 replications each."""
TIMES = ["wall_time", "cpu_time"]


def everything(out) -> dict[str, pd.DataFrame]:
    """Every value of a run directory's duels, competitions and extrapolations, but the times they took."""
    run = report.load_run(out)
    order = ["cell", "replication", *(["convention", "k"] if "k" in run.extrapolations else [])]
    return {kind: frame.drop(columns=[name for name in TIMES if name in frame]).sort_values(
                [name for name in order if name in frame], ignore_index=True)
            for kind, frame in (("duels", run.results), ("competitions", run.competitions),
                                ("extrapolations", run.extrapolations))}


def assert_same_values(out, other) -> None:
    ours, theirs = everything(out), everything(other)
    for kind in ours:
        pd.testing.assert_frame_equal(ours[kind], theirs[kind], check_exact=True, obj=kind)


def computed_replications(monkeypatch) -> Counter:
    """Counts, by cell key (extrapolations: by classifier), of the replications this process computes."""
    counts: Counter = Counter()

    def counting(function, name_of):
        def wrapped(*args, **kwargs):
            counts[name_of(*args)] += 1
            return function(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(runner, "run_replication", counting(runner.run_replication, lambda cell, *_: cell.key))
    monkeypatch.setattr(competition_results, "run_replication",
                        counting(competition_results.run_replication, lambda cell, *_: cell.key))
    monkeypatch.setattr(extrapolation_scenario, "run_replication",
                        counting(extrapolation_scenario.run_replication, lambda design, classifier, *_: classifier))
    return counts


def stored(out) -> dict[str, list[float]]:
    """Per finished cell file: the time each of its rows took, which no two computations share."""
    times = {}
    for folder in rundir.cell_folders():
        for path in sorted((out / folder).glob("*.parquet")):
            frame = pd.read_parquet(path)
            times[path.stem] = frame[next(name for name in TIMES if name in frame)].tolist()
    return times


@pytest.mark.slow
def test_raising_the_replications_computes_only_the_new_ones_and_equals_a_fresh_run(tmp_path, monkeypatch, caplog):
    """2 → 4 replications of duels, competitions and an extrapolation, serially: every cell computes
    replications 2 and 3 only, keeps its stored rows as they were, and the directory then holds a
    fresh 4-replication run's values."""
    path = tmp_path / "every-kind.toml"
    path.write_text(EVERY_KIND)
    runner.run(path, tmp_path / "run")
    before = stored(tmp_path / "run")
    counts = computed_replications(monkeypatch)
    runner.run(path, tmp_path / "run", replications=4)
    keys = [cell.key for cell in cells(load(path)) if not hasattr(cell, "classifier")]
    assert counts == Counter({**{key: 2 for key in keys}, "qda": 2})
    assert "replications raised from 2 to 4: the 6 finished cells keep their stored replications" in caplog.text
    after = stored(tmp_path / "run")
    assert {key: after[key][: len(times)] for key, times in before.items()} == before
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert {record["replications"] for record in manifest["completed"].values()} == {4}
    assert manifest["scenario"]["replications"] == 4
    runner.run(path, tmp_path / "fresh", replications=4)
    assert_same_values(tmp_path / "run", tmp_path / "fresh")
    counts.clear()
    runner.run(path, tmp_path / "run", replications=4)
    assert not counts, "a run directory that holds every replication computes none"


@pytest.mark.slow
def test_a_parallel_top_up_equals_a_fresh_serial_run(tmp_path):
    """With two loky workers (which play the first missing replication of every cell first, and split
    a costly cell's missing replications into ranges), 2 → 5 replications keep the stored rows."""
    path = tmp_path / "every-kind.toml"
    path.write_text(EVERY_KIND)
    runner.run(path, tmp_path / "run")
    before = stored(tmp_path / "run")
    runner.run(path, tmp_path / "run", replications=5, jobs=2)
    after = stored(tmp_path / "run")
    assert {key: after[key][: len(times)] for key, times in before.items()} == before
    assert all(len(set(after[key][len(times):]) - set(times)) > 0 for key, times in before.items())
    runner.run(path, tmp_path / "fresh", replications=5)
    assert_same_values(tmp_path / "run", tmp_path / "fresh")


def test_ranges_of_a_top_up_cover_exactly_the_missing_replications():
    jobs = runner.replication_ranges([10.0, 1.0, 4.0], replications=40, workers=2, starts=[20, 0, 39])
    covered = {group: sorted(r for _, first, stop in jobs if _ == group for r in range(first, stop)) for group in range(3)}
    assert covered == {0: list(range(20, 40)), 1: list(range(40)), 2: [39]}
    assert len([job for job in jobs if job[0] == 0]) > 1, "the costliest group is split"


def test_fewer_replications_are_refused_in_one_line_before_any_work(tmp_path, capsys):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }'))
    runner.run(path, tmp_path / "run")
    manifest = (tmp_path / "run" / "manifest.json").read_bytes()
    assert main(["run", str(path), "--out", str(tmp_path / "run"), "--replications", "2"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == (f"ladderlab: error: {tmp_path / 'run'} holds 3 replications of every cell and this run asks for 2: "
                     "a run directory's replications only grow; run it with 3 or more, or choose another --out")
    assert (tmp_path / "run" / "manifest.json").read_bytes() == manifest


def test_a_damaged_stored_cell_is_computed_again_whole(tmp_path, monkeypatch, caplog):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }'))
    runner.run(path, tmp_path / "run")
    damaged, kept = sorted((tmp_path / "run" / "cells").glob("*.parquet"))
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 1
    damaged.write_bytes(bytes(data))
    counts = computed_replications(monkeypatch)
    runner.run(path, tmp_path / "run", replications=5)
    assert counts == Counter({damaged.stem: 5, kept.stem: 2})
    assert f"{damaged.stem}): cells/{damaged.name} is damaged" in caplog.text
    runner.run(path, tmp_path / "fresh", replications=5)
    assert_same_values(tmp_path / "run", tmp_path / "fresh")


def test_a_stored_cell_that_lacks_a_replication_its_record_claims_is_set_aside(tmp_path, monkeypatch, caplog):
    """A manifest that says a file holds more replications than it does (edited by hand, or by a
    bug) never makes a top-up start after a gap: the cell is quarantined and computed again."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }'))
    runner.run(path, tmp_path / "run")
    manifest_path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    wrong = sorted(manifest["completed"])[0]
    manifest["scenario"]["replications"] = 4  # as a top-up to 6 interrupted after its first cell would leave it
    manifest["scenario_hash"] = load(path, 4).identity()
    manifest["completed"][wrong]["replications"] = 4
    manifest_path.write_text(json.dumps(manifest))
    counts = computed_replications(monkeypatch)
    runner.run(path, tmp_path / "run", replications=6)
    assert "it does not hold replications 0 to 3, as the manifest records" in caplog.text
    assert counts[wrong] == 6 and sum(counts.values()) == 6 + 3
    runner.run(path, tmp_path / "fresh", replications=6)
    assert_same_values(tmp_path / "run", tmp_path / "fresh")


CHANGED_PLUGIN = '''
from ladderlab.mechanisms.kaggle import Kaggle


class Mine(Kaggle):
    """Kaggle's rounding, as a local plugin{}."""

    id = "mine"
'''


def test_a_top_up_by_a_changed_plugin_is_refused_and_never_mixes_versions(tmp_path, monkeypatch):
    plugin = tmp_path / "mine.py"
    plugin.write_text(CHANGED_PLUGIN.format(""))
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "mine.py:Mine" }'))
    runner.run(path, tmp_path / "run")
    plugin.write_text(CHANGED_PLUGIN.format(", edited"))
    with pytest.raises(rundir.StaleCellsError, match="2 finished cells were computed by a plugin that has changed"):
        runner.run(path, tmp_path / "run", replications=5)
    counts = computed_replications(monkeypatch)
    runner.run(path, tmp_path / "run", replications=5, rerun_stale=True)
    assert sorted(counts.values()) == [5, 5]


SLOW_PLUGIN = '''
import time

from ladderlab.mechanisms.kaggle import Kaggle


class Slow(Kaggle):
    """Kaggle's rounding, a hundredth of a second per release: a run slow enough to be killed in."""

    id = "slow"

    def _release(self, P):
        time.sleep(0.01)
        return super()._release(P)
'''


@pytest.mark.slow
def test_a_top_up_killed_on_the_way_resumes_to_a_fresh_runs_values(tmp_path):
    """``kill -9`` while a top-up runs (one cell topped up, the other not yet): the report says which
    cell rests on fewer replications, and the same command finishes what the fresh run gives."""
    (tmp_path / "slow.py").write_text(SLOW_PLUGIN)
    path = tmp_path / "slow.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "slow.py:Slow" }').replace("k = [50, 100]", "k = [20, 40]")
                    .replace("replications = 3", "replications = 2"))
    out = tmp_path / "run"
    runner.run(path, out)
    command = [sys.executable, "-m", "ladderlab", "run", str(path), "--out", str(out), "--replications", "4"]
    topping = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while True:
        records = rundir.completed_cells(out).values()
        if any(record.get("replications") == 4 for record in records):
            break
        assert topping.poll() is None and time.monotonic() < deadline, topping.stderr.read().decode()
        time.sleep(0.005)
    topping.send_signal(signal.SIGKILL)
    topping.wait(timeout=60)
    held = sorted(record.get("replications") for record in rundir.completed_cells(out).values())
    assert held == [2, 4], "killed with one cell topped up and the other not"
    lines = report.status_lines(report.load_run(out))
    assert ("1 of 2 finished cells hold fewer than the scenario's 4 replications, and their numbers rest on those "
            "(1 cell holds 2): 'ladderlab run' computes only the ones they lack") in lines
    runner.run(path, out, replications=4)
    assert not report.cells_lacking_replications(report.load_run(out))
    runner.run(path, tmp_path / "fresh", replications=4)
    assert_same_values(out, tmp_path / "fresh")


def test_certify_reuses_its_stored_pieces_for_more_replications_and_recomputes_a_damaged_one(tmp_path, caplog):
    """``certify`` already grows: its battery's pieces are keyed by their cells, not by the maximum,
    so a larger ``--replications`` keeps every stored piece; a piece that does not match its checksum
    is set aside and its replications computed again, to the same certificate."""
    from ladderlab.certification import certify

    options = dict(n=100, budgets=[20], attacks=["boosting(k=10)"], default_battery=False, honest_replications=1,
                   seed=1, tau=1.0, epsilon=1.0)  # wide: boosting's points stay undecided at 8 replications
    certify.certify("kaggle", replications=8, run_dir=tmp_path / "battery", **options)
    pieces = {path: path.stat().st_mtime_ns for path in (tmp_path / "battery" / "chunks").rglob("*.parquet")}
    larger = certify.certify("kaggle", replications=24, run_dir=tmp_path / "battery", **options)
    assert all(path.stat().st_mtime_ns == stamp for path, stamp in pieces.items())
    fresh = certify.certify("kaggle", replications=24, run_dir=tmp_path / "fresh", **options)
    assert larger["battery"] == fresh["battery"] and larger["replications_used"] == fresh["replications_used"]
    assert max(point["replications"] for point in larger["battery"]) > 8
    damaged = max((tmp_path / "battery" / "chunks").rglob("*.parquet"))
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 1
    damaged.write_bytes(bytes(data))
    again = certify.certify("kaggle", replications=24, run_dir=tmp_path / "battery", **options)
    assert f"({damaged.relative_to(tmp_path / 'battery')}) is damaged: checksum" in caplog.text
    assert again["battery"] == fresh["battery"]
    assert list((tmp_path / "battery" / "quarantine").glob(f"chunks-{damaged.parent.name}-{damaged.stem}.*.parquet"))


SHARED = """
schema_version = 1
name = "shared"
replications = 2
seed = 3

[[matrix]]
tasks = [{ id = "gaussian-regression", params = { n_samples = 120, n_features = 20 } }]
mechanisms = [{ id = "ladder-t", params = { alpha = 0.15 } }]
attacks = [{ id = "freedman", params = { k = KS } }]
"""


def test_cells_of_one_transcript_that_hold_different_counts_are_topped_up_each_from_its_own(tmp_path, monkeypatch):
    """Freedman's k changes only the final regression, so its cells share one transcript per
    replication. A k added while the replications rise holds none of them and computes all four;
    the finished k computes the two it lacks; both equal a fresh run's."""
    path = tmp_path / "shared.toml"
    path.write_text(SHARED.replace("KS", "[2]"))
    runner.run(path, tmp_path / "run")
    path.write_text(SHARED.replace("KS", "[2, 5]"))
    counts = computed_replications(monkeypatch)
    runner.run(path, tmp_path / "run", replications=4)
    (finished, added) = [cell.key for cell in cells(load(path))]
    assert counts == Counter({finished: 2, added: 4})
    runner.run(path, tmp_path / "fresh", replications=4)
    assert_same_values(tmp_path / "run", tmp_path / "fresh")
