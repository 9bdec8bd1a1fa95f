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
the engine hands the turn to one team at a time, in a seeded order each round, and
the team keeps it until its ``run`` needs more submissions than the day allows (its
``submit_many`` then switches back to the engine until the next round) or returns.
Only one team ever runs, so the transcript is a function of the seed alone, bit for
bit, with no change to any attack's code; coroutines instead of rewriting policies as
step functions keep every attack, present and future, a team policy. Everything runs
in the caller's thread, so its settings (one BLAS thread, joblib's sequential backend)
hold for every team. Within its turn a team submits whole batches (one scoring call
per batch), and the per-round cost is one switch per team: about a microsecond, where
operating-system threads cost 0.1–0.3 ms a hand-off and made a 100-team competition
twice as slow.

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
from dataclasses import dataclass, field, replace
from typing import Any

import greenlet
import numpy as np
from numpy.typing import NDArray

from ladderlab.attack import Attack
from ladderlab.board import Board, BudgetExceeded
from ladderlab.duel import Incompatible, incompatibility, spec
from ladderlab.mechanism import FloatArray, Mechanism, check_repeats, columns, round_to_multiple
from ladderlab.params import Constraint, Interval, Options, check_value
from ladderlab.registry import ATTACKS
from ladderlab.scoring import LossScorer, PredictionKind, Scorer, get_scorer
from ladderlab.seeding import stream
from ladderlab.tasks import LabelNoiseSplit, Split, Task
from ladderlab.validation import check_prediction_matrix

SELECTIONS = ("last", "best-public")


RULES_CONSTRAINTS: dict[str, list[Constraint | None]] = {
    "rounds": [Interval(int, 1, None)],
    "per_round": [Interval(int, 1, None)],
    "total": [Interval(int, 1, None), None],
    "public_fraction": [Interval(float, 0, 1, closed="neither"), None],
    "precision": [Interval(float, 0, 1, closed="right"), None],
    "selection": [Options(set(SELECTIONS)), Interval(int, 1, None)],
}
"""What each rule admits (:mod:`ladderlab.params`). A precision is at most 1: a coarser one
would round every score of a bounded scorer (0/1 loss, accuracy, AUC, a correlation) to
0 or ±1, and the tasks' data are standardised."""


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

    def __post_init__(self) -> None:
        for name in ("count", "accounts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"team {self.name!r}: {name} must be a whole number ≥ 1, got {value!r}")
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

    def attack(self) -> Attack:
        """A fresh attack instance for one team."""
        if isinstance(self.policy, Attack):
            from sklearn.base import clone  # imported when a competition plays: it is slow to import

            return clone(self.policy)
        return ATTACKS.make(self.policy, **self.params)


def population_scores(split: Split, scorer: Scorer, P: FloatArray) -> FloatArray:
    """Population score of each row of whole-holdout predictions ``P``.

    Where the task knows p_i = P(y_i = 1 | x_i), the expected score over fresh labels at
    the holdout inputs, mean_i [p_i ℓ(1, ŷ_i) + (1 − p_i) ℓ(0, ŷ_i)], for a per-sample
    loss (accuracy as 1 − 0/1 loss). Otherwise the task's constant population score, or
    else the final-set score (as in a duel).
    """
    probabilities = getattr(split, "holdout_probabilities", None) if isinstance(split, LabelNoiseSplit) else None
    if probabilities is not None:
        if isinstance(scorer, LossScorer):
            ones, zeros = np.ones(P.shape[1]), np.zeros(P.shape[1])
            return (probabilities * scorer.loss(ones, P) + (1 - probabilities) * scorer.loss(zeros, P)).mean(axis=1)
        if scorer.name == "accuracy":
            zero_one = get_scorer("zero-one")
            return 1.0 - population_scores(split, zero_one, P)
    if split.population_score is not None:
        return np.full(P.shape[0], float(split.population_score))
    return scorer.score_many(split.y_final, columns(P, split.final_rows))


class Account:
    """One account on the leaderboard: its mechanism (own or shared) and its records."""

    def __init__(self, mechanism: Mechanism, split: Split, rules: Rules, scorer: Scorer):
        self.mechanism = mechanism
        self.split = split
        self.rules = rules
        self.scorer = scorer
        self.start = len(mechanism.released_)
        self.used = 0
        self.used_today = 0
        self.today = 0
        self.released: list[FloatArray] = []
        self.private: list[FloatArray] = []
        self.population: list[FloatArray] = []
        self.rounds: list[NDArray[np.int64]] = []
        self.made = 0
        """Submissions scored on this account so far, its final one included."""
        self.capture: int | None = None
        """The index of a submission whose prediction to keep (see ``play_competition``'s ``capture``)."""
        self.captured: FloatArray | None = None

    def left_today(self, round_: int) -> int:
        used_today = self.used_today if round_ == self.today else 0
        return max(0, min(self.rules.per_round - used_today, self.rules.cap - self.used))

    def remaining(self, round_: int) -> int:
        """Submissions the rules still allow this account, today's included."""
        later = (self.rules.rounds - round_ - 1) * self.rules.per_round
        return max(0, min(self.rules.cap - self.used, self.left_today(round_) + later))

    def scores(self, P: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """The exact public, private and population scores of validated rows: a
        :class:`~ladderlab.scoring.ScoreError` raises here, before anything is released."""
        public = self.mechanism.holdout_.scores(columns(P, self.split.public_rows))
        private = self.scorer.score_many(self.split.y_final, columns(P, self.split.final_rows))
        return public, private, population_scores(self.split, self.scorer, P)

    def submit(self, P: FloatArray, round_: int, counted: bool = True,
               scores: tuple[FloatArray, FloatArray, FloatArray] | None = None) -> FloatArray:
        """Score validated rows (``scores``: theirs, from :meth:`scores`); ``counted=False`` for
        the final selection outside the caps."""
        public, private, population = self.scores(P) if scores is None else scores
        if self.capture is not None and self.made <= self.capture < self.made + P.shape[0]:
            self.captured = P[self.capture - self.made].copy()
        self.made += P.shape[0]
        released = self.mechanism.submit_validated(columns(P, self.split.public_rows), 1, public)
        if self.rules.precision is not None:
            released = round_to_multiple(released, self.rules.precision)
        if counted:
            if round_ != self.today:
                self.today, self.used_today = round_, 0
            self.used += P.shape[0]
            self.used_today += P.shape[0]
        self.released.append(released)
        self.private.append(private)
        self.population.append(population)
        self.rounds.append(np.full(P.shape[0], round_))
        return released

    def records(self) -> dict[str, NDArray[Any]]:
        def joined(parts: list[NDArray[Any]], dtype: Any = float) -> NDArray[Any]:
            return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

        return {
            "released": joined(self.released),
            "private": joined(self.private),
            "population": joined(self.population),
            "round": joined(self.rounds, np.int64),
        }


class _Aborted(BaseException):
    """Raised inside a team's greenlet when the competition stops early."""


class _Turn:
    """The hand-off between the engine and one team's greenlet: exactly one of them runs."""

    def __init__(self) -> None:
        self.round = 0
        self.engine = greenlet.getcurrent()

    def wait_for_next_round(self) -> None:
        self.engine.switch()


class CompetitionBoard(Board):
    """A team's client: submissions fill its probe accounts' daily quotas in turn, and wait
    for the next round when all are used. ``remaining`` is what the rules still allow."""

    __slots__ = ("_accounts", "_turn", "_check")

    def __init__(self, accounts: list[Account], turn: _Turn, holdout_size: int, classes: FloatArray, check: Any):
        self._leaderboard = None
        self._oracle = False
        self._transcript = []
        self._accounts = accounts
        self._turn = turn
        self._check = check
        self.budget = sum(account.rules.cap for account in accounts)
        self.holdout_size = holdout_size
        self.classes = classes.copy()
        self.prediction_ndim = 2 if accounts[0].scorer.prediction_kind is PredictionKind.PROBABILITIES else 1

    @property
    def remaining(self) -> int:
        return sum(account.remaining(self._turn.round) for account in self._accounts)

    def oracle_jumps(self, since: int) -> int:
        raise PermissionError("competition boards have no oracle")

    def submit_many(self, predictions: Any, repeats: int = 1) -> NDArray[np.float64]:
        P = self._check(predictions)
        if check_repeats(repeats) > 1:  # copies may fall on different accounts and days: submitted one by one
            P = np.repeat(P, repeats, axis=0)
        if P.shape[0] > self.remaining:
            raise BudgetExceeded(
                f"{P.shape[0]} submissions would exceed what the rules still allow ({self.remaining} left)"
            )
        scores = self._accounts[0].scores(P)  # every row is scored before any is released
        parts, start = [], 0
        while start < P.shape[0]:
            open_accounts = [a for a in self._accounts if a.left_today(self._turn.round) > 0]
            if not open_accounts:
                self._turn.wait_for_next_round()
                continue
            account = open_accounts[0]
            rows = min(account.left_today(self._turn.round), P.shape[0] - start)
            parts.append(account.submit(P[start : start + rows], self._turn.round,
                                        scores=tuple(part[start : start + rows] for part in scores)))
            start += rows
        released = np.concatenate(parts)
        self._transcript.extend(released.tolist())
        return released.copy()


class _Team:
    """One team: its attack running in a greenlet, its accounts and its board."""

    def __init__(self, entry: TeamSpec, member: int, attack: Attack, accounts: list[Account],
                 board_args: tuple[Any, ...], data: Any, rng: np.random.Generator):
        self.entry, self.member, self.attack, self.accounts = entry, member, attack, accounts
        self.turn = _Turn()
        probes = accounts[1:] if len(accounts) > 1 else accounts
        self.board = CompetitionBoard(probes, self.turn, *board_args)
        self.final: FloatArray | None = None
        self.error: BaseException | None = None
        self.done = False
        self._greenlet = greenlet.greenlet(functools.partial(self._main, data, rng))

    def _main(self, data: Any, rng: np.random.Generator) -> None:
        try:
            self.final = self.attack.run(self.board, data, rng)
        except _Aborted:
            pass
        except BaseException as error:  # handed to the engine, which raises it
            self.error = error
        finally:
            self.done = True

    def play(self, round_: int) -> None:
        """Give the team its turn in ``round_``; return when it waits for the next round or ends."""
        if self.done:
            return
        self.turn.round = round_
        self._greenlet.switch()

    def abort(self) -> None:
        """End a team that is waiting for a round that will not come."""
        if not self.done and self._greenlet:
            self._greenlet.throw(_Aborted)
        self.done = True


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
    counted: NDArray[np.int64] | None = None
    """The submission whose private score counted, by its index among the team's main-account
    submissions (its final prediction is the last)."""
    counted_private_predictions: FloatArray | None = None
    """With ``capture``: each team's captured prediction on the private (final-set) rows."""
    private_labels: FloatArray | None = None
    """With ``capture``: the private (final-set) labels."""
    loss_bound: float | None = None
    """B, the bound of the bound scorer's per-sample loss or score (None: unbounded)."""


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


def play_competition(
    split: Split,
    mechanism: Mechanism,
    teams: list[TeamSpec],
    rules: Rules,
    seed: int,
    replication: int,
    task_spec: tuple[str, dict[str, Any]] = ("", {}),
    capture: NDArray[np.int64] | None = None,
    shared: bool | None = None,
) -> CompetitionResult:
    """Run one competition on ``split``; raises :class:`~ladderlab.duel.Incompatible` when a
    team's policy or the mechanism cannot play on the task.

    ``shared``: one mechanism state answers every account (None: as the mechanism class's
    ``shared_state`` says), the state a wrapper that links every account would give.

    ``capture`` (one index per team, in the result's order) keeps the prediction of each team's
    submission of that index on its main account: run again with an earlier result's
    ``counted``, the same seed gives the same competition and each team's counted prediction,
    on the private rows, with the private labels (the per-sample data of a ranking certificate).
    """
    if not teams:
        raise ValueError("a competition needs at least one team")
    names = [entry.name for entry in teams]
    twice = next((name for number, name in enumerate(names) if name in names[:number]), None)
    if twice is not None:
        raise ValueError(f"two team entries are named {twice!r}: the results group teams by name and would merge "
                         "them; give each entry its own label")
    scorer = get_scorer(split.public.scorer).within(split.public.prediction_range)
    attacks = [[entry.attack() for _ in range(entry.count)] for entry in teams]
    for group in attacks:
        group[0].validate_params()
        reason = incompatibility(split, mechanism, group[0])
        if reason:
            raise Incompatible(reason)
    mechanism.validate_params()
    if rules.public_fraction is not None:
        size = split.y_holdout.size
        n_public = public_rows(rules, size)
        order = stream(seed, "competition-split", task_spec, rules.public_fraction, replication).permutation(size)
        split = _with_rows(split, np.sort(order[:n_public]), np.sort(order[n_public:]))
    data = split.public
    mechanism_spec = spec(mechanism)
    shared = type(mechanism).shared_state if shared is None else shared

    from sklearn.base import clone  # imported when a competition plays: it is slow to import

    def bound(identity: tuple[Any, ...]) -> Mechanism:
        rng = stream(seed, "mechanism", mechanism_spec, task_spec, identity, replication)
        return clone(mechanism).bind_to(data, split.y_public, rng)

    shared_mechanism = bound(("shared",)) if shared else None
    holdout_size = split.y_holdout.size
    classes = np.unique(split.y_public if data.classes is None else data.classes)

    def check(predictions: Any) -> FloatArray:
        return check_prediction_matrix(predictions, holdout_size, scorer.prediction_kind, classes)

    roster: list[_Team] = []
    try:
        for entry_index, (entry, group) in enumerate(zip(teams, attacks)):
            attack_spec = spec(group[0])
            for member, attack in enumerate(group):
                identity = ("team", entry_index, entry.name, member, attack_spec)
                accounts = [
                    Account(shared_mechanism or bound((*identity, account)), split, rules, scorer)
                    for account in range(entry.accounts)
                ]
                rng = stream(seed, "attack", attack_spec, task_spec, entry.name, member, replication)
                roster.append(_Team(entry, member, attack, accounts, (holdout_size, classes, check), data, rng))
        if capture is not None:
            if len(capture) != len(roster):
                raise ValueError(f"capture names {len(capture)} submissions, one per team of {len(roster)}")
            for team, index in zip(roster, capture):
                team.accounts[0].capture = int(index)
        order_rng = stream(seed, "competition-order", task_spec, replication)
        for round_ in range(rules.rounds):
            for index in order_rng.permutation(len(roster)):
                team = roster[index]
                team.play(round_)
                if team.error is not None:
                    raise team.error
        for index in order_rng.permutation(len(roster)):
            team = roster[index]
            if not team.done:
                raise RuntimeError(f"team {team.entry.name!r} #{team.member} was still playing after the last round")
            team.accounts[0].submit(check(team.final), rules.rounds, counted=False)
    finally:
        for team in roster:
            team.abort()
    result = _result(roster, rules, scorer, mechanism, split, shared)
    if capture is None:
        return result
    kept = [team.accounts[0].captured for team in roster]
    if any(prediction is None for prediction in kept):
        missing = next(i for i, prediction in enumerate(kept) if prediction is None)
        raise ValueError(f"capture: team {missing} made no submission {int(capture[missing])} on its main account")
    return replace(result, counted_private_predictions=columns(np.stack(kept), split.final_rows),
                   private_labels=split.y_final.copy())


def public_rows(rules: Rules, size: int) -> int:
    """How many of ``size`` holdout rows ``rules.public_fraction`` puts on the public leaderboard;
    ``ValueError`` unless at least 2 are public and 1 is private."""
    n_public = int(round(rules.public_fraction * size))
    if not 2 <= n_public <= size - 1:
        raise ValueError(f"rules.public_fraction {rules.public_fraction} leaves {n_public} public rows of {size}: "
                         "at least 2 must be public and 1 private")
    return n_public


def _with_rows(split: Split, public_rows: NDArray[np.int64], final_rows: NDArray[np.int64]) -> Split:
    """The split with the competition's own public rows; a task that discloses its public
    rows (a two-stage competition) discloses these instead."""
    public = split.public
    if public.public_rows is not None:
        public = replace(public, public_rows=public_rows.copy())
    return replace(split, public=public, public_rows=public_rows, final_rows=final_rows)


def _result(roster: list[_Team], rules: Rules, scorer: Scorer, mechanism: Mechanism, split: Split, shared: bool) -> CompetitionResult:
    sign = scorer.sign
    releases_best = type(mechanism).releases_best and not shared
    count = len(roster)
    public, private, population = np.empty(count), np.empty(count), np.empty(count)
    released_final, errors = np.empty(count), np.empty(count)
    submissions, counted = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
    last_round = np.full(count, np.nan)
    by_round = np.full((count, rules.rounds), np.nan)
    best_population = np.inf
    for t, team in enumerate(roster):
        main = team.accounts[0]
        records = main.records()
        accepted = None
        if releases_best:
            accepted_indices = [i - main.start for i in main.mechanism.acceptances_]
            accepted = accepted_indices[-1] if accepted_indices else None
        chosen = selected_submissions(records["released"], rules.selection, sign, accepted)
        best = counted[t] = chosen[np.argmin(sign * records["private"][chosen])]
        values = leaderboard_values(records["released"], sign, releases_best)
        public[t], private[t] = values[-1], records["private"][best]
        population[t], released_final[t] = records["population"][best], records["released"][-1]
        submissions[t] = sum(account.used for account in team.accounts)
        true_best = np.minimum.accumulate(sign * records["population"])
        errors[t] = float(np.max(np.abs(true_best - sign * values)))
        for account in team.accounts:
            account_records = account.records()
            if account_records["population"].size:  # a Sybil team may leave some of its accounts unused
                best_population = min(best_population, float(np.min(sign * account_records["population"])))
            played = account_records["round"][account_records["round"] < rules.rounds]
            if played.size:
                last_round[t] = np.fmax(last_round[t], played.max() + 1)
        rounds = records["round"]
        for r in range(rules.rounds):
            made = np.flatnonzero(rounds <= r)
            if made.size:
                by_round[t, r] = values[made[-1]]
    return CompetitionResult(
        labels=[team.entry.name for team in roster],
        honest=np.array([team.entry.is_honest for team in roster]),
        accounts=np.array([len(team.accounts) for team in roster]),
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
        loss_bound=roster[0].accounts[0].mechanism.loss_bound_,
        precision=rules.precision,
        last_round=last_round,
        counted=counted,
    )


def compete(
    task: Task,
    mechanism: Mechanism,
    teams: list[TeamSpec],
    rules: Rules | None = None,
    seed: int = 0,
    replication: int = 0,
    capture: NDArray[np.int64] | None = None,
) -> CompetitionResult:
    """One competition replication with every stream derived from (seed, identity, replication).

    The task's data are those a duel with the same seed and replication sees, and each
    team's coins depend on its policy, group and position only: common random numbers
    across mechanisms and rules. ``capture``: see :func:`play_competition`.
    """
    task.validate_params()
    task_spec = spec(task)
    split = task.split(stream(seed, "task", task_spec, replication))
    return play_competition(split, mechanism, teams, rules or Rules(), seed, replication, task_spec, capture)
