from __future__ import annotations

from ladderlab.arena.policies.plain_board import PlainBoard
from ladderlab.params import Boolean, Interval


class MarginRule(PlainBoard):
    """The Ladder on an arena: a provider's rating changes only when a variant beats it by ``margin``.

    Blum & Hardt 2015's Ladder, with a provider's listed model as its best so far: every private test
    is a submission, the first is listed, a later variant replaces the listed one only if its rating
    beats it by ``margin`` Elo points, and a provider sees a private rating only then. [R]: a
    reconstruction of the Ladder's rule for pairwise boards, not an algorithm of the papers.
    """

    id = "margin-rule"
    reference = "Blum & Hardt 2015, Fig. 2 (the Ladder), carried to pairwise boards [R]"
    _parameter_constraints = {"margin": [Interval(float, 0, None)], "retraction": [Boolean()]}

    def __init__(self, margin: float = 20.0, retraction: bool = True):
        self.margin = margin
        self.retraction = retraction

    def on_test(self, rating: float, flagship: float | None) -> tuple[bool, float | None]:
        beats = self.accepts(rating, flagship)
        return beats, rating if beats else None

    def accepts(self, rating: float, flagship: float | None) -> bool:
        return flagship is None or rating >= flagship + self.margin
