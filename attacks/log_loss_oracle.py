from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from ladderlab.attack import SUBMISSION_CHUNK_ELEMENTS, Attack, FloatArray
from ladderlab.board import Board
from ladderlab.engines.label_code import LabelCode
from ladderlab.params import Boolean, Interval
from ladderlab.scoring import (
    LogLoss,
    LossScorer,
    MulticlassLogLoss,
    PredictionKind,
    get_scorer,
)
from ladderlab.tasks import PublicData

MAX_CANDIDATES = 1 << 20
"""Largest number of labellings of one batch the decoder enumerates."""
MAX_POSITIONS = 32
"""Most positions a subset code builds (its candidates are bounded by ``MAX_CANDIDATES`` anyway)."""
LARGEST_EXPONENT = 700.0
"""exp(−700) is still a normal float: the widest digit spread times a scale stays below it."""
SIZE_PROBES = 8
"""Random label vectors submitted to learn the number of public rows when they are not disclosed."""
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

    Where the public rows are not disclosed (Whitehill's second attack, whose algorithm
    is not public: this variant is a reconstruction, **[R]**, after LITERATURE §2.5(a)),
    the attack first learns their number n: ``SIZE_PROBES`` random one-hot label
    vectors release hit + (miss − hit)·j/n (:mod:`ladderlab.engines.label_code`), and n is the
    smallest count that makes every read-back 0/1 loss a multiple of 1/n within the
    rounding. Then every holdout row is coded with c + 1 states, its label or "not
    scored" (loss log c, as the uniform rows), in a mixed-radix code (:class:`SubsetCode`),
    and the decoded state says both whether the row is public and its label. After
    ``run``: ``batch_size_``, ``recovered_`` (labels decoded), ``undecoded_batches_``
    and ``scored_rows_`` (n as given or learnt; None if no count fits).
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
        if data.classes is None:
            return "log-loss-oracle needs the task's label set"
        if data.public_rows is not None:
            try:
                self._code(data, data.public_rows.size)
            except ValueError as error:
                return str(error)
        elif (why := LabelCode.incompatibility(data)) is not None:
            return f"log-loss-oracle learns the number of public rows from label vectors: {why}"
        return super().incompatibility(data)

    def _code(self, data: PublicData, n: int) -> PositionalCode:
        """The code for n public rows at ``resolution`` (in units of B under a declared range): positional
        over the disclosed public rows, mixed-radix with a "not scored" state over all rows otherwise."""
        scorer = get_scorer(data.scorer).within(data.prediction_range)
        assert isinstance(scorer, (LogLoss, MulticlassLogLoss)) and data.classes is not None
        c = data.classes.size
        kind = PositionalCode if data.public_rows is not None else SubsetCode
        return kind(scorer, c, n, self.resolution * (scorer.bound(c) or 1.0), self.margin, self.batch)

    def max_submissions(self, data: PublicData) -> int | None:
        """At most one submission per public row (a batch decodes at least one label); without the
        public rows, the probes and one per holdout row."""
        if data.public_rows is None:
            return SIZE_PROBES + int(data.X_holdout.shape[0])
        return int(data.public_rows.size)

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        c = board.classes.size
        uniform = np.full((board.holdout_size, c), 1.0 / c)
        recovered = np.full(board.holdout_size, -1)
        self.undecoded_batches_, self.recovered_, self.batch_size_ = 0, 0, 0
        scorer = get_scorer(data.scorer).within(data.prediction_range)
        assert isinstance(scorer, (LogLoss, MulticlassLogLoss))
        if data.public_rows is not None:
            n, rows = data.public_rows.size, np.asarray(data.public_rows)
        else:
            n, rows = self._scored_rows(board, data, rng), np.arange(board.holdout_size)
        self.scored_rows_ = n
        try:
            code = None if n is None else self._code(data, n)
        except ValueError:
            code = None
        if code is None:
            return _as_submission(uniform, scorer)
        self.batch_size_ = code.size
        if self.shuffle:
            rows = rng.permutation(rows)
        batches = [rows[start : start + code.size] for start in range(0, rows.size, code.size)]
        if board.remaining is not None:
            batches = batches[: board.remaining]
        per_call = max(1, SUBMISSION_CHUNK_ELEMENTS // (board.holdout_size * c))
        for first in range(0, len(batches), per_call):
            chunk = batches[first : first + per_call]
            queries = np.repeat(uniform[None], len(chunk), axis=0)
            for query, batch in zip(queries, chunk):
                query[batch] = code.rows[: batch.size]
            for released, batch in zip(board.submit_many(_as_submission(queries, scorer)), chunk):
                labels = code.decode(float(released), batch.size)
                if labels is None:
                    self.undecoded_batches_ += 1
                else:
                    recovered[batch] = np.where(labels < c, labels, -1)
        self.recovered_ = int((recovered >= 0).sum())
        final = uniform.copy()
        known = recovered >= 0
        final[known] = np.eye(c)[recovered[known]]
        return _as_submission(final, scorer)

    def _scored_rows(self, board: Board, data: PublicData, rng: np.random.Generator) -> int | None:
        """The number of public rows: the smallest n that makes the 0/1 loss of every probe, read back
        from its release, a multiple of 1/n within the rounding (None: no n up to the holdout size does)."""
        if board.remaining is not None and board.remaining < SIZE_PROBES:
            return None
        labels = LabelCode.of(data)
        probes = rng.integers(0, board.classes.size, (SIZE_PROBES, board.holdout_size))
        errors = labels.zero_one_loss(board.submit_many(labels.submissions(probes)))
        bound = labels.scorer.bound(board.classes.size) or 1.0
        slack = 0.5 * self.resolution * bound / (labels.miss - labels.hit) * (1 + TOLERANCE) + 1e-12
        counts = np.arange(1, board.holdout_size + 1, dtype=float)
        scaled = errors[:, None] * counts[None, :]
        fits = (np.abs(scaled - np.rint(scaled)) <= slack * counts[None, :]).all(axis=0)
        return int(counts[np.argmax(fits)]) if fits.any() else None


def _as_submission(rows: FloatArray, scorer: LossScorer) -> FloatArray:
    """Class-probability rows (last axis) as the scorer takes them: the probability of class 1 for binary log loss."""
    return rows if scorer.prediction_kind is PredictionKind.PROBABILITIES else rows[..., 1].copy()


class PositionalCode:
    """The probability rows of one batch and the decoder of its released score.

    ``rows[j]`` is position j's probability row; ``decode(released, size)`` returns the
    labels of the first ``size`` positions whose candidate score matches ``released``.
    """

    states_per_row = 0
    """States a position adds beyond its c labels."""

    def __init__(self, scorer: LogLoss | MulticlassLogLoss, n_classes: int, n: int, resolution: float, margin: float,
                 size: int | None = None):
        self.scorer, self.c, self.n, self.resolution = scorer, n_classes, n, resolution
        self.states = n_classes + self.states_per_row
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
        size = max(1, min(int(bound), self._most_positions(), int(math.log(MAX_CANDIDATES) / math.log(self.states))))
        while size > 1 and not self._distinct(size):
            size -= 1
        return size

    def _most_positions(self) -> int:
        """No batch is larger than the rows it codes: the n public rows."""
        return self.n

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
        """Candidate public scores of every state of the batch, indexed by Σ_j s_j·states^j (a
        state c, "not scored", loses what a uniform row outside the batch loses)."""
        uniform = np.full((1, 1, self.c), 1.0 / self.c)
        outside = float(self.scorer.loss(np.zeros(1), _as_submission(uniform[0], self.scorer)[None])[0, 0])
        total = np.array([(self.n - size) * outside])
        for loss in self._losses(size):
            options = np.append(loss, [outside] * self.states_per_row)
            total = (options[:, None] + total[None, :]).ravel()
        return total / self.n

    def _distinct(self, size: int) -> bool:
        if size > self._most_positions() or self.states**size > MAX_CANDIDATES or size > len(self._rows(size)):
            return False
        low, high = self.scorer.probability_limits()
        rows = self._rows(size)
        if np.any(rows < low) or np.any(rows > high):
            return False
        gaps = np.diff(np.sort(self._scores(size)))
        return bool(gaps.min(initial=np.inf) > self.resolution * (1 + 2 * TOLERANCE))

    def decode(self, released: float, size: int) -> FloatArray | None:
        """The states (labels, and c for "not scored") of the unique assignment whose score rounds to
        ``released`` (None: no match)."""
        if size not in self._tables:
            self._tables[size] = self._scores(size)
        scores = self._tables[size]
        matches = np.flatnonzero(np.abs(scores - released) <= 0.5 * self.resolution * (1 + TOLERANCE))
        if matches.size > 1:
            raise DecodingCollision(f"{matches.size} labellings of a batch of {size} match the released score {released!r}")
        if matches.size == 0:
            return None
        return (matches[0] // self.states ** np.arange(size)) % self.states


class SubsetCode(PositionalCode):
    """A code for a batch of any holdout rows, scored or not: c + 1 states per position ([R]).

    A row outside the scored set loses nothing the uniform rows do not, so its state adds 0
    to n·LL − n·log c, and every label must add a distinct amount on both sides of 0. Position
    j's row is p_j(r) ∝ exp(−d_r·s_j) with the digits d_r = −⌊c/2⌋ … ⌈c/2⌉ without 0: its excess
    losses lie about d_r·s_j around the 0 of "not scored". s_j is the smallest scale at which
    those c + 1 values are ``step`` plus the spread of all earlier positions apart (a mixed
    radix, found by bisection); the enumeration of :class:`PositionalCode` then checks that
    every assignment is distinct at the resolution.
    """

    states_per_row = 1

    def _most_positions(self) -> int:
        return MAX_POSITIONS

    def _rows(self, size: int) -> FloatArray:
        return self._mixed_radix_rows[:size]

    @cached_property
    def _mixed_radix_rows(self) -> FloatArray:
        """Rows for as many positions as fit inside the clip, each at its smallest sufficient scale."""
        low, high = self.scorer.probability_limits()
        digits = np.delete(np.arange(self.c + 1) - self.c // 2, self.c // 2).astype(float)
        rows, spread = [], 0.0
        while len(rows) < MAX_POSITIONS:
            scale = _smallest_scale(digits, self.c, self.step + spread)
            if not np.isfinite(scale):
                break
            row = _digit_row(digits, scale)
            if row.min() < low or row.max() > high:
                break
            rows.append(row)
            excess = _excess(digits, self.c, scale)
            spread += max(excess.max(), 0.0) - min(excess.min(), 0.0)
        return np.array(rows).reshape(len(rows), self.c)


def _digit_row(digits: FloatArray, scale: float) -> FloatArray:
    weights = np.exp(-(digits - digits.min()) * scale)
    return weights / weights.sum()


def _excess(digits: FloatArray, c: int, scale: float) -> FloatArray:
    """The loss of each label beyond log c under the row of ``digits`` at ``scale``."""
    return -np.log(_digit_row(digits, scale)) - math.log(c)


def _smallest_scale(digits: FloatArray, c: int, gap: float) -> float:
    """The smallest scale at which the excesses and 0 are pairwise at least ``gap`` apart (inf: none
    before the smallest probability underflows)."""
    def apart(scale: float) -> bool:
        return bool(np.diff(np.sort(np.append(_excess(digits, c, scale), 0.0))).min() >= gap)

    high, largest = gap, LARGEST_EXPONENT / np.ptp(digits)
    while not apart(high):
        high *= 2
        if high > largest:
            return math.inf
    low = 0.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if apart(middle) else (middle, high)
    return high
