"""Bootstrap count vectors by Poissonization with exact completion (docs/decisions.md#ladderboot-poissonized).

The summed count vector C of b bootstrap resamples of n rows is Multinomial(N, 1/n, …, 1/n),
N = b·n (Chaibub Neto Alg. 4, lines 12–16). Give every row an independent count
G_i ~ Poisson(μ), all with one rate μ < N/n. Given T = Σ G_i = t, (G_i) is Multinomial(t, 1/n,
…, 1/n); an attempt with t > N is rejected (the rejection depends on T alone, so an accepted
attempt keeps that conditional law), and an accepted one is completed by N − t further indices
drawn uniformly: C = G + the counts of the extras is exactly Multinomial(N, 1/n, …, 1/n).

Every variate is read off one 64-bit word of the bit generator, by inversion against fixed-point
boundaries. "Exact" means: each outcome's probability is its probability computed in double
precision (scipy's Poisson CDF, absolute error below 10⁻¹³ up to μ = 1000), rounded to a
multiple of 2⁻⁶⁴ (numpy's own samplers draw 53-bit uniforms and compute in double precision);
the Poisson tail whose mass rounds to zero is merged into the last outcome. The completion
indices are numpy's bounded integers (exactly uniform; their 32-bit draws keep the spare half
word in the bit generator, so one call or several draw the same values).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Words = NDArray[np.uint64]

GUIDE_BITS = 16
"""The top bits of a word index the guide table (float32, 256 KiB: it stays in the L2 cache)."""

EXTRA_COST = 0.6
"""Cost of one completion index against one row's Poisson variate (measured; the rate's choice)."""

RELEASE_OVERHEAD = 900.0
"""numpy's per-call overhead of a release drawn among a few (about 8 µs), in rows' variates (measured)."""

_TWO_64 = 1 << 64


class PoissonWords:
    """Poisson(μ) variates from uniform 64-bit words by inversion, mostly one table lookup each.

    ``boundaries[k]`` is 2⁶⁴·P(X ≤ k) rounded to an integer, computed from the lower tail below
    the median and from the upper tail above it (so either side keeps double precision); a
    word w gives the count of boundaries ≤ w. The guide table maps the top ``GUIDE_BITS`` of a
    word to that count where all words with those bits give the same count, and to NaN where a
    boundary falls inside them; those words are inverted by a binary search.
    """

    def __init__(self, mu: float):
        if not mu > 0:
            raise ValueError(f"the Poisson rate must be positive, got {mu}")
        from scipy.special import (  # the Poisson cdf and sf; imported when a table is built
            pdtr,
            pdtrc,
        )

        ks = np.arange(int(mu + 40 * math.sqrt(mu) + 60))
        lower, upper = pdtr(ks, mu), pdtrc(ks, mu)
        if upper[-1] * _TWO_64 >= 0.5:
            raise AssertionError(f"Poisson({mu}) tail beyond {ks[-1]} is not below 2⁻⁶⁵")
        bounds = [round(math.ldexp(low, 64)) if low <= 0.5 else _TWO_64 - round(math.ldexp(high, 64))
                  for low, high in zip(lower.tolist(), upper.tolist())]
        self.boundaries = np.array([bound for bound in bounds if bound < _TWO_64], dtype=np.uint64)
        if np.any(np.diff(self.boundaries.astype(object)) < 0):
            raise AssertionError(f"Poisson({mu}) boundaries are not increasing")
        self.shift = np.uint64(64 - GUIDE_BITS)
        cells = np.arange(1 << GUIDE_BITS, dtype=np.uint64) << self.shift
        first = np.searchsorted(self.boundaries, cells, side="right")
        last = np.searchsorted(self.boundaries, cells | np.uint64((1 << (64 - GUIDE_BITS)) - 1), side="right")
        self.guide = np.where(first == last, first, np.nan).astype(np.float32)

    def variates(self, words: Words) -> NDArray[np.float32]:
        """The Poisson variate of every word, as float32 (exact integers), in the words' shape."""
        counts = np.take(self.guide, (words >> self.shift).view(np.int64))
        flat = counts.reshape(-1)
        unresolved = np.flatnonzero(np.isnan(flat))
        if unresolved.size:
            flat[unresolved] = np.searchsorted(self.boundaries, words.reshape(-1)[unresolved], side="right")
        return counts


@functools.lru_cache(maxsize=64)
def completion_margin(n: int, b: int) -> float:
    """c of the rate μ = (N − c·√N)/n: the c on a grid of 0.05 that minimises the expected cost of
    a release, n words per attempt over P(T ≤ N) attempts plus E[N − T | T ≤ N] completion
    indices (T normal with mean N − c·√N and variance N), with μ > 0."""
    N = b * n
    root = math.sqrt(N)
    grid = np.arange(0.0, 4.0, 0.05)
    grid = grid[N - grid * root > 0]
    costs = [_cost(n, root, c) for c in grid.tolist()]
    return float(grid[int(np.argmin(costs))])


def _cost(n: int, root: float, c: float) -> float:
    accepted = 0.5 * math.erfc(-c / math.sqrt(2))
    density = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
    return n / accepted + EXTRA_COST * root * (c + density / accepted)


@functools.lru_cache(maxsize=64)
def expected_cost(n: int, b: int) -> float:
    """Expected cost of a release at ``completion_margin``'s rate, in units of a row's variate."""
    return RELEASE_OVERHEAD + _cost(n, math.sqrt(b * n), completion_margin(n, b))


@functools.lru_cache(maxsize=16)
def poisson_words(n: int, b: int) -> PoissonWords:
    """The table of the rate μ = (N − c·√N)/n, c = ``completion_margin(n, b)``, built once per (n, b)."""
    total = b * n
    return PoissonWords((total - completion_margin(n, b) * math.sqrt(total)) / n)


class PoissonizedBootstrapMeans:
    """Draws of Σ lᵢ·Cᵢ / N, C ~ Multinomial(N = b·n, 1/n, …, 1/n), by Poissonization (module docstring).

    Attempts draw their n words in order from ``rng``; the accepted ones draw their N − t
    completion indices in order from ``completion``. Drawing releases one at a time or many at
    once consumes both streams identically, and each release's sums run over its own words
    only, so the values do not depend on how draws are grouped.
    """

    def __init__(self, loss: FloatArray, b: int):
        self.loss = loss
        self.n = loss.size
        self.total = b * self.n
        self.poisson = poisson_words(self.n, b)

    def draw(self, rng: np.random.Generator, completion: np.random.Generator, out: FloatArray,
             chunk_elements: int) -> FloatArray:
        """``out`` filled with independent releases, in order."""
        rows_per_chunk = max(1, chunk_elements // self.n)
        filled = 0
        while filled < out.size:
            attempts = min(rows_per_chunk, out.size - filled)
            counts = self.poisson.variates(rng.bit_generator.random_raw((attempts, self.n)))
            drawn = counts.sum(axis=1, dtype=np.float64)
            sums = (counts * self.loss).sum(axis=1)
            kept = drawn <= self.total
            if not kept.all():
                drawn, sums = drawn[kept], sums[kept]
            missing = (self.total - drawn).astype(np.int64)
            extras = np.take(self.loss, completion.integers(0, self.n, size=int(missing.sum())))
            starts = np.cumsum(missing) - missing
            some = missing > 0
            if some.all():
                sums += np.add.reduceat(extras, starts)
            elif some.any():
                sums[some] += np.add.reduceat(extras, starts[some])
            out[filled : filled + sums.size] = sums / self.total
            filled += sums.size
        return out
