"""Tasks: the data a duel runs on, split into training, public-leaderboard and final sets.

A task draws one replication's :class:`Split` from a Generator. The split's
``public`` part (:class:`PublicData`: training inputs and labels, and the holdout
*inputs*) is all an attack receives; the holdout labels and the positions of the
public rows stay with the organiser (the runner and the mechanism).

The holdout is one array of rows in a random order; a participant predicts all of
it without knowing which rows are public (Blum & Hardt §5.1).

Experiment modes (Chaibub Neto et al., Results; docs/decisions.md#experiment-modes):

- ``"permuted"``: the data and the split are fixed by ``data_seed``; each
  replication permutes the response within each set, so nothing is truly associated.
- ``"random-split"``: the data are fixed by ``data_seed``; each replication re-splits.

Every set is standardised separately, features and response (regression), so an
MSE of about 1 means no skill.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from ladderlab.params import Boolean, Interval, Options, Range
from ladderlab.plugin import Plugin
from ladderlab.scoring import ALIASES, SCORERS, PredictionKind, get_scorer

FloatArray = NDArray[np.float64]
TaskType = Literal["classification", "regression"]
Mode = Literal["permuted", "random-split"]


@dataclass(frozen=True, eq=False)
class PublicData:
    """What a participant sees: training data, the holdout inputs, the metric and the label set."""

    X_train: FloatArray
    y_train: FloatArray
    X_holdout: FloatArray
    task_type: TaskType
    scorer: str
    classes: FloatArray | None = None
    public_rows: NDArray[np.int64] | None = None
    """The holdout rows the public leaderboard scores, where the competition discloses them
    (two-stage competitions, whose public leaderboard scores all of the stage-1 test
    set); None: the participant does not know them (Blum & Hardt §5.1)."""
    prediction_range: tuple[float, float] | None = None
    """The declared range [low, high] of a real-valued or probability prediction, public
    knowledge like the metric: predictions are clipped into it before they are scored, so
    the per-sample loss is bounded and mechanism parameters can be stated in units of that
    bound (Blum & Hardt's Theorem 3.1 assumes a loss in [0, 1]). None: no range declared."""

    @property
    def binary_labels(self) -> bool:
        """True when the label set is {0, 1} (what boosting-style attacks and analysts need)."""
        return self.classes is not None and set(self.classes.tolist()) == {0.0, 1.0}


@dataclass(frozen=True, eq=False)
class Split:
    """One replication's data, as the organiser holds it."""

    public: PublicData
    public_rows: NDArray[np.int64]
    final_rows: NDArray[np.int64]
    y_holdout: FloatArray = field(repr=False)
    population_score: float | None = None
    """The exact population score of *any* submission, where the task knows it."""

    @property
    def y_public(self) -> FloatArray:
        return self.y_holdout[self.public_rows]

    @property
    def y_final(self) -> FloatArray:
        return self.y_holdout[self.final_rows]


SCORER_NAMES = frozenset({*SCORERS, *ALIASES})
MODES = frozenset({"permuted", "random-split"})
TRAINING_RANGE = "training"
"""A task's ``prediction_range`` setting: the range of the training labels, which participants see."""
PREDICTION_RANGE = [Options({TRAINING_RANGE}), Range(), None]
"""The declaration of a task's ``prediction_range`` parameter: None (no range declared, as
the papers' experiments), ``"training"``, or [low, high]."""


def declared_range(setting: str | list[float] | tuple[float, float] | None,
                   y_train: FloatArray | None = None) -> tuple[float, float] | None:
    """The prediction range a task declares: None, the training labels' range, or the given one."""
    if setting is None:
        return None
    if setting == TRAINING_RANGE and y_train is not None:
        return float(y_train.min()), float(y_train.max())
    low, high = setting
    return float(low), float(high)


class Task(Plugin):
    """A family of data sets; ``split(rng)`` draws one replication."""

    task_type: ClassVar[TaskType]
    default_scorer: ClassVar[str]

    def _check_params(self) -> None:
        """The scorer must suit the task: label scorers (0/1 loss, accuracy) and probability
        scorers (log loss) need a classification task."""
        scorer = get_scorer(getattr(self, "scorer", None) or self.default_scorer)
        if self.task_type == "regression" and scorer.prediction_kind is not PredictionKind.REAL:
            raise ValueError(
                f"{self.id}: parameter 'scorer' = {scorer.name!r} scores class labels or probabilities, "
                "but this is a regression task (use e.g. 'squared', 'absolute', 'pearson' or 'ccc')"
            )

    def split(self, rng: np.random.Generator) -> Split:
        """One replication's training, public and final sets."""
        raise NotImplementedError

    def data_fingerprint(self) -> str | None:
        """A hash of the data the task reads from outside its parameters (files), part of its
        fingerprint: a finished cell whose data changed is stale (:mod:`ladderlab.runs.rundir`).
        None: the parameters determine the data."""
        return None

    def data_shape(self) -> tuple[int, int] | None:
        """(rows, columns) of one replication's data, training and holdout rows, features and
        label, known from the parameters alone (None: not declared; the data are then
        measured when first drawn). Sizes a run before it starts (:mod:`ladderlab.runs.workload`)."""
        return None


def _standardise(a: FloatArray) -> FloatArray:
    """Centre and scale each column (or a vector) to mean 0, sd 1; constant columns become 0."""
    centred = a - a.mean(axis=0)
    sd = a.std(axis=0)
    return centred / np.where(sd > 0, sd, 1.0)


def _assemble(
    X_sets: tuple[FloatArray, FloatArray, FloatArray],
    y_sets: tuple[FloatArray, FloatArray, FloatArray],
    task: Task,
    scorer: str,
    rng: np.random.Generator,
    classes: FloatArray | None = None,
    population_score: float | None = None,
    prediction_range: tuple[float, float] | None = None,
) -> Split:
    """A Split from (train, public, final) sets; the holdout rows are shuffled together."""
    (X_tr, X_pub, X_fin), (y_tr, y_pub, y_fin) = X_sets, y_sets
    n_pub, n_fin = len(y_pub), len(y_fin)
    order = rng.permutation(n_pub + n_fin)
    X_holdout = np.concatenate([X_pub, X_fin])[order]
    y_holdout = np.concatenate([y_pub, y_fin])[order]
    position = np.argsort(order)
    public = PublicData(X_tr, y_tr, X_holdout, task.task_type, scorer, classes, prediction_range=prediction_range)
    return Split(public, position[:n_pub], position[n_pub:], y_holdout, population_score)


class RandomLabels(Task):
    """Labels uniform in {0, …, m − 1} with no features: the boosting attacks' task (Blum & Hardt §5.1).

    n public of ``n_holdout`` labels (the paper: 4000 of 12000), ``n_classes`` = m
    (2 in the paper; m > 2 for Feldman, Frostig & Hardt 2019). Without side
    information any submission's population 0/1 loss is exactly 1 − 1/m (accuracy 1/m).
    ``side_information`` = s > 0 gives every holdout row, and ``n_train`` training
    rows, m features s·onehot(y) + N(0, I): what a trained side model would know,
    for model-guided attacks and honest participants (the population score then
    depends on the submission and is left to the final set).
    """

    id = "random-labels"
    reference = "Blum & Hardt 2015, §5.1; Feldman, Frostig & Hardt 2019 (m classes)"
    task_type = "classification"
    default_scorer = "zero-one"

    _parameter_constraints = {
        "n_public": [Interval(int, 2, None)],
        "n_holdout": [Interval(int, 3, None)],
        "scorer": [Options({"zero-one", "error", "accuracy"})],
        "n_classes": [Interval(int, 2, None)],
        "side_information": [Interval(float, 0, None)],
        "n_train": [Interval(int, 1, None)],
    }

    def __init__(
        self,
        n_public: int = 4000,
        n_holdout: int = 12000,
        scorer: str = "zero-one",
        n_classes: int = 2,
        side_information: float = 0.0,
        n_train: int = 1000,
    ):
        self.n_public = n_public
        self.n_holdout = n_holdout
        self.scorer = scorer
        self.n_classes = n_classes
        self.side_information = side_information
        self.n_train = n_train

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_public >= self.n_holdout:
            raise ValueError(
                f"{self.id}: n_public ({self.n_public}) must be smaller than n_holdout ({self.n_holdout}): "
                "the rest of the holdout is the final set"
            )

    def split(self, rng: np.random.Generator) -> Split:
        m = self.n_classes
        labels = rng.integers(0, m, self.n_holdout).astype(float)
        classes = np.arange(m, dtype=float)
        if self.side_information > 0:
            y_train = rng.integers(0, m, self.n_train).astype(float)
            X_train, X_holdout = (self._side_features(y, rng) for y in (y_train, labels))
            public = PublicData(X_train, y_train, X_holdout, "classification", self.scorer, classes)
            population = None
        else:
            empty = np.empty((0, 0))
            public = PublicData(empty, np.empty(0), np.empty((self.n_holdout, 0)), "classification", self.scorer, classes)
            population = 1.0 / m if self.scorer == "accuracy" else 1.0 - 1.0 / m
        return Split(public, np.arange(self.n_public), np.arange(self.n_public, self.n_holdout), labels, population)

    def _side_features(self, y: FloatArray, rng: np.random.Generator) -> FloatArray:
        return self.side_information * np.eye(self.n_classes)[y.astype(int)] + rng.standard_normal((y.size, self.n_classes))

    def data_shape(self) -> tuple[int, int]:
        if self.side_information > 0:
            return self.n_train + self.n_holdout, self.n_classes + 1
        return self.n_holdout, 1


class TabularTask(Task):
    """Shared logic of tasks built from a fixed (X, y): three-way split, permutation, standardisation."""

    def _data(self, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def split(self, rng: np.random.Generator) -> Split:
        scorer = get_scorer(self.scorer or self.default_scorer).name
        X, y, fixed_sets = _fixed_data(self)
        if self.mode == "permuted":
            X_sets, y_parts = fixed_sets
            y_parts = [y_part[rng.permutation(len(y_part))] for y_part in y_parts]
        else:
            sets = np.array_split(rng.permutation(len(y)), 3)
            X_sets = [_standardise(X[rows]) for rows in sets]
            y_parts = [y[rows] for rows in sets]
        y_sets = [y_part if self.task_type == "classification" else _standardise(y_part) for y_part in y_parts]
        classes = np.unique(y) if self.task_type == "classification" else None
        prediction_range = declared_range(getattr(self, "prediction_range", None), y_sets[0])
        return _assemble(tuple(X_sets), tuple(y_sets), self, scorer, rng, classes, prediction_range=prediction_range)


_FIXED_DATA: dict[tuple[type, str], tuple[FloatArray, FloatArray, tuple[list[FloatArray], list[FloatArray]] | None]] = {}
_FIXED_DATA_LIMIT = 8


def _fixed_data(task: TabularTask) -> tuple[FloatArray, FloatArray, tuple[list[FloatArray], list[FloatArray]] | None]:
    """What ``data_seed`` fixes: (X, y) and, in permuted mode, the split's standardised X
    sets and unpermuted y sets. Cached per task class and parameters (a few entries, read-only
    arrays): the same values every replication would rebuild, so results are bit-identical."""
    key = (type(task), json.dumps(task.get_params(), sort_keys=True, default=str))
    if key not in _FIXED_DATA:
        fixed = np.random.default_rng(task.data_seed)
        X, y = task._data(fixed)
        sets = None
        if task.mode == "permuted":
            rows = np.array_split(fixed.permutation(len(y)), 3)
            sets = ([_standardise(X[r]) for r in rows], [y[r] for r in rows])
        for array in (X, y, *(sets[0] if sets else ()), *(sets[1] if sets else ())):
            array.setflags(write=False)
        if len(_FIXED_DATA) >= _FIXED_DATA_LIMIT:
            del _FIXED_DATA[next(iter(_FIXED_DATA))]
        _FIXED_DATA[key] = (X, y, sets)
    return _FIXED_DATA[key]


GAUSSIAN_PRESETS = {
    "ad-challenge": {"n_samples": 628, "n_features": 300},
    "simulated": {"n_samples": 120, "n_features": 1000},
}


class GaussianRegression(TabularTask):
    """Correlated Gaussian features and a response that is null or built from a few of them.

    Chaibub Neto et al., Results: features from a multivariate normal with strong
    correlation (``correlation="ar1"``: corr(x_j, x_k) = ρ^|j−k|; ``"blocks"``:
    ρ within blocks of ``block_size``, 0 across). The response is independent of the
    features when ``n_signal = 0``; otherwise it is the sum of ``n_signal`` features
    spread evenly over the columns plus noise, at the given signal-to-noise ratio
    (variance of signal / variance of noise). Presets: ``"ad-challenge"`` (n = 628,
    p = 300, the paper's AD Challenge subset) and ``"simulated"`` (n = 120,
    p = 1000); explicit ``n_samples`` / ``n_features`` override the preset.
    ``prediction_range`` declares the range predictions are clipped into (bounding the
    loss, :mod:`ladderlab.scoring`): ``"training"``, the standardised training labels'
    range, or [low, high]; None (the papers' setting) declares none.
    """

    id = "gaussian-regression"
    reference = "Chaibub Neto et al. 2016, Results (simulated and AD Challenge data)"
    task_type = "regression"
    default_scorer = "squared"
    _parameter_constraints = {
        "preset": [Options(GAUSSIAN_PRESETS)],
        "n_samples": [Interval(int, 9, None), None],
        "n_features": [Interval(int, 1, None), None],
        "correlation": [Options({"ar1", "blocks"})],
        "rho": [Interval(float, 0, 1, closed="left")],
        "block_size": [Interval(int, 1, None)],
        "n_signal": [Interval(int, 0, None)],
        "snr": [Interval(float, 0, None, closed="neither")],
        "mode": [Options(MODES)],
        "data_seed": [Interval(int, 0, None)],
        "scorer": [Options(SCORER_NAMES)],
        "prediction_range": PREDICTION_RANGE,
    }
    """At least 9 samples: three sets (training, public, final) of at least three."""
    _added_parameters = frozenset({"prediction_range"})

    def __init__(
        self,
        preset: str = "ad-challenge",
        n_samples: int | None = None,
        n_features: int | None = None,
        correlation: str = "ar1",
        rho: float = 0.9,
        block_size: int = 10,
        n_signal: int = 0,
        snr: float = 1.0,
        mode: str = "permuted",
        data_seed: int = 0,
        scorer: str = "squared",
        prediction_range: str | list[float] | None = None,
    ):
        self.preset = preset
        self.n_samples = n_samples
        self.n_features = n_features
        self.correlation = correlation
        self.rho = rho
        self.block_size = block_size
        self.n_signal = n_signal
        self.snr = snr
        self.mode = mode
        self.data_seed = data_seed
        self.scorer = scorer
        self.prediction_range = prediction_range

    @property
    def shape(self) -> tuple[int, int]:
        """(samples, features): the explicit values, else the preset's."""
        preset = GAUSSIAN_PRESETS[self.preset]
        return self.n_samples or preset["n_samples"], self.n_features or preset["n_features"]

    def data_shape(self) -> tuple[int, int]:
        samples, features = self.shape
        return samples, features + 1

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_signal > self.shape[1]:
            raise ValueError(
                f"{self.id}: n_signal ({self.n_signal}) must not exceed the number of features ({self.shape[1]})"
            )

    def _data(self, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        n, p = self.shape
        noise = rng.standard_normal((n, p))
        if self.correlation == "ar1":
            X = np.empty((n, p))
            X[:, 0] = noise[:, 0]
            innovation = np.sqrt(1 - self.rho**2)
            for j in range(1, p):
                X[:, j] = self.rho * X[:, j - 1] + innovation * noise[:, j]
        else:
            shared = rng.standard_normal((n, -(-p // self.block_size))).repeat(self.block_size, axis=1)[:, :p]
            X = np.sqrt(self.rho) * shared + np.sqrt(1 - self.rho) * noise
        y = rng.standard_normal(n)
        if self.n_signal:
            signal = X[:, np.linspace(0, p - 1, self.n_signal).astype(int)].sum(axis=1)
            y = signal + y * np.sqrt(signal.var() / self.snr)
        return X, y


class SklearnDataset(TabularTask):
    """A data set that scikit-learn ships (no download), split and permuted like the others."""

    loader: ClassVar[str]
    _parameter_constraints = {
        "mode": [Options(MODES)],
        "data_seed": [Interval(int, 0, None)],
        "scorer": [Options(SCORER_NAMES), None],
    }

    def __init__(self, mode: str = "permuted", data_seed: int = 0, scorer: str | None = None):
        self.mode = mode
        self.data_seed = data_seed
        self.scorer = scorer

    def _data(self, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        from sklearn import datasets  # imported here: scikit-learn is slow to import

        X, y = getattr(datasets, self.loader)(return_X_y=True)
        return X.astype(float), y.astype(float)


class Diabetes(SklearnDataset):
    """scikit-learn's diabetes regression data (442 patients, 10 features)."""

    id = "diabetes"
    reference = "Efron et al. 2004, via sklearn.datasets.load_diabetes"
    task_type = "regression"
    default_scorer = "squared"
    loader = "load_diabetes"


class BreastCancer(SklearnDataset):
    """scikit-learn's Wisconsin breast-cancer classification data (569 samples, 30 features)."""

    id = "breast-cancer"
    reference = "Street et al. 1993, via sklearn.datasets.load_breast_cancer"
    task_type = "classification"
    default_scorer = "zero-one"
    loader = "load_breast_cancer"


LOG_LOSS_PRESETS = {
    "dsb-2017": {"n_public": 198, "n_holdout": 198 + 506, "n_classes": 2},
}
"""Data Science Bowl 2017 (Kaggle): the stage-1 leaderboard scored all 198 stage-1 test
patients with binary log loss (clipped at 1e-15, shown to 5 decimals); the final
ranking scored 506 new stage-2 patients."""


class LogLossRandomLabels(Task):
    """Random labels in {0, …, m − 1} scored by clipped log loss, as a two-stage Kaggle competition.

    The labels carry no signal; the public leaderboard scores ``n_public`` of the
    ``n_holdout`` rows, and (``disclose_public_rows=True``, the default) the
    participant knows which, as in a two-stage competition whose stage-1 leaderboard
    scores the whole stage-1 test set. m = 2 is scored with ``log-loss`` (one
    probability of class 1 per row), m > 2 with ``multiclass-log-loss`` (a probability
    row per sample); both clip at 1e-15 as Kaggle does. Preset ``"dsb-2017"``: the
    Data Science Bowl 2017 (198 public of 704, binary), the setting of the log-loss
    label-recovery attack (Whitehill 2017); explicit values override the preset,
    ``preset=None`` needs them all. ``prediction_range`` = [p₀, p₁] declares the
    probability range predictions are clipped into, which bounds the log loss
    (:mod:`ladderlab.scoring`); None, as on Kaggle, declares none.
    """

    id = "random-labels-log-loss"
    reference = "Whitehill 2017 (log-loss oracle); Kaggle Data Science Bowl 2017"
    task_type = "classification"
    default_scorer = "log-loss"

    _parameter_constraints = {
        "preset": [Options(set(LOG_LOSS_PRESETS)), None],
        "n_public": [Interval(int, 1, None), None],
        "n_holdout": [Interval(int, 2, None), None],
        "n_classes": [Interval(int, 2, None), None],
        "disclose_public_rows": [Boolean()],
        "prediction_range": [Range(0.0, 1.0), None],
    }
    _added_parameters = frozenset({"prediction_range"})

    def __init__(
        self,
        preset: str | None = "dsb-2017",
        n_public: int | None = None,
        n_holdout: int | None = None,
        n_classes: int | None = None,
        disclose_public_rows: bool = True,
        prediction_range: list[float] | None = None,
    ):
        self.preset = preset
        self.n_public = n_public
        self.n_holdout = n_holdout
        self.n_classes = n_classes
        self.disclose_public_rows = disclose_public_rows
        self.prediction_range = prediction_range

    def _check_params(self) -> None:
        super()._check_params()
        self.shape()

    def shape(self) -> tuple[int, int, int]:
        """(n_public, n_holdout, n_classes) after the preset and the explicit values."""
        preset = LOG_LOSS_PRESETS.get(self.preset, {}) if self.preset else {}
        values = {}
        for name in ("n_public", "n_holdout", "n_classes"):
            value = getattr(self, name)
            values[name] = preset.get(name) if value is None else value
            if values[name] is None:
                raise ValueError(f"{self.id}: {name} must be given when preset is None")
        if values["n_public"] >= values["n_holdout"]:
            raise ValueError(f"{self.id}: n_public ({values['n_public']}) must be smaller than n_holdout "
                             f"({values['n_holdout']})")
        return values["n_public"], values["n_holdout"], values["n_classes"]

    def data_shape(self) -> tuple[int, int]:
        return self.shape()[1], 1

    def split(self, rng: np.random.Generator) -> Split:
        n_public, n_holdout, m = self.shape()
        labels = rng.integers(0, m, n_holdout).astype(float)
        order = rng.permutation(n_holdout)
        public_rows, final_rows = np.sort(order[:n_public]), np.sort(order[n_public:])
        scorer = "log-loss" if m == 2 else "multiclass-log-loss"
        empty = np.empty((0, 0))
        public = PublicData(empty, np.empty(0), np.empty((n_holdout, 0)), "classification", scorer,
                            np.arange(m, dtype=float), public_rows.copy() if self.disclose_public_rows else None,
                            declared_range(self.prediction_range))
        return Split(public, public_rows, final_rows, labels)


class CorrelatedFeatureSelection(Task):
    """Gaussian features and uniform binary labels: the reusable-holdout experiment of Dwork et al. 2015.

    Science 2015, Fig. 1: n training, n holdout and n fresh points, d features
    N(0, 1), labels uniform in {0, 1} (coded ±1 by the ``sign-agreement`` scorer).
    Without signal (``n_signal = 0``) nothing is learnable; with it, the first
    ``n_signal`` features are shifted by 6/√n · (2y − 1) (Fig. 2). The public
    leaderboard holds the n holdout points, the final set the n fresh ones; the
    paper's n = d = 10,000 takes 1.2 GB (features stored in single precision), so
    the default is n = d = 2,000, where the analyst's k scales by 1/5.

    ``public_set="training+holdout"`` is the published reusable holdout: the
    leaderboard holds the analyst's n training points, then the n holdout points (in
    that order; the holdout inputs the analyst predicts are the training, holdout and
    fresh inputs), so that Thresholdout with ``split="ordered"`` compares each query on
    the training set with the holdout, as the Science code does. Its exact public score
    is then the mean over training and holdout.
    """

    id = "correlated-feature-selection"
    reference = "Dwork et al. 2015, Science, Figs. 1-2"
    task_type = "classification"
    default_scorer = "sign-agreement"
    _parameter_constraints = {
        "n": [Interval(int, 10, None)],
        "d": [Interval(int, 1, None)],
        "n_signal": [Interval(int, 0, None)],
        "scorer": [Options({"sign-agreement"})],
        "public_set": [Options({"holdout", "training+holdout"})],
    }
    _added_parameters = frozenset({"public_set"})

    def __init__(self, n: int = 2000, d: int = 2000, n_signal: int = 0, scorer: str = "sign-agreement",
                 public_set: str = "holdout"):
        self.n = n
        self.d = d
        self.n_signal = n_signal
        self.scorer = scorer
        self.public_set = public_set

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_signal > self.d:
            raise ValueError(f"{self.id}: n_signal ({self.n_signal}) must not exceed d ({self.d})")

    def data_shape(self) -> tuple[int, int]:
        return 3 * self.n, self.d // 2 + 1  # the features are single precision

    def split(self, rng: np.random.Generator) -> Split:
        y = rng.integers(0, 2, 3 * self.n).astype(float)
        X = rng.standard_normal((3 * self.n, self.d), dtype=np.float32)
        X[:, : self.n_signal] += (6.0 / np.sqrt(self.n) * (2.0 * y - 1.0))[:, None].astype(np.float32)
        train = slice(0, self.n)
        first = self.n if self.public_set == "holdout" else 0
        public = PublicData(X[train], y[train], X[first:], "classification", self.scorer, np.array([0.0, 1.0]))
        n_public = 3 * self.n - first - self.n
        return Split(public, np.arange(n_public), np.arange(n_public, n_public + self.n), y[first:])


class KinaseBinding(Task):
    """A regression task shaped like the IDG-DREAM Drug-Kinase Binding challenge, round 1b (2019).

    Synthetic: binding affinities pKd = 6 + (a linear signal of ``n_features``
    compound–kinase descriptors) + noise, rounded to 0.01 and censored below at
    pKd = 5 (the assay floor of 10 µM), so that rank metrics see the ties of real
    pKd tables. ``n_public`` leaderboard points (default 430, the round 1 test set
    size as we read the challenge paper: Cichońska et al. 2021, Nat. Commun. 12:3307),
    as many final points, and ``n_train`` training pairs. ``snr`` is the variance of
    the signal over that of the noise. Scored with Spearman's ρ as the challenge
    decided its leaderboard; RMSE, Pearson or squared loss on request.
    """

    id = "idg-dream-1b"
    reference = "Cichońska et al. 2021 (IDG-DREAM challenge); shape only, synthetic data"
    task_type = "regression"
    default_scorer = "spearman"
    _parameter_constraints = {
        "n_public": [Interval(int, 10, None)],
        "n_train": [Interval(int, 10, None)],
        "n_features": [Interval(int, 1, None)],
        "snr": [Interval(float, 0, None, closed="neither")],
        "scorer": [Options({"spearman", "pearson", "rmse", "squared", "absolute", "ccc"})],
    }

    def __init__(self, n_public: int = 430, n_train: int = 2000, n_features: int = 50, snr: float = 1.0, scorer: str = "spearman"):
        self.n_public = n_public
        self.n_train = n_train
        self.n_features = n_features
        self.snr = snr
        self.scorer = scorer

    def data_shape(self) -> tuple[int, int]:
        return self.n_train + 2 * self.n_public, self.n_features + 1

    def split(self, rng: np.random.Generator) -> Split:
        n = self.n_train + 2 * self.n_public
        X = rng.standard_normal((n, self.n_features))
        beta = rng.standard_normal(self.n_features) / np.sqrt(self.n_features)
        signal = X @ beta
        y = 6.0 + signal + rng.standard_normal(n) * np.sqrt(signal.var() / self.snr)
        y = np.maximum(np.round(y, 2), 5.0)
        train = slice(0, self.n_train)
        return _assemble(
            (X[train], X[self.n_train : self.n_train + self.n_public], X[self.n_train + self.n_public :]),
            (y[train], y[self.n_train : self.n_train + self.n_public], y[self.n_train + self.n_public :]),
            self, self.scorer, rng,
        )


@dataclass(frozen=True, eq=False)
class LabelNoiseSplit(Split):
    """A split whose task knows P(y = 1 | x) at every holdout input.

    Then every submission has an exact population score: its expected score over
    fresh labels drawn at the same inputs (see :func:`ladderlab.competition.population_scores`).
    """

    holdout_probabilities: FloatArray | None = field(default=None, repr=False)


class LatentClassification(Task):
    """Binary labels from a logistic model of Gaussian features, with P(y = 1 | x) known.

    x ~ N(0, I_p); the logit is ``signal``·x·β with β_k ∝ ``decay``^k (unit norm), so a few
    features carry most of the signal and a participant's choice of features sets its
    skill; y ~ Bernoulli(sigmoid(logit)). Fresh data every replication. Because the task
    knows P(y = 1 | x) for every holdout input, each submission's population score is
    exact (Blum & Hardt, Def. 2.1, with R_D conditional on the holdout inputs), which
    competitions need to tell the truly best team. ``n_public`` of ``n_holdout`` rows are
    public; ``disclose_public_rows=True`` tells the participants which (a two-stage
    competition such as the Data Science Bowl 2017, where the log-loss oracle plays).
    ``prediction_range`` = [p₀, p₁] declares the probability range a log-loss prediction is
    clipped into (:mod:`ladderlab.scoring`).
    """

    id = "latent-classification"
    reference = "ladderlab competition task (logistic model with known label noise)"
    task_type = "classification"
    default_scorer = "zero-one"
    _parameter_constraints = {
        "n_train": [Interval(int, 10, None)],
        "n_public": [Interval(int, 2, None)],
        "n_holdout": [Interval(int, 4, None)],
        "n_features": [Interval(int, 1, None)],
        "signal": [Interval(float, 0, None)],
        "decay": [Interval(float, 0, 1, closed="right")],
        "scorer": [Options({"zero-one", "accuracy", "log-loss"})],
        "disclose_public_rows": [Boolean()],
        "prediction_range": [Range(0.0, 1.0), None],
    }
    _added_parameters = frozenset({"prediction_range"})

    def __init__(
        self,
        n_train: int = 2000,
        n_public: int = 1500,
        n_holdout: int = 5000,
        n_features: int = 20,
        signal: float = 3.0,
        decay: float = 0.8,
        scorer: str = "zero-one",
        disclose_public_rows: bool = False,
        prediction_range: list[float] | None = None,
    ):
        self.n_train = n_train
        self.n_public = n_public
        self.n_holdout = n_holdout
        self.n_features = n_features
        self.signal = signal
        self.decay = decay
        self.scorer = scorer
        self.disclose_public_rows = disclose_public_rows
        self.prediction_range = prediction_range

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_public >= self.n_holdout:
            raise ValueError(f"{self.id}: n_public ({self.n_public}) must be smaller than n_holdout ({self.n_holdout})")
        if self.prediction_range is not None and self.scorer != "log-loss":
            raise ValueError(f"{self.id}: a prediction_range bounds the log loss; the {self.scorer!r} scorer takes labels")

    def data_shape(self) -> tuple[int, int]:
        return self.n_train + self.n_holdout, self.n_features + 2

    def split(self, rng: np.random.Generator) -> Split:
        beta = self.decay ** np.arange(self.n_features)
        beta *= self.signal / np.linalg.norm(beta)
        X = rng.standard_normal((self.n_train + self.n_holdout, self.n_features))
        probabilities = 1.0 / (1.0 + np.exp(-X @ beta))
        y = (rng.random(probabilities.size) < probabilities).astype(float)
        X_train, X_holdout = X[: self.n_train], X[self.n_train :]
        classes = np.array([0.0, 1.0])
        order = rng.permutation(self.n_holdout)
        public_rows = np.sort(order[: self.n_public])
        public = PublicData(X_train, y[: self.n_train], X_holdout, "classification", self.scorer, classes,
                            public_rows.copy() if self.disclose_public_rows else None, declared_range(self.prediction_range))
        return LabelNoiseSplit(
            public,
            public_rows,
            np.sort(order[self.n_public :]),
            y[self.n_train :],
            holdout_probabilities=probabilities[self.n_train :],
        )
