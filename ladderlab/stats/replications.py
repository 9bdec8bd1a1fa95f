"""Summaries over replications, shared by the duel and the competition reports: the cells'
counts by status, and the median with a 95% interval (the 2.5% and 97.5% quantiles) of a
measure over the replications that finished."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

INTERVAL = (0.025, 0.975)
STATUSES = ("ok", "failed", "skipped")
STATISTICS = ("median", "lo", "hi")
"""A summary's columns per measure: ``{measure}_median``, ``_lo`` (2.5%) and ``_hi`` (97.5%)."""
DUEL_MEASURES = {"delta": "delta", "lberr": "leaderboard_error", "final_released": "final_released",
                 "final_public": "final_public", "final_final": "final_final"}
"""A duel summary's measures: their names in the summary, and the replication column each summarises."""
COMPETITION_MEASURES = ("spearman", "kendall", "top10_overlap", "best_team_wins", "best_team_private_rank",
                        "winner_delta", "leaderboard_error", "honest_utility", "sota_estimate", "sota_true")
"""A competition summary's measures (columns of a competition replication of the same names)."""


def summary_columns(measures: Iterable[str]) -> list[str]:
    """``{measure}_{statistic}`` for every measure and statistic."""
    return [f"{measure}_{statistic}" for measure in measures for statistic in STATISTICS]


def status_counts(results: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell (the index, in order of appearance): its ``keys`` and ``n_ok``, ``n_failed``, ``n_skipped``."""
    counts = results.groupby("cell", sort=False).status.value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=list(STATUSES), fill_value=0).rename(columns=lambda status: f"n_{status}")
    return results.drop_duplicates("cell").set_index("cell")[keys].join(counts)


def median_interval(finished: pd.DataFrame, column: str, prefix: str) -> pd.DataFrame:
    """Per cell: ``{prefix}_median``, ``{prefix}_lo`` and ``{prefix}_hi`` of ``column`` over ``finished``."""
    names = summary_columns([prefix])
    if finished.empty:
        return pd.DataFrame(columns=names, dtype=float)
    quantiles = finished.groupby("cell")[column].quantile([0.5, *INTERVAL]).unstack()
    quantiles.columns = names
    return quantiles
