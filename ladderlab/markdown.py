"""Markdown for the pages a report writes (``ladderlab report RUN --format markdown``)."""

from __future__ import annotations

import pandas as pd


def table(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (its values as they print, ``|`` escaped); numbers right-aligned."""
    def cell(value: object) -> str:
        return "–" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value).replace("|", "\\|")

    numeric = [pd.api.types.is_numeric_dtype(frame[column]) for column in frame.columns]
    lines = ["| " + " | ".join(cell(column) for column in frame.columns) + " |",
             "|" + "|".join(" ---: " if right else " --- " for right in numeric) + "|"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)
