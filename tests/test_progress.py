"""Progress bars: shown on request or on a terminal, never in a pipe or a log."""

import numpy as np
import pytest

from ladderlab.stats import estimate_sota
from ladderlab.utils.progress import progress_bar

SCORES = np.array([0.80, 0.79, 0.785, 0.78, 0.77, 0.76])


def test_a_bar_is_drawn_on_standard_error_when_asked_and_not_when_not_a_terminal(capsys):
    assert list(progress_bar(range(3), progress=True, desc="work")) == [0, 1, 2]
    drawn = capsys.readouterr()
    assert "work" in drawn.err and "3/3" in drawn.err and drawn.out == ""
    assert list(progress_bar(range(3), desc="work")) == [0, 1, 2]  # pytest's stderr is no terminal
    assert capsys.readouterr().err == ""


def test_the_state_of_the_art_bootstrap_shows_its_resamples_and_the_bar_changes_no_result(capsys):
    quiet = estimate_sota(SCORES, 2000, np.random.default_rng(3), repetitions=50, bootstrap=4)
    assert capsys.readouterr().err == ""
    shown = estimate_sota(SCORES, 2000, np.random.default_rng(3), repetitions=50, bootstrap=4, progress=True)
    assert "bootstrap" in capsys.readouterr().err
    assert shown == quiet


def test_bench_prints_every_measurement_as_a_table_row(monkeypatch, capsys):
    """The CLI's bench output (its measurements replaced by fixed ones: the real ones take minutes)."""
    from ladderlab.cli import commands as cli
    from ladderlab.dev import benchmark

    def fixed_run(sizes, seconds):
        for n in sizes:
            yield benchmark.Throughput("kaggle", n, 2000.0, 1000.0, 500.0, 4000.0)

    monkeypatch.setattr(benchmark, "run", fixed_run)
    monkeypatch.setattr(benchmark, "time_duels", lambda: iter([benchmark.DuelTiming("boosting vs kaggle", 401, 0.25)]))
    assert cli.main(["dev", "bench", "--n", "200", "4000", "--seconds", "0.1"]) == 0
    printed = capsys.readouterr()
    rows = [line.split() for line in printed.out.splitlines() if line.startswith("kaggle")]
    assert [row[:3] for row in rows] == [["kaggle", "200", "2,000"], ["kaggle", "4000", "2,000"]]
    assert "4.0×" in printed.out and "boosting vs kaggle" in printed.out and "0.250" in printed.out
    assert [line.split(":")[1] for line in printed.err.splitlines()] == [" estimated the benchmark"]  # no bar: not a terminal


@pytest.mark.slow
def test_bench_times_a_certificate_with_its_workers_cpu(monkeypatch, capsys):
    """``bench --certify`` times the README's certificate from an empty directory (here a small one)."""
    from ladderlab.cli import commands as cli
    from ladderlab.dev import benchmark

    monkeypatch.setattr(benchmark, "README_CERTIFICATE", {"mechanism": "kaggle", "n": 60, "budgets": [10],
                                                          "replications": 8, "scorer": "zero-one",
                                                          "attacks": ["boosting"], "default_battery": False})
    assert cli.main(["--quiet", "dev", "bench", "--certify", "--jobs", "2"]) == 0
    line = capsys.readouterr().out
    assert "--jobs 2" in line and "safe budget 0" in line and "workers included" in line


def test_a_serial_run_shows_each_cells_replications_and_the_bar_changes_no_result(tmp_path, capsys):
    from ladderlab.runs import runner
    from tests.helpers import scenario_file

    path = scenario_file(tmp_path, mechanisms='{ id = "kaggle" }')
    quiet = runner.run(path, tmp_path / "quiet", jobs=1, progress=False)
    assert "replication" not in capsys.readouterr().err
    shown = runner.run(path, tmp_path / "shown", jobs=1, progress=True)
    drawn = capsys.readouterr().err
    assert "0/3 [" in drawn and "replication/s" in drawn  # each cell: 3 replications, below the run's bar
    assert shown.drop(columns=[c for c in shown.columns if "time" in c or "seconds" in c]).equals(
        quiet.drop(columns=[c for c in quiet.columns if "time" in c or "seconds" in c]))


def test_the_ranking_bootstrap_shows_its_resamples_and_the_bar_changes_no_result(capsys):
    from ladderlab.final_rankings.certificate import bootstrap_scores
    from ladderlab.final_rankings.private_samples import PrivateSamples

    samples = PrivateSamples(["a", "b"], list(range(5)), losses=np.arange(10.0).reshape(2, 5), source="test")
    quiet = bootstrap_scores(samples, np.random.default_rng(1), 40)
    assert capsys.readouterr().err == ""
    shown = bootstrap_scores(samples, np.random.default_rng(1), 40, progress=True)
    assert "bootstrap" in capsys.readouterr().err
    assert np.array_equal(shown, quiet)


def test_replaying_mechanisms_over_a_log_shows_each_and_the_bar_changes_no_report(tmp_path, capsys):
    from ladderlab.final_rankings.replay_report import log_report, prepare_replay
    from ladderlab.final_rankings.submission_log import read_log
    from tests.helpers import FOUR_TEAMS, ladderlab_log, write_csv

    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False)
    replays = [prepare_replay("ladder(eta=0.05)", log, None), prepare_replay("kaggle", log, None)]
    quiet = log_report(log, 2, replays)
    assert capsys.readouterr().err == ""
    shown = log_report(log, 2, replays, progress=True)
    drawn = capsys.readouterr().err
    assert "replay" in drawn and "2/2" in drawn
    assert shown == quiet
