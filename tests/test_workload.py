"""Sizing work before it starts (ladderlab.runs.workload): the model's constants against measured
memory, the refusal of what cannot fit, and --force."""

import resource
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.certification import battery
from ladderlab.cli.commands import main
from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.competition.kaggle_calibration import kaggle_schedule, mean_submissions
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs import runner, scenario, workload
from ladderlab.runs.scenario import Cell
from tests.helpers import SMALL, scenario_file


def peak_bytes(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_duel_cell_keeps_no_more_per_submission_and_replication_than_the_model_says(tmp_path):
    """Doubling the submissions of every replication adds at most BYTES_PER_RECORD per added
    submission × replication (and at least a quarter of it: the constant is not padding)."""
    (tmp_path / "cells").mkdir()
    replications = 8

    def cell(k: int) -> Cell:
        return Cell(("random-labels", {"n_public": 20, "n_holdout": 60}), ("kaggle", {}), ("boosting", {"k": k}), None, False)

    runner.run_cells([cell(10)], 0, 1, str(tmp_path))  # imports and caches
    small, large = (peak_bytes(lambda k=k: runner.run_cells([cell(k)], 0, replications, str(tmp_path)))
                    for k in (4000, 8000))
    per_record = (large - small) / (4000 * replications)
    assert workload.BYTES_PER_RECORD / 4 <= per_record <= workload.BYTES_PER_RECORD


def test_a_competition_team_and_its_accounts_take_no_more_than_the_model_says():
    """Below the wave's cap a team adds its state and its share of the round's wave."""
    task = TASKS.make("latent-classification", n_train=200, n_public=300, n_holdout=1000, n_features=8)
    rules = Rules(rounds=2, per_round=2)

    def play(teams: int, accounts: int) -> None:
        compete(task, MECHANISMS.make("kaggle"), [TeamSpec("progressive-analyst", count=teams, accounts=accounts)], rules)

    play(2, 1)
    few, many = peak_bytes(lambda: play(20, 1)), peak_bytes(lambda: play(60, 1))
    per_team = (many - few) / 40
    assert per_team <= (workload.BYTES_PER_TEAM_ROW + rules.per_round * workload.BYTES_PER_WAVE_ELEMENT) * 1000
    three = peak_bytes(lambda: play(20, 3))
    per_account = (three - few) / 40 - 2 * 2 * workload.BYTES_PER_COMPETITION_SUBMISSION
    assert per_account <= workload.BYTES_PER_ACCOUNT_ROW * 300 + workload.BYTES_PER_ACCOUNT


@pytest.mark.slow
def test_at_kaggle_scale_a_team_adds_only_its_state():
    """With hundreds of teams the round's wave is at its cap, and a team adds its state alone
    (at least a quarter of BYTES_PER_TEAM_ROW: the constant is not padding), so a Kaggle-sized
    competition is not sized as if every team had a wave of its own."""
    task = TASKS.make("latent-classification", n_train=200, n_public=3000, n_holdout=10000, n_features=8)

    def play(teams: int) -> None:
        compete(task, MECHANISMS.make("kaggle"), [TeamSpec("progressive-analyst", count=teams)], Rules(rounds=2, per_round=2))

    play(2)
    per_team_row = (peak_bytes(lambda: play(1200)) - peak_bytes(lambda: play(400))) / 800 / 10000
    assert workload.BYTES_PER_TEAM_ROW / 4 <= per_team_row <= workload.BYTES_PER_TEAM_ROW


@settings(max_examples=5, deadline=None)
@given(rounds=st.integers(5, 120), per_round=st.integers(1, 10), seed=st.integers(0, 2**32 - 1))
def test_an_activity_profile_is_sized_by_the_submissions_its_teams_make(rounds, per_round, seed):
    """The estimate's mean (4,096 teams of its own stream) agrees with the mean of 4,000 teams drawn
    as a competition draws them within six standard errors of their difference (a false alarm
    well below 10⁻⁶ for means of thousands of bounded totals); the rules' cap, which the
    estimate used before, is off by hundreds of them."""
    cap = rounds * per_round
    rng = np.random.default_rng(seed)
    totals = np.array([kaggle_schedule(rounds, per_round, cap, rng).total for _ in range(4000)])
    standard_error = totals.std(ddof=1) * np.sqrt(1 / 4000 + 1 / 4096)
    assert abs(mean_submissions("kaggle", rounds, per_round, cap) - totals.mean()) <= 6 * standard_error


def test_work_that_cannot_fit_is_refused_with_its_estimate_and_runs_with_force(tmp_path, monkeypatch, capsys):
    path = scenario_file(tmp_path, mechanisms='{ id = "kaggle" }')
    monkeypatch.setattr(workload, "available_memory", lambda: 1 << 20)
    assert main(["run", str(path), "--out", str(tmp_path / "refused")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("ladderlab: error: scenario small needs about ") and "more than the 1 MiB available" in error
    assert "450 submissions" in error and "--force" in error and len(error.splitlines()) == 1
    assert not (tmp_path / "refused").exists()
    assert main(["run", str(path), "--out", str(tmp_path / "forced"), "--force"]) == 0
    assert "ladderlab: estimated scenario small: 450 submissions" in capsys.readouterr().err
    assert (tmp_path / "forced" / "manifest.json").exists()


def test_the_python_api_refuses_too_large_work_before_it_starts(tmp_path, monkeypatch):
    path = scenario_file(tmp_path, mechanisms='{ id = "kaggle" }')
    monkeypatch.setattr(workload, "available_memory", lambda: 1 << 20)
    with pytest.raises(workload.TooLarge, match="scenario small needs about"):
        runner.run(path, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    runner.run(path, tmp_path / "run", force=True)


@pytest.mark.parametrize(("estimate", "words"), [
    (workload.Estimate("x", 1234567, 3 << 30, 7200.0), ["1.23 M submissions", "3 GiB", "2 h"]),
    (workload.Estimate("x", None, 512, 0.0), ["512 B"]),
    (workload.Estimate("x", 10, 2048, 90.0, ["cell y: unknown"]), ["10 submissions", "2 KiB", "1.5 min", "(cell y: unknown)"]),
])
def test_an_estimate_reads_in_units(estimate, words):
    for word in words:
        assert word in str(estimate)


def test_an_attack_without_a_budget_is_sized_by_what_it_says_it_submits():
    path_cells = workload.duel_cells("c", 100, 0, None, 3)
    assert path_cells.submissions is None and "does not say" in path_cells.notes[0]
    assert workload.duel_cells("c", 100, 0, 400, 3).submissions == 1200


EXTRAPOLATION_RANKS = Path(__file__).resolve().parent.parent / "examples" / "extrapolation" / "ranks.txt"
FACTOR = 4
"""How far a time estimate may be from the CPU time measured (either way): typical, not exact."""


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("method, methods, bootstrap", [("all", ["un", "exp", "cons", "mple", "hd"], 8),
                                                        ("hd", ["hd"], 60), ("exp", ["exp"], 60)])
def test_the_extrapolation_estimate_is_within_a_factor_of_the_cpu_time_with_the_bootstrap(method, methods, bootstrap,
                                                                                          capsys):
    from ladderlab.stats import pseudolikelihood

    if set(methods) & set(pseudolikelihood.NEEDS_SOLVER) and pseudolikelihood.solver_missing():
        pytest.skip(pseudolikelihood.solver_missing())
    arguments = ["stats", "extrapolate", str(EXTRAPOLATION_RANKS), "--from", "20", "--method", method, "--format", "json"]
    assert main([*arguments, "--to", "30", "--bootstrap", "2"]) == 0  # imports (cvxpy takes seconds) and caches
    start = cpu_seconds()
    assert main([*arguments, "--to", "100", "--bootstrap", str(bootstrap)]) == 0
    measured = cpu_seconds() - start
    capsys.readouterr()
    estimate = workload.extrapolation_work(20, 100, methods, pseudolikelihood.DEFAULT_BINS, 500, bootstrap).cpu_seconds
    assert estimate / FACTOR <= measured <= estimate * FACTOR, (measured, estimate)


@pytest.mark.parametrize("mechanism", ['{ id = "bayesboot-ladder", params = { B = 400 } }',
                                       '{ id = "sage-bootladderboot", params = { bootstrap_n = 400, report_n = 10 } }'])
def test_a_duels_estimate_counts_the_mechanisms_bootstrap_resamples_within_a_factor_of_the_cpu_time(tmp_path, mechanism):
    text = SMALL.replace("n_public = 200, n_holdout = 600", "n_public = 1000, n_holdout = 2000").replace(
        'k = [50, 100], variant = "kaggle"', "k = 150").replace("replications = 3", "replications = 2")
    path = scenario_file(tmp_path, mechanisms=mechanism, text=text)
    warm = scenario_file(tmp_path, mechanisms=mechanism, text=text.replace("k = 150", "k = 5"), name="warm.toml")
    runner.run(warm, tmp_path / "warm", progress=False)  # imports and caches
    estimate = workload.scenario_work(scenario.load(path)).cpu_seconds
    start = cpu_seconds()
    runner.run(path, tmp_path / "run", progress=False)
    measured = cpu_seconds() - start
    assert estimate / FACTOR <= measured <= estimate * FACTOR, (measured, estimate)


def test_a_resumed_run_estimates_only_the_cells_left_and_says_how_many_are_done(tmp_path, capsys):
    """The directory holds the Kaggle cells; the scenario that adds the Ladder's resumes it, and
    its estimate is the Ladder's cells alone: half of a fresh run's submissions, less CPU."""
    kaggle = scenario_file(tmp_path, mechanisms='{ id = "kaggle" }', name="kaggle.toml")
    both = scenario_file(tmp_path, mechanisms='{ id = "kaggle" }, { id = "ladder" }', name="both.toml")
    assert main(["run", str(kaggle), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    loaded = scenario.load(both)
    fresh, resumed = runner.estimate(loaded, tmp_path / "fresh"), runner.estimate(loaded, tmp_path / "run")
    assert (fresh.submissions, resumed.submissions) == (900, 450) and resumed.cpu_seconds < fresh.cpu_seconds
    assert main(["run", str(both), "--out", str(tmp_path / "run")]) == 0
    assert "ladderlab: estimated scenario small (resumed, 2 of 4 cells done: what is left): 450 submissions" in (
        capsys.readouterr().err)


def test_a_resumed_battery_estimates_only_the_replications_left_and_says_how_many_were_stored(tmp_path):
    """A battery interrupted after 8 of its 16 replications reads them back: its estimate counts
    the other 8 (a fresh one all 16) and says that 8 were stored."""
    cell = Cell(("random-labels", {"n_public": 20, "n_holdout": 60}), ("kaggle", {}), ("boosting", {"k": 5}), None, False)

    def estimate_of(maximum: int, folder: Path) -> battery.Estimate:
        announced = []
        battery.replicate([battery.Group([cell], stop=lambda rows: None)], 0, maximum, battery.Store(folder, 0),
                          announce=announced.append)
        return announced[0]

    interrupted = estimate_of(8, tmp_path / "battery")
    resumed, fresh = estimate_of(16, tmp_path / "battery"), estimate_of(16, tmp_path / "fresh")
    assert (interrupted.stored, resumed.stored, fresh.stored) == (0, 8, 0)
    assert resumed.most_seconds == pytest.approx(8 * resumed.seconds_per_replication)
    assert fresh.most_seconds == pytest.approx(16 * fresh.seconds_per_replication)
    assert "estimate (8 replications were stored: this is what is left): " in resumed.text()
    assert "stored" not in fresh.text()
