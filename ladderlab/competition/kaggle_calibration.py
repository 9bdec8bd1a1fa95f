"""What real Kaggle competitions look like, in numbers derived from public data, with their sources.

Three sources, none of them shipped (they are not ours to ship); only numbers derived from them
are, each with where it comes from:

- **CHAMPS** (*Predicting Molecular Properties*, Kaggle 2019, 91 days, 2,736 teams): the public
  leaderboard's history, every improvement of every team's best public score with its time,
  in ``analysis/data/champs-scalar-coupling-publicleaderboard_with_dummies.csv`` of
  github.com/larsbratholm/champs_kaggle (Bratholm et al. 2021, MIT licence; the file adds one
  dummy row before each team's first entry, left out here). From it: when teams arrive
  (:data:`ARRIVAL`, the first entry as a share of the competition), how long they stay
  (:data:`STAY`, from the first to the last improvement, as a share of the time left when
  they arrived) and how often their public best improves (:data:`IMPROVEMENTS`).
- **Final leaderboards** of Kaggle competitions, public and private, as saved by Varoquaux &
  Cheplygina for *Machine learning for medical imaging: methodological failures and
  recommendations for the future* (npj Digital Medicine 2022), in ``kaggle/*.html`` of
  github.com/GaelVaroquaux/ml_med_imaging_failures (no licence: numbers only). From them:
  submissions per team (the leaderboards' "Entries", :data:`ENTRIES`, pooled over the three
  single-stage competitions with about a thousand teams each) and every competition's shake-up
  (:data:`REAL_LEADERBOARDS`).
- Kaggle's rules: 5 submissions a day is the usual quota, two selected submissions, the best
  private score of the two counting; a team that selects none gets its best public ones.

A distribution is given by quantiles at :data:`LEVELS`, and drawn by inverse transform with
linear interpolation between them (:func:`quantile`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ladderlab.seeding import stream

LEVELS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85,
          0.9, 0.95, 0.99, 1.0)
"""The levels of every quantile table below (0 and 1: the smallest and largest value observed)."""

ENTRIES = (1, 1, 1, 1, 1, 2, 2, 3, 3, 4, 5, 7, 9, 11, 14, 19, 26, 35, 53, 92, 205, 359)
"""Submissions per team on the final leaderboards of Ultrasound Nerve Segmentation (2016, 922
teams), PANDA prostate cancer grading (2020, 1,010 teams) and SIIM-FISABIO-RSNA COVID-19
detection (2021, 1,305 teams), pooled (3,237 teams; mean 19.8): half the teams make 5 or fewer,
a tenth more than 53. Within a competition the teams that submit more finish higher
(Spearman's ρ of entries and standing 0.73, 0.28, 0.42)."""

ARRIVAL = (0.0, 0.011, 0.035, 0.062, 0.093, 0.131, 0.167, 0.214, 0.252, 0.295, 0.334, 0.385, 0.436, 0.495,
           0.567, 0.635, 0.724, 0.808, 0.87, 0.919, 0.994, 1.0)
"""CHAMPS: a team's first public score, as a share of the competition's length (2,736 teams):
a third of the teams have arrived after a third of the time, a tenth arrive in its last 13%."""

STAY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.005, 0.026, 0.07, 0.128, 0.218, 0.357, 0.524, 0.685, 0.836, 0.903,
        0.94, 0.971, 0.988, 0.997, 1.0, 1.0)
"""CHAMPS: the time from a team's first to its last public improvement, as a share of the time
left when it arrived: a quarter of the teams never improve after their first day's entries,
half stay less than a fifth of the time left; the top tenth stay to the end (median 0.99)."""

IMPROVEMENTS = (1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 9, 11, 14, 20, 30, 57, 124)
"""CHAMPS: how many times a team's best public score improved (its first score included): median
4, a tenth of the teams 20 or more; the top tenth of the final leaderboard 25 (median). For
comparison with a simulated population, not an input to it."""


@dataclass(frozen=True)
class RealLeaderboard:
    """The shake-up of one Kaggle competition's final leaderboards, over the teams on both.

    ``winner_gap``: the private winner's public minus private score, signed so that positive means
    the public score looked better, in the metric's units; ``top_gap_sd``: the standard deviation of
    that gap over the private top tenth (at least 10 teams), the public–private sampling noise where
    the top teams did not overfit; ``top10_spread_in_sd``: the private scores of the 1st and the 10th
    team apart, in units of ``top_gap_sd`` (how far apart in skill the top teams are, relative to the
    sampling noise)."""

    key: str
    title: str
    year: int
    metric: str
    stage: str
    """``single``: one test set split into public and private parts; ``two-stage``: the private
    leaderboard scores a second test set released at the end."""
    teams: int
    spearman: float
    kendall: float
    top10_overlap: float
    public_winner_private_rank: int
    winner_gap: float
    top_gap_sd: float
    top10_spread_in_sd: float


REAL_LEADERBOARDS = (
    RealLeaderboard("ultrasound-nerve-segmentation", "Ultrasound Nerve Segmentation", 2016, "Dice", "single",
                    921, 0.973, 0.898, 0.6, 2, -0.0087, 0.00989, 1.62),
    RealLeaderboard("prostate-cancer-grade-assessment", "PANDA prostate cancer grading", 2020, "quadratic weighted kappa",
                    "single", 996, 0.824, 0.704, 0.3, 37, -0.03006, 0.01269, 0.83),
    RealLeaderboard("siim-covid19-detection", "SIIM-FISABIO-RSNA COVID-19 detection", 2021, "mAP", "single",
                    1305, 0.964, 0.911, 0.8, 1, 0.023, 0.00455, 2.42),
    RealLeaderboard("mlsp-2014-mri", "MLSP 2014 schizophrenia classification", 2014, "AUC", "single",
                    313, 0.408, 0.288, 0.0, 249, -0.22285, 0.06743, 0.46),
    RealLeaderboard("data-science-bowl-2017", "Data Science Bowl 2017", 2017, "log loss", "two-stage",
                    394, 0.225, 0.161, 0.0, 300, -0.2155, 0.11757, 0.35),
    RealLeaderboard("siim-acr-pneumothorax-segmentation", "SIIM-ACR pneumothorax segmentation", 2019, "Dice",
                    "two-stage", 350, 0.626, 0.458, 0.0, 155, 0.0306, 0.00917, 0.70),
    RealLeaderboard("rsna-pneumonia-detection-challenge", "RSNA pneumonia detection", 2018, "mAP", "two-stage",
                    344, 0.496, 0.354, 0.0, 46, -0.15059, 0.04026, 0.74),
    RealLeaderboard("rsna-intracranial-hemorrhage-detection", "RSNA intracranial hemorrhage detection", 2019,
                    "log loss", "two-stage", 432, -0.001, -0.009, 0.1, 6, -0.55348, 0.21675, 0.02),
)
"""Final public and private leaderboards (Varoquaux & Cheplygina's ``kaggle/*.html``): Spearman's
ρ and Kendall's τ of the teams' public and private scores, the overlap of the public and private
top 10, the public winner's private rank, and the winner's gap (:class:`RealLeaderboard`)."""


def leaderboard_shakeup(public: NDArray[np.float64], private: NDArray[np.float64], sign: float) -> dict[str, float]:
    """The statistics of :class:`RealLeaderboard` for one pair of final leaderboards (``sign`` +1 when
    smaller scores are better): how :data:`REAL_LEADERBOARDS` were computed, and how a simulated
    competition is compared with them."""
    from scipy import stats  # imported here: scipy.stats is slow to import

    public_risk, private_risk = sign * public, sign * private
    public_order, private_order = np.argsort(public_risk, kind="stable"), np.argsort(private_risk, kind="stable")
    gap = -sign * (public - private)
    top_gap_sd = float(np.std(gap[private_order[: max(10, private.size // 10)]], ddof=1))
    winner = private_order[0]
    return {
        "spearman": float(stats.spearmanr(public, private).statistic),
        "kendall": float(stats.kendalltau(public, private).statistic),
        "top10_overlap": len(set(public_order[:10].tolist()) & set(private_order[:10].tolist())) / 10,
        "public_winner_private_rank": float(stats.rankdata(private_risk, method="min")[public_order[0]]),
        "winner_gap_in_sd": float(gap[winner]) / top_gap_sd,
        "top10_spread_in_sd": abs(float(private[private_order[0]] - private[private_order[9]])) / top_gap_sd,
    }


def quantile(table: tuple[float, ...], u: float | NDArray[np.float64]) -> float | NDArray[np.float64]:
    """The value at level ``u`` of a quantile table at :data:`LEVELS` (linear in between)."""
    return np.interp(u, LEVELS, table)


@dataclass(frozen=True)
class Schedule:
    """When one team may submit: from round ``first`` to round ``last`` (0-based, inclusive), at most
    ``daily`` a round and ``total`` in all."""

    first: int
    last: int
    daily: int
    total: int


def kaggle_schedule(rounds: int, per_round: int, cap: int, rng: np.random.Generator) -> Schedule:
    """A team's schedule drawn like a Kaggle team's: it arrives at a share of the competition drawn
    from :data:`ARRIVAL`; its effort, one uniform draw, sets both the submissions it makes
    (:data:`ENTRIES`) and the share of the time left that it stays (:data:`STAY`): the teams that
    submit more also stay longer. It spreads its submissions evenly over the rounds it stays,
    within the rules' daily quota and cap."""
    arrival, effort = rng.random(2)
    first = min(rounds - 1, math.floor(float(quantile(ARRIVAL, arrival)) * rounds))
    stays = max(1, math.ceil(float(quantile(STAY, effort)) * (rounds - first)))
    entries = max(1, round(float(quantile(ENTRIES, effort))))
    daily = min(per_round, math.ceil(entries / stays))
    return Schedule(first, first + stays - 1, daily, min(entries, cap, stays * daily))


ACTIVITIES = {"kaggle": kaggle_schedule}
"""Named activity profiles a team entry can take (``TeamSpec.activity``)."""


@functools.cache
def mean_submissions(activity: str, rounds: int, per_round: int, cap: int, teams: int = 4096) -> float:
    """The mean number of submissions of ``teams`` teams with this activity profile, drawn from a
    stream of their own (for work estimates: a Monte Carlo mean, within a few per cent)."""
    rng = stream(0, "work estimate", activity, rounds, per_round, cap)
    draw = ACTIVITIES[activity]
    return float(np.mean([draw(rounds, per_round, cap, rng).total for _ in range(teams)]))
