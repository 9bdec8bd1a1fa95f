"""Leaderboard-error bounds: the orders Blum & Hardt 2015 state, and the proven bounds mechanisms compute.

- Theorem 3.1 (the fixed Ladder, step η, n holdout points, adaptive analysts): for every
  t ≤ k and ε > 0, P(|min_{i≤t} R_D(f_i) − R_t| > ε + η) ≤ exp(−2ε²n + (1/η + 2)·log(4t/η) + 1).
- Theorem 5.1 / Corollary 5.2 (Kaggle with rounding α ≤ 1/√n): the boosting attack with k
  queries reaches leaderboard error Ω(√(k/n)) with probability 2/3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class TheoreticalBound:
    """A bound on the leaderboard error after k submissions, beside which a measurement is shown."""

    kind: Literal["upper", "lower order"]
    value: float
    statement: str
    reference: str


def ladder_tail_probability(n: int, t: int, eta: float, epsilon: float) -> float:
    """The right-hand side of Theorem 3.1 (capped at 1)."""
    exponent = -2 * epsilon**2 * n + (1 / eta + 2) * math.log(4 * t / eta) + 1
    return 1.0 if exponent >= 0 else math.exp(exponent)


def ladder_error_bound(n: int, k: int, eta: float, delta: float = 0.05) -> TheoreticalBound:
    """The ε + η that Theorem 3.1, with a union bound over t ≤ k, guarantees with probability 1 − δ
    for the leaderboard error max_{t≤k} |min_{i≤t} R_D(f_i) − R_t|."""
    epsilon = math.sqrt(((1 / eta + 2) * math.log(4 * k / eta) + 1 + math.log(k / delta)) / (2 * n))
    return TheoreticalBound(
        "upper", epsilon + eta,
        f"with probability ≥ {1 - delta:g}, leaderboard error ≤ ε + η = {epsilon + eta:.4g} (ε = {epsilon:.4g}, η = {eta:g})",
        "Blum & Hardt 2015, Theorem 3.1 (with a union bound over t ≤ k)",
    )


def kaggle_boosting_order(n: int, k: int) -> TheoreticalBound:
    """√(k/n): the order of the leaderboard error the boosting attack forces on Kaggle (α ≤ 1/√n)."""
    order = math.sqrt(k / n)
    return TheoreticalBound(
        "lower order", order,
        f"the boosting attack forces leaderboard error Ω(√(k/n)) = Ω({order:.4g}) with probability 2/3",
        "Blum & Hardt 2015, Theorem 5.1 and Corollary 5.2",
    )


EVERY_SUBMISSION = "every submission"


@dataclass(frozen=True)
class ProvenBound:
    """What a mechanism's theorem guarantees against any adaptive participant: with probability
    ≥ 1 − ``delta``, the leaderboard error max_{t≤k} |min_{i≤t} R_D(f_i) − R_t| is at most
    ``epsilon`` (in units of the loss bound B), for the submissions ``holds`` names."""

    epsilon: float
    delta: float
    statement: str
    source: str
    holds: str = EVERY_SUBMISSION

    @property
    def vacuous(self) -> bool:
        """True when ε ≥ 1: a loss in [0, B] can be off by no more, so the theorem says nothing."""
        return not self.epsilon < 1.0

    def text(self) -> str:
        """One line for people: the bound, or that it is vacuous, and its source."""
        what = "vacuous (ε ≥ 1)" if self.vacuous else f"ε = {self.epsilon:.3g}"
        return f"{what} with probability ≥ {1 - self.delta:g}, {self.holds}; {self.source}"

    def record(self) -> dict[str, object]:
        """The bound as a JSON-ready mapping."""
        return {"epsilon": float(self.epsilon), "delta": float(self.delta), "vacuous": self.vacuous, "statement": self.statement,
                "source": self.source, "holds": self.holds}
