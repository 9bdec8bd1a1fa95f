"""The fewest votes whose removal changes the top model (Huang, Shen, Wei & Broderick 2025).

Huang et al. (arXiv:2508.11847) showed that dropping two of Chatbot Arena's 57,477 human votes can
change its top model. Here: the winner w is the top model of the maximum-likelihood Bradley–Terry
ratings (ties counted as halves, as FastChat counts them), and a set of votes *changes the top
model* when, refitted without them, another model is rated strictly above w. A removal after which
some rating is no longer finite (a model then won or lost all its remaining battles) is not counted.
Votes of the same pair and outcome are interchangeable, so a removal is a count per *cell*.

Three parts, each a statement with its error:

- **an upper bound U, with its votes**: for each of the ``challengers`` models closest to w, votes
  are removed greedily, each round the cell whose one-vote removal narrows the gap to w most by
  Huang et al.'s one-step-Newton influence (Sherman–Morrison: Δr = −α (y − σ) H⁻¹x / (1 − h)),
  as many at a time as that influence says the gap allows, refitting exactly after each round; the
  last round is bisected to its fewest votes. The set found is checked by a refit, so U is
  attained: at most U votes change the top model;
- **a lower bound L**: no set of fewer than L votes can. Removing k votes moves the ratings by
  Δr = −H̄⁻¹ g with ‖g‖ in the H⁻¹ norm at most Q_k = the sum of the k largest α |y − σ| ‖x‖_{H⁻¹}
  over the votes; the Hessian along the way is at least e^{−D} (1 − ε_k) H, ε_k the sum of the
  k largest leverages α² σ(1 − σ) xᵀH⁻¹x and D ≤ −W₀(−c) (Lambert's W) the largest change of a
  compared pair's log-odds, c = ρ Q_k / (1 − ε_k) with ρ = max α ‖x‖_{H⁻¹}. So the gap to model c
  shrinks by at most e^D ‖e_w − e_c‖_{H⁻¹} Q_k / (1 − ε_k), and L is the fewest k for which that
  reaches some gap (where c ≥ 1/e or ε_k ≥ 1 the bound says nothing, and L stops there);
- **exactly**, where every removal of L … U − 1 votes can be refitted within ``exhaustive_limit``
  fits: the fewest found then is the minimum.

The answer is exact when L = U or the search covered the gap; otherwise it is "between L and U",
the approximation's error stated as the interval.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, lambertw

from ladderlab.arena.battles import Battles, Cells, PairCounts
from ladderlab.arena.bradley_terry import ALPHA, NotIdentified, components, fit_exact, information, unidentified

FloatArray = NDArray[np.float64]
CHALLENGERS = 5
EXHAUSTIVE_LIMIT = 20_000
BATCH = 256
"""Refits per batch in the exhaustive search."""


@dataclass(frozen=True)
class Robustness:
    """The fewest votes whose removal changes the top model: between ``lower`` and ``upper``
    (equal when ``exact``), with a set of ``upper`` votes that does."""

    source: str
    battles: int
    winner: str
    upper: int | None
    lower: int
    exact: bool
    challenger: str | None
    """The model rated above the winner once ``removed`` are gone."""
    removed: list[dict[str, Any]] = field(default_factory=list)
    """The votes of the set found, per cell: model_a, model_b, winner, count."""
    method: str = ""

    def records(self) -> dict[str, Any]:
        share = None if self.upper is None else self.upper / self.battles
        return {"source": self.source, "battles": self.battles, "winner": self.winner, "fewest_votes": self.upper,
                "lower_bound": self.lower, "exact": self.exact, "share_of_votes": share, "new_top_model": self.challenger,
                "removed": self.removed, "method": self.method}

    def text(self, width: int = 120) -> str:
        if self.upper is None:
            found = f"no removal of up to {self.lower - 1 if self.lower else 0} votes changes it, and none was found beyond"
        elif self.exact:
            found = f"exactly {self.upper} of {self.battles} votes ({100 * self.upper / self.battles:.4g}%)"
        else:
            found = (f"between {self.lower} and {self.upper} of {self.battles} votes "
                     f"({100 * self.upper / self.battles:.4g}% at most)")
        lines = [f"{self.source}: top model {self.winner}; the fewest votes whose removal changes it: {found}"]
        if self.challenger is not None:
            lines.append(f"removing them puts {self.challenger} on top:")
            lines += [f"  {row['count']:>6} × {row['model_a']} vs {row['model_b']}, winner {row['winner']}"
                      for row in self.removed]
        lines.append(f"method: {self.method}")
        return "\n".join(part for line in lines for part in textwrap.wrap(line, width, subsequent_indent="  ",
                                                                          drop_whitespace=False) or [""]) + "\n"


class _Problem:
    """The battles' cells and the exact fit, and refits without some votes."""

    def __init__(self, battles: Battles):
        self.battles = battles
        self.cells: Cells = battles.cells()
        pairs = self.cells.pairs
        if unidentified(pairs):
            raise ValueError(f"{battles.source}: some model won or lost all its battles: its rating is not finite, so "
                             "there is no top model to move")
        if np.unique(components(pairs)).size > 1:
            raise ValueError(f"{battles.source}: the models fall into {np.unique(components(pairs)).size} groups that "
                             "never met: their ratings are not comparable, so there is no one top model")
        self.ratings = fit_exact(pairs)
        self.winner = int(np.argmax(self.ratings))
        self.proper = self.cells.a != self.cells.b
        """Cells of two different models (a battle of a model with itself moves no rating)."""

    def refit(self, removed: FloatArray) -> FloatArray | None:
        """The ratings without ``removed`` votes of each cell (a vector, or rows of them), warm-started;
        None for a row whose ratings are not finite (as NaN rows for a batch)."""
        removed = np.atleast_2d(removed)
        pairs = self.cells.pair_counts(self.cells.count[None, :] - removed)
        fine = np.array([self._finite(pairs.with_counts(pairs.n[r], pairs.s[r])) for r in range(removed.shape[0])])
        out = np.full((removed.shape[0], pairs.n_models), np.nan)
        if fine.any():
            try:
                out[fine] = fit_exact(pairs.with_counts(pairs.n[fine], pairs.s[fine]),
                                      start=np.repeat(self.ratings[None, :], int(fine.sum()), axis=0))
            except NotIdentified:
                return out
        return out

    @staticmethod
    def _finite(pairs: PairCounts) -> bool:
        """Every model still rated, finitely, and comparably (one connected comparison graph)."""
        return not unidentified(pairs) and np.unique(components(pairs)).size == 1

    def flips(self, ratings: FloatArray) -> NDArray[np.bool_]:
        """Rows of ratings in which a model is rated strictly above the winner."""
        ratings = np.atleast_2d(ratings)
        others = np.delete(ratings, self.winner, axis=1)
        return np.isfinite(ratings).all(axis=1) & (others.max(axis=1) > ratings[:, self.winner] + 1e-12)

    def influence(self, ratings: FloatArray, removed: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """G = (H + 11ᵀ/m)⁻¹ at ``ratings`` (u = α r units) for the votes left, and per cell its
        residual y − σ and x's squared H⁻¹ norm."""
        u = ALPHA * ratings
        pairs = self.cells.pair_counts(self.cells.count - removed)
        a, b = self.cells.a, self.cells.b
        size = pairs.n_models
        inverse = np.linalg.inv(information(pairs, ratings) + np.full((size, size), 1.0 / size))
        sigma = expit(u[a] - u[b])
        residual = self.cells.outcome / 2.0 - sigma
        norm = inverse[a, a] + inverse[b, b] - 2 * inverse[a, b]
        return inverse, residual, np.where(self.proper, norm, 0.0)


def fewest_removals(battles: Battles, challengers: int = CHALLENGERS, exhaustive_limit: int = EXHAUSTIVE_LIMIT) -> Robustness:
    """The fewest votes whose removal changes the top model (see the module docstring)."""
    problem = _Problem(battles)
    names = battles.models
    lower = _lower_bound(problem)
    found = _greedy_upper(problem, challengers)
    method = (f"Huang et al.'s one-step-Newton search and a greedy removal guided by the same influence, refitted, "
              f"over the {challengers} closest challengers (an upper bound, attained); a bound on how far k removals can "
              "move the ratings (a lower bound)")
    exact = found is not None and found[0] == lower
    if found is not None and not exact:
        hit = _exhaustive(problem, lower, found[0], exhaustive_limit)
        if hit is not None:
            found, exact = hit, True
            method += f"; every removal of {lower} to {found[0]} votes refitted (exact)"
        elif _searched_all(problem, lower, found[0], exhaustive_limit):
            exact = True
            method += f"; every removal of {lower} to {found[0] - 1} votes refitted, none changes it (exact)"
    if found is None:
        return Robustness(battles.source, len(battles), names[problem.winner], None, lower, False, None, [], method)
    count, removed = found
    ratings = problem.refit(removed)[0]
    challenger = names[int(np.argmax(ratings))]
    return Robustness(battles.source, len(battles), names[problem.winner], count, count if exact else lower, exact,
                      challenger, _removed_rows(problem, removed), method)


def _removed_rows(problem: _Problem, removed: FloatArray) -> list[dict[str, Any]]:
    cells, names = problem.cells, problem.battles.models
    labels = {2: "model_a", 1: "tie", 0: "model_b"}
    return [{"model_a": names[cells.a[c]], "model_b": names[cells.b[c]], "winner": labels[int(cells.outcome[c])],
             "count": int(removed[c])} for c in np.flatnonzero(removed)]


def _lower_bound(problem: _Problem) -> int:
    """No set of fewer votes than this changes the top model (module docstring)."""
    inverse, residual, norm = problem.influence(problem.ratings, np.zeros(problem.cells.count.size))
    u = ALPHA * problem.ratings
    w = problem.winner
    others = np.array([c for c in range(u.size) if c != w])
    gaps = u[w] - u[others]
    distance = np.sqrt(inverse[w, w] + inverse[others, others] - 2 * inverse[w, others])
    sigma = expit(u[problem.cells.a] - u[problem.cells.b])
    q = np.abs(residual) * np.sqrt(np.maximum(norm, 0.0))
    leverage = sigma * (1 - sigma) * norm
    counts = problem.cells.count
    rho = float(np.sqrt(np.maximum(norm, 0.0)).max())
    k = 1
    while k <= counts.sum():
        q_k, eps_k = _top_sum(q, counts, k), _top_sum(leverage, counts, k)
        if eps_k >= 1:
            return k
        c = rho * q_k / (1 - eps_k)
        if c >= 1 / math.e:
            return k
        d = float(-lambertw(-c, 0).real)
        if (math.exp(d) * distance * q_k / (1 - eps_k) >= gaps).any():
            return k
        k = k + 1 if k < 64 else int(k * 1.25)
    return k


def _top_sum(values: FloatArray, counts: FloatArray, k: int) -> float:
    """The sum of the k largest values, each available ``counts`` times."""
    order = np.argsort(-values, kind="stable")
    taken = np.minimum(counts[order], np.maximum(k - np.concatenate([[0.0], np.cumsum(counts[order])[:-1]]), 0.0))
    return float((taken * values[order]).sum())


def _greedy_upper(problem: _Problem, challengers: int) -> tuple[int, FloatArray] | None:
    """The fewest votes found by the greedy removal over the closest challengers, and the set."""
    order = [int(c) for c in np.argsort(-problem.ratings, kind="stable") if c != problem.winner][:challengers]
    best: tuple[int, FloatArray] | None = None
    for challenger in order:
        for search in (_one_shot, _greedy):
            found = search(problem, challenger, None if best is None else best[0])
            if found is not None and (best is None or found[0] < best[0]):
                best = found
    return best


def _effects(problem: _Problem, ratings: FloatArray, removed: FloatArray, challenger: int) -> FloatArray:
    """Huang et al.'s one-step-Newton influence of removing one vote of each cell on u_w − u_c (inf for
    cells with no vote left)."""
    inverse, residual, norm = problem.influence(ratings, removed)
    sigma = expit(ALPHA * (ratings[problem.cells.a] - ratings[problem.cells.b]))
    leverage = np.minimum(sigma * (1 - sigma) * norm, 0.999)
    direction = np.zeros(ratings.size)
    direction[problem.winner], direction[challenger] = 1.0, -1.0
    toward = inverse @ direction
    effect = -residual * (toward[problem.cells.a] - toward[problem.cells.b]) / (1 - leverage)
    effect[(problem.cells.count - removed) <= 0] = np.inf
    return effect


def _one_shot(problem: _Problem, challenger: int, better_than: int | None) -> tuple[int, FloatArray] | None:
    """Huang et al.'s search: the α votes of most negative influence at the full fit, α doubled until a
    refit changes the top model, then bisected."""
    effect = _effects(problem, problem.ratings, np.zeros(problem.cells.count.size), challenger)
    order = np.argsort(effect, kind="stable")
    order = order[effect[order] < 0]
    available = np.cumsum(problem.cells.count[order])

    def take(alpha: int) -> FloatArray:
        removed = np.zeros(problem.cells.count.size)
        before = np.concatenate([[0.0], available[:-1]])
        removed[order] = np.clip(alpha - before, 0.0, problem.cells.count[order])
        return removed

    most = int(min(available[-1] if available.size else 0, problem.cells.count.sum() - 1,
                   np.inf if better_than is None else better_than - 1))
    low, alpha = 0, 1
    while alpha <= most:
        if problem.flips(problem.refit(take(alpha)))[0]:
            while alpha - low > 1:
                middle = (low + alpha) // 2
                low, alpha = (low, middle) if problem.flips(problem.refit(take(middle)))[0] else (middle, alpha)
            return alpha, take(alpha)
        low, alpha = alpha, min(2 * alpha, most) if alpha < most else most + 1
    return None


def _greedy(problem: _Problem, challenger: int, better_than: int | None) -> tuple[int, FloatArray] | None:
    counts = problem.cells.count
    removed = np.zeros(counts.size)
    ratings = problem.ratings
    w = problem.winner
    while removed.sum() < counts.sum() - 1:
        effect = _effects(problem, ratings, removed, challenger)
        cell = int(np.argmin(effect))
        if not effect[cell] < 0:
            return None
        gap = ALPHA * (ratings[w] - ratings[challenger])
        step = int(max(1, min(counts[cell] - removed[cell], math.ceil(0.5 * gap / -effect[cell]))))
        if better_than is not None and removed.sum() + 1 >= better_than:
            return None
        trial = removed.copy()
        trial[cell] += step
        refitted = problem.refit(trial)[0]
        if np.isnan(refitted).any():
            return None
        if problem.flips(refitted)[0]:
            low, high = 0, step  # fewest copies of the last cell that still flip
            while high - low > 1:
                middle = (low + high) // 2
                attempt = removed.copy()
                attempt[cell] += middle
                if problem.flips(problem.refit(attempt))[0]:
                    high = middle
                else:
                    low = middle
            removed[cell] += high
            return int(removed.sum()), removed
        removed, ratings = trial, refitted
    return None


def _multisets(problem: _Problem, size: int) -> itertools.chain:
    """Every removal of ``size`` votes, as tuples of cells (a cell repeated once per vote), within the counts."""
    cells = np.flatnonzero(problem.proper).tolist()
    counts = problem.cells.count
    return (combo for combo in itertools.combinations_with_replacement(cells, size)
            if all(combo.count(c) <= counts[c] for c in set(combo)))


def _search_size(problem: _Problem, low: int, high: int) -> int:
    cells = int(problem.proper.sum())
    return sum(math.comb(cells + k - 1, k) for k in range(max(low, 1), high))


def _searched_all(problem: _Problem, low: int, high: int, limit: int) -> bool:
    return _search_size(problem, low, high) <= limit


def _exhaustive(problem: _Problem, low: int, high: int, limit: int) -> tuple[int, FloatArray] | None:
    """The fewest votes, from ``low`` up to ``high`` − 1, whose removal changes the top model, refitting
    every removal, when they are at most ``limit`` in all (None: none does, or too many to try)."""
    if not _searched_all(problem, low, high, limit):
        return None
    size = problem.cells.count.size
    for k in range(max(low, 1), high):
        candidates = _multisets(problem, k)
        while batch := list(itertools.islice(candidates, BATCH)):
            removed = np.zeros((len(batch), size))
            for row, combo in enumerate(batch):
                np.add.at(removed[row], list(combo), 1.0)
            hits = np.flatnonzero(problem.flips(problem.refit(removed)))
            if hits.size:
                return k, removed[hits[0]]
    return None
