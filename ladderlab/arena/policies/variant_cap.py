from __future__ import annotations

from ladderlab.arena.policies.plain_board import PlainBoard
from ladderlab.params import Boolean, Interval


class VariantCap(PlainBoard):
    """A public cap on the private variants a provider may test before it publishes.

    Singh et al. 2025's recommendation (a limit on private testing per provider, the limit made
    public); otherwise the plain board.
    """

    id = "variant-cap"
    reference = "Singh et al. 2025, recommendations (cap private variants per provider)"
    _parameter_constraints = {"max_variants": [Interval(int, 1, None)], "retraction": [Boolean()]}

    def __init__(self, max_variants: int = 3, retraction: bool = True):
        self.max_variants = max_variants
        self.retraction = retraction

    def variants_allowed(self) -> int:
        return self.max_variants
