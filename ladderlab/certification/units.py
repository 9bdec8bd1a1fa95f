"""The units of a certificate's tolerances: the organiser's reference, the loss bound B, or the score.

A tolerance means something only in a unit. Blum & Hardt's theorems are stated in units of
the loss bound B (the width of the per-sample loss's range), which is 1 for the 0/1 loss but
(HIGH − LOW)² for a squared error clipped into [LOW, HIGH]: 0.05·B on scikit-learn's diabetes
labels ([25, 346]) is 5,150 MSE, more than a sensible model's whole error. A certificate's τ
and ε are therefore stated by default in the **reference unit** U: what the best *constant*
prediction loses on the public labels, the distance from knowing nothing to knowing
everything. "τ = 0.1" then reads the same on every scorer: the leaderboard may overstate a
team by a tenth of what separates a constant from a perfect prediction.

=======================  ===================================================================
scorer                   U on the public labels y (n rows; shares of the classes c)
=======================  ===================================================================
zero-one                 1 − max_c share(c): the minority rate of binary labels
accuracy                 the same gap, 1 − max_c share(c), between the majority guess and 1
squared                  mean (ȳ − y)², ȳ clipped into the prediction range: the variance
absolute                 mean |m − y|, m the median clipped into the range: the mean absolute deviation
rmse                     √ of the squared loss's: the standard deviation
log-loss                 the log loss of the base rate (clipped into the range): the label entropy, in nats
multiclass-log-loss      the log loss of the class shares (clipped): the entropy of the labels
roc-auc                  ½: a constant's AUC is ½, a perfect ranking's 1
pearson, spearman, ccc   1: a constant carries no correlation (0), a perfect prediction 1
sign-agreement           M·(1 − max share), M = max(|LOW|, |HIGH|): from ±M to M·(2y − 1)
=======================  ===================================================================

For a loss it is the loss of the best constant (the base rate is the best constant for the
0/1 and log losses, the mean for the squared, the median for the absolute); for a metric,
larger is better and "perfect" is not 0, so it is the gap between the best constant's score
and the best score there is. U is measured once per task family, on the public labels of the
split the certificate names (the challenge's own, or one drawn at a fixed seed for a
synthetic family), and printed with B and the raw tolerance.

The other units: ``bound`` (B, certificates before version 3) and ``score`` (the scorer's own
units: "τ = 500" on a squared error is 500 MSE). Whatever the unit, a tolerance larger than U is
refused: a leaderboard that may overstate a team by more than the constant predictor's whole
loss protects nothing, and a certificate that tolerates it says nothing.

The module also holds the certificate's defaults (τ, ε, β, the useful honest correlation, the most
replications), which the command line shows without importing the battery.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ladderlab.scoring import Scorer, get_scorer
from ladderlab.tasks import PublicData

CONSTANT, BOUND, SCORE = "constant", "bound", "score"
UNITS = {
    CONSTANT: "the loss of the best constant prediction on the public labels",
    BOUND: "the loss bound B",
    SCORE: "the scorer's own units",
}
"""The units a certificate's τ and ε may be stated in (``--unit``), and what each is."""
DEFAULT_UNIT = CONSTANT
DEFAULT_TOLERANCE = 0.1
"""τ and ε by default, in the certificate's unit: a tenth of what the best constant prediction loses."""
DEFAULT_BETA = 0.1
"""β by default: a point passes when at most a tenth of contests overfit past τ (or overstate past ε)."""
DEFAULT_REPLICATIONS = 400
"""The most replications a grid point uses by default: a point whose shares beyond the tolerances lie at a
fifth of β or below is decided within them in 97 % of runs (one of 500 points; a third of β in 59 %), a
clear one after about 125 (the fewest that can show a share below β = 0.1 at that per-sequence error)."""
USEFUL = 0.5
"""The honest participants' Spearman correlation below which a safe mechanism releases nothing useful."""


def _majority_gap(scorer: Scorer, y: NDArray[np.float64], classes: NDArray[np.float64] | None) -> float:
    counts = np.unique(y, return_counts=True)[1]
    return 1.0 - counts.max() / y.size


def _constant_score(choose: Callable[[NDArray[np.float64]], float]) -> Callable[..., float]:
    """U of a loss whose best constant prediction is ``choose(y)``: that constant's loss, clipped into the range."""

    def unit(scorer: Scorer, y: NDArray[np.float64], classes: NDArray[np.float64] | None) -> float:
        return scorer.score(y, np.full(y.size, choose(y)))

    return unit


def _class_shares(scorer: Scorer, y: NDArray[np.float64], classes: NDArray[np.float64] | None) -> float:
    labels = np.arange(classes.size if classes is not None else int(y.max()) + 1)
    shares = (y[:, None] == labels[None, :]).mean(axis=0)
    return scorer.score(y, np.broadcast_to(shares, (y.size, labels.size)))


def _sign_agreement(scorer: Scorer, y: NDArray[np.float64], classes: NDArray[np.float64] | None) -> float:
    largest = max(abs(value) for value in scorer.prediction_range or (-1.0, 1.0))
    return largest * _majority_gap(scorer, y, classes)


def _fixed(value: float) -> Callable[..., float]:
    return lambda scorer, y, classes: value


CONSTANT_LOSSES: dict[str, Callable[[Scorer, NDArray[np.float64], NDArray[np.float64] | None], float]] = {
    "zero-one": _majority_gap,
    "accuracy": _majority_gap,
    "squared": _constant_score(lambda y: float(np.mean(y))),
    "absolute": _constant_score(lambda y: float(np.median(y))),
    "rmse": _constant_score(lambda y: float(np.mean(y))),
    "log-loss": _constant_score(lambda y: float(np.mean(y))),
    "multiclass-log-loss": _class_shares,
    "roc-auc": _fixed(0.5),
    "pearson": _fixed(1.0),
    "spearman": _fixed(1.0),
    "ccc": _fixed(1.0),
    "sign-agreement": _sign_agreement,
}
"""U by scorer name (the module docstring's table): a function of the bound scorer, the public labels
and the label set."""


def constant_loss(data: PublicData, y_public: NDArray[np.float64]) -> float:
    """U of the data's scorer (under its declared prediction range) on the public labels ``y_public``."""
    scorer = get_scorer(data.scorer).within(data.prediction_range)
    if scorer.name not in CONSTANT_LOSSES:
        raise ValueError(f"scorer {scorer.name!r}: no reference unit is known for it; state the tolerances with "
                         f"--unit {BOUND} or --unit {SCORE}")
    return float(CONSTANT_LOSSES[scorer.name](scorer, np.asarray(y_public, dtype=float), data.classes))


@dataclass(frozen=True)
class Unit:
    """A family's unit: the unit's name, its value in the scorer's units, the family's U and B, and the
    best constant prediction's score (its loss U for a loss; the best score there is minus U for a metric)
    with the scorer's orientation (``sign``: +1 when smaller is better)."""

    name: str
    value: float
    constant_loss: float
    bound: float
    constant_score: float = math.nan
    sign: float = 1.0

    def raw(self, tolerance: float) -> float:
        """A tolerance stated in this unit, in the scorer's units."""
        return tolerance * self.value

    def cap(self, tolerance: float) -> float:
        """The risk (score × ``sign``) beyond which a certificate does not measure how precisely the leaderboard
        shows a score: ``tolerance`` worse than the best constant prediction (a team that does not beat a
        constant by more than that is in nobody's contention; a garbage probe's own sampling noise, many
        times U on a squared error, is no overfitting)."""
        return self.sign * self.constant_score + self.raw(tolerance)

    def record(self, tau: float, epsilon: float) -> dict[str, Any]:
        """What the certificate says of the family's unit and tolerances, in the scorer's units and B."""
        return {"unit": self.name, "unit_value": self.value, "constant_loss": self.constant_loss, "loss_bound": self.bound,
                "tau_raw": self.raw(tau), "epsilon_raw": self.raw(epsilon),
                "tau_bound": self.raw(tau) / self.bound, "epsilon_bound": self.raw(epsilon) / self.bound}


def unit_of(name: str, data: PublicData, y_public: NDArray[np.float64], bound: float) -> Unit:
    """The unit ``name`` (:data:`UNITS`) on a family whose public data, public labels and B are given."""
    if name not in UNITS:
        raise ValueError(f"--unit {name}: choose one of {', '.join(UNITS)}")
    constant = constant_loss(data, y_public)
    value = {CONSTANT: constant, BOUND: bound, SCORE: 1.0}[name]
    scorer = get_scorer(data.scorer).within(data.prediction_range)
    best = scorer.value_range(None if data.classes is None else data.classes.size)
    score = best[1] - constant if scorer.greater_is_better and best is not None else constant
    return Unit(name, value, constant, bound, score, scorer.sign)


def check_tolerances(tau: float, epsilon: float, unit: Unit, family: str) -> None:
    """``ValueError`` with the reason when τ or ε, in the scorer's units, exceeds U: a tolerance larger
    than the constant predictor's whole loss protects nothing; also when U is 0 (constant labels)."""
    if not math.isfinite(unit.constant_loss) or unit.constant_loss <= 0:
        raise ValueError(f"the {family} family's public labels are all alike: the best constant prediction loses "
                         f"nothing ({unit.constant_loss:g}), so no tolerance can be stated against it")
    for name, value in (("tau", tau), ("epsilon", epsilon)):
        if unit.raw(value) > unit.constant_loss * (1 + 1e-12):
            raise ValueError(
                f"--{name} {value:g} ({UNITS[unit.name]}) is {unit.raw(value):.4g} in the {family} family's scorer units, "
                f"more than the best constant prediction loses there ({unit.constant_loss:.4g}): a leaderboard that "
                "may overstate a team by more than what a constant prediction loses protects nothing")
