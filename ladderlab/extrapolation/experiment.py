"""Zheng, Achanta & Benjamini's Figure 3 (arXiv:1606.05228, Sec. 5): predicting the 50-class
accuracy from k classes, and the paper's statements about it.

A simulated Gaussian mixture with K = 50 classes; the first k classes (the subsets are
nested, Z₃ ⊂ … ⊂ Z₅₀) train a classifier, its test scores on those k classes give the
outscored counts V, and EXP, CONS and HD (Sec. 4) predict acc⁽⁵⁰⁾ in each convention of
:mod:`ladderlab.stats` (``ladderlab`` or ``authors``). The truth is the test accuracy of
the same classifier trained on all 50 classes; acc⁽ᵏ⁾ itself is the naive prediction.

The default :class:`MixtureDesign` is the authors' (``run_simulation.R`` in their public
repository ``snarles/fmri``): class centroids μ ~ N(0, I₁₀), points μ + N(0, σ²I) with
σ = 1, 20 training and 30 test points per class. The classifiers stand in for theirs:
QDA without regularisation (``MASS::qda``), multinomial logistic regression with a weak
ridge penalty, C = 100 (theirs: ``glmnet``'s lasso path at its smallest λ), and a network
with one hidden layer of 10 logistic units fitted by L-BFGS for 100 iterations without
weight decay (``nnet(size = 10)``, whose default is 100 BFGS iterations). The authors'
ranks break ties at random; here V counts the classes strictly outscored, and the scores
(log-posteriors, logits) have no ties.

Run as the built-in scenario ``zheng-figure3`` (``ladderlab run zheng-figure3``; its
``[[extrapolation]]`` table is :mod:`ladderlab.extrapolation.scenario`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special

from ladderlab.seeding import stream
from ladderlab.stats.extrapolation import accuracy_at, outscored_counts
from ladderlab.utils.figure_style import styled

if TYPE_CHECKING:  # scikit-learn and matplotlib are imported where they are used: a scenario file loads without them
    from matplotlib.figure import Figure
    from sklearn.neural_network import MLPClassifier

FloatArray = NDArray[np.float64]
ESTIMATORS = ("exp", "cons", "hd")
PREDICTORS = ("acc_k", *ESTIMATORS)
PREDICTOR_LABELS = {"acc_k": "acc(k)", "exp": "EXP", "cons": "CONS", "hd": "HD"}
PREDICTOR_COLORS = {"acc_k": "0.35", "exp": "#1f77b4", "cons": "#d62728", "hd": "#2ca02c"}


@dataclass(frozen=True)
class MixtureDesign:
    """The simulated Gaussian mixture: class c is N(μ_c, (σ·s_c)² I), μ_c ~ N(0, spread² I),
    log s_c ~ N(0, scale_spread²) (0: one σ for every class, as the authors have it)."""

    classes: int = 50
    dimension: int = 10
    spread: float = 1.0
    noise: float = 1.0
    scale_spread: float = 0.0
    training: int = 20
    testing: int = 30

    def subset_sizes(self, smallest: int = 3, step: int = 1) -> list[int]:
        """k = smallest, smallest + step, …, and always K itself."""
        sizes = list(range(smallest, self.classes + 1, step))
        return sizes if sizes[-1] == self.classes else [*sizes, self.classes]


@dataclass(frozen=True)
class Mixture:
    """Training and test points of every class."""

    train_points: FloatArray
    train_labels: NDArray[np.int64]
    test_points: FloatArray
    test_labels: NDArray[np.int64]

    def first(self, k: int) -> tuple[FloatArray, NDArray[np.int64], FloatArray, NDArray[np.int64]]:
        """The data of classes 0…k−1."""
        train, test = self.train_labels < k, self.test_labels < k
        return self.train_points[train], self.train_labels[train], self.test_points[test], self.test_labels[test]


def simulate_mixture(design: MixtureDesign, rng: np.random.Generator) -> Mixture:
    """Draw the K class distributions and their training and test points."""
    means = rng.normal(0.0, design.spread, (design.classes, design.dimension))
    scales = design.noise * np.exp(rng.normal(0.0, design.scale_spread, design.classes))

    def points(per_class: int) -> tuple[FloatArray, NDArray[np.int64]]:
        labels = np.repeat(np.arange(design.classes), per_class)
        noise = rng.normal(size=(labels.size, design.dimension))
        return means[labels] + scales[labels, None] * noise, labels

    train_points, train_labels = points(design.training)
    test_points, test_labels = points(design.testing)
    return Mixture(train_points, train_labels, test_points, test_labels)


def _network_scores(model: MLPClassifier, points: FloatArray) -> FloatArray:
    """The output layer's logits (predict_proba underflows to ties at 0 with many classes)."""
    hidden = special.expit(points @ model.coefs_[0] + model.intercepts_[0])
    return hidden @ model.coefs_[1] + model.intercepts_[1]


def _decision_scores(model: Any, points: FloatArray) -> FloatArray:
    return model.decision_function(points)


def _qda(seed: int) -> tuple[object, Callable[[Any, FloatArray], FloatArray]]:
    from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis

    return QuadraticDiscriminantAnalysis(reg_param=0.0), _decision_scores


def _logistic(seed: int) -> tuple[object, Callable[[Any, FloatArray], FloatArray]]:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=100.0, max_iter=1000), _decision_scores


def _network(seed: int) -> tuple[object, Callable[[Any, FloatArray], FloatArray]]:
    from sklearn.neural_network import MLPClassifier

    return (MLPClassifier(hidden_layer_sizes=(10,), activation="logistic", solver="lbfgs", alpha=0.0, max_iter=100,
                          random_state=seed), _network_scores)


Classifier = Callable[[int], tuple[object, Callable[[Any, FloatArray], FloatArray]]]
CLASSIFIERS: dict[str, Classifier] = {"qda": _qda, "logistic": _logistic, "network": _network}
"""Each maps a seed to an unfitted classifier and how to get its class scores (larger = more likely)."""
CLASSIFIER_LABELS = {"qda": "QDA", "logistic": "Logistic", "network": "Neural net (10 logistic units)"}


def _fit_and_score(name: str, seed: int, data: tuple[FloatArray, ...]) -> NDArray[np.int64]:
    train_points, train_labels, test_points, test_labels = data
    from sklearn.exceptions import ConvergenceWarning

    model, scores = CLASSIFIERS[name](seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(train_points, train_labels)
    matrix = np.asarray(scores(model, test_points), dtype=float)
    return outscored_counts(matrix, test_labels)


def predict(outscored: NDArray[np.int64], k: int, K: int, convention: str) -> dict[str, float]:
    """acc⁽ᵏ⁾ and each estimator's prediction of acc⁽ᴷ⁾; NaN where an estimator fails (CONS
    infeasible, HD at accuracy 0 or 1: the failures of the paper's Table 1)."""
    observed = float(np.mean(outscored == k - 1))
    predictions = {"acc_k": observed}
    for method in ESTIMATORS:
        try:
            predictions[method] = accuracy_at(outscored, k, K, method, convention=convention)
        except ValueError:
            predictions[method] = float("nan")
    return predictions


def run_replication(design: MixtureDesign, classifier: str, replication: int, seed: int = 0,
                    sizes: Sequence[int] | None = None, conventions: Sequence[str] = ("ladderlab",)) -> pd.DataFrame:
    """One mixture, one classifier: one row per subset size k and convention, with every
    prediction of acc⁽ᴷ⁾ and the truth. The mixture's stream depends on the design and the
    replication only, so every classifier and convention meets the same data."""
    mixture = simulate_mixture(design, stream(seed, "zheng-figure3", "mixture", asdict(design), replication))
    model_seed = int(stream(seed, "zheng-figure3", "classifier", classifier, replication).integers(2**31))
    K = design.classes
    rows = []
    for k in design.subset_sizes() if sizes is None else sizes:
        outscored = _fit_and_score(classifier, model_seed, mixture.first(k))
        rows += [{"classifier": classifier, "convention": convention, "replication": replication, "k": k,
                  **predict(outscored, k, K, convention)} for convention in conventions]
    frame = pd.DataFrame(rows)
    frame["true"] = float(frame.loc[frame["k"] == K, "acc_k"].iloc[0])
    return frame


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Per convention, classifier and predictor: the mean absolute error against acc⁽ᴷ⁾ over
    k < K, the share of those k at which the predictor is the closest, its roughness (mean
    |change| from one k to the next: how variable the prediction is as classes are added),
    and the number of failed predictions."""
    frame = results[results["k"] < results["k"].max()]
    rows = []
    for (convention, classifier), group in frame.groupby(["convention", "classifier"], sort=False):
        errors = pd.DataFrame({p: (group[p] - group["true"]).abs() for p in PREDICTORS})
        closest = errors.idxmin(axis=1)
        for predictor in PREDICTORS:
            steps = group.groupby("replication")[predictor].apply(lambda s: s.diff().abs().mean())
            rows.append({"convention": convention, "classifier": classifier, "predictor": predictor,
                         "mean_abs_error": float(errors[predictor].mean()),
                         "closest_share": float(np.mean(closest == predictor)),
                         "roughness": float(steps.mean()),
                         "failed": int(group[predictor].isna().sum())})
    return pd.DataFrame(rows)


AUTHORS_RUN = pd.DataFrame(
    [(classifier, predictor, error, closest, roughness) for classifier, rows in {
        "qda": [("acc_k", 0.1258, 0.2340, 0.0106), ("exp", 0.0682, 0.1915, 0.0379),
                ("cons", 0.0593, 0.1064, 0.0139), ("hd", 0.0301, 0.4681, 0.0127)],
        "logistic": [("acc_k", 0.0954, 0.0000, 0.0107), ("exp", 0.0558, 0.2128, 0.0454),
                     ("cons", 0.0949, 0.0426, 0.0169), ("hd", 0.0297, 0.7447, 0.0149)],
        "network": [("acc_k", 0.0775, 0.6170, 0.0363), ("exp", 0.0899, 0.1064, 0.0884),
                    ("cons", 0.1263, 0.0426, 0.0540), ("hd", 0.0650, 0.2340, 0.0384)],
    }.items() for predictor, error, closest, roughness in rows],
    columns=["classifier", "predictor", "mean_abs_error", "closest_share", "roughness"])
"""The reference: :func:`summarise` of the authors' own Figure 3 run (``extrapolation/simres.rds`` in
``snarles/fmri``: one mixture, their QDA, ``glmnet`` and ``nnet``, their acc_sub, exp, pmle_mm and hd
at k = 3…49, the truth their acc_sub at k = 50), to four decimals."""


@dataclass(frozen=True)
class Statement:
    """One of the paper's Sec. 5 statements, how it is measured, and whether it held."""

    claim: str
    measure: str
    value: str
    holds: bool


def statements(summary: pd.DataFrame) -> list[Statement]:
    """The four statements of Sec. 5 on one convention's summary (:func:`summarise`), each
    with the numbers that decide it; a statement about a classifier the run lacks is left out."""
    table = summary.set_index(["classifier", "predictor"])

    def value(classifier: str, predictor: str, column: str) -> float:
        return float(table.loc[(classifier, predictor), column])

    present = set(summary["classifier"])
    found = []
    if {"qda", "logistic"} <= present:
        order = {c: sorted(ESTIMATORS, key=lambda m: value(c, m, "mean_abs_error")) for c in ("qda", "logistic")}
        found.append(Statement(
            "QDA and logistic regression behave alike",
            "the three methods rank in the same order by mean absolute error for both",
            f"QDA {' < '.join(m.upper() for m in order['qda'])}; logistic {' < '.join(m.upper() for m in order['logistic'])}",
            order["qda"] == order["logistic"]))
    if {"qda", "logistic", "network"} <= present:
        worse = {m: value("network", m, "mean_abs_error") > max(value(c, m, "mean_abs_error") for c in ("qda", "logistic"))
                 for m in ESTIMATORS}
        found.append(Statement(
            "every method does worse for the network than for QDA and logistic regression",
            "mean absolute error for the network above both others, for EXP, CONS and HD",
            ", ".join(f"{m.upper()} {value('network', m, 'mean_abs_error'):.3f}" for m in ESTIMATORS),
            all(worse.values())))
    if "network" in present:
        share = value("network", "acc_k", "closest_share")
        found.append(Statement(
            "for the network, acc(k) itself is the better predictor for most of the curve",
            "share of subset sizes k at which acc(k) is the closest of the four predictors",
            f"{share:.0%}", share > 0.5))
    rough = {c: {m: value(c, m, "roughness") for m in ESTIMATORS} for c in sorted(present)}
    found.append(Statement(
        "EXP is more variable than CONS and HD",
        "roughness (mean |change| of the prediction from k to k + 1) of EXP above both, for every classifier",
        "; ".join(f"{CLASSIFIER_LABELS.get(c, c).split(' (')[0]} {r['exp']:.3f} / {r['cons']:.3f} / {r['hd']:.3f}"
                  for c, r in rough.items()),
        all(r["exp"] > max(r["cons"], r["hd"]) for r in rough.values())))
    return found


@styled
def figure(results: pd.DataFrame) -> Figure:
    """Figure 3: predicted acc⁽ᴷ⁾ against k, one panel per classifier (a row per convention),
    the truth as a dashed line; later replications are drawn lighter."""
    from matplotlib.figure import Figure

    classifiers = list(dict.fromkeys(results["classifier"]))
    conventions = list(dict.fromkeys(results["convention"]))
    fig = Figure(figsize=(4.2 * len(classifiers), 3.4 * len(conventions)))
    grid = fig.subplots(len(conventions), len(classifiers), sharex=True, sharey=True, squeeze=False)
    for row, convention in zip(grid, conventions):
        for ax, classifier in zip(row, classifiers):
            group = results[(results["classifier"] == classifier) & (results["convention"] == convention)]
            for replication, runs in group.groupby("replication"):
                first = replication == group["replication"].min()
                for predictor in PREDICTORS:
                    ax.plot(runs["k"], runs[predictor], color=PREDICTOR_COLORS[predictor], linewidth=1.2,
                            alpha=1.0 if first else 0.3, label=PREDICTOR_LABELS[predictor] if first else None)
                ax.axhline(runs["true"].iloc[0], color="black", linestyle="--", linewidth=1,
                           alpha=1.0 if first else 0.3, label="true acc(K)" if first else None)
            ax.set_title(f"{CLASSIFIER_LABELS.get(classifier, classifier)} ({convention})", fontsize=9)
            ax.set_ylim(0, 1)
        row[0].set_ylabel(f"predicted acc({int(results['k'].max())})")
    for ax in grid[-1]:
        ax.set_xlabel("k (classes observed)")
    grid[0][0].legend(fontsize=7)
    return fig

