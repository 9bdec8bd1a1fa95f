"""Many teams of one policy, played in lockstep: the competition's way to run a big honest population.

A competition may field thousands of teams of the same policy (the natural analysts of
``kaggle-like``). Run one by one, each team would pay Python's overhead for every batch and
hold its own copy of everything. A policy that can play many teams at once implements
:meth:`ladderlab.attack.Attack.cohort`, which returns a :class:`Cohort`: the members' states
as arrays, one random stream per member, and the engine asks for every member's next batch
and delivers its released scores (:mod:`ladderlab.competition`).

The contract that keeps results exact: a member's predictions depend only on its own
stream, its budget and its own released scores, never on which other members share a call,
so a cohort of one and a cohort of thousands make the same submissions, bit for bit. The
policy's ``run`` plays a cohort of one against a board (:func:`play_alone`), so a duel and a
competition run the same code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import NDArray

from ladderlab.board import Board

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


class Cohort(ABC):
    """Members of one policy with their own random streams, on the same public data."""

    @abstractmethod
    def begin(self, member: int, budget: int | None) -> None:
        """The member starts playing with ``budget`` submissions left (None: unlimited)."""

    @abstractmethod
    def next_batches(self, members: IntArray) -> IntArray:
        """How many rows each of ``members`` submits next (0: it has finished); prepares them."""

    @abstractmethod
    def predictions(self, member: int) -> FloatArray:
        """The member's prepared batch: rows × holdout predictions."""

    @abstractmethod
    def deliver(self, members: IntArray, released: list[FloatArray]) -> None:
        """The released scores of the prepared batches of ``members``, in order."""

    @abstractmethod
    def final(self, member: int) -> FloatArray:
        """The member's final whole-holdout prediction."""


def play_alone(cohort: Cohort, board: Board) -> FloatArray:
    """Member 0 of ``cohort`` plays against ``board`` until it finishes; its final prediction."""
    member = np.zeros(1, dtype=np.intp)
    cohort.begin(0, board.remaining)
    while cohort.next_batches(member)[0]:
        cohort.deliver(member, [board.submit_many(cohort.predictions(0))])
    return cohort.final(0)
