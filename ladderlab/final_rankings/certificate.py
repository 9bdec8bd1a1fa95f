"""How sure is a final ranking? Bootstrap intervals, the probability that the winner is best,
ranks as Chatbot Arena reports them, and the fewest private samples that change the winner.

From each team's counted submission on the private samples (:mod:`ladderlab.final_rankings.private_samples`):

- **bootstrap**: B resamples of the private samples, the same resample for every team (the
  teams are compared on the same test points, as the leaderboard compares them); a resample's
  scores are one product of its count weights with the per-sample losses (a scorer's
  ``on_resamples`` for other metrics). Percentile intervals of each team's score and rank
  (ranks with ties sharing the best, as ``rankdata(method="min")``), and each team's probability
  of being best: the share of resamples in which it scores best, a tie for first among t
  teams counting 1/t to each;
- **rank as Chatbot Arena reports it**: 1 + the number of teams whose whole interval is better
  than this team's (FastChat's ``elo_analysis.py``: a lower bound above this team's upper
  bound, for scores where larger is better);
- **the fewest removals**: the fewest private samples whose removal lets another team score
  strictly better than the winner (the first team of the input among those tied for the best
  score) on the samples left; at least one sample is left. As for the Ladders, scores within
  rounding error of each other are tied (docs/decisions.md#ties). Dropping two of 57,477 votes
  changes Chatbot Arena's top model (Huang et al. 2025).

**The fewest removals, exactly.** Where the score is an increasing function of the mean of a
per-sample risk r (every loss; accuracy, RMSE, sign agreement), a set R removed lets team j
beat the winner w iff Σ_{i∉R} d_i < 0 with d_i = r_{j,i} − r_{w,i} (every team's mean is over
the same samples), i.e. Σ_{i∈R} d_i > D = Σ_i d_i. Among sets of k samples the k largest d_i
maximise the left side, so the fewest for team j is the smallest k whose k largest
differences sum to more than D, and the answer is the smallest over j: exact, one sort per
team. The set found is checked with the scorer itself on the samples left. Other metrics (ROC
AUC, correlations) do not decompose: for the ``challengers`` teams closest to the winner a
greedy search removes, one at a time, the sample whose removal most narrows the gap, an
upper bound; every set smaller than the bound is then searched exhaustively for every team
where that takes at most ``exhaustive_limit`` evaluations, which makes the answer exact.
"""

from __future__ import annotations

import itertools
import textwrap
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special, stats

from ladderlab.engines.bootstrap import CHUNK_ELEMENTS, bootstrap_counts
from ladderlab.engines.ladder import TIE_TOLERANCE
from ladderlab.final_rankings.private_samples import PrivateSamples
from ladderlab.seeding import stream
from ladderlab.stats.interval_ranks import interval_rank
from ladderlab.utils.progress import progress_bar

FloatArray = NDArray[np.float64]
REPLICATES = 1000
LEVEL = 0.95
CHALLENGERS = 5
EXHAUSTIVE_LIMIT = 200_000
GREEDY_STEPS = 50


@dataclass(frozen=True)
class Removal:
    """The fewest private samples whose removal changes the winner (``count`` None: no set found)."""

    count: int | None
    challenger: str | None
    samples: list[Any]
    exact: bool
    method: str


@dataclass(frozen=True)
class RankingCertificate:
    """Per team (in the input's order): score and rank with their intervals, Arena rank, P(best)."""

    source: str
    score_name: str
    sign: float
    teams: list[str]
    n_samples: int
    replicates: int
    undefined: int
    """Resamples in which some team's score is undefined (left out of everything)."""
    level: float
    scores: FloatArray
    score_low: FloatArray
    score_high: FloatArray
    rank: NDArray[np.int64]
    rank_low: NDArray[np.int64]
    rank_high: NDArray[np.int64]
    arena_rank: NDArray[np.int64]
    p_best: FloatArray
    winner: int
    removal: Removal

    def table(self) -> pd.DataFrame:
        """One row per team, in rank order (the input's order among ties)."""
        frame = pd.DataFrame({
            "rank": self.rank, "team": self.teams, "score": self.scores, "score_low": self.score_low,
            "score_high": self.score_high, "rank_low": self.rank_low, "rank_high": self.rank_high,
            "arena_rank": self.arena_rank, "p_best": self.p_best,
        })
        return frame.iloc[np.argsort(self.rank, kind="stable")].reset_index(drop=True)

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.source, "score": self.score_name, "greater_is_better": self.sign < 0,
            "teams": len(self.teams), "private_samples": self.n_samples, "replicates": self.replicates,
            "undefined_replicates": self.undefined, "level": self.level, "winner": self.teams[self.winner],
            "winner_score": float(self.scores[self.winner]), "p_winner_best": float(self.p_best[self.winner]),
            "fewest_removals": asdict(self.removal),
        }


def certify_ranking(samples: PrivateSamples, rng: np.random.Generator, replicates: int = REPLICATES,
                    level: float = LEVEL, challengers: int = CHALLENGERS,
                    exhaustive_limit: int = EXHAUSTIVE_LIMIT, progress: bool | None = False,
                    search: bool = True) -> RankingCertificate:
    """The certificate of a final ranking (see the module docstring); ``progress`` shows the
    bootstrap's bar (None: when standard error is a terminal). ``search=False`` finds the fewest
    removals only where one sort per team finds them exactly (a score of a mean per-sample
    risk), and leaves them unknown for other metrics instead of searching."""
    if not 0 < level < 1:
        raise ValueError(f"--level must lie in (0, 1), got {level!r}")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise ValueError(f"--replicates must be a whole number ≥ 1, got {replicates!r}")
    sign = samples.sign
    scores = samples.scores()
    if not np.isfinite(scores).all():
        team = samples.teams[int(np.flatnonzero(~np.isfinite(scores))[0])]
        raise ValueError(f"{samples.source}: team {team!r}'s {samples.score_name} is undefined on the private samples")
    resampled = bootstrap_scores(samples, rng, replicates, progress)
    defined = np.isfinite(resampled).all(axis=1)
    if not defined.any():
        raise ValueError(f"{samples.source}: the {samples.score_name} is undefined in every bootstrap resample")
    kept = resampled[defined]
    risk = sign * kept
    ranks = stats.rankdata(risk, axis=1, method="min")
    tied_best = ~_better(risk.min(axis=1, keepdims=True), risk)   # within rounding error of the best
    p_best = (tied_best / tied_best.sum(axis=1, keepdims=True)).mean(axis=0)
    alpha = 1 - level
    low, high = np.quantile(kept, [alpha / 2, 1 - alpha / 2], axis=0)
    rank_low, rank_high = (np.quantile(ranks, q, axis=0, method="inverted_cdf").astype(np.int64)
                           for q in (alpha / 2, 1 - alpha / 2))
    risk_low, risk_high = np.minimum(sign * low, sign * high), np.maximum(sign * low, sign * high)
    arena = interval_rank(-risk_high, -risk_low)
    observed_risk = sign * scores
    return RankingCertificate(
        source=samples.source, score_name=samples.score_name, sign=sign, teams=list(samples.teams),
        n_samples=samples.size, replicates=replicates, undefined=int((~defined).sum()), level=level,
        scores=scores, score_low=low, score_high=high,
        rank=stats.rankdata(observed_risk, method="min").astype(np.int64), rank_low=rank_low, rank_high=rank_high,
        arena_rank=arena, p_best=p_best, winner=int(np.argmin(observed_risk)),
        removal=fewest_removals(samples, challengers, exhaustive_limit, search),
    )


def certificate_stream(seed: int, samples: PrivateSamples) -> np.random.Generator:
    """The bootstrap's random stream for ``samples`` under ``seed``: ``ladderlab stats rank-certificate``'s
    (``--seed``), and the served final board's (seed 0), so that the command run on the board's
    private losses gives back its intervals."""
    return stream(seed, "rank-certificate", samples.teams, samples.size)


def bootstrap_scores(samples: PrivateSamples, rng: np.random.Generator, replicates: int,
                     progress: bool | None = False) -> FloatArray:
    """Every team's score on ``replicates`` bootstrap resamples of the private samples (the same
    resamples for every team): replicates × teams; ``progress`` as :func:`ladderlab.utils.progress.progress_bar`."""
    out = np.empty((replicates, len(samples.teams)))
    start = 0
    with progress_bar(progress=progress, total=replicates, desc="bootstrap", unit="resample") as bar:
        for counts in bootstrap_counts(rng, replicates, samples.size):
            out[start : start + counts.shape[0]] = samples.resampled(counts)
            start += counts.shape[0]
            bar.update(counts.shape[0])
    return out


def fewest_removals(samples: PrivateSamples, challengers: int = CHALLENGERS,
                    exhaustive_limit: int = EXHAUSTIVE_LIMIT, search: bool = True) -> Removal:
    """The fewest private samples whose removal lets another team beat the winner (see the module
    docstring; ``search``: as :func:`certify_ranking`'s)."""
    risk = samples.sign * samples.scores()
    winner = int(np.argmin(risk))
    risks = samples.per_sample_risks()
    if risks is not None:
        return _exact_removal(samples, risks, winner)
    if not search:
        return Removal(None, None, [], False, f"not searched: the {samples.score_name} is not a mean of per-sample risks")
    return _searched_removal(samples, risk, winner, challengers, exhaustive_limit)


def _beaten(samples: PrivateSamples, winner: int, removed: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Which teams score strictly better than the winner once ``removed`` are left out."""
    keep = np.ones((1, samples.size))
    keep[0, removed] = 0.0
    risk = samples.sign * samples.resampled(keep)[0]
    return _better(risk, risk[winner])


def _better(risk: FloatArray, reference: FloatArray) -> NDArray[np.bool_]:
    """``risk`` below ``reference`` by more than rounding error (a tie otherwise: the Ladders' rule,
    :func:`ladderlab.engines.ladder.beats`), element by element; NaN is never better."""
    return risk < reference - TIE_TOLERANCE * np.maximum(1.0, np.abs(reference))


def _exact_removal(samples: PrivateSamples, risks: FloatArray, winner: int) -> Removal:
    best: tuple[int, int, NDArray[np.intp]] | None = None
    for team in range(len(samples.teams)):
        if team == winner:
            continue
        differences = risks[team] - risks[winner]
        order = np.argsort(-differences, kind="stable")
        left = differences.sum() - np.cumsum(differences[order])[:-1]   # the sum over the samples kept
        for k in np.flatnonzero(left < 0) + 1:
            if best is not None and k >= best[0]:
                break
            if _beaten(samples, winner, order[:k])[team]:   # the scorer agrees (not a rounding artefact)
                best = (int(k), team, order[:k])
                break
    method = "exact: the largest per-sample differences, for every team"
    if best is None:
        return Removal(None, None, [], True, method)
    return Removal(best[0], samples.teams[best[1]], [samples.sample_ids[i] for i in best[2]], True, method)


def _searched_removal(samples: PrivateSamples, risk: FloatArray, winner: int, challengers: int,
                      exhaustive_limit: int) -> Removal:
    closest = [int(j) for j in np.argsort(risk, kind="stable") if j != winner][:challengers]
    found: tuple[int, int, list[int]] | None = None
    for team in closest:
        removed = _greedy(samples, winner, team, GREEDY_STEPS if found is None else found[0] - 1)
        if removed is not None and (found is None or len(removed) < found[0]):
            found = (len(removed), team, removed)
    largest = (found[0] - 1) if found is not None else min(GREEDY_STEPS, samples.size - 1)
    searched = 0
    for k in range(1, largest + 1):
        cost = int(special.comb(samples.size, k, exact=True))
        if searched + cost > exhaustive_limit:
            method = (f"greedy over the {len(closest)} closest teams: an upper bound; sets of up to {k - 1} samples "
                      "searched exhaustively")
            if found is None:
                return Removal(None, None, [], False, method + f"; none of up to {GREEDY_STEPS} found greedily")
            return Removal(found[0], samples.teams[found[1]], [samples.sample_ids[i] for i in found[2]], False, method)
        searched += cost
        hit = _exhaustive(samples, winner, k)
        if hit is not None:
            return Removal(k, samples.teams[hit[0]], [samples.sample_ids[i] for i in hit[1]], True,
                           f"exact: every set of fewer than {k} samples searched")
    method = f"exact: greedy bound, and every smaller set searched ({searched} sets)"
    if found is None:
        return Removal(None, None, [], False, f"no set of up to {largest} samples changes the winner (searched exhaustively)")
    return Removal(found[0], samples.teams[found[1]], [samples.sample_ids[i] for i in found[2]], True, method)


def _greedy(samples: PrivateSamples, winner: int, team: int, steps: int) -> list[int] | None:
    """Remove, one at a time, the sample whose removal most narrows ``team``'s gap to the winner;
    the samples removed once ``team`` scores better, or None within ``steps``."""
    kept = np.ones(samples.size)
    removed: list[int] = []
    pair = np.array([winner, team])
    rows = max(1, CHUNK_ELEMENTS // samples.size)
    for _ in range(min(steps, samples.size - 2)):
        candidates = np.flatnonzero(kept)
        gaps, winner_risk = np.empty(candidates.size), np.empty(candidates.size)
        for start in range(0, candidates.size, rows):
            chunk = candidates[start : start + rows]
            keep = np.tile(kept, (chunk.size, 1))
            keep[np.arange(chunk.size), chunk] = 0.0
            risk = samples.sign * samples.resampled(keep, pair)
            gaps[start : start + chunk.size] = risk[:, 1] - risk[:, 0]
            winner_risk[start : start + chunk.size] = risk[:, 0]
        gaps[~np.isfinite(gaps)] = np.inf
        choice = int(np.argmin(gaps))
        kept[candidates[choice]] = 0.0
        removed.append(int(candidates[choice]))
        if _better(gaps[choice] + winner_risk[choice], winner_risk[choice]):
            return removed
    return None


def _exhaustive(samples: PrivateSamples, winner: int, k: int) -> tuple[int, list[int]] | None:
    """A team and a set of ``k`` samples whose removal lets it beat the winner, or None."""
    rows = max(1, CHUNK_ELEMENTS // samples.size)
    subsets = itertools.combinations(range(samples.size), k)
    while chunk := list(itertools.islice(subsets, rows)):
        keep = np.ones((len(chunk), samples.size))
        keep[np.repeat(np.arange(len(chunk)), k), np.array(chunk).ravel()] = 0.0
        risk = samples.sign * samples.resampled(keep)
        better = _better(risk, risk[:, [winner]])
        if better.any():
            row, team = (int(v) for v in np.argwhere(better)[0])
            return team, list(chunk[row])
    return None


def text_certificate(records: dict[str, Any], top: int | None = None, width: int = 100) -> str:
    """A certificate (:func:`certificate_records`) for a terminal, at most ``width`` columns."""
    def wrap(text: str) -> list[str]:
        return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False)

    removal = records["fewest_removals"]
    percent = f"{records['level']:.0%}"
    lines = wrap(f"{records['source']}: {records['teams']} teams, {records['private_samples']} private samples, "
                          f"{records['score']} ({'larger' if records['greater_is_better'] else 'smaller'} is better); "
                          f"{records['replicates']} bootstrap resamples, {percent} percentile intervals")
    if records["undefined_replicates"]:
        lines.append(f"left out: {records['undefined_replicates']} resamples in which a score is undefined")
    tied = [row["team"] for row in records["ranking"] if row["rank"] == 1 and row["team"] != records["winner"]]
    tie = f", tied with {', '.join(tied)} (the first of them in the input's order)" if tied else ""
    lines += wrap(f"winner: {records['winner']} ({records['winner_score']:.6g}){tie}; probability that it is "
                           f"best: {records['p_winner_best']:.3f}")
    if removal["count"] is None:
        found = f"fewest private samples whose removal changes the winner: none found ({removal['method']})"
    else:
        found = (f"fewest private samples whose removal changes the winner: {'exactly' if removal['exact'] else 'at most'} "
                 f"{removal['count']}, after which {removal['challenger']} scores better ({removal['method']}); "
                 "samples: " + ", ".join(map(str, removal["samples"][:12])) + (", …" if len(removal["samples"]) > 12 else ""))
    lines += wrap(found)
    table = pd.DataFrame(records["ranking"][:top])
    team_width = max(len("team"), *table.team.map(lambda t: min(len(t), 36)))
    shown = pd.DataFrame({
        "rank": table["rank"].map(str),
        "team".ljust(team_width): table.team.map(lambda t: (t if len(t) <= 36 else t[:35] + "…").ljust(team_width)),
        "score": table.score.map(lambda v: f"{v:.5f}"),
        f"{percent} interval": [f"[{lo:.5f}, {hi:.5f}]" for lo, hi in zip(table.score_low, table.score_high)],
        "rank interval": [f"{lo}–{hi}" for lo, hi in zip(table.rank_low, table.rank_high)],
        "Arena rank": table.arena_rank.map(str),
        "P(best)": table.p_best.map(lambda v: f"{v:.3f}"),
    })
    lines += ["", *shown.to_string(index=False).splitlines()]
    lines += wrap("Arena rank: 1 + the number of teams whose whole interval is better (Chatbot Arena's "
                           "rule); P(best): the share of resamples in which the team scores best")
    return "\n".join(lines) + "\n"


def certificate_records(certificate: RankingCertificate) -> dict[str, Any]:
    """The certificate as JSON-ready data: its summary and one record per team."""
    teams = certificate.table()
    records = [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()} for row in teams.to_dict(orient="records")]
    return {**certificate.summary(), "ranking": records}
