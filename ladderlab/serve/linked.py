"""The service's mechanism states under ``[rules] link = true``: a Sybil's accounts linked as they submit.

The rule and the guarantee are the simulation's (:mod:`ladderlab.engines.linking`, as
:func:`ladderlab.competition.play_competition` applies it with ``link=``): each submission's
predictions on every holdout row are compared, as one matrix, with the latest submission of every
team outside its group (:meth:`Linker.observe`, O(A·N) for A teams and N holdout rows); teams are
linked where they differ on fewer than ⌈p₀N⌉ holdout rows, a decision that does not depend on
which rows are public (docs/decisions.md#serve-link-probe). A group is answered
by the mechanism state of its *keeper* (when two groups merge: the one that made the most
submissions; on ties the team first in name order), and shares one total cap and one daily cap
(:meth:`Linker.charge`, days are UTC days). A submission beyond the group's caps is *refused*: the
mechanism never sees it, and the log keeps it with decision ``refused`` (it counts in its team's
own caps and is its team's latest prediction for linking, as in the engine).

Everything here is a function of the log in order: a restarted server, a second process and
``serve verify`` feed the logged entries through :meth:`LinkedStates.apply`, which checks every
release, score, decision and link against the log, bit for bit, once :func:`check_link_record`
has found the log written under the challenge's link rule.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from ladderlab.certification.challenge import Challenge
from ladderlab.engines.linking import Linker
from ladderlab.params import INT64_LIMIT
from ladderlab.serve.replay import (
    REPLAY_ROWS,
    SHARED,
    MechanismState,
    fresh_state,
    same_bits,
    score,
)
from ladderlab.serve.storage import REFUSED, Entry, Storage, StorageError


@dataclass(frozen=True)
class Outcome:
    """What one submission got: the team whose state answered it (its group's keeper), the links
    it made (other team, differing holdout rows), its scores, release and decision."""

    keeper: str
    links: tuple[tuple[str, int], ...]
    released: float
    public: float
    final: float
    decision: str


@dataclass
class LinkedStates:
    """Every team's group and its keeper's mechanism state, after the log up to ``last_id``."""

    challenge: Challenge
    secret_seed: int
    teams: list[str] = field(default_factory=list)
    """The linker's accounts in name order (ties between keepers go to the first): the challenge's teams
    unless given (with those that registered: a team that has not submitted yet changes nothing
    but the numbering, and the order of the others is the same)."""
    linker: Linker = field(init=False)
    states: dict[str | None, MechanismState] = field(init=False, default_factory=dict)
    last_release: dict[str | None, float] = field(init=False, default_factory=dict)
    last_id: int = 0
    dirty: bool = False
    """True while a submission the log may not hold has changed the groups or states (until its commit)."""

    def __post_init__(self) -> None:
        self.teams = sorted(self.teams or [team.name for team in self.challenge.spec.teams])
        self.index = {team: i for i, team in enumerate(self.teams)}
        rule = self.challenge.link_rule()
        assert rule is not None, "LinkedStates needs rules.link = true"
        self.linker = Linker(rule, len(self.teams), int(self.challenge.split.y_holdout.size))
        self.shared = type(self.challenge.mechanism()).shared_state
        rules = self.challenge.spec.rules
        self.cap = INT64_LIMIT if rules.total is None else rules.total
        self.per_day = INT64_LIMIT if rules.per_day is None else rules.per_day

    def keeper(self, team: str) -> str:
        """The team whose mechanism state answers ``team``'s group."""
        return self.teams[self.linker.keeper(self.index[team])]

    def group_spent(self, team: str, day: date) -> tuple[bool, bool]:
        """Whether ``team``'s group has spent its total cap, and its cap of ``day``."""
        keeper = self.linker.keeper(self.index[team])
        today = self.linker.spent_today[keeper] if self.linker.today == day.toordinal() else 0
        return self.linker.spent[keeper] >= self.cap, today >= self.per_day

    def submit(self, team: str, P: np.ndarray, day: date) -> list[Outcome]:
        """Link, charge and answer validated predictions ``P`` of ``team`` made on UTC ``day``, in
        order, as one row after another would be (a row may link, and so change the state that
        answers the next). The rows that cannot link (:meth:`Linker.cannot_link`, one comparison
        of them all) go through in runs: each run charged and scored as one batch."""
        account, round_ = self.index[team], day.toordinal()
        quiet = self.linker.cannot_link(account, P)
        outcomes: list[Outcome] = []
        start = 0
        while start < P.shape[0]:
            if quiet[start]:
                stop = start + int(np.argmin(quiet[start:])) if not quiet[start:].all() else len(quiet)
                keeper, links = self.linker.observe_unlinked(account, P[start:stop]), ()
            else:
                stop = start + 1
                made = len(self.linker.links)
                keeper = self.linker.observe(account, P[start], round_)
                links = tuple((self.teams[link.other], link.differing) for link in self.linker.links[made:])
            outcomes += self._answer(keeper, links, P[start:stop], round_)
            start = stop
        return outcomes

    def _answer(self, keeper: int, links: tuple[tuple[str, int], ...], P: np.ndarray, round_: int) -> list[Outcome]:
        """Charge rows ``P`` to the group of ``keeper`` and answer them: the first ones the caps allow
        by the mechanism, in one batch; the rest refused (scored exactly, released as before them)."""
        key = SHARED if self.shared else self.teams[keeper]
        state = self._state(key)
        accepted = self.linker.charge(keeper, round_, self.cap, self.per_day, P.shape[0])
        outcomes = []
        if accepted:
            records, decisions = score(state, P[:accepted])
            self.last_release[key] = float(records["released"][-1])
            outcomes += [Outcome(self.teams[keeper], links if row == 0 else (), released, public, final, decision)
                         for row, (released, public, final, decision) in enumerate(zip(
                             records["released"].tolist(), records["public"].tolist(), records["final"].tolist(),
                             decisions))]
        if accepted < P.shape[0]:
            public_scores, final_scores = state.leaderboard.exact_scores(P[accepted:])
            outcomes += [Outcome(self.teams[keeper], links if accepted == 0 and row == 0 else (),
                                 self.last_release[key], public, final, REFUSED)
                         for row, (public, final) in enumerate(zip(public_scores.tolist(), final_scores.tolist()))]
        return outcomes

    def apply(self, entries: list[Entry], storage: Storage, connection: object | None = None) -> None:
        """Feed logged entries (with their links) through :meth:`submit`, in order (each run of one
        team's entries of one day as one upload), and check that each gives back what the log says;
        :class:`StorageError` names the first that does not."""
        for start in range(0, len(entries), REPLAY_ROWS):
            chunk = entries[start : start + REPLAY_ROWS]
            stored = storage.load_predictions([entry.prediction_sha256 for entry in chunk], connection)
            for entry in chunk:
                if entry.prediction_sha256 not in stored or entry.team not in self.index:
                    raise StorageError(f"submission {entry.submission_id}: its prediction or its team "
                                       f"{entry.team!r} is missing")
            for (team, day), run in itertools.groupby(chunk, key=lambda entry: (entry.team, entry.day)):
                run = list(run)
                P = self._state(SHARED if self.shared else team).leaderboard.check(
                    np.stack([stored[entry.prediction_sha256] for entry in run]))
                for entry, outcome in zip(run, self.submit(team, P, date.fromisoformat(day))):
                    if (not same_bits((outcome.released, outcome.public, outcome.final),
                                      (entry.released, entry.public_score, entry.private_score))
                            or outcome.decision != entry.decision or outcome.links != entry.links):
                        raise StorageError(
                            f"submission {entry.submission_id} ({entry.team} #{entry.team_sequence}) does not replay: "
                            "the log says otherwise than the mechanism and the link rule do now (changed labels, "
                            "rules, mechanism code or secret?)")
                    self.last_id = entry.submission_id

    def _state(self, key: str | None) -> MechanismState:
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = fresh_state(self.challenge, self.secret_seed, key)
        return state


def replayed(challenge: Challenge, storage: Storage, secret_seed: int, entries: list[Entry],
             teams: list[str] | None = None) -> LinkedStates:
    """The linked states of ``teams`` (default: the challenge file's) after ``entries`` (the whole log,
    verified, with links), replayed and checked."""
    states = LinkedStates(challenge, secret_seed, list(teams or []))
    states.apply(entries, storage)
    return states


def link_record(challenge: Challenge) -> str:
    """The link rule and threshold a log is written under, as its metadata keeps them (``off``: none)."""
    rule = challenge.link_rule()
    if rule is None:
        return "off"
    return json.dumps({**rule.record(), "threshold": challenge.link_threshold()}, sort_keys=True)


def check_link_record(challenge: Challenge, storage: Storage) -> bool:
    """Whether the log records the challenge's link rule (no record counts as ``off``; False: it
    records another and has no entry, so the caller may record the challenge's). A log with entries
    written under another rule is refused, one line naming the challenge file and both rules, since
    its links would not replay; one of the old rule on public rows (its record has ``alpha``) says
    so, since no rules can bring that back."""
    expected = link_record(challenge)
    recorded = storage.meta_value("link_rule")
    if (recorded or "off") == expected:
        return True
    if not storage.length():
        return False
    if '"alpha"' in (recorded or ""):
        raise StorageError(f"{challenge.path}: the log was written with the link rule {recorded}, the old rule on "
                           f"differing public rows (its decision depended on the split); this version links on "
                           f"differing holdout rows ({expected}): finish the challenge with the ladderlab that "
                           "began it, or start a new log")
    raise StorageError(f"{challenge.path}: the log was written with the link rule {recorded or 'off'}, the challenge "
                       f"file now gives {expected} (rules.link or its parameters): put the rules back, or start a "
                       "new log")
