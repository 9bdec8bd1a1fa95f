"""One duel: one attack against one mechanism on one replication of one task.

The organiser's view of a duel (per submission: released, exact public and final
scores) and the two measures of the papers:

- leaderboard error (Blum & Hardt, Definition 2.1):
  max_t |min_{i≤t} R_true(f_i) − R_t|, with R_t the leaderboard's value at t
  (the release itself for the Ladders, the best release so far for Kaggle and
  Full-disclosure) and R_true the population score where the task knows it,
  otherwise the final-set score; both oriented so that smaller is better; the
  attack's final submission counts (Corollary 5.2's sequence ends with it);
- Δ = R_k − final score of the *reported* submission: the value the leaderboard shows
  at the end (R_k of Definition 2.1) minus the final-set score of the submission that
  value belongs to (ΔMSE of Chaibub Neto et al.; negative means overfitting for a
  loss). The reported submission is the mechanism's current best for a mechanism that
  releases the best so far (``Mechanism.releases_best``: the Ladders), and the
  submission with the best release so far for one that scores each submission
  (Kaggle, Full-disclosure, noise, Thresholdout); the attack's final submission is
  the last candidate. A garbage final prediction that the leaderboard does not report
  changes nothing, as Definition 2.1 compares a release with the submission it stands
  for. ``optimism`` = how much better the release looks than that final score, in
  either orientation. The final submission's own released and final scores are kept
  beside (``final_released``, ``final_final``).

The leaderboard error has two sides (:func:`leaderboard_deviations`): its **optimism**, the
most the leaderboard ever showed a better score than the best submitted so far truly has
(the overfitting a leaderboard must not show), and its **lag**, the most it ever showed a
worse one (an honest improvement not yet released: a cost to honest participants, not a
danger). The error is the larger of the two.

An attack that raises while it plays is *crashed*, not lost, where a caller asks for it
(:func:`keeping_crashes`, as the runner does): the submissions it made are scored as its
transcript (the leaderboard reports what it was sent; the final prediction it never returned is
not submitted), and :class:`AttackCrashed` carries that result, or None when it raised before its
first submission. Dropping such replications would keep only those in which the attack did not
raise, which an attack can choose. Elsewhere the attack's own exception propagates.

Both measures are in the scorer's units; ``loss_bound`` is the bound B of the bound
scorer (None when unbounded), the unit in which a certificate states them.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ladderlab.attack import Attack, FinalChoiceAttack
from ladderlab.board import Board, Leaderboard
from ladderlab.isolation.protocol import (
    AttackIncompatible,
    AttackRef,
    Isolation,
    check_isolation,
    run_attack,
)
from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.runs.sharing import TRANSCRIPTS, Transcript
from ladderlab.scoring import LossScorer, get_scorer
from ladderlab.seeding import identity_key, secret_identity, stream
from ladderlab.tasks import Split, Task
from ladderlab.utils.determinism import single_threaded


class Incompatible(Exception):
    """This mechanism and attack cannot play on this task; the message says why."""


class AttackCrashed(Exception):
    """The attack raised while it played (the message is its error): ``partial`` is the duel of the
    submissions it made before (None: it made none)."""

    def __init__(self, error: str, partial: DuelResult | None):
        super().__init__(error)
        self.partial = partial

    def __reduce__(self) -> tuple[type, tuple[str, DuelResult | None]]:
        return type(self), (str(self), self.partial)


def incompatibility(split: Split, mechanism: Mechanism, attack: Attack | None) -> str | None:
    """Why the duel cannot run (a t-test mechanism on a whole-vector metric, an attack on the
    wrong kind of task), or None; ``attack=None`` asks about the mechanism only. An attack's
    parameter that cannot hold on the task raises ``ValueError`` (:meth:`Attack.check_params_for`)."""
    scorer = get_scorer(split.public.scorer)
    if mechanism.requires_loss and not isinstance(scorer, LossScorer):
        return (
            f"mechanism {mechanism.id!r} needs a per-sample loss, but the task is scored with "
            f"{scorer.name!r}; use 'bayesboot-ladder' or 'bayesboot-ladderboot'"
        )
    if attack is None:
        return None
    attack.check_params_for(split.public)
    return attack.incompatibility(split.public)


@dataclass
class DuelResult:
    """What happened in one duel; ``records`` has one entry per submission, the final one last."""

    released: FloatArray
    public: FloatArray
    final: FloatArray
    population: float | None
    leaderboard_error: float
    final_released: float
    final_public: float
    final_final: float
    delta: float
    optimism: float
    submissions: int
    reported: int = -1
    """The index of the submission whose score the leaderboard reports at the end (see the module docstring)."""
    loss_bound: float | None = None
    """B, the bound of the bound scorer's per-sample loss or score (None: unbounded)."""
    marks: dict[str, list[int]] = field(default_factory=dict)
    """The attack's named submission indices (see :meth:`Attack.marks`)."""
    attack_fingerprint: dict[str, Any] = field(default_factory=dict)
    """Under process isolation: the version and source hash of the attack code that ran."""
    leaderboard_optimism: float | None = None
    """The optimistic side of the leaderboard error (:func:`leaderboard_deviations`); None: not split."""
    leaderboard_lag: float | None = None
    """The lagging side of the leaderboard error; None: not split."""


def reported_submission(released: FloatArray, sign: float, mechanism: Mechanism) -> int:
    """The submission whose score the leaderboard shows at the end: the mechanism's current
    best if it releases the best so far (the last submission if it never accepted one),
    otherwise the first submission with the best release."""
    if mechanism.releases_best:
        best = mechanism.best_index_
        return released.size - 1 if best is None else best
    return int(np.argmin(sign * released))


def leaderboard_deviations(released: FloatArray, true: FloatArray, sign: float, releases_best: bool,
                           cap: float = math.inf) -> tuple[float, float]:
    """The two sides of Blum & Hardt's Definition 2.1 for scores oriented by ``sign`` (+1: smaller is
    better): (optimism, lag) = the largest amount by which the leaderboard's value R_t showed a better,
    and a worse, score than min_{i≤t} R_true(f_i); each 0 where it never did. NaN, NaN without a release.
    ``cap`` (oriented like the scores): both sides are taken on scores no worse than it, so that how
    precisely the board shows scores beyond it does not count (a certificate caps just beyond what a
    constant prediction scores: :mod:`ladderlab.certification.units`)."""
    if released.size == 0:
        return float("nan"), float("nan")
    estimate = np.minimum(sign * np.asarray(released, dtype=float), cap)
    if not releases_best:
        estimate = np.minimum.accumulate(estimate)
    gap = np.minimum(np.minimum.accumulate(sign * np.asarray(true, dtype=float)), cap) - estimate
    return float(max(np.max(gap), 0.0)) + 0.0, float(max(np.max(-gap), 0.0)) + 0.0  # + 0.0: never −0.0


def leaderboard_error(released: FloatArray, true: FloatArray, sign: float, releases_best: bool) -> float:
    """Blum & Hardt Definition 2.1: the larger of :func:`leaderboard_deviations`."""
    return max(leaderboard_deviations(released, true, sign, releases_best))


@single_threaded()
def play(
    split: Split,
    mechanism: Mechanism,
    attack: Attack | AttackRef,
    mechanism_rng: np.random.Generator,
    attack_rng: np.random.Generator,
    budget: int | None = None,
    oracle: bool = False,
    record: Callable[[Leaderboard, Any, dict[str, list[int]], int], None] | None = None,
    isolation: Isolation = "none",
) -> DuelResult:
    """Bind ``mechanism`` to the split's public labels, let ``attack`` play, score its final prediction.

    ``record``, for a :class:`~ladderlab.attack.FinalChoiceAttack`, receives the leaderboard,
    the state ``play`` returned, the marks and the number of submissions after the last
    submission (:mod:`ladderlab.runs.sharing`). ``isolation="process"`` plays the attack in its
    own process (:mod:`ladderlab.isolation.protocol`), which gets the public data and a client of
    the board, nothing else; the results are the same, bit for bit. ``attack`` may then be
    an :class:`~ladderlab.isolation.protocol.AttackRef`, so that its code never runs in this process.
    Raises :class:`Incompatible` when the pair cannot play on this split.
    """
    if budget is not None and budget < 1:
        raise ValueError(f"budget must be ≥ 1 or None (unlimited), got {budget}: a duel scores a prediction the attack submitted")
    data = split.public
    if check_isolation(isolation) == "process":
        if record is not None:
            raise ValueError("a shared transcript needs the attack in this process (isolation='none')")
        ref = attack if isinstance(attack, AttackRef) else AttackRef.of(attack)
        reason = incompatibility(split, mechanism, None)
        if reason:
            raise Incompatible(reason)
        board = open_board(split, mechanism, mechanism_rng, budget, oracle)
        try:
            outcome = run_attack(ref, board, data, attack_rng)
            board._leaderboard.check(outcome.prediction)
        except AttackIncompatible as declined:
            raise Incompatible(str(declined)) from None
        except Exception as error:  # the attack raised: its submissions so far are its transcript
            if not _KEEPING_CRASHES.get():
                raise
            raise crashed(split, board._leaderboard, board.submissions, error) from error
        final_prediction, marks, fingerprint = outcome.prediction, outcome.marks, outcome.fingerprint
    else:
        if isinstance(attack, AttackRef):
            attack = attack.make()
        reason = incompatibility(split, mechanism, attack)
        if reason:
            raise Incompatible(reason)
        attack.validate_params()
        board = open_board(split, mechanism, mechanism_rng, budget, oracle)
        with _crashes_kept(split, board._leaderboard, lambda: board.submissions, attack):
            if record is not None and isinstance(attack, FinalChoiceAttack):
                state = attack.play(board, data, attack_rng)
            else:
                final_prediction = attack.run(board, data, attack_rng)
        if record is not None and isinstance(attack, FinalChoiceAttack):
            record(board._leaderboard, state, attack.marks(), board.submissions)
            with _crashes_kept(split, board._leaderboard, lambda: board.submissions, attack):
                final_prediction = attack.final_prediction(state, data)
        with _crashes_kept(split, board._leaderboard, lambda: board.submissions, attack):
            board._leaderboard.check(final_prediction)
        marks, fingerprint = attack.marks(), {}
    return _score(split, board._leaderboard, board.submissions, final_prediction, marks, fingerprint)


@contextlib.contextmanager
def _crashes_kept(split: Split, leaderboard: Leaderboard, submissions: Callable[[], int], attack: Attack
                  ) -> Iterator[None]:
    """Turn an exception the attack raises into :class:`AttackCrashed`, its transcript so far scored."""
    try:
        yield
    except Exception as error:
        if not _KEEPING_CRASHES.get():
            raise
        raise crashed(split, leaderboard, submissions(), error, attack.marks()) from error


_KEEPING_CRASHES: contextvars.ContextVar[bool] = contextvars.ContextVar("keeping_crashes", default=False)


@contextlib.contextmanager
def keeping_crashes() -> Iterator[None]:
    """Within it, an attack that raises in a duel raises :class:`AttackCrashed` with its transcript so far."""
    token = _KEEPING_CRASHES.set(True)
    try:
        yield
    finally:
        _KEEPING_CRASHES.reset(token)


def crashed(split: Split, leaderboard: Leaderboard, submissions: int, error: Exception,
            marks: dict[str, list[int]] | None = None) -> AttackCrashed:
    """The crash of an attack that raised ``error`` after ``submissions`` submissions to ``leaderboard``: its
    transcript so far scored (:class:`AttackCrashed`; no final prediction is submitted), or none before its
    first submission."""
    text = "".join(traceback.format_exception_only(error)).strip()
    if submissions == 0:
        return AttackCrashed(text, None)
    return AttackCrashed(text, _score(split, leaderboard, submissions, None, marks or {}, {}))


def replay(transcript: Transcript, attack: FinalChoiceAttack) -> DuelResult:
    """The duel of ``attack`` on a recorded transcript: only its final prediction is computed
    and scored, on a copy of the leaderboard after the transcript's last submission."""
    attack.validate_params()
    leaderboard, state, marks, submissions = transcript.copy()
    reason = incompatibility(transcript.split, leaderboard.mechanism, attack)
    if reason:
        raise Incompatible(reason)
    with _crashes_kept(transcript.split, leaderboard, lambda: submissions, attack):
        prediction = attack.final_prediction(state, transcript.split.public)
        leaderboard.check(prediction)
    return _score(transcript.split, leaderboard, submissions, prediction, marks, {})


def open_board(split: Split, mechanism: Mechanism, rng: np.random.Generator, budget: int | None = None,
               oracle: bool = False) -> Board:
    """Bind ``mechanism`` to the split's public labels with ``rng`` (and its declared prediction
    range) and open a participant's board on it: the one path from a split to a leaderboard
    (duels and ``ladderlab serve``)."""
    mechanism.bind_to(split.public, split.y_public, rng)
    leaderboard = Leaderboard(mechanism, split.public_rows, split.final_rows, split.y_final)
    return Board(leaderboard, budget=budget, oracle=oracle)


def _score(split: Split, leaderboard: Leaderboard, submissions: int, final_prediction: Any,
           marks: dict[str, list[int]], fingerprint: dict[str, Any]) -> DuelResult:
    mechanism = leaderboard.mechanism
    if final_prediction is not None:  # None: a crashed attack's transcript, without a final prediction
        leaderboard.submit_many(leaderboard.check(final_prediction))
    records = leaderboard.records()
    scorer = get_scorer(split.public.scorer)
    true = records["final"] if split.population_score is None else np.full(records["final"].size, split.population_score)
    final_released, final_final = records["released"][-1], records["final"][-1]
    reported = reported_submission(records["released"], scorer.sign, mechanism)
    shown = records["released"][-1] if mechanism.releases_best else records["released"][reported]
    deviations = leaderboard_deviations(records["released"], true, scorer.sign, mechanism.releases_best)
    return DuelResult(
        released=records["released"],
        public=records["public"],
        final=records["final"],
        population=split.population_score,
        leaderboard_error=max(deviations),
        final_released=float(final_released),
        final_public=float(records["public"][-1]),
        final_final=float(final_final),
        delta=float(shown - records["final"][reported]),
        optimism=float(scorer.sign * (records["final"][reported] - shown)),
        submissions=submissions,
        reported=reported,
        loss_bound=mechanism.loss_bound_,
        marks=marks,
        attack_fingerprint=fingerprint,
        leaderboard_optimism=deviations[0],
        leaderboard_lag=deviations[1],
    )


def spec(plugin: Task | Mechanism | Attack) -> tuple[str, dict[str, Any]]:
    """A plugin's identity: its id and all its parameters, defaults included (except
    parameters added later, at their default: see ``Plugin.identity_params``)."""
    return plugin.id, plugin.identity_params()


def with_secret_data_seed(task: Task, secret: tuple[Any, ...]) -> Task:
    """The task, with its ``data_seed`` (if it has one) derived also from the secret."""
    data_seed = task.get_params().get("data_seed")
    if not secret or data_seed is None:
        return task
    from sklearn.base import clone  # imported here: scikit-learn is slow to import

    return clone(task).set_params(data_seed=int(stream(data_seed, "data_seed", *secret).integers(2**63)))


def duel(
    task: Task,
    mechanism: Mechanism,
    attack: Attack | AttackRef,
    seed: int = 0,
    replication: int = 0,
    budget: int | None = None,
    oracle: bool = False,
    isolation: Isolation = "none",
    secret_seed: int | None = None,
) -> DuelResult:
    """One duel with every random stream derived from (seed, what it serves, replication).

    The task's data depend on (task, replication) only and the attacker's coins on
    (attack, task, replication) only: common random numbers across mechanisms. The
    attack's identity leaves out its ``final_only_params``, and duels that differ only
    in them share one transcript (:mod:`ladderlab.runs.sharing`). ``secret_seed`` (see
    :func:`ladderlab.seeding.secret_identity`) joins the task's and the mechanism's streams
    and the task's ``data_seed``, so that the public ``seed`` no longer determines the
    labels. ``isolation`` as in :func:`play`.
    """
    task.validate_params()
    task_spec, mechanism_spec = spec(task), spec(mechanism)
    if isinstance(attack, AttackRef):
        attack_spec = attack.identity or (attack.locator, attack.params)
    else:
        attack_spec = attack.identity()
    secret = secret_identity(secret_seed)
    task = with_secret_data_seed(task, secret)
    key = None
    if isolation == "none" and isinstance(attack, FinalChoiceAttack) and attack.final_only_params:
        key = identity_key(seed, task_spec, mechanism_spec, attack_spec, replication, budget, oracle, *secret)
    shared = None if key is None else TRANSCRIPTS.get(key)
    if shared is not None and replication > 0:
        return replay(shared, attack)
    if key is not None and shared is None:
        TRANSCRIPTS.make_room()
    split = shared.split if shared is not None else task.split(stream(seed, "task", task_spec, replication, *secret))

    def record(leaderboard: Leaderboard, state: Any, marks: dict[str, list[int]], submissions: int) -> None:
        if shared is None:
            TRANSCRIPTS.put(key, Transcript.record(split, leaderboard, state, marks, submissions))
        else:
            shared.check_same_as(leaderboard, submissions)

    return play(
        split,
        mechanism,
        attack,
        stream(seed, "mechanism", mechanism_spec, task_spec, attack_spec, replication, *secret),
        stream(seed, "attack", attack_spec, task_spec, replication),
        budget=budget,
        oracle=oracle,
        record=None if key is None else record,
        isolation=isolation,
    )
