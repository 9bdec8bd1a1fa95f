"""Scores on a bound holdout: the 0/1 loss on two labels, by matrix–vector products, has the bits of counting."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.holdout import BinaryErrorCounts, HoldoutScores, holdout_scores
from ladderlab.scoring import ZeroOneLoss, get_scorer

seeds = st.integers(0, 2**32 - 1)
LABEL_SETS = [(0.0, 1.0), (-1.0, 1.0), (1.0, 2.0), (-3.0, 5.0), (0.0, 2.0**20)]


def labels_and_predictions(rng, label_set, n, m):
    """Labels and m predictions from a two-label set; zeros may be negative zeros, as a client may send."""
    classes = np.array(label_set)
    y, P = rng.choice(classes, n), rng.choice(classes, (m, n))
    P[(P == 0.0) & (rng.uniform(size=P.shape) < 0.5)] = -0.0
    return classes, y, P


def on_batches_of_two_labels(test):
    """Run ``test(rng, y, P, holdout)`` on every label set, with hypothesis's sizes and seeds."""

    @pytest.mark.parametrize("label_set", LABEL_SETS)
    @settings(max_examples=40, deadline=None)
    @given(seed=seeds, n=st.integers(2, 3000), m=st.integers(1, 40))
    def run(label_set, seed, n, m):
        rng = np.random.default_rng(seed)
        classes, y, P = labels_and_predictions(rng, label_set, n, m)
        holdout = holdout_scores(ZeroOneLoss(), y, classes)
        assert isinstance(holdout, BinaryErrorCounts)
        test(rng, y, P, holdout)

    run.__name__, run.__doc__ = test.__name__, test.__doc__
    return run


@on_batches_of_two_labels
def test_binary_error_counts_give_the_bits_of_the_zero_one_loss(rng, y, P, holdout):
    loss_rows, risks = holdout.loss_rows_and_risks(P)
    assert np.array_equal(holdout.scores(P), ZeroOneLoss().score_many(y, P))
    assert np.array_equal(risks, ZeroOneLoss().score_many(y, P))
    for row in range(P.shape[0]):
        assert np.array_equal(holdout.losses(loss_rows[row]), ZeroOneLoss().loss(y, P[row]))


@on_batches_of_two_labels
def test_the_paired_sd_from_disagreements_has_the_bits_of_the_sd_from_losses(rng, y, P, holdout):
    """Against the best before any acceptance (zero loss everywhere) and against a submission."""
    loss_rows, _ = holdout.loss_rows_and_risks(P)
    assert np.array_equal(holdout.losses(holdout.perfect_loss_row()), np.zeros(y.size))
    for best in (holdout.perfect_loss_row(), loss_rows[rng.integers(P.shape[0])]):
        expected = ZeroOneLoss().paired_sd(ZeroOneLoss().loss(y, P), holdout.losses(best))
        assert np.array_equal(holdout.paired_with(best)(loss_rows), expected)


class CostlyZeroOne(ZeroOneLoss):
    """A subclass that may compute something else."""


@pytest.mark.parametrize(
    "scorer, label_set",
    [("zero-one", (0.0, 1.0, 2.0)), ("zero-one", (0.0, 0.5)), ("zero-one", (0.0, 2.0**21)), ("squared", (0.0, 1.0)),
     (CostlyZeroOne(), (0.0, 1.0))],
)
def test_the_shortcut_is_taken_only_where_it_is_exact(scorer, label_set):
    classes = np.array(label_set)
    holdout = holdout_scores(get_scorer(scorer), classes[np.arange(8) % classes.size], classes)
    assert type(holdout) is HoldoutScores


def test_labels_outside_the_label_set_take_the_general_path():
    """A leaderboard's final labels are not checked against the public label set."""
    y = np.array([0.0, 1.0, 2.0, 1.0])
    holdout = holdout_scores(ZeroOneLoss(), y, np.array([0.0, 1.0]))
    assert type(holdout) is HoldoutScores
    assert np.array_equal(holdout.scores(np.array([[0.0, 1.0, 1.0, 0.0]])), [0.5])


@pytest.mark.parametrize("label_set", LABEL_SETS)
@settings(max_examples=40, deadline=None)
@given(seed=seeds, n=st.integers(2, 500), bad=st.sampled_from([np.nan, np.inf, -np.inf, 0.5, 3.0, 1e-300]))
def test_one_row_is_checked_and_scored_in_one_pass(label_set, seed, n, bad):
    """Valid rows get the scorer's bits; a row with one bad value gets None, and the full check."""
    rng = np.random.default_rng(seed)
    classes, y, P = labels_and_predictions(rng, label_set, n, 1)
    holdout = holdout_scores(ZeroOneLoss(), y, classes)
    assert np.array_equal(holdout.scores_of_valid_row(P[0]), ZeroOneLoss().score_many(y, P))
    if bad not in classes:
        P[0, rng.integers(n)] = bad
        assert holdout.scores_of_valid_row(P[0]) is None
