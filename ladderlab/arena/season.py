"""One season of an arena: a policy, an attack, a pool of models and its votes; what the board then shows.

A season (one replication) runs:

1. the *world*: the family's pool of models and its public history of votes
   (:class:`ladderlab.arena.family.PairwiseArena`); the strategic provider's model has true strength
   θ* = the pool's strongest + ``newcomer_gap``, each of its variants θ* + N(0, spread²) (the attack's
   ``variant_spread``);
2. the *attack* (:class:`ladderlab.arena.attack.ArenaAttack`) through a :class:`Client`: private tests
   (each variant's votes against the pool, its private rating fitted on the history and them), requests
   to publish, a voting session; the policy (:class:`ladderlab.arena.policy.ArenaPolicy`) decides at
   every step;
3. the *listing*: each published model (every tested variant where the policy forbids retraction)
   collects the policy's fresh votes, and the board is fitted on the history, the listed models'
   counted votes and the session's kept votes.

Ratings are maximum-likelihood Bradley–Terry (ties as halves; :func:`ladderlab.arena.bradley_terry.fit_exact`,
not FastChat's early-stopped optimizer), in Elo points with the pool's mean at 1000. The measures
(:class:`SeasonResult`): the *inflation* of a listed model, its rating minus its true strength, both
relative to the pool's mean (Elo points); the target's (the provider's flagship) and the top model's;
the target's *rank inflation* (its true rank among the listed models minus its listed rank, models of
equal strength sharing the mean of their ranks).

Random streams are derived from the identity of what they serve (:mod:`ladderlab.seeding`), never
from the policy or the budget: the world from (family, replication), variant v's strength and votes from
(family, replication, v), the voting session's battles and the voter's misperceptions from (family,
replication), the attacker's own coins from (attack, family, replication). So every policy and budget
meets the same world and the same variants (common random numbers): best of 10 is best of the first 3
and 7 more.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ladderlab.arena.attack import ABSTAIN, ArenaAttack, Feedback
from ladderlab.arena.battles import A_WINS, B_WINS, TIE, Battles, PairCounts, combine, from_columns
from ladderlab.arena.bradley_terry import NotIdentified, fit_exact, information
from ladderlab.arena.family import PairwiseArena, pair_probabilities
from ladderlab.arena.policy import ArenaPolicy
from ladderlab.seeding import stream

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
ELO = 400.0
BASE_RATING = 1000.0


@dataclass
class _Variant:
    strength: float
    wins: FloatArray
    ties: FloatArray
    losses: FloatArray
    private_rating: float
    published: bool = False
    fresh: tuple[FloatArray, FloatArray, FloatArray] | None = None

    def blocks(self, private: bool) -> list[tuple[FloatArray, FloatArray, FloatArray]]:
        """Its votes against the pool (wins, ties, losses): the private test's where ``private``, the fresh ones."""
        return ([(self.wins, self.ties, self.losses)] if private else []) + ([self.fresh] if self.fresh is not None else [])


@dataclass(frozen=True)
class SeasonResult:
    """What one season's board shows (NaN where the attacker listed nothing)."""

    played: bool
    inflation: float
    """The target's listed rating minus its true strength, relative to the pool's mean (Elo points)."""
    rank_inflation: float
    top_inflation: float
    """The inflation of the listed model rated highest."""
    top_is_target: bool
    private_rating: float
    """The target's private rating, as the provider saw it (relative to the pool's mean; NaN if hidden)."""
    variants_tested: int
    variants_listed: int
    votes_cast: int
    votes_kept: int
    board_votes: int

    def record(self) -> dict[str, Any]:
        return {key: (None if isinstance(value, float) and not np.isfinite(value) else value)
                for key, value in asdict(self).items()}


def family_identity(family: PairwiseArena, secret: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """What names the world's streams: the family and its parameters (and a secret, where given)."""
    return (family.id, json.dumps(family.get_params(), sort_keys=True, default=str), *secret)


class Season:
    """One replication's arena (see the module docstring); :meth:`play` returns its result."""

    def __init__(self, family: PairwiseArena, policy: ArenaPolicy, attack: ArenaAttack, seed: int, replication: int,
                 newcomer_gap: float = 0.0, secret: tuple[Any, ...] = ()):
        self.family, self.policy, self.attack = family, policy, attack
        self.seed, self.replication = seed, replication
        self.identity = family_identity(family, secret)
        world = stream(seed, "arena-world", *self.identity, replication)
        self.pool = family.pool(world)
        self.history = family.outcomes(world, self.pool)
        self.size = self.pool.size
        self.newcomer = float(self.pool.strength.max() + newcomer_gap)
        self.variants: list[_Variant] = []
        self.flagship: int | None = None
        self.extra: list[tuple[IntArray, IntArray, IntArray]] = []
        """Votes of the voting session kept: model_a, model_b (indices over the pool and the listed variants,
        as :meth:`names` orders them) and outcome codes."""
        self.votes_cast = self.votes_kept = 0
        self._history_ratings = fit_exact(self.history.pair_counts())

    # --- fits -------------------------------------------------------------------------------------------

    def _relative(self, ratings: FloatArray) -> FloatArray:
        """Ratings (r) in Elo points with the pool's mean at 1000."""
        return BASE_RATING + ELO * (ratings - ratings[: self.size].mean())

    def _variant_pairs(self, variants: list[tuple[int, _Variant, bool]]) -> PairCounts:
        """The history and the given variants' votes (each at position ``index``; with or without its
        private-test votes) as pair counts over the pool and those positions, with the session's votes."""
        i, j = [self.history.i], [self.history.j]
        counts = self.history.pair_counts()
        n, s = [counts.n], [counts.s]
        pool = np.arange(self.size)
        for index, variant, private in variants:
            for wins, ties, losses in variant.blocks(private):
                i.append(np.full(self.size, index))
                j.append(pool)
                n.append(wins + ties + losses)
                s.append(wins + ties / 2)
        for a, b, outcome in self.extra:
            i.append(a), j.append(b), n.append(np.ones(a.size)), s.append(outcome / 2.0)
        size = self.size + len(variants)
        return combine(size, np.concatenate(i), np.concatenate(j), np.concatenate(n), np.concatenate(s))

    def _fit(self, pairs: PairCounts) -> FloatArray:
        start = np.concatenate([self._history_ratings, np.zeros(pairs.n_models - self.size)])
        return fit_exact(pairs, start=start)

    def listed(self) -> list[int]:
        """The variants on the board: the published ones, or every tested one without retraction."""
        return [v for v, variant in enumerate(self.variants) if variant.published or not self.policy.retraction]

    def board(self) -> tuple[FloatArray, PairCounts]:
        """The board's ratings (Elo, pool mean 1000) over the pool and the listed variants, and its counts."""
        private = self.policy.counts_private_votes()
        pairs = self._variant_pairs([(self.size + k, self.variants[v], private or self.variants[v].fresh is None)
                                     for k, v in enumerate(self.listed())])
        return self._relative(self._fit(pairs)), pairs

    # --- what the client does ---------------------------------------------------------------------------

    def test_variants(self, count: int, battles: int) -> list[Feedback]:
        allowed = self.policy.variants_allowed()
        room = count if allowed is None else max(0, min(count, allowed - len(self.variants)))
        tested = []
        for number in range(len(self.variants), len(self.variants) + room):
            rng = stream(self.seed, "arena-variant", *self.identity, self.replication, number)
            strength = self.newcomer + self.attack.variant_spread * rng.standard_normal()
            tested.append(_Variant(strength, *self.family.against(rng, self.pool, strength, battles), np.nan))
        if tested:  # every variant's private fit at once: the history and its own votes
            blocks = [self._variant_pairs([(self.size, variant, True)]) for variant in tested]
            pairs = blocks[0].with_counts(np.stack([b.n for b in blocks]), np.stack([b.s for b in blocks]))
            fitted = fit_exact(pairs, start=np.concatenate([self._history_ratings, [0.0]]))
            for variant, ratings in zip(tested, fitted):
                variant.private_rating = float(self._relative(ratings)[self.size])
        feedback = []
        for variant in tested:
            number = len(self.variants)
            self.variants.append(variant)
            flagship = None if self.flagship is None else self.variants[self.flagship].private_rating
            publish, shown = self.policy.on_test(variant.private_rating, flagship)
            if publish:
                self._publish(number)
            feedback.append(Feedback(number, shown, publish))
        return feedback

    def publish(self, variant: int) -> bool:
        if not 0 <= variant < len(self.variants):
            raise ValueError(f"no tested variant {variant}: {len(self.variants)} were tested")
        flagship = None if self.flagship is None else self.variants[self.flagship].private_rating
        if variant != self.flagship and not self.policy.accepts(self.variants[variant].private_rating, flagship):
            return False
        self._publish(variant)
        return True

    def _publish(self, variant: int) -> None:
        if self.flagship is not None and self.policy.retraction:
            self.variants[self.flagship].published = False
        self.variants[variant].published = True
        self.flagship = variant
        self._collect_fresh()

    def _collect_fresh(self) -> None:
        """The fresh votes every listed variant must collect before it is listed."""
        fresh = self.policy.votes_before_listing()
        for v in self.listed():
            variant = self.variants[v]
            if fresh and variant.fresh is None:
                rng = stream(self.seed, "arena-fresh", *self.identity, self.replication, v)
                variant.fresh = self.family.against(rng, self.pool, variant.strength, fresh)

    def battle_share(self, weight: float) -> float:
        """The share of battles a newcomer of sampling ``weight`` appears in, among the pool."""
        weights = np.concatenate([self.pool.weight, [weight]])
        others = np.arange(self.size)
        return float(pair_probabilities(weights, others, np.full(self.size, self.size)).sum())

    def leaderboard(self) -> dict[str, float]:
        ratings, _ = self.board()
        return dict(zip(self.names(), ratings.tolist()))

    def names(self) -> list[str]:
        return self.pool.names + [f"newcomer-variant-{v}" for v in self.listed()]

    def board_battles(self) -> Battles:
        """The votes the board is fitted on, one by one (for :func:`ladderlab.arena.robustness.fewest_removals`)."""
        private = self.policy.counts_private_votes()
        a, b, outcome = [], [], []

        def add(first: IntArray, second: IntArray, wins: FloatArray, ties: FloatArray, losses: FloatArray) -> None:
            for code, counts in ((A_WINS, wins), (TIE, ties), (B_WINS, losses)):
                times = counts.astype(np.int64)
                a.append(np.repeat(first, times)), b.append(np.repeat(second, times))
                outcome.append(np.full(int(times.sum()), code))

        add(self.history.i, self.history.j, self.history.wins, self.history.ties, self.history.losses)
        pool = np.arange(self.size)
        for k, v in enumerate(self.listed()):
            variant = self.variants[v]
            for wins, ties, losses in variant.blocks(private or variant.fresh is None):
                add(np.full(self.size, self.size + k), pool, wins, ties, losses)
        for first, second, codes in self.extra:
            a.append(first), b.append(second), outcome.append(codes)
        names = np.asarray(self.names(), dtype=object)
        return from_columns(names[np.concatenate(a)], names[np.concatenate(b)], np.concatenate(outcome), "the season's board")

    def strengths(self) -> FloatArray:
        return np.concatenate([self.pool.strength, [self.variants[v].strength for v in self.listed()]])

    def voting(self, votes: int, accuracy: float) -> Voting:
        if self.flagship is None:
            raise ValueError("the provider has no listed model to rig votes for: publish one first")
        return Voting(self, votes, accuracy)

    # --- the season -------------------------------------------------------------------------------------

    def play(self) -> SeasonResult:
        coins = stream(self.seed, "arena-attack", self.attack.id, json.dumps(self.attack.get_params(), sort_keys=True,
                                                                              default=str), *self.identity, self.replication)
        self.attack.play(_Client(self), coins)
        self._collect_fresh()
        if self.flagship is None:
            return SeasonResult(False, np.nan, np.nan, np.nan, False, np.nan, len(self.variants), 0, self.votes_cast,
                                self.votes_kept, 0)
        ratings, pairs = self.board()
        truth = self.strengths()
        inflation = (ratings - BASE_RATING) - (truth - self.pool.strength.mean())
        listed = self.listed()
        target = self.size + listed.index(self.flagship)
        true_rank = 1 + (truth > truth[target]).sum() + ((truth == truth[target]).sum() - 1) / 2  # ties share ranks
        listed_rank = 1 + (ratings > ratings[target]).sum() + ((ratings == ratings[target]).sum() - 1) / 2
        top = int(np.argmax(ratings))
        shown = self.variants[self.flagship].private_rating - BASE_RATING
        return SeasonResult(True, float(inflation[target]), float(true_rank - listed_rank), float(inflation[top]),
                            top == target, float(shown), len(self.variants), len(listed), self.votes_cast, self.votes_kept,
                            int(pairs.n.sum()))


class _Client:
    """What an attack holds: the season's client methods, and nothing of its truth."""

    def __init__(self, season: Season):
        self.test_variants = season.test_variants
        self.publish = season.publish
        self.voting = season.voting
        self.leaderboard = season.leaderboard
        self.battle_share = season.battle_share


class Voting:
    """A voting session (:class:`ladderlab.arena.attack.VotingSession`) over the season's listed models."""

    def __init__(self, season: Season, votes: int, accuracy: float):
        self._season = season
        self.models = season.names()
        size = len(self.models)
        self.target = season.size + season.listed().index(season.flagship)
        rng = stream(season.seed, "arena-voting", *season.identity, season.replication)
        draws = rng.random((votes, 5))  # first, rival, sides, perception, and misperceived pair (one number each)
        weight = np.concatenate([season.pool.weight, np.ones(size - season.size)])
        self._a, self._b = _weighted_pairs(weight, draws[:, 0], draws[:, 1], draws[:, 2])
        wrong = draws[:, 3] > accuracy
        others = np.floor(draws[:, 4:5] * np.array([[size - 2, (size - 2) ** 2]])).astype(np.int64)
        first, second = others[:, 0], others[:, 1] % (size - 2)
        self.perceived_a = np.where(wrong, _skip_two(first, self._a, self._b), self._a)
        self.perceived_b = np.where(wrong, _skip_two(second, self._a, self._b), self._b)
        self._votes = votes
        self._position = 0
        self._start_ratings, pairs = season.board()
        self._fitted: tuple[int, FloatArray, PairCounts] = (0, self._start_ratings, pairs)

    @property
    def position(self) -> int:
        return self._position

    def cast(self, decisions: IntArray) -> None:
        decisions = np.asarray(decisions, dtype=np.int64)
        start = self._position
        if decisions.ndim != 1 or start + decisions.size > self._votes:
            raise ValueError(f"cast takes at most {self._votes - start} decisions now, got {np.shape(decisions)}")
        if not np.isin(decisions, [A_WINS, TIE, B_WINS, ABSTAIN]).all():
            raise ValueError("a decision is an outcome code (2, 1, 0) or ABSTAIN (-1)")
        a, b = self._a[start : start + decisions.size], self._b[start : start + decisions.size]
        voted = decisions != ABSTAIN
        expected = 1 / (1 + 10 ** ((self._start_ratings[b] - self._start_ratings[a]) / ELO))
        kept = voted & self._season.policy.keeps_votes(expected, decisions)
        self._season.votes_cast += int(voted.sum())
        self._season.votes_kept += int(kept.sum())
        if kept.any():
            self._season.extra.append((a[kept], b[kept], decisions[kept]))
        self._position += decisions.size

    def _board(self) -> tuple[FloatArray, PairCounts]:
        """The board now, fitted once per position of the session."""
        if self._fitted[0] != self._position:
            self._fitted = (self._position, *self._season.board())
        return self._fitted[1], self._fitted[2]

    def ratings(self) -> FloatArray:
        return self._board()[0].copy()

    def information(self) -> FloatArray:
        ratings, pairs = self._board()
        return information(pairs, (ratings - BASE_RATING) / ELO)

    def history(self) -> FloatArray:
        """Wins, ties and losses of the first model, per ordered pair of the session's models, in the pool's
        public votes before the session."""
        history = self._season.history
        out = np.zeros((len(self.models), len(self.models), 3))
        out[history.i, history.j] = np.stack([history.wins, history.ties, history.losses], axis=1)
        out[history.j, history.i] = np.stack([history.losses, history.ties, history.wins], axis=1)
        return out


def _weighted_pairs(weight: FloatArray, first: FloatArray, rival: FloatArray, side: FloatArray) -> tuple[IntArray, IntArray]:
    """Min et al.'s pair sampler from uniform numbers: the first model by weight, its rival by weight
    among the others; sides as drawn."""
    cumulative = np.cumsum(weight)
    total = cumulative[-1]
    one = np.searchsorted(cumulative, first * total, side="right")
    start = cumulative[one] - weight[one]
    t = rival * (total - weight[one])
    two = np.searchsorted(cumulative, t + (t >= start) * weight[one], side="right")
    one, two = np.minimum(one, weight.size - 1), np.minimum(two, weight.size - 1)
    swap = side < 0.5
    return np.where(swap, two, one), np.where(swap, one, two)


def _skip_two(index: IntArray, a: IntArray, b: IntArray) -> IntArray:
    """The ``index``-th model (0 … m − 3) among those that are neither ``a`` nor ``b``."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    shifted = index + (index >= low)
    return shifted + (shifted >= high)


def play_season(family: PairwiseArena, policy: ArenaPolicy, attack: ArenaAttack, seed: int, replication: int,
                newcomer_gap: float = 0.0) -> SeasonResult:
    """One season's result (:class:`Season`)."""
    try:
        return Season(family, policy, attack, seed, replication, newcomer_gap).play()
    except NotIdentified as error:
        raise ValueError(f"season {replication}: {error} (a family with more battles per model avoids it)") from None
