"""The mechanism's state as a function of the log and the secret: rebuild it, and verify it.

Each team's mechanism (or the one shared by all teams, for a mechanism class with
``shared_state``) is bound through :func:`ladderlab.runs.duel.open_board`, the path duels
use, with a random stream derived with ``SeedSequence`` from the secret seed, the
challenge's identity and the team's name. Feeding the logged predictions through it in
log order gives back every logged release, exact public and final score, bit for bit:
a restarted server rebuilds its state this way, a server process catches up on what
other processes appended, and ``ladderlab serve verify`` checks a whole log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ladderlab.board import Board, Leaderboard
from ladderlab.certification.challenge import Challenge
from ladderlab.runs.duel import open_board
from ladderlab.seeding import stream
from ladderlab.serve.storage import Entry, Storage, StorageError
from ladderlab.utils.progress import progress_bar

REPLAY_ROWS = 64
"""Logged predictions scored at once while replaying (bounded memory, one batch per call)."""

SHARED = None
"""The key of the one state of a mechanism whose class sets ``shared_state``."""


def mechanism_stream(secret_seed: int, challenge: Challenge, team: str | None) -> np.random.Generator:
    """The random stream of ``team``'s mechanism (``None``: the shared one)."""
    return stream(secret_seed, "serve-mechanism", challenge.identity(), "shared" if team is None else ("team", team))


@dataclass
class MechanismState:
    """One bound mechanism and how much of the log it has seen."""

    board: Board
    last_id: int = 0
    """The last submission id applied."""
    applied: int = 0
    """Entries applied."""
    dirty: bool = False
    """True while a submission the log may not hold is in the mechanism (until its commit)."""

    @property
    def leaderboard(self) -> Leaderboard:
        return self.board._leaderboard


def fresh_state(challenge: Challenge, secret_seed: int, team: str | None) -> MechanismState:
    board = open_board(challenge.split, challenge.mechanism(), mechanism_stream(secret_seed, challenge, team))
    return MechanismState(board)


def score(state: MechanismState, P: np.ndarray) -> tuple[dict[str, np.ndarray], list[str]]:
    """Score validated predictions on the state's leaderboard; return the records of the batch
    and the mechanism's decision for each row ("accepted" or "rejected" by a mechanism that
    releases its best, "scored" otherwise)."""
    mechanism = state.leaderboard.mechanism
    start = len(mechanism.released_)
    state.leaderboard.submit_many(P)
    records = state.leaderboard.last_records()
    if not mechanism.releases_best:
        return records, ["scored"] * P.shape[0]
    accepted = set()
    for index in reversed(mechanism.acceptances_):
        if index < start:
            break
        accepted.add(index)
    return records, ["accepted" if start + row in accepted else "rejected" for row in range(P.shape[0])]


def apply(state: MechanismState, entries: list[Entry], storage: Storage, connection: object | None = None,
          done: Callable[[int], object] = lambda count: None) -> None:
    """Feed logged entries through the state's mechanism, in order, and check that it gives
    back what the log says; :class:`StorageError` names the first entry that differs.
    ``done`` is told how many entries each chunk applied (a progress bar's ``update``)."""
    for start in range(0, len(entries), REPLAY_ROWS):
        chunk = entries[start : start + REPLAY_ROWS]
        stored = storage.load_predictions([entry.prediction_sha256 for entry in chunk], connection)
        missing = [entry for entry in chunk if entry.prediction_sha256 not in stored]
        if missing:
            raise StorageError(f"submission {missing[0].submission_id}: its prediction is missing from the log")
        P = state.leaderboard.check(np.stack([stored[entry.prediction_sha256] for entry in chunk]))
        records, decisions = score(state, P)
        for entry, released, public, final, decision in zip(chunk, records["released"], records["public"],
                                                              records["final"], decisions):
            logged = (entry.released, entry.public_score, entry.private_score, entry.decision)
            if not same_bits((released, public, final), logged[:3]) or decision != entry.decision:
                raise StorageError(
                    f"submission {entry.submission_id} ({entry.team} #{entry.team_sequence}) does not replay: the log "
                    "says otherwise than the mechanism does now (changed labels, mechanism code or secret?)")
        state.last_id = chunk[-1].submission_id
        state.applied += len(chunk)
        done(len(chunk))


def same_bits(values: tuple[float, ...], logged: tuple[float, ...]) -> bool:
    return np.array_equal(np.array(values, dtype=np.float64).view(np.int64), np.array(logged, dtype=np.float64).view(np.int64))


def rebuild(challenge: Challenge, storage: Storage, secret_seed: int, progress: bool | None = False,
            entries: list[Entry] | None = None) -> tuple[dict[str | None, MechanismState], int]:
    """Verify the chain (unless given its verified ``entries``) and replay the whole log; return the
    states by team (or the shared state under :data:`SHARED`) and the number of entries replayed
    (under ``rules.link``: :func:`ladderlab.serve.linked.replayed`). ``progress`` shows a bar
    of the entries replayed (None: when standard error is a terminal)."""
    if entries is None:
        entries = storage.verify_chain(challenge.identity())
    shared = type(challenge.mechanism()).shared_state
    states: dict[str | None, MechanismState] = {}
    by_team: dict[str | None, list[Entry]] = {SHARED: entries} if shared else {}
    if not shared:
        for entry in entries:
            by_team.setdefault(entry.team, []).append(entry)
    with progress_bar(progress=progress, total=len(entries), desc="replay", unit="submission") as bar:
        for team, team_entries in by_team.items():
            states[team] = fresh_state(challenge, secret_seed, team)
            apply(states[team], team_entries, storage, done=bar.update)
    return states, len(entries)
