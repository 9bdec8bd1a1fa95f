"""Tables users hand in (CSV): checks that pandas would let pass silently."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def refuse_repeated_columns(path: Path, why: str = "each needs its own name", **read_options: object) -> None:
    """``ValueError`` naming ``path`` and the first column name that appears twice in the CSV
    header (pandas would rename the second copy ``name.1`` and read on)."""
    try:
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, **read_options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return  # the caller's own read names what is wrong with the file
    names = header.iloc[0] if len(header) else pd.Series(dtype=str)
    repeated = names[names.duplicated()]
    if not repeated.empty:
        raise ValueError(f"{path}: column {repeated.iloc[0]!r} appears twice in the header; {why}")
