"""Verdicts with a stated error: the confidence sequences, and the verdicts of points whose Δ
distribution is known, above, at and below −τ, over many seeds (exact binomial bounds)."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.certification import certify
from ladderlab.runs.scenario import Cell
from ladderlab.stats.sequential import (
    FAILS,
    INCONCLUSIVE,
    PASSES,
    confidence_sequence,
    first_decision,
    log_mixture_martingale,
    median_interval,
    replications_to_decide,
    stopping_verdict,
)

DELTA = 1e-6
CONFIDENCE = 0.95
TAU = 0.05
SEEDS = 600
MAXIMUM = 100
KNOWN_DELTA = str(Path(__file__).parent / "data" / "known_delta.py")
CELL = Cell(("random-labels", {}), ("kaggle", {}), ("guess", {}), 1, False)


def rows_with_delta(median: float, rng: np.random.Generator, count: int = MAXIMUM) -> list[dict]:
    """Replications whose Δ/B is the median plus N(0, 0.02), a continuous distribution, and whose
    leaderboard error stays far below ε."""
    return [{"status": "ok", "submissions": 1, "delta": median + 0.02 * z, "leaderboard_error": 0.0, "loss_bound": 1.0}
            for z in rng.standard_normal(count)]


def verdicts(median: float) -> dict[str, int]:
    criterion = certify.Criterion(TAU, 1.0, CONFIDENCE, MAXIMUM)
    counts = {PASSES: 0, FAILS: 0, INCONCLUSIVE: 0}
    for seed in range(SEEDS):
        rows = rows_with_delta(median, np.random.default_rng(seed))
        counts[certify.judge(CELL, "classification", rows[: criterion.needed(rows)], criterion).verdict] += 1
    return counts


def consistent_with_at_most(count: int, rate: float) -> bool:
    """``count`` of SEEDS events is consistent with a probability of at most ``rate`` (exact binomial, 1e-6)."""
    return stats.binom.sf(count - 1, SEEDS, rate) > DELTA


def test_a_point_whose_median_is_above_minus_tau_passes_and_wrongly_fails_at_most_alpha_of_the_time():
    counts = verdicts(-TAU + 0.02)
    assert consistent_with_at_most(counts[FAILS], 1 - CONFIDENCE)
    assert counts[PASSES] > 0.9 * SEEDS  # and it is decided: a verdict that is always inconclusive is no verdict


def test_a_point_whose_median_is_below_minus_tau_fails_and_wrongly_passes_at_most_alpha_of_the_time():
    counts = verdicts(-TAU - 0.02)
    assert consistent_with_at_most(counts[PASSES], 1 - CONFIDENCE)
    assert counts[FAILS] > 0.9 * SEEDS


def test_a_point_whose_median_sits_at_minus_tau_is_inconclusive_but_for_at_most_alpha_of_the_time():
    counts = verdicts(-TAU)
    assert consistent_with_at_most(counts[PASSES] + counts[FAILS], 1 - CONFIDENCE)


@pytest.mark.parametrize("pattern, expected", [([1, 0, 1, 0, 0], PASSES), ([0, 1, 0, 1, 1], FAILS)])
def test_the_outlook_of_an_undecided_point_is_where_its_observed_rate_decides(pattern, expected):
    """Indicators that keep the rate 2/5 (3/5) of their first 20 replications are decided, passing
    (failing), within one period of the count the outlook gives; the outlook at δ = α rather than α/2
    would be about 35 replications early."""
    held = np.array(pattern * 400, dtype=bool)
    outlook = replications_to_decide(float(held[:20].mean()), 0.0, 20, CONFIDENCE)
    decided = stopping_verdict(held, np.zeros(held.size, dtype=bool), CONFIDENCE)
    assert outlook.verdict == decided.verdict == expected
    assert abs(outlook.replications - decided.replications) <= len(pattern)


def test_an_undecided_point_whose_rate_sits_at_one_half_has_no_outlook():
    outlook = replications_to_decide(0.5, 0.0, 60, CONFIDENCE)
    assert outlook.verdict is None and outlook.replications is None
    row = {"attack_label": "guess", "budget": 1, "replications": 60, "n_ok": 60,
           "p_delta": {"estimate": 0.5, "lo": 0.3, "hi": 0.7}, "p_lberr": {"estimate": 0.0, "lo": 0.0, "hi": 0.1}}
    assert "no number of replications up to 1,000,000 would decide it" in certify._outlook_text(row, TAU, 1.0, CONFIDENCE)


def test_an_inconclusive_certificate_row_says_how_many_replications_would_decide_it():
    """A point stopped at 12 replications with Δ/B rates of ¼ below −τ: the certificate's text names
    the replications the outlook gives."""
    criterion = certify.Criterion(TAU, 1.0, CONFIDENCE, 12)
    rows = [{"status": "ok", "submissions": 1, "delta": -1.0 if i % 4 == 0 else 0.0, "leaderboard_error": 0.0,
             "loss_bound": 1.0} for i in range(12)]
    point = certify.judge(CELL, "classification", rows, criterion)
    outlook = replications_to_decide(0.25, 0.0, 12, CONFIDENCE)
    assert point.verdict == INCONCLUSIVE and outlook.verdict == PASSES and outlook.replications > 12
    assert point.measures["outlook"] == {"verdict": PASSES, "replications": outlook.replications}
    row = {"attack_label": "guess", "budget": 1, "replications": 12, **point.measures}
    text = certify._outlook_text(row, TAU, 1.0, CONFIDENCE)
    assert f"would pass after about {outlook.replications} replications" in text


def test_the_first_look_stops_clear_points_after_eight_replications():
    """Jeffreys' mixture at δ = 0.025: eight unanimous replications exclude ½, seven do not."""
    assert first_decision(CONFIDENCE) == 8
    criterion = certify.Criterion(TAU, 1.0, CONFIDENCE, MAXIMUM)
    assert criterion.needed(rows_with_delta(0.0, np.random.default_rng(0))) == 8
    assert criterion.needed(rows_with_delta(-1.0, np.random.default_rng(0))) == 8


@given(seed=st.integers(0, 2**32 - 1), p=st.sampled_from([0.02, 0.3, 0.5, 0.8]))
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


@pytest.mark.parametrize("shift, expected", [(0.0, PASSES), (-0.1, FAILS), (-0.05, INCONCLUSIVE)])
def test_certify_decides_a_known_delta_above_below_and_at_minus_tau(shift, expected, tmp_path):
    """End to end: a mechanism that releases the exact score plus ``shift`` against one random
    guess on n = 2000 random labels has Δ ≈ shift + N(0, 0.014); τ = 0.05 (ε = 1: only Δ decides)."""
    certificate = certify.certify(f"{KNOWN_DELTA}:Shifted", {"shift": shift}, n=2000, budgets=[1],
                                  attacks=[f"{KNOWN_DELTA}:Guess"], default_battery=False, replications=60, seed=3,
                                  epsilon=1.0, scorer="zero-one", honest_replications=1, run_dir=tmp_path / "battery")
    (row,) = certificate["battery"]
    assert row["verdict"] == expected
    assert row["replications"] == (60 if expected == INCONCLUSIVE else 8)


def test_the_same_seed_gives_the_same_certificate_whatever_the_number_of_workers(tmp_path):
    runs = [certify.certify("kaggle", n=100, budgets=[20], attacks=["hill-climbing(block=4, repeats=1)"],
                            default_battery=False, replications=30, seed=4, jobs=jobs, scorer="zero-one",
                            honest_replications=2, run_dir=tmp_path / f"jobs-{jobs}")
            for jobs in (1, 2)]
    for certificate in runs:
        for key in ("wall_time_seconds", "cpu_time_seconds", "run_dir"):
            certificate.pop(key)
    assert runs[0] == runs[1]
