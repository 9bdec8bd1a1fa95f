"""The actions the log records between submissions, and the rules they obey.

Four kinds of event are chained with the submissions (:mod:`ladderlab.serve.storage`), each with the
number of submissions logged before it:

- ``register`` (team): a team registered itself with the invite code (docs/serve.md#registration);
- ``select`` and ``unselect`` (team, submission): a team chose a submission for the final ranking,
  or took it back, under ``[rules] selection = k``;
- ``close``: the organiser closed the challenge (a close by ``[rules] end`` is the clock's, not an
  action, and is not recorded).

The service checks an action with the functions below before it records it, and
:func:`verify_events` replays a log's events and entries in their order with the same functions:
a log that holds an action the service would have refused (a selection of another team's
submission, a submission after the close or by a team nobody registered), or whose tables of
selections and closing time say otherwise than its events, is refused, naming the event.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone

from ladderlab.certification.challenge import Challenge, check_team_name
from ladderlab.serve.errors import ServiceError
from ladderlab.serve.storage import (
    REFUSED,
    Entry,
    Event,
    StorageError,
    microseconds,
    moment,
)

REGISTER, SELECT, UNSELECT, CLOSE = "register", "select", "unselect", "close"


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
class EventSummary:
    """What a verified log's events did."""

    registrations: int
    selections: int
    unselections: int
    closed_at: datetime | None

    def text(self) -> str:
        """The events as ``serve verify`` lists them (empty: none)."""
        parts = [f"{count} {word}{'' if count == 1 else 's'}" for count, word in (
            (self.registrations, "registration"), (self.selections, "selection"), (self.unselections, "unselection"))
            if count]
        if self.closed_at is not None:
            parts.append(f"the close at {text_time(self.closed_at)}")
        return ", ".join(parts)


def verify_events(challenge: Challenge, entries: list[Entry], recorded: list[Event], selections: dict[str, set[int]],
                  closed_at: str | None) -> EventSummary:
    """Replay a chain-checked log's ``entries`` and ``recorded`` events in their order under the rules
    above, and compare what they leave with the log's table of ``selections`` and its stored
    ``closed_at``; :class:`StorageError` names the first entry or event that breaks a rule."""
    rule = challenge.spec.rules.selection
    teams = {team.name for team in challenge.spec.teams}
    owned: dict[str, dict[int, str]] = {}
    chosen: dict[str, set[int]] = {}
    closed: Event | None = None
    counts = {REGISTER: 0, SELECT: 0, UNSELECT: 0}
    position = 0
    for number in range(len(entries) + 1):
        while position < len(recorded) and recorded[position].after_submission <= number:
            event = recorded[position]
            position += 1
            try:
                if event.kind == CLOSE:
                    check_not_closed(None if closed is None else moment(closed.at_us), "it cannot close again")
                    closed = event
                    continue
                if event.kind not in counts or event.team is None:
                    raise ServiceError(400, "invalid", f"unknown event kind {event.kind!r} (or without a team)")
                counts[event.kind] += 1
                closed_at_event = None if closed is None else moment(closed.at_us)
                if event.kind == REGISTER:
                    check_not_closed(closed_at_event, "teams no longer register")
                    teams.add(check_new_team(event.team, teams))
                elif event.submission_id is None:
                    raise ServiceError(400, "invalid", "a selection names no submission")
                else:
                    team_chosen = chosen.setdefault(event.team, set())
                    check_selection(rule, event.team, event.submission_id, event.kind == SELECT,
                                    owned.get(event.team, {}), team_chosen, closed_at_event)
                    (team_chosen.add if event.kind == SELECT else team_chosen.discard)(event.submission_id)
            except ServiceError as error:
                raise StorageError(f"event {event.event_id} ({_described(event)}) breaks the rules: {error}") from None
        if number == len(entries):
            break
        entry = entries[number]
        if entry.team not in teams:
            raise StorageError(f"submission {entry.submission_id}: its team {entry.team!r} is neither in "
                               f"{challenge.path} nor registered before it")
        if closed is not None:
            raise StorageError(f"submission {entry.submission_id} was logged after the close (event {closed.event_id})")
        owned.setdefault(entry.team, {})[entry.submission_id] = entry.decision
    chosen = {team: ids for team, ids in chosen.items() if ids}
    if chosen != selections:
        team = next(team for team in sorted(set(chosen) | set(selections))
                    if chosen.get(team) != selections.get(team))
        raise StorageError(f"the log's selections table gives team {team} the submissions "
                           f"{sorted(selections.get(team, set()))}, its events {sorted(chosen.get(team, set()))}: "
                           "it was changed outside the service")
    stored = None if closed_at is None else microseconds(datetime.fromisoformat(closed_at))
    if stored != (None if closed is None else closed.at_us):
        raise StorageError(f"the log's closing time is {closed_at or 'not set'}, its events "
                           f"{'close it at ' + text_time(moment(closed.at_us)) if closed else 'do not close it'}: "
                           "it was changed outside the service")
    return EventSummary(counts[REGISTER], counts[SELECT], counts[UNSELECT],
                        None if closed is None else moment(closed.at_us))


def _described(event: Event) -> str:
    if event.kind == CLOSE:
        return "close"
    what = f"{event.kind} {event.team}"
    return what if event.submission_id is None else f"{what}'s submission {event.submission_id}"


def text_time(value: datetime) -> str:
    """A time as ISO 8601 in UTC, to the second (``2026-01-05T00:00:00Z``)."""
    return value.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
