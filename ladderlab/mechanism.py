"""The base class of leaderboard mechanisms.

A mechanism is bound to the public holdout labels, a scorer and a
``numpy.random.Generator`` (``bind``, the analogue of scikit-learn's ``fit``), then
answers submissions with released scores. ``bind`` is also where a declared prediction
range takes effect, for duels, competitions and a deployed leaderboard alike: the bound
scorer clips predictions into it, and its width B (``loss_bound_``) is the unit of the
mechanism's parameters (η, α, noise scales, thresholds): ``unit_`` is B, or 1 for a
scorer that is unbounded without a range, which then behaves as before ranges existed.
``submit_many(P)`` has exactly the semantics of ``submit`` called on the rows of ``P`` in
order, including the random stream, so a batch and a loop give bit-identical transcripts.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.holdout import holdout_scores
from ladderlab.plugin import Plugin
from ladderlab.scoring import (
    LossScorer,
    Scorer,
    ValueRange,
    get_scorer,
    require_finite_scores,
    scores_by_block,
)
from ladderlab.stats.bounds import ProvenBound, TheoreticalBound
from ladderlab.tasks import PublicData
from ladderlab.validation import (
    check_prediction_matrix,
    quick_row_check,
    rows_per_block,
)

FloatArray = NDArray[np.float64]
FLOAT64 = np.dtype(np.float64)


class Mechanism(Plugin):
    """A leaderboard mechanism: turns submissions into released scores."""

    requires_loss: ClassVar[bool] = False
    """True when the mechanism needs a per-sample loss (the paired-t-test family)."""
    releases_best: ClassVar[bool] = False
    """True when each release estimates the best submission so far (the Ladders, which
    record their new bests in ``acceptances_``);
    False when it scores the submission itself, so the leaderboard shows the best
    release so far (Kaggle, Full-disclosure)."""
    monotone: ClassVar[bool] = False
    """True when released scores never get worse (the deterministic Ladders); checked by
    ``ladderlab.testing`` against adaptive analysts."""
    expected_check_failures: ClassVar[dict[str, str]] = {}
    """Conformance checks (``ladderlab.testing``) this mechanism is known to fail, with why."""
    _search_space: ClassVar[dict[str, list[Any]]] = {}
    """The values ``ladderlab certify --tune`` tries for each parameter that trades safety for
    honest utility (every combination; parameters it leaves out stay as given). Each value
    must satisfy ``_parameter_constraints``; quantities in units of B as the mechanism reads them."""
    scores_only: ClassVar[bool] = False
    """True when a release depends on a submission only through its exact score on the bound
    holdout (besides the mechanism's state and random stream): such a mechanism releases from
    a log of exact scores (:meth:`release_scores`), as Blum & Hardt (2015, §6) replayed a Kaggle
    competition's submissions; ``ladderlab.testing`` checks the declaration."""
    takes_guesses: ClassVar[bool] = False
    """True when a release depends on the participant's own estimate of its score, passed as
    ``guesses`` beside the predictions (guess and check); other mechanisms ignore guesses."""
    shared_state: ClassVar[bool] = False
    """True when one bound mechanism answers every account of a competition (one leaderboard
    state for all teams); False gives each account its own bound copy, as Ladder.jl's Kaggle
    replay keeps one Ladder per team and Sage's bootLadderBoot one lead per submitter
    (:mod:`ladderlab.competition`). Duels have one participant and ignore it."""
    stateless: ClassVar[bool] = False
    """True when a release is a function of the submission alone (its exact score, its prediction
    and a key fixed at ``bind``), never of earlier submissions: the rule is
    :meth:`release_recipe`, computed by :func:`ladderlab.engines.stateless.release`. Only such a
    mechanism deploys where the scorer has no identity and no memory (a Kaggle custom metric,
    ``ladderlab export kaggle``); ``ladderlab.testing`` checks the declaration."""

    def resampled_values(self, n_public: int, scorer: Scorer | None = None) -> int:
        """How many loss values the bootstrap resamples of one submission weigh, at most (B · n
        for B replicates of ``n_public`` rows; 0 for a mechanism that does not resample, or whose
        resampling does not grow with the rows), under ``scorer`` where it is known: the term of
        the work estimate (:mod:`ladderlab.runs.workload`) beyond scoring."""
        return 0

    def bind(
        self,
        labels: ArrayLike,
        scorer: str | Scorer,
        rng: np.random.Generator,
        classes: ArrayLike | None = None,
        prediction_range: ValueRange | None = None,
    ) -> Self:
        """Attach the holdout labels, the scorer and the random stream; reset all state.

        ``classes`` is the task's label set, against which label predictions are
        validated; it defaults to the distinct values of ``labels``. ``prediction_range``
        (low, high), public like the metric, is clipped into before scoring and bounds the
        loss (:meth:`ladderlab.scoring.Scorer.within`); ``loss_bound_`` is then its B.
        """
        scorer = get_scorer(scorer).within(prediction_range)
        if self.requires_loss and not isinstance(scorer, LossScorer):
            raise ValueError(
                f"mechanism {self.id!r} needs a per-sample loss (its paired t-test compares "
                f"loss vectors), but {scorer.name!r} is a whole-vector metric; use "
                "'bayesboot-ladder' or 'bayesboot-ladderboot' for it"
            )
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        labels = np.asarray(labels, dtype=float)
        if labels.ndim != 1 or labels.size < 2:
            raise ValueError(f"labels must be a vector of at least 2 values, got shape {labels.shape}")
        if not np.isfinite(labels).all():
            raise ValueError("labels must be finite")
        labels.setflags(write=False)
        self.labels_ = labels
        self.n_ = labels.size
        self.scorer_ = scorer
        self.rng_ = rng
        self.classes_ = np.unique(labels if classes is None else _label_set(classes, labels))
        self.loss_bound_ = scorer.bound(self.classes_.size)
        self.unit_ = 1.0 if self.loss_bound_ is None else self.loss_bound_
        self.holdout_ = holdout_scores(scorer, labels, self.classes_)
        self.row_shape_ = (self.n_,)
        self.row_is_valid_ = quick_row_check(scorer.prediction_kind, self.classes_)
        self._given_scores_: tuple[FloatArray, FloatArray] | None = None
        self.released_: list[float] = []
        self.acceptances_: list[int] = []
        self.validate_params()
        self._start()
        return self

    def bind_to(self, data: PublicData, labels: ArrayLike, rng: np.random.Generator) -> Self:
        """``bind`` to the public ``labels`` of a task's data: its scorer, label set and declared
        prediction range (the path duels, competitions and a deployed leaderboard share)."""
        return self.bind(labels, data.scorer, rng, classes=data.classes, prediction_range=data.prediction_range)

    def releasing(self, improvement: float) -> dict[str, Any]:
        """The values of the parameters that set how fine this mechanism's releases are, in units of B,
        at which an honest improvement of ``improvement`` (in units of B) of the public score is released;
        {} when no parameter does (full disclosure; the Ladders whose test scales with the spread of the
        losses). ``ladderlab certify`` sets them from its tolerance where the organiser did not, so
        that a parameter in units of B keeps its meaning while the certificate's default suits the scorer."""
        return {}

    def leaderboard_error_bound(self, n: int, k: int) -> TheoreticalBound | None:
        """The theory's bound on the leaderboard error after ``k`` submissions on ``n``
        holdout points, in units of the loss bound B, where there is one (None by default)."""
        return None

    def proven_bound(self, n: int, k: int, delta: float = 0.05, zero_one: bool = False) -> ProvenBound | None:
        """The leaderboard error that this mechanism's theorem guarantees, with probability ≥ 1 − δ,
        against any adaptive participant making ``k`` submissions on ``n`` points, in units of the
        loss bound B (for a loss that is a mean over the points); ``zero_one``: the loss is the 0/1
        loss, whose exact binomial tails may replace Hoeffding's. None: no theorem (the default)."""
        return None

    def submit(self, prediction: ArrayLike, guess: float | None = None) -> float:
        """Score one prediction vector and return the released score.

        A float64 vector that passes the quick check of its kind skips the general
        validation (sequential attacks pay this call on every submission); anything
        else takes the path of ``submit_many``, with its errors.
        """
        if (
            guess is None
            and type(prediction) is np.ndarray
            and prediction.dtype is FLOAT64
            and prediction.shape == getattr(self, "row_shape_", None)
        ):
            if self.holdout_.scores_in_passing:
                scores = self.holdout_.scores_of_valid_row(prediction)
                valid = scores is not None
            else:
                scores, valid = None, self.row_is_valid_(prediction)
            if valid:
                released = self._release_given_scores(prediction[None, :], scores)
                value = float(released[0])
                if not math.isfinite(value):
                    require_finite_scores(f"{self.id} release", released)
                self.released_.append(value)
                return value
        vector = np.asarray(prediction)
        if vector.ndim != 1:
            raise ValueError(
                f"submit takes one prediction vector of length {getattr(self, 'n_', 'n')}, got "
                + (f"an array of shape {vector.shape}; use submit_many" if vector.ndim > 1 else f"{prediction!r}")
            )
        return float(self.submit_many(vector[None, :], guesses=None if guess is None else [guess])[0])

    def submit_many(self, predictions: ArrayLike, repeats: int = 1, guesses: ArrayLike | None = None) -> FloatArray:
        """Score the rows of ``predictions`` in order, each ``repeats`` times in a row; return
        their released scores (the copies of a row together).

        The same as ``submit`` called ``repeats`` times on each row. The whole batch is
        validated before any of it is scored: a bad row raises ``ValueError`` and changes
        nothing. ``guesses``: the participant's own estimate of each row's score, in the
        scorer's units (NaN: none), for a mechanism that checks guesses (``takes_guesses``);
        every other mechanism ignores them.
        """
        if not hasattr(self, "labels_"):
            raise RuntimeError(f"mechanism {self.id!r} is not bound: call bind(labels, scorer, rng)")
        check_repeats(repeats)
        scored: list[FloatArray] = []
        score_in_passing = (lambda block: scored.append(self.holdout_.scores(block))) if self.holdout_.scores_in_passing else None
        P = check_prediction_matrix(predictions, self.n_, self.scorer_.prediction_kind, self.classes_, score_in_passing)
        return self.submit_validated(P, repeats, np.concatenate(scored) if scored else None,
                                     check_guesses(guesses, P.shape[0]))

    def submit_validated(self, P: FloatArray, repeats: int = 1, scores: FloatArray | None = None,
                         guesses: FloatArray | None = None) -> FloatArray:
        """``submit_many`` for an m × n float matrix that ``check_prediction_matrix`` has accepted;
        ``scores``, when the caller has them, are the rows' exact scores (``_scores``); ``guesses``
        the rows' guesses that :func:`check_guesses` has accepted.

        The rows go to ``_release`` (``_release_repeated`` for ``repeats`` > 1) in
        cache-sized blocks, in order: a batch streams through memory once, and
        ``_release``'s sequential semantics make the result the same as one call on the
        whole batch. A mechanism never releases a non-finite score: a score that
        overflows or is undefined raises :class:`ladderlab.scoring.ScoreError` naming the
        row of the batch, and nothing is released. A batch of several blocks is scored
        whole before its first block is released (the scores are then lent to
        ``_release``); within one block the scorers raise before the mechanism updates
        anything.
        """
        step = rows_per_block(self.n_)
        if scores is None and P.shape[0] > step:
            scores = scores_by_block(self.holdout_.scores, P, step)
        blocks = []
        for start in range(0, P.shape[0], step):
            rows = P[start : start + step]
            self._pending_guesses_ = None if guesses is None else np.repeat(guesses[start : start + step], repeats)
            try:
                block = self._release_given_scores(rows, None if scores is None else scores[start : start + step],
                                                   repeats)
            finally:
                self._pending_guesses_ = None
            if not np.isfinite(block).all():
                require_finite_scores(f"{self.id} release", block, start)
            self.released_.extend(block.tolist())
            blocks.append(block)
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)

    def _next_guesses(self, rows: int) -> FloatArray:
        """The guesses of the next ``rows`` submissions being released, in order (NaN where a row has
        none): for a mechanism that ``takes_guesses``, to call once per row from ``_release``."""
        pending = getattr(self, "_pending_guesses_", None)
        if pending is None:
            return np.full(rows, np.nan)
        self._pending_guesses_ = pending[rows:]
        return pending[:rows]

    def release_step(self, unit: float) -> float | None:
        """The grid this mechanism's releases lie on (every release a multiple of it) when it binds
        with loss bound ``unit`` (``unit_``), in the scorer's units; None when they lie on none. Shown
        to people at this precision (:mod:`ladderlab.runs.display`)."""
        return None

    def release_scores(self, scores: ArrayLike) -> FloatArray:
        """The releases of submissions known only by their exact scores on the bound holdout, in
        order: what ``submit_many`` releases for predictions with these scores, random streams
        included. Only for a mechanism that declares ``scores_only``, which never reads the bound
        labels, so a replay may bind it to stand-in labels of the holdout's size."""
        if not self.scores_only:
            raise TypeError(f"mechanism {self.id!r} needs the predictions, not only their scores (scores_only is False)")
        if not hasattr(self, "labels_"):
            raise RuntimeError(f"mechanism {self.id!r} is not bound: call bind(labels, scorer, rng)")
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 1:
            raise ValueError(f"release_scores takes a vector of scores, got an array of shape {scores.shape}")
        require_finite_scores(f"{self.id} replayed", scores)
        return self.submit_validated(np.empty((scores.size, 0)), scores=scores)

    def release_recipe(self) -> dict[str, Any]:
        """The rule of a bound :attr:`stateless` mechanism, for
        :func:`ladderlab.engines.stateless.release`: ``noise`` (None or a kind), ``scale``, ``key``
        (hex) and ``step`` (None: no rounding), in the scorer's units."""
        raise TypeError(f"mechanism {self.id!r} is not stateless: its releases depend on earlier submissions "
                        "or on a random stream they advance")

    def _release_given_scores(self, rows: FloatArray, scores: FloatArray | None, repeats: int = 1) -> FloatArray:
        """``_release`` (or ``_release_repeated``) of ``rows``, during which ``_scores(rows)`` is
        ``scores`` when they are given."""
        self._given_scores_ = None if scores is None else (rows, scores)
        try:
            return self._release(rows) if repeats == 1 else self._release_repeated(rows, repeats)
        finally:
            self._given_scores_ = None

    @property
    def best_index_(self) -> int | None:
        """The submission that is the current best (None before the first acceptance)."""
        return self.acceptances_[-1] if self.acceptances_ else None

    def _scores(self, P: FloatArray) -> FloatArray:
        """Exact scores of the validated rows of ``P`` on the bound labels: the scorer's
        ``score_many``, bit for bit (by a shortcut where the label set allows one,
        :mod:`ladderlab.holdout`). The rows being released were often scored already,
        while validation had them in cache or by the leaderboard for its records; those
        scores are returned (a copy) instead of being computed again."""
        known = self._known_scores(P)
        return self.holdout_.scores(P) if known is None else known.copy()

    def _known_scores(self, P: FloatArray) -> FloatArray | None:
        """The scores lent for the rows being released when ``P`` is those rows (not a copy:
        read, never change them), else None."""
        given = self._given_scores_
        return given[1] if given is not None and given[0] is P else None

    def _scores_on(self, rows: NDArray[np.int64], P: FloatArray) -> FloatArray:
        """Exact scores of the rows of ``P`` on a subset of the bound labels, given by index.

        For mechanisms that split their holdout (Thresholdout's released and guard
        halves): the subset is scored as a holdout of its own.
        """
        return self.scorer_.score_many(self.labels_[rows], columns(P, rows))

    def _start(self) -> None:
        """Initialise the per-leaderboard state (called by ``bind``); raise ``ValueError`` for a
        parameter that does not fit the bound labels."""

    @abstractmethod
    def _release(self, P: FloatArray) -> FloatArray:
        """Released scores for the validated rows of ``P``, updating the state.

        A mechanism with a notion of a best submission appends the index of each
        submission that becomes the new best to ``acceptances_``; submissions before
        this batch number ``len(self.released_)``.
        """

    def _release_repeated(self, P: FloatArray, repeats: int) -> FloatArray:
        """``_release`` of the rows of ``P``, each ``repeats`` times in a row: m·repeats scores.

        By default the copies are released like any other rows. A mechanism that can
        answer the copies after the first without scoring them again (the deterministic
        Ladders) overrides this; the result must be the same, random streams included.
        """
        step = rows_per_block(self.n_ * repeats)
        return np.concatenate([self._release(np.repeat(P[start : start + step], repeats, axis=0))
                               for start in range(0, P.shape[0], step)])


def check_repeats(repeats: int) -> int:
    """``repeats``, or ``ValueError`` unless it is a whole number ≥ 1."""
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"repeats must be a whole number ≥ 1, got {repeats!r}")
    return int(repeats)


def check_guesses(guesses: ArrayLike | None, rows: int) -> FloatArray | None:
    """``guesses`` as a float vector of one value per row (NaN: no guess), or ``ValueError``."""
    if guesses is None:
        return None
    try:
        values = np.asarray(guesses, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"guesses must be numbers, got {guesses!r}") from None
    if values.shape != (rows,):
        raise ValueError(f"guesses: one value per submitted row ({rows}), got an array of shape {values.shape}")
    if np.isinf(values).any():
        raise ValueError("guesses must be finite numbers or NaN (no guess)")
    return values


def _label_set(classes: ArrayLike, labels: FloatArray) -> FloatArray:
    """``classes`` as a float vector, or ``ValueError`` unless it holds every label."""
    try:
        label_set = np.asarray(classes, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"classes must be numbers, got {classes!r}") from None
    missing = np.setdiff1d(labels, label_set)
    if missing.size:
        raise ValueError(
            f"classes {sorted(set(label_set.tolist()))} must contain every label, but not "
            f"{', '.join(f'{v:g}' for v in missing[:5])}"
        )
    return label_set


def columns(P: NDArray[np.float64], positions: slice | NDArray[np.int64]) -> NDArray[np.float64]:
    """The holdout positions of every row of ``P``: a view for a slice, else a copy with
    contiguous rows (``P[:, positions]`` would lay the copy out column by column, and a
    row's sums, hence its scores, would then depend on how many rows share the batch)."""
    if isinstance(positions, slice):
        return P[:, positions]
    return np.take(P, positions, axis=1)


def round_to_multiple(x: ArrayLike, step: float) -> FloatArray:
    """``[x]_step``: x rounded to the nearest integer multiple of ``step`` (Blum & Hardt Fig. 1).

    ``np.rint`` is what ``np.round`` does at 0 decimals (ties to even), without its overhead."""
    return np.rint(np.asarray(x, dtype=float) / step) * step

