"""Rating a battle set as Chatbot Arena does: Bradley–Terry ratings, bootstrap intervals, Arena ranks.

FastChat's leaderboard (``elo_analysis.report_elo_analysis_results`` with ``compute_bt`` and
``compute_bootstrap_bt``, lm-sys/FastChat ``fastchat/serve/monitor/rating_systems.py``):

- the rating: the Bradley–Terry fit of every battle (:mod:`ladderlab.arena.bradley_terry`), on the
  Elo scale and anchored as FastChat anchors it;
- the bootstrap: B rounds (100 by default), each drawing the counts of the battle set's cells from
  Multinomial(N, counts / N), N the number of battles, and fitting them with weights counts / N;
  ``default_rng(seed)`` with seed 0 by default and the cells in FastChat's order, so the resamples are
  FastChat's own. Resampling the cells' counts is resampling the battles with replacement: the
  counts of N draws with replacement from the battles are multinomial over the battles, and summed
  by cell they are multinomial over the cells (tests/test_arena_rating.py checks it exactly);
- the interval: the 2.5 % and 97.5 % quantiles of each model's bootstrap ratings (linear
  interpolation, pandas' ``quantile``); the rank: 1 + the number of models whose lower bound exceeds
  the model's upper bound (:func:`ladderlab.stats.interval_ranks.interval_rank`).

``solver="fastchat"`` fits as FastChat does (L-BFGS-B, stopped where FastChat's stops); ``"exact"``
fits the maximum-likelihood ratings. With the FastChat solver, :attr:`ArenaRatings.optimizer_gap`
says how far FastChat's optimizer stopped from the maximum-likelihood ratings.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ladderlab.arena.battles import Battles, PairCounts
from ladderlab.arena.bradley_terry import FASTCHAT_ANCHOR, NotIdentified, elo, fit_exact, fit_fastchat, unidentified
from ladderlab.stats.interval_ranks import interval_rank
from ladderlab.utils.progress import progress_bar

FloatArray = NDArray[np.float64]
REPLICATES = 100
LEVEL = 0.95
SOLVERS = ("fastchat", "exact")
CHUNK = 10
"""Bootstrap rounds fitted per task."""


@dataclass(frozen=True)
class ArenaRatings:
    """A battle set's ratings, in the order of ``models`` (FastChat's numbering)."""

    source: str
    models: list[str]
    battles: int
    rating: FloatArray
    lower: FloatArray | None
    upper: FloatArray | None
    rank: NDArray[np.int64] | None
    battles_per_model: FloatArray
    bootstrap: FloatArray | None
    """replicates × models, Elo scale (None without a bootstrap)."""
    solver: str
    seed: int | None
    anchor: tuple[str, float] | None
    level: float = LEVEL
    optimizer: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def anchored(self) -> bool:
        return self.anchor is not None and self.anchor[0] in self.models

    def table(self) -> pd.DataFrame:
        """One row per model, best rating first (FastChat's ``compute_bt`` order)."""
        frame = pd.DataFrame({"model": self.models, "rating": self.rating, "num_battles": self.battles_per_model.astype(int)})
        if self.lower is not None and self.upper is not None and self.rank is not None:
            frame.insert(1, "rank", self.rank)
            frame.insert(3, "rating_q025", self.lower)
            frame.insert(4, "rating_q975", self.upper)
            frame.insert(5, "variance", self.bootstrap.var(axis=0, ddof=1))
        order = np.argsort(-self.rating, kind="stable")
        return frame.iloc[order].reset_index(drop=True)

    def records(self) -> dict[str, Any]:
        """JSON-ready: what was rated and how, and one record per model."""
        rows = [{key: (value.item() if hasattr(value, "item") else value) for key, value in row.items()}
                for row in self.table().to_dict(orient="records")]
        return {"source": self.source, "battles": self.battles, "models": len(self.models), "solver": self.solver,
                "bootstrap_rounds": 0 if self.bootstrap is None else int(self.bootstrap.shape[0]), "seed": self.seed,
                "level": self.level, "anchor": list(self.anchor) if self.anchored else None,
                "optimizer": self.optimizer, "notes": self.notes, "ratings": rows}


def rate(battles: Battles, replicates: int = REPLICATES, seed: int = 0, solver: str = "fastchat",
         anchor: tuple[str, float] | None = FASTCHAT_ANCHOR, jobs: int = 1, progress: bool | None = False,
         exact_gap: bool = True) -> ArenaRatings:
    """Rate ``battles`` (see the module docstring); ``replicates`` 0 gives ratings without intervals.
    ``exact_gap`` (FastChat solver): also fit the maximum-likelihood ratings, to report how far
    FastChat's optimizer stopped from them."""
    if solver not in SOLVERS:
        raise ValueError(f"solver {solver!r} is none of {', '.join(SOLVERS)}")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 0:
        raise ValueError(f"bootstrap rounds must be a whole number ≥ 0, got {replicates!r}")
    with threadpool_limits(limits=1, user_api="blas"):
        return _rate(battles, replicates, seed, solver, anchor, jobs, progress, exact_gap)


def _rate(battles: Battles, replicates: int, seed: int, solver: str, anchor: tuple[str, float] | None, jobs: int,
          progress: bool | None, exact_gap: bool) -> ArenaRatings:
    cells = battles.cells()
    optimizer: dict[str, Any] = {}
    if solver == "fastchat":
        fit = fit_fastchat(cells.pairs)
        ratings = fit.ratings
        optimizer = {"iterations": fit.iterations, "message": fit.message, "gradient_max": fit.gradient_norm}
        if exact_gap:
            try:
                gap = np.abs(elo(fit_exact(cells.pairs, start=ratings), battles.models, None)
                             - elo(ratings, battles.models, None))
                optimizer["gap_to_maximum_likelihood"] = float(gap.max())
            except NotIdentified:
                optimizer["gap_to_maximum_likelihood"] = None
    else:
        _require_identified(cells.pairs, battles.models, battles.source)
        ratings = fit_exact(cells.pairs)
    rating = elo(ratings, battles.models, anchor)
    lower = upper = rank = boot = None
    if replicates:
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(n=len(battles), pvals=cells.count / cells.count.sum(), size=replicates)
        fitted = bootstrap_fits(cells.pair_counts(counts), len(battles), solver, jobs, progress)
        boot = elo(fitted, battles.models, anchor)
        lower, upper = np.quantile(boot, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        rank = interval_rank(lower, upper)
    return ArenaRatings(battles.source, battles.models, len(battles), rating, lower, upper, rank,
                        battles.battles_per_model(), boot, solver, seed if replicates else None, anchor,
                        optimizer=optimizer, notes=list(battles.notes))


def bootstrap_fits(resampled: PairCounts, battles: int, solver: str, jobs: int = 1,
                   progress: bool | None = False) -> FloatArray:
    """The ratings (r) of each resample (``resampled``: replicates × pairs): FastChat's fit of the
    counts divided by the number of battles (``compute_bootstrap_bt``'s weights), or all the
    maximum-likelihood fits at once."""
    rounds = resampled.n.shape[0]
    if solver == "exact":
        out = np.empty((rounds, resampled.n_models))
        with progress_bar(progress=progress, total=rounds, desc="bootstrap", unit="round") as bar:
            for start in range(0, rounds, 25):
                chunk = slice(start, start + 25)
                out[chunk] = fit_exact(resampled.with_counts(resampled.n[chunk], resampled.s[chunk]))
                bar.update(out[chunk].shape[0])
        return out

    chunks = [range(start, min(start + CHUNK, rounds)) for start in range(0, rounds, CHUNK)]
    shown = progress_bar(chunks, progress=progress, desc="bootstrap", unit=f"{CHUNK} rounds")
    if jobs == 1:
        return np.concatenate([_fastchat_fits(resampled, battles, chunk) for chunk in shown])
    return np.concatenate(Parallel(n_jobs=jobs)(delayed(_fastchat_fits)(resampled.with_counts(resampled.n[chunk],
                                                                                              resampled.s[chunk]),
                                                                         battles, range(len(chunk)))
                                                for chunk in shown))


def _fastchat_fits(resampled: PairCounts, battles: int, replicates: range) -> FloatArray:
    """FastChat's fits of some resamples, on one BLAS thread (in a worker too)."""
    with threadpool_limits(limits=1, user_api="blas"):
        return np.array([fit_fastchat(resampled.with_counts(resampled.n[r] / battles, resampled.s[r] / battles)).ratings
                         for r in replicates])


def _require_identified(pairs: PairCounts, models: list[str], source: str) -> None:
    bad = unidentified(pairs)
    if bad:
        raise ValueError(f"{source}: model {models[bad[0]]!r} won or lost every battle against the rest of its part of "
                         "the comparison graph, so its maximum-likelihood rating is not finite (--solver fastchat "
                         "stops somewhere, as FastChat does)")


def text_table(ratings: ArenaRatings, top: int | None = None, extra: list[str] | None = None, width: int = 120) -> str:
    """The ratings for a terminal, at most ``width`` columns (``extra``: more lines for the header)."""
    lines = [f"{ratings.source}: {ratings.battles} battles, {len(ratings.models)} models; Bradley–Terry "
             f"({ {'fastchat': 'FastChat', 'exact': 'maximum-likelihood'}.get(ratings.solver, ratings.solver)} fit)"
             + (f", anchored at {ratings.anchor[0]} = {ratings.anchor[1]:g}" if ratings.anchored else "")]
    if ratings.bootstrap is not None:
        lines.append(f"{ratings.bootstrap.shape[0]} bootstrap rounds (seed {ratings.seed}), {ratings.level:.0%} intervals; "
                     "rank: 1 + the models whose interval lies wholly above (Chatbot Arena's rule)")
    gap = ratings.optimizer.get("gap_to_maximum_likelihood")
    if gap is not None and gap >= 0.005:
        lines.append(f"FastChat's optimizer stopped up to {gap:.2f} Elo points from the maximum-likelihood ratings "
                     "(--solver exact gives those)")
    lines += ratings.notes + (extra or [])
    table = ratings.table().head(top)
    name_width = min(48, max(len("model"), *table.model.map(len)))
    shown = pd.DataFrame({
        **({"rank": table["rank"].map(str)} if "rank" in table else {}),
        "model".ljust(name_width): table.model.map(lambda m: (m if len(m) <= name_width else m[:name_width - 1] + "…")
                                                   .ljust(name_width)),
        "rating": table.rating.map(lambda v: f"{v:.2f}"),
        **({"95% interval": [f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(table.rating_q025, table.rating_q975)]}
           if "rating_q025" in table else {}),
        "battles": table.num_battles.map(str),
    })
    wrapped = [part for line in lines for part in textwrap.wrap(line, width, subsequent_indent="  ")]
    return "\n".join([*wrapped, "", *shown.to_string(index=False).splitlines()]) + "\n"
