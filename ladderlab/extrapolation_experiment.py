"""Zheng, Achanta & Benjamini's Figure 3 (Sec. 5): predicting the 50-class accuracy from k classes.

A simulated Gaussian mixture with K = 50 classes; the first k classes (a random order
of the 50, so the subsets are nested, Z₃ ⊂ … ⊂ Z₅₀) train a classifier, its test scores
on those k classes give the outscored counts V, and EXP, CONS and HD (Sec. 4) predict
acc⁽⁵⁰⁾. The truth is the test accuracy of the same classifier trained on all 50
classes; acc⁽ᵏ⁾ itself is the naive prediction. Classifiers as in the paper: QDA
(generative), multinomial logistic regression, and a network with one hidden layer of
10 logistic units.

The paper does not print the mixture's parameters (they are in its supplement); the
:class:`MixtureDesign` defaults are ours, chosen so that acc⁽⁵⁰⁾ is far from both
chance and 1: class means μ ~ N(0, spread² I) in 10 dimensions, each class N(μ, s² I)
with its own scale s (so QDA's per-class covariances matter), 30 training and 50
test points per class.

Run: ``python -m ladderlab.extrapolation_experiment --out runs/figure3`` (CSV of every
prediction, a summary, and the figure).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from numpy.typing import NDArray
from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from ladderlab.atomic import save_figure, write_atomically
from ladderlab.progress import progress_bar
from ladderlab.seeding import stream
from ladderlab.stats.extrapolation import accuracy_curve, outscored_counts

FloatArray = NDArray[np.float64]
ESTIMATORS = ("exp", "cons", "hd")
PREDICTORS = ("acc_k", *ESTIMATORS)
PREDICTOR_LABELS = {"acc_k": "acc(k)", "exp": "EXP", "cons": "CONS", "hd": "HD"}
PREDICTOR_COLORS = {"acc_k": "0.35", "exp": "#1f77b4", "cons": "#d62728", "hd": "#2ca02c"}


@dataclass(frozen=True)
class MixtureDesign:
    """The simulated Gaussian mixture and the range of initial subsets."""

    classes: int = 50
    dimension: int = 10
    spread: float = 1.0
    scale_spread: float = 0.25
    training: int = 30
    testing: int = 50
    smallest: int = 3
    bins: int = 1000

    def subset_sizes(self, step: int = 1) -> list[int]:
        sizes = list(range(self.smallest, self.classes + 1, step))
        return sizes if sizes[-1] == self.classes else [*sizes, self.classes]


@dataclass(frozen=True)
class Mixture:
    """Training and test points of every class; class c is the c-th in the random order."""

    train_points: FloatArray
    train_labels: NDArray[np.int64]
    test_points: FloatArray
    test_labels: NDArray[np.int64]

    def first(self, k: int) -> tuple[FloatArray, NDArray[np.int64], FloatArray, NDArray[np.int64]]:
        """The data of classes 0…k−1."""
        train, test = self.train_labels < k, self.test_labels < k
        return self.train_points[train], self.train_labels[train], self.test_points[test], self.test_labels[test]


def simulate_mixture(design: MixtureDesign, rng: np.random.Generator) -> Mixture:
    """Draw the K class distributions N(μ_c, s_c² I) and their training and test points."""
    means = rng.normal(0.0, design.spread, (design.classes, design.dimension))
    scales = np.exp(rng.normal(0.0, design.scale_spread, design.classes))

    def points(per_class: int) -> tuple[FloatArray, NDArray[np.int64]]:
        labels = np.repeat(np.arange(design.classes), per_class)
        noise = rng.normal(size=(labels.size, design.dimension))
        return means[labels] + scales[labels, None] * noise, labels

    train_points, train_labels = points(design.training)
    test_points, test_labels = points(design.testing)
    return Mixture(train_points, train_labels, test_points, test_labels)


def _network_scores(model: MLPClassifier, points: FloatArray) -> FloatArray:
    """The output layer's logits (predict_proba underflows to ties at 0 with many classes)."""
    hidden = 1.0 / (1.0 + np.exp(-(points @ model.coefs_[0] + model.intercepts_[0])))
    return hidden @ model.coefs_[1] + model.intercepts_[1]


Classifier = Callable[[int], tuple[object, Callable[[object, FloatArray], FloatArray]]]
CLASSIFIERS: dict[str, Classifier] = {
    "qda": lambda seed: (QuadraticDiscriminantAnalysis(reg_param=0.01), lambda m, x: m.decision_function(x)),
    "logistic": lambda seed: (LogisticRegression(max_iter=2000), lambda m, x: m.decision_function(x)),
    "network": lambda seed: (
        MLPClassifier(hidden_layer_sizes=(10,), activation="logistic", max_iter=2000, random_state=seed),
        _network_scores,
    ),
}
"""Each maps a seed to an unfitted classifier and how to get its class scores (larger = more likely)."""
CLASSIFIER_LABELS = {"qda": "QDA", "logistic": "Logistic", "network": "Neural net (10 logistic units)"}


def _fit_and_score(name: str, seed: int, data: tuple[FloatArray, ...]) -> NDArray[np.int64]:
    train_points, train_labels, test_points, test_labels = data
    model, scores = CLASSIFIERS[name](seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(train_points, train_labels)
    matrix = np.asarray(scores(model, test_points), dtype=float)
    return outscored_counts(matrix, test_labels)


def _predict(outscored: NDArray[np.int64], k: int, K: int, bins: int) -> dict[str, float]:
    predictions = {"acc_k": float(np.mean(outscored == k - 1))}
    for method in ESTIMATORS:
        try:
            predictions[method] = float(accuracy_curve(outscored, k, K, method, bins=bins)[-1])
        except ValueError:  # CONS infeasible or not converged, HD at accuracy 1: a failure, as in Table 1
            predictions[method] = float("nan")
    return predictions


def run_replication(design: MixtureDesign, classifier: str, replication: int, seed: int = 0,
                    step: int = 1, progress: bool | None = False) -> pd.DataFrame:
    """One mixture, one classifier: the predictions of acc⁽ᴷ⁾ at every subset size k, and the truth
    (``progress``: a bar over the subset sizes; None: on a terminal)."""
    mixture = simulate_mixture(design, stream(seed, "zheng-figure3", "mixture", asdict(design), replication))
    model_seed = int(stream(seed, "zheng-figure3", "classifier", classifier, replication).integers(2**31))
    rows = []
    K = design.classes
    for k in progress_bar(design.subset_sizes(step), progress=progress, desc=classifier, unit="subset size"):
        outscored = _fit_and_score(classifier, model_seed, mixture.first(k))
        rows.append({"classifier": classifier, "replication": replication, "k": k,
                     **_predict(outscored, k, K, design.bins)})
    frame = pd.DataFrame(rows)
    frame["true"] = float(frame.loc[frame["k"] == K, "acc_k"].iloc[0])
    return frame


def run(design: MixtureDesign = MixtureDesign(), classifiers: Sequence[str] = tuple(CLASSIFIERS),
        replications: int = 1, seed: int = 0, step: int = 1, progress: bool | None = False) -> pd.DataFrame:
    """Every classifier × replication; one row per (classifier, replication, k); ``progress`` as
    in :func:`run_replication`."""
    unknown = [name for name in classifiers if name not in CLASSIFIERS]
    if unknown:
        raise ValueError(f"unknown classifier {unknown[0]!r}; choose from {', '.join(CLASSIFIERS)}")
    return pd.concat([run_replication(design, name, replication, seed, step, progress)
                      for name in classifiers for replication in range(replications)], ignore_index=True)


def summarise(results: pd.DataFrame, below: int | None = None) -> pd.DataFrame:
    """Per classifier and predictor: mean absolute error against acc⁽ᴷ⁾, the share of subset
    sizes at which the predictor is the closest, and its roughness (mean |change| from one
    k to the next: how variable the prediction is as classes are added); k < ``below`` only."""
    frame = results if below is None else results[results["k"] < below]
    rows = []
    for classifier, group in frame.groupby("classifier", sort=False):
        errors = pd.DataFrame({p: (group[p] - group["true"]).abs() for p in PREDICTORS})
        closest = errors.idxmin(axis=1)
        for predictor in PREDICTORS:
            steps = group.groupby("replication")[predictor].apply(lambda s: s.diff().abs().mean())
            rows.append({"classifier": classifier, "predictor": predictor,
                         "mean_abs_error": float(errors[predictor].mean()),
                         "closest_share": float(np.mean(closest == predictor)),
                         "roughness": float(steps.mean()),
                         "failed": int(group[predictor].isna().sum())})
    return pd.DataFrame(rows)


def figure(results: pd.DataFrame) -> Figure:
    """Figure 3: predicted acc⁽ᴷ⁾ against k, one panel per classifier, the truth as a dashed line."""
    classifiers = list(dict.fromkeys(results["classifier"]))
    fig = Figure(figsize=(4.2 * len(classifiers), 3.6))
    axes = fig.subplots(1, len(classifiers), sharey=True, squeeze=False)[0]
    for ax, classifier in zip(axes, classifiers):
        group = results[results["classifier"] == classifier]
        for replication, runs in group.groupby("replication"):
            first = replication == group["replication"].min()
            for predictor in PREDICTORS:
                ax.plot(runs["k"], runs[predictor], color=PREDICTOR_COLORS[predictor], linewidth=1.2,
                        alpha=1.0 if first else 0.35, label=PREDICTOR_LABELS[predictor] if first else None)
            ax.axhline(runs["true"].iloc[0], color="black", linestyle="--", linewidth=1,
                       alpha=1.0 if first else 0.35, label="true acc(K)" if first else None)
        ax.set_title(CLASSIFIER_LABELS.get(classifier, classifier))
        ax.set_xlabel("k (classes observed)")
    axes[0].set_ylabel(f"predicted acc({int(results['k'].max())})")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ladderlab.extrapolation_experiment", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="runs/extrapolation-figure3", help="output folder")
    parser.add_argument("--replications", type=int, default=1, help="independent mixtures (default 1, as in the paper)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step", type=int, default=1, help="evaluate every step-th subset size k")
    parser.add_argument("--classifiers", nargs="+", default=list(CLASSIFIERS), choices=list(CLASSIFIERS))
    args = parser.parse_args(argv)
    if args.replications < 1 or args.step < 1:
        parser.error("--replications and --step must be at least 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = run(MixtureDesign(), args.classifiers, args.replications, args.seed, args.step, progress=None)
    write_atomically(out / "predictions.csv", results.to_csv(index=False))
    summary = summarise(results)
    write_atomically(out / "summary.csv", summary.to_csv(index=False))
    save_figure(figure(results), out / "figure3.png", dpi=110, bbox_inches="tight")
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"\npredictions, summary and figure written to {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
