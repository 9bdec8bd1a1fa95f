"""Reading a classifier's test results on k classes for accuracy extrapolation.

Two file formats (see ``docs/extrapolation.md``; examples in ``examples/extrapolation/``):

- **ranks** — plain text: the rank of the correct label among the k classes' scores for
  each test point (1 = the correct class scored highest, k = lowest), whole numbers
  separated by white space or commas; conventionally one line per class holding its
  test points' ranks. Lines starting with ``#`` are comments. k is not in the file:
  it must be given.
- **scores** — CSV with a header: one column per class holding the classifier's score
  for that class (larger = more likely; probabilities, log-probabilities or logits),
  and a column ``label`` naming the correct class of each row (a header of one of the
  score columns). k is the number of score columns.

Both give V, the number of other classes the correct class strictly outscores
(:func:`ladderlab.stats.extrapolation.outscored_counts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ladderlab.stats.extrapolation import outscored_counts
from ladderlab.utils.tables import refuse_repeated_columns

LABEL_COLUMN = "label"
InputFormat = Literal["auto", "ranks", "scores"]


@dataclass(frozen=True)
class ObservedClasses:
    """The outscored counts V of every test point, and the number of classes k they were measured on."""

    outscored: NDArray[np.int64]
    k: int
    source: str
    input_format: str


def _content_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read {path}: {error}") from None
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _looks_numeric(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def read_ranks(path: str | Path, k: int | None) -> ObservedClasses:
    """V from a file of correct-label ranks among ``k`` classes (1 = top)."""
    path = Path(path)
    lines = _content_lines(path)
    if k is None:
        raise ValueError(f"{path}: a ranks file does not say how many classes were ranked; give k (--from)")
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}")
    tokens = " ".join(lines).replace(",", " ").split()
    if not tokens:
        raise ValueError(f"{path}: the ranks file holds no ranks")
    bad = next((token for token in tokens if not token.isdigit()), None)
    if bad is not None:
        raise ValueError(f"{path}: {bad!r} is not a rank (a whole number from 1 to k = {k})")
    ranks = np.array([int(token) for token in tokens])
    outside = ranks[(ranks < 1) | (ranks > k)]
    if outside.size:
        raise ValueError(f"{path}: rank {outside[0]} is outside 1…{k} (k = {k} classes)")
    return ObservedClasses(outscored_counts(ranks=ranks, k=k), k, str(path), "ranks")


def read_scores(path: str | Path, k: int | None = None) -> ObservedClasses:
    """V from a CSV score matrix with a ``label`` column naming each row's correct class."""
    path = Path(path)
    _content_lines(path)
    try:
        table = pd.read_csv(path, comment="#", skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a CSV score matrix: {str(error).strip()}") from None
    refuse_repeated_columns(path, f"each class (and {LABEL_COLUMN!r}) needs one column", comment="#",
                            skipinitialspace=True)
    if LABEL_COLUMN not in table.columns:
        raise ValueError(f"{path}: no {LABEL_COLUMN!r} column naming each row's correct class "
                         f"(columns: {', '.join(map(str, table.columns))})")
    classes = [str(column) for column in table.columns if column != LABEL_COLUMN]
    if len(classes) < 2:
        raise ValueError(f"{path}: needs score columns for at least 2 classes, found {len(classes)}")
    if k is not None and k != len(classes):
        raise ValueError(f"{path}: the score matrix has {len(classes)} classes but k = {k} was given")
    if table.empty:
        raise ValueError(f"{path}: the score matrix has no rows")
    scores = table.drop(columns=LABEL_COLUMN)
    for column in scores.columns:
        numeric = pd.to_numeric(scores[column], errors="coerce")
        bad = numeric.isna() | ~np.isfinite(numeric.fillna(0))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"{path}: row {row + 1}, column {column!r}: score {scores[column].iloc[row]!r} "
                             "is not a finite number")
        scores[column] = numeric
    labels = table[LABEL_COLUMN].astype(str).str.strip()
    position = {name: index for index, name in enumerate(classes)}
    unknown = labels[~labels.isin(position)]
    if not unknown.empty:
        raise ValueError(f"{path}: row {unknown.index[0] + 1}: label {unknown.iloc[0]!r} is not one of the "
                         f"score columns ({', '.join(classes)})")
    truth = labels.map(position).to_numpy(dtype=np.int64)
    return ObservedClasses(outscored_counts(scores.to_numpy(dtype=float), truth), len(classes), str(path), "scores")


def read_observed_classes(path: str | Path, input_format: InputFormat = "auto", k: int | None = None) -> ObservedClasses:
    """Read a ranks or scores file; ``auto`` takes a file whose first line has a non-number for a score matrix."""
    path = Path(path)
    if input_format == "auto":
        lines = _content_lines(path)
        if not lines:
            raise ValueError(f"{path}: the file is empty")
        first = lines[0].replace(",", " ").split()
        input_format = "ranks" if all(_looks_numeric(token) for token in first) else "scores"
    if input_format == "ranks":
        return read_ranks(path, k)
    if input_format == "scores":
        return read_scores(path, k)
    raise ValueError(f"unknown input format {input_format!r}; choose ranks, scores or auto")
