from __future__ import annotations

import math
from typing import Any

import numpy as np

from ladderlab.attack import Attack, FloatArray
from ladderlab.board import Board
from ladderlab.params import Boolean, Interval
from ladderlab.scoring import LogLoss, LossScorer, MulticlassLogLoss, PredictionKind, get_scorer
from ladderlab.tasks import PublicData

MAX_CANDIDATES = 1 << 20
"""Largest number of labellings of one batch the decoder enumerates."""
TOLERANCE = 1e-6
"""Relative slack, in units of the resolution, for the floating-point difference between the
decoder's and the leaderboard's sums of the same losses."""


class DecodingCollision(RuntimeError):
    """More than one labelling of a batch matches a released score: the encoding is broken."""


class LogLossOracle(Attack):
    """Batch label recovery from a log-loss leaderboard: a positional code of m labels per submission.

    Whitehill 2017 ("Climbing the Kaggle leaderboard by exploiting the log-loss
    oracle") and Oleg Trott's Data Science Bowl 2017 script, which recovered all 198
    public labels in 14 submissions. Every row outside the batch gets the uniform
    prediction (loss log c whatever its label); batch position j gets the
    probability row p_j(r) ∝ exp(−r·c^j·Δ), so the batch adds Δ·Σ_j y_j c^j to n·LL
    (plus a known constant): the released score is an affine function of the batch's
    labels written in base c. Δ = ``margin``·n·``resolution`` (Trott: 1.05·n·10⁻⁵)
    spaces neighbouring labellings more than one rounding step apart. The binary
    case (c = 2) is exactly Trott's template t_j = 1/(1 + exp(n·ε·2^j)); the
    multiclass rows are a reconstruction of the same code in base c, not Whitehill's
    own construction.

    ``resolution`` is in units of the loss bound B when the task declares a prediction
    range (as the mechanisms' α and η are: Kaggle releases multiples of α·B), absolute
    otherwise. The rows are built within the probabilities the scorer leaves
    unclipped, [ε, 1 − ε] or the declared range [p₀, p₁]: a clipped and renormalised
    row would change the code. The batch size is the largest m for which no
    probability leaves that interval (m ≤ 1 + log_c(ln(1/p₀) / ((c − 1)·Δ)), lowered
    until the largest probability stays below p₁) and the c^m candidate scores, computed
    with the scorer itself, are pairwise more than the resolution apart: every
    labelling of a batch gives a distinct released value (``batch`` fixes m and is
    refused if it does not). Decoding enumerates the c^m labellings and keeps those
    whose score rounds to the released value; exactly one may match. Two matches
    raise :class:`DecodingCollision` (never a guess); none means the leaderboard did
    not release the score at that resolution (a Ladder's held value, noise), and the
    batch stays undecoded. Batches are random blocks of the public rows
    (``shuffle``), one submission each, while the budget lasts. The final
    prediction is the decoded label (probability 0 or 1, clipped by the scorer) on
    recovered rows and uniform elsewhere.

    Needs the public rows (a two-stage competition, ``PublicData.public_rows``); the
    variant for an unknown scored subset (Whitehill's second attack) is not built.
    After ``run``: ``batch_size_``, ``recovered_`` (labels decoded) and
    ``undecoded_batches_``.
    """

    id = "log-loss-oracle"
    version = "2"  # 2: the code is built within a declared prediction range, its resolution in units of B
    reference = "Whitehill 2017, arXiv:1707.01825; Trott's Data Science Bowl 2017 script"
    task_types = frozenset({"classification"})
    _parameter_constraints = {
        "batch": [Interval(int, 1, None), None],
        "resolution": [Interval(float, 0, None, closed="neither")],
        "margin": [Interval(float, 1, None, closed="neither")],
        "shuffle": [Boolean()],
    }

    def __init__(self, batch: int | None = None, resolution: float = 1e-5, margin: float = 1.05, shuffle: bool = True):
        self.batch = batch
        self.resolution = resolution
        self.margin = margin
        self.shuffle = shuffle

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """The code for Kaggle's five decimals, and one for a leaderboard that rounds to 1/n
        (the Ladders' resolution), which packs fewer labels per submission."""
        return [{**cls.budget_params(budget), "resolution": 1e-5},
                {**cls.budget_params(budget), "resolution": float(1.0 / n)}]

    def incompatibility(self, data: PublicData) -> str | None:
        scorer = get_scorer(data.scorer)
        if not isinstance(scorer, (LogLoss, MulticlassLogLoss)):
            return f"log-loss-oracle needs a log-loss leaderboard, not {data.scorer!r}"
        if data.public_rows is None:
            return "log-loss-oracle needs to know which holdout rows the leaderboard scores (a two-stage competition)"
        if data.classes is None:
            return "log-loss-oracle needs the task's label set"
        try:
            self._code(data)
        except ValueError as error:
            return str(error)
        return super().incompatibility(data)

    def _code(self, data: PublicData) -> PositionalCode:
        """The positional code for the public rows at ``resolution`` (in units of B under a declared range)."""
        scorer = get_scorer(data.scorer).within(data.prediction_range)
        assert isinstance(scorer, (LogLoss, MulticlassLogLoss)) and data.public_rows is not None and data.classes is not None
        c = data.classes.size
        return PositionalCode(scorer, c, data.public_rows.size, self.resolution * (scorer.bound(c) or 1.0), self.margin,
                              self.batch)

    def max_submissions(self, data: PublicData) -> int | None:
        """At most one submission per public row (a batch decodes at least one label)."""
        return None if data.public_rows is None else int(data.public_rows.size)

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        code = self._code(data)
        scorer, c, n = code.scorer, code.c, code.n
        self.batch_size_ = code.size
        rows = rng.permutation(data.public_rows) if self.shuffle else np.asarray(data.public_rows)
        uniform = np.full((board.holdout_size, c), 1.0 / c)
        recovered = np.full(board.holdout_size, -1)
        self.undecoded_batches_ = 0
        for start in range(0, n, code.size):
            if board.remaining is not None and board.remaining < 1:
                break
            batch = rows[start : start + code.size]
            query = uniform.copy()
            query[batch] = code.rows[: batch.size]
            released = board.submit(_as_submission(query, scorer))
            labels = code.decode(released, batch.size)
            if labels is None:
                self.undecoded_batches_ += 1
            else:
                recovered[batch] = labels
        self.recovered_ = int((recovered >= 0).sum())
        final = uniform.copy()
        known = recovered >= 0
        final[known] = np.eye(c)[recovered[known]]
        return _as_submission(final, scorer)


def _as_submission(rows: FloatArray, scorer: LossScorer) -> FloatArray:
    """Class-probability rows as the scorer takes them: the probability of class 1 for binary log loss."""
    return rows if scorer.prediction_kind is PredictionKind.PROBABILITIES else rows[:, 1].copy()


class PositionalCode:
    """The probability rows of one batch and the decoder of its released score.

    ``rows[j]`` is position j's probability row; ``decode(released, size)`` returns the
    labels of the first ``size`` positions whose candidate score matches ``released``.
    """

    def __init__(self, scorer: LogLoss | MulticlassLogLoss, n_classes: int, n: int, resolution: float, margin: float,
                 size: int | None = None):
        self.scorer, self.c, self.n, self.resolution = scorer, n_classes, n, resolution
        self.step = margin * n * resolution
        largest = self._largest_size()
        if size is None:
            size = largest
        if size > largest or not self._distinct(size):
            raise ValueError(
                f"log-loss-oracle: a batch of {size} labels cannot be decoded uniquely at resolution "
                f"{resolution:g} on n = {n} public rows with {n_classes} classes (largest: {largest})"
            )
        self.size = size
        self.rows = self._rows(size)
        self._tables: dict[int, FloatArray] = {}

    def _largest_size(self) -> int:
        """The no-clip bound, lowered until the candidates are distinct; at most n and the enumeration limit."""
        clip_room = math.log(1.0 / self.scorer.probability_limits()[0])
        bound = 1 + math.log(clip_room / ((self.c - 1) * self.step)) / math.log(self.c) if clip_room > (self.c - 1) * self.step else 1
        size = max(1, min(int(bound), self.n, int(math.log(MAX_CANDIDATES) / math.log(self.c))))
        while size > 1 and not self._distinct(size):
            size -= 1
        return size

    def _rows(self, size: int) -> FloatArray:
        excess = np.arange(self.c)[None, :] * (float(self.c) ** np.arange(size))[:, None] * self.step
        weights = np.exp(-(excess - excess.min(axis=1, keepdims=True)))
        return weights / weights.sum(axis=1, keepdims=True)

    def _losses(self, size: int) -> FloatArray:
        """loss[j, r]: the scorer's per-sample loss of position j's row when the label is r."""
        rows = self._rows(size)
        submission = _as_submission(rows, self.scorer)[None]
        return np.stack([self.scorer.loss(np.full(size, float(r)), submission)[0] for r in range(self.c)], axis=1)

    def _scores(self, size: int) -> FloatArray:
        """Candidate public scores of every labelling, indexed by Σ_j y_j c^j."""
        uniform = np.full((1, 1, self.c), 1.0 / self.c)
        outside = float(self.scorer.loss(np.zeros(1), _as_submission(uniform[0], self.scorer)[None])[0, 0])
        total = np.array([(self.n - size) * outside])
        for loss in self._losses(size):
            total = (loss[:, None] + total[None, :]).ravel()
        return total / self.n

    def _distinct(self, size: int) -> bool:
        if size > self.n or self.c**size > MAX_CANDIDATES:
            return False
        low, high = self.scorer.probability_limits()
        rows = self._rows(size)
        if np.any(rows < low) or np.any(rows > high):
            return False
        gaps = np.diff(np.sort(self._scores(size)))
        return bool(gaps.min(initial=np.inf) > self.resolution * (1 + 2 * TOLERANCE))

    def decode(self, released: float, size: int) -> FloatArray | None:
        """The labels of the unique labelling whose score rounds to ``released`` (None: no match)."""
        if size not in self._tables:
            self._tables[size] = self._scores(size)
        scores = self._tables[size]
        matches = np.flatnonzero(np.abs(scores - released) <= 0.5 * self.resolution * (1 + TOLERANCE))
        if matches.size > 1:
            raise DecodingCollision(f"{matches.size} labellings of a batch of {size} match the released score {released!r}")
        if matches.size == 0:
            return None
        return (matches[0] // self.c ** np.arange(size)) % self.c
