"""Zheng et al.'s Figure 3 as a built-in experiment: a small version by default, the full one slow."""

import numpy as np
import pytest

from ladderlab import extrapolation_experiment as experiment

SMALL = experiment.MixtureDesign(classes=8, dimension=4, training=15, testing=20, bins=200)


def test_every_predictor_equals_the_truth_once_all_classes_are_observed():
    """At k = K nothing is extrapolated: acc(K), EXP, CONS and HD all return the K-class test accuracy."""
    results = experiment.run(SMALL, ["qda", "logistic"], replications=1, seed=3, step=2)
    assert sorted(set(results["k"])) == [3, 5, 7, 8]
    at_K = results[results["k"] == SMALL.classes]
    for predictor in experiment.PREDICTORS:
        np.testing.assert_allclose(at_K[predictor], at_K["true"], atol=1e-6)
    summary = experiment.summarise(results)
    assert set(summary["predictor"]) == set(experiment.PREDICTORS)
    assert experiment.figure(results).axes


def test_same_seed_same_predictions():
    first = experiment.run_replication(SMALL, "qda", 0, seed=1, step=3)
    second = experiment.run_replication(SMALL, "qda", 0, seed=1, step=3)
    assert first.equals(second)


@pytest.mark.slow
def test_figure_3_at_paper_scale(tmp_path):
    assert experiment.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "figure3.png").exists() and (tmp_path / "summary.csv").exists()
