"""Uploaded predictions: CSV, Parquet or JSON by id, or NumPy rows in the published order.

- CSV, Parquet, JSON (``{"id": [...], "prediction": [...]}`` or a list of
  ``{"id": …, "prediction": …}`` records): one submission, matched to the holdout by id,
  in any row order. The prediction column is ``prediction`` (or the challenge's label
  column), a class name where the labels are names; a class-probability scorer takes one
  column per class, named by the class (``0``, ``1``, … or the class names).
- ``.npy`` (``application/x-npy``): one row or a batch of rows in the published order of
  the ids (``GET /api/challenge``), classes as their indices in ``class_names``: what
  :class:`~ladderlab.serve.client.RemoteBoard` sends. Read with ``allow_pickle=False``.

Every problem is an :class:`UploadError` naming it (a missing, unknown or repeated id,
a value that is not a number, the wrong shape) before the service sees the upload. What an
upload declares about its size is checked before the work it would cost: a ``.npy`` header's
shape against the bytes that follow, a Parquet footer's rows and uncompressed bytes, the width
of a CSV or JSON table (docs/serve.md, "What a hostile participant can and cannot do").
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from numpy.typing import NDArray

from ladderlab.certification.challenge import Challenge
from ladderlab.scoring import PredictionKind, get_scorer

NPY = "application/x-npy"
FORMATS = {"text/csv": "csv", "application/csv": "csv", "application/vnd.apache.parquet": "parquet",
           "application/x-parquet": "parquet", "application/json": "json", NPY: "npy"}
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json", ".npy": "npy"}
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
"""What a form sends, or curl with a body and no Content-Type: not an upload the API reads."""
SHOWN_IDS = 3
SHOWN_COLUMNS = 10
EXTRA_COLUMNS = 64
"""Columns beside the id and the prediction's that an upload may have (a CSV with a row index, say)."""


class UploadError(ValueError):
    """An upload the service cannot read; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


class UploadReader:
    """Turns uploads into prediction rows in the published order of a challenge's holdout."""

    def __init__(self, challenge: Challenge):
        self.challenge = challenge
        self.ids = challenge.ids
        self.index = pd.Index(challenge.ids)
        scorer = get_scorer(challenge.split.public.scorer)
        self.kind = scorer.prediction_kind
        classes = challenge.split.public.classes
        self.class_names = challenge.class_names or ([] if classes is None else [f"{label:g}" for label in classes])
        self.class_columns = list(self.class_names) if self.kind is PredictionKind.PROBABILITIES else []
        self.named_labels = self.kind is PredictionKind.LABEL and challenge.class_names is not None
        self.value_columns = ("prediction", challenge.spec.labels.label_column)
        self.max_bytes = challenge.max_upload_bytes()
        self.max_columns = 1 + max(1, len(self.class_columns)) + EXTRA_COLUMNS

    def format_of(self, content_type: str | None, filename: str | None = None) -> str:
        """The upload's format, from its file name or its content type."""
        if filename:
            for suffix, name in SUFFIXES.items():
                if filename.lower().endswith(suffix):
                    return name
        media = (content_type or "").split(";")[0].strip().lower()
        if media in FORMATS:
            return FORMATS[media]
        form = media in FORM_TYPES  # curl -F, or curl --data-binary without a Content-Type
        raise UploadError(f"cannot read an upload of type {media or 'unknown'!r}"
                          f"{f' named {filename!r}' if filename else ''}: send CSV, Parquet, JSON or .npy "
                          f"({', '.join(sorted(FORMATS))})"
                          + (": post the file itself as the body with its type, not a form, e.g. curl --data-binary "
                             "@submission.csv -H 'Content-Type: text/csv'" if form else ""), status=415)

    def read(self, data: bytes, fmt: str) -> NDArray[np.float64]:
        """The predictions of an upload as rows (a batch for ``.npy``, else one row). Whatever a
        parser raises on bytes it cannot read is an :class:`UploadError` naming the format, never a
        500: the parsers' own exceptions are many and not all are ``ValueError``."""
        if not data:
            raise UploadError("the upload is empty")
        try:
            if fmt == "npy":
                return self._rows(data)
            return self._by_id(self._table(data, fmt))[None]
        except UploadError:
            raise
        except MemoryError:
            raise UploadError(f"the {fmt.upper()} upload would take more memory than the server has to read it",
                              status=413) from None
        except RecursionError:
            raise UploadError(f"cannot read the upload as {fmt.upper()}: it is nested too deeply") from None
        except Exception as error:  # noqa: BLE001 - a parser's error on hostile bytes
            detail = str(error).splitlines()[0][:200] if str(error) else ""
            raise UploadError(f"cannot read the upload as {fmt.upper()}: {type(error).__name__}"
                              f"{': ' + detail if detail else ''}") from None

    def _rows(self, data: bytes) -> NDArray[np.float64]:
        stream = io.BytesIO(data)
        shape, dtype = self._npy_header(stream)
        one = 2 if self.kind is PredictionKind.PROBABILITIES else 1
        row_shape = (self.ids.size,) if one == 1 else (self.ids.size, len(self.class_names))
        if len(shape) not in (one, one + 1) or shape[-one:][:1] != (self.ids.size,) or 0 in shape:
            raise UploadError(f"a .npy upload is one prediction of length {self.ids.size} or rows of them "
                              f"({self.ids.size} holdout ids), got shape {shape}")
        needed = math.prod(shape) * dtype.itemsize
        if needed > len(data) - stream.tell():  # before numpy allocates what the header declares
            raise UploadError(f"the .npy upload is truncated: its header declares shape {shape} of {dtype}, "
                              f"{needed} bytes, but {len(data) - stream.tell()} follow it")
        stream.seek(0)
        try:
            array = np.load(stream, allow_pickle=False)
        except (ValueError, OSError, EOFError) as error:
            raise UploadError(f"not a .npy array: {error}") from None
        if array.ndim == one:
            array = array[None]
        if array.shape[1:] != row_shape[: array.ndim - 1]:
            raise UploadError(f"a .npy upload is one prediction of shape {row_shape} or rows of them, "
                              f"got shape {array.shape}")
        return np.ascontiguousarray(array, dtype=np.float64)

    @staticmethod
    def _npy_header(stream: io.BytesIO) -> tuple[tuple[int, ...], np.dtype]:
        """The shape and dtype a .npy header declares, read before any data (``UploadError`` if it
        is no header of numbers)."""
        try:
            major, _ = np.lib.format.read_magic(stream)
            read_header = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}.get(major)
            if read_header is None:
                raise ValueError(f"format version {major} (send version 1 or 2, what numpy.save writes)")
            shape, _, dtype = read_header(stream)
        except Exception as error:  # noqa: BLE001 - numpy parses the header with Python's tokenizer
            raise UploadError(f"not a .npy array: its header cannot be read ({type(error).__name__}: "
                              f"{str(error).splitlines()[0][:200] if str(error) else ''})") from None
        if dtype.kind not in "biuf" or dtype.fields is not None:
            raise UploadError(f"a .npy upload holds numbers, got dtype {dtype}")
        return tuple(shape), dtype

    def _table(self, data: bytes, fmt: str) -> pd.DataFrame:
        id_column = self.challenge.spec.labels.id_column
        try:
            if fmt == "csv":
                self._check_width(max((len(row) for row in csv.reader(io.StringIO(data.decode("utf-8", "replace")))),
                                      default=0))
                table = pd.read_csv(io.BytesIO(data), dtype={id_column: str}, keep_default_na=False, na_values=[""])
            elif fmt == "parquet":
                table = self._parquet(data)
            else:
                table = pd.DataFrame(self._json(data))
        except UploadError:
            raise
        except RecursionError:
            raise UploadError(f"cannot read the upload as {fmt.upper()}: it is nested too deeply") from None
        except (ValueError, TypeError, OSError, pd.errors.ParserError, csv.Error) as error:
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise UploadError(f"cannot read the upload as {fmt.upper()}: {detail}") from None
        if id_column not in table.columns:
            raise UploadError(f"the upload has no {id_column!r} column (columns: {_columns(table)})")
        return table

    def _check_width(self, columns: int) -> None:
        """Refuse an upload wider than the columns a prediction needs and :data:`EXTRA_COLUMNS`
        others, before pandas builds it: a row of 58,000 commas (116 kB) cost pandas 15 s."""
        if columns > self.max_columns:
            raise UploadError(f"the upload has {columns} columns, more than the {self.max_columns} read (the id, "
                              f"the prediction's column(s) and up to {EXTRA_COLUMNS} others)")

    def _json(self, data: bytes) -> dict | list:
        """A JSON upload, parsed, after its width (and, as records, its length) is checked: 9,000
        records with a key each made pandas a 9,000 × 9,000 table (5 s, 1 GB) from 107 kB."""
        parsed = json.loads(data)
        shapes = ('an object of columns {"id": [...], "prediction": [...]} or a list of records '
                  '[{"id": ..., "prediction": ...}, ...]')
        if isinstance(parsed, dict):
            for key, value in parsed.items():
                if not isinstance(value, list):
                    raise UploadError(f"a JSON upload is {shapes}: its key {str(key)[:40]!r} holds "
                                      f"{_json_kind(value)}, not a list (an object keyed by id is not read)")
            self._check_width(len(parsed))
        elif isinstance(parsed, list):
            if len(parsed) > self.ids.size:
                raise UploadError(f"the upload has {len(parsed)} records, more than the {self.ids.size} holdout ids")
            for position, record in enumerate(parsed):
                if not isinstance(record, dict):
                    raise UploadError(f"a JSON upload is {shapes}: record {position + 1} is {_json_kind(record)}")
            self._check_width(len(set().union(*parsed)))
        else:
            raise UploadError(f"a JSON upload is {shapes}, got {_json_kind(parsed)}")
        return parsed

    def _parquet(self, data: bytes) -> pd.DataFrame:
        """The id and value columns of a Parquet upload, read after its footer shows that they hold
        no more rows than the holdout has ids and decompress to no more than the upload limit: a
        Parquet file's compression and run-length encoding can make 90 kB hold 10⁷ rows."""
        parquet = pq.ParquetFile(io.BytesIO(data))
        described = parquet.metadata
        if described.num_rows > self.ids.size:
            raise UploadError(f"the upload has {described.num_rows} rows, more than the {self.ids.size} holdout ids")
        unpacked = sum(described.row_group(group).column(column).total_uncompressed_size
                       for group in range(described.num_row_groups) for column in range(described.num_columns))
        if unpacked > self.max_bytes:
            raise UploadError(f"the Parquet upload decompresses to {unpacked} bytes, more than the limit of "
                              f"{self.max_bytes}", status=413)
        wanted = {self.challenge.spec.labels.id_column, *self.value_columns, *self.class_columns}
        names = parquet.schema_arrow.names
        read = [name for name in names if name in wanted]
        return parquet.read(columns=read).to_pandas() if read else pd.DataFrame(columns=names)

    def _by_id(self, table: pd.DataFrame) -> NDArray[np.float64]:
        id_column = self.challenge.spec.labels.id_column
        absent = table[id_column].isna().to_numpy()
        if absent.any():
            raise UploadError(f"row {int(np.flatnonzero(absent)[0]) + 1} of the upload has no {id_column!r}")
        ids = table[id_column].astype(str).str.strip().to_numpy(dtype=object)
        columns = self.class_columns or [next((c for c in self.value_columns if c in table.columns), None)]
        missing_columns = [column for column in columns if column not in table.columns]
        if missing_columns or columns == [None]:
            wanted = ", ".join(map(repr, self.class_columns)) if self.class_columns else "'prediction'"
            raise UploadError(f"the upload needs the column(s) {wanted} beside {id_column!r} "
                              f"(columns: {_columns(table)})")
        unique, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise UploadError(f"id {unique[counts > 1][0]!r} appears {counts[counts > 1][0]} times")
        position = self.index.get_indexer(ids)
        if (position < 0).any():
            unknown = ids[position < 0]
            raise UploadError(f"{unknown.size} unknown id(s), e.g. {_some(unknown)}: not in the holdout")
        if ids.size != self.ids.size:
            absent = np.setdiff1d(self.ids, ids)
            raise UploadError(f"{absent.size} holdout id(s) missing, e.g. {_some(absent)}: "
                              f"predict all {self.ids.size}")
        raw = table[columns]
        if self.named_labels:
            return self._class_indices(raw.iloc[:, 0], ids, position)
        values = raw.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        if np.isnan(values).any():  # text that is not a number, told apart from a NaN, which validation names
            text = raw.map(lambda value: str(value).strip().lower())
            unreadable = np.isnan(values) & ~text.isin(["nan", "", "none"]).to_numpy()
            if unreadable.any():
                row, column = np.argwhere(unreadable)[0]
                raise UploadError(f"id {ids[row]!r}: {raw.iloc[row, column]!r} is not a number")
        ordered = np.empty_like(values)
        ordered[position] = values
        return ordered if self.class_columns else ordered[:, 0]

    def _class_indices(self, names: pd.Series, ids: NDArray[np.object_], position: NDArray[np.intp]
                       ) -> NDArray[np.float64]:
        """Predicted class names as the class indices the mechanism scores."""
        text = names.map(lambda value: str(value).strip()).to_numpy(dtype=object)
        index = pd.Index(self.class_names).get_indexer(text)
        if (index < 0).any():
            row = int(np.flatnonzero(index < 0)[0])
            raise UploadError(f"id {ids[row]!r}: {names.iloc[row]!r} is not one of the classes "
                              f"{', '.join(map(repr, self.class_names))}")
        ordered = np.empty(ids.size)
        ordered[position] = index
        return ordered

    def id_at(self, position: int) -> str:
        return str(self.ids[position])


def _json_kind(value: object) -> str:
    """What a parsed JSON value is, for a message (``the value '0.5'``, ``the text 'a'``, ``a list``)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return f"the {'text' if isinstance(value, str) else 'value'} {str(value)[:40]!r}"


def _columns(table: pd.DataFrame) -> str:
    """The first of an upload's columns, and how many there are beyond them."""
    shown = ", ".join(repr(str(column)) for column in table.columns[:SHOWN_COLUMNS])
    beyond = table.columns.size - SHOWN_COLUMNS
    return shown + (f" and {beyond} more" if beyond > 0 else "")


def _some(ids: NDArray[np.object_]) -> str:
    shown = ", ".join(repr(str(value)) for value in ids[:SHOWN_IDS])
    return shown + (", …" if ids.size > SHOWN_IDS else "")
