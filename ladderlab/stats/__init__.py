"""Statistics of a leaderboard's winner: multiplicity-adjusted state of the art
(Møllersen & Holsbø) and accuracy extrapolation to more classes (Zheng, Achanta & Benjamini, *How
many faces can be recognized? Performance extrapolation for multi-class classification*,
arXiv:1606.05228)."""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    **dict.fromkeys(("METHODS", "accuracy_curve", "exponential_extrapolation", "high_dimensional_extrapolation",
                     "outscored_counts", "unbiased_accuracy"), "extrapolation"),
    **dict.fromkeys(("InfeasibleConstraints", "PseudolikelihoodFit", "constrained_pseudolikelihood",
                     "maximum_pseudolikelihood"), "pseudolikelihood"),
    **dict.fromkeys(("BestOfM", "SotaEstimate", "best_of_m", "estimate_sota", "read_numbers", "simulate_best_of_m"),
                    "sota"),
}
"""Each name this package exports and its module, imported on first use: the foundations import
``ladderlab.stats.bounds``, which must not load SciPy's statistics for ``ladderlab --help``."""

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'ladderlab.stats' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ladderlab.stats.{_HOME[name]}"), name)
