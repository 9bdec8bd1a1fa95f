"""Dwork et al.'s reusable-holdout experiment (Science 2015, Fig. 1): the published design, the
leaderboard adaptation, and what makes the analyst fit the holdout in one and not the other.

The published Thresholdout compares every query on the analyst's *training* set with the
holdout and, while they agree, answers with the training value, which the analyst knew
already. The leaderboard adaptation (``thresholdout`` with ``split="random"``, scenario
``dwork-science-fig1``) has no training set to show: it splits the public holdout into a
shown and a guard part, so an answer below the threshold is the exact score on half of the
holdout. :func:`ablation` plays the analyst of ``feature-selection`` against a ladder of
designs from the adaptation to the published one, one difference at a time, and measures
on the organiser's side what the scenarios' records cannot: the final classifier's
accuracy on the holdout itself (in the published layout the public set is training and
holdout together).

:func:`source_thresholdout` and :func:`source_experiment` transcribe the Science paper's
supplementary code (Gaussian noise of scale 1/√n on a fixed threshold 4/√n, applied to
the correlation queries and to the final accuracy report) as an independent reference for
the plugins' published design.

:func:`paper_comparison` reads run directories of the scenarios ``dwork-science-published``
and ``dwork-science-fig1`` and sets their largest k next to the paper's Fig. 1 (whose k = 500
of n = 10,000 is the scenarios' k = 100 of n = 2,000).

Regenerate the page: ``python -m ladderlab.reports.thresholdout --out docs/results/thresholdout.md
--runs runs/dwork-science-published runs/dwork-science-fig1``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import play
from ladderlab.runs.rundir import write_atomically
from ladderlab.seeding import stream
from ladderlab.tasks import Split
from ladderlab.utils import markdown as md

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Design:
    """One rung of the ladder from the adaptation to the published design."""

    name: str
    change: str
    task: dict[str, Any] = field(default_factory=dict)
    mechanism: dict[str, Any] = field(default_factory=dict)
    attack: dict[str, Any] = field(default_factory=dict)


def designs(n: int) -> list[Design]:
    """The adaptation, each of the Science code's choices added in turn, the published design,
    and the overfitting budget; ``n`` is the holdout size (the Science code's T and σ use it)."""
    science = {"variant": "science", "noise": "gaussian", "sigma": 1 / math.sqrt(n)}
    published = {"public_set": "training+holdout"}
    return [
        Design("adaptation", "dwork-science-fig1: a random half of the holdout shown, NIPS noise (Laplace, "
               "σ = 1/(4√n), threshold noise redrawn after every overfitting event), T = 4/√n on sign agreement"),
        Design("+ source noise", "the Science code's noise: Gaussian of scale 1/√n on comparisons and releases, "
               "a fixed threshold", mechanism=science),
        Design("+ correlation units", "T and the noise act on the correlation c, not on (1 + c)/2, as in the "
               "Science code", mechanism=science, attack={"units": "correlation"}),
        Design("published", "the shown part is the analyst's training set (split = ordered): the Science "
               "experiment", published, {**science, "split": "ordered", "T": 4 / math.sqrt(n)}, {"units": "correlation"}),
        Design("published, NIPS noise", "the published split with the adaptation's noise and units",
               published, {"split": "ordered", "T": 4 / math.sqrt(n), "sigma": 0.25 / math.sqrt(n)}),
        Design("adaptation, B = 20", "the adaptation with an overfitting budget of 20: after the 20th event "
               "every release repeats the last one", mechanism={"B": 20}),
    ]


def source_thresholdout(training: FloatArray, holdout: FloatArray, threshold: float,
                        comparison_noise: FloatArray, release_noise: FloatArray) -> FloatArray:
    """The Science code's Thresholdout on a batch of queries: the holdout answer plus release
    noise where |training − holdout| exceeds the threshold plus comparison noise, the
    training answer elsewhere."""
    above = np.abs(training - holdout) > threshold + comparison_noise
    return np.where(above, holdout + release_noise, training)


def source_experiment(split: Split, k: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """The Science code's Thresholdout experiment on one split laid out as training + holdout
    (``public_set="training+holdout"``): the reported accuracy of the top-k classifier, and its
    accuracy on the holdout and on the fresh set. Transcribed, not imported: the analyst keeps
    the features whose training and released correlations exceed 1/√n with the same sign,
    votes with the signs of the k largest training correlations, and reports through
    Thresholdout."""
    n = split.public.y_train.size
    tolerance, threshold = 1 / math.sqrt(n), 4 / math.sqrt(n)
    X, signs = split.public.X_holdout, 2.0 * split.y_holdout - 1.0
    parts = {"training": slice(0, n), "holdout": slice(n, 2 * n), "fresh": slice(2 * n, 3 * n)}
    correlations = {name: (signs[rows] @ X[rows].astype(float)) / n for name, rows in parts.items()}
    d = X.shape[1]
    released = source_thresholdout(correlations["training"], correlations["holdout"], threshold,
                                   rng.normal(0, tolerance, d), rng.normal(0, tolerance, d))
    floor = 1 / math.sqrt(n)
    kept = ((correlations["training"] > floor) & (released > floor)) | ((correlations["training"] < -floor) & (released < -floor))
    ranked = np.where(kept, np.abs(correlations["training"]), 0.0)
    top = np.argsort(ranked, kind="stable")[::-1][:k]
    weights = np.where(kept[top], np.sign(correlations["training"][top]), 0.0)
    vote = np.sign(X[:, top].astype(float) @ weights)
    accuracy = {name: float(np.mean(vote[rows] == signs[rows])) for name, rows in parts.items()}
    if k == 0:
        return 0.5, 0.5, 0.5
    reported = float(source_thresholdout(np.array([accuracy["training"]]), np.array([accuracy["holdout"]]), threshold,
                                         rng.normal(0, tolerance, 1), rng.normal(0, tolerance, 1))[0])
    return reported, accuracy["holdout"], accuracy["fresh"]


def play_design(design: Design, n: int, d: int, k: int, seed: int, replication: int) -> dict[str, Any]:
    """One duel of the design: the final classifier's released score, its accuracy on the
    holdout (the public set, or its second half in the published layout) and on the fresh
    set, and the number of overfitting events among the feature queries."""
    task = TASKS.make("correlated-feature-selection", n=n, d=d, **design.task)
    split = task.split(stream(seed, "task", ("correlated-feature-selection", {"n": n, "d": d}), replication))
    mechanism = MECHANISMS.make("thresholdout", **design.mechanism)
    attack = ATTACKS.make("feature-selection", k=k, **design.attack)
    states: list[Any] = []
    played = play(split, mechanism, attack, stream(seed, "mechanism", design.name, replication),
                  stream(seed, "attack", replication), record=lambda leaderboard, state, marks, count: states.append(state))
    prediction = attack.final_prediction(states[0], split.public)  # the organiser scores it on the holdout too
    agreement = (1.0 + prediction * (2.0 * split.y_holdout - 1.0)) / 2.0
    holdout_rows = split.public_rows[-n:]
    return {"design": design.name, "replication": replication, "released": played.final_released,
            "holdout": float(agreement[holdout_rows].mean()), "fresh": played.final_final,
            "events": sum(event < d for event in mechanism.overfitting_events_)}


def ablation(n: int = 2000, d: int = 2000, k: int = 100, replications: int = 100, seed: int = 0) -> pd.DataFrame:
    """Every design of :func:`designs` and the source transcription, on the same data per replication."""
    rows = [play_design(design, n, d, k, seed, r) for design in designs(n) for r in range(replications)]
    task = TASKS.make("correlated-feature-selection", n=n, d=d, public_set="training+holdout")
    for r in range(replications):
        split = task.split(stream(seed, "task", ("correlated-feature-selection", {"n": n, "d": d}), r))
        released, holdout, fresh = source_experiment(split, k, stream(seed, "science-source", r))
        rows.append({"design": "Science code (transcribed)", "replication": r, "released": released,
                     "holdout": holdout, "fresh": fresh, "events": None})
    return pd.DataFrame(rows)


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """Per design: the mean ± standard error of each measure, and the share of replications
    whose released score exceeds 0.55."""
    rows = []
    for name, group in results.groupby("design", sort=False):
        row: dict[str, Any] = {"design": name}
        for measure in ("released", "holdout", "fresh"):
            values = group[measure].astype(float)
            row[measure] = f"{values.mean():.3f} ± {values.std(ddof=1) / math.sqrt(len(values)):.3f}"
        row["released > 0.55"] = f"{np.mean(group.released > 0.55):.0%}"
        events = group.events.dropna()
        row["overfitting events"] = f"{events.mean():.1f}" if len(events) else "–"
        rows.append(row)
    return pd.DataFrame(rows)


PAPER = {"full-disclosure": (0.63, 0.004, "63 ± 0.4 % (text)"), "thresholdout": (0.50, None, "close to fresh (Fig. 1B)")}
"""Dwork et al. 2015, Fig. 1 at k = 500, n = d = 10,000: the reported accuracy (mean, sd and
the paper's words); the fresh accuracy is 0.50 in both panels."""


def paper_comparison(runs: Sequence[Path]) -> pd.DataFrame:
    """Per scenario run and mechanism, at the largest k: the reported (released) and fresh
    accuracy, mean ± sd over replications as the paper gives them, beside the paper's."""
    from ladderlab.reports.report import (
        load_run,  # the report module loads the whole runner
    )

    rows = []
    for directory in runs:
        run = load_run(directory)
        finished = run.results[run.results.status == "ok"].copy()
        finished["k"] = [json.loads(params)["k"] for params in finished.attack_params]
        for (mechanism, params), group in finished.groupby(["mechanism", "mechanism_params"], sort=False):
            largest = group[group.k == group.k.max()]
            paper = PAPER.get(mechanism)
            rows.append({
                "scenario": run.manifest["scenario"]["name"], "mechanism": plugin_label(mechanism, params),
                "k": int(largest.k.iloc[0]), "replications": len(largest),
                "reported": f"{largest.final_released.mean():.3f} ± {largest.final_released.std(ddof=1):.3f}",
                "fresh": f"{largest.final_final.mean():.3f} ± {largest.final_final.std(ddof=1):.3f}",
                "paper: reported": "–" if paper is None else paper[2], "paper: fresh": "0.50",
            })
    return pd.DataFrame(rows)


def page(results: pd.DataFrame, n: int, d: int, k: int, seed: int, comparison: pd.DataFrame | None = None) -> str:
    """The comparison with the paper (if run directories were given) and the ablation, as a Markdown page."""
    replications = results.replication.nunique()
    changes = md.table(pd.DataFrame([{"design": design.name, "what changes": design.change} for design in designs(n)]))
    compared = [] if comparison is None or comparison.empty else [
        "## Against the paper", "",
        "The scenarios' largest k (100 of n = 2,000 features and points) against Dwork et al.'s Fig. 1 at "
        "k = 500 of n = 10,000 (the same k/n and d/n); mean ± sd over replications, as the paper gives them.", "",
        md.table(comparison), ""]
    return "\n".join([
        "# Thresholdout: results", "", *compared, "## What makes the adaptation leak", "",
        f"`python -m ladderlab.reports.thresholdout` (n = d = {n:,}, k = {k}, {replications} replications, "
        f"seed {seed}; every design meets the same data in a replication). The analyst is `feature-selection`; "
        "*released* is the final classifier's reported accuracy, *holdout* its actual accuracy on the holdout "
        "(the organiser's measurement), *fresh* on the fresh set; mean ± standard error over replications.", "",
        md.table(summary(results)), "", changes, "",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ladderlab.reports.thresholdout",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the Markdown page to write")
    parser.add_argument("--n", type=int, default=2000, help="training, holdout and fresh points, and features")
    parser.add_argument("--k", type=int, default=100, help="features of the final classifier")
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", nargs="*", default=[], help="run directories of the dwork-science scenarios to "
                        "compare with the paper")
    args = parser.parse_args(argv)
    comparison = paper_comparison([Path(run) for run in args.runs]) if args.runs else None
    results = ablation(args.n, args.n, args.k, args.replications, args.seed)
    write_atomically(Path(args.out), page(results, args.n, args.n, args.k, args.seed, comparison).encode())
    print(summary(results).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
