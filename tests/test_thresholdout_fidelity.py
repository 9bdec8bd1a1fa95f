"""Thresholdout as published (Dwork et al. 2015, Science): the plugins' published design against a
transcription of the Science code, value for value where the noise is given."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.board import Board, Leaderboard
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.reports import thresholdout as experiment
from ladderlab.runs.scenario import cells, load

N, D = 60, 40


def published_split(seed: int):
    return TASKS.make("correlated-feature-selection", n=N, d=D, public_set="training+holdout").split(
        np.random.default_rng(seed))


def test_the_published_layout_puts_the_training_set_first_in_the_public_set():
    split = published_split(0)
    holdout_only = TASKS.make("correlated-feature-selection", n=N, d=D).split(np.random.default_rng(0))
    np.testing.assert_array_equal(split.public.X_holdout[:N], split.public.X_train)
    np.testing.assert_array_equal(split.y_public, np.concatenate([split.public.y_train, holdout_only.y_public]))
    np.testing.assert_array_equal(split.y_final, holdout_only.y_final)
    np.testing.assert_array_equal(split.public.X_holdout[N:], holdout_only.public.X_holdout)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_published_thresholdout_releases_what_the_science_code_releases(seed):
    """The correlation queries (2x, in correlation units) and a classifier's accuracy report go
    through Thresholdout(variant="science", noise="gaussian", split="ordered"); given the noise
    it drew, the Science code's rule gives the same decisions and, to rounding, the same values."""
    split = published_split(seed)
    T, sigma = 4 / math.sqrt(N), 1 / math.sqrt(N)
    mechanism = MECHANISMS.make("thresholdout", variant="science", noise="gaussian", split="ordered", T=T, sigma=sigma)
    mechanism.bind(split.y_public, "sign-agreement", np.random.default_rng(seed))
    board = Board(Leaderboard(mechanism, split.public_rows, split.final_rows, split.y_final))
    X, signs = split.public.X_holdout.astype(float), 2.0 * split.y_holdout - 1.0
    classifier = np.sign(X[:, :3] @ np.array([1.0, -1.0, 1.0]))
    queries = np.vstack([2.0 * X.T, classifier])
    released = board.submit_many(queries)

    comparison, event = np.random.default_rng(seed).spawn(2)
    per_part = [(signs[rows] @ X[rows]) / N for rows in (slice(0, N), slice(N, 2 * N))]
    training = np.append(per_part[0], np.mean(classifier[:N] == signs[:N]))
    holdout = np.append(per_part[1], np.mean(classifier[N:2 * N] == signs[N:2 * N]))
    offset = np.append(np.full(D, 0.5), 0.0)  # sign agreement of 2x is 1/2 + c; of a ±1 vector, its accuracy
    comparison_noise = comparison.normal(0, sigma, D + 1)
    above = np.abs(training - holdout) > T + comparison_noise
    release_noise = np.zeros(D + 1)
    release_noise[above] = event.normal(0, sigma, above.sum())
    expected = offset + experiment.source_thresholdout(training, holdout, T, comparison_noise, release_noise)
    assert mechanism.overfitting_events_ == np.flatnonzero(above).tolist()
    np.testing.assert_allclose(released, expected, rtol=0, atol=1e-12)


def test_a_thresholdout_without_the_science_rule_fails_the_comparison():
    """The NIPS variant (threshold noise, Lap(4σ) comparisons) decides differently on the same queries."""
    split = published_split(5)
    T, sigma = 4 / math.sqrt(N), 1 / math.sqrt(N)
    decisions = []
    for variant in ("science", "nips"):
        mechanism = MECHANISMS.make("thresholdout", variant=variant, noise="gaussian", split="ordered", T=T, sigma=sigma)
        mechanism.bind(split.y_public, "sign-agreement", np.random.default_rng(5))
        Board(Leaderboard(mechanism, split.public_rows, split.final_rows, split.y_final)).submit_many(
            2.0 * split.public.X_holdout.astype(float).T)
        decisions.append(mechanism.overfitting_events_)
    assert decisions[0] != decisions[1]


def test_the_analyst_reads_the_same_correlations_in_either_unit():
    split = TASKS.make("correlated-feature-selection", n=N, d=D).split(np.random.default_rng(2))
    states = []
    for units in ("accuracy", "correlation"):
        mechanism = MECHANISMS.make("full-disclosure")
        mechanism.bind(split.y_public, "sign-agreement", np.random.default_rng(0))
        board = Board(Leaderboard(mechanism, split.public_rows, split.final_rows, split.y_final))
        states.append(ATTACKS.make("feature-selection", units=units).play(board, split.public, np.random.default_rng(0)))
    np.testing.assert_allclose(states[0][1], states[1][1], rtol=0, atol=1e-12)


def test_the_published_design_and_the_transcribed_source_agree_on_the_same_data():
    """One replication at a small scale: the plugins' published design and the transcription see
    the same split; their holdout accuracies agree within what 400 holdout points allow."""
    rows = [experiment.play_design(experiment.designs(400)[3], 400, 400, 20, 0, r) for r in range(3)]
    task = TASKS.make("correlated-feature-selection", n=400, d=400, public_set="training+holdout")
    from ladderlab.seeding import stream

    for r, row in enumerate(rows):
        split = task.split(stream(0, "task", ("correlated-feature-selection", {"n": 400, "d": 400}), r))
        _, holdout, fresh = experiment.source_experiment(split, 20, stream(0, "science-source", r))
        assert abs(row["holdout"] - holdout) < 0.1 and abs(row["fresh"] - fresh) < 0.1
    assert experiment.designs(400)[3].name == "published"


def test_the_published_scenario_uses_the_source_settings():
    scenario = load("dwork-science-published")
    thresholdout = [cell for cell in cells(scenario) if cell.mechanism[0] == "thresholdout"]
    assert thresholdout
    for cell in thresholdout:
        params = cell.mechanism[1]
        assert params["T"] == pytest.approx(4 / math.sqrt(2000)) and params["sigma"] == pytest.approx(1 / math.sqrt(2000))
        assert (params["variant"], params["noise"], params["split"]) == ("science", "gaussian", "ordered")
        assert cell.task[1]["public_set"] == "training+holdout" and cell.attack[1]["units"] == "correlation"
