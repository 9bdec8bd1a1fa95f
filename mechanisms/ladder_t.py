from __future__ import annotations

from ladderlab.engines.ladder import PairedTTestLadder


class TTestLadder(PairedTTestLadder):
    """The Ladder with a paired t-test at level α: release [R]_{1/n} when R < R_{t−1} − c_α·sd/√n.

    Chaibub Neto et al. 2016, Alg. 3 and Eq. 2, with c_α = t⁻¹_{n−1}(1 − α)
    (docs/decisions.md#t-test-threshold: the paper writes the lower quantile but needs c_α > 0). Give
    ``critical_value`` to set c directly (Alg. 3, line 2); it then overrides
    ``alpha``. c = 1 is the parameter-free Ladder.
    """

    id = "ladder-t"
    monotone = True
    reference = "Chaibub Neto et al. 2016, Alg. 3"
    _search_space = {"alpha": [0.01, 0.05, 0.15, 0.5]}

    def __init__(self, alpha: float | None = 0.15, critical_value: float | None = None):
        self.alpha = alpha
        self.critical_value = critical_value
