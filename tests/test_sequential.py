"""Verdicts with a stated error: the confidence sequences, the tail criterion on points whose rate of
overfitting past τ is known (at, above and below β, over many seeds, exact binomial bounds), and the
family-wise error of a certificate's many points."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.certification import certify
from ladderlab.certification.certificate_text import _outlook_text
from ladderlab.runs.scenario import Cell
from ladderlab.stats.sequential import (
    FAILS,
    INCONCLUSIVE,
    MEDIAN,
    PASSES,
    confidence_sequence,
    first_decision,
    log_mixture_martingale,
    median_interval,
    per_sequence_error,
    replications_to_decide,
    stopping_verdict,
)

DELTA = 1e-6
CONFIDENCE = 0.95
BETA = 0.1
TAU = 0.05
SEEDS = 600
MAXIMUM = 400
ONE_POINT = per_sequence_error(CONFIDENCE, 1)
KNOWN_DELTA = str(Path(__file__).parent / "data" / "known_delta.py")
CELL = Cell(("random-labels", {}), ("kaggle", {}), ("guess", {}), 1, False)


def rows_with_rate(rate: float, rng: np.random.Generator, count: int = MAXIMUM) -> list[dict]:
    """Replications whose Δ lies past −τ (−2τ plus small noise) in a share ``rate`` of them, well inside
    it (small noise around 0) otherwise, and whose leaderboard stays far below ε."""
    beyond = rng.random(count) < rate
    noise = 0.005 * rng.standard_normal(count)
    return [{"status": "ok", "submissions": 1, "delta": (-2 * TAU if out else 0.0) + z, "leaderboard_error": 0.0,
             "leaderboard_optimism": 0.0, "leaderboard_lag": 0.0, "loss_bound": 1.0} for out, z in zip(beyond, noise)]


def verdicts(rate: float, criterion: certify.Criterion, seeds: int = SEEDS) -> dict[str, int]:
    counts = {PASSES: 0, FAILS: 0, INCONCLUSIVE: 0}
    for seed in range(seeds):
        counts[criterion.decision(rows_with_rate(rate, np.random.default_rng(seed), criterion.maximum)).verdict] += 1
    return counts


def consistent_with_at_most(count: int, rate: float, trials: int = SEEDS) -> bool:
    """``count`` of ``trials`` events is consistent with a probability of at most ``rate`` (exact binomial, 1e-6)."""
    return stats.binom.sf(count - 1, trials, rate) > DELTA


TAIL = certify.Criterion(TAU, 1.0, ONE_POINT, BETA, MAXIMUM)


def test_a_point_that_overfits_past_tau_in_a_quarter_of_beta_of_contests_passes_and_wrongly_fails_at_most_alpha():
    counts = verdicts(BETA / 4, TAIL)
    assert consistent_with_at_most(counts[FAILS], 1 - CONFIDENCE)
    assert counts[PASSES] > 0.9 * SEEDS  # and it is decided: a verdict that is always inconclusive is no verdict


def test_a_point_that_overfits_past_tau_in_three_times_beta_of_contests_fails_and_wrongly_passes_at_most_alpha():
    counts = verdicts(3 * BETA, TAIL)
    assert consistent_with_at_most(counts[PASSES], 1 - CONFIDENCE)
    assert counts[FAILS] > 0.9 * SEEDS


def test_a_point_whose_rate_sits_at_beta_is_inconclusive_but_for_at_most_alpha_of_the_time():
    counts = verdicts(BETA, TAIL)
    assert consistent_with_at_most(counts[PASSES] + counts[FAILS], 1 - CONFIDENCE)


def test_the_tail_is_not_the_median():
    """A point that overfits past τ in 30 % of contests has its median Δ well inside τ: the median
    criterion (β = ½, before version 3) passes it, the tail criterion fails it."""
    rows = rows_with_rate(0.3, np.random.default_rng(1))
    assert np.median([row["delta"] for row in rows]) > -TAU
    median = certify.Criterion(TAU, 1.0, ONE_POINT, MEDIAN, MAXIMUM)
    assert median.decision(rows).verdict == PASSES and TAIL.decision(rows).verdict == FAILS


def test_the_certificates_verdicts_hold_together_and_a_per_point_error_does_not():
    """A certificate of 20 points whose every rate sits at β, the worst case: in at most α = 5 % of 300
    certificates is any point decided (exact binomial bound), with each of its 40 sequences at α / 40
    (:func:`per_sequence_error`, what a certificate's criterion uses). With each point at α / 2, as a single
    point's verdict would be, some point is decided in far more of them."""
    points, seeds, maximum = 20, 300, 200
    wrong = {"family": 0, "point": 0}
    for seed in range(seeds):
        tails = np.random.default_rng(seed).random((points, 2, maximum)) < BETA
        for name, delta in (("family", per_sequence_error(CONFIDENCE, points)), ("point", ONE_POINT)):
            wrong[name] += any(stopping_verdict(x, y, delta, BETA, maximum).verdict in (PASSES, FAILS) for x, y in tails)
    assert consistent_with_at_most(wrong["family"], 1 - CONFIDENCE, seeds)
    assert not consistent_with_at_most(wrong["point"], 1 - CONFIDENCE, seeds)


def test_a_crashed_replication_counts_with_what_it_submitted_and_one_without_a_submission_overfits_nothing():
    crashed_early = {"status": "failed", "crashed": True, "submissions": 0, "error": "ValueError: no luck"}
    crashed_late = {**rows_with_rate(1.0, np.random.default_rng(0), 1)[0], "status": "failed", "crashed": True}
    failed = {"status": "failed", "error": "the task raised"}
    counted, beyond_tau, _ = TAIL.indicators([crashed_early, crashed_late, failed])
    assert counted == [0, 1] and beyond_tau.tolist() == [False, True]


@pytest.mark.parametrize("pattern, expected", [([1] + [0] * 9, PASSES), ([0, 1, 0, 0, 1], FAILS)])
def test_the_outlook_of_an_undecided_point_is_where_its_observed_rate_decides(pattern, expected):
    """Indicators that keep the rate 1/10 (2/5) of their first 20 replications, against β = 0.2, are decided,
    passing (failing), within one period of the count the outlook gives (an outlook at 2δ would be 21 and 7
    replications early); at the rate β itself nothing is."""
    held = np.array(pattern * 400, dtype=bool)
    level = 0.2
    outlook = replications_to_decide(float(held[:20].mean()), 0.0, 20, ONE_POINT, level)
    decided = stopping_verdict(held, np.zeros(held.size, dtype=bool), ONE_POINT, level)
    assert outlook.verdict == decided.verdict == expected
    assert abs(outlook.replications - decided.replications) <= len(pattern)
    assert replications_to_decide(level, 0.0, 60, ONE_POINT, level).verdict is None


def test_an_inconclusive_certificate_row_says_how_many_replications_would_decide_it():
    """A point stopped at 40 replications with a share 1/20 of Δ past −τ: the certificate's text names
    the replications the outlook gives."""
    criterion = certify.Criterion(TAU, 1.0, ONE_POINT, BETA, 40)
    rows = [{"status": "ok", "submissions": 1, "delta": -1.0 if i % 20 == 0 else 0.0, "leaderboard_error": 0.0,
             "leaderboard_optimism": 0.0, "loss_bound": 1.0} for i in range(40)]
    point = certify.judge(CELL, "classification", rows, criterion)
    outlook = replications_to_decide(0.05, 0.0, 40, ONE_POINT, BETA)
    assert point.verdict == INCONCLUSIVE and outlook.verdict == PASSES and outlook.replications > 40
    assert point.measures["outlook"] == {"verdict": PASSES, "replications": outlook.replications}
    row = {"attack_label": "guess", "budget": 1, "replications": 40, **point.measures}
    assert f"would pass after about {outlook.replications} replications" in _outlook_text(row, {})


def test_the_first_look_that_can_pass_a_point_grows_with_the_points_and_shrinks_with_beta():
    """Jeffreys' mixture: 8 unanimous replications decide a median at δ = 0.025 (the old criterion), 60 a tail
    of β = 0.1, and 123 the tail for each of 500 points at 95 % together."""
    assert first_decision(0.025) == 8
    assert first_decision(0.025, BETA) == 60
    assert first_decision(per_sequence_error(CONFIDENCE, 500), BETA) == 123
    criterion = certify.Criterion(TAU, 1.0, ONE_POINT, BETA, MAXIMUM)
    assert criterion.needed(rows_with_rate(0.0, np.random.default_rng(0))) == 60
    assert criterion.needed(rows_with_rate(1.0, np.random.default_rng(0))) < 8


@given(seed=st.integers(0, 2**32 - 1), p=st.sampled_from([0.02, 0.1, 0.3, 0.5, 0.8]))
@settings(max_examples=20, deadline=None)
def test_the_confidence_sequence_covers_p_at_every_time_at_the_stated_rate(seed, p):
    """Over 400 sequences of 200 Bernoulli(p) draws, p leaves the sequence (the mixture martingale
    at p reaches 1/δ) at some time in at most a δ = 2.5% share of them (Ville's inequality), up to
    the exact binomial bound at 1e-6."""
    rng = np.random.default_rng(seed)
    successes = np.cumsum(rng.random((400, 200)) < p, axis=1)
    trials = np.arange(1, 201)
    misses = int(np.sum((log_mixture_martingale(successes, trials, p) >= -np.log(0.025)).any(axis=1)))
    assert stats.binom.sf(misses - 1, 400, 0.025) > DELTA


def test_the_confidence_sequence_is_where_the_mixture_martingale_stays_below_one_over_delta():
    low, high = confidence_sequence(30, 100, 0.025)
    threshold = -np.log(0.025)
    for p, inside in ((low + 1e-6, True), (high - 1e-6, True), (low - 1e-3, False), (high + 1e-3, False), (0.3, True)):
        assert bool(log_mixture_martingale(30, 100, p) < threshold) is inside


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=10, deadline=None)
def test_the_median_interval_covers_the_median_at_its_confidence(seed):
    """The sign-test interval of 15 draws covers the true median 0 of a Cauchy in all but at most 5%
    of 1000 samples (exact binomial bound at 1e-6)."""
    rng = np.random.default_rng(seed)
    misses = 0
    for _ in range(1000):
        _, low, high = median_interval(rng.standard_cauchy(15), 0.95)
        misses += not low <= 0.0 <= high
    assert stats.binom.sf(misses - 1, 1000, 0.05) > DELTA


@pytest.mark.parametrize("rate, expected", [(0.0, PASSES), (0.5, FAILS)])
def test_certify_decides_a_mechanism_that_overstates_in_a_known_share_of_contests(rate, expected, tmp_path):
    """End to end: a mechanism that overstates every score by 0.1 in a share ``rate`` of its replications,
    against one random guess on n = 2000 random labels, with τ = ε = 0.05 in the scorer's units: the
    tail decides."""
    certificate = certify.certify(f"{KNOWN_DELTA}:Overstating", {"rate": rate}, n=2000, budgets=[1],
                                  attacks=[f"{KNOWN_DELTA}:Guess"], default_battery=False, replications=120, seed=3,
                                  tau=TAU, epsilon=TAU, unit="score", scorer="zero-one", honest_replications=1,
                                  run_dir=tmp_path / "battery")
    (row,) = certificate["battery"]
    assert row["verdict"] == expected and certificate["points"] == 1
    assert row["replications"] == (60 if expected == PASSES else row["replications"]) <= 60
    assert row["p_delta"]["estimate"] == row["p_optimism"]["estimate"]  # the two sides overstate together here


@pytest.mark.slow
def test_the_same_seed_gives_the_same_certificate_whatever_the_number_of_workers(tmp_path):
    runs = [certify.certify("kaggle", n=100, budgets=[20], attacks=["hill-climbing(block=4, repeats=1)"],
                            default_battery=False, replications=12, seed=4, jobs=jobs, scorer="zero-one",
                            honest_replications=2, run_dir=tmp_path / f"jobs-{jobs}")
            for jobs in (1, 2)]
    for certificate in runs:
        for key in ("wall_time_seconds", "cpu_time_seconds", "run_dir"):
            certificate.pop(key)
    assert runs[0] == runs[1]
