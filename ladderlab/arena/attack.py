"""The base class of arena attacks: providers and voters who hold an arena client and public data only.

An arena attack plays one season (:mod:`ladderlab.arena.season`) through an :class:`ArenaClient`,
the provider's and voter's side of the arena, as a holdout attack plays through a Board:

- ``test_variants(count, battles)``: put up to ``count`` private variants of the provider's model in
  front of the voters, ``battles`` votes each; the policy says how many it may and what of each
  private rating it sees (:class:`Feedback`);
- ``publish(variant)``: ask to list a tested variant (the policy may refuse);
- ``voting(votes, accuracy)``: vote on the next ``votes`` battles of the arena as one voter who tells
  the models apart with probability ``accuracy`` (Min et al. 2025's de-anonymisation, abstracted):
  a :class:`VotingSession`;
- ``leaderboard()``: the public board (Elo points by model); ``battle_share(weight)``: the share of the
  arena's battles a model of sampling weight ``weight`` appears in (the arena's sampling is public).

The client never shows true strengths: an attack sees what the arena shows a provider (its private
ratings, where the policy shows them) and what it shows everyone (the public board and its votes).
The certificate sets one parameter, :attr:`ArenaAttack.budget`, to each budget it certifies.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

from ladderlab.plugin import Plugin

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
ABSTAIN = -1
"""A voter's decision to cast no vote (the other decisions are outcome codes: 2 model_a, 1 tie, 0 model_b)."""


@dataclass(frozen=True)
class Feedback:
    """What a provider learns of one private test: the variant's number, the rating it is shown (None:
    the policy shows none) and whether the policy published it at once."""

    variant: int
    rating: float | None
    published: bool


class VotingSession(Protocol):
    """The next battles of the arena, voted on by the attacker, in order.

    ``models`` are the listed models (names), ``target`` the attacker's own listed model among them;
    ``perceived_a``, ``perceived_b`` the models the attacker takes each battle's two sides for (right
    with the accuracy it declared; when wrong, two others drawn at random, which may coincide).
    :meth:`cast` records decisions for the next battles, :meth:`ratings` and :meth:`information` are
    the public board now (Elo points) and its Fisher information (natural-log units), :meth:`history`
    the public votes before the session (wins, ties, losses of model_a per ordered pair)."""

    models: list[str]
    target: int
    perceived_a: IntArray
    perceived_b: IntArray

    @property
    def position(self) -> int: ...

    def cast(self, decisions: IntArray) -> None: ...

    def ratings(self) -> FloatArray: ...

    def information(self) -> FloatArray: ...

    def history(self) -> FloatArray: ...


class ArenaClient(Protocol):
    """The provider's and voter's side of the arena (see the module docstring)."""

    def test_variants(self, count: int, battles: int) -> list[Feedback]: ...

    def publish(self, variant: int) -> bool: ...

    def voting(self, votes: int, accuracy: float) -> VotingSession: ...

    def leaderboard(self) -> dict[str, float]: ...

    def battle_share(self, weight: float) -> float: ...


class ArenaAttack(Plugin):
    """A strategic provider or voter on a pairwise leaderboard."""

    budget: ClassVar[str]
    """The parameter the certificate sets to each budget (``n_variants``, ``votes``, …)."""
    budget_unit: ClassVar[str]
    """What a budget counts, for people: ``private variants``, ``rigged votes``, …"""
    default_budgets: ClassVar[tuple[int, ...]]
    """The budgets ``ladderlab certify`` tries unless told."""
    variant_spread: float = 0.0
    """The spread (Elo points) of the true strengths of the provider's variants around its model's; an
    attack that builds variants declares it as a parameter."""
    expected_check_failures: ClassVar[dict[str, str]] = {}

    @classmethod
    def strength_grid(cls, budget: int) -> list[dict[str, Any]]:
        """The settings to try at ``budget``, weaker to stronger (the certificate takes the worst)."""
        return [{cls.budget: budget}]

    @abstractmethod
    def play(self, client: ArenaClient, rng: np.random.Generator) -> None:
        """Play one season through ``client``, with the attacker's own coins ``rng``."""
