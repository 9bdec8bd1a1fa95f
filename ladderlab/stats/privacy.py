"""Privacy losses, their composition, and a transfer theorem from privacy to population accuracy.

Queries are means of a loss in [0, 1] over n points: sensitivity Δ = 1/n.

- Laplace noise of scale b answers one query ε₀-differentially privately, ε₀ = Δ/b; Gaussian
  noise of standard deviation σ ρ₀-zCDP, ρ₀ = Δ²/(2σ²) (Bun & Steinke 2016, Prop. 1.6); an
  ε₀-DP step is ε₀²/2-zCDP (their Prop. 1.4).
- k adaptive steps compose: ε₀-DP ones to kε₀ (basic), or to
  ε₀·√(2k ln(1/δ)) + kε₀(e^ε₀ − 1) at δ (advanced composition, Dwork, Rothblum & Vadhan
  2010; Dwork & Roth 2014, Thm 3.20); ρ-zCDP ones add up, and ρ-zCDP is
  (ρ + 2√(ρ ln(1/δ)), δ)-DP (Bun & Steinke 2016, Prop. 1.3). :func:`composed_epsilon` takes the
  smallest of the routes that apply, each valid on its own.
- Sparse vector (AboveThreshold: threshold noise Lap(a·σ), comparison noise Lap(b·σ), one
  answer above/below the threshold) is (Δ/(aσ) + 2Δ/(bσ))-DP (Lyu, Su & Li 2017, Thm 2 with
  c = 1; Dwork & Roth's Lap(2/ε), Lap(4/ε) give ε).
- The transfer theorem: a mechanism that is (ε, δ)-DP and whose answers are within α of
  their sample values except with probability δ/2 has every answer within
  (e^ε − 1 + α + 2tδ)/(1 − (1 − β)^t), t = ⌊1/β⌋, of the population value with probability
  ≥ 1 − β (Bassily, Nissim, Smith, Steinke, Stemmer & Ullman 2016, the monitor argument, in
  the constants of Rogers, Roth, Smith, Srebro, Thakkar & Woodworth 2020's library,
  ``conf_width_BNSSSU``).
"""

from __future__ import annotations

import math

import numpy as np

DELTA_GRID = np.logspace(-14, -1, 53)
"""The DP δ a bound tries (any fixed grid keeps the bound valid: it is chosen before the data)."""


def laplace_epsilon(n: int, scale: float) -> float:
    """ε₀ of Laplace noise of ``scale`` on the mean of a [0, 1] loss over n points."""
    return math.inf if scale <= 0 else 1.0 / (n * scale)


def gaussian_rho(n: int, sigma: float) -> float:
    """ρ₀ (zCDP) of Gaussian noise of standard deviation ``sigma`` on such a mean."""
    return math.inf if sigma <= 0 else 1.0 / (2.0 * (n * sigma) ** 2)


def above_threshold_epsilon(n: int, threshold_scale: float, comparison_scale: float) -> float:
    """ε of one AboveThreshold run with Laplace threshold and comparison noise of these scales."""
    if threshold_scale <= 0 or comparison_scale <= 0:
        return math.inf
    return 1.0 / (n * threshold_scale) + 2.0 / (n * comparison_scale)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The ε of (ε, δ)-DP that ρ-zCDP implies (Bun & Steinke 2016, Prop. 1.3)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def composed_epsilon(steps: int, delta: float, pure: float | None = None, rho: float | None = None) -> float:
    """The ε at ``delta`` of ``steps`` adaptive steps, each ``pure``-DP or ``rho``-zCDP (give one)."""
    if (pure is None) == (rho is None):
        raise ValueError("give the steps' pure epsilon or their rho, not both")
    if pure is not None:
        if not math.isfinite(pure):
            return math.inf
        advanced = pure * math.sqrt(2 * steps * math.log(1 / delta)) + steps * pure * math.expm1(pure)
        return min(steps * pure, advanced, zcdp_epsilon(steps * pure**2 / 2, delta))
    return zcdp_epsilon(steps * rho, delta) if math.isfinite(rho) else math.inf


def transfer(epsilon: float, delta: float, sample_error: float, beta: float) -> float:
    """The population error of every answer, with probability ≥ 1 − β, of an (ε, δ)-DP mechanism
    whose answers are within ``sample_error`` of their sample values except with probability δ/2."""
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got {beta}")
    if epsilon > 700:
        return math.inf
    copies = math.floor(1 / beta)
    return (math.expm1(epsilon) + sample_error + 2 * copies * delta) / -math.expm1(copies * math.log1p(-beta))


def laplace_max_error(scale: float, draws: int, failure: float) -> float:
    """The t with P(max of ``draws`` |Lap(scale)| > t) ≤ ``failure`` (a union bound; P(|Lap(b)| > t) = e^{−t/b})."""
    return scale * math.log(draws / failure) if scale > 0 else 0.0


def gaussian_max_error(sigma: float, draws: int, failure: float) -> float:
    """The t with P(max of ``draws`` |N(0, σ²)| > t) ≤ ``failure`` (a union bound, exact normal quantile)."""
    from scipy import stats

    return float(sigma * stats.norm.isf(failure / (2 * draws))) if sigma > 0 else 0.0
