"""A simulated competition's final ranking as the organiser publishes it: teams linked to each other
flagged, merged or disqualified, as ``ladderlab serve``'s ``/api/organiser/final?linked=`` does
(:mod:`ladderlab.linked_ranking`).

Two teams are linked when any account of one shares its mechanism state's keeper with an account
of the other at the end (:attr:`~ladderlab.competition.engine.CompetitionResult.account_groups`):
the linker's groups are the connected components of its links, so the teams' groups are too. A
team's own accounts linked to each other are one entry already and change nothing here.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ladderlab.competition.engine import CompetitionResult
from ladderlab.linked_ranking import MEMBER_SEPARATOR, apply_linked_policy, check_linked_policy, linked_groups

PER_TEAM = ("labels", "honest", "accounts", "public", "private", "population", "released_final", "submissions",
            "public_by_round", "leaderboard_errors", "last_round", "first_round", "improvements", "public_exact",
            "population_public", "counted", "counted_private_predictions", "account_groups")
"""The fields of :class:`CompetitionResult` that hold one value per team, in team order."""


def linked_teams(result: CompetitionResult) -> list[tuple[str, ...]]:
    """The groups of teams (by index, as strings) linked to each other: teams whose accounts share a keeper."""
    names = [str(team) for team in range(len(result.labels))]
    first_team: dict[int, int] = {}
    pairs = []
    for team, keepers in enumerate(result.account_groups or []):
        for keeper in keepers:
            other = first_team.setdefault(keeper, team)
            if other != team:
                pairs.append((str(other), str(team)))
    return linked_groups(names, pairs)


def published_ranking(result: CompetitionResult, policy: str) -> CompetitionResult:
    """``result`` with its teams ranked under ``policy``: ``flag`` changes nothing (the result's
    teams are each ranked alone); ``merge`` keeps of each group of linked teams the one with the
    best private score, its public value the group's best, its submissions and accounts the
    group's sums; ``disqualify`` drops every linked team. The result before is kept as ``flagged``.
    ValueError if no team is left."""
    check_linked_policy(policy, "rules.linked")
    groups = linked_teams(result)
    if policy == "flag" or not groups:
        return result
    rows = [{"team": str(team), "public": float(result.public[team]), "private": float(result.private[team]),
             "submissions": int(result.submissions[team]), "accounts": int(result.accounts[team])}
            for team in range(len(result.labels))]
    ranked, _ = apply_linked_policy(rows, groups, policy, result.sign)
    if not ranked:
        raise ValueError(f"rules.linked = {policy!r}: every team was linked to another and disqualified: "
                         "no final ranking is left")
    ranked.sort(key=lambda row: int(row["counted_team"] if "counted_team" in row else row["team"]))
    kept = [int(row["counted_team"] if "counted_team" in row else row["team"]) for row in ranked]
    members = {kept_team: row["team"].split(MEMBER_SEPARATOR) for kept_team, row in zip(kept, ranked)}
    changes = {}
    for name in PER_TEAM:
        value = getattr(result, name)
        if value is not None:
            changes[name] = [value[team] for team in kept] if isinstance(value, list) else value[kept]
    changes["public"] = np.array([row["public"] for row in ranked])
    changes["submissions"] = np.array([row["submissions"] for row in ranked], dtype=result.submissions.dtype)
    changes["accounts"] = np.array([sum(int(result.accounts[int(team)]) for team in members[kept_team])
                                    for kept_team in kept], dtype=result.accounts.dtype)
    return replace(result, **changes, flagged=result)
