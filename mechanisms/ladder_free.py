from __future__ import annotations

from ladderlab.engines.ladder import PairedTTestLadder


class ParameterFreeLadder(PairedTTestLadder):
    """The parameter-free Ladder: release [R]_{1/n} when R < R_{t−1} − sd(l_t − l_{t−1})/√n.

    Blum & Hardt 2015, Fig. 2; Chaibub Neto et al. 2016, Alg. 2. Roughly a one-sided
    paired t-test at level 0.15 (critical value 1). Needs a per-sample loss.
    """

    id = "ladder-free"
    monotone = True
    reference = "Blum & Hardt 2015, Fig. 2; Chaibub Neto et al. 2016, Alg. 2"
    _parameter_constraints = {}

    def _check_params(self) -> None:
        """No parameters: c = 1."""

    def _critical_value(self) -> float:
        return 1.0

    def _largest_critical_value(self, n: int) -> float:
        return 1.0
