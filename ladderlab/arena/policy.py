"""The base class of arena policies: how a pairwise leaderboard runs private testing and publishes ratings.

A policy is to an arena what a mechanism is to a holdout leaderboard: the organiser's rules between
the votes and what the board shows. The season (:mod:`ladderlab.arena.season`) asks it, for every
provider's private test and publication:

- :meth:`ArenaPolicy.variants_allowed`: how many private variants a provider may test (None: any);
- :meth:`ArenaPolicy.on_test`: whether a tested variant is published at once, and what of its
  private rating the provider is shown;
- :meth:`ArenaPolicy.accepts`: whether a provider's request to publish a variant is granted;
- ``retraction``: whether a provider may keep tested variants off the board (False: every tested
  variant is listed, with its rating);
- :meth:`ArenaPolicy.votes_before_listing` and :meth:`ArenaPolicy.counts_private_votes`: how many votes a
  published model collects after publication before it is listed, and whether its private-test votes
  count in its listed rating;
- :meth:`ArenaPolicy.keeps_votes`: which new votes count (a defence against rigging).

The defaults are the plain board as Chatbot Arena ran it before Singh et al. 2025: unlimited private
variants, their ratings shown to the provider, publication on request, retraction allowed, a model
listed at once with every vote it got. A policy overrides what it changes; parameters only in
``__init__`` with ``_parameter_constraints``, as for every plugin. Ratings are Elo points.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ladderlab.plugin import Plugin

FloatArray = NDArray[np.float64]


class ArenaPolicy(Plugin):
    """An arena's rules for private testing, publication and votes."""

    retraction: bool = True
    """Whether a provider may keep tested variants off the board; a policy with the choice declares it
    as a parameter."""
    expected_check_failures: ClassVar[dict[str, str]] = {}
    """Conformance checks (:mod:`ladderlab.arena.testing`) this policy is known to fail, with why."""

    def variants_allowed(self) -> int | None:
        """How many private variants a provider may test (None: any number)."""
        return None

    def on_test(self, rating: float, flagship: float | None) -> tuple[bool, float | None]:
        """For a variant whose private test rates it ``rating`` while the provider's listed model is rated
        ``flagship`` (None: it has none): whether it is published at once, and the rating the provider is
        shown (None: none)."""
        return False, rating

    def accepts(self, rating: float, flagship: float | None) -> bool:
        """Whether a request to publish a variant rated ``rating`` is granted."""
        return True

    def votes_before_listing(self) -> int:
        """Votes a published model collects after publication before it is listed (0: listed at once)."""
        return 0

    def counts_private_votes(self) -> bool:
        """Whether a listed model's private-test votes count in its listed rating."""
        return True

    def keeps_votes(self, expected: FloatArray, outcome: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which new votes count, given model_a's expected score on the board when the votes began and the
        outcome codes (2: model_a won, 1: tie, 0: model_b won). All, by default."""
        return np.ones(np.shape(outcome), dtype=bool)
