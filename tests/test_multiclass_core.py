"""Class-probability predictions (multiclass log loss), the log-loss and m-class random-labels tasks, and the plurality vote."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.board import Board, Leaderboard
from ladderlab.engines.voting import PluralityVote
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.scoring import get_scorer
from ladderlab.seeding import stream

MULTICLASS = get_scorer("multiclass-log-loss")


def _probability_rows(rng, shape):
    return rng.dirichlet(np.ones(shape[-1]), shape[:-1])


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=20, deadline=None)
def test_multiclass_log_loss_is_the_mean_negative_log_probability_of_the_true_class(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 30).astype(float)
    P = _probability_rows(rng, (3, 30, 4))
    expected = -np.log(P[:, np.arange(30), y.astype(int)]).mean(axis=1)
    np.testing.assert_allclose(MULTICLASS.score_many(y, P), expected, rtol=1e-12)


def test_multiclass_log_loss_clips_then_renormalises_as_kaggle():
    y = np.array([0.0, 1.0])
    P = np.array([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
    clipped = np.array([1 - 1e-15, 1e-15, 1e-15])
    renormalised = clipped / clipped.sum()
    expected = -(np.log(renormalised[0]) + np.log(renormalised[1])) / 2
    assert MULTICLASS.score_many(y, P)[0] == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(-np.log(1e-15) / 2, rel=1e-9)


def test_binary_log_loss_equals_multiclass_log_loss_on_two_columns():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 50).astype(float)
    p = rng.uniform(0.01, 0.99, (4, 50))
    two_columns = np.stack([1 - p, p], axis=2)
    np.testing.assert_allclose(get_scorer("log-loss").score_many(y, p), MULTICLASS.score_many(y, two_columns), rtol=1e-12)


def _multiclass_board(mechanism_id="kaggle", m=3, n_public=20, n_final=10, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, m, n_public + n_final).astype(float)
    holdout = n_public + n_final
    public_rows = rng.permutation(holdout)[:n_public]
    final_rows = np.setdiff1d(np.arange(holdout), public_rows)
    mechanism = MECHANISMS.make(mechanism_id).bind(labels[public_rows], "multiclass-log-loss", np.random.default_rng(1),
                                                   classes=np.arange(m, dtype=float))
    leaderboard = Leaderboard(mechanism, public_rows, final_rows, labels[final_rows])
    return Board(leaderboard), labels, public_rows, final_rows


def test_a_board_scores_class_probability_matrices_on_the_public_rows_only():
    board, labels, public_rows, final_rows = _multiclass_board("full-disclosure")
    rng = np.random.default_rng(5)
    P = _probability_rows(rng, (30, 3))
    released = board.submit(P)
    assert released == pytest.approx(MULTICLASS.score(labels[public_rows], P[public_rows]), rel=1e-12)
    records = board._leaderboard.records()
    assert records["final"][0] == pytest.approx(MULTICLASS.score(labels[final_rows], P[final_rows]), rel=1e-12)
    batch = _probability_rows(rng, (4, 30, 3))
    np.testing.assert_array_equal(board.submit_many(batch), [board.submit(p) for p in batch])


@pytest.mark.parametrize(("bad", "message"), [
    (np.full((30, 3), 0.5), "sum to 1.5"),
    (np.full((30, 2), 0.5), "30 × 3"),
    (np.full(30, 0.5), "30 × 3"),
    (np.tile([1.2, -0.2, 0.0], (30, 1)), "outside"),
])
def test_bad_class_probabilities_are_rejected_and_change_nothing(bad, message):
    board, *_ = _multiclass_board()
    good = np.full((30, 3), 1 / 3)
    first = board.submit(good)
    with pytest.raises(ValueError, match=message):
        board.submit_many(bad[None] if bad.ndim == 2 else bad)
    assert board.submissions == 1
    assert board.submit(good) == first


@pytest.mark.parametrize("mechanism_id", ["kaggle", "ladder", "ladder-free", "ladder-t", "full-disclosure"])
def test_mechanisms_release_multiclass_log_loss(mechanism_id):
    board, labels, public_rows, _ = _multiclass_board(mechanism_id)
    released = board.submit(np.full((30, 3), 1 / 3))
    assert released == pytest.approx(np.log(3), abs=0.01)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=10, deadline=None)
def test_binary_random_labels_are_unchanged_by_the_class_count_parameter(seed):
    """n_classes = 2 draws exactly the labels the binary task always drew."""
    split = TASKS.make("random-labels", n_public=50, n_holdout=150).split(np.random.default_rng(seed))
    np.testing.assert_array_equal(split.y_holdout, np.random.default_rng(seed).integers(0, 2, 150).astype(float))
    assert split.population_score == 0.5


def test_m_class_random_labels_have_chance_population_scores_and_optional_side_features():
    task = TASKS.make("random-labels", n_public=100, n_holdout=300, n_classes=10)
    split = task.split(np.random.default_rng(0))
    assert set(np.unique(split.y_holdout)) <= set(range(10)) and split.population_score == pytest.approx(0.9)
    assert TASKS.make("random-labels", n_classes=10, scorer="accuracy", n_public=10, n_holdout=30).split(
        np.random.default_rng(0)).population_score == pytest.approx(0.1)
    side = TASKS.make("random-labels", n_public=100, n_holdout=300, n_classes=4, side_information=3.0).split(
        np.random.default_rng(0))
    assert side.public.X_holdout.shape == (300, 4) and side.population_score is None
    agreement = np.mean(side.public.X_holdout.argmax(axis=1) == side.y_holdout)
    assert agreement > 0.7


def test_the_dsb_2017_preset_is_198_public_patients_of_704_with_disclosed_rows():
    split = TASKS.make("random-labels-log-loss", preset="dsb-2017").split(stream(0, "task", 0))
    assert split.public.scorer == "log-loss"
    assert split.public_rows.size == 198 and split.y_holdout.size == 704
    np.testing.assert_array_equal(split.public.public_rows, split.public_rows)
    multiclass = TASKS.make("random-labels-log-loss", preset=None, n_public=30, n_holdout=60, n_classes=3,
                            disclose_public_rows=False).split(np.random.default_rng(0))
    assert multiclass.public.scorer == "multiclass-log-loss" and multiclass.public.public_rows is None
    with pytest.raises(ValueError, match="n_public must be given"):
        TASKS.make("random-labels-log-loss", preset=None).split(np.random.default_rng(0))


@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 6))
@settings(max_examples=30, deadline=None)
def test_the_plurality_vote_is_the_brute_force_weighted_count(seed, m):
    rng = np.random.default_rng(seed)
    U = rng.integers(0, m, (7, 25))
    w = rng.normal(size=7)
    vote = PluralityVote(25, m)
    vote.add(U[:3], w[:3])
    vote.add(U[3:], w[3:])
    tally = np.array([[w[U[:, i] == label].sum() for label in range(m)] for i in range(25)])
    np.testing.assert_allclose(vote.tally, tally, atol=1e-12)
    winner = vote.winner()
    for i in range(25):
        best = np.flatnonzero(np.isclose(tally[i], tally[i].max(), rtol=0, atol=1e-12))
        assert winner[i] in best


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=20, deadline=None)
def test_a_two_label_unit_weight_vote_is_the_boosting_majority_with_ties_to_one(seed):
    rng = np.random.default_rng(seed)
    U = rng.integers(0, 2, (6, 40))
    vote = PluralityVote(40, 2)
    vote.add(U, np.ones(6))
    np.testing.assert_array_equal(vote.winner(), (2 * U.sum(axis=0) >= 6).astype(int))
