"""The proven leaderboard-error bounds of the built-in mechanisms, as numbers (``Mechanism.proven_bound``).

Each function returns the ε of a :class:`ProvenBound`: with probability ≥ 1 − δ, against any
adaptive participant making k submissions on n points, the leaderboard error
max_{t≤k} |min_{i≤t} R_D(f_i) − R_t| is at most ε, in units of the loss bound B (losses in
[0, 1]). Two routes:

- **Transcripts** (Blum & Hardt 2015, Thm 3.1's proof; :mod:`ladderlab.stats.transcripts`):
  every submission generalises to ε_gen, and the release is within a slack of the best
  empirical risk, so ε = ε_gen + slack.
- **Privacy** (:mod:`ladderlab.stats.privacy`): composed privacy losses and a transfer theorem.

``tail`` is ``"binomial"`` for a 0/1 loss (exact binomial tails) and ``"hoeffding"`` otherwise.
Where a derivation is ours rather than a paper's, the docstring says [R].
"""

from __future__ import annotations

import math

import numpy as np

from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.privacy import (
    DELTA_GRID,
    above_threshold_epsilon,
    composed_epsilon,
    gaussian_max_error,
    gaussian_rho,
    laplace_epsilon,
    laplace_max_error,
    transfer,
)
from ladderlab.stats.transcripts import (
    grid_values,
    log_nodes_decreasing,
    log_nodes_free,
    union_deviation,
)

TRANSCRIPTS = "Blum & Hardt 2015, Thm 3.1 (its proof: a union bound over the transcripts), counted exactly"


def _tail_words(tail: str) -> str:
    return "exact binomial tails (0/1 loss)" if tail == "binomial" else "Hoeffding's inequality"


def ladder_bound(n: int, k: int, delta: float, values: int, slack: float, tail: str, what: str) -> ProvenBound:
    """A Ladder whose releases lie on a grid of ``values`` values and only ever go down, and whose
    release is within ``slack`` of the best empirical risk so far: ε = ε_gen + slack
    (Thm 3.1's last step: at the step where min R_D is attained the release is within ε + slack)."""
    log_count = log_nodes_decreasing(k, values)
    generalisation = union_deviation(log_count, n, delta, tail)
    return ProvenBound(
        generalisation + slack, delta,
        f"{what}: ln|F| = {log_count:.4g} for {values} release values and k = {k}; every submission's "
        f"empirical risk within {generalisation:.4g} of its population risk ({_tail_words(tail)}), "
        f"plus {slack:.4g} from the release rule",
        TRANSCRIPTS)


def rounding_bound(n: int, k: int, delta: float, values: int, slack: float, tail: str, what: str) -> ProvenBound:
    """A mechanism that releases one of ``values`` values after every submission, within ``slack``
    of the submission's empirical risk (Kaggle's rounding, full disclosure of a 0/1 risk)."""
    log_count = log_nodes_free(k, values)
    generalisation = union_deviation(log_count, n, delta, tail)
    return ProvenBound(
        generalisation + slack, delta,
        f"{what}: ln|F| = {log_count:.4g} for {values} values per release and k = {k}; every submission "
        f"within {generalisation:.4g} ({_tail_words(tail)}), plus {slack:.4g} of rounding",
        TRANSCRIPTS)


def noisy_release_bound(n: int, k: int, delta: float, noise: str, scale: float, rounding: float) -> ProvenBound:
    """Every score released with independent noise (Laplace of scale b, or Gaussian of standard
    deviation σ), then rounded to ``rounding`` (0: not): each release is private, k releases
    compose, and the transfer theorem bounds every release's population error, hence the
    leaderboard's (it shows the best release, and |min R_D − min a| ≤ max |R_D − a|). The DP δ
    is the best of a fixed grid."""
    best = math.inf
    for dp_delta in DELTA_GRID:
        if noise == "laplace":
            epsilon = composed_epsilon(k, dp_delta, pure=laplace_epsilon(n, scale))
            sample = laplace_max_error(scale, k, dp_delta / 2)
        else:
            epsilon = composed_epsilon(k, dp_delta, rho=gaussian_rho(n, scale))
            sample = gaussian_max_error(scale, k, dp_delta / 2)
        best = min(best, transfer(epsilon, dp_delta, sample + rounding / 2, delta))
    return ProvenBound(
        best, delta,
        f"{k} {noise} releases of scale {scale:.4g} on n = {n}: composed privacy loss (advanced or zCDP "
        "composition) and the transfer theorem bound every release's population error",
        "Dwork et al. 2015 (privacy ⇒ generalisation); Bassily et al. 2016's transfer theorem in the constants "
        "of Rogers et al. 2020's library; Bun & Steinke 2016 (zCDP)")


def thresholdout_bound(n_guard: int, k: int, delta: float, threshold: float, sigma: float, budget: int) -> ProvenBound:
    """Thresholdout (NIPS variant, Laplace noise, overfitting budget B) on a guard part of n_g points.

    With respect to the guard part each overfitting episode is one AboveThreshold run (threshold
    noise Lap(2σ), comparisons Lap(4σ) on |r_t − g_t|, sensitivity 1/n_g) and one Laplace
    release Lap(σ); B + 1 runs and B releases compose. A released value is within
    T + |γ| + |η_t| of the guard score when the check passes and |ξ| when it fails, so the
    answers are sample accurate, and the transfer theorem makes every answer accurate for the
    population until the budget is spent (afterwards the board repeats its last release). [R]:
    the leaderboard reading of Dwork et al.'s guarantee is ours."""
    best = math.inf
    episode = above_threshold_epsilon(n_guard, 2 * sigma, 4 * sigma)
    release = laplace_epsilon(n_guard, sigma)
    for dp_delta in DELTA_GRID:
        pure = [episode] * (budget + 1) + [release] * budget
        epsilon = min(sum(pure), composed_epsilon(budget + 1, dp_delta, pure=episode + release))
        share = dp_delta / 6
        sample = max(threshold + laplace_max_error(2 * sigma, budget + 1, share) + laplace_max_error(4 * sigma, k, share),
                     laplace_max_error(sigma, max(budget, 1), share))
        best = min(best, transfer(epsilon, dp_delta, sample, delta))
    return ProvenBound(
        best, delta,
        f"budget B = {budget}, T = {threshold:.4g}, σ = {sigma:.4g} on a guard part of {n_guard}: B + 1 sparse-vector "
        "runs and B Laplace releases, composed, and the transfer theorem",
        "Dwork et al. 2015 (NIPS, Thm 23's privacy of Thresholdout); Lyu, Su & Li 2017 (sparse vector); "
        "Bassily et al. 2016's transfer theorem in the constants of Rogers et al. 2020's library",
        holds="every submission answered before the overfitting budget is spent")


def sparse_vector_ladder_bound(n: int, k: int, delta: float, eta: float, sigma: float,
                               scales: tuple[float, float, float], rounding: bool, tail: str) -> ProvenBound | None:
    """The sparse-vector Ladder (threshold, comparison and release noise of ``scales`` × σ). [R]: the
    derivation is ours, not Hardt 2017's, whose proof we could not read.

    On the event E_u that every noise draw that matters is at most u in absolute value (the k
    comparisons, and the threshold and release draws of the first c acceptances), an accepted
    release lies within u of its risk L and below R_{t−1} − η + 3u; a rejected submission has
    L ≥ R_{t−1} − η − 2u; so the release stays within η + 2u of min_{i≤t} L_i, and the number
    of acceptances is at most c. P(not E_u) is a union of Laplace tails. Two routes then make
    every submission generalise, and the bound is the better one over a grid of u:

    - with ``rounding`` and 3u ≤ η/2 the releases are strictly decreasing multiples of η in
      [0, 1 + u] on E_u, so Blum & Hardt's transcript count applies to the analyst's tree;
    - the mechanism stopped after c acceptances (equal to this one on E_u) is ε-DP with
      ε = c·(AboveThreshold + Laplace release) + one more AboveThreshold, and an ε-DP
      interaction has max-information at most εn (group privacy over n points), so
      P(some f_i fails) ≤ e^{εn}·k·P(one fixed f fails). This route is usually vacuous.

    With σ = 0 and ``rounding`` the mechanism is the fixed Ladder and the first route is exact.
    """
    threshold_scale, comparison_scale, release_scale = (multiple * sigma for multiple in scales)
    if sigma == 0 and not rounding:
        return None
    source = ("our derivation [R]: Blum & Hardt 2015's transcript count, or sparse-vector privacy (Lyu, Su & Li "
              "2017) with max-information εn (Dwork et al. 2015)")
    candidates = []
    for u in (np.array([0.0]) if sigma == 0 else eta * np.linspace(0.002, 0.33, 60)):
        u = float(u)
        for route in ("transcripts", "privacy") if rounding else ("privacy",):
            if route == "transcripts" and 3 * u > eta / 2:
                continue
            if route == "privacy" and (sigma == 0 or not 3 * u < eta or min(threshold_scale, comparison_scale,
                                                                              release_scale) <= 0):
                continue
            values = math.floor((1 + u) / eta + 0.5) + 1
            cap = values if route == "transcripts" else 1 + math.floor((1 + 2 * u) / (eta - 3 * u))
            missed = _laplace_tail(comparison_scale, u, k) + _laplace_tail(threshold_scale, u, cap + 1) \
                + _laplace_tail(release_scale, u, cap)
            if missed >= delta:
                continue
            if route == "transcripts":
                log_count = log_nodes_decreasing(k, values)
            else:
                pure = (cap + 1) * above_threshold_epsilon(n, threshold_scale, comparison_scale) \
                    + cap * laplace_epsilon(n, release_scale)
                log_count = pure * n + math.log(k)
            slack = eta + 2 * u
            candidates.append((union_deviation(log_count, n, delta - missed) + slack, log_count, missed, slack,
                               f"{route}, u = {u:.3g}, P(noise beyond u) ≤ {missed:.3g}, ln|F| = {log_count:.4g}"))
    if not candidates:
        return ProvenBound(
            math.inf, delta,
            f"η = {eta:.4g}, σ = {sigma:.4g}: no u ≤ η/3 keeps every noise draw of k = {k} submissions within u "
            f"with probability 1 − δ, so the argument gives nothing (the noise is too large for the step)", source)
    _, log_count, missed, slack, how = min(candidates)
    epsilon = union_deviation(log_count, n, delta - missed, tail) + slack
    return ProvenBound(
        epsilon, delta,
        f"η = {eta:.4g}, σ = {sigma:.4g}: release within η + 2u of the best empirical risk while every noise "
        f"draw is at most u ({how}; {_tail_words(tail)})", source)


def _laplace_tail(scale: float, u: float, draws: int) -> float:
    """P(some of ``draws`` |Lap(scale)| > u) ≤ draws·e^{−u/scale} (0 for no noise)."""
    if scale <= 0:
        return 0.0
    return draws * math.exp(-u / scale) if u > 0 else float(draws)


def subsample_bound(n: int, k: int, delta: float, size: int, step: float, replace: bool, tail: str) -> ProvenBound:
    """Each release is a subsample's mean loss over ``size`` points rounded to a grid of ``step``:
    one of at most V values, so Blum & Hardt's count of the free transcripts, Σ V^i, bounds the
    analyst's tree, and every release is within the sampling error of its subsample mean
    (exact binomial for a 0/1 loss drawn with replacement, Hoeffding otherwise, which also holds
    without replacement; a union over k) plus half a step. [R]: our bound, not Blanc 2023's
    sharper theorem, whose statement we could not read; half of δ goes to each part."""
    values = grid_values(step)
    generalisation = union_deviation(log_nodes_free(k, values), n, delta / 2, tail)
    sampling_tail = "binomial" if tail == "binomial" and replace else "hoeffding"
    sampling = union_deviation(math.log(k), size, delta / 2, sampling_tail)
    slack = step / 2
    return ProvenBound(
        generalisation + sampling + slack, delta,
        f"{values} values per release on subsamples of {size}: every submission within {generalisation:.4g} "
        f"({_tail_words(tail)}), every release within {sampling:.4g} of its submission's empirical risk, "
        f"plus {slack:.4g} of rounding",
        "our derivation [R]: Blum & Hardt 2015's transcript count for a mechanism of few output values, "
        "the setting of Blanc 2023")


def guess_and_check_bound(tau: float, beta: float) -> ProvenBound:
    """Guess and check: every answer it gives is within τ of the population value with probability
    ≥ 1 − β, whatever the participant does (Rogers et al. 2020; the union bound over its
    transcripts is in :mod:`ladderlab.stats.guess_check`), so the best of them is too."""
    return ProvenBound(
        tau, beta,
        f"every released answer within τ = {tau:.4g} of its population value: a check passes only when the "
        "guess is within τ, a failed check releases the holdout value rounded to γ, both with the "
        "per-query confidence of the transcript union bound",
        "Rogers, Roth, Smith, Srebro, Thakkar & Woodworth 2020 (their library's Guess_and_Check_Mechanism)",
        holds="every submission answered before its failure budget is spent")
