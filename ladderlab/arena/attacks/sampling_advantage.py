from __future__ import annotations

import math

from ladderlab.arena.attack import ArenaClient
from ladderlab.arena.attacks.best_of_n_variants import BestOfNVariants
from ladderlab.params import Interval


class SamplingAdvantage(BestOfNVariants):
    """A provider shown ``weight`` times as often as the others tests as many variants as its exposure allows.

    Singh et al. 2025, §4: proprietary providers are sampled at higher rates (Google and OpenAI each
    received about a fifth of the Arena's data; up to 68 times an academic lab's). Here a provider
    whose models have sampling weight ``weight`` tests variants one after another during a window of
    ``window`` arena battles, ``battles_per_variant`` votes each, as many as its share of the battles
    allows (at least one), and publishes the best-rated. [R]: the exposure-to-variants link is a
    reconstruction; the paper measures the asymmetry, not this mechanism.
    """

    id = "sampling-advantage"
    reference = "Singh et al. 2025, §4 (sampling asymmetry) with §3's best-of-N [R]"
    budget = "weight"
    budget_unit = "times the sampling rate of the others"
    default_budgets = (1, 2, 4, 8, 16, 68)
    _parameter_constraints = {"weight": [Interval(float, 1, None)], "window": [Interval(int, 1, None)],
                              "battles_per_variant": [Interval(int, 1, None)], "variant_spread": [Interval(float, 0, None)]}

    def __init__(self, weight: float = 4.0, window: int = 20000, battles_per_variant: int = 1000,
                 variant_spread: float = 0.0):
        self.weight = weight
        self.window = window
        self.battles_per_variant = battles_per_variant
        self.variant_spread = variant_spread

    def variants(self, client: ArenaClient) -> int:
        """How many variants the window's battles give a model of this weight."""
        return max(1, math.floor(self.window * client.battle_share(self.weight) / self.battles_per_variant))
