"""Guess and check: its guarantee (every answer within τ of the population value with probability
≥ 1 − β, for honest and probing guessers alike), and the guesses' way from an attack to the mechanism."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ladderlab.attack import Attack
from ladderlab.board import Board
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs.duel import duel
from ladderlab.tasks import PublicData

N = 2000
TASK = TASKS.make("random-labels", n_public=N, n_holdout=2 * N)
"""Every submission's population 0/1 loss is exactly ½."""


class Guessing(Attack):
    """Random label vectors, each with a guess: honest (its loss on labels of its own, independent of
    the holdout: the population value ± sampling error) or probing (a binary search on the guess of
    one vector, to learn its holdout loss from the checks)."""

    id = "test-guessing"
    task_types = frozenset({"classification"})

    def __init__(self, k: int = 60, probing: bool = False):
        self.k = k
        self.probing = probing

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> np.ndarray:
        vector = rng.integers(0, 2, board.holdout_size).astype(float)
        low, high = 0.0, 1.0
        for _ in range(min(self.k, board.remaining or self.k)):
            if self.probing:
                guess = (low + high) / 2
                released = board.submit(vector, guess=guess)
                low, high = (low, guess) if released == guess else (guess, high)
            else:
                vector = rng.integers(0, 2, board.holdout_size).astype(float)
                board.submit(vector, guess=float(np.mean(rng.integers(0, 2, 4000))))
        return vector


def answers_within_tau(probing: bool, replication: int) -> bool:
    mechanism = MECHANISMS.make("guess-and-check", tau=0.05, beta=0.05)
    outcome = duel(TASK, mechanism, Guessing(k=60, probing=probing), seed=4, replication=replication)
    return bool(np.all(np.abs(outcome.released[:-1] - 0.5) <= 0.05 + 1e-12))


@pytest.mark.parametrize("probing", [False, True], ids=["honest", "probing"])
def test_every_answer_lies_within_tau_in_all_but_beta_of_replications(probing):
    replications = 40
    misses = sum(not answers_within_tau(probing, r) for r in range(replications))
    assert stats.binomtest(misses, replications, 0.05, alternative="greater").pvalue >= 1e-6


def test_an_attack_that_does_not_guess_gets_the_guess_parts_score_or_a_rounded_check():
    mechanism = MECHANISMS.make("guess-and-check", tau=0.1).bind(
        np.random.default_rng(0).integers(0, 2, 4000), "zero-one", np.random.default_rng(1))
    P = np.random.default_rng(2).integers(0, 2, (5, 4000)).astype(float)
    released = mechanism.submit_many(P)
    assert not mechanism.spent_
    guess_part = mechanism.scorer_.score_many(mechanism.labels_[mechanism.guess_rows_], P[:, mechanism.guess_rows_])
    passed = np.setdiff1d(np.arange(5), mechanism.failed_checks_)
    np.testing.assert_array_equal(released[passed], guess_part[passed])


def test_a_guess_the_holdout_contradicts_is_not_released_and_costs_a_failure():
    mechanism = MECHANISMS.make("guess-and-check", tau=0.1).bind(
        np.random.default_rng(0).integers(0, 2, 4000), "zero-one", np.random.default_rng(1))
    P = np.random.default_rng(2).integers(0, 2, (1, 4000)).astype(float)
    released = mechanism.submit(P[0], guess=0.9)
    assert released != 0.9 and mechanism.failures_ == 1 and abs(released - 0.5) < 0.1
    assert mechanism.submit(P[0], guess=released) == released  # the rounded holdout value passes its own check


def test_a_spent_check_part_freezes_the_board():
    mechanism = MECHANISMS.make("guess-and-check", tau=0.05).bind(
        np.random.default_rng(0).integers(0, 2, 600), "zero-one", np.random.default_rng(1))
    P = np.random.default_rng(2).integers(0, 2, (40, 600)).astype(float)
    released = mechanism.submit_many(P, guesses=np.full(40, 0.95))
    assert mechanism.spent_ and np.all(released[-10:] == released[-1])


def test_guesses_are_checked_before_anything_is_submitted():
    board_mechanism = MECHANISMS.make("guess-and-check").bind(np.zeros(10) + [0, 1] * 5, "zero-one",
                                                               np.random.default_rng(0))
    for bad in ([0.5], [np.inf, 0.5], "x"):
        with pytest.raises(ValueError, match="guesses"):
            board_mechanism.submit_many(np.zeros((2, 10)), guesses=bad)
    assert board_mechanism.released_ == []


@pytest.mark.parametrize("mechanism", ["guess-and-check", "ladder"])
def test_guesses_cross_to_an_isolated_attack_and_back_bit_for_bit(mechanism):
    """An attack in its own process passes its guesses as one that plays in the organiser's does;
    a mechanism that checks no guesses ignores them."""
    task = TASKS.make("random-labels", n_public=2000, n_holdout=4000)
    params = {"tau": 0.1} if mechanism == "guess-and-check" else {}
    results = [duel(task, MECHANISMS.make(mechanism, **params), Guessing(k=12, probing=True), seed=2, replication=1,
                    isolation=isolation) for isolation in ("none", "process")]
    np.testing.assert_array_equal(results[0].released, results[1].released)
    if mechanism == "guess-and-check":
        assert len(set(results[0].released[:-1].tolist())) > 2  # the probe's guesses reached the checks


def test_the_guarantee_is_its_own_tau_at_its_own_beta():
    bound = MECHANISMS.make("guess-and-check", tau=0.03, beta=0.01).proven_bound(10_000, 500)
    assert (bound.epsilon, bound.delta) == (0.03, 0.01) and "spent" in bound.holds
