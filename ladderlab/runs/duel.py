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

Both measures are in the scorer's units; ``loss_bound`` is the bound B of the bound
scorer (None when unbounded), the unit in which a certificate states them.
"""

from __future__ import annotations

from collections.abc import Callable
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


def incompatibility(split: Split, mechanism: Mechanism, attack: Attack | None) -> str | None:
    """Why the duel cannot run (a t-test mechanism on a whole-vector metric, an attack on the
    wrong kind of task), or None; ``attack=None`` asks about the mechanism only."""
    scorer = get_scorer(split.public.scorer)
    if mechanism.requires_loss and not isinstance(scorer, LossScorer):
        return (
            f"mechanism {mechanism.id!r} needs a per-sample loss, but the task is scored with "
            f"{scorer.name!r}; use 'bayesboot-ladder' or 'bayesboot-ladderboot'"
        )
    return None if attack is None else attack.incompatibility(split.public)


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


def reported_submission(released: FloatArray, sign: float, mechanism: Mechanism) -> int:
    """The submission whose score the leaderboard shows at the end: the mechanism's current
    best if it releases the best so far (the last submission if it never accepted one),
    otherwise the first submission with the best release."""
    if mechanism.releases_best:
        best = mechanism.best_index_
        return released.size - 1 if best is None else best
    return int(np.argmin(sign * released))


def leaderboard_error(released: FloatArray, true: FloatArray, sign: float, releases_best: bool) -> float:
    """Blum & Hardt Definition 2.1 for scores oriented by ``sign`` (+1: smaller is better)."""
    if released.size == 0:
        return float("nan")
    estimate = sign * released
    if not releases_best:
        estimate = np.minimum.accumulate(estimate)
    best_true = np.minimum.accumulate(sign * true)
    return float(np.max(np.abs(best_true - estimate)))


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
        except AttackIncompatible as declined:
            raise Incompatible(str(declined)) from None
        final_prediction, marks, fingerprint = outcome.prediction, outcome.marks, outcome.fingerprint
    else:
        if isinstance(attack, AttackRef):
            attack = attack.make()
        reason = incompatibility(split, mechanism, attack)
        if reason:
            raise Incompatible(reason)
        attack.validate_params()
        board = open_board(split, mechanism, mechanism_rng, budget, oracle)
        if record is not None and isinstance(attack, FinalChoiceAttack):
            state = attack.play(board, data, attack_rng)
            record(board._leaderboard, state, attack.marks(), board.submissions)
            final_prediction = attack.final_prediction(state, data)
        else:
            final_prediction = attack.run(board, data, attack_rng)
        marks, fingerprint = attack.marks(), {}
    return _score(split, board._leaderboard, board.submissions, final_prediction, marks, fingerprint)


def replay(transcript: Transcript, attack: FinalChoiceAttack) -> DuelResult:
    """The duel of ``attack`` on a recorded transcript: only its final prediction is computed
    and scored, on a copy of the leaderboard after the transcript's last submission."""
    attack.validate_params()
    leaderboard, state, marks, submissions = transcript.copy()
    reason = incompatibility(transcript.split, leaderboard.mechanism, attack)
    if reason:
        raise Incompatible(reason)
    prediction = attack.final_prediction(state, transcript.split.public)
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
    leaderboard.submit_many(leaderboard.check(final_prediction))
    records = leaderboard.records()
    scorer = get_scorer(split.public.scorer)
    true = records["final"] if split.population_score is None else np.full(records["final"].size, split.population_score)
    final_released, final_final = records["released"][-1], records["final"][-1]
    reported = reported_submission(records["released"], scorer.sign, mechanism)
    shown = records["released"][-1] if mechanism.releases_best else records["released"][reported]
    return DuelResult(
        released=records["released"],
        public=records["public"],
        final=records["final"],
        population=split.population_score,
        leaderboard_error=leaderboard_error(records["released"], true, scorer.sign, mechanism.releases_best),
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
