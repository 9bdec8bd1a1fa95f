from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Interval, Options
from ladderlab.scoring import get_scorer
from ladderlab.tasks import PublicData

LOSSES = ("squared", "absolute", "log-loss")
UNBOUNDED_SCALE = 100.0
"""The largest probe scale |ŷ − centre| where neither a range nor a cap limits it (squared and
absolute losses), in the labels' units."""
SMALLEST_LEVEL = 0.25
"""A descending schedule ends where the loss level's excess over a scale-0 probe's is this
fraction of the first probe's."""


class ScaleProbe(Attack):
    """Probes s·u at large scales read the public correlation mean(u·y); a final prediction combines them.

    The red team's attack on unbounded losses (issue 28; docs/certification.md). On the
    squared loss a prediction c₀ + s·u (u a random ±1 vector over the holdout, c₀ the
    centre of the declared range, else 0) has public loss s² + mean((y − c₀)²) −
    2s·mean(u·(y − c₀)): a leaderboard that rounds, adds noise or sets a threshold at
    resolution r in the loss's units resolves the correlation to r/(2s), so a large s
    makes it an exact correlation oracle. On the absolute loss (s above every |y − c₀|)
    the loss is s − mean(u·(y − c₀)); on the log loss, predictions ½ ± s near 0 or 1
    give a loss affine in mean(u·(2y − 1)) with slope log((½ + s)/(½ − s))/2.

    ``schedule="descending"`` walks the loss level (s², s, or the log loss of ½ ± s) down
    linearly, its excess over a scale-0 probe's to a quarter of the first probe's, so
    every probe beats the last by the same step
    and a Ladder accepts and releases each one; ``"constant"`` probes at the largest scale
    throughout. ``read="value"`` uses each probe's correlation, ``"sign"`` only its sign
    (the sign oracle: robust where the release is coarse), weighted by the mean size.
    The largest scale is the declared prediction range's half-width (the attack knows the
    range, public like the metric), else ``cap`` (the capped variant: |ŷ − c₀| ≤ cap, or
    for probabilities |logit ŷ| ≤ cap), else 100 (real) or 1 − 10⁻¹² (probabilities).
    A probe whose release repeats the one before was held by the mechanism and is not
    read. The final prediction c₀ + λ·Σⱼ wⱼuⱼ (log loss: its logistic), clipped into
    the range, takes λ that minimises the public loss the correlations predict. The
    probes do not depend on the releases, so they go in batches.
    """

    id = "scale-probe"
    reference = "Issue 28's red team: correlation oracle of large-scale probes on an unbounded loss"
    task_types = frozenset({"classification", "regression"})
    _parameter_constraints = {
        "k": [Interval(int, 1, None)],
        "schedule": [Options({"descending", "constant"})],
        "read": [Options({"value", "sign"})],
        "cap": [Interval(float, 0, None, closed="neither"), None],
    }

    def __init__(self, k: int = 1000, schedule: str = "descending", read: str = "value", cap: float | None = None):
        self.k = k
        self.schedule = schedule
        self.read = read
        self.cap = cap

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """k = the whole budget."""
        return {"k": budget}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """The descending ladder read by value, uncapped and capped at 10 (the issue's variants), and the
        sign oracle of constant large probes."""
        base = cls.budget_params(budget)
        return [{**base, "schedule": "descending", "read": "value"},
                {**base, "schedule": "descending", "read": "value", "cap": 10.0},
                {**base, "schedule": "constant", "read": "sign"}]

    def incompatibility(self, data: PublicData) -> str | None:
        if get_scorer(data.scorer).name not in LOSSES:
            return f"scale-probe plays the squared, absolute and log losses, not {data.scorer!r}"
        return super().incompatibility(data)

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        family = _ProbeFamily.of(get_scorer(data.scorer).name, data.prediction_range, self.cap)
        k = self.k if board.remaining is None else min(self.k, board.remaining)
        if k < 1:
            return np.full(board.holdout_size, family.centre)
        fraction = np.linspace(1.0, SMALLEST_LEVEL, k) if self.schedule == "descending" and k > 1 else np.ones(k)
        floor = family.level(0.0)
        scales = family.scales(floor + fraction * (family.level(family.largest) - floor))
        signs = np.empty((k, board.holdout_size))
        released = np.empty(k)
        rows = max(1, SUBMISSION_CHUNK_ELEMENTS // board.holdout_size)
        for start in range(0, k, rows):
            stop = min(k, start + rows)
            signs[start:stop] = 2.0 * rng.integers(0, 2, (stop - start, board.holdout_size)) - 1.0
            released[start:stop] = board.submit_many(family.centre + scales[start:stop, None] * signs[start:stop])
        read = np.r_[True, released[1:] != released[:-1]]
        correlations = family.correlations(released[read], scales[read])
        weights = correlations if self.read == "value" else np.sign(correlations) * np.mean(np.abs(correlations))
        return family.final(weights @ signs[read], float(weights @ correlations))


class _ProbeFamily:
    """How probes c₀ ± s read correlations under one loss, and the final prediction they make."""

    def __init__(self, centre: float, largest: float, low: float, high: float):
        self.centre, self.largest, self.low, self.high = centre, largest, low, high

    @staticmethod
    def of(loss: str, prediction_range: tuple[float, float] | None, cap: float | None) -> _ProbeFamily:
        if loss == "log-loss":
            low, high = prediction_range or (0.0, 1.0)
            largest = min(0.5 - low, high - 0.5) if prediction_range else 0.5 - 1e-12
            if cap is not None:
                largest = min(largest, 1.0 / (1.0 + math.exp(-cap)) - 0.5)
            return _LogLossProbes(0.5, largest, low, high)
        low, high = prediction_range or (-math.inf, math.inf)
        centre = (low + high) / 2.0 if prediction_range else 0.0
        largest = (high - low) / 2.0 if prediction_range else UNBOUNDED_SCALE
        if cap is not None:
            largest = min(largest, cap)
        return (_SquaredProbes if loss == "squared" else _AbsoluteProbes)(centre, largest, low, high)

    def level(self, scale: float | FloatArray) -> FloatArray:
        """The loss level of a probe at ``scale``: what a descending schedule walks down."""
        raise NotImplementedError

    def scales(self, levels: FloatArray) -> FloatArray:
        raise NotImplementedError

    def correlations(self, released: FloatArray, scales: FloatArray) -> FloatArray:
        """The public correlation mean(u·t) each release implies (t = y − c₀, or 2y − 1)."""
        raise NotImplementedError

    def final(self, vote: FloatArray, predicted_gain: float) -> FloatArray:
        """The prediction c₀ + λ·vote minimising the squared loss that the correlations predict."""
        strength = predicted_gain / max(float(np.mean(vote * vote)), 1e-300)
        return np.clip(self.centre + strength * vote, self.low, self.high)


class _SquaredProbes(_ProbeFamily):
    def level(self, scale):
        return np.square(scale)

    def scales(self, levels):
        return np.sqrt(levels)

    def correlations(self, released, scales):
        # E[mean(u·t)] = 0 over the random u, so the mean of released − s² estimates mean(t²)
        second_moment = float(np.mean(released - scales**2))
        return (scales**2 + second_moment - released) / (2.0 * scales)


class _AbsoluteProbes(_ProbeFamily):
    def level(self, scale):
        return np.asarray(scale, dtype=float)

    def scales(self, levels):
        return levels

    def correlations(self, released, scales):
        return scales - released


class _LogLossProbes(_ProbeFamily):
    """Probes ½ ± s: loss (a + b)/2 − c·(b − a)/2 with a = −log(½ + s), b = −log(½ − s), c = mean(u·(2y − 1))."""

    def level(self, scale):
        return -0.5 * np.log(0.25 - np.square(scale))

    def scales(self, levels):
        return np.sqrt(0.25 - np.exp(-2.0 * levels))

    def correlations(self, released, scales):
        a, b = -np.log(0.5 + scales), -np.log(0.5 - scales)
        return ((a + b) / 2.0 - released) / ((b - a) / 2.0)

    def final(self, vote, predicted_gain):
        """The logistic of λ·vote, λ minimising log 2 − mean(z·(2y − 1))/2 + mean(z²)/8 (second order)."""
        strength = 2.0 * predicted_gain / max(float(np.mean(vote * vote)), 1e-300)
        return np.clip(1.0 / (1.0 + np.exp(-strength * vote)), self.low, self.high)
