"""The Bayesian-bootstrap Ladders' test draws only what its decision depends on
(ladderlab.engines.bootstrap.PairedImprovement): the same distribution as n exponential weights per
replicate, checked against those weights by exact bounds at a failure probability of 1e-9."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.engines.bootstrap import (
    PairedImprovement,
    improvements_needed,
    improves_sequentially,
    posterior_odds,
    posterior_probability_of_improvement,
)
from ladderlab.scoring import get_scorer

seeds = st.integers(0, 2**32 - 1)
DELTA = 1e-9


def hoeffding(draws: int, delta: float = DELTA) -> float:
    """Half-width within which a mean of ``draws`` indicators lies of its expectation, but with probability δ."""
    return math.sqrt(math.log(2 / delta) / (2 * draws))


def exponential_frequency(difference: np.ndarray, replicates: int, rng: np.random.Generator) -> float:
    """The definition: the share of replicates whose standard exponential weights give w·d < 0."""
    return float(np.mean(rng.standard_exponential((replicates, difference.size)) @ difference < 0))


def two_valued_difference(rng: np.random.Generator) -> np.ndarray:
    """A loss difference with one positive value a, one negative −b, and zeros, shuffled."""
    better, worse, same = rng.integers(1, 15), rng.integers(1, 15), rng.integers(0, 10)
    a, b = rng.uniform(0.1, 3.0, size=2)
    return rng.permutation(np.concatenate([np.full(worse, a), np.full(better, -b), np.zeros(same)]))


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_the_closed_probability_is_the_frequency_of_improving_exponential_weights(seed):
    """p = I_{b/(a+b)}(k₊, k₋): swapping the Beta's shapes or its point moves p by far more than the bound."""
    rng = np.random.default_rng(seed)
    difference = two_valued_difference(rng)
    probability = PairedImprovement(difference).probability
    assert probability is not None
    assert abs(exponential_frequency(difference, 20_000, rng) - probability) <= hoeffding(20_000)


def test_one_signed_differences_are_decided_without_drawing():
    """No replicate improves when no sample does, every replicate when none gets worse."""
    assert PairedImprovement(np.array([0.0, 1.0, 2.0])).probability == 0.0
    assert PairedImprovement(np.zeros(4)).probability == 0.0
    assert PairedImprovement(np.array([0.0, -1.0, -0.5])).probability == 1.0


@settings(max_examples=15, deadline=None)
@given(seed=seeds)
def test_group_sums_improve_as_often_as_the_exponential_weights(seed):
    """Where d takes a few values on many samples, the K gamma sums replace the n exponentials;
    gamma shapes that ignore the counts (one exponential per value) fail the two-sample bound."""
    rng = np.random.default_rng(seed)
    values = rng.choice([-1.5, -1.0, -0.25, 0.5, 1.0, 2.0], size=rng.integers(3, 6), replace=False)
    if values.min() > 0 or values.max() < 0:
        values[0] = -values[0]
    difference = rng.permutation(np.repeat(values, rng.integers(20, 60, size=values.size)))
    paired = PairedImprovement(difference)
    assert paired.grouped and paired.width == values.size
    replicates = 20_000
    grouped = paired.improved(rng, replicates) / replicates
    assert abs(grouped - exponential_frequency(difference, replicates, rng)) <= 2 * hoeffding(replicates, DELTA / 2)


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_distinct_non_zero_differences_draw_the_exponentials_as_before(seed):
    """Where every d is non-zero and distinct, the replicates are the n exponentials of the
    unchanged sampler: the same count, and the generator left in the same state, bit for bit."""
    difference = np.random.default_rng(seed).normal(size=50)
    paired, rng, before = PairedImprovement(difference), np.random.default_rng(seed), np.random.default_rng(seed)
    assert not paired.grouped and paired.probability is None
    assert paired.improved(rng, 300) == int(np.count_nonzero(before.standard_exponential((300, 50)) @ difference < 0))
    assert rng.bit_generator.state == before.bit_generator.state


@settings(max_examples=5, deadline=None)
@given(seed=seeds)
def test_the_one_draw_decision_of_a_zero_one_loss_has_the_full_tests_distribution(seed):
    """On a 0/1 loss the sequential test decides with one binomial draw; its acceptance rate equals
    that of the full B-replicate test of Chaibub Neto Alg. 5 (Dirichlet weights). The pair is
    chosen with an acceptance rate near ½ (new wins 20 rows, loses 14: p ≈ 0.85 against the 171 of
    200 replicates α = 0.15 needs), where drawing the count from Binomial(B, 1 − p) accepts never."""
    scorer, replicates, threshold, trials = get_scorer("zero-one"), 200, (1 - 0.15) / 0.15, 1500
    y = np.zeros(40)
    best = np.concatenate([np.ones(20), np.zeros(20)])
    new = np.concatenate([np.zeros(20), np.ones(14), np.zeros(6)])
    needed = improvements_needed(replicates, threshold)
    streams = np.random.SeedSequence(seed).spawn(2 * trials)
    one_draw = np.mean([improves_sequentially(scorer, y, new, best, replicates, needed, np.random.default_rng(stream))
                        for stream in streams[:trials]])
    full = np.mean([posterior_odds(posterior_probability_of_improvement(
        scorer, y, new, best, replicates, np.random.default_rng(stream))) >= threshold for stream in streams[trials:]])
    assert abs(one_draw - full) <= 2 * hoeffding(trials, DELTA / 2)
