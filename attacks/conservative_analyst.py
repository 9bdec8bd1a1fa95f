from __future__ import annotations

from ladderlab.engines.analysts import ConservativeAnalyst as _Conservative
from ladderlab.engines.analysts import NaturalAnalyst
from ladderlab.params import Interval


class ConservativeAnalyst(_Conservative):
    """An honest team anchored on early released scores: later ones move it by (t+1)^(−p).

    Zrnic & Hardt 2019's conservative analyst (anchoring bias p), as our reconstruction
    of a participant (``ladderlab.engines.analysts``): a logistic model on its own view of the
    features, grown from training data, tuned by SPSA probes on the released scores
    with step sizes decaying as (t+1)^(−p).
    """

    id = "conservative-analyst"
    reference = "Zrnic & Hardt 2019 (conservative analyst, anchoring p); reconstruction"
    _parameter_constraints = {**NaturalAnalyst._parameter_constraints, "p": [Interval(float, 0, None, closed="neither")]}

    def __init__(self, p: float = 0.5, view: int = 8, grow_every: int = 10, batch: int = 5,
                 rho: float = 0.1, step: float = 1.0, submissions: int = 300):
        self.p = p
        self.view = view
        self.grow_every = grow_every
        self.batch = batch
        self.rho = rho
        self.step = step
        self.submissions = submissions
