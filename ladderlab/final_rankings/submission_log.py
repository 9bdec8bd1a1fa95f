"""Submission logs of real challenges, read into one schema and validated.

A log has one row per submission with the columns of :data:`COLUMNS` (extra columns are
kept): ``team`` (string), ``submission_id`` (whole number, unique), ``team_sequence`` (1, 2, …
per team, in time order), ``submitted_at`` (timestamp, UTC), ``public_score`` and
``private_score`` (exact scores), and optionally ``released`` (what the leaderboard showed)
and ``selected`` (counts under the final-selection rule). Three formats are read into it:

- ``ladderlab``: that schema itself, CSV or Parquet, which ``ladderlab serve`` exports; the
  Parquet key-value metadata ``ladderlab.scorer`` and ``ladderlab.greater_is_better``
  ("true"/"false") give the scores' orientation, and ``ladderlab.mechanism`` (a mechanism id)
  the mechanism whose releases the ``released`` column holds, ``ladderlab.public_size`` and
  ``ladderlab.private_size`` (whole numbers) the holdout's public and private rows. A log whose
  ``private_score`` is empty in every row holds public scores only;
- ``meta-kaggle``: Meta Kaggle's ``Submissions.csv`` filtered to one competition (Id,
  SubmittedUserId, TeamId, SourceKernelVersionId, SubmissionDate, ScoreDate, IsAfterDeadline,
  PublicScoreLeaderboardDisplay, PublicScoreFullPrecision, PrivateScoreLeaderboardDisplay,
  PrivateScoreFullPrecision; IsSelected where the export has it); submissions after the
  deadline and those without both scores are left out, and counted;
- ``kaggle-leaderboard``: the public leaderboard a Kaggle competition page lets anyone
  download (TeamId, TeamName, SubmissionDate, Score): each team's public score every time it
  improved, and no private scores (:attr:`SubmissionLog.improvements_only`).

Every check runs before any measure: a bad file is one line naming the file, the column,
the line (CSV; the header is line 1) or row (Parquet) and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ladderlab.runs.rundir import write_atomically
from ladderlab.runs.workload import file_reading_work, refuse_if_too_large
from ladderlab.scoring import get_scorer, scorer_option
from ladderlab.utils.tables import refuse_repeated_columns

REQUIRED = ("team", "submission_id", "team_sequence", "submitted_at", "public_score", "private_score")
OPTIONAL = ("released", "selected")
COLUMNS = REQUIRED + OPTIONAL
META_KAGGLE = ("Id", "SubmittedUserId", "TeamId", "SourceKernelVersionId", "SubmissionDate", "ScoreDate",
               "IsAfterDeadline", "PublicScoreLeaderboardDisplay", "PublicScoreFullPrecision",
               "PrivateScoreLeaderboardDisplay", "PrivateScoreFullPrecision")
KAGGLE_LEADERBOARD = ("TeamId", "TeamName", "SubmissionDate", "Score")
FORMATS = ("auto", "ladderlab", "meta-kaggle", "kaggle-leaderboard")
SCORER_KEY, ORIENTATION_KEY, MECHANISM_KEY = b"ladderlab.scorer", b"ladderlab.greater_is_better", b"ladderlab.mechanism"
PUBLIC_SIZE_KEY, PRIVATE_SIZE_KEY = b"ladderlab.public_size", b"ladderlab.private_size"
PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class SubmissionLog:
    """A validated log: its rows sorted by time (then submission id), and what is known of it."""

    submissions: pd.DataFrame
    greater_is_better: bool
    source: str
    format: str
    scorer: str | None = None
    improvements_only: bool = False
    """True for a public-leaderboard history: the rows are each team's public improvements only."""
    excluded: dict[str, int] = field(default_factory=dict)
    """Rows of the file left out, by reason (Meta Kaggle: after the deadline, without scores)."""
    mechanism: str | None = None
    """The id of the mechanism whose releases the ``released`` column holds, where the log says."""
    public_size: int | None = None
    """The public holdout's rows, where the log says (``ladderlab serve``'s export does)."""
    private_size: int | None = None
    """The private holdout's rows, where the log says."""

    @property
    def sign(self) -> float:
        """+1 when smaller scores are better, −1 when larger are."""
        return -1.0 if self.greater_is_better else 1.0

    @property
    def has_private(self) -> bool:
        return bool(self.submissions.private_score.notna().all()) and not self.submissions.empty

    @property
    def teams(self) -> int:
        return int(self.submissions.team.nunique())


class _Table:
    """A file's raw columns and how to name a place in it in an error."""

    def __init__(self, path: Path, frame: pd.DataFrame, lines: bool):
        self.path, self.frame, self.lines = path, frame, lines

    def error(self, column: str, position: int, problem: str) -> ValueError:
        where = f"line {position + 2}" if self.lines else f"row {position + 1}"
        return ValueError(f"{self.path}: column {column!r}, {where}: {problem}")

    def require(self, columns: tuple[str, ...], what: str) -> None:
        missing = [c for c in columns if c not in self.frame.columns]
        if missing:
            raise ValueError(f"{self.path}: a {what} needs the column{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)}; it has {', '.join(map(str, self.frame.columns)) or 'none'}")

    def _first_bad(self, column: str, bad: np.ndarray, problem: str) -> None:
        if bad.any():
            position = int(np.flatnonzero(bad)[0])
            raise self.error(column, position, f"{problem}, got {self.frame[column].iloc[position]!r}")

    def missing(self, column: str) -> np.ndarray:
        values = self.frame[column]
        return (values.isna() | (values.astype(str).str.strip() == "")).to_numpy()

    def texts(self, column: str) -> pd.Series:
        self._first_bad(column, self.missing(column), "needs a value")
        return self.frame[column].astype(str).str.strip()

    def floats(self, column: str, allow_missing: bool = False) -> np.ndarray:
        """The column as float64; a missing cell is NaN where allowed, anything else not finite is an error."""
        missing = self.missing(column)
        numbers = pd.to_numeric(self.frame[column].where(~missing), errors="coerce").to_numpy(dtype=float)
        problem = "needs a finite number" + (" or nothing" if allow_missing else "")
        self._first_bad(column, ~np.isfinite(numbers) & ~(missing & allow_missing), problem)
        return numbers

    def integers(self, column: str) -> np.ndarray:
        numbers = pd.to_numeric(self.frame[column], errors="coerce").to_numpy(dtype=float)
        self._first_bad(column, ~np.isfinite(numbers) | (numbers != np.round(numbers)), "needs a whole number")
        self._first_bad(column, np.abs(numbers) >= 2.0**63, "needs a whole number that fits in 64 bits "
                                                             "(below 9223372036854775808 in size)")
        return numbers.astype(np.int64)

    def times(self, column: str) -> pd.Series:
        """UTC timestamps (a time without a zone is taken as UTC)."""
        values = self.frame[column]
        if not pd.api.types.is_datetime64_any_dtype(values):
            values = pd.to_datetime(values.astype(str), utc=True, errors="coerce", format="mixed")
        elif values.dt.tz is None:
            values = values.dt.tz_localize("UTC")
        self._first_bad(column, values.isna().to_numpy(), "needs a date and time (ISO 8601, e.g. 2024-05-01T12:00:00Z)")
        return values.dt.tz_convert("UTC")

    def booleans(self, column: str) -> np.ndarray:
        values = self.frame[column]
        if pd.api.types.is_bool_dtype(values):
            return values.to_numpy(dtype=bool)
        text = values.astype(str).str.strip().str.lower()
        self._first_bad(column, ~text.isin(["true", "false", "1", "0"]).to_numpy(), "needs true or false")
        return text.isin(["true", "1"]).to_numpy()


def read_log(path: str | Path, format: str = "auto", greater_is_better: bool | None = None,
             scorer: str | None = None, force: bool = False) -> SubmissionLog:
    """Read and validate a submissions log (see the module docstring for the formats).

    The orientation comes from ``scorer`` (a scorer name), ``greater_is_better``, or a
    ladderlab Parquet file's metadata; they must agree, and one of them is needed. A file
    too large to read in the memory available is refused (:class:`ladderlab.runs.workload.TooLarge`)
    unless ``force``.
    """
    path = Path(path)
    if format not in FORMATS:
        raise ValueError(f"--log-format {format!r}: choose from {', '.join(FORMATS)}")
    if scorer is not None:
        scorer_option(scorer)
    if not path.is_file():
        raise ValueError(f"{path}: no such file" + ("; a run directory is read by 'ladderlab stats replay RUN_DIR'" if path.is_dir() else ""))
    refuse_if_too_large(file_reading_work(path), force, hint="a log of fewer submissions needs less")
    metadata: dict[bytes, bytes] = {}
    if path.suffix.lower() in PARQUET_SUFFIXES:
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as error:
            raise ValueError(f"{path}: not a readable Parquet file: {error}") from None
        metadata = table.schema.metadata or {}
        raw, lines = table.to_pandas(), False
    else:
        try:
            refuse_repeated_columns(path, "a log has one column of each name")
            raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as error:
            raise ValueError(f"{path}: not a readable CSV file: {error}") from None
        lines = True
    detected = _detect(path, raw.columns) if format == "auto" else format
    orientation, scorer = _orientation(path, metadata, greater_is_better, scorer)
    table = _Table(path, raw, lines)
    if detected == "meta-kaggle":
        frame, excluded = _from_meta_kaggle(table)
        _check_score_range(path, frame, scorer)
        return _validated(SubmissionLog(frame, orientation, str(path), detected, scorer, excluded=excluded))
    if detected == "kaggle-leaderboard":
        log = SubmissionLog(_from_kaggle_leaderboard(table), orientation, str(path), detected, scorer, improvements_only=True)
        _check_score_range(path, log.submissions, scorer)
        _check_improvements(log, table)
        return log
    mechanism = metadata[MECHANISM_KEY].decode() if MECHANISM_KEY in metadata else None
    frame = _from_ladderlab(table)
    _check_score_range(path, frame, scorer, table)
    return _validated(SubmissionLog(frame, orientation, str(path), detected, scorer,
                                    mechanism=mechanism, public_size=_size(path, metadata, PUBLIC_SIZE_KEY),
                                    private_size=_size(path, metadata, PRIVATE_SIZE_KEY)), table)


def _check_score_range(path: Path, frame: pd.DataFrame, scorer: str | None, table: _Table | None = None) -> None:
    """Refuse a score outside the range the scorer's scores can take (a zero-one loss of 1e308, or
    below 0), naming the column, the row (or the submission) and the value; nothing where the
    scorer is not known or its scores are unbounded."""
    if scorer is None:
        return
    try:
        value_range = get_scorer(scorer).value_range()
    except (ValueError, TypeError):  # a scorer plugin's name, or a range that needs the number of classes
        return
    if value_range is None:
        return
    low, high = value_range
    for column in ("public_score", "private_score", "released"):
        if column not in frame:
            continue
        values = frame[column].to_numpy(dtype=float)
        outside = (values < low) | (values > high)
        if outside.any():
            position = int(np.flatnonzero(outside)[0])
            problem = (f"{values[position]!r} is outside [{low:g}, {high:g}], the range of the scorer {scorer!r}'s "
                       "scores: is this the log of another scorer?")
            if table is not None:
                raise table.error(column, position, problem)
            raise ValueError(f"{path}: column {column!r}, submission {frame.submission_id.iloc[position]}: {problem}")


def _size(path: Path, metadata: dict[bytes, bytes], key: bytes) -> int | None:
    """A holdout size the file's metadata states, a whole number ≥ 1."""
    if key not in metadata:
        return None
    text = metadata[key].decode(errors="replace").strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{path}: metadata {key.decode()} must be a whole number ≥ 1, got {text!r}")
    return int(text)


def _detect(path: Path, columns: pd.Index) -> str:
    """The format whose columns the file has most of (more than half of them: its reader then
    names the missing ones)."""
    present = set(map(str, columns))
    share, name = max((len(present.intersection(required)) / len(required), name) for name, required in
                      (("ladderlab", REQUIRED), ("meta-kaggle", META_KAGGLE), ("kaggle-leaderboard", KAGGLE_LEADERBOARD)))
    if share > 0.5:
        return name
    raise ValueError(
        f"{path}: not a submissions log ladderlab knows: a ladderlab log has the columns {', '.join(REQUIRED)}; "
        f"Meta Kaggle's Submissions.csv has {', '.join(META_KAGGLE)}; a Kaggle leaderboard download has "
        f"{', '.join(KAGGLE_LEADERBOARD)}; this file has {', '.join(map(str, columns)) or 'no columns'}")


def _orientation(path: Path, metadata: dict[bytes, bytes], greater_is_better: bool | None,
                 scorer: str | None) -> tuple[bool, str | None]:
    """The scores' orientation and scorer name, from the arguments and the file's metadata."""
    stated: dict[str, bool] = {}
    if scorer is not None:
        stated[f"--scorer {scorer}"] = get_scorer(scorer).greater_is_better
    if greater_is_better is not None:
        stated["--greater-is-better" if greater_is_better else "--smaller-is-better"] = greater_is_better
    if SCORER_KEY in metadata:
        file_scorer = metadata[SCORER_KEY].decode()
        scorer = scorer or file_scorer
        try:
            stated[f"the file's ladderlab.scorer {file_scorer!r}"] = get_scorer(file_scorer).greater_is_better
        except ValueError:
            pass  # a scorer plugin's name: the file's greater_is_better states its orientation
    if ORIENTATION_KEY in metadata:
        text = metadata[ORIENTATION_KEY].decode().strip().lower()
        if text not in ("true", "false"):
            raise ValueError(f"{path}: metadata ladderlab.greater_is_better must be 'true' or 'false', got {text!r}")
        stated[f"the file's ladderlab.greater_is_better {text!r}"] = text == "true"
    if not stated:
        raise ValueError(f"{path}: which scores are better is not stated: give --scorer NAME, "
                         "--greater-is-better or --smaller-is-better")
    if len(set(stated.values())) > 1:
        raise ValueError(f"{path}: the orientation is stated both ways: {', '.join(stated)}")
    return next(iter(stated.values())), scorer


def _from_ladderlab(table: _Table) -> pd.DataFrame:
    table.require(REQUIRED, "ladderlab log")
    frame = table.frame.copy()
    frame["team"] = table.texts("team")
    frame["submission_id"] = table.integers("submission_id")
    frame["team_sequence"] = table.integers("team_sequence")
    frame["submitted_at"] = table.times("submitted_at")
    frame["public_score"] = table.floats("public_score")
    private = table.floats("private_score", allow_missing=True)
    if np.isnan(private).any() and not np.isnan(private).all():
        position = int(np.flatnonzero(np.isnan(private))[0])
        raise table.error("private_score", position, "is empty while other rows have private scores "
                          "(a log has a private score for every submission, or for none)")
    frame["private_score"] = private
    if "released" in frame:
        frame["released"] = table.floats("released")
    if "selected" in frame:
        frame["selected"] = table.booleans("selected")
    return frame


def _from_meta_kaggle(table: _Table) -> tuple[pd.DataFrame, dict[str, int]]:
    table.require(META_KAGGLE, "Meta Kaggle Submissions.csv")
    late = table.booleans("IsAfterDeadline")
    public = table.floats("PublicScoreFullPrecision", allow_missing=True)
    private = table.floats("PrivateScoreFullPrecision", allow_missing=True)
    unscored = ~late & (np.isnan(public) | np.isnan(private))
    kept = ~late & ~unscored
    frame = pd.DataFrame({
        "team": table.integers("TeamId").astype(str),
        "submission_id": table.integers("Id"),
        "submitted_at": table.times("SubmissionDate"),
        "public_score": public,
        "private_score": private,
    })
    if "IsSelected" in table.frame:
        frame["selected"] = table.booleans("IsSelected")
    frame = _numbered(frame[kept].reset_index(drop=True))
    return frame, {"after the deadline": int(late.sum()), "without a public or private score": int(unscored.sum())}


def _from_kaggle_leaderboard(table: _Table) -> pd.DataFrame:
    table.require(KAGGLE_LEADERBOARD, "Kaggle leaderboard download")
    frame = pd.DataFrame({
        "team": table.integers("TeamId").astype(str),
        "team_name": table.frame["TeamName"].astype(str).str.strip(),
        "submission_id": np.arange(1, len(table.frame) + 1, dtype=np.int64),
        "submitted_at": table.times("SubmissionDate"),
        "public_score": table.floats("Score"),
        "private_score": np.nan,
    })
    return _numbered(frame)


def _numbered(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows in time order (then submission id), each team's numbered 1, 2, …"""
    frame = frame.sort_values(["submitted_at", "submission_id"], kind="stable", ignore_index=True)
    frame["team_sequence"] = frame.groupby("team").cumcount().to_numpy(dtype=np.int64) + 1
    return frame


def _validated(log: SubmissionLog, table: _Table | None = None) -> SubmissionLog:
    """The log with its rows in time order, after the checks that span rows: unique submission
    ids, and each team's submissions numbered 1, 2, … in time order."""
    frame = log.submissions
    if frame.empty:
        raise ValueError(f"{log.source}: the log holds no submissions" + (
            f" (left out: {', '.join(f'{n} {why}' for why, n in log.excluded.items())})" if log.excluded else ""))
    duplicated = frame.submission_id.duplicated().to_numpy()
    if duplicated.any():
        position = int(np.flatnonzero(duplicated)[0])
        raise _place(log, table, "submission_id", position, f"submission id {frame.submission_id.iloc[position]} appears twice")
    order = frame.sort_values(["team", "team_sequence"], kind="stable")
    expected = order.groupby("team").cumcount().to_numpy() + 1
    wrong = order.team_sequence.to_numpy() != expected
    if wrong.any():
        position = int(order.index[np.flatnonzero(wrong)[0]])
        raise _place(log, table, "team_sequence", position,
                     f"team {frame.team.iloc[position]!r} numbers its submissions 1, 2, … without gaps or repeats; "
                     f"expected {expected[np.flatnonzero(wrong)[0]]}, got {frame.team_sequence.iloc[position]}")
    earlier = order.groupby("team").submitted_at.diff() < pd.Timedelta(0)
    if earlier.any():
        position = int(earlier.index[np.flatnonzero(earlier.to_numpy())[0]])
        raise _place(log, table, "submitted_at", position,
                     f"team {frame.team.iloc[position]!r}'s submission {frame.team_sequence.iloc[position]} "
                     f"is dated before its previous one ({frame.submitted_at.iloc[position]})")
    ordered = frame.sort_values(["submitted_at", "submission_id"], kind="stable", ignore_index=True)
    return replace(log, submissions=ordered)


def _place(log: SubmissionLog, table: _Table | None, column: str, position: int, problem: str) -> ValueError:
    if table is not None:
        return table.error(column, position, problem)
    return ValueError(f"{log.source}: column {column!r}: {problem}")


def _check_improvements(log: SubmissionLog, table: _Table) -> None:
    """A public-leaderboard history records a team's score only when it improves."""
    frame = log.submissions
    risk = log.sign * frame.public_score
    worse = (risk.groupby(frame.team).diff() > 0).to_numpy()
    if worse.any():
        row = frame.iloc[int(np.flatnonzero(worse)[0])]
        line = int(row.submission_id) - 1
        raise table.error("Score", line, f"team {row.team_name!r} (TeamId {row.team}) got worse, to {row.public_score!r}, "
                          "but a leaderboard download records only improvements: is the orientation right "
                          "(--greater-is-better or --smaller-is-better)?")


def write_log(frame: pd.DataFrame, path: str | Path, greater_is_better: bool, scorer: str | None = None) -> None:
    """Write ``frame`` (the columns of :data:`COLUMNS`, with the types of the module docstring)
    as a ladderlab Parquet log with its orientation in the metadata, atomically."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = {**(table.schema.metadata or {}), ORIENTATION_KEY: str(greater_is_better).lower().encode()}
    if scorer is not None:
        metadata[SCORER_KEY] = scorer.encode()
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(metadata), sink)
    write_atomically(Path(path), sink.getvalue().to_pybytes())


def log_summary(log: SubmissionLog) -> dict[str, Any]:
    """What the log holds, for a report."""
    frame = log.submissions
    return {
        "source": log.source,
        "format": log.format,
        "scorer": log.scorer,
        "greater_is_better": log.greater_is_better,
        "teams": log.teams,
        "submissions": int(len(frame)),
        "first_submission": frame.submitted_at.min().isoformat(),
        "last_submission": frame.submitted_at.max().isoformat(),
        "improvements_only": log.improvements_only,
        "mechanism": log.mechanism,
        "private_scores": log.has_private,
        "excluded": dict(log.excluded),
    }
