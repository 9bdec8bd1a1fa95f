"""The Bayesian-bootstrap test of Chaibub Neto Algs. 5–6."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladderlab.engines.bootstrap import (
    bootstrap_counts,
    posterior_odds,
    posterior_probability_of_improvement,
)
from ladderlab.scoring import get_scorer
from tests.helpers import bound

seeds = st.integers(0, 2**32 - 1)


@pytest.mark.slow
@given(seed=seeds, effect=st.floats(-0.3, 0.3))
def test_posterior_probability_is_one_minus_the_paired_bootstrap_p_value(seed, effect):
    """For a mean loss, P(H₁|D) under Dirichlet weights and 1 − p of the one-sided paired
    bootstrap both estimate P(mean difference < 0) to within the O(1/n) gap between the two
    bootstraps; each Monte-Carlo estimate of R replicates is within Hoeffding's
    √(log(2/δ)/2R) of its expectation (δ = 1e-9). A sign error, or unpaired weights on two
    highly correlated predictions, moves the probability by far more."""
    rng = np.random.default_rng(seed)
    n, R = 150, 20_000
    y = rng.normal(size=n)
    best = y + rng.normal(size=n)
    new = best + effect * (y - best) + 0.3 * rng.normal(size=n)
    posterior = posterior_probability_of_improvement(get_scorer("mse"), y, new, best, R, rng)
    differences = (new - y) ** 2 - (best - y) ** 2
    resampled = differences[rng.integers(0, n, (R, n))].mean(axis=1)
    one_minus_p = np.mean(resampled < 0)
    monte_carlo = 2 * math.sqrt(math.log(2 / 1e-9) / (2 * R))
    assert abs(posterior - one_minus_p) <= monte_carlo + 0.04


def test_posterior_probability_is_paired():
    """Two predictions that differ by a constant improvement on every sample: every paired
    replicate sees the improvement, so P(H₁|D) = 1; unpaired weights would not."""
    rng = np.random.default_rng(0)
    y = rng.normal(size=200)
    best = y + 1.0 + rng.normal(scale=0.01, size=200)
    new = best - 0.05
    assert posterior_probability_of_improvement(get_scorer("mse"), y, new, best, 2000, rng) == 1.0
    assert posterior_probability_of_improvement(get_scorer("mse"), y, best, new, 2000, rng) == 0.0


@pytest.mark.parametrize("scorer", ["pearson", "ccc"])
def test_larger_is_better_scores_are_tested_in_their_own_direction(scorer):
    rng = np.random.default_rng(1)
    y = rng.normal(size=300)
    good = y + 0.3 * rng.normal(size=300)
    poor = y + 3.0 * rng.normal(size=300)
    assert posterior_probability_of_improvement(get_scorer(scorer), y, good, poor, 1000, rng) > 0.999
    assert posterior_probability_of_improvement(get_scorer(scorer), y, poor, good, 1000, rng) < 0.001


def test_posterior_odds_threshold_follows_alpha():
    """Suppl. S2: α = 0.01, 0.15, 0.5 give PO_thr = 99, 5.67, 1."""
    y = np.arange(10.0)
    for alpha, threshold in [(0.01, 99), (0.15, 5.67), (0.5, 1)]:
        mechanism = bound("bayesboot-ladder", y, 0, scorer="ccc", alpha=alpha)
        assert mechanism.po_threshold_ == pytest.approx(threshold, abs=0.01)
    assert posterior_odds(1.0) == np.inf
    assert posterior_odds(0.5) == 1.0


@pytest.mark.parametrize("mechanism_id", ["bayesboot-ladder", "bayesboot-ladderboot"])
def test_bayesboot_ladder_accepts_clear_improvements_and_holds_otherwise(mechanism_id):
    rng = np.random.default_rng(2)
    y = rng.normal(size=400)
    noise = rng.normal(size=(3, 400))
    poor, good, same_as_good = y + 2 * noise[0], y + 0.5 * noise[1], y + 0.5 * noise[1]
    mechanism = bound(mechanism_id, y, 2, scorer="ccc", B=2000)
    mechanism.submit_many(np.stack([poor, good, same_as_good, poor]))
    assert mechanism.best_index_ == 1


def test_initial_prediction_must_be_beaten_first():
    rng = np.random.default_rng(3)
    y = rng.normal(size=300)
    strong = y + 0.1 * rng.normal(size=300)
    weak = y + 3 * rng.normal(size=300)
    mechanism = bound("bayesboot-ladder", y, 3, scorer="pearson", initial_prediction=strong)
    released = mechanism.submit(weak)
    assert mechanism.best_index_ is None
    assert released == pytest.approx(get_scorer("pearson").score(y, strong), abs=1 / 300)


@pytest.mark.parametrize("chunk_elements", [1 << 6, 1 << 20])
def test_bootstrap_counts_are_multinomial_n_uniform(chunk_elements):
    """Each row sums to n; each sample's count has mean 1 and is 0 with probability (1 − 1/n)^n
    (Hoeffding bounds at δ = 1e-9 with a union over the n samples)."""
    n, R, delta = 20, 20_000, 1e-9
    C = np.concatenate(list(bootstrap_counts(np.random.default_rng(5), R, n, chunk_elements)))
    assert C.shape == (R, n) and (C.sum(axis=1) == n).all()
    mean_bound = n * math.sqrt(math.log(4 * n / delta) / (2 * R))
    assert np.abs(C.mean(axis=0) - 1).max() <= mean_bound
    zero_bound = math.sqrt(math.log(4 * n / delta) / (2 * R))
    assert np.abs((C == 0).mean(axis=0) - (1 - 1 / n) ** n).max() <= zero_bound
