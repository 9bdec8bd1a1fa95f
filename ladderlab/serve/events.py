"""The rules of the actions the events chain records, shared by the service and ``serve verify``.

The events chain (:mod:`ladderlab.serve.storage`) records, besides tokens, what teams and the
organiser do between submissions: a team registering itself with the invite code
(docs/serve.md#registration), a selection or unselection of a submission for the final ranking
(``[rules] selection = k``), the close, and with the close the submissions' head it sealed. The
service checks an action with the functions below before it records it, and
:func:`verify_actions` replays a log's events with the same functions, in their order: a log that
holds an action the service would have refused (a selection of another team's submission, or of
more than k, a registration under a name taken by an earlier team, anything after the close, a
submission after the seal) is refused, naming it. The chain itself, and that the tables agree
with it (every team's row was given by an event), :meth:`Storage.verify_chain` checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from ladderlab.certification.challenge import Challenge, check_team_name
from ladderlab.serve.errors import ServiceError
from ladderlab.serve.storage import (
    CLOSE,
    MIGRATED,
    ORGANISER,
    REFUSED,
    REGISTER,
    SEAL,
    SELECT,
    TOKEN,
    UNSELECT,
    Entry,
    Event,
    StorageError,
    genesis_hash,
)


def check_new_team(name: str, taken: Iterable[str]) -> str:
    """``name`` if a new team may take it (:func:`~ladderlab.certification.challenge.check_team_name`,
    and no team has it, case aside), else a :class:`ServiceError` (422 ``invalid``, 409 ``taken``)."""
    try:
        check_team_name(name)
    except ValueError as error:
        raise ServiceError(422, "invalid", str(error)) from None
    folded = name.casefold()
    for other in taken:
        if other.casefold() == folded:
            spelled = "" if other == name else f" (as {other!r}; names are compared ignoring case)"
            raise ServiceError(409, "taken", f"team name {name!r} is taken{spelled}: choose another")
    return name


def check_selection(rule: str | int, team: str, submission_id: int, selected: bool, owned: dict[int, str],
                    chosen: set[int], closed: datetime | None) -> None:
    """Refuse (:class:`ServiceError`) ``team``'s selecting (or unselecting) ``submission_id`` under the
    selection ``rule``, given the decisions of the team's submissions (``owned``, by id), the ids it
    has selected (``chosen``) and the closing time (None: open)."""
    if not isinstance(rule, int):
        raise ServiceError(409, "conflict", f"this challenge's final selection is {rule!r}: teams do not select")
    check_not_closed(closed, "selections are final")
    if submission_id not in owned:
        raise ServiceError(404, "not-found", f"team {team} has no submission {submission_id}")
    if selected and owned[submission_id] == REFUSED:
        raise ServiceError(409, "conflict", f"submission {submission_id} was refused (its linked group's caps "
                                            "were spent): it has no score to count")
    if selected and submission_id not in chosen and len(chosen) >= rule:
        raise ServiceError(409, "conflict", f"a team selects at most {rule} submissions; unselect one of "
                                            f"{sorted(chosen)} first")


def check_not_closed(closed: datetime | None, action: str) -> None:
    """Refuse (403 ``closed``) an action after the close."""
    if closed is not None:
        raise ServiceError(403, "closed", f"the challenge closed at {text_time(closed)}: {action}")


@dataclass(frozen=True)
class ActionSummary:
    """What a verified log's recorded actions did."""

    registrations: int
    selections: int
    unselections: int
    closed_at: datetime | None

    def text(self) -> str:
        """The actions as ``serve verify`` lists them (empty: none)."""
        parts = [f"{count} {word}{'' if count == 1 else 's'}" for count, word in (
            (self.registrations, "registration"), (self.selections, "selection"), (self.unselections, "unselection"))
            if count]
        if self.closed_at is not None:
            parts.append(f"the close at {text_time(self.closed_at)}")
        return ", ".join(parts)


def verify_actions(challenge: Challenge, entries: list[Entry], recorded: list[Event]) -> ActionSummary:
    """Replay a chain-checked log's ``recorded`` events in order under the rules above, against its
    ``entries``; :class:`StorageError` names the first event or entry that breaks a rule. The events
    of a migration (an older log's selections and close, recorded when it was migrated) are taken
    as they were: the log did not chain them when they were made."""
    rule = challenge.spec.rules.selection
    teams: list[str] = []  # every team given a token before the event: the names taken
    owned: dict[str, dict[int, str]] = {}
    for entry in entries:
        owned.setdefault(entry.team, {})[entry.submission_id] = entry.decision
    migrated = bool(recorded) and recorded[0].kind == MIGRATED
    migration_time = recorded[0].at_us if migrated else None
    chosen: dict[str, set[int]] = {}
    closed: datetime | None = None
    sealed: int | None = None
    counts = {REGISTER: 0, SELECT: 0, UNSELECT: 0}
    for event in recorded:
        if migrated and event.at_us == migration_time and event.kind in (SELECT, CLOSE):
            if event.kind == SELECT:
                chosen.setdefault(event.name, set()).add(int(event.value))
            else:
                closed = datetime.fromisoformat(event.value)
            continue
        try:
            if event.kind == TOKEN and event.name != ORGANISER and event.name not in teams:
                teams.append(event.name)
            elif event.kind == REGISTER:
                counts[REGISTER] += 1
                check_not_closed(closed, "teams no longer register")
                teams.append(check_new_team(event.name, teams))
            elif event.kind in (SELECT, UNSELECT):
                counts[event.kind] += 1
                team_chosen = chosen.setdefault(event.name, set())
                check_selection(rule, event.name, int(event.value), event.kind == SELECT, owned.get(event.name, {}),
                                team_chosen, closed)
                (team_chosen.add if event.kind == SELECT else team_chosen.discard)(int(event.value))
            elif event.kind == CLOSE:
                closed = datetime.fromisoformat(event.value)
            elif event.kind == SEAL:
                sealed = _sealed(event, entries, challenge)
        except ServiceError as error:
            raise StorageError(f"event {event.event_id} ({event.kind} {event.name} {event.value}) breaks the rules: "
                               f"{error}") from None
    if sealed is not None and len(entries) > sealed:
        raise StorageError(f"submission {sealed + 1} was logged after the close, which sealed the log at submission "
                           f"{sealed}")
    return ActionSummary(counts[REGISTER], counts[SELECT], counts[UNSELECT], closed)


def _sealed(event: Event, entries: list[Entry], challenge: Challenge) -> int:
    """The submissions the close sealed (its ``seal`` event: ``ID:HASH`` of the head then), checked
    against the entry it names."""
    number, _, digest = event.value.partition(":")
    last = int(number)
    if last > len(entries):
        raise ServiceError(409, "conflict", f"the close sealed the log at submission {last}, but it ends at "
                                            f"{len(entries)}: entries were removed")
    expected = genesis_hash(challenge.identity()) if last == 0 else entries[last - 1].entry_hash
    if digest != expected:
        raise ServiceError(409, "conflict", f"the close sealed the log at submission {last} with the hash {digest}, "
                                            "which that submission does not have now")
    return last


def text_time(value: datetime) -> str:
    """A time as ISO 8601 in UTC, to the second (``2026-01-05T00:00:00Z``)."""
    return value.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


