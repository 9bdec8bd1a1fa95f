"""Poissonized bootstrap counts with completion have the multinomial's law, whatever the batching."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.engines.bootstrap import BootstrapMeanSampler
from ladderlab.engines.poissonized import (
    GUIDE_BITS,
    PoissonizedBootstrapMeans,
    PoissonWords,
    poisson_words,
)
from tests.helpers import ks_bound, ks_distance

seeds = st.integers(0, 2**32 - 1)
DELTA = 1e-9
CHUNK = 1 << 20


def poissonized(loss: np.ndarray, b: int, seed: int, draws: int, chunk: int = CHUNK) -> np.ndarray:
    rng, completion = np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])
    return PoissonizedBootstrapMeans(loss, b).draw(rng, completion, np.empty(draws), chunk)


def multinomial(loss: np.ndarray, b: int, seed: int, draws: int) -> np.ndarray:
    """The reference: the summed counts of b resamples as one Multinomial(b·n, 1/n, …, 1/n) draw."""
    counts = np.random.default_rng([seed, 2]).multinomial(b * loss.size, np.full(loss.size, 1 / loss.size), size=draws)
    return (counts * loss).sum(axis=1) / (b * loss.size)


def test_the_smallest_case_has_the_binomial_law_of_its_counts():
    """n = 2, b = 2 (N = 4, a rejection in every few attempts): with losses (0, 1) the release is
    C₁/4, C₁ ~ Binomial(4, 1/2); each of the five frequencies of 200,000 draws lies within
    Hoeffding's bound of its probability. Forgetting the completion, keeping an attempt with
    T > N, or a count table off by one, each moves a frequency by far more."""
    draws = 200_000
    released = poissonized(np.array([0.0, 1.0]), 2, 7, draws)
    frequencies = np.bincount(np.rint(4 * released).astype(int), minlength=5) / draws
    assert frequencies.size == 5
    tolerance = math.sqrt(math.log(2 * 5 / DELTA) / (2 * draws))
    np.testing.assert_array_less(np.abs(frequencies - stats.binom.pmf(np.arange(5), 4, 0.5)), tolerance)


LOSSES = {
    "zero-one": (lambda rng, n: (rng.uniform(size=n) < 0.3).astype(float)),
    "four values": (lambda rng, n: rng.integers(0, 4, n) / 3.0),
    "all distinct": (lambda rng, n: rng.exponential(size=n)),
}


def squared_deviation_is_its_expectation(released: np.ndarray, loss: np.ndarray, b: int) -> bool:
    """The median of means of (release − l̄)² over k = 8·ln(1/δ) groups lies within 2·√(v·k/R) of
    its expectation σ²/N (σ² the losses' variance), v the exact variance of one squared deviation
    (a release is the mean of N uniform picks of l, whose fourth central moment is exact): each
    group misses with probability ≤ 1/4 (Chebyshev), half of them with probability ≤ e^(−k/8) = δ."""
    N, centred = b * loss.size, loss - loss.mean()
    variance = np.mean(centred**2) / N
    fourth = (np.mean(centred**4) + 3 * (N - 1) * np.mean(centred**2) ** 2) / N**3
    groups = math.ceil(8 * math.log(1 / DELTA))
    size = released.size // groups
    means = ((released[: groups * size] - loss.mean()) ** 2).reshape(groups, size).mean(axis=1)
    return abs(float(np.median(means)) - variance) <= 2 * math.sqrt((fourth - variance**2) / size)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("n, b, draws", [(30, 5, 40_000), (200, 40, 20_000), (1200, 100, 8_000)])
@settings(max_examples=1, deadline=None)
@given(seed=seeds)
def test_releases_have_the_law_of_the_multinomial_releases(name, n, b, draws, seed):
    """Against numpy's multinomial, the two samples' KS distance is within the two-sample DKW
    bound; and 60,000 releases' squared deviations have the exact variance's expectation."""
    loss = LOSSES[name](np.random.default_rng(seed), n)
    assert ks_distance(poissonized(loss, b, seed, draws), multinomial(loss, b, seed, draws)) <= ks_bound(draws)
    assert squared_deviation_is_its_expectation(poissonized(loss, b, seed + 1, 40_000), loss, b)


@pytest.mark.slow
def test_the_checks_reject_counts_without_completion():
    """A plausible slip, every row Poisson(N/n) and no completion (the total itself random), adds
    l̄²/N to the variance: both checks of the test above fail on it."""
    rng = np.random.default_rng(0)
    n, b = 1200, 100
    loss = rng.exponential(size=n)
    wrong = (rng.poisson(b, (40_000, n)) * loss).sum(axis=1) / (b * n)
    assert not squared_deviation_is_its_expectation(wrong, loss, b)
    assert ks_distance(wrong[:8_000], multinomial(loss, b, 0, 8_000)) > ks_bound(8_000)


@pytest.mark.parametrize("mu", [0.3, 4.0, 99.1, 997.0])
def test_the_guide_table_agrees_with_inversion_at_both_ends_of_every_cell(mu):
    """The table's count of a word is the number of boundaries at or below it (binary search), at
    the first and the last word of every cell the top bits pick, and words inside unresolved
    cells are inverted by the search."""
    table = PoissonWords(mu)
    cells = np.arange(1 << GUIDE_BITS, dtype=np.uint64) << np.uint64(64 - GUIDE_BITS)
    for words in (cells, cells | np.uint64((1 << (64 - GUIDE_BITS)) - 1),
                  np.random.default_rng(int(mu)).bit_generator.random_raw(1 << 16)):
        np.testing.assert_array_equal(table.variates(words), np.searchsorted(table.boundaries, words, side="right"))


@pytest.mark.parametrize("mu", [0.3, 4.0, 99.1, 997.0])
def test_counts_from_uniform_words_have_the_poisson_law(mu):
    """Each outcome's share of the 2⁶⁴ words is its Poisson probability to 2⁻⁶³ plus the error of
    the double-precision CDF (10⁻¹³), and 10⁶ drawn variates' empirical CDF lies within DKW's
    bound of Poisson(μ)'s."""
    table = PoissonWords(mu)
    shares = np.diff(np.r_[0, table.boundaries.astype(object), 1 << 64]).astype(float) / 2.0**64
    outcomes = np.arange(shares.size)
    exact = stats.poisson.pmf(outcomes, mu)
    exact[-1] = stats.poisson.sf(outcomes[-1] - 1, mu)
    np.testing.assert_allclose(shares, exact, rtol=0, atol=1e-13 + 2.0**-63)
    draws = 1_000_000
    variates = table.variates(np.random.default_rng(1).bit_generator.random_raw(draws))
    cdf = np.searchsorted(np.sort(variates), outcomes, side="right") / draws
    assert np.max(np.abs(cdf - stats.poisson.cdf(outcomes, mu))) <= math.sqrt(math.log(2 / DELTA) / (2 * draws))


@settings(max_examples=30, deadline=None)
@given(seed=seeds, draws=st.integers(1, 30), cut=st.integers(0, 30), chunk=st.sampled_from([40, 200, CHUNK]))
def test_releases_do_not_depend_on_how_draws_are_grouped(seed, draws, cut, chunk):
    """Attempts read their words in order and completions theirs from the second stream: one call,
    two calls, or chunks of one or five attempts give the same values bit for bit."""
    cut = min(cut, draws)
    loss = np.random.default_rng(seed).exponential(size=40)
    together = poissonized(loss, 3, seed, draws)
    rng, completion = np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])
    sampler = PoissonizedBootstrapMeans(loss, 3)
    parts = np.concatenate([sampler.draw(rng, completion, np.empty(cut), chunk),
                            sampler.draw(rng, completion, np.empty(draws - cut), chunk)])
    np.testing.assert_array_equal(together, parts)


def test_the_sampler_takes_the_poissonized_path_only_where_it_is_cheaper_and_given_a_completion_stream():
    rng = np.random.default_rng(0)
    kaggle_like = BootstrapMeanSampler(rng.exponential(size=1200), 100)
    assert kaggle_like.poissonized is not None and kaggle_like.poissonized.poisson is poisson_words(1200, 100)
    assert BootstrapMeanSampler(rng.exponential(size=40), 20).poissonized is None  # the multinomial over 40 values
    assert BootstrapMeanSampler(rng.integers(0, 3, 1200) / 2.0, 100).poissonized is None  # three values
    without = kaggle_like.draw(np.random.default_rng(1), 5)
    np.testing.assert_array_equal(without, BootstrapMeanSampler(kaggle_like.loss, 100).draw(np.random.default_rng(1), 5))
    with_completion = kaggle_like.draw(np.random.default_rng(1), 5, np.random.default_rng(2))
    assert not np.array_equal(without, with_completion)
