"""Additive noise for the noisy-release mechanisms (Noisy, Thresholdout, the sparse-vector Ladder).

``scale`` is each distribution's own scale parameter, as the sources write it:
Lap(b) has density exp(−|x|/b)/(2b) and standard deviation √2·b (Dwork et al. 2015,
Thresholdout's Lap(σ), Lap(2σ), Lap(4σ)); N(0, s) has standard deviation s (the
Gaussian noise of the Science 2015 supplementary code).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

NOISE_KINDS = frozenset({"gaussian", "laplace"})


def draw_noise(rng: np.random.Generator, kind: str, scale: float, size: int) -> NDArray[np.float64]:
    """``size`` independent centred draws of ``"gaussian"`` or ``"laplace"`` noise of the given scale.

    The values are drawn one after another from ``rng``: ``size`` draws at once equal
    ``size`` calls of one draw, so a batch of submissions and a loop see the same noise.
    A zero scale gives zeros (and still advances ``rng`` by the same amount).
    """
    if kind == "gaussian":
        return rng.normal(0.0, scale, size)
    if kind == "laplace":
        return rng.laplace(0.0, scale, size)
    raise ValueError(f"noise must be one of {sorted(NOISE_KINDS)}, got {kind!r}")
