from __future__ import annotations

import math

import numpy as np

from ladderlab.engines.ladder import Ladder
from ladderlab.mechanism import FloatArray, round_to_multiple
from ladderlab.params import Boolean, Interval
from ladderlab.stats.bounds import ProvenBound, TheoreticalBound, ladder_error_bound
from ladderlab.stats.leaderboard_proofs import sparse_vector_ladder_bound


def sparse_vector_defaults(n: int, k: int, delta: float) -> tuple[float, float]:
    """(η, σ) from the holdout size n and the expected number of submissions k.

    A reconstruction, not the paper's constants: balancing the step η, the largest of
    k comparison-noise draws O(σ·log k) and the generalisation error of the
    sparse-vector argument gives α = (ln k)^0.4·(ln 1/δ)^0.2·n^−0.4, η = α and
    σ = α / (4 ln k): the n^−0.4 rate of Hardt 2017's abstract, with unknown
    constants (sweep σ by a factor of 4 either way).
    """
    alpha = math.log(k) ** 0.4 * math.log(1.0 / delta) ** 0.2 * n**-0.4
    return alpha, alpha / (4.0 * math.log(k))


MAX_NOISE_MULTIPLE = 100.0
"""The largest multiple of σ a noise may have (the defaults are 1, 2 and 4)."""
MAX_QUERIES = 10**9
"""The most submissions k the noise may be planned for."""


class SparseVectorLadder(Ladder):
    """The Ladder with a noisy threshold, noisy comparisons and a noisy release (sparse-vector pattern).

    A reconstruction: Hardt 2017 ("Climbing a shaky ladder") proves an O(n^−0.4)
    leaderboard error for a randomised Ladder whose exact pseudocode we could not
    read. This plugin is the sparse-vector technique applied to the Ladder of
    Blum & Hardt 2015 (Fig. 1), with the noise placement of Thresholdout (Dwork et
    al. 2015): with risk L_t (the score oriented so that smaller is better),

        τ ~ Lap(threshold_scale·σ);  R_0 = +∞
        accept  ⇔  L_t + ξ_t < R_{t−1} − η + τ,   ξ_t ~ Lap(comparison_scale·σ) fresh per submission
        on acceptance: R_t = L_t + Lap(release_scale·σ) (rounded to η if ``rounding``),
                       and τ is drawn afresh; otherwise R_t = R_{t−1}.

    Defaults η and σ come from n and the expected number of submissions ``k``
    (:func:`sparse_vector_defaults`, δ = ``delta``); the scale multipliers 2, 4, 1
    are Thresholdout's. η and σ are in units of the loss bound B (``Mechanism.unit_``).
    With σ = 0 and ``rounding`` it is exactly the fixed Ladder.
    A noisy release may go up, so releases are not monotone. Comparison noise comes
    from one child stream of the Generator (one draw per submission) and the
    release and threshold noise from another (two draws per acceptance), so a batch
    and a loop of submissions see the same noise.
    """

    id = "sparse-vector-ladder"
    reference = "Blum & Hardt 2015, Fig. 1 with sparse-vector noise after Hardt 2017 (reconstruction)"
    decides_deterministically = False
    scores_only = True
    _parameter_constraints = {
        "eta": [Interval(float, 0, 1, closed="right"), None],
        "sigma": [Interval(float, 0, 1), None],
        "k": [Interval(int, 2, MAX_QUERIES)],
        "delta": [Interval(float, 0, 1, closed="neither")],
        "threshold_scale": [Interval(float, 0, MAX_NOISE_MULTIPLE)],
        "comparison_scale": [Interval(float, 0, MAX_NOISE_MULTIPLE)],
        "release_scale": [Interval(float, 0, MAX_NOISE_MULTIPLE)],
        "rounding": [Boolean()],
    }
    """η and σ in units of the loss bound B: a step above 1 is never crossed, noise above it drowns every
    score in [0, B]; each noise is a multiple of σ, at most :data:`MAX_NOISE_MULTIPLE`."""
    _search_space = {"eta": [None, 0.02, 0.05], "sigma": [None, 0.002]}

    def __init__(
        self,
        eta: float | None = None,
        sigma: float | None = None,
        k: int = 1000,
        delta: float = 0.01,
        threshold_scale: float = 2.0,
        comparison_scale: float = 4.0,
        release_scale: float = 1.0,
        rounding: bool = False,
    ):
        self.eta = eta
        self.sigma = sigma
        self.k = k
        self.delta = delta
        self.threshold_scale = threshold_scale
        self.comparison_scale = comparison_scale
        self.release_scale = release_scale
        self.rounding = rounding

    def effective_parameters(self, n: int) -> tuple[float, float]:
        """(η, σ) on a holdout of n points: the given values, or the defaults derived from n and k."""
        alpha, sigma = sparse_vector_defaults(n, self.k, self.delta)
        return (alpha if self.eta is None else self.eta), (sigma if self.sigma is None else self.sigma)

    def releasing(self, improvement: float) -> dict[str, float]:
        """η = improvement / 2 as for the fixed Ladder, and σ in the ratio of its defaults, η / (4 ln k):
        the comparison noise Lap(4σ) = Lap(η / ln k) then rarely hides the other half of the improvement."""
        eta = improvement / 2
        return {"eta": eta, "sigma": eta / (4.0 * math.log(self.k))}

    def leaderboard_error_bound(self, n: int, k: int) -> TheoreticalBound | None:
        """Theorem 3.1 of Blum & Hardt when σ = 0 and releases are rounded (the fixed Ladder);
        the n^−0.4 rate of the randomised version has no known constants, so no bound otherwise."""
        eta, sigma = self.effective_parameters(n)
        return ladder_error_bound(n, k, eta) if sigma == 0 and self.rounding else None

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound | None:
        """[R] our bound (:func:`ladderlab.stats.leaderboard_proofs.sparse_vector_ladder_bound`): while every
        noise draw stays below u the release tracks the best empirical risk within η + 2u, and either
        the rounded releases' transcripts are counted (``rounding``) or the mechanism's privacy
        bounds the participant's information. The Ladder's exact bound when σ = 0 and ``rounding``."""
        eta, sigma = self.effective_parameters(n)
        return sparse_vector_ladder_bound(n, k, delta, eta, sigma,
                                          (self.threshold_scale, self.comparison_scale, self.release_scale),
                                          self.rounding, "binomial" if zero_one else "hoeffding")

    def _start(self) -> None:
        super()._start()
        self.eta_, self.sigma_ = (self.unit_ * value for value in self.effective_parameters(self.n_))
        self.comparison_rng_, self.update_rng_ = self.rng_.spawn(2)
        self.pending_comparison_noise_ = np.empty(0)
        self.threshold_noise_ = self._laplace(self.threshold_scale)

    def _laplace(self, multiple: float) -> float:
        return float(self.update_rng_.laplace(0.0, multiple * self.sigma_))

    def _margins(self, loss_rows: FloatArray | None, rows: int) -> FloatArray:
        missing = rows - self.pending_comparison_noise_.size
        if missing > 0:
            fresh = self.comparison_rng_.laplace(0.0, self.comparison_scale * self.sigma_, missing)
            self.pending_comparison_noise_ = np.concatenate([self.pending_comparison_noise_, fresh])
        return self.eta_ - self.threshold_noise_ + self.pending_comparison_noise_[:rows]

    def _held_releases(self, rows: int) -> FloatArray:
        self.pending_comparison_noise_ = self.pending_comparison_noise_[rows:]
        return super()._held_releases(rows)

    def _accepted_release(self, risk: float) -> float:
        self.pending_comparison_noise_ = self.pending_comparison_noise_[1:]
        release = risk + self._laplace(self.release_scale)
        if self.rounding:
            release = float(round_to_multiple(release, self.eta_))
        self.threshold_noise_ = self._laplace(self.threshold_scale)
        return release
