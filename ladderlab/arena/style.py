"""Style control as FastChat computes it: Bradley–Terry with the battles' style differences as covariates.

FastChat's ``compute_style_control`` (``preprocess_for_style`` and ``fit_contextual_bt``): per battle,
four style differences, each (a − b) / (a + b + 1) of the two answers' counts (tokens, headers, list
items, bold spans: :data:`ladderlab.arena.battles.STYLE_ELEMENTS`), z-scored over the battles; then

    logit = ln 10 · (r_a − r_b) + features · θ,   loss = −log-likelihood + (0.5 / 2) · ‖(r, θ)‖²,

ties as halves, the L2 penalty on the ratings and the coefficients alike (FastChat's ``reg = 0.5``, its
comment: parity with an older fit on duplicated rows), one row per battle, SciPy's L-BFGS-B from zeros
with FastChat's options. The ratings are put on the Elo scale and anchored as the plain fit's
(:func:`ladderlab.arena.bradley_terry.elo`); the coefficients say what each style difference is worth.

FastChat's bootstrap resamples the battles with numpy's global, unseeded generator, so no run of it can
be reproduced; ladderlab resamples them from ``default_rng(seed)``, as counts per battle
(Multinomial(N, 1/N), the same distribution as N draws with replacement) that weigh the rows, and
refits (the features keep their z-scoring over all battles, as FastChat's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from numpy.typing import NDArray
from scipy import optimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

from ladderlab.arena.battles import Battles
from ladderlab.arena.bradley_terry import ALPHA, FASTCHAT_ANCHOR, FASTCHAT_OPTIONS, elo
from ladderlab.arena.rating import LEVEL, ArenaRatings
from ladderlab.stats.interval_ranks import interval_rank

FloatArray = NDArray[np.float64]
REGULARISATION = 0.5
FEATURES = ("length", "headers", "lists", "bold")


def features(style: FloatArray) -> FloatArray:
    """FastChat's ``preprocess_for_style``: battles × 4 z-scored ratios (a − b) / (a + b + 1)."""
    counts = np.asarray(style, dtype=np.int32).astype(float)  # FastChat keeps the counts as int32
    difference = counts[:, :4] - counts[:, 4:]
    ratio = difference / (counts[:, :4] + counts[:, 4:] + 1.0)
    spread = ratio.std(axis=0)
    if (spread == 0).any():
        raise ValueError(f"style feature {FEATURES[int(np.flatnonzero(spread == 0)[0])]!r} is the same in every battle: "
                         "it cannot be standardised (FastChat's style control divides by its spread)")
    return (ratio - ratio.mean(axis=0)) / spread


def _loss_and_gradient(params: FloatArray, a: NDArray, b: NDArray, x: FloatArray, y: FloatArray, w: FloatArray | None,
                       models: int) -> tuple[float, FloatArray]:
    """FastChat's ``contextual_bt_loss_and_grad``, its rows weighted by ``w`` (a bootstrap's counts) where given."""
    ratings, theta = params[:models], params[models:]
    p = expit(ALPHA * (ratings[a] - ratings[b]) + x @ theta)
    loglik = np.log(p) * y + np.log(1.0 - p) * (1.0 - y)
    error = y - p
    if w is not None:
        loglik, error = loglik * w, error * w
    loss = -loglik.sum() + REGULARISATION / 2 * np.inner(params, params)
    gradient = REGULARISATION * params
    per_row = -ALPHA * error
    gradient[:models] += np.bincount(a, per_row, models) - np.bincount(b, per_row, models)
    gradient[models:] -= x.T @ error
    return float(loss), gradient


def fit(battles: Battles, x: FloatArray, weights: FloatArray | None = None) -> FloatArray:
    """FastChat's ``fit_contextual_bt``: the ratings (r) and the style coefficients θ."""
    models = len(battles.models)
    result = optimize.minimize(_loss_and_gradient, np.zeros(models + x.shape[1]),
                               args=(battles.a, battles.b, x, battles.outcome / 2.0, weights, models), jac=True,
                               method="L-BFGS-B", options=FASTCHAT_OPTIONS)
    return result.x


@dataclass(frozen=True)
class StyleControlled:
    """Style-controlled ratings, and the style coefficients (with their bootstrap intervals)."""

    ratings: ArenaRatings
    coefficients: dict[str, float]
    intervals: dict[str, tuple[float, float]] | None

    def records(self) -> dict[str, Any]:
        return {**self.ratings.records(), "style_control": {
            "coefficients": self.coefficients,
            "intervals": None if self.intervals is None else {k: list(v) for k, v in self.intervals.items()}}}


def rate_style_controlled(battles: Battles, replicates: int = 100, seed: int = 0,
                          anchor: tuple[str, float] | None = FASTCHAT_ANCHOR, jobs: int = 1) -> StyleControlled:
    """The style-controlled ratings of ``battles`` (which must hold their style counts), with ``replicates``
    bootstrap rounds (see the module docstring)."""
    if battles.style is None:
        raise ValueError(f"{battles.source}: no style counts: style control needs the columns "
                         "sum_assistant_a_tokens … bold_count_b, or conv_metadata records")
    x = features(battles.style)
    models = len(battles.models)
    with threadpool_limits(limits=1, user_api="blas"):
        params = fit(battles, x)
    rating = elo(params[:models], battles.models, anchor)
    coefficients = dict(zip(FEATURES, params[models:].tolist()))
    lower = upper = rank = boot = intervals = None
    if replicates:
        rng = np.random.default_rng(seed)
        counts = [rng.multinomial(len(battles), np.full(len(battles), 1.0 / len(battles))).astype(float)
                  for _ in range(replicates)]
        fitted = np.array(Parallel(n_jobs=jobs)(delayed(_weighted_fit)(battles, x, w) for w in counts))
        boot = elo(fitted[:, :models], battles.models, anchor)
        lower, upper = np.quantile(boot, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        rank = interval_rank(lower, upper)
        low_theta, high_theta = np.quantile(fitted[:, models:], [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        intervals = {name: (float(lo), float(hi)) for name, lo, hi in zip(FEATURES, low_theta, high_theta)}
    ratings = ArenaRatings(battles.source, battles.models, len(battles), rating, lower, upper, rank,
                           battles.battles_per_model(), boot, "fastchat style control", seed if replicates else None,
                           anchor, notes=list(battles.notes))
    return StyleControlled(ratings, coefficients, intervals)


def _weighted_fit(battles: Battles, x: FloatArray, weights: FloatArray) -> FloatArray:
    with threadpool_limits(limits=1, user_api="blas"):
        return fit(battles, x, weights)
