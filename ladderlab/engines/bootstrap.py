"""Bootstrap primitives shared by LadderBoot and the Bayesian-bootstrap Ladders.

All of them draw from an explicit ``numpy.random.Generator`` and never build more
than ``CHUNK_ELEMENTS`` random numbers at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ladderlab.engines.poissonized import PoissonizedBootstrapMeans, expected_cost
from ladderlab.scoring import LossScorer, Scorer

FloatArray = NDArray[np.float64]

MAX_REPLICATES = 1_000_000
"""The most bootstrap replicates a mechanism's parameter may ask for: the Monte Carlo error of a
level at 10⁶ replicates is below 5·10⁻⁴, and more cost minutes per submission for nothing."""
CHUNK_ELEMENTS = 1 << 20
"""Largest random matrix drawn at once (8 MiB of float64)."""


INDEX_DRAW_FACTOR = 12
"""Draw b·n indices instead of a multinomial over K cells when b·n ≤ this × K."""

PAIR_TABLE_ENTRIES = 1 << 17
"""Index draws pick pairs of samples (one draw uniform on the n² ordered pairs, looked up in a
table of their loss sums: half the draws) when n² is at most this (a table of 1 MiB)."""

MULTINOMIAL_COST = 10.0
"""Cost of one conditional binomial of numpy's multinomial against one row's Poisson variate of
:class:`ladderlab.engines.poissonized.PoissonizedBootstrapMeans` (measured)."""


class BootstrapMeanSampler:
    """Exact draws of the mean of b bootstrap means of one loss vector, in O(K) each.

    Resampling b times n indices and averaging the b means is ``C·l / (b·n)`` where
    C, the summed count vectors, is ``Multinomial(b·n, (1/n, …, 1/n))`` (Chaibub Neto
    Alg. 4, lines 12–16). Samples with equal losses can be merged: the counts of the K
    distinct values v_k, present c_k times, are ``Multinomial(b·n, c_k/n)``, so the
    release is ``Σ_k v_k·G_k / (b·n)``, the same distribution. For a 0/1 loss (K = 2)
    it is one ``Binomial(b·n, k/n)`` draw. When b·n is small against K, drawing the
    b·n indices and summing their losses is cheaper than K binomial draws; where n² is
    small (``PAIR_TABLE_ENTRIES``), the indices are drawn two at a time, as one index
    uniform on the n² ordered pairs (i, j) whose loss sum l_i + l_j is looked up (an odd
    b·n takes the first sample of one more pair). Where many losses are distinct and b·n is
    large, a caller that gives a second stream (``completion``) gets the counts of all n
    samples by Poissonization with exact completion
    (:class:`ladderlab.engines.poissonized.PoissonizedBootstrapMeans`) when its expected cost is
    below the multinomial's. All paths are exact, and the choice depends only on (loss, b)
    and whether a completion stream is given, so a transcript does not depend on how
    submissions are batched.
    """

    def __init__(self, loss: FloatArray, b: int):
        self.values, counts = np.unique(loss, return_counts=True)
        self.b = b
        self.total = b * loss.size
        self.pvals = counts / loss.size
        self.loss = loss
        self.by_index = self.total <= INDEX_DRAW_FACTOR * self.values.size
        self.pair_sums = pair_table(loss) if self.by_index else None
        self.poissonized: PoissonizedBootstrapMeans | None = None
        if self.values.size > 2 and not self.by_index and MULTINOMIAL_COST * self.values.size > expected_cost(loss.size, b):
            self.poissonized = PoissonizedBootstrapMeans(loss, b)

    def draw(self, rng: np.random.Generator, draws: int = 1, completion: np.random.Generator | None = None) -> FloatArray:
        """``draws`` independent releases, in order (the values do not depend on how draws are
        grouped); ``completion``: the stream of the Poissonized path's completion indices."""
        out = np.empty(draws)
        if self.values.size == 1:
            out[:] = self.values[0]
            return out
        if self.values.size == 2:
            high = rng.binomial(self.total, self.pvals[1], size=draws)
            out[:] = (self.values[0] * (self.total - high) + self.values[1] * high) / self.total
            return out
        if self.by_index:
            return self._draw_by_index(rng, out)
        if self.poissonized is not None and completion is not None:
            return self.poissonized.draw(rng, completion, out, CHUNK_ELEMENTS)
        rows_per_chunk = max(1, CHUNK_ELEMENTS // self.values.size)
        for start in range(0, draws, rows_per_chunk):
            rows = min(rows_per_chunk, draws - start)
            counts = rng.multinomial(self.total, self.pvals, size=rows)
            out[start : start + rows] = (counts * self.values).sum(axis=1) / self.total
        return out

    def _draw_by_index(self, rng: np.random.Generator, out: FloatArray) -> FloatArray:
        """``out`` filled with releases from b·n drawn indices (in pairs where the table exists)."""
        per_release = self.total if self.pair_sums is None else (self.total + 1) // 2
        rows_per_chunk = max(1, CHUNK_ELEMENTS // per_release)
        for start in range(0, out.size, rows_per_chunk):
            rows = min(rows_per_chunk, out.size - start)
            out[start : start + rows] = index_sums(rng, self.loss, self.pair_sums, self.total, rows) / self.total
        return out


def pair_table(values: FloatArray) -> FloatArray | None:
    """v_i + v_j over the n² ordered pairs (row-major), or None where n² exceeds ``PAIR_TABLE_ENTRIES``."""
    return (values[:, None] + values[None, :]).ravel() if values.size**2 <= PAIR_TABLE_ENTRIES else None


def index_sums(rng: np.random.Generator, values: FloatArray, pair_sums: FloatArray | None, draws: int,
               rows: int) -> FloatArray:
    """Per row, the sum of ``draws`` values drawn uniformly with replacement from ``values``: two at a
    time where ``pair_sums`` (:func:`pair_table`) is given, one index uniform on the n² pairs (an odd
    count takes the first value of one more pair)."""
    n = values.size
    if pair_sums is None:
        return np.take(values, rng.integers(0, n, size=(rows, draws))).sum(axis=1)
    pairs = rng.integers(0, n * n, size=(rows, (draws + 1) // 2))
    sums = np.take(pair_sums, pairs)
    if draws % 2:
        sums[:, -1] = np.take(values, pairs[:, -1] // n)
    return sums.sum(axis=1)


def bootstrap_mean_losses(
    loss: FloatArray, b: int, rng: np.random.Generator, draws: int = 1
) -> FloatArray:
    """``draws`` independent values of the mean of b bootstrap means of the loss vector
    (see :class:`BootstrapMeanSampler`, which a caller drawing repeatedly should keep)."""
    return BootstrapMeanSampler(loss, b).draw(rng, draws)


def dirichlet_weights(rng: np.random.Generator, replicates: int, n: int) -> Iterator[FloatArray]:
    """Dirichlet(1, …, 1) weight matrices in chunks: normalised standard exponentials (docs/decisions.md#bayesian-bootstrap)."""
    rows_per_chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        exponentials = rng.standard_exponential((rows, n))
        yield exponentials / exponentials.sum(axis=1, keepdims=True)


class BootstrapScoreSampler:
    """Draws of the mean of b ordinary bootstrap replicates of the score of one prediction.

    Chaibub Neto Alg. 4 lines 12–16 and Alg. 6 lines 12–16 (docs/decisions.md#bayesboot-ladderboot-release). For a mean
    loss it is the exact :class:`BootstrapMeanSampler`; any other metric is evaluated
    on b resampled count rows (``Scorer.by_counts``: one product with a moment matrix
    built once per prediction, for the moment metrics).
    """

    def __init__(self, scorer: Scorer, y: FloatArray, prediction: FloatArray, b: int):
        self.scorer, self.y, self.prediction, self.b = scorer, y, prediction[None, :], b
        if isinstance(scorer, LossScorer):
            self.losses: BootstrapMeanSampler | None = BootstrapMeanSampler(scorer.loss(y, self.prediction)[0], b)
        else:
            self.losses = None
            self.scores_by_counts = scorer.by_counts(y, self.prediction)

    def draw(self, rng: np.random.Generator) -> float:
        """One release."""
        if self.losses is not None:
            return float(self.losses.draw(rng)[0])
        total = 0.0
        for counts in bootstrap_counts(rng, self.b, self.y.size):
            total += float(np.nansum(self.scores_by_counts(counts)))
        return total / self.b


def bootstrap_counts(rng: np.random.Generator, replicates: int, n: int,
                     chunk_elements: int = CHUNK_ELEMENTS) -> Iterator[FloatArray]:
    """Count matrices (row j: how often each sample was drawn in resample j) of ordinary
    bootstrap resamples, in chunks of about ``chunk_elements``: a weighted moment under
    row j / n is the moment of the resampled (ŷ, y) pairs. The n indices of a resample are
    drawn as 16-bit integers where n allows (numpy draws them about twice as fast)."""
    rows_per_chunk = max(1, chunk_elements // n)
    offsets = n * np.arange(min(rows_per_chunk, replicates))[:, None]
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        draws = uniform_indices(rng, n, (rows, n)) + offsets[:rows]
        yield np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n).astype(float)


BINOMIAL_COST = 10.0
"""Cost of one binomial variate (a cell of numpy's multinomial) against one 16-bit index drawn, looked
up and summed (measured: 9 to 14)."""

CACHED_CHUNK_ELEMENTS = 1 << 16
"""Indices :class:`ResampleSums` draws at once: their lookups stay in cache (chunks of ``CHUNK_ELEMENTS``
made a continuous difference's sums 2.5 times slower)."""


class ResampleSums:
    """Exact draws of c·v for bootstrap count rows c ~ Multinomial(n, (1/n, …, 1/n)): the sum of the
    vector v over one ordinary bootstrap resample of its n samples, Σ_j v_{I_j} with I_j uniform.

    It depends on the counts only through those of the s samples with v ≠ 0, so those alone are drawn,
    from their exact joint law, in the cheaper of two ways (``BINOMIAL_COST``): *grouped*, the draws
    N_k that land on each of the K distinct non-zero values v_k (on m_k samples) are the first K cells
    of Multinomial(n, (m_1/n, …, m_K/n, 1 − s/n)) and the sum is Σ_k v_k·N_k (K binomials per
    resample: a 0/1 loss difference has K ≤ 2); *by support*, L ~ Binomial(n, s/n) of the n draws
    land on the s samples, uniformly among them, and their values are summed (one binomial, none
    when s = n, and L indices; where s = n and n² is small, n/2 indices of pairs, as
    :class:`BootstrapMeanSampler` draws them). A resample's sum is added up from the drawn values,
    so it is exact where v takes integer values (a 0/1 loss difference): its sign and the sign of a
    total of sums are then never decided by rounding. The path depends on v alone.
    """

    def __init__(self, v: FloatArray):
        self.n = v.size
        self.support = v[v != 0]
        self.values, counts = np.unique(self.support, return_counts=True)
        self.pvals = np.append(counts, self.n - self.support.size) / self.n
        by_support = (BINOMIAL_COST if self.support.size < self.n else 0.0) + self.support.size
        self.grouped = BINOMIAL_COST * self.values.size < by_support
        self.pair_sums = pair_table(v) if self.support.size == self.n and not self.grouped else None

    def draw(self, rng: np.random.Generator, resamples: int) -> FloatArray:
        """The sums of ``resamples`` independent resamples."""
        out = np.zeros(resamples)
        if self.support.size == 0:
            return out
        if self.grouped:
            width = self.values.size + 1
        else:
            width = self.support.size if self.pair_sums is None else (self.n + 1) // 2
        rows_per_chunk = max(1, CACHED_CHUNK_ELEMENTS // width)
        for start in range(0, resamples, rows_per_chunk):
            rows = min(rows_per_chunk, resamples - start)
            out[start : start + rows] = self._grouped(rng, rows) if self.grouped else self._by_support(rng, rows)
        return out

    def _grouped(self, rng: np.random.Generator, rows: int) -> FloatArray:
        landed = rng.multinomial(self.n, self.pvals, size=rows)[:, :-1]
        return landed @ self.values

    def _by_support(self, rng: np.random.Generator, rows: int) -> FloatArray:
        s = self.support.size
        if self.pair_sums is not None:
            return index_sums(rng, self.support, self.pair_sums, s, rows)
        if s == self.n:
            return np.take(self.support, uniform_indices(rng, s, (rows, s))).sum(axis=1)
        landed = rng.binomial(self.n, s / self.n, size=rows)
        drawn = np.take(self.support, uniform_indices(rng, s, int(landed.sum())))
        return np.bincount(np.repeat(np.arange(rows), landed), weights=drawn, minlength=rows)


def uniform_indices(rng: np.random.Generator, n: int, size: int | tuple[int, ...]) -> NDArray[np.integer]:
    """Indices uniform on 0 … n − 1, in the narrowest unsigned type that holds them (numpy's
    bounded integers are exact in every type, and the narrow ones cost fewer random bits)."""
    return rng.integers(0, n, size=size, dtype=np.uint16 if n <= 1 << 16 else np.int64)


def posterior_probability_of_improvement(
    scorer: Scorer,
    y: FloatArray,
    new: FloatArray,
    best: FloatArray,
    replicates: int,
    rng: np.random.Generator,
) -> float:
    """P(H₁ | D): the fraction of B paired Bayesian-bootstrap replicates in which ``new`` beats ``best``.

    Chaibub Neto, Methods (Algorithms 5–6, line 9–10): the same Dirichlet weight
    vector weights both predictions; H₁ is Δs > 0 for larger-is-better scores and
    Δs < 0 for smaller-is-better ones. A replicate whose Δs is undefined (NaN) does
    not count as an improvement.
    """
    pair = np.stack([new, best])
    improved = 0
    for W in dirichlet_weights(rng, replicates, y.size):
        scores = scorer.weighted(y, pair, W)
        improved += int(np.count_nonzero(scorer.sign * (scores[:, 0] - scores[:, 1]) < 0))
    return improved / replicates


MIN_CHUNK_REPLICATES = 16
"""The fewest replicates the sequential test draws at once: fewer cost more in per-call
overhead than in draws."""


def posterior_odds(probability: float) -> float:
    """P / (1 − P), infinite when P = 1."""
    return np.inf if probability >= 1.0 else probability / (1.0 - probability)


def improvements_needed(replicates: int, po_threshold: float) -> int:
    """The smallest count k of improved replicates out of B with
    ``posterior_odds(k / B) ≥ po_threshold`` (B + 1 when no count reaches it). The odds,
    even rounded, never fall as k grows, so the B-replicate test accepts ⇔ count ≥ k."""
    return next((k for k in range(replicates + 1) if posterior_odds(k / replicates) >= po_threshold), replicates + 1)


GAMMA_COST = 6.0
"""Cost of one standard gamma variate against one standard exponential (measured: 2 to 6 times,
by shape)."""


class PairedImprovement:
    """Whether a paired Bayesian-bootstrap replicate improves, for a per-sample loss: w·d < 0 with
    d = l_new − l_best and w standard exponentials, the unnormalised Dirichlet(1, …, 1) weights
    (Chaibub Neto et al. 2016, Algs. 5–6, line 9).

    The sign depends on the weights only through the sums of those of the samples that share a
    value of d, so the replicates are drawn from those statistics' exact joint law: a sample with
    d = 0 contributes nothing and is left out; the c_k weights of the samples with d = v_k sum to
    G_k ~ Gamma(c_k, 1), independent across values, drawn as K gamma variates where that is cheaper
    than the exponentials (``GAMMA_COST``). Where d takes at most one positive value a (on k₊
    samples) and one negative value −b (on k₋), as for any 0/1 loss, the probability of
    improvement is closed: a·G₊ < b·G₋ ⇔ G₊/(G₊ + G₋) < b/(a + b), and G₊/(G₊ + G₋) ~ Beta(k₊, k₋),
    so p = I_{b/(a+b)}(k₊, k₋) (``probability``; 1 or 0 where d has one sign or none). Where every
    d is non-zero and distinct values are many, the draws are those of the n exponentials, as before.
    """

    def __init__(self, difference: FloatArray):
        self.nonzero = difference[difference != 0]
        self.values, self.counts = np.unique(self.nonzero, return_counts=True)
        self.probability = improvement_probability(self.values, self.counts)
        self.grouped = self.probability is None and GAMMA_COST * self.values.size < self.nonzero.size
        self.width = self.values.size if self.grouped else self.nonzero.size
        """Random numbers one replicate draws."""

    def improved(self, rng: np.random.Generator, replicates: int) -> int:
        """How many of ``replicates`` fresh replicates improve."""
        if self.grouped:
            sums = rng.standard_gamma(self.counts.astype(float), size=(replicates, self.values.size))
            return int(np.count_nonzero(sums @ self.values < 0))
        return int(np.count_nonzero(rng.standard_exponential((replicates, self.nonzero.size)) @ self.nonzero < 0))


def improvement_probability(values: FloatArray, counts: NDArray[np.integer]) -> float | None:
    """P(Σ_k v_k·G_k < 0) for G_k ~ Gamma(c_k, 1) independent (``values`` v_k sorted, non-zero, distinct;
    ``counts`` c_k), where it is closed: every value of one sign, or one of each
    (:class:`PairedImprovement`); None otherwise."""
    if values.size == 0 or values[0] > 0:
        return 0.0
    if values[-1] < 0:
        return 1.0
    if values.size == 2:
        b, a = -values[0], values[1]
        return float(special.betainc(counts[1], counts[0], b / (a + b)))
    return None


def improves_sequentially(
    scorer: Scorer,
    y: FloatArray,
    new: FloatArray,
    best: FloatArray,
    replicates: int,
    needed: int,
    rng: np.random.Generator,
) -> bool:
    """The decision of the B-replicate posterior-odds test, drawing replicates only until it is settled.

    Replicates are drawn in order, as the full test draws them. Each chunk is as long as
    the fewest replicates after which the decision could be settled (all of them
    improving, or none), and at least ``MIN_CHUNK_REPLICATES``; the test stops once
    ``needed`` improvements are reached or can no longer be reached with the replicates
    left. The decision is therefore the one the full B replicates give on the same
    draws, and the test draws at most ``MIN_CHUNK_REPLICATES`` − 1 replicates past the
    one that settles it. Weights are standard exponentials, the unnormalised
    Dirichlet(1, …, 1) (docs/decisions.md#bayesian-bootstrap): for a per-sample loss the
    sign of w·(l_new − l_best) does not depend on the normalisation, and metrics divide
    their weighted moments by the row totals (``Scorer.by_counts``). For a per-sample loss the
    replicates come from :class:`PairedImprovement`; where its probability p of improvement is
    closed, the B replicates are independent, their count of improvements is Binomial(B, p), and
    one binomial draw decides: the same distribution of the decision.
    """
    if needed > replicates:
        return False
    if isinstance(scorer, LossScorer):
        paired = PairedImprovement(scorer.loss(y, new[None, :])[0] - scorer.loss(y, best[None, :])[0])
        if paired.probability is not None:
            return paired.probability == 1.0 or (
                paired.probability > 0.0 and int(rng.binomial(replicates, paired.probability)) >= needed)
        improved_in, width = paired.improved, paired.width
    else:
        scores_of_pair = scorer.by_counts(y, np.stack([new, best]))

        def improved_in(rng: np.random.Generator, rows: int) -> int:
            scores = scores_of_pair(rng.standard_exponential((rows, y.size)))
            return int(np.count_nonzero(scorer.sign * (scores[:, 0] - scores[:, 1]) < 0))

        width = y.size
    largest = max(1, CHUNK_ELEMENTS // width)
    improved, drawn = 0, 0
    while True:
        missing = needed - improved
        settled_after = min(missing, replicates - drawn - missing + 1)
        rows = min(max(settled_after, MIN_CHUNK_REPLICATES), largest, replicates - drawn)
        improved += improved_in(rng, rows)
        drawn += rows
        if improved >= needed:
            return True
        if improved + replicates - drawn < needed:
            return False
