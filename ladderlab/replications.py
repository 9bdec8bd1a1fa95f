"""Summaries over replications, shared by the duel and the competition reports: the cells'
counts by status, and the median with a 95% interval (the 2.5% and 97.5% quantiles) of a
measure over the replications that finished."""

from __future__ import annotations

import pandas as pd

INTERVAL = (0.025, 0.975)
STATUSES = ("ok", "failed", "skipped")


def status_counts(results: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell (the index, in order of appearance): its ``keys`` and ``n_ok``, ``n_failed``, ``n_skipped``."""
    counts = results.groupby("cell", sort=False).status.value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=list(STATUSES), fill_value=0).rename(columns=lambda status: f"n_{status}")
    return results.drop_duplicates("cell").set_index("cell")[keys].join(counts)


def median_interval(finished: pd.DataFrame, column: str, prefix: str) -> pd.DataFrame:
    """Per cell: ``{prefix}_median``, ``{prefix}_lo`` and ``{prefix}_hi`` of ``column`` over ``finished``."""
    names = [f"{prefix}_median", f"{prefix}_lo", f"{prefix}_hi"]
    if finished.empty:
        return pd.DataFrame(columns=names, dtype=float)
    quantiles = finished.groupby("cell")[column].quantile([0.5, *INTERVAL]).unstack()
    quantiles.columns = names
    return quantiles
