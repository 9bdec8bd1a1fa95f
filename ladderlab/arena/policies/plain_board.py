from __future__ import annotations

from ladderlab.arena.policy import ArenaPolicy
from ladderlab.params import Boolean


class PlainBoard(ArenaPolicy):
    """The plain published board: unlimited private variants, ratings shown, publication on request.

    Chatbot Arena as Singh et al. 2025 describe it before their paper: a provider may test any
    number of variants privately, sees each one's rating, lists the one it chooses at once with
    every vote it got. ``retraction`` false: every tested variant is listed (no score is withdrawn).
    """

    id = "plain-board"
    reference = "Chiang et al. 2024 (Chatbot Arena); Singh et al. 2025, §3 (private testing and retraction)"
    _parameter_constraints = {"retraction": [Boolean()]}

    def __init__(self, retraction: bool = True):
        self.retraction = retraction
