"""Competitions: many teams on one leaderboard under a platform's rules.

A competition is a task, a mechanism and teams. Each team plays a *policy*, any
attack plugin (honest participants are attack plugins too, e.g.
``progressive-analyst``), and may control several accounts (Sybil). The
:class:`Rules` are those platforms enforce: ``per_round`` submissions per round
(day) for ``rounds`` rounds, a ``total`` cap per account, the ``public_fraction``
of the holdout scored on the public leaderboard, the released ``precision``
(rounding applied on top of any mechanism) and the final ``selection`` rule.

**Mechanism state.** Every account gets its own bound copy of the mechanism
(Ladder.jl's Kaggle replay keeps one Ladder per team; Sage's bootLadderBoot one
lead per submitter). A mechanism class that sets ``shared_state = True`` is bound
once and answers every account.

**Interleaving many sequential attacks.** An attack is sequential code,
``attack.run(board, data, rng)``. Each team runs it in its own greenlet (a coroutine
with its own stack, from the ``greenlet`` package) against a :class:`CompetitionBoard`;
a team's ``submit_many`` hands its batch to the engine and waits for the released scores.
Everything runs in the caller's thread, so its settings (one BLAS thread, joblib's
sequential backend) hold for every team, and no attack had to be rewritten as a step
function: every attack, present and future, is a team policy. A policy that can play many
teams at once (:meth:`ladderlab.attack.Attack.cohort`, the natural analysts) plays each
team group as one :class:`~ladderlab.attack.Cohort`, with the same submissions.

**Waves.** A round is played in waves. In a wave every team whose last batch was answered
makes its next one (a greenlet runs until its next ``submit_many``; a cohort prepares the
batches of all its members), then the batches are scored as one matrix in the round's seeded
team order (:class:`~ladderlab.competition.scoring.HoldoutScorer`: public, private and
population scores in one pass per cache-sized block) and released by the mechanism for all
accounts at once (:mod:`ladderlab.competition.banks`), and each team gets its scores. A round
ends when no team can submit any more that day. With one state per account, a team's
transcript depends only on its own submissions, so the waves change nothing in it; a
mechanism with one state for all (``shared_state``) sees the submissions of a wave in the
team order, one team's batch after the other's.

**Accounts and the final selection.** A team with one account probes and selects on
it. A team with ``accounts = A ≥ 2`` probes on A − 1 throwaway accounts (its board
fills each account's daily quota in turn, so it gets A − 1 times the submissions
and A − 1 separate mechanism states) and submits its final prediction on the main
account, the only one ranked. The prediction ``run`` returns is the team's final
choice: it is submitted on the main account after the last round, outside the caps,
as in a duel. The selection rule then picks the submissions scored privately:
``"last"`` (the final one), ``"best-public"`` (the best released score, earliest on
ties; for a mechanism that releases its best, the last accepted submission), or an
integer k (Kaggle: the final one and the k − 1 best released others, the best
private score of the k counting).

**Scores.** A team's public score is its leaderboard value (the last release for a
mechanism that releases its best, the best release otherwise), its private score
the best final-set score among its selected submissions, its population score that
of the submission that counted. Population scores are exact where the task knows
P(y = 1 | x) (:func:`population_scores`), else the task's constant population score,
else the final-set score.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import greenlet
import numpy as np
from numpy.typing import NDArray

from ladderlab.attack import Attack, Cohort
from ladderlab.board import Board, BudgetExceeded
from ladderlab.competition.banks import LadderBank, Wave, make_bank
from ladderlab.competition.kaggle_calibration import ACTIVITIES, Schedule
from ladderlab.competition.scoring import HoldoutScorer, Scores, population_scores
from ladderlab.engines.linked_ranking import (
    DEFAULT_LINKED_POLICY,
    LINKED_POLICIES,
    MEMBER_SEPARATOR,
    apply_linked_policy,
    check_linked_policy,
    linked_groups,
)
from ladderlab.engines.linking import Link, Linker, LinkRule
from ladderlab.isolation.protocol import (
    AttackIncompatible,
    AttackRef,
    Isolation,
    check_isolation,
    run_attack,
)
from ladderlab.isolation.untrusted import sandboxed_when_isolated
from ladderlab.mechanism import (
    FloatArray,
    Mechanism,
    check_repeats,
    columns,
    round_to_multiple,
)
from ladderlab.params import Boolean, Constraint, Interval, Options, check_value
from ladderlab.registry import ATTACKS
from ladderlab.runs.duel import (
    Incompatible,
    incompatibility,
    spec,
    with_secret_data_seed,
)
from ladderlab.scoring import PredictionKind, Scorer, get_scorer
from ladderlab.seeding import secret_identity, stream
from ladderlab.tasks import Split, Task
from ladderlab.utils.determinism import single_threaded
from ladderlab.validation import check_prediction_matrix, rows_per_block

__all__ = ["CompetitionBoard", "CompetitionResult", "Rules", "TeamSpec", "compete", "leaderboard_values",
           "play_competition", "population_scores", "selected_submissions"]

SELECTIONS = ("last", "best-public")
RULES_CONSTRAINTS: dict[str, list[Constraint | None]] = {
    "rounds": [Interval(int, 1, None)],
    "per_round": [Interval(int, 1, None)],
    "total": [Interval(int, 1, None), None],
    "public_fraction": [Interval(float, 0, 1, closed="neither"), None],
    "precision": [Interval(float, 0, 1, closed="right"), None],
    "selection": [Options(set(SELECTIONS)), Interval(int, 1, None)],
    "link": [Boolean()],
    "linked": [Options(set(LINKED_POLICIES))],
}
"""What each rule admits (:mod:`ladderlab.params`). A precision is at most 1: a coarser one
would round every score of a bounded scorer (0/1 loss, accuracy, AUC, a correlation) to
0 or ±1, and the tasks' data are standardised."""
WAVE_ELEMENTS = 1 << 23
"""Prediction values scored together at most (64 MiB of float64): a wave that grows beyond it is
scored in parts, in order (a row's scores do not depend on the rows beside it)."""


@dataclass(frozen=True)
class Rules:
    """A platform's rules (EvalAI, Codabench, Kaggle, Hugging Face competitions)."""

    rounds: int = 60
    per_round: int = 5
    total: int | None = None
    """Cap on an account's submissions over the competition (None: rounds × per_round)."""
    public_fraction: float | None = None
    """Share of the holdout on the public leaderboard (None: the task's own split)."""
    precision: float | None = None
    """Released scores are rounded to a multiple of this (None: as the mechanism releases)."""
    selection: str | int = "best-public"
    link: bool = False
    """Link near-identical accounts with the default :class:`~ladderlab.engines.linking.LinkRule` (as a
    challenge's ``[rules] link``): :func:`play_competition`'s ``link``."""
    linked: str = DEFAULT_LINKED_POLICY
    """What the final ranking does with teams linked to each other: flag, merge or disqualify them
    (:func:`published_ranking`)."""

    def __post_init__(self) -> None:
        for name, constraints in RULES_CONSTRAINTS.items():
            check_value("rules", name, getattr(self, name), constraints)

    @property
    def cap(self) -> int:
        """Submissions one account may make over the competition."""
        allowed = self.rounds * self.per_round
        return allowed if self.total is None else min(allowed, self.total)


@dataclass(frozen=True)
class TeamSpec:
    """``count`` teams playing the attack ``policy`` (an id or an instance), each with
    ``accounts`` accounts; ``label`` names the group in results (default: the policy id)."""

    policy: str | Attack
    params: dict[str, Any] = field(default_factory=dict)
    count: int = 1
    accounts: int = 1
    label: str | None = None
    honest: bool | None = None
    """Counts towards the honest utility (None: when the policy's class sets ``honest = True``,
    as ``honest`` and the natural analysts do)."""
    activity: str | None = None
    """An activity profile (:data:`ladderlab.competition.kaggle_calibration.ACTIVITIES`): each team draws when it
    arrives, how long it stays and how many submissions it makes (None: every round, the whole quota)."""
    identity: tuple[str, dict[str, Any]] | None = None
    """The policy's id and all its parameters (``duel.spec``), which name the team's random
    streams; given (with ``honest``), an isolated team's code is never loaded in this process."""

    def __post_init__(self) -> None:
        for name in ("count", "accounts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"team {self.name!r}: {name} must be a whole number ≥ 1, got {value!r}")
        if self.activity is not None and self.activity not in ACTIVITIES:
            raise ValueError(f"team {self.name!r}: activity must be one of {', '.join(map(repr, ACTIVITIES))} or None, "
                             f"got {self.activity!r}")
        if isinstance(self.policy, Attack) and self.params:
            raise ValueError(f"team {self.name!r}: give params in the attack instance, not beside it")

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return self.policy if isinstance(self.policy, str) else self.policy.id

    @property
    def is_honest(self) -> bool:
        if self.honest is not None:
            return self.honest
        cls = type(self.policy) if isinstance(self.policy, Attack) else ATTACKS.get(self.policy)
        return cls.honest

    def reference(self) -> AttackRef:
        """The policy as an isolated team plays it (:mod:`ladderlab.isolation.protocol`)."""
        if isinstance(self.policy, Attack):
            return AttackRef.of(self.policy)
        return AttackRef.from_spec(self.policy, self.params, self.identity or spec(self.attack()))

    def attack(self) -> Attack:
        """A fresh attack instance for one team."""
        if isinstance(self.policy, Attack):
            from sklearn.base import (
                clone,  # imported when a competition plays: it is slow to import
            )

            return clone(self.policy)
        return ATTACKS.make(self.policy, **self.params)


class Account:
    """One account's quota; its leaderboard state is slot ``slot`` of the mechanism bank. A team with
    an activity profile submits only from round ``first`` to round ``last``, at most ``daily`` a
    round and ``total`` in all (by default: the rules' whole competition, quota and cap)."""

    __slots__ = ("slot", "rules", "used", "used_today", "today", "first", "last", "daily", "total", "made", "capture",
                 "captured")

    def __init__(self, slot: int, rules: Rules, schedule: Schedule | None = None):
        self.slot, self.rules = slot, rules
        self.used = self.used_today = self.today = 0
        self.made = 0
        """Submissions scored on this account so far, its final one included."""
        self.capture: int | None = None
        """The index of a submission whose prediction to keep (see ``play_competition``'s ``capture``)."""
        self.captured: FloatArray | None = None
        if schedule is None:
            schedule = Schedule(0, rules.rounds - 1, rules.per_round, rules.cap)
        self.first, self.last, self.daily, self.total = schedule.first, schedule.last, schedule.daily, schedule.total

    def left_today(self, round_: int) -> int:
        if not self.first <= round_ <= self.last:
            return 0
        used_today = self.used_today if round_ == self.today else 0
        return max(0, min(self.daily - used_today, self.total - self.used))

    def remaining(self, round_: int) -> int:
        """Submissions the rules still allow this account, today's included."""
        later = max(0, self.last - max(round_, self.first - 1)) * self.daily
        return max(0, min(self.total - self.used, self.left_today(round_) + later))

    def count(self, rows: int, round_: int) -> None:
        """Charge ``rows`` submissions made in ``round_`` to the quotas."""
        if round_ != self.today:
            self.today, self.used_today = round_, 0
        self.used += rows
        self.used_today += rows


class _Aborted(BaseException):
    """Raised inside a team's greenlet when the competition stops early."""


class _State(Enum):
    READY = "ready"
    """Makes its next batch when the engine advances it (at the start, or once its batch is answered)."""
    PENDING = "pending"
    """Has a batch with rows still to submit or to be answered."""
    DONE = "done"


class _Team:
    """One team: its accounts (the first is the main one, the only one ranked; a team with
    several probes on the others), its pending batch and the scores released for it."""

    def __init__(self, entry: TeamSpec, member: int, accounts: list[Account]):
        self.entry, self.member, self.accounts = entry, member, accounts
        self.probes = accounts[1:] if len(accounts) > 1 else accounts
        self.state = _State.READY
        self.pending: FloatArray | None = None
        self.pending_scores: Scores | None = None
        """The pending batch's scores, where they were computed when it was submitted."""
        self.submitted = 0
        self.answered: list[FloatArray] = []
        self.answered_rows = 0
        self.whole: FloatArray | None = None
        """The released scores of the batch just answered, until the engine hands them over."""
        self.error: BaseException | None = None

    def remaining(self, round_: int) -> int:
        return sum(account.remaining(round_) for account in self.probes)

    def batch(self) -> FloatArray:
        """The pending batch (a cohort member makes it when it first gets to submit)."""
        assert self.pending is not None
        return self.pending

    def parts_today(self, round_: int) -> list[tuple[Account, FloatArray, Scores | None]]:
        """The rows of the pending batch that the probe accounts' quotas allow today, account after
        account (charged to them), with their scores where the batch has them already."""
        parts = []
        for account in self.probes:
            left = min(account.left_today(round_), self.rows - self.submitted)
            if left:
                stop = self.submitted + left
                scores = None if self.pending_scores is None else self.pending_scores.part(self.submitted, stop)
                parts.append((account, self.batch()[self.submitted : stop], scores))
                account.count(left, round_)
                self.submitted += left
        return parts

    @property
    def rows(self) -> int:
        return 0 if self.pending is None else self.pending.shape[0]

    def check_budget(self, rows: int, round_: int) -> None:
        """:class:`BudgetExceeded` before anything is submitted if the rules do not allow ``rows`` more."""
        if rows > self.remaining(round_):
            raise BudgetExceeded(f"{rows} submissions would exceed what the rules still allow ({self.remaining(round_)} left)")

    def start_batch(self, P: FloatArray, scores: Scores | None = None) -> None:
        self.pending, self.pending_scores, self.submitted, self.answered, self.answered_rows = P, scores, 0, [], 0
        self.state = _State.PENDING

    def answer(self, released: FloatArray) -> None:
        """Record released scores of the pending batch; once it is all answered, the team is ready
        for its next one (``whole`` holds the batch's scores)."""
        self.answered.append(released)
        self.answered_rows += released.size
        if self.answered_rows == self.rows:
            self.whole = self.answered[0] if len(self.answered) == 1 else np.concatenate(self.answered)
            self.pending, self.pending_scores, self.answered, self.state = None, None, [], _State.READY


class CompetitionBoard(Board):
    """A team's client: a batch goes to the engine, which submits it as the rules allow (filling
    the probe accounts' daily quotas in turn, over as many rounds as it takes) and returns the
    released scores. ``remaining`` is what the rules still allow."""

    __slots__ = ("_team",)

    def __init__(self, team: _PolicyTeam, holdout_size: int, classes: FloatArray, check: Any):
        self._leaderboard = None
        self._oracle = False
        self._transcript = []
        self._team = team
        self.budget = sum(account.total for account in team.probes)
        self.holdout_size = holdout_size
        self.classes = classes.copy()
        self.prediction_ndim = 2 if team.check_kind is PredictionKind.PROBABILITIES else 1

    @property
    def remaining(self) -> int:
        return self._team.remaining(self._team.round)

    def oracle_jumps(self, since: int) -> int:
        raise PermissionError("competition boards have no oracle")

    def submit_many(self, predictions: Any, repeats: int = 1, guesses: Any = None) -> NDArray[np.float64]:
        if guesses is not None:
            raise ValueError("a competition's accounts do not carry guesses: guess and check plays in duels and "
                             "certificates, where each participant has its own leaderboard")
        P = self._team.check(predictions)
        if check_repeats(repeats) > 1:  # copies may fall on different accounts and days: submitted one by one
            P = np.repeat(P, repeats, axis=0)
        self._team.check_budget(P.shape[0], self._team.round)
        scores = self._team.score(P)  # a ScoreError reaches the attack here, before any row is released
        released = self._team.request(P, scores)
        self._transcript.extend(released.tolist())
        return released.copy()


class _PolicyTeam(_Team):
    """A team whose attack runs in its own greenlet against a :class:`CompetitionBoard`."""

    def __init__(self, entry: TeamSpec, member: int, accounts: list[Account], attack: Attack | AttackRef, data: Any,
                 rng: np.random.Generator, check: Any, score: Any, kind: PredictionKind, holdout_size: int,
                 classes: FloatArray):
        super().__init__(entry, member, accounts)
        self.attack, self.check, self.score, self.check_kind = attack, check, score, kind
        self.round = 0
        self.final: FloatArray | None = None
        self.board = CompetitionBoard(self, holdout_size, classes, check)
        self._released: FloatArray | None = None
        self._greenlet = greenlet.greenlet(functools.partial(self._main, data, rng))

    def _main(self, data: Any, rng: np.random.Generator) -> None:
        try:
            if isinstance(self.attack, AttackRef):
                self.final = run_attack(self.attack, self.board, data, rng).prediction
            else:
                self.final = self.attack.run(self.board, data, rng)
        except _Aborted:
            pass
        except AttackIncompatible as declined:
            self.error = Incompatible(str(declined))
        except BaseException as error:  # handed to the engine, which raises it
            self.error = error

    def request(self, P: FloatArray, scores: Scores) -> FloatArray:
        """In the team's greenlet: hand the batch and its scores to the engine, wait for its
        released scores."""
        return self._greenlet.parent.switch((P, scores))

    def advance(self, round_: int) -> None:
        """Run the team until it asks for its next batch, or ends."""
        self.round = round_
        request = self._greenlet.switch(self._released) if self._greenlet else self._greenlet.switch()
        self._released = None
        if self._greenlet.dead:
            self.state = _State.DONE
        else:
            self.start_batch(*request)

    def answered_with(self, released: FloatArray) -> None:
        self._released = released

    def abort(self) -> None:
        """End a team that is waiting for scores that will not come."""
        if self._greenlet:
            self._greenlet.throw(_Aborted)
        self.state = _State.DONE


class _CohortMember(_Team):
    """Member ``index`` of a :class:`~ladderlab.attack.Cohort`: its batches are made when it gets to submit."""

    def __init__(self, entry: TeamSpec, member: int, accounts: list[Account], cohort: Cohort, check: Any):
        super().__init__(entry, member, accounts)
        self.cohort, self.index, self.check = cohort, member, check
        self.started = False
        self.prepared = 0

    def batch(self) -> FloatArray:
        if self.pending is None:
            self.pending = self.check(self.cohort.predictions(self.index))
        return self.pending

    @property
    def rows(self) -> int:
        return self.prepared if self.pending is None else self.pending.shape[0]

    def prepare(self, rows: int, round_: int) -> None:
        self.check_budget(rows, round_)
        self.prepared, self.pending, self.submitted, self.answered, self.answered_rows = rows, None, 0, [], 0
        self.state = _State.PENDING if rows else _State.DONE

    def final_prediction(self) -> FloatArray:
        return self.cohort.final(self.index)


@dataclass
class CompetitionResult:
    """One replication of a competition, team by team (main accounts ranked)."""

    labels: list[str]
    """The team group (entry label) of each team."""
    honest: NDArray[np.bool_]
    accounts: NDArray[np.int64]
    public: FloatArray
    """Leaderboard value of each team at the end (after its final submission)."""
    private: FloatArray
    """Best final-set score among the team's selected submissions."""
    population: FloatArray
    """Population score of the submission that counted privately."""
    released_final: FloatArray
    submissions: NDArray[np.int64]
    """Submissions each team made over all its accounts (the final one not counted)."""
    public_by_round: FloatArray
    """Teams × rounds: each team's leaderboard value at the end of each round (NaN before its first)."""
    best_population: float
    """The best population score of any submission of any team."""
    sign: float
    """+1 when smaller scores are better, −1 when larger are."""
    n_public: int
    n_private: int
    scorer: str
    leaderboard_errors: FloatArray
    """Blum & Hardt Def. 2.1 per team, over its main account's submissions, with population scores."""
    precision: float | None = None
    last_round: FloatArray | None = None
    """The last round (1-based) in which each team submitted on any account, NaN if never: the day
    a team that probes and then submits its final prediction (the log-loss oracle) was done."""
    first_round: NDArray[np.int64] | None = None
    """The round (0-based) from which each team could submit: its arrival under an activity profile."""
    improvements: NDArray[np.int64] | None = None
    """How many times each team's leaderboard value improved on its main account (its first value included)."""
    public_exact: FloatArray | None = None
    """The exact public score of the submission that counted privately (the release may be rounded or noisy)."""
    population_public: FloatArray | None = None
    """The population score of that submission on the public rows alone (NaN where the task has no closed form)."""
    public_noise_sd: float = float("nan")
    """The standard deviation of any fixed submission's public score under the task's label noise (the
    0/1 loss and accuracy on a task that knows P(y = 1 | x); NaN otherwise): the sampling noise."""
    private_noise_sd: float = float("nan")
    """The same for its private score."""
    counted: NDArray[np.int64] | None = None
    """The submission whose private score counted, by its index among the team's main-account
    submissions (its final prediction is the last)."""
    counted_private_predictions: FloatArray | None = None
    """With ``capture``: each team's captured prediction on the private (final-set) rows."""
    private_labels: FloatArray | None = None
    """With ``capture``: the private (final-set) labels."""
    loss_bound: float | None = None
    """B, the bound of the bound scorer's per-sample loss or score (None: unbounded)."""
    links: list[Link] | None = None
    """With ``link``: every link the rule made, in order (accounts by slot: a team's accounts are
    consecutive, in the result's team order of enrolment)."""
    link_threshold: int | None = None
    """With ``link``: the most differing holdout rows that linked two submissions."""
    account_groups: list[list[int]] | None = None
    """With ``link``: for each team, the keeper (the slot whose mechanism state answers it) of each of
    its accounts at the end, the main one first: a team whose accounts share one keeper was linked
    whole; a keeper shared with another team's account is a link between teams."""
    flagged: CompetitionResult | None = None
    """Where ``rules.linked`` merged or disqualified linked teams: the result before, every enrolled
    team ranked alone (:func:`published_ranking`)."""


def leaderboard_values(released: FloatArray, sign: float, releases_best: bool) -> FloatArray:
    """The leaderboard's value after each submission (nan-free input): the release itself for
    a mechanism that releases its best, else the best release so far."""
    if releases_best:
        return released.copy()
    return sign * np.minimum.accumulate(sign * released)


def selected_submissions(released: FloatArray, selection: str | int, sign: float, accepted: int | None
                         ) -> NDArray[np.int64]:
    """Indices of an account's submissions scored privately under the ``selection`` rule
    (``accepted``: its last accepted submission, for a mechanism that releases its best)."""
    last = released.size - 1
    if selection == "last":
        return np.array([last])
    order = np.argsort(sign * released, kind="stable")
    if selection == "best-public":
        return np.array([accepted if accepted is not None else order[0]])
    others = [i for i in order if i != last][: selection - 1]
    return np.array([last, *others])


@single_threaded()
def play_competition(
    split: Split,
    mechanism: Mechanism,
    teams: list[TeamSpec],
    rules: Rules,
    seed: int,
    replication: int,
    task_spec: tuple[str, dict[str, Any]] = ("", {}),
    capture: NDArray[np.int64] | None = None,
    batched: bool = True,
    isolation: Isolation = "none",
    secret: tuple[Any, ...] = (),
    shared: bool | None = None,
    link: LinkRule | None = None,
) -> CompetitionResult:
    """Run one competition on ``split``; raises :class:`~ladderlab.runs.duel.Incompatible` when a
    team's policy or the mechanism cannot play on the task.

    ``shared``: one mechanism state answers every account (None: as the mechanism class's
    ``shared_state`` says), the state a wrapper that links every account would give.
    ``link``: accounts whose submissions are near-identical are linked as they submit
    (:mod:`ladderlab.engines.linking`): from the submission that links them on, one mechanism state
    answers them all and they share one account's cap (beyond it a submission is refused: answered
    with the state's last release); what was released before stays released. None (the default):
    the rules' (``rules.link``: the default rule, else no linking). Teams linked to each other are
    then ranked as ``rules.linked`` says (:func:`published_ranking`).

    ``capture`` (one index per enrolled team, in the order of ``flagged`` where the ranking merged or
    disqualified teams, else of the result) keeps the prediction of each team's
    submission of that index on its main account: run again with an earlier result's
    ``counted``, the same seed gives the same competition and each team's counted prediction,
    on the private rows, with the private labels (the per-sample data of a ranking certificate).
    ``batched=False`` plays every team on its own and gives every account its own bound mechanism:
    the reference that cohorts and vector banks are tested against (the same results, bit for bit).
    ``isolation="process"`` plays every team's policy in a sandboxed process of its own
    (:mod:`ladderlab.isolation.protocol`; no cohorts then), with the same results; ``secret``
    (:func:`~ladderlab.seeding.secret_identity`) joins the mechanism's and the split's streams.
    """
    if not teams:
        raise ValueError("a competition needs at least one team")
    names = [entry.name for entry in teams]
    twice = next((name for number, name in enumerate(names) if name in names[:number]), None)
    if twice is not None:
        raise ValueError(f"two team entries are named {twice!r}: the results group teams by name and would merge "
                         "them; give each entry its own label")
    scorer = get_scorer(split.public.scorer).within(split.public.prediction_range)
    prototypes: list[Attack] | list[AttackRef]
    if check_isolation(isolation) == "process":
        prototypes = [entry.reference() for entry in teams]
        reason = incompatibility(split, mechanism, None)
        if reason:
            raise Incompatible(reason)
    else:
        prototypes = [entry.attack() for entry in teams]
        for attack in prototypes:
            attack.validate_params()
            reason = incompatibility(split, mechanism, attack)
            if reason:
                raise Incompatible(reason)
    mechanism.validate_params()
    if rules.public_fraction is not None:
        size = split.y_holdout.size
        n_public = public_rows(rules, size)
        order = stream(seed, "competition-split", task_spec, rules.public_fraction, replication, *secret).permutation(size)
        split = _with_rows(split, np.sort(order[:n_public]), np.sort(order[n_public:]))
    if link is not None and not isinstance(link, LinkRule):
        raise ValueError(f"link must be a ladderlab.engines.linking.LinkRule or None, got {link!r}")
    if link is None and rules.link:
        link = LinkRule()
    engine = _Engine(split, scorer, mechanism, rules, seed, replication, task_spec, batched, secret, shared, link)
    try:
        engine.enrol(teams, prototypes)
        if capture is not None:
            if len(capture) != len(engine.teams):
                raise ValueError(f"capture names {len(capture)} submissions, one per team of {len(engine.teams)}")
            for team, index in zip(engine.teams, capture):
                team.accounts[0].capture = int(index)
        for round_ in range(rules.rounds):
            engine.play_round(round_)
        engine.final_round()
    finally:
        engine.abort()
    result = engine.result()
    if capture is None:
        return published_ranking(result, rules.linked)
    kept = [team.accounts[0].captured for team in engine.teams]
    if any(prediction is None for prediction in kept):
        missing = next(i for i, prediction in enumerate(kept) if prediction is None)
        raise ValueError(f"capture: team {missing} made no submission {int(capture[missing])} on its main account")
    return published_ranking(replace(result, counted_private_predictions=columns(np.stack(kept), split.final_rows),
                                     private_labels=split.y_final.copy()), rules.linked)


def public_rows(rules: Rules, size: int) -> int:
    """How many of ``size`` holdout rows ``rules.public_fraction`` puts on the public leaderboard;
    ``ValueError`` unless at least 2 are public and 1 is private."""
    n_public = int(round(rules.public_fraction * size))
    if not 2 <= n_public <= size - 1:
        raise ValueError(f"rules.public_fraction {rules.public_fraction} leaves {n_public} public rows of {size}: "
                         "at least 2 must be public and 1 private")
    return n_public


class _Engine:
    """One competition's teams, accounts, mechanism bank and records (module docstring)."""

    def __init__(self, split: Split, scorer: Scorer, mechanism: Mechanism, rules: Rules, seed: int, replication: int,
                 task_spec: tuple[str, dict[str, Any]], batched: bool, secret: tuple[Any, ...] = (),
                 shared: bool | None = None, link: LinkRule | None = None):
        self.split, self.scorer, self.mechanism, self.rules = split, scorer, mechanism, rules
        self.seed, self.replication, self.task_spec, self.batched = seed, replication, task_spec, batched
        self.secret = secret
        self.data = split.public
        self.holdout_size = split.y_holdout.size
        self.classes = np.unique(split.y_public if self.data.classes is None else self.data.classes)
        self.kind = scorer.prediction_kind
        self.shared = type(mechanism).shared_state if shared is None else shared
        self.holdout = HoldoutScorer(split, scorer, self.classes)
        self.teams: list[_Team] = []
        self.slot_identities: list[tuple[Any, ...]] = []
        self.order_rng = stream(seed, "competition-order", task_spec, replication)
        self.records: list[dict[str, NDArray[Any]]] = []
        self.link = link
        self.linker: Linker | None = None
        self.last_release: dict[int, float] = {}
        """With ``link``: the last release of each mechanism state (what a refused submission gets)."""

    def check(self, predictions: Any) -> FloatArray:
        return check_prediction_matrix(predictions, self.holdout_size, self.kind, self.classes)

    def score_batch(self, P: FloatArray) -> Scores:
        """A batch's scores as a wave keeps them (:class:`ScoreError` for one that fails to score)."""
        return self.holdout.score(P, keep_losses=self.keep_losses)

    def enrol(self, teams: list[TeamSpec], prototypes: list[Attack] | list[AttackRef]) -> None:
        """Every team with its accounts and random stream; a policy that plays as a cohort, one cohort
        per group; an isolated policy (an :class:`~ladderlab.isolation.protocol.AttackRef`) never as a cohort."""
        seed, task_spec, replication = self.seed, self.task_spec, self.replication
        for entry_index, (entry, prototype) in enumerate(zip(teams, prototypes)):
            isolated = isinstance(prototype, AttackRef)
            attack_spec = prototype.identity if isolated else spec(prototype)
            rngs = [stream(seed, "attack", attack_spec, task_spec, entry.name, member, replication) for member in range(entry.count)]
            cohort = prototype.cohort(self.data, rngs) if self.batched and not isolated else None
            for member, rng in enumerate(rngs):
                identity = ("team", entry_index, entry.name, member, attack_spec)
                schedule = self._schedule(entry, member)
                accounts = []
                for account in range(entry.accounts):
                    accounts.append(Account(len(self.slot_identities), self.rules, schedule))
                    self.slot_identities.append((*identity, account))
                if cohort is not None:
                    self.teams.append(_CohortMember(entry, member, accounts, cohort, self.check))
                else:
                    attack = prototype if member == 0 or isolated else entry.attack()
                    self.teams.append(_PolicyTeam(entry, member, accounts, attack, self.data, rng, self.check, self.score_batch,
                                                  self.kind,
                                                  self.holdout_size, self.classes))
        self.bank = make_bank(self.mechanism, self._bind, len(self.slot_identities), vector=self.batched,
                              shared=self.shared)
        if self.link is not None:
            self.linker = Linker(self.link, len(self.slot_identities), self.holdout_size)
        self.keep_losses = isinstance(self.bank, LadderBank) and self.bank.paired and self.holdout.keeps_loss_rows

    def _schedule(self, entry: TeamSpec, member: int) -> Schedule | None:
        """The team's activity, drawn from its own stream (None without an activity profile)."""
        if entry.activity is None:
            return None
        rng = stream(self.seed, "activity", entry.activity, self.task_spec, entry.name, member, self.replication)
        return ACTIVITIES[entry.activity](self.rules.rounds, self.rules.per_round, self.rules.cap, rng)

    def _bind(self, slot: int) -> Mechanism:
        from sklearn.base import (
            clone,  # imported when a competition plays: it is slow to import
        )

        identity = ("shared",) if self.shared else self.slot_identities[slot]
        rng = stream(self.seed, "mechanism", spec(self.mechanism), self.task_spec, identity, self.replication, *self.secret)
        return clone(self.mechanism).bind_to(self.data, self.split.y_public, rng)

    def play_round(self, round_: int) -> None:
        """Waves until no team can submit any more today (module docstring)."""
        ordered = [self.teams[index] for index in self.order_rng.permutation(len(self.teams))]
        while True:
            advanced = self._advance(ordered, round_)
            if not self._submit(ordered, round_) and not advanced:
                return

    def _advance(self, ordered: list[_Team], round_: int) -> bool:
        """Every team whose batch was answered makes its next one; True if any did."""
        cohorts: dict[int, tuple[Cohort, list[_CohortMember]]] = {}
        advanced = False
        for team in ordered:
            if team.state is not _State.READY or round_ < team.accounts[0].first:
                continue
            advanced = True
            if isinstance(team, _PolicyTeam):
                team.advance(round_)
                if team.error is not None:
                    raise team.error
            else:
                assert isinstance(team, _CohortMember)
                cohorts.setdefault(id(team.cohort), (team.cohort, []))[1].append(team)
        for cohort, members in cohorts.values():
            for member in members:
                if not member.started:
                    cohort.begin(member.index, member.remaining(round_))
                    member.started = True
            rows = cohort.next_batches(np.array([member.index for member in members], dtype=np.intp))
            for member, count in zip(members, rows.tolist()):
                member.prepare(count, round_)
        return advanced

    def _submit(self, ordered: list[_Team], round_: int) -> bool:
        """Score the rows the quotas allow today, in team order; answer the batches that are complete.
        True if anything was submitted."""
        wave, submitted = _Wave(self, round_), False
        for team in ordered:
            if team.state is not _State.PENDING:
                continue
            for account, rows, scores in team.parts_today(round_):
                wave.add(team, account, rows, scores)
            if wave.elements >= WAVE_ELEMENTS:
                wave.release()
                wave, submitted = _Wave(self, round_), True
        submitted |= wave.release()
        self._deliver(ordered)
        return submitted

    def _deliver(self, ordered: list[_Team]) -> None:
        """Hand the answered batches to their teams (a cohort's members at once)."""
        cohorts: dict[int, tuple[Cohort, list[int], list[FloatArray]]] = {}
        for team in ordered:
            whole, team.whole = team.whole, None
            if whole is None:
                continue
            if isinstance(team, _PolicyTeam):
                team.answered_with(whole)
            else:
                assert isinstance(team, _CohortMember)
                entry = cohorts.setdefault(id(team.cohort), (team.cohort, [], []))
                entry[1].append(team.index)
                entry[2].append(whole)
        for cohort, members, released in cohorts.values():
            cohort.deliver(np.array(members, dtype=np.intp), released)

    def final_round(self) -> None:
        """Every team's final prediction, submitted on its main account outside the caps."""
        ordered = [self.teams[index] for index in self.order_rng.permutation(len(self.teams))]
        wave = _Wave(self, self.rules.rounds)
        for team in ordered:
            if team.state is not _State.DONE:
                raise RuntimeError(f"team {team.entry.name!r} #{team.member} was still playing after the last round")
            final = team.final if isinstance(team, _PolicyTeam) else team.final_prediction()
            team.pending, team.submitted, team.answered, team.answered_rows = self.check(final), 1, [], 0
            wave.add(team, team.accounts[0], team.pending)
            if wave.elements >= WAVE_ELEMENTS:
                wave.release()
                wave = _Wave(self, self.rules.rounds)
        wave.release()

    def abort(self) -> None:
        for team in self.teams:
            if isinstance(team, _PolicyTeam):
                team.abort()

    def result(self) -> CompetitionResult:
        result = _result(self.teams, self.records, self.rules, self.scorer, self.mechanism, self.split, self.shared,
                         (self.holdout.public_noise_sd, self.holdout.private_noise_sd), self.scorer.bound(self.classes.size))
        if self.linker is None:
            return result
        keepers = self.linker.groups()
        return replace(result, links=list(self.linker.links), link_threshold=self.linker.threshold,
                       account_groups=[[keepers[account.slot] for account in team.accounts] for team in self.teams])


class _Wave:
    """The rows submitted in one wave, in team order: scored a cache-sized block at a time as they
    arrive, released together (:meth:`release`), each team answered with its part."""

    def __init__(self, engine: _Engine, round_: int):
        self.engine, self.round = engine, round_
        self.parts: list[tuple[_Team, Account, FloatArray]] = []
        self.scored: list[Any] = []
        self.unscored: list[FloatArray] = []
        self.unscored_rows = 0
        self.elements = 0
        self.block_rows = rows_per_block(engine.holdout_size)

    def add(self, team: _Team, account: Account, rows: FloatArray, scores: Scores | None = None) -> None:
        """Add a team's rows for one account; ``scores``: theirs, where they were computed already."""
        if account.capture is not None and account.made <= account.capture < account.made + rows.shape[0]:
            account.captured = rows[account.capture - account.made].copy()
        account.made += rows.shape[0]
        self.parts.append((team, account, rows))
        self.elements += rows.size
        if scores is not None:
            self._score_unscored()
            self.scored.append(scores)
            return
        self.unscored.append(rows)
        self.unscored_rows += rows.shape[0]
        if self.unscored_rows >= self.block_rows:
            self._score_unscored()

    def _score_unscored(self) -> None:
        if self.unscored:
            block = self.unscored[0] if len(self.unscored) == 1 else np.concatenate(self.unscored)
            self.scored.append(self.engine.holdout.score(block, keep_losses=self.engine.keep_losses))
            self.unscored, self.unscored_rows = [], 0

    def release(self) -> bool:
        """Release every row (the mechanism bank, then the rules' precision), record them and
        answer the teams; False if the wave is empty."""
        if not self.parts:
            return False
        self._score_unscored()
        engine = self.engine
        public, private, population, population_public = (
            np.concatenate([getattr(scores, name) for scores in self.scored])
            for name in ("public", "private", "population", "population_public"))
        losses = np.concatenate([scores.public_losses for scores in self.scored]) if engine.keep_losses else None
        sizes = np.array([rows.shape[0] for _, _, rows in self.parts])
        stops = np.cumsum(sizes)
        slots = np.repeat(np.array([account.slot for _, account, _ in self.parts], dtype=np.intp), sizes)
        segments = [(int(stop - size), int(stop), account.slot) for (_, account, _), size, stop in zip(self.parts, sizes, stops)]
        public_rows = engine.split.public_rows
        public_columns = lambda k: columns(self.parts[k][2], public_rows)  # noqa: E731

        def loss_rows(indices: NDArray[np.intp]) -> FloatArray:
            if losses is not None:
                return losses[indices]
            part = np.searchsorted(stops, indices, side="right")
            return columns(np.stack([self.parts[k][2][i - stops[k] + sizes[k]] for k, i in zip(part, indices)]), public_rows)

        if engine.linker is None:
            released, accepted = engine.bank.release(Wave(slots, segments, public, public_columns, loss_rows))
        else:
            released, accepted = self._release_linked(segments, public, public_columns, loss_rows)
        if engine.rules.precision is not None:
            released = round_to_multiple(released, engine.rules.precision)
        engine.records.append({"slot": slots, "round": np.full(slots.size, self.round), "released": released,
                               "public": public, "private": private, "population": population,
                               "population_public": population_public, "accepted": accepted})
        for (team, _, _), (start, stop, _) in zip(self.parts, segments):
            team.answer(released[start:stop])
        return True

    def _release_linked(self, segments: list[tuple[int, int, int]], public: FloatArray, public_columns: Any,
                        loss_rows: Any) -> tuple[FloatArray, NDArray[np.bool_]]:
        """The wave under the link rule (:class:`~ladderlab.engines.linking.Linker`, rows observed in wave order):
        each row answered by its group's state; a row beyond the group's budget (more submissions than
        one account's cap, or than its daily quota in this round; the final ones exempt) is *refused*: not shown to the mechanism, answered with
        the state's last release, so it teaches nothing."""
        engine = self.engine
        linker = engine.linker
        assert linker is not None
        total = segments[-1][1] if segments else 0
        states = np.empty(total, dtype=np.intp)
        refused = np.zeros(total, dtype=bool)
        capped = self.round < engine.rules.rounds  # the final submissions are outside the caps
        for k, (start, stop, slot) in enumerate(segments):
            block = self.parts[k][2]  # every holdout row: the link decision never depends on the split
            for i in range(stop - start):
                state = states[start + i] = linker.observe(slot, block[i], self.round)
                refused[start + i] = capped and not linker.charge(state, self.round, engine.rules.cap,
                                                                  engine.rules.per_round)
        keep = np.flatnonzero(~refused)
        pieces: list[tuple[int, int, int]] = []
        sources: list[tuple[int, int, int]] = []
        kept = 0
        for k, (start, stop, _) in enumerate(segments):
            cut = start
            for i in range(start, stop + 1):
                if i == stop or refused[i] or states[i] != states[cut]:
                    if i > cut and not refused[cut]:
                        pieces.append((kept, kept + i - cut, int(states[cut])))
                        sources.append((k, cut - start, i - start))
                        kept += i - cut
                    cut = i + 1 if i < stop and refused[i] else i
        wave = Wave(states[keep], pieces, public[keep],
                    lambda j: public_columns(sources[j][0])[sources[j][1] : sources[j][2]],
                    lambda indices: loss_rows(keep[indices]))
        released = np.empty(total)
        accepted = np.zeros(total, dtype=bool)
        if keep.size:  # a wave of refused rows only shows the mechanism nothing
            released[keep], accepted[keep] = engine.bank.release(wave)
        for row in range(total):
            state = int(states[row])
            if refused[row]:
                released[row] = engine.last_release.get(state, math.nan)
            else:
                engine.last_release[state] = float(released[row])
        return released, accepted


def _with_rows(split: Split, public_rows: NDArray[np.int64], final_rows: NDArray[np.int64]) -> Split:
    """The split with the competition's own public rows; a task that discloses its public
    rows (a two-stage competition) discloses these instead."""
    public = split.public
    if public.public_rows is not None:
        public = replace(public, public_rows=public_rows.copy())
    return replace(split, public=public, public_rows=public_rows, final_rows=final_rows)


def _by_account(records: list[dict[str, NDArray[Any]]], slots: int) -> tuple[dict[str, NDArray[Any]], NDArray[np.intp]]:
    """Every record, grouped by account in submission order, and where each of the ``slots``
    accounts' group starts (``starts[slot]`` … ``starts[slot + 1]``; empty for an unused one)."""
    joined = {name: np.concatenate([wave[name] for wave in records]) for name in records[0]}
    order = np.argsort(joined["slot"], kind="stable")
    grouped = {name: values[order] for name, values in joined.items()}
    return grouped, np.searchsorted(grouped["slot"], np.arange(slots + 1))


def _result(teams: list[_Team], records: list[dict[str, NDArray[Any]]], rules: Rules, scorer: Scorer,
            mechanism: Mechanism, split: Split, shared: bool, noise_sd: tuple[float, float],
            loss_bound: float) -> CompetitionResult:
    sign = scorer.sign
    releases_best = type(mechanism).releases_best and not shared
    count = len(teams)
    public, private, population = np.empty(count), np.empty(count), np.empty(count)
    released_final, errors = np.empty(count), np.empty(count)
    public_exact, population_public = np.empty(count), np.empty(count)
    submissions, improvements = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
    counted = np.empty(count, dtype=np.int64)
    last_round = np.full(count, np.nan)
    by_round = np.full((count, rules.rounds), np.nan)
    best_population = np.inf
    grouped, starts = _by_account(records, 1 + max(account.slot for team in teams for account in team.accounts))
    every_round = np.arange(rules.rounds)
    for t, team in enumerate(teams):
        main = team.accounts[0].slot
        mine = {name: values[starts[main] : starts[main + 1]] for name, values in grouped.items()}
        accepted_rows = np.flatnonzero(mine["accepted"]) if releases_best else np.empty(0, dtype=np.intp)
        chosen = selected_submissions(mine["released"], rules.selection, sign,
                                      int(accepted_rows[-1]) if accepted_rows.size else None)
        best = counted[t] = chosen[np.argmin(sign * mine["private"][chosen])]
        values = leaderboard_values(mine["released"], sign, releases_best)
        public[t], private[t] = values[-1], mine["private"][best]
        population[t], released_final[t] = mine["population"][best], mine["released"][-1]
        public_exact[t], population_public[t] = mine["public"][best], mine["population_public"][best]
        improvements[t] = 1 + np.count_nonzero(sign * np.diff(values) < 0)
        submissions[t] = sum(account.used for account in team.accounts)
        true_best = np.minimum.accumulate(sign * mine["population"])
        errors[t] = float(np.max(np.abs(true_best - sign * values)))
        for account in team.accounts:
            rows = slice(starts[account.slot], starts[account.slot + 1])
            if rows.stop > rows.start:  # a Sybil team may leave some of its accounts unused
                best_population = min(best_population, float(np.min(sign * grouped["population"][rows])))
            played = grouped["round"][rows][grouped["round"][rows] < rules.rounds]
            if played.size:
                last_round[t] = np.fmax(last_round[t], played.max() + 1)
        latest = np.searchsorted(mine["round"], every_round, side="right") - 1
        by_round[t] = np.where(latest >= 0, values[np.maximum(latest, 0)], np.nan)
    return CompetitionResult(
        labels=[team.entry.name for team in teams],
        honest=np.array([team.entry.is_honest for team in teams]),
        accounts=np.array([len(team.accounts) for team in teams]),
        public=public,
        private=private,
        population=population,
        released_final=released_final,
        submissions=submissions,
        public_by_round=by_round,
        best_population=sign * best_population,
        sign=sign,
        n_public=int(split.public_rows.size),
        n_private=int(split.final_rows.size),
        scorer=scorer.name,
        leaderboard_errors=errors,
        loss_bound=loss_bound,
        precision=rules.precision,
        last_round=last_round,
        first_round=np.array([team.accounts[0].first for team in teams]),
        improvements=improvements,
        public_exact=public_exact,
        population_public=population_public,
        public_noise_sd=noise_sd[0],
        private_noise_sd=noise_sd[1],
        counted=counted,
    )


@sandboxed_when_isolated
def compete(
    task: Task,
    mechanism: Mechanism,
    teams: list[TeamSpec],
    rules: Rules | None = None,
    seed: int = 0,
    replication: int = 0,
    capture: NDArray[np.int64] | None = None,
    batched: bool = True,
    isolation: Isolation = "none",
    secret_seed: int | None = None,
    link: LinkRule | None = None,
) -> CompetitionResult:
    """One competition replication with every stream derived from (seed, identity, replication).

    The task's data are those a duel with the same seed and replication sees, and each
    team's coins depend on its policy, group and position only: common random numbers
    across mechanisms and rules. ``capture``, ``batched`` and ``isolation``: see
    :func:`play_competition`; ``secret_seed`` as in :func:`~ladderlab.runs.duel.duel`; ``link``: a
    :class:`~ladderlab.engines.linking.LinkRule` that links near-identical accounts (None: no linking).
    """
    task.validate_params()
    task_spec = spec(task)
    secret = secret_identity(secret_seed)
    split = with_secret_data_seed(task, secret).split(stream(seed, "task", task_spec, replication, *secret))
    return play_competition(split, mechanism, teams, rules or Rules(), seed, replication, task_spec, capture, batched,
                            isolation, secret, link=link)


# --- the final ranking as the organiser publishes it --------------------------------------------
# Teams linked to each other flagged, merged or disqualified, as ``ladderlab serve``'s
# ``/api/organiser/final?linked=`` does (:mod:`ladderlab.engines.linked_ranking`). Two teams are linked when
# an account of one shares its mechanism state's keeper with an account of the other at the end
# (``account_groups``): the linker's groups are the connected components of its links, so the
# teams' groups are too. A team's own accounts linked to each other are one entry already.

PER_TEAM = ("labels", "honest", "accounts", "public", "private", "population", "released_final", "submissions",
            "public_by_round", "leaderboard_errors", "last_round", "first_round", "improvements", "public_exact",
            "population_public", "counted", "counted_private_predictions", "account_groups")
"""The fields of :class:`CompetitionResult` that hold one value per team, in team order."""


def linked_teams(result: CompetitionResult) -> list[tuple[str, ...]]:
    """The groups of teams (by index, as strings) linked to each other: teams whose accounts share a keeper."""
    names = [str(team) for team in range(len(result.labels))]
    first_team: dict[int, int] = {}
    pairs = []
    for team, keepers in enumerate(result.account_groups or []):
        for keeper in keepers:
            other = first_team.setdefault(keeper, team)
            if other != team:
                pairs.append((str(other), str(team)))
    return linked_groups(names, pairs)


def published_ranking(result: CompetitionResult, policy: str) -> CompetitionResult:
    """``result`` with its teams ranked under ``policy``: ``flag`` changes nothing (the result's
    teams are each ranked alone); ``merge`` keeps of each group of linked teams the one with the
    best private score, its public value the group's best, its submissions and accounts the
    group's sums; ``disqualify`` drops every linked team. The result before is kept as ``flagged``.
    ValueError if no team is left."""
    check_linked_policy(policy, "rules.linked")
    groups = linked_teams(result)
    if policy == "flag" or not groups:
        return result
    rows = [{"team": str(team), "public": float(result.public[team]), "private": float(result.private[team]),
             "submissions": int(result.submissions[team]), "accounts": int(result.accounts[team])}
            for team in range(len(result.labels))]
    ranked, _ = apply_linked_policy(rows, groups, policy, result.sign)
    if not ranked:
        raise ValueError(f"rules.linked = {policy!r}: every team was linked to another and disqualified: "
                         "no final ranking is left")
    ranked.sort(key=_source_team)  # back in enrolment order
    kept = [_source_team(row) for row in ranked]
    members = {kept_team: row["team"].split(MEMBER_SEPARATOR) for kept_team, row in zip(kept, ranked)}
    changes = {}
    for name in PER_TEAM:
        value = getattr(result, name)
        if value is not None:
            changes[name] = [value[team] for team in kept] if isinstance(value, list) else value[kept]
    changes["public"] = np.array([row["public"] for row in ranked])
    changes["submissions"] = np.array([row["submissions"] for row in ranked], dtype=result.submissions.dtype)
    changes["accounts"] = np.array([sum(int(result.accounts[int(team)]) for team in members[kept_team])
                                    for kept_team in kept], dtype=result.accounts.dtype)
    return replace(result, **changes, flagged=result)


def _source_team(row: dict[str, Any]) -> int:
    """The team whose values a ranked row holds: the member counted for a merged group."""
    return int(row.get("counted_team", row["team"]))
