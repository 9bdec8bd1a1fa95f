"""Tasks: the data a duel runs on, split into training, public-leaderboard and final sets.

A task draws one replication's :class:`Split` from a Generator. The split's
``public`` part (:class:`PublicData`: training inputs and labels, and the holdout
*inputs*) is all an attack receives; the holdout labels and the positions of the
public rows stay with the organiser (the runner and the mechanism).

The holdout is one array of rows in a random order; a participant predicts all of
it without knowing which rows are public (Blum & Hardt §5.1).

Experiment modes (Chaibub Neto et al., Results; NOTES.md 13):

- ``"permuted"``: the data and the split are fixed by ``data_seed``; each
  replication permutes the response within each set, so nothing is truly associated.
- ``"random-split"``: the data are fixed by ``data_seed``; each replication re-splits.

Every set is standardised separately, features and response (regression), so an
MSE of about 1 means no skill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import NDArray
from sklearn import datasets

from ladderlab.mechanism import require, require_count
from ladderlab.params import Interval, Options
from ladderlab.plugin import Plugin
from ladderlab.scoring import get_scorer

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


class Task(Plugin):
    """A family of data sets; ``split(rng)`` draws one replication."""

    task_type: ClassVar[TaskType]
    default_scorer: ClassVar[str]

    def split(self, rng: np.random.Generator) -> Split:
        """One replication's training, public and final sets."""
        raise NotImplementedError


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
) -> Split:
    """A Split from (train, public, final) sets; the holdout rows are shuffled together."""
    (X_tr, X_pub, X_fin), (y_tr, y_pub, y_fin) = X_sets, y_sets
    n_pub, n_fin = len(y_pub), len(y_fin)
    order = rng.permutation(n_pub + n_fin)
    X_holdout = np.concatenate([X_pub, X_fin])[order]
    y_holdout = np.concatenate([y_pub, y_fin])[order]
    position = np.argsort(order)
    public = PublicData(X_tr, y_tr, X_holdout, task.task_type, scorer, classes)
    return Split(public, position[:n_pub], position[n_pub:], y_holdout, population_score)


class RandomLabels(Task):
    """Labels uniform in {0, 1} with no features: the boosting attack's task (Blum & Hardt §5.1).

    n public of ``n_holdout`` labels (the paper: 4000 of 12000). Any submission's
    population 0/1 loss (and accuracy) is exactly 1/2.
    """

    id = "random-labels"
    reference = "Blum & Hardt 2015, §5.1"
    task_type = "classification"
    default_scorer = "zero-one"

    def __init__(self, n_public: int = 4000, n_holdout: int = 12000, scorer: str = "zero-one"):
        self.n_public = n_public
        self.n_holdout = n_holdout
        self.scorer = scorer

    def split(self, rng: np.random.Generator) -> Split:
        require_count("n_public", self.n_public)
        require(
            self.n_public < self.n_holdout,
            f"n_public ({self.n_public}) must be smaller than n_holdout ({self.n_holdout})",
        )
        require(self.scorer in ("zero-one", "accuracy"), f"random-labels scores labels: zero-one or accuracy, not {self.scorer!r}")
        labels = rng.integers(0, 2, self.n_holdout).astype(float)
        empty = np.empty((0, 0))
        public = PublicData(empty, np.empty(0), np.empty((self.n_holdout, 0)), "classification", self.scorer, np.array([0.0, 1.0]))
        return Split(public, np.arange(self.n_public), np.arange(self.n_public, self.n_holdout), labels, 0.5)


class TabularTask(Task):
    """Shared logic of tasks built from a fixed (X, y): three-way split, permutation, standardisation."""

    def _data(self, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def split(self, rng: np.random.Generator) -> Split:
        require(self.mode in ("permuted", "random-split"), f"mode must be 'permuted' or 'random-split', got {self.mode!r}")
        scorer = get_scorer(self.scorer or self.default_scorer).name
        fixed = np.random.default_rng(self.data_seed)
        X, y = self._data(fixed)
        sets = np.array_split(fixed.permutation(len(y)) if self.mode == "permuted" else rng.permutation(len(y)), 3)
        X_sets, y_sets = [], []
        for rows in sets:
            X_part, y_part = X[rows], y[rows]
            if self.mode == "permuted":
                y_part = y_part[rng.permutation(len(rows))]
            X_sets.append(_standardise(X_part))
            y_sets.append(y_part if self.task_type == "classification" else _standardise(y_part))
        classes = np.unique(y) if self.task_type == "classification" else None
        return _assemble(tuple(X_sets), tuple(y_sets), self, scorer, rng, classes)


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
    """

    id = "gaussian-regression"
    reference = "Chaibub Neto et al. 2016, Results (simulated and AD Challenge data)"
    task_type = "regression"
    default_scorer = "squared"

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

    def _data(self, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
        require(self.preset in GAUSSIAN_PRESETS, f"preset must be one of {sorted(GAUSSIAN_PRESETS)}, got {self.preset!r}")
        n = self.n_samples or GAUSSIAN_PRESETS[self.preset]["n_samples"]
        p = self.n_features or GAUSSIAN_PRESETS[self.preset]["n_features"]
        require(n >= 9, f"n_samples must be at least 9 (three sets of three), got {n}")
        require(0 <= self.rho < 1, f"rho must lie in [0, 1), got {self.rho}")
        require(0 <= self.n_signal <= p, f"n_signal must lie in 0 … n_features ({p}), got {self.n_signal}")
        noise = rng.standard_normal((n, p))
        if self.correlation == "ar1":
            X = np.empty((n, p))
            X[:, 0] = noise[:, 0]
            innovation = np.sqrt(1 - self.rho**2)
            for j in range(1, p):
                X[:, j] = self.rho * X[:, j - 1] + innovation * noise[:, j]
        elif self.correlation == "blocks":
            require_count("block_size", self.block_size)
            shared = rng.standard_normal((n, -(-p // self.block_size))).repeat(self.block_size, axis=1)[:, :p]
            X = np.sqrt(self.rho) * shared + np.sqrt(1 - self.rho) * noise
        else:
            raise ValueError(f"correlation must be 'ar1' or 'blocks', got {self.correlation!r}")
        y = rng.standard_normal(n)
        if self.n_signal:
            require(self.snr > 0, f"snr must be positive, got {self.snr}")
            signal = X[:, np.linspace(0, p - 1, self.n_signal).astype(int)].sum(axis=1)
            y = signal + y * np.sqrt(signal.var() / self.snr)
        return X, y


class SklearnDataset(TabularTask):
    """A data set that scikit-learn ships (no download), split and permuted like the others."""

    loader: ClassVar[str]

    def __init__(self, mode: str = "permuted", data_seed: int = 0, scorer: str | None = None):
        self.mode = mode
        self.data_seed = data_seed
        self.scorer = scorer

    def _data(self, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
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
    public.
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
    }

    def __init__(
        self,
        n_train: int = 2000,
        n_public: int = 1500,
        n_holdout: int = 5000,
        n_features: int = 20,
        signal: float = 3.0,
        decay: float = 0.8,
        scorer: str = "zero-one",
    ):
        self.n_train = n_train
        self.n_public = n_public
        self.n_holdout = n_holdout
        self.n_features = n_features
        self.signal = signal
        self.decay = decay
        self.scorer = scorer

    def split(self, rng: np.random.Generator) -> Split:
        require(
            self.n_public < self.n_holdout,
            f"n_public ({self.n_public}) must be smaller than n_holdout ({self.n_holdout})",
        )
        beta = self.decay ** np.arange(self.n_features)
        beta *= self.signal / np.linalg.norm(beta)
        X = rng.standard_normal((self.n_train + self.n_holdout, self.n_features))
        probabilities = 1.0 / (1.0 + np.exp(-X @ beta))
        y = (rng.random(probabilities.size) < probabilities).astype(float)
        X_train, X_holdout = X[: self.n_train], X[self.n_train :]
        classes = np.array([0.0, 1.0])
        public = PublicData(X_train, y[: self.n_train], X_holdout, "classification", self.scorer, classes)
        order = rng.permutation(self.n_holdout)
        return LabelNoiseSplit(
            public,
            np.sort(order[: self.n_public]),
            np.sort(order[self.n_public :]),
            y[self.n_train :],
            holdout_probabilities=probabilities[self.n_train :],
        )
