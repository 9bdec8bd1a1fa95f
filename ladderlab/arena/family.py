"""The pairwise task family: models with latent strengths, and votes drawn from Bradley–Terry with ties.

A *pool* of models, each with a true strength θ (Elo points, drawn N(0, ``spread``²)), a provider
(models are dealt to the ``providers`` in turn; ten by default, fewer if there are fewer models), a sampling weight (its provider's, ``provider_weights``;
uniform by default) and optionally a style s ~ N(0, 1) that voters reward although it is no
quality (``style_effect`` γ, Elo points per unit of style: the confounder style control removes).
Each answer's style is its model's plus noise, φ = s + 0.67 z, and shows in its counts as FastChat
measures them (tokens e^(5.5 + 0.6 φ), rounded; headers, list items and bold spans Poisson(e^(0.3 + 0.5 φ))).

A vote between a and b, with d = θ_a − θ_b + γ (φ_a − φ_b) and p = σ(d · ln 10 / 400):

    P(a wins) = p − t/2,   P(tie) = t = 4 τ p (1 − p),   P(b wins) = 1 − p − t/2,

τ = ``tie_rate``, the tie probability of two equally strong models. The expected score of a (a win
1, a tie ½) is then exactly p, so Bradley–Terry with ties counted as halves (FastChat's likelihood)
estimates θ without bias for any τ; ties are likeliest between close models, as on the Arena.

Battles are drawn as the Arena draws them (Min et al. 2025's ``get_battle_pair``): a first model
with probability proportional to its weight, its rival among the others likewise. Votes arrive over
a time span [0, 1]: with ``lifetime`` < 1 each model is live for that share of it (models enter
in turn, as new releases do, and leave), so the comparison graph is as sparse as the Arena's; a
battle pairs live models only. Drawn battle by battle (:meth:`PairwiseArena.battles`, for a
battles file), or as counts per pair (:meth:`PairwiseArena.outcomes`): for independent battles the
pairs' counts are multinomial and each pair's outcomes multinomial given its count, with the
answers' style noise integrated out (Gauss–Hermite, exact to rounding for these smooth probabilities):
the same distribution at the cost of the number of pairs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ladderlab.arena.battles import A_WINS, B_WINS, TIE, Battles, PairCounts, from_columns
from ladderlab.params import Interval, ListOf
from ladderlab.plugin import Plugin

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
TIME_SLICES = 200
"""Slices of the time span within which the live models are fixed (``lifetime`` < 1)."""
STYLE_NOISE = 0.67
"""The spread of an answer's style around its model's."""
NODES, NODE_WEIGHTS = np.polynomial.hermite.hermgauss(24)


def outcome_probabilities(difference: FloatArray, tie_rate: float) -> FloatArray:
    """P(a wins), P(tie), P(b wins) for vote differences ``difference`` (Elo points): ... × 3."""
    p = 1.0 / (1.0 + 10.0 ** (-np.asarray(difference, dtype=float) / 400.0))
    tie = 4.0 * tie_rate * p * (1.0 - p)
    return np.stack([p - tie / 2.0, tie, 1.0 - p - tie / 2.0], axis=-1)


@dataclass(frozen=True, eq=False)
class Pool:
    """One replication's models."""

    names: list[str]
    strength: FloatArray
    """True strength, Elo points."""
    provider: IntArray
    style: FloatArray
    weight: FloatArray
    """Sampling weight."""
    start: FloatArray
    """When each model goes live (share of the time span); it stays live for ``lifetime``."""

    @property
    def size(self) -> int:
        return len(self.names)


@dataclass(frozen=True, eq=False)
class Outcomes:
    """Votes counted per unordered pair i < j: wins of i, ties, wins of j (vectors over the pairs)."""

    n_models: int
    i: IntArray
    j: IntArray
    wins: FloatArray
    ties: FloatArray
    losses: FloatArray

    def pair_counts(self) -> PairCounts:
        return PairCounts(self.n_models, self.i, self.j, self.wins + self.ties + self.losses, self.wins + self.ties / 2.0)

    def __add__(self, other: Outcomes) -> Outcomes:
        return Outcomes(self.n_models, self.i, self.j, self.wins + other.wins, self.ties + other.ties,
                        self.losses + other.losses)


def _style_counts(style: FloatArray, rng: np.random.Generator) -> FloatArray:
    """One side's FastChat style counts for answers of style ``style``: tokens, headers, list items, bold spans."""
    tokens = np.round(np.exp(5.5 + 0.6 * style))
    return np.column_stack([tokens, *(rng.poisson(np.exp(0.3 + 0.5 * style)) for _ in range(3))]).astype(float)


def all_pairs(size: int) -> tuple[IntArray, IntArray]:
    """Every unordered pair i < j of ``size`` models."""
    i, j = np.triu_indices(size, k=1)
    return i.astype(np.int64), j.astype(np.int64)


def pair_probabilities(weight: FloatArray, i: IntArray, j: IntArray) -> FloatArray:
    """P(a battle pairs i and j) when the first model is drawn by weight and its rival by weight among
    the others (models of weight 0 never play)."""
    total = weight.sum()
    first_i = weight[i] / total * weight[j] / (total - weight[i])
    first_j = weight[j] / total * weight[i] / (total - weight[j])
    return first_i + first_j


class ArenaFamily(Plugin):
    """A family of arenas: a season draws its pool of models and their votes from it (:class:`PairwiseArena`
    is the built-in; a family of your own derives from it)."""


class PairwiseArena(ArenaFamily):
    """Models with latent strengths; Bradley–Terry votes with ties, a style confounder, skewed sampling, time."""

    id = "pairwise"
    reference = ("Bradley & Terry 1952; Chiang et al. 2024 (Chatbot Arena); Min et al. 2025 (pair sampling); "
                 "Singh et al. 2025 (providers, sampling asymmetry)")
    _parameter_constraints = {
        "models": [Interval(int, 2, None)],
        "providers": [Interval(int, 1, None), None],
        "spread": [Interval(float, 0, None)],
        "tie_rate": [Interval(float, 0, 0.5)],
        "battles": [Interval(int, 0, None)],
        "provider_weights": [ListOf(Interval(float, 0, None, closed="neither")), None],
        "style_effect": [Interval(float, None, None)],
        "lifetime": [Interval(float, 0, 1, closed="right")],
    }

    def __init__(self, models: int = 50, providers: int | None = None, spread: float = 100.0, tie_rate: float = 0.3,
                 battles: int = 20000, provider_weights: list[float] | None = None, style_effect: float = 0.0,
                 lifetime: float = 1.0):
        self.models = models
        self.providers = providers
        self.spread = spread
        self.tie_rate = tie_rate
        self.battles = battles
        self.provider_weights = provider_weights
        self.style_effect = style_effect
        self.lifetime = lifetime

    @property
    def provider_count(self) -> int:
        """``providers``, or by default ten (fewer if there are fewer models)."""
        return min(10, self.models) if self.providers is None else self.providers

    def _check_params(self) -> None:
        if self.providers is not None and self.providers > self.models:
            raise ValueError(f"{self.id}: providers ({self.providers}) must not exceed models ({self.models})")
        if self.provider_weights and len(self.provider_weights) != self.provider_count:
            raise ValueError(f"{self.id}: provider_weights has {len(self.provider_weights)} weights for "
                             f"{self.provider_count} providers; give one per provider (or none: uniform)")

    def weight_of(self, provider: IntArray) -> FloatArray:
        """The sampling weight of models of ``provider``."""
        weights = np.asarray(self.provider_weights or [1.0] * self.provider_count, dtype=float)
        return weights[np.asarray(provider)]

    def pool(self, rng: np.random.Generator) -> Pool:
        """One replication's models (strength, provider, style, weight, when they go live)."""
        strength = rng.normal(0.0, self.spread, self.models)
        style = rng.standard_normal(self.models) if self.style_effect else np.zeros(self.models)
        provider = np.arange(self.models) % self.provider_count
        start = np.linspace(0.0, 1.0 - self.lifetime, self.models) if self.lifetime < 1 else np.zeros(self.models)
        names = [f"p{p:02d}-model-{m:03d}" for m, p in enumerate(provider)]
        return Pool(names, strength, provider, style, self.weight_of(provider), start)

    def vote_probabilities(self, strength: FloatArray, style: FloatArray) -> FloatArray:
        """P(a wins), P(tie), P(b wins) for differences of true ``strength`` (Elo) and of models' ``style``: the
        answers' style noise integrated out (… × 3)."""
        if not self.style_effect:
            return outcome_probabilities(strength, self.tie_rate)
        spread = STYLE_NOISE * np.sqrt(2.0) * np.sqrt(2.0)  # φ_a − φ_b has sd 0.67·√2; Hermite nodes carry a √2
        shifted = [outcome_probabilities(strength + self.style_effect * (style + spread * node), self.tie_rate)
                   for node in NODES]
        return np.tensordot(NODE_WEIGHTS / np.sqrt(np.pi), np.array(shifted), axes=1)

    def outcomes(self, rng: np.random.Generator, pool: Pool, battles: int | None = None,
                 between: tuple[IntArray, IntArray] | None = None, weight: FloatArray | None = None) -> Outcomes:
        """``battles`` (default: the family's) votes counted per pair, over the whole time span.
        ``between`` restricts them to these pairs (i, j); ``weight`` replaces the pool's weights."""
        count = self.battles if battles is None else battles
        weight = pool.weight if weight is None else weight
        i, j = all_pairs(pool.size) if between is None else between
        n = np.zeros(i.size)
        for live, size in self._slices(rng, pool, count, weight):
            if not size:
                continue
            probability = pair_probabilities(np.where(live, weight, 0.0), i, j)
            n += rng.multinomial(size, probability / probability.sum())
        votes = rng.multinomial(n.astype(np.int64), self.vote_probabilities(pool.strength[i] - pool.strength[j],
                                                                            pool.style[i] - pool.style[j]))
        return Outcomes(pool.size, i, j, votes[:, 0].astype(float), votes[:, 1].astype(float), votes[:, 2].astype(float))

    def against(self, rng: np.random.Generator, pool: Pool, strength: float, battles: int, weight: FloatArray | None = None,
                style: float = 0.0) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``battles`` votes of a newcomer of true ``strength`` (and ``style``) against the pool, its rival
        in each drawn by weight: its wins, ties and losses against each pool model."""
        weight = pool.weight if weight is None else weight
        n = rng.multinomial(battles, weight / weight.sum())
        votes = rng.multinomial(n, self.vote_probabilities(strength - pool.strength, style - pool.style))
        return votes[:, 0].astype(float), votes[:, 1].astype(float), votes[:, 2].astype(float)

    def battles_of(self, rng: np.random.Generator, pool: Pool, battles: int | None = None) -> tuple[Battles, FloatArray]:
        """``battles`` votes one by one, in the order they arrive, and their times in [0, 1]."""
        count = self.battles if battles is None else battles
        i, j = all_pairs(pool.size)
        a_parts, b_parts, times = [], [], []
        slices = self._slices(rng, pool, count, pool.weight)
        width = 1.0 / TIME_SLICES if self.lifetime < 1 else 1.0
        for (live, size), start in zip(slices, self._starts()):
            if not size:
                continue
            probability = pair_probabilities(np.where(live, pool.weight, 0.0), i, j)
            chosen = rng.choice(i.size, size=size, p=probability / probability.sum())
            swap = rng.random(size) < 0.5
            a_parts.append(np.where(swap, j[chosen], i[chosen]))
            b_parts.append(np.where(swap, i[chosen], j[chosen]))
            times.append(np.sort(rng.uniform(start, start + width, size)))
        a, b = np.concatenate(a_parts), np.concatenate(b_parts)
        style = None
        difference = pool.strength[a] - pool.strength[b]
        if self.style_effect:
            answer_a = pool.style[a] + STYLE_NOISE * rng.standard_normal(a.size)
            answer_b = pool.style[b] + STYLE_NOISE * rng.standard_normal(b.size)
            difference = difference + self.style_effect * (answer_a - answer_b)
            style = np.column_stack([_style_counts(answer_a, rng), _style_counts(answer_b, rng)])
        probability = outcome_probabilities(difference, self.tie_rate)
        drawn = rng.random(a.size)
        outcome = np.where(drawn < probability[:, 0], A_WINS, np.where(drawn < probability[:, 0] + probability[:, 1],
                                                                        TIE, B_WINS))
        names = np.asarray(pool.names, dtype=object)
        drawn_battles = from_columns(names[a], names[b], outcome, f"{self.id} family")
        return dataclasses.replace(drawn_battles, style=style), np.concatenate(times)

    def _starts(self) -> FloatArray:
        return np.linspace(0.0, 1.0, TIME_SLICES + 1)[:-1] if self.lifetime < 1 else np.zeros(1)

    def _slices(self, rng: np.random.Generator, pool: Pool, count: int,
                weight: FloatArray) -> list[tuple[NDArray[np.bool_], int]]:
        """The live models of each slice of the time span, and how many of ``count`` battles it holds
        (multinomial over the slices in which at least two models of positive weight are live; all of
        them in a slice without one)."""
        if self.lifetime >= 1:
            live = [np.ones(pool.size, dtype=bool)]
        else:
            middles = self._starts() + 0.5 / TIME_SLICES
            live = [(pool.start <= t) & (t < pool.start + self.lifetime) for t in middles]
        playable = np.array([((weight > 0) & alive).sum() >= 2 for alive in live], dtype=float)
        if not playable.any():
            raise ValueError(f"{self.id}: fewer than two models with a positive sampling weight are ever live together")
        sizes = rng.multinomial(count, playable / playable.sum()) if len(live) > 1 else np.array([count])
        return list(zip(live, sizes.tolist()))

    def describe(self) -> dict[str, Any]:
        """The family's parameters, as a certificate records them."""
        return {"id": self.id, "params": self.get_params()}

