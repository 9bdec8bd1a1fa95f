from __future__ import annotations

from ladderlab.engines.analysts import NaturalAnalyst
from ladderlab.engines.analysts import ProgressiveAnalyst as _Progressive
from ladderlab.params import Interval


class ProgressiveAnalyst(_Progressive):
    """An honest team whose updates forget old released scores geometrically (recency λ).

    Zrnic & Hardt 2019's progressive analyst, as our reconstruction of a participant
    (``ladderlab.engines.analysts``): a logistic model on its own view of the features, grown
    from training data, tuned by SPSA probes on the released scores with a
    λ-contraction to its training fit. λ = 0 uses only the last batch; λ → 1 is
    fully adaptive hill climbing.
    """

    id = "progressive-analyst"
    reference = "Zrnic & Hardt 2019 (progressive analyst, recency bias λ); reconstruction"
    _parameter_constraints = {**NaturalAnalyst._parameter_constraints, "lam": [Interval(float, 0, 1, closed="left")]}

    def __init__(self, lam: float = 0.9, view: int = 8, grow_every: int = 10, batch: int = 5,
                 rho: float = 0.1, step: float = 1.0, submissions: int = 300):
        self.lam = lam
        self.view = view
        self.grow_every = grow_every
        self.batch = batch
        self.rho = rho
        self.step = step
        self.submissions = submissions
