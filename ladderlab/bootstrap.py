"""Bootstrap primitives shared by LadderBoot and the Bayesian-bootstrap Ladders.

All of them draw from an explicit ``numpy.random.Generator`` and never build more
than ``CHUNK_ELEMENTS`` random numbers at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from ladderlab.scoring import LossScorer, Scorer

FloatArray = NDArray[np.float64]

CHUNK_ELEMENTS = 1 << 20
"""Largest random matrix drawn at once (8 MiB of float64)."""


def bootstrap_mean_losses(
    loss: FloatArray, b: int, rng: np.random.Generator, draws: int = 1
) -> FloatArray:
    """``draws`` independent values of the mean of b bootstrap means of the loss vector, in O(n) each.

    Resampling b times n indices and averaging the b means is ``C·l / (b·n)`` where
    C, the summed count vectors, is ``Multinomial(b·n, (1/n, …, 1/n))`` (NOTES.md 6):
    one multinomial draw replaces b·n index draws. Draws are made in order, so the
    values do not depend on how they are batched.
    """
    n = loss.size
    pvals = np.full(n, 1.0 / n)
    out = np.empty(draws)
    rows_per_chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, draws, rows_per_chunk):
        rows = min(rows_per_chunk, draws - start)
        counts = rng.multinomial(b * n, pvals, size=rows)
        out[start : start + rows] = (counts * loss).sum(axis=1) / (b * n)
    return out


def bootstrap_count_weights(rng: np.random.Generator, replicates: int, n: int) -> Iterator[FloatArray]:
    """Weight matrices (rows = count vectors / n) of ordinary bootstrap resamples, in chunks.

    Row j weights sample i by how often i was drawn in resample j, so a weighted
    moment equals the moment of the resampled (ŷ, y) pairs.
    """
    rows_per_chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        draws = rng.integers(0, n, size=(rows, n)) + n * np.arange(rows)[:, None]
        yield np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n) / n


def dirichlet_weights(rng: np.random.Generator, replicates: int, n: int) -> Iterator[FloatArray]:
    """Dirichlet(1, …, 1) weight matrices in chunks: normalised standard exponentials (NOTES.md 7)."""
    rows_per_chunk = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, replicates, rows_per_chunk):
        rows = min(rows_per_chunk, replicates - start)
        exponentials = rng.standard_exponential((rows, n))
        yield exponentials / exponentials.sum(axis=1, keepdims=True)


def bootstrap_mean_score(
    scorer: Scorer, y: FloatArray, prediction: FloatArray, b: int, rng: np.random.Generator
) -> float:
    """The mean of b ordinary bootstrap replicates of the score of ``prediction``.

    Chaibub Neto Alg. 4 lines 12–16 and Alg. 6 lines 12–16 (NOTES.md 8). For a mean
    loss it is the O(n) multinomial form; any other metric is evaluated on b
    resampled weight rows.
    """
    if isinstance(scorer, LossScorer):
        return float(bootstrap_mean_losses(scorer.loss(y, prediction[None, :])[0], b, rng)[0])
    total = 0.0
    for W in bootstrap_count_weights(rng, b, y.size):
        total += float(np.nansum(scorer.weighted(y, prediction[None, :], W)))
    return total / b


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
