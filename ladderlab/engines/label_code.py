"""Label vectors submitted to any classification leaderboard, and their 0/1 loss read back from the release.

Boosting-style attacks (Blum & Hardt 2015, §5; Feldman, Frostig & Hardt 2019) submit label
vectors u and read their public 0/1 loss. A label scorer (0/1 loss, accuracy) takes u as it
is. A log-loss leaderboard takes u as one-hot probability rows (binary log loss: the
probability of class 1), clipped by the scorer into [ε, 1 − ε] and the declared prediction
range; every row then loses ``hit`` if its label is right and ``miss`` if it is wrong, the
same for every class, so the released loss is hit + (miss − hit)·err(u) and err(u) is read
back exactly, up to the release's own rounding divided by miss − hit (≤ B). This reduction of
a log-loss leaderboard to a 0/1 one is ladderlab's ([R]), not the papers'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ladderlab.scoring import (
    FloatArray,
    LogLoss,
    MulticlassLogLoss,
    PredictionKind,
    Scorer,
    get_scorer,
)
from ladderlab.tasks import PublicData

READ_BACK_DECIMALS = 12
"""The read-back 0/1 loss is rounded to this many decimals: far below any 1/n, far above the
float error of a mean of losses, so a release exactly at ½ reads as ½."""


@dataclass(frozen=True)
class LabelCode:
    """How label vectors are submitted on ``scorer`` and how a release gives their 0/1 loss."""

    scorer: Scorer
    classes: FloatArray
    hit: float
    """The per-row loss of a right label (0 on a label scorer)."""
    miss: float
    """The per-row loss of a wrong label (1 on a label scorer)."""

    @classmethod
    def incompatibility(cls, data: PublicData) -> str | None:
        """Why label vectors cannot be played on ``data`` (None: they can)."""
        try:
            cls.of(data)
        except ValueError as error:
            return str(error)
        return None

    @classmethod
    def binary_incompatibility(cls, data: PublicData, who: str) -> str | None:
        """Why an attack (``who``, as its messages name it) that submits binary label vectors cannot play
        ``data``: a scorer it cannot code them for, or labels that are not {0, 1}; None if it can."""
        if (why := cls.incompatibility(data)) is not None:
            return f"{who}: {why}"
        if not data.binary_labels:
            return f"{who} needs binary labels {{0, 1}}"
        return None

    @classmethod
    def of(cls, data: PublicData) -> LabelCode:
        """The code for ``data``'s scorer under its declared prediction range; ``ValueError`` saying
        why when label vectors cannot be played on it."""
        scorer = get_scorer(data.scorer).within(data.prediction_range)
        if scorer.name not in ("zero-one", "accuracy") and not isinstance(scorer, (LogLoss, MulticlassLogLoss)):
            raise ValueError(f"it submits label vectors, read through the 0/1 loss, accuracy or a log loss, "
                             f"not {data.scorer!r}")
        if data.classes is None or data.classes.size < 2:
            raise ValueError("it needs the task's label set")
        if scorer.prediction_kind is PredictionKind.LABEL:
            return cls(scorer, data.classes, 0.0, 1.0)
        assert isinstance(scorer, (LogLoss, MulticlassLogLoss))
        class_zero = cls(scorer, data.classes, 0.0, 0.0).submissions(np.zeros((1, 2), dtype=np.int64))
        hit, miss = scorer.loss(np.array([0.0, 1.0]), class_zero)[0]
        if not miss > hit:
            raise ValueError(f"the prediction range {data.prediction_range} leaves a one-hot row no surer of its "
                             "class than of the others")
        return cls(scorer, data.classes, float(hit), float(miss))

    @property
    def values_per_row(self) -> int:
        """Prediction values one row of a submission takes (the class count for probability rows)."""
        return self.classes.size if self.scorer.prediction_kind is PredictionKind.PROBABILITIES else 1

    def submissions(self, U: NDArray[np.integer]) -> FloatArray:
        """Label vectors given as class indices (any shape, rows last) as the scorer takes them."""
        kind = self.scorer.prediction_kind
        if kind is PredictionKind.LABEL:
            return self.classes[U]
        if kind is PredictionKind.PROBABILITIES:
            return np.eye(self.classes.size)[U]
        sure = self._sure()
        return np.where(U == 1, sure, 1.0 - sure)

    def labels(self, submissions: FloatArray) -> NDArray[np.int64]:
        """The class indices of label vectors given as :meth:`submissions` made them."""
        kind = self.scorer.prediction_kind
        if kind is PredictionKind.LABEL:
            return np.searchsorted(self.classes, submissions)
        if kind is PredictionKind.PROBABILITIES:
            return np.argmax(submissions, axis=-1)
        return (submissions == self._sure()).astype(np.int64)

    def _sure(self) -> float:
        """The binary log loss's probability of a labelled class: as sure as the clip allows, the
        same for both classes. Its complement q is a multiple of 2⁻⁵³, so that 1 − q is exact and
        a right or wrong label of either class loses the same, to the last bits."""
        assert isinstance(self.scorer, LogLoss)
        low, high = self.scorer.probability_limits()
        unsure = math.ceil(max(low, 1.0 - high) * 2**53) / 2**53
        while 1.0 - unsure > high:
            unsure += 2**-53
        return 1.0 - unsure

    def zero_one_loss(self, released: FloatArray) -> FloatArray:
        """The public 0/1 loss of the submitted label vectors, from their released scores."""
        released = np.asarray(released, dtype=float)
        if self.scorer.name == "zero-one":
            return released
        if self.scorer.name == "accuracy":
            return 1.0 - released
        return np.round((released - self.hit) / (self.miss - self.hit), READ_BACK_DECIMALS)

    def accuracy(self, released: FloatArray) -> FloatArray:
        """The public accuracy of the submitted label vectors, from their released scores (a
        released accuracy as it is, bit for bit)."""
        return np.asarray(released, dtype=float) if self.scorer.name == "accuracy" else 1.0 - self.zero_one_loss(released)
