"""Teams that behave like real ones: activity schedules drawn from the calibration, the engine keeping
to them, the real leaderboards' statistics, and the top teams' gaps against sampling noise
(Roelofs et al. 2019)."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.competition import CompetitionResult, Rules, TeamSpec, compete
from ladderlab.competition.kaggle_calibration import (
    ARRIVAL,
    ENTRIES,
    LEVELS,
    kaggle_schedule,
    leaderboard_shakeup,
)
from ladderlab.competition.measures import WITHIN_NOISE, gap_z_scores
from ladderlab.competition.scoring import HoldoutScorer
from ladderlab.registry import MECHANISMS, TASKS
from tests.helpers import clopper_pearson

SEEDS = st.integers(0, 2**32 - 1)
FAILURE = 1e-6


def dkw(count: int) -> float:
    """The Dvoretzky–Kiefer–Wolfowitz bound: sup |F̂ − F| exceeds it with probability at most FAILURE."""
    return math.sqrt(math.log(2 / FAILURE) / (2 * count))


# --- schedules --------------------------------------------------------------------------------

@settings(max_examples=3, deadline=None)
@given(seed=SEEDS)
def test_kaggle_schedules_follow_the_calibrated_distributions(seed):
    """Arrival is distributed as CHAMPS's (DKW at 1e-6, on a fine grid of rounds), and the submissions
    and the stay come from one effort draw: the same order (a version with independent draws fails)."""
    rng = np.random.default_rng(seed)
    rounds, count = 1_000_000, 4000
    schedules = [kaggle_schedule(rounds, per_round=10**6, cap=10**9, rng=rng) for _ in range(count)]
    arrival = np.sort([s.first / rounds for s in schedules])
    model = np.interp(arrival, ARRIVAL, LEVELS)  # the calibrated CDF
    empirical = np.arange(1, count + 1) / count
    assert np.max(np.maximum(np.abs(empirical - model), np.abs(empirical - 1 / count - model))) < dkw(count)
    entries = np.array([s.total for s in schedules])
    stays = np.array([(s.last - s.first + 1) / (rounds - s.first) for s in schedules])
    assert stats.spearmanr(entries, stays).statistic > 0.9
    median_entries = np.interp(0.5, LEVELS, ENTRIES)
    share_at_most_median = np.mean(entries <= median_entries)
    low, high = clopper_pearson(int(share_at_most_median * count), count, 1 - FAILURE)
    assert low <= 0.5 + 1 / count + 0.05 and high >= 0.5  # ties at integer entries add mass at the median


def test_a_schedule_keeps_within_the_rules():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        s = kaggle_schedule(rounds=20, per_round=3, cap=25, rng=rng)
        assert 0 <= s.first <= s.last <= 19
        assert 1 <= s.daily <= 3 and 1 <= s.total <= min(25, (s.last - s.first + 1) * s.daily)


def test_the_engine_lets_a_team_submit_only_within_its_schedule():
    """Each team's submissions fall in its own window, at its pace, up to its total."""
    task = TASKS.make("latent-classification", n_train=300, n_public=300, n_holdout=900, n_features=8)
    rules = Rules(rounds=30, per_round=5, public_fraction=0.3)
    teams = [TeamSpec("progressive-analyst", {"view": 4, "batch": 2, "submissions": 10000}, count=40, activity="kaggle")]
    result = compete(task, MECHANISMS.make("kaggle"), teams, rules, seed=5)
    for member in range(40):
        first, by_round = result.first_round[member], result.public_by_round[member]
        assert np.isnan(by_round[:first]).all() and not np.isnan(by_round[first])
    expected = [kaggle_schedule(30, 5, rules.cap, _activity_stream(teams[0], member, 5)) for member in range(40)]
    np.testing.assert_array_equal(result.first_round, [s.first for s in expected])
    np.testing.assert_array_equal(result.submissions, [s.total for s in expected])
    assert result.submissions.min() >= 1 and np.median(result.submissions) < rules.cap / 4


def _activity_stream(entry, member, seed):
    from ladderlab.runs.duel import spec
    from ladderlab.seeding import stream

    task = TASKS.make("latent-classification", n_train=300, n_public=300, n_holdout=900, n_features=8)
    return stream(seed, "activity", entry.activity, spec(task), entry.name, member, 0)


def test_an_unknown_activity_is_refused_by_name():
    with pytest.raises(ValueError, match="activity must be one of 'kaggle'.*'casual'"):
        TeamSpec("honest", activity="casual")


# --- the real leaderboards' statistics --------------------------------------------------------

def test_identical_leaderboards_do_not_shake_up_and_reversed_ones_do_completely():
    scores = np.linspace(0.5, 0.9, 50)
    same = leaderboard_shakeup(scores, scores + np.random.default_rng(0).normal(0, 1e-9, 50), sign=-1.0)
    assert same["top10_overlap"] == 1.0 and same["public_winner_private_rank"] == 1.0 and same["spearman"] > 0.999
    reversed_ = leaderboard_shakeup(scores, scores[::-1], sign=-1.0)
    assert reversed_["spearman"] == pytest.approx(-1.0) and reversed_["top10_overlap"] == 0.0
    assert reversed_["public_winner_private_rank"] == 50.0


# --- gaps against sampling noise --------------------------------------------------------------

@settings(max_examples=2, deadline=None)
@given(seed=SEEDS)
def test_a_fixed_submissions_gap_is_standard_normal_under_fresh_labels(seed):
    """Fresh labels at the holdout inputs, a submission fixed in advance that is better on the public
    rows than on the private ones (so the mean matters): its z lies within ±1.96 as often as 95%
    allows (Clopper–Pearson at 1e-6) and its mean is 0 (±4.9 standard errors, a normal tail of 1e-6).
    Leaving out the private noise or the mean fails."""
    rng = np.random.default_rng(seed)
    split = TASKS.make("latent-classification", n_train=300, n_public=1000, n_holdout=3000, n_features=8).split(rng)
    p = split.holdout_probabilities
    prediction = (p >= 0.5).astype(float)
    prediction[split.final_rows[: split.final_rows.size // 3]] = 1.0 - prediction[split.final_rows[: split.final_rows.size // 3]]
    scorer = HoldoutScorer(split, "zero-one", np.array([0.0, 1.0]))
    scores = scorer.score(prediction[None, :])
    draws = 8000
    errors = (rng.random((draws, p.size)) < p) != prediction.astype(bool)
    public = errors[:, split.public_rows].mean(axis=1)
    private = errors[:, split.final_rows].mean(axis=1)
    result = CompetitionResult(
        labels=["team"] * draws, honest=np.ones(draws, bool), accounts=np.ones(draws, int), public=public,
        private=private, population=np.full(draws, scores.population[0]), released_final=public,
        submissions=np.ones(draws, int), public_by_round=public[:, None], best_population=float(scores.population[0]),
        sign=1.0, n_public=split.public_rows.size, n_private=split.final_rows.size, scorer="zero-one",
        leaderboard_errors=np.zeros(draws), public_exact=public,
        population_public=np.full(draws, scores.population_public[0]),
        public_noise_sd=scorer.public_noise_sd, private_noise_sd=scorer.private_noise_sd)
    gap, z, sd = gap_z_scores(result)
    low, high = clopper_pearson(int(np.sum(np.abs(z) <= WITHIN_NOISE)), draws, 1 - FAILURE)
    assert low <= 0.95 <= high
    assert abs(z.mean()) < 4.9 / math.sqrt(draws)
    assert abs(gap.mean()) > 10 * sd / math.sqrt(draws)  # the mean gap is far from 0: μ did the work


def test_honest_teams_gaps_are_near_sampling_noise_and_a_hill_climbers_far_beyond():
    """One small competition: the honest teams' top tenth within a few noise sds, the cheater's own gaps not."""
    task = TASKS.make("latent-classification", n_train=1000, n_public=600, n_holdout=3000, n_features=12)
    rules = Rules(rounds=30, per_round=5, public_fraction=0.2, selection=2)
    teams = [TeamSpec("progressive-analyst", {"view": 10, "grow_every": 2, "submissions": 10000}, count=60, activity="kaggle"),
             TeamSpec("hill-climbing", {"k": 150, "start": "model", "block": 8}, count=3, label="cheater")]
    result = compete(task, MECHANISMS.make("full-disclosure"), teams, rules, seed=1)
    gap, z, sd = gap_z_scores(result)
    honest = np.array(result.labels) != "cheater"
    assert np.median(np.abs(z[honest])) < 2.5
    assert z[~honest].min() > 2.0 and z[~honest].mean() > np.median(z[honest]) + 1.5
    assert math.isclose(sd, math.hypot(result.public_noise_sd, result.private_noise_sd))
    no_closed_form = replace(result, public_noise_sd=float("nan"))
    assert gap_z_scores(no_closed_form) is None


# --- the pages and the benchmark ----------------------------------------------------------------

TINY = """
schema_version = 1
name = "tiny-realistic"
replications = 2

[[competition]]
tasks = [{ id = "latent-classification", params = { n_train = 300, n_public = 200, n_holdout = 900, n_features = 8 } }]
mechanisms = [{ id = "full-disclosure" }, { id = "ladder-free" }]
rules = [{ rounds = 10, per_round = 3, public_fraction = 0.2, selection = 2 }]

[[competition.mixes]]
name = "honest"
teams = [{ policy = "progressive-analyst", count = 25, activity = "kaggle", params = { view = 6, grow_every = 2, submissions = 100 } }]

[[competition.mixes]]
name = "honest-and-hill-climbing"
teams = [{ policy = "progressive-analyst", count = 25, activity = "kaggle", params = { view = 6, grow_every = 2, submissions = 100 } },
         { policy = "hill-climbing", count = 2, params = { k = 30, start = "model", block = 4 }, label = "hill-climbing" }]
"""


def test_the_pages_put_the_simulation_beside_every_real_leaderboard_and_name_the_cheaters(tmp_path):
    from ladderlab.competition.kaggle_calibration import REAL_LEADERBOARDS
    from ladderlab.competition.results import load_competition_results
    from ladderlab.dev.realism import roelofs_page, shakeup_page
    from ladderlab.runs import runner

    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    runner.run(path, tmp_path / "run")
    results = load_competition_results(tmp_path / "run", teams=True)
    honest = results[results.mix == "honest"]
    shakeup = shakeup_page(honest, "ladderlab dev realism shakeup --out page.md")
    assert all(real.title in shakeup for real in REAL_LEADERBOARDS)
    assert "kaggle-realistic, full-disclosure (2 replications)" in shakeup and "ladder-free" in shakeup
    roelofs = roelofs_page(results[results.mechanism == "full-disclosure"], "ladderlab dev realism roelofs --out page.md")
    assert "| honest-and-hill-climbing |" in roelofs and "With hill-climbing among them" in roelofs
    assert "nan" not in roelofs.lower()
    disclosure = results[results.mechanism == "full-disclosure"]
    cheaters_first = disclosure.sort_values("mix", key=lambda mix: mix != "honest-and-hill-climbing", kind="stable")
    honest_within = disclosure[disclosure.mix == "honest"].gap_top_within_noise
    headline = f"sampling noise alone) | {np.median(honest_within):.2f} ["
    assert headline in roelofs_page(cheaters_first, "ladderlab dev realism roelofs --out page.md"), \
        "the headline is the honest population's, whatever the order of the rows"


@pytest.mark.slow
def test_the_competition_benchmark_times_a_cell_against_the_floor(tmp_path):
    from ladderlab.dev.competition_benchmark import run, table

    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    (row,) = run([str(path)], only="ladder-free, mix honest-and")
    assert row["teams"] == 27 and row["submissions"] > 27 and row["floor_seconds"] > 0
    assert row["cpu_seconds"] > 0 and row["peak_mb"] > 0
    assert "| tiny-realistic |" in table([row])
    first, second = run([str(path)], only="mix honest-and")
    assert first["process"] != second["process"], "each cell's peak memory must be its own process's"
    with pytest.raises(ValueError, match="no competition cell .* whose label contains 'nothing'"):
        run([str(path)], only="nothing")
