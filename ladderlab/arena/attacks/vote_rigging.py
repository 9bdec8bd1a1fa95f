from __future__ import annotations

from typing import Any

import numpy as np

from ladderlab.arena.attack import ABSTAIN, ArenaAttack, ArenaClient, VotingSession
from ladderlab.arena.battles import A_WINS, B_WINS, TIE
from ladderlab.params import Interval, Options

STRATEGIES = ("t-abstain", "t-tie", "t-random", "t-normal", "omni-on", "omni-bt")
ELO_K, BASE, SCALE = 4.0, 10.0, 400.0
"""Min et al.'s online-Elo constants (``vote_rigging.py``)."""


class VoteRigging(ArenaAttack):
    """Publish one model, then vote on ``votes`` new battles to raise it: Min et al.'s vote rigging.

    Min, Pang, Du, Liu, Cheng & Lin 2025 (ICML; sail-sg/Rigging-ChatbotArena ``vote_rigging.py``).
    The voter tells the two models apart with probability ``accuracy``; when it fails it takes them
    for two others drawn at random (and abstains if they coincide). Wherever it sees its own model
    it votes for it. Elsewhere, by ``strategy``:

    - target-only: ``t-abstain`` (no vote), ``t-tie``, ``t-random`` (a win, a loss, a tie or no vote,
      each ¼), ``t-normal`` (as the public history of the pair it sees voted, or by the board's Elo
      expectation where the pair never met);
    - omnipresent: ``omni-on``, Min et al.'s online-Elo heuristic (the vote, or none, whose Elo update
      with K = 4 on the board as the votes began most raises the target's expected score against
      both), and ``omni-bt``, the vote that most raises the target's rating above the model ranked just
      above it (just below, for the top model) on the current board, each vote's effect predicted by one
      Newton step (Sherman–Morrison) from the board refitted every ``refit_every`` votes; Min et al.
      refit exactly for every candidate vote, which ``refit_every`` = 1 approaches.
    """

    id = "vote-rigging"
    reference = "Min et al. 2025 (ICML), §4; sail-sg/Rigging-ChatbotArena vote_rigging.py"
    budget = "votes"
    budget_unit = "rigged votes"
    default_budgets = (100, 300, 1000, 3000, 10000)
    _parameter_constraints = {
        "votes": [Interval(int, 1, None)],
        "strategy": [Options(set(STRATEGIES))],
        "accuracy": [Interval(float, 0, 1)],
        "battles_per_variant": [Interval(int, 1, None)],
        "refit_every": [Interval(int, 1, None)],
    }

    def __init__(self, votes: int = 1000, strategy: str = "omni-bt", accuracy: float = 1.0,
                 battles_per_variant: int = 1000, refit_every: int = 10):
        self.votes = votes
        self.strategy = strategy
        self.accuracy = accuracy
        self.battles_per_variant = battles_per_variant
        self.refit_every = refit_every

    @classmethod
    def strength_grid(cls, budget: int) -> list[dict[str, Any]]:
        """Target-only and omnipresent strategies; ``omni-bt`` refits every max(10, votes / 100) votes, at most
        100 refits a season."""
        return [{"votes": budget, "strategy": strategy} for strategy in ("t-abstain", "t-normal", "omni-on")] + [
            {"votes": budget, "strategy": "omni-bt", "refit_every": max(10, budget // 100)}]

    def play(self, client: ArenaClient, rng: np.random.Generator) -> None:
        tested = client.test_variants(1, self.battles_per_variant)
        if not tested or not (tested[0].published or client.publish(tested[0].variant)):
            return
        session = client.voting(self.votes, self.accuracy)
        if self.strategy == "omni-bt":
            while session.position < self.votes:
                chunk = slice(session.position, min(session.position + self.refit_every, self.votes))
                session.cast(self._bradley_terry_votes(session, chunk))
            return
        session.cast(self._frozen_votes(session, rng))

    def _frozen_votes(self, session: VotingSession, rng: np.random.Generator) -> np.ndarray:
        """Every decision at once: the strategies that read the board only as the votes began."""
        a, b, target = session.perceived_a, session.perceived_b, session.target
        decisions = np.full(a.size, ABSTAIN)
        if self.strategy == "t-tie":
            decisions[:] = TIE
        elif self.strategy == "t-random":
            decisions = rng.choice(np.array([A_WINS, B_WINS, TIE, ABSTAIN]), a.size)
        elif self.strategy == "t-normal":
            decisions = self._as_history(session, rng)
        elif self.strategy == "omni-on":
            decisions = self._online_elo(session)
        decisions = np.where(a == target, A_WINS, np.where(b == target, B_WINS, decisions))
        return np.where(a == b, ABSTAIN, decisions)

    def _as_history(self, session: VotingSession, rng: np.random.Generator) -> np.ndarray:
        a, b = session.perceived_a, session.perceived_b
        history = session.history()[a, b]  # wins, ties, losses of model_a
        total = history.sum(axis=1)
        ratings = session.ratings()
        elo_win = 1.0 / (1.0 + BASE ** ((ratings[b] - ratings[a]) / SCALE))
        drawn = rng.random(a.size)
        shares = history / np.where(total > 0, total, 1.0)[:, None]
        from_history = np.where(drawn < shares[:, 0], A_WINS, np.where(drawn < shares[:, 0] + shares[:, 2], B_WINS, TIE))
        return np.where(total > 0, from_history, np.where(drawn > elo_win, B_WINS, A_WINS))

    def _online_elo(self, session: VotingSession) -> np.ndarray:
        ratings = session.ratings()
        a, b = session.perceived_a, session.perceived_b
        ra, rb, rt = ratings[a], ratings[b], ratings[session.target]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 - ea

        def reward(new_a: np.ndarray, new_b: np.ndarray) -> np.ndarray:
            return 1 / (1 + BASE ** ((new_a - rt) / SCALE)) + 1 / (1 + BASE ** ((new_b - rt) / SCALE))

        rewards = np.stack([reward(ra + ELO_K * eb, rb - ELO_K * eb), reward(ra - ELO_K * ea, rb + ELO_K * ea),
                            reward(ra - ELO_K * (ea - eb) / 2, rb + ELO_K * (ea - eb) / 2), reward(ra, rb)])
        return np.array([A_WINS, B_WINS, TIE, ABSTAIN])[np.argmax(rewards, axis=0)]

    def _bradley_terry_votes(self, session: VotingSession, chunk: slice) -> np.ndarray:
        ratings, information = session.ratings(), session.information()
        target = session.target
        order = np.argsort(-ratings, kind="stable")
        place = int(np.flatnonzero(order == target)[0])
        anchor = int(order[place - 1] if place > 0 else order[1])
        size = ratings.size
        inverse = np.linalg.inv(information + np.full((size, size), 1.0 / size))
        direction = inverse[:, target] - inverse[:, anchor]
        a, b = session.perceived_a[chunk], session.perceived_b[chunk]
        u = ratings * np.log(10.0) / 400.0
        sigma = 1 / (1 + np.exp(-(u[a] - u[b])))
        leverage = sigma * (1 - sigma) * (inverse[a, a] + inverse[b, b] - 2 * inverse[a, b])
        toward = (direction[a] - direction[b]) / (1 + leverage)
        gains = np.stack([(1.0 - sigma) * toward, -sigma * toward, (0.5 - sigma) * toward])  # a wins, b wins, tie
        best = np.argmax(gains, axis=0)
        decisions = np.where(gains.max(axis=0) > 0, np.array([A_WINS, B_WINS, TIE])[best], ABSTAIN)
        decisions = np.where(a == target, A_WINS, np.where(b == target, B_WINS, decisions))
        return np.where(a == b, ABSTAIN, decisions)
