"""The leaderboard service: a challenge, its log and the mechanisms' state, without HTTP.

:meth:`Service.submit` is the one way a submission enters the log. Under the team's lock
(a thread lock in this process, and the database's: see :mod:`ladderlab.serve.storage`)
it answers a retried upload (same ``Idempotency-Key``) with what the first one got,
catches the mechanism up on entries other server processes appended, checks the caps,
scores, and appends, in one transaction. A batch is accepted whole or not at all. If
anything fails after the mechanism saw the batch, that state is dropped and rebuilt
from the log on the next request: the log is the truth.

Under ``[rules] link = true`` (:mod:`ladderlab.serve.linked`) every submission is serialised with
every other (the chain's head row is locked for the whole submission, as for a mechanism with one
shared state), because any submission may link its team with any other.

What is served before the close holds released values only. The exact public and
final scores leave the service only through :meth:`final`, :meth:`export` and
:meth:`private_losses` (the organiser's), and the final scores through
:meth:`public_final` (anyone's), and only after the close.

The actions between submissions (a team registering, selecting, the close) are checked by
:mod:`ladderlab.serve.events` and chained with the submissions in the log.
"""

from __future__ import annotations

import hmac
import io
import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ladderlab.certification.challenge import (
    MAX_INVITE_CODE,
    MIN_INVITE_CODE,
    Challenge,
)
from ladderlab.competition import leaderboard_values, selected_submissions
from ladderlab.engines.linked_ranking import (
    DEFAULT_LINKED_POLICY,
    apply_linked_policy,
    check_linked_policy,
)
from ladderlab.scoring import ScoreError, get_scorer
from ladderlab.seeding import secret_fingerprint
from ladderlab.serve import replay
from ladderlab.serve.errors import ServiceError
from ladderlab.serve.events import (
    ActionSummary,
    check_new_team,
    check_not_closed,
    check_selection,
    verify_actions,
)
from ladderlab.serve.events import text_time as _text
from ladderlab.serve.linked import (
    LinkedStates,
    Outcome,
    check_link_record,
    link_record,
    replayed,
)
from ladderlab.serve.organiser_links import link_events, link_report
from ladderlab.serve.replay import SHARED, MechanismState
from ladderlab.serve.security import holder, new_token, token_hash
from ladderlab.serve.storage import (
    ORGANISER,
    SCORER,
    REFUSED,
    Entry,
    Storage,
    StorageError,
    encode_prediction,
    microseconds,
    moment,
    prediction_sha256,
)

if TYPE_CHECKING:
    from ladderlab.final_rankings.private_samples import PrivateSamples

log = logging.getLogger("ladderlab.serve")
PLATFORM_TEAM = ":"
"""What a team a platform names has in its name (``evalai:42``, ``hf:…``): a challenge file's team
cannot have it (its pattern refuses ``:``), so a platform's team never takes a file's team's name."""
MAX_IDEMPOTENCY_KEY = 128
TOKEN_REFRESH_SECONDS = 5.0
INVITE_CODE_HASH = "invite_code_hash"
"""The log's metadata key of the organiser's invite code (its SHA-256; empty: registration stopped)."""
FINAL_BOARD = "final_board"
"""The log's metadata key of the public final board, computed once after the close (:meth:`Service.public_final`)."""
PUBLIC_LINKED = "public_linked"
"""The log's metadata key of the linked-teams policy of the public final board (default ``flag``)."""
LINKED = "#linked"
"""The lock key of every submission under ``rules.link`` (no team name starts with ``#``)."""


@dataclass(frozen=True)
class Accepted:
    """What an upload got: its log entries (released values to be shown), what the caps
    still allow, and whether it was a retry answered from the log."""

    entries: list[Entry]
    remaining_today: int | None
    remaining_total: int | None
    repeated: bool = False


def check_idempotency_key(key: str | None) -> None:
    """Refuse (400) an ``Idempotency-Key`` that is empty or longer than :data:`MAX_IDEMPOTENCY_KEY`."""
    if key is not None and not 0 < len(key) <= MAX_IDEMPOTENCY_KEY:
        raise ServiceError(400, "invalid", f"Idempotency-Key must have 1 to {MAX_IDEMPOTENCY_KEY} characters, "
                                           f"got {len(key)}")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Service:
    """The leaderboard service of one challenge on one log."""

    def __init__(self, challenge: Challenge, storage: Storage, secret_seed: int,
                 clock: Callable[[], datetime] = utc_now):
        self.challenge = challenge
        self.storage = storage
        self.secret_seed = secret_seed
        self.clock = clock
        self.scorer = get_scorer(challenge.split.public.scorer)
        mechanism_class = type(challenge.mechanism())
        self.shared = mechanism_class.shared_state
        self.releases_best = mechanism_class.releases_best and not self.shared
        self._states: dict[str | None, MechanismState] = {}
        self._locks: dict[str | None, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._write_lock = threading.Lock() if storage.is_sqlite else None
        self._hashes: dict[str, str] = {}
        self._organiser_hash = ""
        self._scorer_hash = ""
        self._hashes_read = -math.inf
        self._teams_stored = 0
        self._validator = replay.fresh_state(challenge, secret_seed, SHARED).leaderboard
        self.linking = challenge.spec.rules.link
        self._linked: LinkedStates | None = None
        self._others: list[str] = []
        self._final_lock = threading.Lock()
        self._final_board: dict[str, Any] | None = None

    # --- starting ---------------------------------------------------------------------------

    def open(self) -> dict[str, str]:
        """Create or check the log, give every team of the challenge file a token if it has
        none, verify the chain and rebuild the mechanisms' state by replaying the log.
        Returns the tokens issued now (by team, and the organiser's), to be shown once."""
        identity = self.challenge.identity()
        issued: dict[str, str] = {}
        organiser = new_token()
        now_us = microseconds(self.clock())
        if self.storage.initialise(identity, secret_fingerprint(self.secret_seed) or "", token_hash(organiser), now_us):
            issued[ORGANISER] = organiser
        if self.storage.meta_value("scorer_token_hash") is None:
            issued[SCORER] = self.reissue(SCORER)
        known = self.storage.team_hashes()
        names = [team.name for team in self.challenge.spec.teams]
        registered = self.storage.registered_teams()
        for name in names:
            clash = next((other for other in registered if other.casefold() == name.casefold()), None)
            if clash is not None:
                raise StorageError(f"team {name!r} of {self.challenge.path} has the name of a team that registered "
                                   f"itself ({clash!r}; names are compared ignoring case): rename it in the file")
        dropped = sorted(name for name in set(known) - set(names) - set(registered) if PLATFORM_TEAM not in name)
        logged = {entry.team for entry in self.storage.entries()} if dropped else set()
        if set(dropped) & logged:
            raise StorageError(f"team {sorted(set(dropped) & logged)[0]!r} has submissions in the log but is not in "
                               f"{self.challenge.path}: put it back (a team cannot be removed once it submitted)")
        for name in names:
            if name not in known:
                token = new_token()
                self.storage.add_team(name, token_hash(token), now_us)
                issued[name] = token
        self._hashes_read = -math.inf
        self._check_link_record()
        _, count, _ = self.replay_log()
        log.info("log %s: %d submissions verified and replayed", self.storage.display_url(), count)
        return issued

    def replay_log(self, progress: bool | None = False) -> tuple[int, int, ActionSummary | None]:
        """Verify the log's chains and that its recorded actions keep the rules
        (:func:`~ladderlab.serve.events.verify_actions`; a log of an older schema not migrated yet has
        none) and rebuild the mechanisms' states by replaying
        it (``progress``: a bar of the entries replayed, None: when standard error is a terminal);
        return the number of states, of entries, and what the events did. :class:`StorageError`
        names the first entry or event that does not verify."""
        entries = self.storage.verify_chain(self.challenge.identity())
        recorded = self.storage.events()
        summary = verify_actions(self.challenge, entries, recorded) if recorded else None
        if self.linking:
            self._linked = replayed(self.challenge, self.storage, self.secret_seed, entries, self.team_names())
            states = len(self._linked.states)
        else:
            self._states, _ = replay.rebuild(self.challenge, self.storage, self.secret_seed, progress, entries)
            states = len(self._states)
        return states, len(entries), summary

    def _check_link_record(self) -> None:
        """Record the link rule the log is written under (:func:`ladderlab.serve.linked.check_link_record`)."""
        if not check_link_record(self.challenge, self.storage):
            self.storage.set_meta("link_rule", link_record(self.challenge))

    def reissue(self, name: str) -> str:
        """A new token for a team (of the challenge file, registered, or a platform's enrolled team), the
        organiser or the scorer; the old one stops working, and so do the page's sessions signed in with it."""
        token = new_token()
        if name not in (ORGANISER, SCORER) and name not in self.team_names() and not (
                PLATFORM_TEAM in name and name in self.storage.team_hashes()):
            raise ValueError(f"--reissue {name}: no such team in {self.challenge.path}, none registered with that "
                             f"name (or '{ORGANISER}')")
        self.storage.set_token_hash(name, token_hash(token), microseconds(self.clock()))
        self._hashes_read = -math.inf  # in this process at once (others within TOKEN_REFRESH_SECONDS)
        return token

    # --- who is asking ----------------------------------------------------------------------

    def team_names(self) -> list[str]:
        """Every team: the challenge file's, then those that registered (in the order they did) and
        those a platform's scorer enrolled (:meth:`other_teams`)."""
        self._token_hashes()
        return [team.name for team in self.challenge.spec.teams] + self._others

    def other_teams(self, connection: Any = None) -> list[str]:
        """The teams not in the challenge file: those that registered, in the order they did, then
        those a platform's scorer enrolled (:data:`PLATFORM_TEAM` in their names), by name."""
        registered = self.storage.registered_teams(connection)
        enrolled = sorted(name for name in self.storage.team_hashes(connection)
                          if PLATFORM_TEAM in name and name not in registered)
        return registered + enrolled

    def _token_hashes(self) -> tuple[dict[str, str], str]:
        """The teams' and the organiser's token hashes, read again from the log's database every
        few seconds, so that a token reissued (or a team registered) by another process takes
        effect here too."""
        now = time.monotonic()
        if now - self._hashes_read > TOKEN_REFRESH_SECONDS:
            self._others = self.other_teams()
            names = {team.name for team in self.challenge.spec.teams} | set(self._others)
            stored = self.storage.team_hashes()
            self._teams_stored = len(stored)
            self._hashes = {name: digest for name, digest in stored.items() if name in names}
            self._organiser_hash = self.storage.meta_value("organiser_token_hash") or ""
            self._scorer_hash = self.storage.meta_value("scorer_token_hash") or ""
            self._hashes_read = now
        return self._hashes, self._organiser_hash

    def team_of(self, token: str) -> str:
        team = holder(token, self._token_hashes()[0])
        if team is None and self.challenge.spec.registration is not None and (
                self.storage.team_count() != self._teams_stored):  # a team registered with another server process
            self._hashes_read = -math.inf
            team = holder(token, self._token_hashes()[0])
        if team is None:
            raise ServiceError(401, "unauthorized", "unknown team token")
        return team

    def holder_of(self, token: str) -> tuple[str, str]:
        """Who holds ``token`` (a team's name, or :data:`ORGANISER`) and the hash of the token they
        hold now; 401 for an unknown token."""
        hashes, organiser = self._token_hashes()
        if holder(token, {ORGANISER: organiser}) is not None:
            return ORGANISER, organiser
        team = self.team_of(token)
        return team, self._token_hashes()[0][team]

    def holds_token(self, who: str, hashed: str) -> bool:
        """Whether ``who`` (a team or :data:`ORGANISER`) still holds the token of SHA-256 ``hashed``
        (False once it was reissued)."""
        hashes, organiser = self._token_hashes()
        current = organiser if who == ORGANISER else hashes.get(who)
        return current is not None and hmac.compare_digest(current.encode(), hashed.encode())

    def knows(self, token: str) -> bool:
        """Whether ``token`` is a team's or the organiser's (the places kept for them, :mod:`ladderlab.serve.limits`)."""
        hashes, organiser = self._token_hashes()
        return holder(token, {**hashes, ORGANISER: organiser}) is not None

    def check_organiser(self, token: str) -> None:
        if holder(token, {ORGANISER: self._token_hashes()[1]}) is None:
            raise ServiceError(401, "unauthorized", "this needs the organiser's token")

    def scored_team(self, scorer_token: str, team_token: str | None, platform_team: str | None) -> str:
        """The team a platform's scorer uploads for: the holder of ``team_token`` (a participant put
        it in the submission: Codabench), or ``platform_team``, a name the platform vouches for
        (``evalai:42``), enrolled at its first upload with a token nobody holds. 401 without the
        scorer credential; 400 unless exactly one of the two is given, or for a name without
        :data:`PLATFORM_TEAM`, longer than 64 characters or not printable."""
        self._token_hashes()
        if holder(scorer_token, {SCORER: self._scorer_hash}) is None:
            raise ServiceError(401, "unauthorized", "this needs the scorer credential")
        if (team_token is None) == (platform_team is None):
            raise ServiceError(400, "invalid", "name the team by its token (X-Ladderlab-Team-Token) or as the platform "
                                               "knows it (X-Ladderlab-Team), one of the two")
        if team_token is not None:
            return self.team_of(team_token)
        name = str(platform_team)
        if PLATFORM_TEAM not in name or not 2 < len(name) <= 64 or not name.isprintable():
            raise ServiceError(400, "invalid", f"a platform's team is named PLATFORM{PLATFORM_TEAM}ID in at most 64 "
                                               f"printable characters, got {name[:80]!r}")
        if name not in self._token_hashes()[0]:
            from sqlalchemy.exc import IntegrityError

            try:
                self.storage.add_team(name, token_hash(new_token()), microseconds(self.clock()))
                log.info("team %s enrolled by the platform's scorer", name)
            except IntegrityError:  # another process enrolled it at the same moment: its row is there now
                pass
            self._hashes_read = -math.inf
        return name

    # --- submitting -------------------------------------------------------------------------

    def closed_at(self) -> datetime | None:
        """When the challenge closed (by the organiser, or at its end), None while it is open."""
        return self._closing(self.storage.meta_value("closed_at"))

    def _closing(self, stored: str | None) -> datetime | None:
        """The closing time given the organiser's stored one (None: not closed by the organiser)."""
        end = self.challenge.spec.rules.end
        moments = [when for when in (None if stored is None else datetime.fromisoformat(stored), end)
                   if when is not None and when <= self.clock()]
        return min(moments) if moments else None

    def check(self, predictions: np.ndarray) -> np.ndarray:
        """Predictions as the leaderboard accepts them (``Leaderboard.check``, the duels' validation),
        or ``ValueError`` naming the problem; nothing is scored."""
        return self._validator.check(predictions)

    def submit(self, team: str, P: np.ndarray, idempotency_key: str | None = None) -> Accepted:
        """Count an upload in the team's rate limit (:meth:`admit`), then score the validated
        predictions ``P`` (rows, in the published order of the holdout) for ``team`` and append
        them to the log (:meth:`log_submission`), or raise :class:`ServiceError`."""
        self.admit(team)
        return self.log_submission(team, P, idempotency_key)

    def admit(self, team: str) -> None:
        """Count one upload in the team's token bucket, in a transaction of its own, so that an
        upload refused later (unreadable, over a cap, closed) still counts; 429 when the bucket is
        empty. The bucket lives in the log's database: it holds across the processes sharing it."""
        key = self._lock_key(team)
        with self._lock(key), self._writing(), self.storage.transaction() as connection:
            self.storage.lock_team(connection, team)
            self._check_rate(connection, team, self.clock())

    def log_submission(self, team: str, P: np.ndarray, idempotency_key: str | None = None) -> Accepted:
        """Score the validated predictions ``P`` of an admitted upload and append them to the log
        (under the link rule: rows beyond the linked group's caps are logged as refused, and an
        upload whose every row was refused is answered 429, reason ``linked-cap``)."""
        check_idempotency_key(idempotency_key)
        digests = [prediction_sha256(row) for row in P]
        encoded = {digest: encode_prediction(row) for digest, row in zip(digests, P)}
        key = self._lock_key(team)
        with self._lock(key), self._writing():
            try:
                with self.storage.transaction() as connection:
                    self.storage.lock_team(connection, team)
                    if key != team:  # one state for all, or links between any teams: one submission at a time
                        self.storage.head(connection)
                    now = self.clock()
                    if idempotency_key is not None:
                        earlier = self.storage.by_idempotency_key(connection, team, idempotency_key, P.shape[0])
                        if earlier:
                            return self._repeated(connection, team, earlier, digests, idempotency_key)
                    submitted = self.storage.submission_state(connection, team, now.date().isoformat())
                    self._check_open(now, submitted.closed_at)
                    total, today = submitted.total, submitted.today
                    self._check_caps(P.shape[0], total, today, now)
                    try:
                        outcomes = self._answer(connection, key, team, P, now)
                    except ScoreError as error:  # an undefined metric: the prediction's fault, nothing logged
                        raise ServiceError(422, "invalid", str(error)) from None
                    self.storage.store_predictions(connection, encoded)
                    stamp = microseconds(now)
                    rows = [
                        {"team": team, "team_sequence": total + i + 1, "submitted_at_us": stamp,
                         "utc_day": now.date().isoformat(), "prediction_sha256": digests[i],
                         "public_score": outcome.public, "private_score": outcome.final,
                         "released": outcome.released, "decision": outcome.decision,
                         "idempotency_key": None if idempotency_key is None else f"{idempotency_key}#{i}",
                         "links": outcome.links}
                        for i, outcome in enumerate(outcomes)
                    ]
                    entries = self.storage.append(connection, rows)
            except BaseException:
                self._forget_unlogged(key)
                raise
            self._logged(key, entries)
            log.info("team %s: submissions %s logged", team,
                     ", ".join(f"{entry.submission_id} ({entry.decision})" for entry in entries))
            if self.linking and all(entry.decision == REFUSED for entry in entries):
                raise self._linked_cap_error(team, now)
            return Accepted(entries, *self._remaining(total + len(entries), today + len(entries)))

    def _answer(self, connection: Any, key: str | None, team: str, P: np.ndarray, now: datetime) -> list[Outcome]:
        """What the mechanism (under the link rule: the team's group) answers ``team``'s rows, with
        every logged entry applied first; the state is dirty until :meth:`_logged`."""
        if self.linking:
            states = self._linked_caught_up(connection, team)
            states.dirty = True
            return states.submit(team, P, now.date())
        state = self._caught_up(connection, key)
        state.dirty = True
        records, decisions = replay.score(state, P)
        return [Outcome(team, (), float(released), float(public), float(final), decision) for released, public, final,
                decision in zip(records["released"], records["public"], records["final"], decisions)]

    def _forget_unlogged(self, key: str | None) -> None:
        """Drop a state that saw a submission the log does not hold: the next request rebuilds it."""
        if self.linking:
            if self._linked is not None and self._linked.dirty:
                self._linked = None
        elif key in self._states and self._states[key].dirty:
            del self._states[key]

    def _logged(self, key: str | None, entries: list[Entry]) -> None:
        """The state that answered ``entries`` has applied them: they are committed."""
        state = self._linked if self.linking else self._states[key]
        assert state is not None
        state.dirty = False
        state.last_id = entries[-1].submission_id
        if isinstance(state, MechanismState):
            state.applied += len(entries)

    def _linked_caught_up(self, connection: Any, team: str | None = None) -> LinkedStates:
        """The linked states after every logged entry (other processes' too), ``team`` among their
        accounts; rebuilt from the whole log after a failed submission, and when a team registered
        (the linker's accounts are numbered in name order)."""
        entries = []
        if self._linked is not None:
            entries = self.storage.entries_after(connection, self._linked.last_id, with_links=True)
            known = self._linked.index
            if (team is not None and team not in known) or any(entry.team not in known for entry in entries):
                self._linked = None
        if self._linked is None:
            entries = self.storage.entries_after(connection, 0, with_links=True)
            teams = [each.name for each in self.challenge.spec.teams] + self.other_teams(connection)
            self._linked = LinkedStates(self.challenge, self.secret_seed, teams)
        if entries:
            self._linked.apply(entries, self.storage, connection)
        return self._linked

    def _linked_cap_error(self, team: str, now: datetime) -> ServiceError:
        """The refusal of an upload beyond the linked group's caps. It says that the team is linked
        and which cap its group spent, never which other teams are in the group (docs/serve.md#linking)."""
        assert self._linked is not None
        rules = self.challenge.spec.rules
        spent_total, _ = self._linked.group_spent(team, now.date())
        if spent_total:
            return ServiceError(429, "linked-cap", f"this team is linked with another account (their submissions were "
                                                   f"near-identical) and the linked accounts share one total cap of "
                                                   f"{rules.total} submissions, which is spent: the upload was logged "
                                                   "but not scored")
        resets = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), timezone.utc)
        return ServiceError(429, "linked-cap", f"this team is linked with another account (their submissions were "
                                               f"near-identical) and the linked accounts share one daily cap of "
                                               f"{rules.per_day} submissions, which is spent today: the upload was "
                                               f"logged but not scored; it resets at {_text(resets)}",
                            retry_after=(resets - now).total_seconds())

    def _repeated(self, connection: Any, team: str, earlier: list[Entry], digests: list[str], key: str) -> Accepted:
        if [entry.prediction_sha256 for entry in earlier] != digests:
            raise ServiceError(409, "conflict", f"Idempotency-Key {key!r} was used before for other predictions: "
                                                "use a new key for a new upload")
        if self.linking and all(entry.decision == REFUSED for entry in earlier):
            self._linked_caught_up(connection)
            raise self._linked_cap_error(team, self.clock())
        total, today = self.storage.counts(connection, team, self.clock().date().isoformat())
        return Accepted(earlier, *self._remaining(total, today), repeated=True)

    def _check_rate(self, connection: Any, team: str, now: datetime) -> None:
        limits = self.challenge.spec.limits
        wait = self.storage.take_upload(connection, team, microseconds(now), float(limits.uploads_per_second),
                                        limits.burst)
        if wait:
            raise ServiceError(429, "rate", f"too many uploads: at most {limits.uploads_per_second:g} per second "
                                            f"(bursts of {limits.burst}); try again in {wait:.2f} s", retry_after=wait)

    def _check_open(self, now: datetime, stored_close: str | None) -> None:
        rules = self.challenge.spec.rules
        if rules.start is not None and now < rules.start:
            raise ServiceError(403, "not-open", f"the challenge opens at {_text(rules.start)}")
        closed = self._closing(stored_close)
        if closed is not None:
            raise ServiceError(403, "closed", f"the challenge closed at {_text(closed)}")

    def _check_caps(self, count: int, total: int, today: int, now: datetime) -> None:
        rules = self.challenge.spec.rules
        if rules.total is not None and total + count > rules.total:
            raise ServiceError(429, "cap", f"{_uploads(count)} would exceed the total cap of {rules.total} submissions "
                                           f"per team ({total} made, {rules.total - total} left)")
        if rules.per_day is not None and today + count > rules.per_day:
            resets = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), timezone.utc)
            raise ServiceError(429, "cap", f"{_uploads(count)} would exceed the daily cap of {rules.per_day} submissions "
                                           f"per team ({today} made today, {rules.per_day - today} left); "
                                           f"it resets at {_text(resets)}",
                               retry_after=(resets - now).total_seconds())

    def _remaining(self, total: int, today: int) -> tuple[int | None, int | None]:
        rules = self.challenge.spec.rules
        return (None if rules.per_day is None else rules.per_day - today,
                None if rules.total is None else rules.total - total)

    def _lock_key(self, team: str) -> str | None:
        """Whose submissions this team's wait for: its own, everyone's (one shared state), or
        everyone's under the link rule."""
        return LINKED if self.linking else SHARED if self.shared else team

    def _lock(self, key: str | None) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

    def _writing(self) -> threading.Lock | _NoLock:
        """SQLite has one writer at a time: threads of this process queue here rather than in
        SQLite's busy handler, which polls."""
        return self._write_lock or _NoLock()

    def _caught_up(self, connection: Any, key: str | None) -> MechanismState:
        """The state of ``key``'s mechanism after every logged entry (other processes' too)."""
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = replay.fresh_state(self.challenge, self.secret_seed, key)
        if key is SHARED:
            later = self.storage.entries_after(connection, state.last_id)
        else:
            later = self.storage.team_entries_after(connection, key, state.applied)
        if later:
            replay.apply(state, later, self.storage, connection)
        return state
    # --- reading ----------------------------------------------------------------------------

    def leaderboard(self) -> list[dict[str, Any]]:
        """The public leaderboard: each team's leaderboard value (the last release for a mechanism
        that releases its best, else its best release), best first, with its submission count."""
        from ladderlab.competition.measures import (
            ranks,  # scipy.stats: imported at the first request, not at start
        )

        summaries = self.storage.team_summaries()
        sign = self.scorer.sign
        rows = []
        for team, (count, last_us, lowest, highest, last_released) in summaries.items():
            value = last_released if self.releases_best else (lowest if sign > 0 else highest)
            rows.append({"team": team, "released": value, "submissions": count, "last_submission": _text(moment(last_us))})
        rows.sort(key=lambda row: (sign * row["released"], row["last_submission"]))
        for rank, row in zip(ranks(np.array([sign * row["released"] for row in rows])), rows):
            row["rank"] = int(rank)
        return rows

    def own_submissions(self, team: str) -> list[dict[str, Any]]:
        """A team's submissions as it may see them: released values, never the exact scores."""
        chosen = self.storage.selected().get(team, set())
        return [{"submission_id": entry.submission_id, "sequence": entry.team_sequence,
                 "submitted_at": _text(moment(entry.submitted_at_us)),
                 "released": None if entry.decision == REFUSED else entry.released,
                 "prediction_sha256": entry.prediction_sha256, "selected": entry.submission_id in chosen}
                for entry in self.storage.entries(team=team)]

    def allowance(self, team: str) -> tuple[int | None, int | None]:
        """Submissions the caps still allow the team: today, and in total (None: no cap)."""
        with self.storage.reading() as connection:
            total, today = self.storage.counts(connection, team, self.clock().date().isoformat())
        return self._remaining(total, today)

    def select(self, team: str, submission_id: int, selected: bool) -> None:
        """Select (or unselect) one of the team's submissions for the final ranking (rule k), under
        :func:`~ladderlab.serve.events.check_selection`; a change is recorded as an event."""
        rule = self.challenge.spec.rules.selection
        with self._writing(), self.storage.transaction() as connection:
            self.storage.lock_team(connection, team)
            closed = self._closing(self.storage.meta_value("closed_at", connection))
            owned = {entry.submission_id: entry.decision for entry in self.storage.entries(connection, team=team)}
            chosen = self.storage.selected(connection).get(team, set())
            check_selection(rule, team, submission_id, selected, owned, chosen, closed)
            self.storage.select(connection, team, submission_id, selected, microseconds(self.clock()))

    # --- registering ------------------------------------------------------------------------

    def registration_open(self) -> bool:
        """Whether a team may register now: the challenge has ``[registration]``, an invite code
        (the file's or the organiser's) and is not closed."""
        return self._invite_hash() is not None and self.closed_at() is None

    def _invite_hash(self) -> str | None:
        """The SHA-256 of the invite code in force: the organiser's if one was set (none if the
        organiser stopped registration), else the challenge file's; None without registration."""
        registration = self.challenge.spec.registration
        if registration is None:
            return None
        stored = self.storage.meta_value(INVITE_CODE_HASH)
        if stored is None:
            return None if registration.invite is None else token_hash(registration.invite)
        return stored or None

    def invite_source(self) -> str:
        """Where the invite code in force comes from: ``file``, ``organiser``, or ``none``."""
        if self._invite_hash() is None:
            return "none"
        return "file" if self.storage.meta_value(INVITE_CODE_HASH) is None else "organiser"

    def set_invite(self, code: str | None) -> str:
        """Set the invite code (None: a new random one) and return it; the file's code, or an
        earlier one, stops working."""
        if self.challenge.spec.registration is None:
            raise ServiceError(409, "no-registration", f"{self.challenge.path} has no [registration] table: teams "
                                                       "cannot register themselves")
        code = secrets.token_urlsafe(12) if code is None else code.strip()
        if not MIN_INVITE_CODE <= len(code) <= MAX_INVITE_CODE or any(character.isspace() for character in code):
            raise ServiceError(422, "invalid", f"an invite code has {MIN_INVITE_CODE} to {MAX_INVITE_CODE} characters "
                                               f"and no spaces, got {len(code)} characters")
        self.storage.set_meta(INVITE_CODE_HASH, token_hash(code))
        return code

    def stop_registration(self) -> None:
        """No team may register from now on (until a new invite code is set)."""
        self.storage.set_meta(INVITE_CODE_HASH, "")

    def register(self, name: str, invite: str, address: str) -> str:
        """Register a new team ``name`` with the invite code, asked from client ``address``; return its
        token, to be shown once. Every attempt counts in the address's rate limit (in a transaction
        of its own, so that a refused attempt counts too); then the code, the close, the most teams
        and the name (:func:`~ladderlab.serve.events.check_new_team`) are checked, and the team is
        added and its registration recorded as an event, one registration at a time."""
        registration = self.challenge.spec.registration
        if registration is None:
            raise ServiceError(404, "no-registration", "this challenge has no self-registration: the organiser gives "
                                                       "each team its token")
        now = self.clock()
        per_hour = registration.attempts_per_hour
        with self._writing(), self.storage.transaction() as connection:
            wait = self.storage.take_attempt(connection, address, microseconds(now), per_hour / 3600, per_hour)
        if wait:
            raise ServiceError(429, "rate", f"too many registration attempts from this address: at most {per_hour} an "
                                            f"hour; try again in {math.ceil(wait)} s", retry_after=wait)
        expected = self._invite_hash()
        if expected is None:
            raise ServiceError(403, "registration-closed", "registration is closed: ask the organiser for a token")
        if not hmac.compare_digest(token_hash(invite).encode(), expected.encode()):
            raise ServiceError(403, "invite", "wrong invite code")
        token = new_token()
        with self._writing(), self.storage.transaction() as connection:
            self.storage.hold_events(connection)  # registrations one at a time: each checks the names before it
            closed = self._closing(self.storage.meta_value("closed_at", connection))
            check_not_closed(closed, "teams no longer register")
            registered = self.storage.registered_teams(connection)
            if len(registered) >= registration.max_teams:
                raise ServiceError(403, "full", f"{len(registered)} teams have registered, the most this challenge "
                                                "allows: ask the organiser")
            check_new_team(name, [team.name for team in self.challenge.spec.teams]
                           + list(self.storage.team_hashes(connection)))
            self.storage.register_team(connection, name, token_hash(token), microseconds(now))
        self._hashes_read = -math.inf
        log.info("team %s registered", name)
        return token

    # --- the organiser ----------------------------------------------------------------------

    def close(self, linked: str | None = None) -> datetime:
        """Close the challenge now (no more submissions, selections or registrations) and record it;
        return when it closed. It waits for the submissions in progress (every team's row is locked),
        so that none is logged after the close. ``linked``: the policy of the public final board
        (:meth:`public_final`; default ``flag``)."""
        if linked is not None:
            self.storage.set_meta(PUBLIC_LINKED, check_linked_policy(linked))
        closed = self.closed_at()
        if closed is None:
            now = self.clock()
            with self._writing():
                closed = datetime.fromisoformat(self.storage.close_challenge(now.isoformat(), microseconds(now)))
            log.info("the challenge was closed by the organiser")
        return closed

    def public_linked(self) -> str:
        """The public final board's linked-teams policy: the organiser's choice at the close (or
        since), else ``flag``."""
        return self.storage.meta_value(PUBLIC_LINKED) or DEFAULT_LINKED_POLICY

    def change_public_linked(self, linked: str) -> None:
        """After the close, a new linked-teams policy for the public final board (what closing again
        with ``linked`` does, without the risk of closing an open challenge)."""
        if self.closed_at() is None:
            raise ServiceError(409, "open", "the challenge is still open: choose the public board's linked-teams "
                                            "policy when you close it")
        self.close(linked)

    def overview(self) -> list[dict[str, Any]]:
        """Every team with its submissions (refused ones included), the last one's time, the
        submissions it selected, and where it comes from (``file``, ``registration`` or
        ``platform``): for the organiser's page."""
        counts = self.storage.submission_counts()
        chosen = self.storage.selected()
        registered = set(self.storage.registered_teams())
        file_teams = {team.name for team in self.challenge.spec.teams}
        rows = [{"team": team, "submissions": counts.get(team, (0, 0))[0],
                 "last_submission": _text(moment(counts[team][1])) if team in counts else None,
                 "selected": len(chosen.get(team, ())),
                 "source": "file" if team in file_teams else "registration" if team in registered else "platform"}
                for team in self.team_names()]
        rows.sort(key=lambda row: (-row["submissions"], row["team"]))
        return rows

    def _require_closed(self) -> None:
        if self.closed_at() is None:
            raise ServiceError(409, "open", "the challenge is still open: exact scores leave the service only after "
                                            "the close (POST /api/organiser/close)")

    def _counted(self) -> tuple[list[Entry], dict[str, list[Entry]], set[int]]:
        """Every entry, the answered ones (not refused by a linked group's caps) by team, and the ids
        that count under the final-selection rule."""
        entries = self.storage.entries()
        by_team: dict[str, list[Entry]] = {}
        for entry in entries:
            if entry.decision != REFUSED:
                by_team.setdefault(entry.team, []).append(entry)
        rule = self.challenge.spec.rules.selection
        chosen_by_team = self.storage.selected() if isinstance(rule, int) else {}
        counted: set[int] = set()
        for team, team_entries in by_team.items():
            chosen = chosen_by_team.get(team)
            if chosen:
                counted |= chosen
                continue
            released = np.array([entry.released for entry in team_entries])
            accepted = [i for i, entry in enumerate(team_entries) if entry.decision == "accepted"]
            picked = selected_submissions(released, rule, self.scorer.sign,
                                          accepted[-1] if self.releases_best and accepted else None)
            counted |= {team_entries[int(i)].submission_id for i in picked}
        return entries, by_team, counted

    def links(self) -> dict[str, Any]:
        """The linked groups and the links that made them (:func:`~ladderlab.serve.organiser_links.link_report`;
        none when the rules link nothing)."""
        holdout = int(self.challenge.split.y_holdout.size)
        if not self.linking:
            return {"rule": None, "threshold": None, "holdout_size": holdout, "groups": []}
        with self.storage.reading() as connection:
            entries = self.storage.entries_after(connection, 0, with_links=True)
        rule = json.loads(link_record(self.challenge))
        teams = sorted(self.team_names())
        return link_report(teams, link_events(entries, rule["threshold"]), rule, holdout)

    def final(self, linked: str = DEFAULT_LINKED_POLICY) -> dict[str, Any]:
        """The final leaderboard under the selection rule, with linked accounts flagged, merged or
        disqualified (``linked``, :mod:`ladderlab.engines.linked_ranking`), and how much it shook up the public one."""
        from ladderlab.competition.measures import rank_correlations, ranks, top_overlap

        check_linked_policy(linked)
        self._require_closed()
        _, by_team, counted = self._counted()
        sign = self.scorer.sign
        rows = []
        for team, team_entries in by_team.items():
            released = np.array([entry.released for entry in team_entries])
            public_value = float(leaderboard_values(released, sign, self.releases_best)[-1])
            selected = [entry for entry in team_entries if entry.submission_id in counted]
            best = min(selected, key=lambda entry: sign * entry.private_score)
            rows.append({"team": team, "public": public_value, "private": best.private_score,
                         "counted_submission": best.submission_id, "submissions": len(team_entries)})
        rows.sort(key=lambda row: sign * row["private"])
        report = self.links()
        groups = [tuple(group["teams"]) for group in report["groups"]]
        rows, disqualified = apply_linked_policy(rows, groups, linked, sign, _link_reasons(report))
        public = np.array([sign * row["public"] for row in rows])
        private = np.array([sign * row["private"] for row in rows])
        for row, public_rank, private_rank in zip(rows, ranks(public), ranks(private)):
            row["public_rank"], row["private_rank"] = int(public_rank), int(private_rank)
        spearman, kendall = rank_correlations(public, private)
        shake_up = {"spearman": spearman, "kendall": kendall,
                    "top10_overlap": top_overlap(public, private) if rows else None,
                    "winner_delta": rows[0]["public"] - rows[0]["private"] if rows else None}
        return {"challenge": self.challenge.name, "scorer": self.scorer.name,
                "greater_is_better": self.scorer.greater_is_better,
                "selection": self.challenge.spec.rules.selection, "linked": linked, "teams": rows,
                "linked_groups": [list(group) for group in groups], "disqualified": disqualified,
                "shake_up": {name: None if value is None or not np.isfinite(value) else float(value)
                             for name, value in shake_up.items()}}

    def private_losses(self, linked: str = DEFAULT_LINKED_POLICY) -> bytes:
        """Per-sample data for ``ladderlab stats rank-certificate``, as Parquet in long form: ``team``,
        ``sample`` (the holdout id) and ``loss``, the per-sample loss of each entry's counted
        submission (the one ``final(linked)`` ranks it by, so that the certificate is of the
        ranking published) on every final-set row, in the published order; the mean of an entry's
        losses is its private score. Only for a mean of per-sample losses: other scores (AUC,
        correlations) do not split into samples."""
        from ladderlab.scoring import LossScorer

        scorer = self.scorer.within(self.challenge.split.public.prediction_range)
        if not isinstance(scorer, LossScorer):
            raise ServiceError(409, "not-per-sample", f"the scorer {scorer.name!r} is not a mean of per-sample losses, "
                                                      "so the private score does not split into samples")
        _, samples = self.private_samples(linked)
        losses = samples.losses if samples.teams else np.empty((0, samples.size))
        table = pa.table({
            "team": pa.array([team for team in samples.teams for _ in samples.sample_ids], pa.string()),
            "sample": pa.array(samples.sample_ids * len(samples.teams), pa.string()),
            "loss": pa.array(np.asarray(losses).reshape(-1), pa.float64()),
        }).replace_schema_metadata({"ladderlab.scorer": scorer.name})
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        return buffer.getvalue()

    def private_samples(self, linked: str = DEFAULT_LINKED_POLICY) -> tuple[dict[str, Any], PrivateSamples]:
        """The final ranking (:meth:`final`) and, in its order, each entry's counted submission on the
        final-set rows with their labels and the scorer (predictions clipped into the prediction
        range as scoring clips them): what a rank certificate resamples."""
        from ladderlab.final_rankings.private_samples import PrivateSamples

        final = self.final(linked)
        rows = final["teams"]
        by_id = {entry.submission_id: entry for entry in self.storage.entries()}
        digests = [by_id[row["counted_submission"]].prediction_sha256 for row in rows]
        stored = self.storage.load_predictions(digests)
        final_rows = self.challenge.split.final_rows
        predictions = (np.stack([stored[digest][final_rows] for digest in digests]) if rows
                       else np.empty((0, final_rows.size)))
        sample_ids = [str(sample) for sample in self.challenge.ids[final_rows]]
        samples = PrivateSamples([row["team"] for row in rows], sample_ids, predictions=predictions,
                                 labels=self.challenge.split.y_holdout[final_rows],
                                 scorer=self.scorer.within(self.challenge.split.public.prediction_range),
                                 source=f"the final ranking of {self.challenge.name}")
        return final, samples

    def public_final(self) -> dict[str, Any] | None:
        """The final leaderboard anyone may see after the close, with its rank certificate
        (:func:`ladderlab.serve.final_board.final_board`), under the organiser's linked-teams policy;
        None while the challenge is open. It is computed once, by the first request after the close,
        and kept in the log's metadata with the chain's head it was computed at: a log that moved on
        (a challenge reopened by a later ``end``) computes it again."""
        if self.closed_at() is None:
            return None
        head = "{}:{}".format(*self.storage.chain_head())
        linked = self.public_linked()
        current = self._final_board
        if current is not None and (current["head"], current["linked"]) == (head, linked):
            return current
        with self._final_lock:
            stored = self.storage.meta_value(FINAL_BOARD)
            board = None if stored is None else json.loads(stored)
            if board is None or (board["head"], board["linked"]) != (head, linked):
                from ladderlab.serve.final_board import final_board

                board = {**final_board(self, linked), "head": head}
                self.storage.set_meta(FINAL_BOARD, json.dumps(board))
                log.info("the public final board was computed at the log's head %s", head)
            self._final_board = board
        return board

    def export(self) -> bytes:
        """The log as Parquet: the columns ``ladderlab stats replay`` reads (team, submission_id, team_sequence, submitted_at, public_score, private_score,
        released, selected), then the log's own (decision, prediction_sha256, hashes); its metadata
        states the scorer, the mechanism and the public and private holdout sizes."""
        self._require_closed()
        entries, _, counted = self._counted()
        columns = {
            "team": pa.array([entry.team for entry in entries], pa.string()),
            "submission_id": pa.array([entry.submission_id for entry in entries], pa.int64()),
            "team_sequence": pa.array([entry.team_sequence for entry in entries], pa.int64()),
            "submitted_at": pa.array([entry.submitted_at_us for entry in entries], pa.int64()).cast(
                pa.timestamp("us", tz="UTC")),
            "public_score": pa.array([entry.public_score for entry in entries], pa.float64()),
            "private_score": pa.array([entry.private_score for entry in entries], pa.float64()),
            "released": pa.array([entry.released for entry in entries], pa.float64()),
            "selected": pa.array([entry.submission_id in counted for entry in entries], pa.bool_()),
            "decision": pa.array([entry.decision for entry in entries], pa.string()),
            "prediction_sha256": pa.array([entry.prediction_sha256 for entry in entries], pa.string()),
            "previous_hash": pa.array([entry.previous_hash for entry in entries], pa.string()),
            "entry_hash": pa.array([entry.entry_hash for entry in entries], pa.string()),
        }
        table = pa.table(columns).replace_schema_metadata({
            "ladderlab.scorer": self.scorer.name,
            "ladderlab.greater_is_better": "true" if self.scorer.greater_is_better else "false",
            "ladderlab.certification.challenge": self.challenge.name,
            "ladderlab.mechanism": self.challenge.spec.mechanism.id,
            "ladderlab.public_size": str(self.challenge.split.public_rows.size),
            "ladderlab.private_size": str(self.challenge.split.final_rows.size),
        })
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        return buffer.getvalue()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _link_reasons(report: dict[str, Any]) -> dict[str, str]:
    """Why each linked team is disqualified: its group's first link, the pair and D against t."""
    reasons = {}
    for group in report["groups"]:
        first = group["links"][0]
        evidence = (f"since {first['submitted_at']}: {first['team']}'s submission {first['submission_id']} differed "
                    f"from {first['other']}'s submission {first['other_submission_id']} on {first['differing']} of "
                    f"{report['holdout_size']} holdout rows (at most {first['threshold']} link)")
        for team in group["teams"]:
            reasons[team] = f"linked with {', '.join(other for other in group['teams'] if other != team)} {evidence}"
    return reasons


def _uploads(count: int) -> str:
    return "this submission" if count == 1 else f"these {count} submissions"


