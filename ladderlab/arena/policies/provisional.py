from __future__ import annotations

from ladderlab.arena.policies.plain_board import PlainBoard
from ladderlab.params import Boolean, Interval


class Provisional(PlainBoard):
    """A published model is provisional until it has ``fresh_votes`` votes collected after publication.

    LMArena's answer to Singh et al. 2025 (a model is marked preliminary until it has enough votes
    after its release). With ``fresh_only`` its listed rating is fitted without its private-test votes,
    from votes the provider could not select on; otherwise the fresh votes only dilute them.
    """

    id = "provisional"
    reference = "LMArena's response to Singh et al. 2025 (preliminary ratings until enough fresh votes)"
    _parameter_constraints = {"fresh_votes": [Interval(int, 1, None)], "fresh_only": [Boolean()],
                              "retraction": [Boolean()]}

    def __init__(self, fresh_votes: int = 3000, fresh_only: bool = True, retraction: bool = True):
        self.fresh_votes = fresh_votes
        self.fresh_only = fresh_only
        self.retraction = retraction

    def votes_before_listing(self) -> int:
        return self.fresh_votes

    def counts_private_votes(self) -> bool:
        return not self.fresh_only
