"""Sage's bootLadderBoot draws only what its decision depends on for a per-sample loss
(ladderlab.engines.bootstrap.ResampleSums, docs/decisions.md#sage-sufficient-draws): the same laws as
full bootstrap count rows, checked against them by exact bounds at a failure probability of 1e-9."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ladderlab.mechanisms.sage_bootladderboot import bootladderboot_decision

from ladderlab.engines.bootstrap import ResampleSums, bootstrap_counts
from ladderlab.registry import MECHANISMS
from ladderlab.scoring import get_scorer

seeds = st.integers(0, 2**32 - 1)
DELTA = 1e-9
N = 40


def dkw(draws: int, delta: float) -> float:
    """Half-width within which an empirical CDF of ``draws`` lies of the true one everywhere,
    but with probability δ (Dvoretzky–Kiefer–Wolfowitz, Massart's constant)."""
    return math.sqrt(math.log(2 / delta) / (2 * draws))


def hoeffding(draws: int, width: float, delta: float) -> float:
    """Half-width within which a mean of ``draws`` values in an interval of ``width`` lies of its
    expectation, but with probability δ."""
    return width * math.sqrt(math.log(2 / delta) / (2 * draws))


def largest_cdf_gap(first: np.ndarray, second: np.ndarray) -> float:
    """sup_x |F₁(x) − F₂(x)| of two samples' empirical CDFs."""
    points = np.union1d(first, second)
    cdf = [np.searchsorted(np.sort(sample), points, side="right") / sample.size for sample in (first, second)]
    return float(np.max(np.abs(cdf[0] - cdf[1])))


def count_rows_sums(difference: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The definition: c·v for ordinary bootstrap count rows c."""
    return np.concatenate([counts @ difference for counts in bootstrap_counts(rng, resamples, difference.size)])


def zero_one_difference(better: int = 12, worse: int = 8) -> np.ndarray:
    """A 0/1 loss difference: the new submission is right on ``better`` rows the lead gets wrong,
    wrong on ``worse`` rows it gets right."""
    return np.concatenate([-np.ones(better), np.ones(worse), np.zeros(N - better - worse)])


DIFFERENCES = {
    "zero-one": zero_one_difference(),
    "block": np.concatenate([np.random.default_rng(0).uniform(0.5, 1.5, size=10), np.zeros(N - 10)]),
    "distinct": np.random.default_rng(1).normal(size=N),
}


@pytest.mark.parametrize("kind, grouped", [("zero-one", True), ("block", False), ("distinct", False)])
@settings(max_examples=2, deadline=None)
@given(seed=seeds)
def test_resample_sums_have_the_law_of_full_count_rows(kind, grouped, seed):
    """Each path (grouped multinomial of the 0/1 loss; indices on the changed block; indices on
    every row) against c·v for full count rows: a grouped multinomial whose cells ignore how many
    rows share a value, or a block drawn n/s times instead of Binomial(n, s/n), fails the bound."""
    rng = np.random.default_rng(seed)
    difference = DIFFERENCES[kind]
    sums = ResampleSums(difference)
    assert sums.grouped == grouped
    draws = 30_000
    gap = largest_cdf_gap(sums.draw(rng, draws), count_rows_sums(difference, draws, rng))
    assert gap <= 2 * dkw(draws, DELTA / 2)


def test_an_unchanged_loss_draws_nothing():
    """A resubmitted lead (d = 0 everywhere) sums to 0 in every resample without a random number."""
    rng, before = np.random.default_rng(0), np.random.default_rng(0)
    np.testing.assert_array_equal(ResampleSums(np.zeros(N)).draw(rng, 5), np.zeros(5))
    assert rng.bit_generator.state == before.bit_generator.state


def test_integer_differences_sum_exactly_so_that_ties_are_ties():
    """Sums of a 0/1 loss difference are exact integers on both paths: a tie d_b = 0 counts as
    new ≥ lead, as in Sage's R code, never by rounding."""
    rng = np.random.default_rng(0)
    for sums in (ResampleSums(zero_one_difference()), ResampleSums(np.r_[1.0, -1.0, np.zeros(N - 2)])):
        drawn = sums.draw(rng, 2000)
        np.testing.assert_array_equal(drawn, np.round(drawn))
        assert np.any(drawn == 0)


def full_resample_decision(scorer, labels, new, lead, resamples, rng):
    """Sage's bootLadderBoot as the R code computes it: every resample's score the mean of its
    resampled losses (an exact tie of integer losses stays a tie), all B resamples in full."""
    counts = np.concatenate(list(bootstrap_counts(rng, resamples, labels.size)))
    scores = counts @ scorer.loss(labels, np.stack([new, lead])).T / labels.size
    return bootladderboot_decision(scores[:, 0], scores[:, 1], scorer.greater_is_better)


def pair(kind: str):
    """(scorer, labels, lead, new): a 0/1 loss difference that favours the new submission
    (``zero-one``) or neither (``even``, where which mean is higher decides the inversion of K), a
    squared-loss difference on a block of 10 rows, as hill climbing makes, or on every row."""
    if kind in ("zero-one", "even"):
        labels = np.zeros(N)
        labels[-1] = lead_last = 1.0  # both classes occur; both predictions are right on it
        lead = np.concatenate([np.ones(12), np.zeros(N - 13), [lead_last]])
        better, worse = (12, 8) if kind == "zero-one" else (10, 10)
        new = lead.copy()
        new[:better], new[12 : 12 + worse] = 0.0, 1.0
        return get_scorer("zero-one"), labels, lead, new
    rng = np.random.default_rng(5)
    labels = rng.normal(size=N)
    lead = labels + rng.normal(size=N)
    if kind == "block":
        new = lead.copy()
        new[:10] = labels[:10] + 0.9 * np.random.default_rng(4).normal(size=10)
    else:
        new = lead + 0.05 * (labels - lead) + 0.5 * np.random.default_rng(7).normal(size=N)
    return get_scorer("squared"), labels, lead, new


@pytest.mark.parametrize("kind", ["zero-one", "even", "block", "distinct"])
@settings(max_examples=1, deadline=None)
@given(seed=seeds)
def test_the_bayes_factor_and_release_have_the_law_of_the_full_resamples(kind, seed):
    """The mechanism's Bayes factor K against the lead (a statistic of all B resamples) has the
    distribution of K from B full resamples, and its release the same mean: counting a 0/1 loss's
    ties against the new submission, or comparing the means of the first ``report_n`` resamples
    only, fails the DKW bound."""
    scorer, labels, lead, new = pair(kind)
    resamples, trials = 200, 3000
    streams = np.random.SeedSequence(seed).spawn(2 * trials)
    factors, released = np.empty(trials), np.empty(trials)
    for trial, stream in enumerate(streams[:trials]):
        mechanism = MECHANISMS.make("sage-bootladderboot", bootstrap_n=resamples).bind(
            labels, scorer, np.random.default_rng(stream))
        released[trial] = mechanism.submit_many(np.stack([lead, new]))[1]
        factors[trial] = mechanism.bayes_factors_[1]
    reference = [full_resample_decision(scorer, labels, new, lead, resamples, np.random.default_rng(stream))
                 for stream in streams[trials:]]
    reference_factors = np.array([decision.bayes for decision in reference])
    assert np.unique(reference_factors).size > 20
    assert largest_cdf_gap(factors, reference_factors) <= 2 * dkw(trials, DELTA / 4)
    losses = scorer.loss(labels, np.stack([new, lead]))
    width = float(losses.max() - losses.min())
    reference_released = np.array([decision.score for decision in reference])
    assert abs(released.mean() - reference_released.mean()) <= 2 * hoeffding(trials, width, DELTA / 4)
