"""Battles: pairwise votes, read from a file, and their sufficient statistics.

A battle is one vote between two models: ``model_a``, ``model_b`` and ``winner``, the columns of
FastChat's battle files (``clean_battle_*.json``, the public Arena dumps) and of the Arena
notebooks. ``winner`` is ``model_a``, ``model_b`` or a tie (``tie``, ``tie (bothbad)``,
``both_bad``); FastChat's ``preprocess_for_bt`` counts every tie as half a win and half a loss, and
so does ladderlab.

Models are numbered as FastChat numbers them (``pd.factorize`` over ``model_a`` then
``model_b``), so that the *cells* of a battle set, its distinct (model_a, model_b, outcome)
triples with their counts, come in FastChat's order (``np.unique`` of the rows), and a bootstrap
drawn from the same Generator draws FastChat's resamples (:mod:`ladderlab.arena.rating`).

The Bradley–Terry likelihood depends on the battles only through each unordered pair's number
of battles n and the score of its first model s (wins plus half the ties): :class:`PairCounts`.
For independent battles, resampling battles with replacement draws the cells' counts from a
multinomial, and the pairs' counts are sums of those: exact in distribution, and what makes
two million battles a few tens of thousands of numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from numpy.typing import NDArray

from ladderlab.runs.workload import file_reading_work, refuse_if_too_large
from ladderlab.utils.tables import refuse_repeated_columns

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

A_WINS, TIE, B_WINS = 2, 1, 0
"""Outcome codes, FastChat's (``preprocess_for_bt``): the outcome for model_a is code / 2."""
WINNERS = {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE, "tie (bothbad)": TIE, "both_bad": TIE, "bothbad": TIE}
"""The ``winner`` values read, and their outcome codes."""
COLUMNS = ("model_a", "model_b", "winner")
STYLE_ELEMENTS = ("sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a",
                  "sum_assistant_b_tokens", "header_count_b", "list_count_b", "bold_count_b")
"""FastChat's ``STYLE_CONTROL_ELEMENTS_V1``: a battle's style counts, as columns of their own or as keys of a
``conv_metadata`` record (a count, or a record of counts that add up, as FastChat's files hold them)."""
FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True, eq=False)
class PairCounts:
    """Sufficient statistics of Bradley–Terry: per unordered pair (i ≤ j) of models, its battles
    ``n`` and the score of model i, ``s`` = wins + ties / 2 (a pair of a model with itself, which
    FastChat's likelihood counts as a constant, is kept with i = j). ``n`` and ``s`` are vectors,
    or replicates × pairs for a batch of resampled battle sets."""

    n_models: int
    i: IntArray
    j: IntArray
    n: FloatArray
    s: FloatArray

    def with_counts(self, n: FloatArray, s: FloatArray) -> PairCounts:
        """The same pairs with other counts (a resample, or votes added)."""
        return PairCounts(self.n_models, self.i, self.j, n, s)


def combine(n_models: int, i: IntArray, j: IntArray, n: FloatArray, s: FloatArray) -> PairCounts:
    """Pair counts from blocks that may repeat a pair or give it either way round (``s`` the score of
    i): each unordered pair once, as i < j (one count set)."""
    i, j, n, s = (np.asarray(v) for v in (i, j, n, s))
    swap = i > j
    low, high = np.where(swap, j, i), np.where(swap, i, j)
    score = np.where(swap, n - s, s)
    keys, where = np.unique(low * n_models + high, return_inverse=True)
    return PairCounts(n_models, keys // n_models, keys % n_models, np.bincount(where, n, keys.size),
                      np.bincount(where, score, keys.size))


@dataclass(frozen=True, eq=False)
class Cells:
    """The distinct (model_a, model_b, outcome) triples of a battle set with their counts, in
    FastChat's order, and the unordered pair each adds to (``pair``) with the score it gives
    that pair's first model (``score``: 1, ½ or 0)."""

    a: IntArray
    b: IntArray
    outcome: IntArray
    count: FloatArray
    pair: IntArray
    score: FloatArray
    pairs: PairCounts

    def pair_counts(self, counts: FloatArray) -> PairCounts:
        """The pairs' counts of a battle set with ``counts`` of each cell (a vector, or
        replicates × cells)."""
        counts = np.asarray(counts)
        size = self.pairs.i.size
        if counts.ndim == 1:
            return self.pairs.with_counts(np.bincount(self.pair, counts, size), np.bincount(self.pair, counts * self.score, size))
        n = np.stack([np.bincount(self.pair, row, size) for row in counts])
        s = np.stack([np.bincount(self.pair, row * self.score, size) for row in counts])
        return self.pairs.with_counts(n, s)


@dataclass(frozen=True, eq=False)
class Battles:
    """Votes between models: ``a``, ``b`` index ``models``; ``outcome`` the code of each battle."""

    models: list[str]
    a: IntArray
    b: IntArray
    outcome: IntArray
    source: str = ""
    notes: list[str] = field(default_factory=list)
    """What a person reading the ratings should know about the file (not-anonymous battles)."""
    style: FloatArray | None = None
    """Battles × 8 style counts, FastChat's :data:`STYLE_ELEMENTS` in order, where the file has them."""

    def __len__(self) -> int:
        return int(self.a.size)

    def cells(self) -> Cells:
        """The cells in FastChat's order (``np.unique`` of (model_a, model_b, outcome) rows)."""
        m = len(self.models)
        codes = (self.a * m + self.b) * 3 + self.outcome
        unique, count = np.unique(codes, return_counts=True)
        outcome, ab = unique % 3, unique // 3
        a, b = ab // m, ab % m
        low, high = np.minimum(a, b), np.maximum(a, b)
        score = np.where(a <= b, outcome / 2.0, 1.0 - outcome / 2.0)
        keys, pair = np.unique(low * m + high, return_inverse=True)
        count = count.astype(float)
        empty = PairCounts(m, keys // m, keys % m, np.zeros(keys.size), np.zeros(keys.size))
        cells = Cells(a, b, outcome, count, pair, score, empty)
        totals = cells.pair_counts(count)
        return Cells(a, b, outcome, count, pair, score, totals)

    def battles_per_model(self) -> FloatArray:
        """How many battles each model fought (as model_a or model_b; FastChat's ``num_battles``)."""
        m = len(self.models)
        return (np.bincount(self.a, minlength=m) + np.bincount(self.b, minlength=m)).astype(float)


def from_columns(model_a: NDArray, model_b: NDArray, outcome: IntArray, source: str = "",
                 notes: list[str] | None = None) -> Battles:
    """Battles from the two name columns and the outcome codes, models numbered as FastChat numbers them."""
    table = pa.table({"model_a": pa.array(np.asarray(model_a, dtype=object), pa.string()),
                      "model_b": pa.array(np.asarray(model_b, dtype=object), pa.string())})
    a, b, models = _numbered(table)
    return Battles(models, a, b, np.asarray(outcome, dtype=np.int64), source, notes or [])


def _numbered(table: pa.Table) -> tuple[IntArray, IntArray, list[str]]:
    """Model numbers in order of first appearance over model_a, then model_b (``pd.factorize``'s)."""
    names = pa.chunked_array(table["model_a"].chunks + table["model_b"].chunks, pa.string()).dictionary_encode()
    codes = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in names.chunks]).astype(np.int64)
    models = names.chunks[0].dictionary.to_pylist() if names.num_chunks else []
    size = table.num_rows
    return codes[:size], codes[size:], models


def from_table(table: pa.Table, source: str = "battles") -> Battles:
    """Battles from an Arrow table with columns ``model_a``, ``model_b`` and ``winner`` (other columns are
    left out); ``ValueError`` naming the table, the row and the value for a missing column, an empty
    model name or a winner that is none of :data:`WINNERS`."""
    missing = [column for column in COLUMNS if column not in table.column_names]
    if missing:
        found = ", ".join(table.column_names[:12]) or "none"
        raise ValueError(f"{source}: no column {', '.join(repr(c) for c in missing)} (columns found: {found}); a battles "
                         "file has model_a, model_b and winner")
    if table.num_rows == 0:
        raise ValueError(f"{source}: no battles")
    columns = {column: _text(table[column]) for column in COLUMNS}
    for column in ("model_a", "model_b"):
        empty = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(columns[column]), ""), True)
        if pc.any(empty).as_py():
            raise ValueError(f"{source}: row {_first(empty)}: {column} is empty")
    winner = columns["winner"].dictionary_encode()
    labels = winner.chunks[0].dictionary.to_pylist() if winner.num_chunks else []
    known = np.array([WINNERS.get(label, -1) for label in labels] + [-1], dtype=np.int64)
    indices = np.concatenate([chunk.indices.fill_null(len(labels)).to_numpy(zero_copy_only=False)
                              for chunk in winner.chunks]).astype(np.int64)
    outcome = known[indices]
    if (outcome < 0).any():
        row = int(np.flatnonzero(outcome < 0)[0])
        raise ValueError(f"{source}: row {row + 1}: winner {columns['winner'][row].as_py()!r} is none of "
                         f"{', '.join(repr(w) for w in WINNERS)}")
    notes = []
    if "anony" in table.column_names:
        named = table.num_rows - int(pc.sum(pc.cast(pc.fill_null(_flags(table["anony"]), False), pa.int64())).as_py() or 0)
        if named:
            notes.append(f"{named} of {table.num_rows} battles are not anonymous (anony false); FastChat's leaderboard "
                         "rates anonymous battles only (--anonymous-only)")
    a, b, models = _numbered(pa.table({"model_a": columns["model_a"], "model_b": columns["model_b"]}))
    return Battles(models, a, b, outcome, source, notes, _style(table, source))


def _style(table: pa.Table, source: str) -> FloatArray | None:
    """The battles' style counts (battles × 8), from columns named as :data:`STYLE_ELEMENTS` or from
    ``conv_metadata`` records; None where the table has neither; ``ValueError`` for a missing or bad count."""
    if all(name in table.column_names for name in STYLE_ELEMENTS):
        columns = [table[name].to_pylist() for name in STYLE_ELEMENTS]
    elif "conv_metadata" in table.column_names:
        records = [json.loads(record) if isinstance(record, str) else record for record in table["conv_metadata"].to_pylist()]
        columns = [[record.get(name) if isinstance(record, dict) else None for record in records] for name in STYLE_ELEMENTS]
    else:
        return None
    out = np.empty((table.num_rows, len(STYLE_ELEMENTS)))
    for number, (name, values) in enumerate(zip(STYLE_ELEMENTS, columns)):
        for row, value in enumerate(values):
            count = sum(value.values()) if isinstance(value, dict) else value
            if isinstance(count, bool) or not isinstance(count, (int, float)) or not np.isfinite(count) or count < 0:
                raise ValueError(f"{source}: row {row + 1}: style count {name} is {value!r}, not a count")
            out[row, number] = count
    return out


def from_frame(frame: pd.DataFrame, source: str = "battles") -> Battles:
    """Battles from a pandas table (:func:`from_table`'s checks)."""
    return from_table(_arrow(frame), source)


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """The battle columns of a pandas table as Arrow: names and winners as text (missing as null), ``anony``."""
    data = {column: pa.array(frame[column].map(lambda value: None if pd.isna(value) else str(value)), pa.string())
            for column in COLUMNS if column in frame.columns}
    if "anony" in frame.columns:
        data["anony"] = pa.array(frame["anony"])
    if "conv_metadata" in frame.columns:
        data["conv_metadata"] = pa.array([json.dumps(v) if isinstance(v, dict) else None for v in frame["conv_metadata"]])
    for name in STYLE_ELEMENTS:
        if name in frame.columns:
            data[name] = pa.array(pd.to_numeric(frame[name], errors="coerce"), pa.float64())
    return pa.table(data) if data else pa.table({"": pa.nulls(len(frame))})


def _text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as strings (model names that look like numbers stay as written in a CSV)."""
    return column if pa.types.is_string(column.type) else pc.cast(column, pa.string())


def _flags(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``anony`` as booleans: true/false, 1/0, or their text."""
    if pa.types.is_boolean(column.type):
        return column
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        return pc.not_equal(column, 0)
    return pc.is_in(pc.utf8_lower(_text(column)), pa.array(["true", "1", "yes"]))


def _first(mask: pa.ChunkedArray) -> int:
    """The first true row, counted from 1 as a person reads the file (the header not counted)."""
    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0]) + 1


def read_table(path: str | Path, force: bool = False) -> pa.Table:
    """A battles file as an Arrow table: CSV, JSON (a list of records, FastChat's ``clean_battle`` files),
    JSON lines or Parquet, by its suffix."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: a battles file is {', '.join(sorted(FORMATS))}, by its suffix")
    refuse_if_too_large(file_reading_work(path), force, hint="a battles file this large needs --force")
    try:
        if kind == "parquet":
            return pq.read_table(path)
        if kind == "csv":
            refuse_repeated_columns(path, "model_a, model_b and winner must each be one column")
            options = pacsv.ConvertOptions(column_types={column: pa.string() for column in COLUMNS},
                                           strings_can_be_null=True, null_values=[""])
            return pacsv.read_csv(path, convert_options=options)
        frame = pd.read_json(path, lines=kind == "jsonl", dtype={column: str for column in COLUMNS})
    except (pa.ArrowException, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError,
            OSError) as error:
        raise ValueError(f"{path}: not a readable {kind} table: {str(error).splitlines()[0] if str(error) else error}") from None
    return _arrow(frame)


def read_battles(path: str | Path, anonymous_only: bool = False, force: bool = False) -> Battles:
    """The battles of a file (:func:`read_table`); ``anonymous_only`` keeps the rows whose ``anony``
    is true, as FastChat's leaderboard does."""
    table = read_table(path, force)
    if anonymous_only:
        if "anony" not in table.column_names:
            raise ValueError(f"{path}: --anonymous-only needs a column 'anony'")
        table = table.filter(pc.fill_null(_flags(table["anony"]), False))
    return from_table(table, str(path))


def to_frame(battles: Battles) -> pd.DataFrame:
    """The battles as FastChat's columns (``winner`` ``model_a``, ``model_b`` or ``tie``)."""
    names = np.asarray(battles.models, dtype=object)
    labels = np.array(["model_b", "tie", "model_a"], dtype=object)
    return pd.DataFrame({"model_a": names[battles.a], "model_b": names[battles.b], "winner": labels[battles.outcome]})
