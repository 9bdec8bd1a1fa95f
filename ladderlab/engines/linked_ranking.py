"""What a final ranking does with linked accounts: flag, merge or disqualify them (docs/decisions.md#linked-ranking).

:mod:`ladderlab.engines.linking` links two accounts when a submission of one and the latest of the other
differ on fewer than ⌈p₀N⌉ holdout rows. During the challenge a link only changes which mechanism
state answers; at the end the organiser decides what it means for the ranking, one of
:data:`LINKED_POLICIES`:

- ``flag`` (the default): every account ranked on its own, as without links, each linked one
  marked with its group; the organiser reviews the groups before publishing. A link is evidence,
  not a verdict: two honest teams that both submit the public baseline are linked too;
- ``merge``: one entry per group, with the best final score of its members (the platforms' team
  merge: a merged team's best submission counts);
- ``disqualify``: every linked account removed from the ranking, listed with the link that caught it.

**A group is a connected component of the link graph** (accounts are nodes, each link an edge).
The mechanism already treats it so: :class:`~ladderlab.engines.linking.Linker` merges groups as links
arrive (A–B then B–C puts A, B and C in one state and one budget), so the ranking's groups are the
ones the mechanism answered as one. The components are also the finest partition of the accounts
that keeps every link inside one group: pairs alone would put B in two merged entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

LINKED_POLICIES = ("flag", "merge", "disqualify")
DEFAULT_LINKED_POLICY = "flag"
"""The ranking as the mechanism's rule alone would give it, marked: the organiser acts on a link
after reviewing it (docs/decisions.md#linked-ranking)."""
MEMBER_SEPARATOR = " + "
"""Between the member names of a merged entry (team names hold no spaces)."""


def check_linked_policy(value: object, where: str = "linked") -> str:
    """``value`` if it is one of :data:`LINKED_POLICIES`; else ValueError naming ``where`` and the value."""
    if value not in LINKED_POLICIES:
        raise ValueError(f"{where} must be one of {', '.join(LINKED_POLICIES)}, got {value!r}")
    return str(value)


def linked_groups(accounts: Sequence[str], links: Iterable[tuple[str, str]]) -> list[tuple[str, ...]]:
    """The connected components of the link graph with two accounts or more, each in ``accounts``'
    order, ordered by their first member's place there. ValueError for a link to an unknown account."""
    index = {account: i for i, account in enumerate(accounts)}
    pairs = list(links)
    unknown = sorted({account for pair in pairs for account in pair} - index.keys())
    if unknown:
        raise ValueError(f"a link names the account {unknown[0]!r}, which is not among the {len(accounts)} accounts")
    rows = np.array([index[a] for a, _ in pairs], dtype=np.int64)
    columns = np.array([index[b] for _, b in pairs], dtype=np.int64)
    graph = coo_matrix((np.ones(len(pairs)), (rows, columns)), shape=(len(accounts), len(accounts)))
    _, labels = connected_components(graph, directed=False)
    members: dict[int, list[str]] = {}
    for account, label in zip(accounts, labels.tolist()):
        members.setdefault(label, []).append(account)
    return [tuple(group) for group in members.values() if len(group) > 1]


def apply_linked_policy(rows: Sequence[dict[str, Any]], groups: Sequence[tuple[str, ...]], policy: str,
                        sign: float, reasons: dict[str, str] | None = None
                        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The final ranking's rows under ``policy``, sorted by ``sign`` × ``private`` (best first, ties
    in the given order), and the rows it removed. Each row is a dict with at least ``team``,
    ``public`` and ``private`` (scores; ``sign`` +1 when smaller is better); the others are kept.

    Every returned row gains ``linked_with`` (the other members of its group present, [] if none).
    ``merge`` keeps, of each group, the row with the best ``private`` (its ``team`` becomes the
    members joined by :data:`MEMBER_SEPARATOR`, ``counted_team`` the member it came from, ``public``
    the members' best, ``submissions`` their sum where given); ``disqualify`` removes every linked
    row and returns it with ``reason`` (``reasons[team]`` where given)."""
    check_linked_policy(policy)
    group_of = {team: group for group in groups for team in group}
    present = {row["team"] for row in rows}
    linked_with = {row["team"]: [other for other in group_of.get(row["team"], ())
                                 if other != row["team"] and other in present] for row in rows}
    members: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        if linked_with[row["team"]]:
            members.setdefault(group_of[row["team"]], []).append({**row, "linked_with": linked_with[row["team"]]})
    ranked: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    for row in rows:
        others = linked_with[row["team"]]
        if not others or policy == "flag":
            ranked.append({**row, "linked_with": others})
        elif policy == "disqualify":
            reason = (reasons or {}).get(row["team"], f"linked with {', '.join(others)}")
            removed.append({**row, "linked_with": others, "reason": reason})
        elif members[group_of[row["team"]]][0]["team"] == row["team"]:
            group = group_of[row["team"]]
            ranked.append(_merged(members[group], [team for team in group if team in present], sign))
    ranked.sort(key=lambda row: sign * row["private"])
    return ranked, removed


def _merged(members: list[dict[str, Any]], names: list[str], sign: float) -> dict[str, Any]:
    """One entry for a group's rows: the best final score's row, named by all its members (``names``)."""
    best = min(members, key=lambda member: sign * member["private"])
    entry = {**best, "team": MEMBER_SEPARATOR.join(names),
             "counted_team": best["team"], "linked_with": [],
             "public": min((member["public"] for member in members), key=lambda value: sign * value)}
    if all("submissions" in member for member in members):
        entry["submissions"] = sum(member["submissions"] for member in members)
    return entry
