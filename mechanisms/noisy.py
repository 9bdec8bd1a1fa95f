from __future__ import annotations

import math
from typing import Any

from ladderlab.engines.noise import NOISE_KINDS, draw_noise
from ladderlab.mechanism import FloatArray, Mechanism, round_to_multiple
from ladderlab.params import Interval, Options
from ladderlab.stats.bounds import ProvenBound
from ladderlab.stats.leaderboard_proofs import noisy_release_bound


class Noisy(Mechanism):
    """Releases every submission's empirical score plus independent noise, optionally rounded.

    The simplest differential-privacy-style baseline: the noise of Thresholdout's
    release step (Dwork et al. 2015, Science) added to every score. ``noise`` is
    ``"gaussian"`` (N(0, scale), scale = standard deviation) or ``"laplace"``
    (Lap(scale), standard deviation √2·scale); ``scale`` defaults to 1/√n, the order
    of the sampling error of a mean [0, 1] loss on n points; ``scale`` and ``rounding``
    are in units of the loss bound B (``Mechanism.unit_``). ``rounding`` rounds the
    noisy score to a multiple of itself (post-processing). With ``scale=0`` and no
    rounding it releases exactly what Full-disclosure does. Any scorer; one draw per
    submission, in submission order.
    """

    id = "noisy"
    reference = "Dwork et al. 2015 (Science), noisy release as in Thresholdout"
    scores_only = True
    _parameter_constraints = {
        "noise": [Options(NOISE_KINDS)],
        "scale": [Interval(float, 0, 1), None],
        "rounding": [Interval(float, 0, 1, closed="right"), None],
    }
    """In units of the loss bound B: noise of a larger scale drowns every difference of scores in [0, B],
    and a rounding step above it rounds every score to 0 or the step."""
    _search_space = {"scale": [None, 0.005, 0.01, 0.02, 0.05], "rounding": [None, 0.01]}

    def __init__(self, noise: str = "gaussian", scale: float | None = None, rounding: float | None = None):
        self.noise = noise
        self.scale = scale
        self.rounding = rounding

    def _start(self) -> None:
        self.scale_ = self.unit_ * self._scale(self.n_)

    def _scale(self, n: int) -> float:
        """The noise scale on n points, in units of B."""
        return 1.0 / math.sqrt(n) if self.scale is None else float(self.scale)

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound | None:
        """Each release is differentially private (Laplace: ε₀ = 1/(n·scale); Gaussian: ρ₀ = 1/(2(n·scale)²));
        k of them compose, and the transfer theorem bounds every release's population error
        (:func:`ladderlab.stats.leaderboard_proofs.noisy_release_bound`). None without noise."""
        scale = self._scale(n)
        if scale == 0:
            return None
        return noisy_release_bound(n, k, delta, self.noise, scale, self.rounding or 0.0)

    def releasing(self, improvement: float) -> dict[str, Any]:
        """scale = improvement / 3: two releases ``improvement`` apart keep their order with probability
        Φ(3/√2) ≈ 0.98 under Gaussian noise; a rounding, where there is one, at most the improvement."""
        rounding = {} if self.rounding is None else {"rounding": improvement}
        return {"scale": improvement / 3, **rounding}

    def release_step(self, unit: float) -> float | None:
        return None if self.rounding is None else self.rounding * unit

    def _release(self, P: FloatArray) -> FloatArray:
        scores = self._scores(P)
        released = scores + draw_noise(self.rng_, self.noise, self.scale_, scores.size)
        step = self.release_step(self.unit_)
        return released if step is None else round_to_multiple(released, step)
