"""One transcript for the duels that differ only in what the attack does after its last submission.

Some attack parameters change only the final prediction, never a submission: Freedman's
``k`` picks the features of the final regression from the same p released scores
(Chaibub Neto et al., Fig. 2). An attack lists them in ``Attack.final_only_params``.
The duel then derives every random stream from the attack's identity *without* them,
so the duels at k = 1 … 30 of one replication play the same transcript, and a
process computes it once: the first duel records its submissions and the leaderboard
after the last one; the others replay them through a :class:`ReplayBoard` and only
score their own final prediction. Each duel's result is bit-identical to playing it
alone, and each cell keeps its distribution; the cells at different ``k`` now share
their transcript (common random numbers), as the paper's figure does.

A replayed attack must submit exactly what was recorded; if it does not, the
declaration was wrong and :class:`TranscriptMismatch` says so.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.board import Board, Leaderboard
from ladderlab.tasks import Split

CACHED_TRANSCRIPTS = 4
"""Transcripts kept per process (the runner plays the duels of one replication together)."""


class TranscriptMismatch(RuntimeError):
    """A replayed attack submitted something other than the shared transcript holds."""


class RecordingBoard(Board):
    """A Board that keeps every batch it scored, for replay."""

    __slots__ = ("batches",)

    def __init__(self, leaderboard: Leaderboard, budget: int | None = None, oracle: bool = False):
        super().__init__(leaderboard, budget, oracle)
        self.batches: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []

    def submit_many(self, predictions: ArrayLike) -> NDArray[np.float64]:
        released = super().submit_many(predictions)
        self.batches.append((np.array(predictions, dtype=float, ndmin=2), released.copy()))
        return released


class ReplayBoard(Board):
    """A Board that answers from a recorded transcript, checking that each batch is the recorded one.

    ``leaderboard`` is the state after the whole transcript; the Board's view of it
    (budget, oracle jumps) is limited to the submissions replayed so far.
    """

    __slots__ = ("_batches",)

    def __init__(
        self,
        leaderboard: Leaderboard,
        batches: list[tuple[NDArray[np.float64], NDArray[np.float64]]],
        budget: int | None = None,
        oracle: bool = False,
    ):
        super().__init__(leaderboard, budget, oracle)
        self._batches = list(batches)

    def oracle_jumps(self, since: int) -> int:
        return max(0, super().oracle_jumps(since) - super().oracle_jumps(self.submissions))

    def submit_many(self, predictions: ArrayLike) -> NDArray[np.float64]:
        P = self._leaderboard.check(predictions)
        if not self._batches:
            raise TranscriptMismatch("the attack submitted more than the shared transcript holds")
        recorded, released = self._batches.pop(0)
        if recorded.shape != P.shape or not np.array_equal(recorded, P):
            raise TranscriptMismatch(
                f"submission {self.submissions} differs from the shared transcript: an attack's "
                "final_only_params must not change its submissions"
            )
        self._transcript.extend(released.tolist())
        return released.copy()

    @property
    def finished(self) -> bool:
        """True when every recorded batch has been replayed."""
        return not self._batches


@dataclass
class Transcript:
    """A played transcript: the split, the scored batches and the leaderboard after the last one."""

    split: Split
    batches: list[tuple[NDArray[np.float64], NDArray[np.float64]]]
    leaderboard: Leaderboard


class TranscriptCache:
    """The last few transcripts of this process, by the identity of the duel they belong to."""

    def __init__(self, size: int = CACHED_TRANSCRIPTS):
        self.size = size
        self._entries: OrderedDict[Hashable, Transcript] = OrderedDict()

    def get(self, key: Hashable) -> Transcript | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: Hashable, split: Split, board: RecordingBoard, leaderboard: Leaderboard) -> None:
        self._entries[key] = Transcript(split, board.batches, copy.deepcopy(leaderboard))
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


TRANSCRIPTS = TranscriptCache()


def attack_identity(attack: Any) -> tuple[str, dict[str, Any]]:
    """What names an attack's random stream and its transcript: its id and parameters but its
    ``final_only_params`` (the same whether the attack plays in this process or its own)."""
    return shared_identity(attack.id, attack.get_params(), attack.final_only_params)


def shared_identity(attack_id: str, params: dict[str, Any], final_only: frozenset[str]) -> tuple[str, dict[str, Any]]:
    """The attack's identity for its random streams and its transcript: without ``final_only`` parameters."""
    return attack_id, {name: value for name, value in params.items() if name not in final_only}
