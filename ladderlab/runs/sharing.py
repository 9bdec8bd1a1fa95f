"""One transcript for the duels that differ only in how the attack picks its final prediction.

Some attack parameters change only the final prediction, never a submission: Freedman's
``k`` picks the features of the final regression from the same p released scores
(Chaibub Neto et al., Fig. 2). Such an attack is a :class:`~ladderlab.attack.FinalChoiceAttack`:
it lists them in ``final_only_params`` and splits its ``run`` into ``play`` (every
submission; returns what the final choice needs) and ``final_prediction``. The duel then
derives every random stream from the attack's identity *without* those parameters, so the
duels at k = 1 … 30 of one replication have the same transcript, and a process plays it
once: the first duel records the state ``play`` returned and the leaderboard after the
last submission; the others only compute and score their own final prediction on a copy
of that leaderboard. Each duel's result is bit-identical to playing it alone, and each cell
keeps its distribution; the cells at different k now share their transcript (common
random numbers), as the paper's figure does.

Replication 0 checks the declaration: there, every duel plays in full and must reproduce
the recorded transcript, or :class:`TranscriptMismatch` names the difference.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ladderlab.board import Leaderboard
from ladderlab.tasks import Split

CACHED_TRANSCRIPTS = 4
"""Transcripts kept per process (the runner plays the duels of one replication together)."""
CACHED_BYTES = 256 * 2**20
"""Above this, only the newest transcript is kept, and none once a new split is about to be
drawn: a transcript holds its split's data (1.2 GB for the Science experiment at full scale),
and four of them made a run of ``dwork-science-fig1-full`` peak at 7.1 GB."""


class TranscriptMismatch(RuntimeError):
    """A duel that should share a recorded transcript played a different one."""


@dataclass(frozen=True)
class Transcript:
    """A played transcript: the split, and (pickled, so that each duel gets its own copy) the
    leaderboard after the attack's last submission, the state its ``play`` returned, its marks
    and its number of submissions."""

    split: Split
    played: bytes

    @property
    def nbytes(self) -> int:
        """The memory it holds: the split's arrays and the pickled leaderboard and state."""
        arrays = (self.split.public.X_train, self.split.public.y_train, self.split.public.X_holdout, self.split.y_holdout)
        return sum(np.asarray(array).nbytes for array in arrays) + len(self.played)

    @classmethod
    def record(cls, split: Split, leaderboard: Leaderboard, state: Any, marks: dict[str, list[int]],
               submissions: int) -> Transcript:
        return cls(split, pickle.dumps((leaderboard, state, marks, submissions), protocol=pickle.HIGHEST_PROTOCOL))

    def copy(self) -> tuple[Leaderboard, Any, dict[str, list[int]], int]:
        """A fresh copy of (leaderboard, state, marks, submissions)."""
        return pickle.loads(self.played)

    def check_same_as(self, leaderboard: Leaderboard, submissions: int) -> None:
        """Raise :class:`TranscriptMismatch` unless ``leaderboard`` holds this transcript's submissions."""
        recorded, _, _, recorded_submissions = self.copy()
        if submissions != recorded_submissions:
            raise TranscriptMismatch(
                f"{submissions} submissions where the shared transcript has {recorded_submissions}: an attack's "
                "final_only_params must not change its submissions"
            )
        mine, theirs = leaderboard.records(), recorded.records()
        for name in ("released", "public", "final"):
            if not np.array_equal(mine[name], theirs[name], equal_nan=True):
                raise TranscriptMismatch(
                    f"the {name} scores differ from the shared transcript: an attack's final_only_params "
                    "must not change its submissions"
                )


class TranscriptCache:
    """The last few transcripts of this process, by the identity of the duel they belong to: at
    most ``size`` of them, and while they hold more than ``max_bytes``, only the newest."""

    def __init__(self, size: int = CACHED_TRANSCRIPTS, max_bytes: int = CACHED_BYTES):
        self.size = size
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, Transcript] = OrderedDict()

    def get(self, key: Hashable) -> Transcript | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: Hashable, transcript: Transcript) -> None:
        self._entries[key] = transcript
        self._entries.move_to_end(key)
        self._trim(keep=1)

    def make_room(self) -> None:
        """Before a new split is drawn: drop the transcripts that hold more than ``max_bytes``."""
        self._trim(keep=0)

    def _trim(self, keep: int) -> None:
        while len(self._entries) > keep and (
                len(self._entries) > self.size or sum(t.nbytes for t in self._entries.values()) > self.max_bytes):
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


TRANSCRIPTS = TranscriptCache()
