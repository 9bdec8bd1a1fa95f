"""Statistics of a leaderboard's winner: multiplicity-adjusted state of the art
(Møllersen & Holsbø) and accuracy extrapolation to more classes (Zheng, Achanta & Benjamini)."""

from ladderlab.stats.extrapolation import (
    exponential_extrapolation,
    high_dimensional_extrapolation,
    outscored_counts,
    unbiased_accuracy,
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
    "BestOfM",
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
