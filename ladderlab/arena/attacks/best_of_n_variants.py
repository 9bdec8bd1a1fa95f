from __future__ import annotations

import numpy as np

from ladderlab.arena.attack import ArenaAttack, ArenaClient
from ladderlab.params import Interval


class BestOfNVariants(ArenaAttack):
    """Test ``n_variants`` private variants of one model and publish the best-rated: Singh et al.'s best-of-N.

    Singh et al. 2025 (The Leaderboard Illusion, §3): a provider tests variants of equal true strength
    (``variant_spread`` 0; or spread around it, Elo points) privately, ``battles_per_variant`` votes
    each, and publishes the one rated best, retracting the rest. The expected rating of the one chosen
    exceeds its true strength by about σ · E[max of N standard normals] (σ a variant's standard
    error). Where the policy shows no rating it publishes the best it was shown.
    """

    id = "best-of-n-variants"
    reference = "Singh et al. 2025, §3 (private testing, best-of-N); LITERATURE §10.4"
    budget = "n_variants"
    budget_unit = "private variants"
    default_budgets = (1, 2, 3, 5, 10, 27)
    _parameter_constraints = {"n_variants": [Interval(int, 1, None)], "battles_per_variant": [Interval(int, 1, None)],
                              "variant_spread": [Interval(float, 0, None)]}

    def __init__(self, n_variants: int = 10, battles_per_variant: int = 1000, variant_spread: float = 0.0):
        self.n_variants = n_variants
        self.battles_per_variant = battles_per_variant
        self.variant_spread = variant_spread

    def variants(self, client: ArenaClient) -> int:
        """How many variants to test."""
        return self.n_variants

    def play(self, client: ArenaClient, rng: np.random.Generator) -> None:
        tested = client.test_variants(self.variants(client), self.battles_per_variant)
        shown = [feedback for feedback in tested if feedback.rating is not None]
        if shown:
            client.publish(max(shown, key=lambda feedback: feedback.rating).variant)
