"""Statistics of a leaderboard's winner: multiplicity-adjusted state of the art
(Møllersen & Holsbø) and accuracy extrapolation to more classes (Zheng, Achanta & Benjamini, *How
many faces can be recognized? Performance extrapolation for multi-class classification*,
arXiv:1606.05228)."""

from ladderlab.stats.extrapolation import (
    METHODS,
    accuracy_curve,
    exponential_extrapolation,
    high_dimensional_extrapolation,
    outscored_counts,
    unbiased_accuracy,
)
from ladderlab.stats.pseudolikelihood import (
    InfeasibleConstraints,
    PseudolikelihoodFit,
    constrained_pseudolikelihood,
    maximum_pseudolikelihood,
)
from ladderlab.stats.sota import (
    BestOfM,
    SotaEstimate,
    best_of_m,
    estimate_sota,
    read_numbers,
    simulate_best_of_m,
)

__all__ = [
    "METHODS",
    "BestOfM",
    "InfeasibleConstraints",
    "PseudolikelihoodFit",
    "accuracy_curve",
    "constrained_pseudolikelihood",
    "maximum_pseudolikelihood",
    "SotaEstimate",
    "best_of_m",
    "estimate_sota",
    "exponential_extrapolation",
    "high_dimensional_extrapolation",
    "outscored_counts",
    "read_numbers",
    "simulate_best_of_m",
    "unbiased_accuracy",
]
