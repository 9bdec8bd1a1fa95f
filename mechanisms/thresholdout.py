from __future__ import annotations

import math

import numpy as np

from ladderlab.engines.noise import NOISE_KINDS, draw_noise
from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.params import Interval, Options
from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.leaderboard_proofs import thresholdout_bound

NOISE_SCALES = {"nips": (2.0, 4.0, 1.0), "science": (0.0, 1.0, 1.0)}
"""Per variant, the threshold, comparison and release noise as multiples of σ."""


class Thresholdout(Mechanism):
    """Thresholdout on a leaderboard: show the score on a released part while a guard part agrees.

    Dwork et al. 2015 (Science; NIPS Fig. 1). The mechanism splits its n labels into a
    shown part (the papers' training set S_t) and a guard part (their holdout S_h,
    ``guard_fraction`` of the points). For submission t with shown score r_t and guard
    score g_t:

        T̂ = T + γ, γ ~ Lap(2σ) (drawn at the start and after each overfitting event)
        if |r_t − g_t| > T̂ + η_t, η_t ~ Lap(4σ):  release g_t + ξ, ξ ~ Lap(σ);
                                                   B ← B − 1 and γ is drawn afresh
        else:                                      release r_t

    That is ``variant="nips"``, the NIPS paper's algorithm (Fig. 1), whose threshold noise
    and Laplace noise carry its guarantee. ``variant="science"`` is the Science paper's
    supplementary code instead: no threshold noise (T̂ = T throughout), comparison noise
    η_t and release noise ξ both of scale σ; with ``noise="gaussian"`` (every Lap(c·σ)
    becomes N(0, (c·σ)²)) and σ = 1/√n it is that code's noise.

    ``split="random"`` (the default) is our leaderboard adaptation, a design of ours rather
    than the papers': the public set is split at random, so both parts are hidden holdout
    data and a release below the threshold is the exact score on half of the holdout.
    ``split="ordered"`` takes the first n − ``guard_fraction``·n labels as the shown part:
    the published design, when the task puts the analyst's own training set first in the
    public set (``correlated-feature-selection`` with ``public_set="training+holdout"``),
    so that a release below the threshold is the analyst's training score.

    Defaults: T = 4/√n, the Science experiment's T = 0.04 at n = 10,000; for an honest
    submission |r_t − g_t| has standard deviation about 1/√n for an accuracy near 1/2,
    so T is a 4-standard-error threshold. σ = 1/(4√n), so that the NIPS variant's
    comparison noise Lap(4σ) has the scale of the Science code's N(0, 1/n) (a Laplace σ
    of 1/√n would make the threshold noise as large as T itself). The defaults are the
    NIPS algorithm's rather than the Science code's because that algorithm is the one
    with a guarantee; docs/thresholdout.md measures what each difference does. ``B`` is
    the overfitting budget; None (the default, as in the Science code) never runs out.
    When the budget is spent the papers answer ⊥; a leaderboard needs a number, so
    every later submission releases the last released value again: the transcript
    freezes and an attack learns nothing more (``budget_remaining_`` tells the
    organiser). T and σ are in units of the loss bound B (``Mechanism.unit_``: 1 for the
    0/1 loss and accuracy, 2 for a correlation), so they scale with the score's
    sensitivity; any scorer, but for one that is not a mean of bounded per-sample losses
    (AUC) the guarantee is only approximate. Comparison noise comes from one child stream (one draw per
    submission), overfitting-event noise from another (one draw per event, and one for
    the threshold at the start and after each event in the NIPS variant), so batches
    and loops agree.
    """

    id = "thresholdout"
    reference = "Dwork et al. 2015, Science and NIPS Fig. 1 (split='random': our leaderboard adaptation)"
    _added_parameters = frozenset({"variant", "split"})
    _parameter_constraints = {
        "T": [Interval(float, 0, 1), None],
        "sigma": [Interval(float, 0, 1), None],
        "B": [Interval(int, 1, 10**9), None],
        "noise": [Options(NOISE_KINDS)],
        "guard_fraction": [Interval(float, 0, 1, closed="neither")],
        "variant": [Options(set(NOISE_SCALES))],
        "split": [Options({"random", "ordered"})],
    }
    """T and σ in units of the loss bound B: a threshold above 1 is never crossed by scores in [0, B], and
    noise above it drowns them."""
    _search_space = {"T": [None, 0.03, 0.1], "sigma": [None, 0.01], "B": [None, 50]}

    def __init__(
        self,
        T: float | None = None,
        sigma: float | None = None,
        B: int | None = None,
        noise: str = "laplace",
        guard_fraction: float = 0.5,
        variant: str = "nips",
        split: str = "random",
    ):
        self.T = T
        self.sigma = sigma
        self.B = B
        self.noise = noise
        self.guard_fraction = guard_fraction
        self.variant = variant
        self.split = split

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound | None:
        """The NIPS algorithm's privacy with respect to the guard part, composed over the budget B, and
        the transfer theorem (:func:`ladderlab.stats.leaderboard_proofs.thresholdout_bound`): every
        answer before the budget is spent is accurate for the population. None without a budget
        (B = None never runs out, and the privacy loss has no bound), for the Science variant (no
        threshold noise) and for Gaussian noise."""
        if self.B is None or self.variant != "nips" or self.noise != "laplace":
            return None
        guard = round(self.guard_fraction * n)
        threshold = 4.0 / math.sqrt(n) if self.T is None else float(self.T)
        sigma = 0.25 / math.sqrt(n) if self.sigma is None else float(self.sigma)
        if sigma == 0:
            return None
        return thresholdout_bound(guard, k, delta, threshold, sigma, self.B)

    def _start(self) -> None:
        guard = round(self.guard_fraction * self.n_)
        if not 2 <= guard <= self.n_ - 2:
            raise ValueError(
                f"{self.id}: guard_fraction = {self.guard_fraction} leaves {guard} guard and {self.n_ - guard} "
                f"released points of {self.n_}; each part needs at least 2"
            )
        self.T_ = self.unit_ * (4.0 / math.sqrt(self.n_) if self.T is None else float(self.T))
        self.sigma_ = self.unit_ * (0.25 / math.sqrt(self.n_) if self.sigma is None else float(self.sigma))
        if self.split == "random":
            order = self.rng_.permutation(self.n_)
            self.guard_rows_ = np.sort(order[:guard])
            self.released_rows_ = np.sort(order[guard:])
        else:
            self.released_rows_, self.guard_rows_ = np.arange(self.n_ - guard), np.arange(self.n_ - guard, self.n_)
        self.comparison_rng_, self.event_rng_ = self.rng_.spawn(2)
        self.budget_remaining_ = self.B
        self.overfitting_events_: list[int] = []
        self._draw_threshold()

    def _draw_threshold(self) -> None:
        scale = NOISE_SCALES[self.variant][0] * self.sigma_
        self.threshold_ = self.T_ + (float(draw_noise(self.event_rng_, self.noise, scale, 1)[0]) if scale else 0.0)

    def _release(self, P: FloatArray) -> FloatArray:
        m = P.shape[0]
        _, comparison_scale, release_scale = NOISE_SCALES[self.variant]
        comparison_noise = draw_noise(self.comparison_rng_, self.noise, comparison_scale * self.sigma_, m)
        shown = self._scores_on(self.released_rows_, P)
        guarded = self._scores_on(self.guard_rows_, P)
        gaps = np.abs(shown - guarded)
        released = shown.copy()
        start = 0
        while start < m and self.budget_remaining_ != 0:
            over = np.flatnonzero(gaps[start:] > self.threshold_ + comparison_noise[start:])
            if not over.size:
                return released
            t = start + int(over[0])
            released[t] = guarded[t] + float(draw_noise(self.event_rng_, self.noise, release_scale * self.sigma_, 1)[0])
            self._draw_threshold()
            self.overfitting_events_.append(len(self.released_) + t)
            if self.budget_remaining_ is not None:
                self.budget_remaining_ -= 1
            start = t + 1
        if start < m:
            released[start:] = released[start - 1] if start else self.released_[-1]
        return released
