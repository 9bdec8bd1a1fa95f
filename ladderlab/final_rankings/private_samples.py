"""Per-sample private data of a final leaderboard: what a ranking certificate resamples.

Each team's counted submission on each private sample, in one of two forms:

- **losses**: a per-sample loss (smaller is better), a team's score their mean;
- **predictions**, with the labels and a ladderlab scorer, for any scorer, whole-vector
  metrics (ROC AUC, Pearson, …) included.

A file holds them in long form, one row per team and sample, CSV or Parquet: ``team``,
``sample``, and ``loss`` or ``prediction``; every team has every sample once. Predictions
need ``--labels FILE`` (columns ``sample`` and ``label``) and ``--scorer``. A competition run
gives them by playing the replication again from its seed (:func:`from_competition_run`).

A score is evaluated on a subset or a bootstrap resample of the samples through
:meth:`PrivateSamples.resampled` (count weights, one matrix product for losses, the scorer's
``on_resamples`` otherwise), and, where the score is an increasing function of the mean of a
per-sample risk (every loss; accuracy, RMSE and sign agreement), :meth:`per_sample_risks` gives
that risk, on which the fewest removals that change the winner are found exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from ladderlab.runs.workload import file_reading_work, refuse_if_too_large
from ladderlab.scoring import LossScorer, Scorer, get_scorer, scorer_option
from ladderlab.utils.tables import refuse_repeated_columns

FloatArray = NDArray[np.float64]
MEAN_RISKS: dict[str, Callable[[FloatArray, FloatArray], FloatArray]] = {
    "accuracy": lambda y, P: (P != y).astype(float),
    "rmse": lambda y, P: (P - y) ** 2,
    "sign-agreement": lambda y, P: -P * (2.0 * y - 1.0),
}
"""Per-sample risks whose mean the score increases with (its risk, sign × score, decreases):
accuracy = 1 − mean error, RMSE = √(mean squared error), sign agreement = ½ + ½·mean(ŷ·s)."""


@dataclass(frozen=True)
class PrivateSamples:
    """Teams × private samples: losses, or predictions with labels and a scorer."""

    teams: list[str]
    sample_ids: list[Any]
    losses: FloatArray | None = None
    predictions: FloatArray | None = None
    labels: FloatArray | None = None
    scorer: Scorer | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.losses is None and isinstance(self.scorer, LossScorer):
            object.__setattr__(self, "losses", self.scorer.loss(self.labels, self.predictions))

    @property
    def sign(self) -> float:
        """+1 when smaller scores are better (losses), −1 when larger are."""
        return 1.0 if self.scorer is None else self.scorer.sign

    @property
    def size(self) -> int:
        return len(self.sample_ids)

    @property
    def score_name(self) -> str:
        return "mean loss" if self.scorer is None else self.scorer.name

    def scores(self) -> FloatArray:
        """Each team's score on every sample."""
        return self.resampled(np.ones((1, self.size)))[0]

    def resampled(self, counts: FloatArray, teams: NDArray[np.intp] | None = None) -> FloatArray:
        """Scores (replicates × teams) on the samples weighted by each row of ``counts``: how often
        each was drawn in a bootstrap resample, or 1 for the samples kept and 0 for those removed."""
        chosen = slice(None) if teams is None else teams
        if self.losses is not None:  # teams × samples times samples × resamples: OpenBLAS's fast shape, 16× the other
            return (self.losses[chosen] @ counts.T).T / counts.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.scorer.on_resamples(self.labels, self.predictions[chosen], counts)

    def per_sample_risks(self) -> FloatArray | None:
        """Teams × samples risks r with sign × score an increasing function of the mean of r over
        any set of samples; None for a score that is not (ROC AUC, correlations)."""
        if self.losses is not None:
            return self.losses
        risk = MEAN_RISKS.get(self.scorer.name)
        return None if risk is None else risk(self.labels, self.predictions)


def read_samples(path: str | Path, labels: str | Path | None = None, scorer: str | None = None,
                 force: bool = False) -> PrivateSamples:
    """Per-sample private data from a long-form file (see the module docstring), validated: one
    line naming the file, the column and the value for anything wrong; a file too large to read
    in the memory available is refused (:class:`ladderlab.runs.workload.TooLarge`) unless ``force``."""
    path = Path(path)
    if scorer is not None:
        scorer_option(scorer)
    frame = _read_table(path, force)
    value = [c for c in ("loss", "prediction") if c in frame]
    missing = [c for c in ("team", "sample") if c not in frame]
    if missing or len(value) != 1:
        raise ValueError(f"{path}: per-sample data need the columns team, sample and one of loss or prediction; "
                         f"it has {', '.join(map(str, frame.columns)) or 'none'}")
    column = value[0]
    if column == "prediction" and (labels is None or scorer is None):
        raise ValueError(f"{path} holds predictions: give --labels FILE (columns sample, label) and --scorer NAME")
    if column == "loss" and scorer is not None:
        raise ValueError(f"--scorer {scorer}: {path} holds losses (smaller is better), which need no scorer")
    for name in ("team", "sample"):
        blank = (frame[name].isna() | (frame[name].astype(str).str.strip() == "")).to_numpy()
        if blank.any():
            position = int(np.flatnonzero(blank)[0])
            where = f"line {position + 2}" if path.suffix.lower() not in (".parquet", ".pq") else f"row {position + 1}"
            raise ValueError(f"{path}: column {name!r}, {where}: needs a {name} name, got "
                             f"{frame[name].iloc[position]!r} (every row names its {name})")
    frame = frame.assign(team=frame.team.astype(str), sample=frame["sample"].astype(str))
    values = _finite(path, frame, column)
    duplicated = frame.duplicated(["team", "sample"]).to_numpy()
    if duplicated.any():
        row = frame.iloc[int(np.flatnonzero(duplicated)[0])]
        raise ValueError(f"{path}: team {row.team!r} has sample {row['sample']!r} twice")
    teams = list(dict.fromkeys(frame.team))
    samples = list(dict.fromkeys(frame["sample"]))
    if len(frame) != len(teams) * len(samples):
        counts = frame.groupby("team", sort=False).size()
        short = counts.index[counts.to_numpy() != len(samples)][0]
        raise ValueError(f"{path}: every team needs every sample once; team {short!r} has {counts[short]} of "
                         f"the {len(samples)} samples")
    if len(teams) < 2 or len(samples) < 2:
        raise ValueError(f"{path}: a ranking needs at least two teams and two samples, got {len(teams)} and {len(samples)}")
    matrix = (pd.Series(values, index=pd.MultiIndex.from_arrays([frame.team, frame["sample"]]))
              .unstack("sample").reindex(index=teams, columns=samples).to_numpy(dtype=float))
    if column == "loss":
        return PrivateSamples(teams, samples, losses=matrix, source=str(path))
    return PrivateSamples(teams, samples, predictions=matrix, labels=_labels(Path(labels), samples),
                          scorer=get_scorer(scorer), source=str(path))


def _read_table(path: Path, force: bool = False) -> pd.DataFrame:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    refuse_if_too_large(file_reading_work(path), force, hint="fewer teams or samples need less")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pq.read_table(path).to_pandas()
        refuse_repeated_columns(path)
        return pd.read_csv(path, dtype={"team": str, "sample": str}, keep_default_na=False)
    except (pa.ArrowException, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as error:
        raise ValueError(f"{path}: not a readable table: {error}") from None


def _finite(path: Path, frame: pd.DataFrame, column: str) -> FloatArray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}: column {column!r}, team {frame.team.iloc[position]!r}, sample "
                         f"{frame['sample'].iloc[position]!r}: needs a finite number, got {frame[column].iloc[position]!r}")
    return values


def _labels(path: Path, samples: list[str]) -> FloatArray:
    frame = _read_table(path)
    if not {"sample", "label"}.issubset(frame.columns):
        raise ValueError(f"{path}: labels need the columns sample and label; it has {', '.join(map(str, frame.columns))}")
    frame = frame.assign(sample=frame["sample"].astype(str))
    values = pd.Series(_finite(path, frame.assign(team="-"), "label"), index=frame["sample"])
    if values.index.duplicated().any():
        raise ValueError(f"{path}: sample {values.index[values.index.duplicated()][0]!r} has two labels")
    missing = [sample for sample in samples if sample not in values.index]
    if missing:
        raise ValueError(f"{path}: no label for sample {missing[0]!r} (and {len(missing) - 1} more)")
    return values.reindex(samples).to_numpy(dtype=float)


def from_competition_run(row: Any) -> PrivateSamples:
    """Each team's counted prediction on the private rows of one replication of a competition
    run (a row of :func:`ladderlab.competition.results.load_competition_results`), by playing
    it again from its seed: same seed, same transcript. A replay whose scores differ from the
    run's (other code, or another version of a plugin) is an error."""
    from ladderlab.competition import Rules, TeamSpec, compete
    from ladderlab.final_rankings.final_leaderboard import from_competition_row
    from ladderlab.registry import MECHANISMS, TASKS

    task = TASKS.make(row.task, **json.loads(row.task_params))
    teams = [TeamSpec(**team) for team in json.loads(row.teams)]

    def play(capture: NDArray[np.int64] | None = None) -> Any:
        mechanism = MECHANISMS.make(row.mechanism, **json.loads(row.mechanism_params))
        result = compete(task, mechanism, teams, Rules(**json.loads(row.rules)), int(row.seed), int(row.replication), capture)
        for name, recorded in (("public", row.team_public), ("private", row.team_private)):
            if not np.array_equal(getattr(result, name), np.asarray(recorded, dtype=float)):
                raise ValueError(f"replaying replication {row.replication} of cell {row.cell[:10]} gives other {name} "
                                 "scores than the run recorded: the run was made by other code or plugin versions")
        return result

    first = play()
    counted = play(capture=(first.flagged or first).counted)  # one index per enrolled team
    return PrivateSamples(from_competition_row(row).teams, list(range(counted.private_labels.size)),
                          predictions=counted.counted_private_predictions, labels=counted.private_labels,
                          scorer=get_scorer(counted.scorer), source=f"cell {row.cell[:10]}, replication {row.replication}")
