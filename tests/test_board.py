"""The participant's Board and the organiser's Leaderboard."""

import numpy as np
import pytest

from ladderlab import Board, BudgetExceeded, Leaderboard
from ladderlab.mechanisms.full_disclosure import FullDisclosure
from ladderlab.scoring import get_scorer
from ladderlab.testing import reachable_arrays
from tests.helpers import bound, improving_stream


def holdout(seed=0, n_public=60, n_final=40):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n_public + n_final).astype(float)
    public_rows = rng.permutation(n_public + n_final)[:n_public]
    final_rows = np.setdiff1d(np.arange(n_public + n_final), public_rows)
    mechanism = bound("ladder-free", labels[public_rows], seed)
    leaderboard = Leaderboard(mechanism, public_rows, final_rows, labels[final_rows])
    return labels, public_rows, final_rows, leaderboard, rng


def test_no_label_vector_is_reachable_from_the_boards_public_attributes():
    labels, public_rows, final_rows, leaderboard, rng = holdout()
    board = Board(leaderboard, budget=10)
    board.submit_many(improving_stream(rng, labels, 5))
    for array in reachable_arrays(board):
        assert not np.shares_memory(array, leaderboard.mechanism.labels_)
        assert not np.shares_memory(array, leaderboard.final_labels)
        assert array.shape != labels[public_rows].shape or not np.array_equal(array, labels[public_rows])


def test_the_walk_would_find_labels_on_a_public_attribute():
    """The check above can fail: the same walk finds the labels on the organiser's side."""
    _, _, _, leaderboard, _ = holdout()
    assert any(np.shares_memory(a, leaderboard.mechanism.labels_) for a in reachable_arrays(leaderboard))


def test_records_hold_released_exact_public_and_final_scores():
    labels, public_rows, final_rows, leaderboard, rng = holdout()
    board = Board(leaderboard)
    P = improving_stream(rng, labels, 30)
    released = board.submit_many(P)
    records = leaderboard.records()
    np.testing.assert_array_equal(records["released"], released)
    np.testing.assert_allclose(records["public"], (P[:, public_rows] != labels[public_rows]).mean(axis=1))
    np.testing.assert_allclose(records["final"], (P[:, final_rows] != labels[final_rows]).mean(axis=1))
    np.testing.assert_array_equal(board.transcript, released)


def test_budget_is_enforced_without_partial_submission():
    labels, _, _, leaderboard, rng = holdout()
    board = Board(leaderboard, budget=5)
    board.submit_many(improving_stream(rng, labels, 3))
    with pytest.raises(BudgetExceeded, match="3 submissions would exceed the budget of 5 \\(2 left\\)"):
        board.submit_many(improving_stream(rng, labels, 3))
    assert board.submissions == 3 and board.remaining == 2
    assert leaderboard.records()["released"].size == 3


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros(99), "length 99, the holdout has 100"),
        (np.full(100, 0.5), "not one of the task's labels"),
        (np.zeros((2, 2)), "length 2"),
    ],
)
def test_board_rejects_bad_predictions_with_a_clear_error(bad, message):
    _, _, _, leaderboard, _ = holdout()
    board = Board(leaderboard, budget=3)
    with pytest.raises(ValueError, match=message):
        board.submit_many(bad)
    assert board.submissions == 0 and board.transcript.size == 0


def test_repeated_rows_count_against_the_budget_and_bad_repeats_change_nothing():
    labels, _, _, leaderboard, rng = holdout()
    board = Board(leaderboard, budget=10)
    P = improving_stream(rng, labels, 3)
    with pytest.raises(BudgetExceeded, match="12 submissions would exceed the budget of 10"):
        board.submit_many(P, repeats=4)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"repeats must be a whole number ≥ 1, got {bad!r}"):
            board.submit_many(P, repeats=bad)
    assert board.submissions == 0 and leaderboard.records()["released"].size == 0
    released = board.submit_many(P, repeats=3)
    records = leaderboard.records()
    assert board.submissions == 9 and released.size == 9
    np.testing.assert_array_equal(records["public"], np.repeat(records["public"][::3], 3))


def test_leaderboard_refuses_a_split_that_does_not_partition_the_holdout():
    labels = np.arange(10.0) % 2
    mechanism = bound("kaggle", labels[:6], 0)
    with pytest.raises(ValueError, match="partition"):
        Leaderboard(mechanism, np.arange(6), np.arange(5, 9), labels[5:9])


@pytest.mark.parametrize("contiguous", [True, False])
def test_a_batch_scored_in_blocks_gives_the_records_of_one_submission_at_a_time(contiguous):
    """Blocks of rows (and a slice for consecutive public rows) change no bit of the records."""
    rng = np.random.default_rng(3)
    n_public, n_final = 3000, 5000  # a few rows per cache-sized block
    labels = rng.integers(0, 2, n_public + n_final).astype(float)
    public_rows = np.arange(n_public) if contiguous else np.sort(rng.permutation(n_public + n_final)[:n_public])
    final_rows = np.setdiff1d(np.arange(n_public + n_final), public_rows)
    P = improving_stream(rng, labels, 40)

    def records(batches):
        leaderboard = Leaderboard(bound("ladder-free", labels[public_rows], 0), public_rows, final_rows, labels[final_rows])
        for batch in batches:
            leaderboard.submit_many(leaderboard.check(batch))
        return leaderboard.records()

    whole, one_by_one = records([P]), records([row[None, :] for row in P])
    for name in ("released", "public", "final"):
        np.testing.assert_array_equal(whole[name], one_by_one[name])
    np.testing.assert_array_equal(whole["final"], (P[:, final_rows] != labels[final_rows]).mean(axis=1))


def test_a_score_that_is_not_finite_late_in_a_batch_changes_nothing():
    rng = np.random.default_rng(4)
    n = 4000
    labels = rng.normal(size=n)
    leaderboard = Leaderboard(bound("ladder-t", labels[:2000], 0, scorer="squared"), np.arange(2000),
                              np.arange(2000, n), labels[2000:])
    P = rng.normal(size=(30, n))
    P[-1, -1] = 1e200  # overflows the squared loss of the last row's final score only
    with pytest.raises(ValueError, match="not finite|overflow|finite"):
        leaderboard.submit_many(leaderboard.check(P))
    assert leaderboard.mechanism.released_ == [] and leaderboard.records()["public"].size == 0


class ShiftedDisclosure(FullDisclosure):
    """Releases every exact score plus one, shifting the array ``_scores`` returns in place."""

    id = "shifted-disclosure"

    def _release(self, P):
        scores = self._scores(P)
        scores += 1.0
        return scores


@pytest.mark.parametrize("scorer", ["zero-one", "squared"])
def test_a_mechanism_that_changes_its_scores_in_place_leaves_the_records_exact(scorer):
    """The leaderboard lends the mechanism the public scores it computed for its records."""
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 50).astype(float)
    leaderboard = Leaderboard(ShiftedDisclosure().bind(labels, scorer, np.random.default_rng(0)))
    P = improving_stream(rng, labels, 7)
    released = Board(leaderboard).submit_many(P)
    exact = get_scorer(scorer).score_many(labels, P)
    np.testing.assert_array_equal(released, exact + 1.0)
    np.testing.assert_array_equal(leaderboard.records()["public"], exact)
