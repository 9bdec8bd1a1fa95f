"""What the final leaderboard of one competition replication says.

For teams ranked on their main accounts (:class:`~ladderlab.competition.CompetitionResult`):

- shake-up: Spearman's ρ and Kendall's τ between public and private scores, and the
  overlap of the public and private top 10 (1: same teams);
- does the truly best team win: the team whose counted submission has the best
  population score, its private rank, and the population rank of the private winner;
- the winner's Δ = its public score − its private score (Chaibub Neto et al.'s Δ for
  the team that takes the prize), and the private rank of the public winner;
- leaderboard error (Blum & Hardt 2015, Def. 2.1, with population scores): per team
  max_t |min_{i≤t} R(f_i) − R_t| over its main account, then the maximum and the
  median over teams;
- honest utility: Spearman's ρ between the honest teams' public scores and their
  population scores (a mechanism that hides information costs them ranking quality);
- state of the art: the multiplicity-adjusted estimate (Møllersen & Holsbø v2, Sec. 5,
  :func:`ladderlab.stats.estimate_sota`) from the final private accuracies, beside the
  observed best private accuracy and the true best population accuracy (0/1 loss and
  accuracy only; NaN otherwise);
- the public winner's private rank (1: the public leaderboard's leader also wins);
- the top teams' public–private gaps against sampling noise (Roelofs et al., NeurIPS 2019,
  :func:`sampling_noise_gaps`), where the task knows P(y = 1 | x) and the score is the 0/1 loss
  or accuracy;
- per team group: mean public and private rank, the best private rank, mean Δ, the
  first round a team of the group leads the public leaderboard, the first round
  one shows a perfect public score (0 loss, accuracy 1; within half the released
  precision), the share of its teams whose final public score is perfect, the mean
  last round its teams submitted in (for the log-loss oracle, which shows its perfect
  score only with its final prediction: the day its decoding was done) and the mean z of
  its public–private gaps (:func:`sampling_noise_gaps`).
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from ladderlab.competition.engine import CompetitionResult
from ladderlab.stats import estimate_sota

FloatArray = NDArray[np.float64]
TOP = 10
GAP_MEASURES = ("noise_sd", "gap_all_z_mean", "gap_all_within_noise", "gap_top_mean", "gap_top_z_mean",
                "gap_top_within_noise")
MEASURE_NAMES = (
    "spearman", "kendall", "top10_overlap", "best_team_wins", "best_team_private_rank",
    "winner_population_rank", "winner_delta", "leaderboard_error", "leaderboard_error_median",
    "honest_utility", "sota_estimate", "sota_observed", "sota_true", "public_winner_private_rank", *GAP_MEASURES,
)
TOP_SHARE = 0.1
"""The truly best teams whose gaps :func:`sampling_noise_gaps` examines (a tenth, at least 10)."""
WITHIN_NOISE = 1.959963984540054
"""|z| within the central 95% of the standard normal distribution."""


def ranks(risks: FloatArray) -> NDArray[np.int64]:
    """1-based ranks, smaller risk first; tied teams share the best rank ("min")."""
    return stats.rankdata(risks, method="min").astype(np.int64)


def rank_correlations(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """Spearman's ρ and Kendall's τ-b (NaN when either side is constant or too short), from integer
    counts: each is a ratio p / √q of whole numbers, so identical or reversed rankings give ±1 and
    unrelated ones 0 exactly, and any other value is correctly rounded (scipy's floating-point sums
    give 0.9999999999999999 for identical rankings of 5, 10 or 24 teams)."""
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan"), float("nan")
    return _spearman(a, b), _kendall_tau_b(a, b)


def _spearman(a: FloatArray, b: FloatArray) -> float:
    """Pearson's correlation of the average ranks (doubled: whole numbers), as spearmanr defines ρ."""
    x = (2 * stats.rankdata(a)).astype(np.int64)
    y = (2 * stats.rankdata(b)).astype(np.int64)
    n, sx, sy = x.size, int(x.sum()), int(y.sum())
    covariance = n * int(x @ y) - sx * sy
    return _ratio(covariance, (n * int(x @ x) - sx * sx) * (n * int(y @ y) - sy * sy))


_PAIR_BLOCK = 1 << 22
"""Pairs compared at once by :func:`_kendall_tau_b`."""


def _kendall_tau_b(a: FloatArray, b: FloatArray) -> float:
    """(concordant − discordant pairs) / √((pairs − ties in a)(pairs − ties in b)), as kendalltau's τ-b."""
    n = a.size
    step = max(1, _PAIR_BLOCK // n)
    balance = sum(int(np.sum(np.sign(a[i : i + step, None] - a[None]).astype(np.int8)
                             * np.sign(b[i : i + step, None] - b[None]).astype(np.int8), dtype=np.int64))
                  for i in range(0, n, step)) // 2
    pairs = n * (n - 1) // 2
    return _ratio(balance, (pairs - _tied_pairs(a)) * (pairs - _tied_pairs(b)))


def _tied_pairs(values: FloatArray) -> int:
    counts = np.unique(values, return_counts=True)[1].astype(np.int64)
    return int(np.sum(counts * (counts - 1) // 2))


def _ratio(numerator: int, squared_denominator: int) -> float:
    """numerator / √squared_denominator, correctly rounded: exactly ±1 when numerator² equals it."""
    with decimal.localcontext() as context:
        context.prec = 60
        return float(decimal.Decimal(numerator) / decimal.Decimal(squared_denominator).sqrt())


def top_overlap(public_risk: FloatArray, private_risk: FloatArray, k: int = TOP) -> float:
    """|top-k public ∩ top-k private| / k, k at most the number of teams (ties: earlier team first)."""
    k = min(k, public_risk.size)
    first = set(np.argsort(public_risk, kind="stable")[:k].tolist())
    second = set(np.argsort(private_risk, kind="stable")[:k].tolist())
    return len(first & second) / k


def accuracies(scores: FloatArray, scorer: str) -> FloatArray | None:
    """Scores as accuracies for the state-of-the-art estimate, or None for other metrics."""
    if scorer == "zero-one":
        return 1.0 - scores
    if scorer == "accuracy":
        return scores.copy()
    return None


def sota(result: CompetitionResult, rng: np.random.Generator, repetitions: int = 1000) -> dict[str, float]:
    """Multiplicity-adjusted state of the art of the private leaderboard, the observed best
    and the true best population accuracy (NaN for metrics that are not accuracies)."""
    return state_of_the_art(result.private, result.scorer, result.n_private, rng, repetitions, result.best_population)


def state_of_the_art(private_scores: FloatArray, scorer: str | None, n_private: int | None, rng: np.random.Generator,
                     repetitions: int = 1000, best_population: float = float("nan")) -> dict[str, float]:
    """Møllersen & Holsbø v2 Sec. 5's estimate from the private scores of ``n_private`` test
    points, the observed best, and the true best population accuracy where it is known; all
    NaN for metrics that are not accuracies, fewer than two teams or an unknown test size."""
    private, best = accuracies(private_scores, scorer), accuracies(np.array([best_population]), scorer)
    if private is None or best is None or private.size < 2 or n_private is None:
        return {"sota_estimate": float("nan"), "sota_observed": float("nan"), "sota_true": float("nan")}
    estimate = estimate_sota(private, n_private, rng, repetitions=repetitions, bootstrap=0)
    return {"sota_estimate": estimate.estimate, "sota_observed": float(private.max()), "sota_true": float(best[0])}


def leaderboard_measures(public: FloatArray, private: FloatArray, sign: float) -> dict[str, float]:
    """The shake-up of one final leaderboard, its teams in leaderboard order (a tie goes to the
    earlier team): Spearman's ρ and Kendall's τ of the public and private scores, the top-10
    overlap, the private winner's public − private score (``winner_delta``) and the private
    rank of the public winner."""
    public_risk, private_risk = sign * public, sign * private
    spearman, kendall = rank_correlations(public_risk, private_risk)
    winner, public_winner = int(np.argmin(private_risk)), int(np.argmin(public_risk))
    return {
        "spearman": spearman,
        "kendall": kendall,
        "top10_overlap": top_overlap(public_risk, private_risk),
        "winner_delta": float(public[winner] - private[winner]),
        "public_winner_private_rank": float(ranks(private_risk)[public_winner]),
    }


def group_measures(result: CompetitionResult) -> dict[str, dict[str, float]]:
    """Per team group (label): ranks, Δ and the rounds at which it leads and is perfect."""
    sign = result.sign
    public_ranks, private_ranks = ranks(sign * result.public), ranks(sign * result.private)
    by_round = sign * result.public_by_round
    leading = np.isclose(by_round, np.nanmin(by_round, axis=0, initial=np.inf, where=~np.isnan(by_round)))
    perfect_value = 0.0 if sign > 0 else 1.0
    tolerance = (result.precision or 0.0) / 2 + 1e-12
    perfect = np.abs(result.public_by_round - perfect_value) <= tolerance
    final_perfect = np.abs(result.public - perfect_value) <= tolerance
    last_round = np.full(len(result.labels), np.nan) if result.last_round is None else result.last_round
    scored = gap_z_scores(result)
    z = np.full(len(result.labels), np.nan) if scored is None else scored[1]
    labels = np.array(result.labels)
    groups = {}
    for label in dict.fromkeys(result.labels):
        members = labels == label

        def first_round(mask: NDArray[np.bool_]) -> float:
            hits = np.flatnonzero(mask[members].any(axis=0))
            return float(hits[0] + 1) if hits.size else float("nan")

        groups[label] = {
            "teams": int(members.sum()),
            "public_rank_mean": float(public_ranks[members].mean()),
            "private_rank_mean": float(private_ranks[members].mean()),
            "private_rank_best": float(private_ranks[members].min()),
            "delta_mean": float((result.public - result.private)[members].mean()),
            "private_mean": float(result.private[members].mean()),
            "population_mean": float(result.population[members].mean()),
            "first_leading_round": first_round(leading),
            "first_perfect_round": first_round(perfect),
            "final_perfect": float(final_perfect[members].mean()),
            "last_round_mean": float(np.nanmean(last_round[members])) if np.isfinite(last_round[members]).any()
            else float("nan"),
            "gap_z_mean": float(z[members].mean()),
        }
    return groups


def sampling_noise_gaps(result: CompetitionResult) -> dict[str, float]:
    """The public–private gaps of the teams' counted submissions against sampling noise (Roelofs et al. 2019).

    A team's gap is its counted submission's exact public score minus its private score, signed so that
    positive means the public score looked better (accuracy public − private for the 0/1 loss). Were
    the submission fixed in advance, public and private scores would be independent means of
    Bernoulli errors at the known P(y = 1 | x): the gap would have mean μ, the submission's expected
    score on the private rows minus on the public rows, and sd σ = (σ_pub² + σ_priv²)^½, the same for
    every submission (``noise_sd``). z = (gap − μ)/σ is then standard normal (to the normal
    approximation of a binomial), whatever other teams submitted: without adaptive overfitting its
    mean is 0 and 95% of the z lie within ±1.96, for every team and for any group chosen without
    looking at the noise.

    - ``gap_all_z_mean``, ``gap_all_within_noise``: over every team, the mean z and the share with |z| ≤ 1.96;
    - ``gap_top_mean``, ``gap_top_z_mean``, ``gap_top_within_noise``: the same for the truly best tenth of
      the teams (by the population score of the counted submission, at least 10 teams), the gap also in
      score units. Choosing the top by public score instead would add the winner's curse of the public
      noise itself.

    NaN where the task has no closed form (another score, no known probabilities)."""
    scored = gap_z_scores(result)
    if scored is None:
        return dict.fromkeys(GAP_MEASURES, float("nan"))
    gap, z, sd = scored
    top = np.argsort(result.sign * result.population, kind="stable")[: min(z.size, max(10, math.ceil(TOP_SHARE * z.size)))]
    return {
        "noise_sd": sd,
        "gap_all_z_mean": float(z.mean()),
        "gap_all_within_noise": float(np.mean(np.abs(z) <= WITHIN_NOISE)),
        "gap_top_mean": float(gap[top].mean()),
        "gap_top_z_mean": float(z[top].mean()),
        "gap_top_within_noise": float(np.mean(np.abs(z[top]) <= WITHIN_NOISE)),
    }


def gap_z_scores(result: CompetitionResult) -> tuple[FloatArray, FloatArray, float] | None:
    """Every team's gap, its z and σ (:func:`sampling_noise_gaps`), or None without a closed form."""
    if result.public_exact is None or not math.isfinite(result.public_noise_sd):
        return None
    sign, n_public, n_private = result.sign, result.n_public, result.n_private
    population_private = ((n_public + n_private) * result.population - n_public * result.population_public) / n_private
    gap = -sign * (result.public_exact - result.private)
    expected = -sign * (result.population_public - population_private)
    sd = math.hypot(result.public_noise_sd, result.private_noise_sd)
    return gap, (gap - expected) / sd, sd


def measures(result: CompetitionResult, rng: np.random.Generator, sota_repetitions: int = 1000) -> dict[str, Any]:
    """Every measure of one replication (see the module docstring), plus ``groups``."""
    sign = result.sign
    public_risk, private_risk, population_risk = sign * result.public, sign * result.private, sign * result.population
    private_ranks = ranks(private_risk)
    winner = int(np.argmin(private_risk))
    truly_best = np.flatnonzero(population_risk == population_risk.min())
    unique_best = truly_best.size == 1
    honest = np.asarray(result.honest, dtype=bool)
    utility = rank_correlations(public_risk[honest], population_risk[honest])[0] if honest.sum() >= 2 else float("nan")
    return {
        **leaderboard_measures(result.public, result.private, sign),
        "best_team_wins": float(winner == truly_best[0]) if unique_best else float("nan"),
        "best_team_private_rank": float(private_ranks[truly_best[0]]) if unique_best else float("nan"),
        "winner_population_rank": float(ranks(population_risk)[winner]),
        "leaderboard_error": float(np.max(result.leaderboard_errors)),
        "leaderboard_error_median": float(np.median(result.leaderboard_errors)),
        "honest_utility": utility,
        **sota(result, rng, sota_repetitions),
        "public_winner_private_rank": float(private_ranks[int(np.argmin(public_risk))]),
        **sampling_noise_gaps(result),
        "groups": group_measures(result),
    }
