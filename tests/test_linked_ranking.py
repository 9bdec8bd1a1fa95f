"""What the final ranking does with linked accounts (:mod:`ladderlab.engines.linked_ranking`): the groups are
the link graph's connected components, and flag, merge and disqualify each keep what they promise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladderlab.engines.linked_ranking import (
    LINKED_POLICIES,
    MEMBER_SEPARATOR,
    apply_linked_policy,
    check_linked_policy,
    linked_groups,
)


def _random_competition(seed: int) -> tuple[list[str], list[tuple[str, str]], list[dict], float]:
    """Teams, links among them (sparse, so that chains and singletons both occur), final rows sorted
    best first, and the scores' sign."""
    rng = np.random.default_rng(seed)
    teams = [f"t{i}" for i in range(int(rng.integers(1, 12)))]
    pairs = [(teams[a], teams[b]) for a, b in rng.integers(0, len(teams), (int(rng.integers(0, len(teams) + 1)), 2))
             if a != b]
    sign = float(rng.choice([-1.0, 1.0]))
    ranked = [team for team in teams if rng.random() < 0.85]
    rows = [{"team": team, "public": float(rng.integers(0, 5)), "private": float(rng.integers(0, 5)),
             "submissions": int(rng.integers(1, 4))} for team in ranked]
    rows.sort(key=lambda row: sign * row["private"])
    return teams, pairs, rows, sign


def _connected(group: tuple[str, ...], pairs: list[tuple[str, str]]) -> bool:
    reached, frontier = {group[0]}, [group[0]]
    while frontier:
        here = frontier.pop()
        for a, b in pairs:
            for there in ((b,) if a == here else (a,) if b == here else ()):
                if there not in reached:
                    reached.add(there)
                    frontier.append(there)
    return reached == set(group)


@given(st.integers(0, 2**32 - 1))
def test_the_groups_are_the_connected_components_of_the_links(seed):
    teams, pairs, _, _ = _random_competition(seed)
    groups = linked_groups(teams, pairs)
    members = [team for group in groups for team in group]
    assert len(members) == len(set(members)), "every account is in one group at most"
    group_of = {team: group for group in groups for team in group}
    assert all(group_of[a] is group_of[b] for a, b in pairs), "every link stays inside one group"
    assert all(_connected(group, pairs) for group in groups), "no group is two groups with no link between"
    assert set(members) == {team for pair in pairs for team in pair}, "a group is a linked account's"


@given(st.integers(0, 2**32 - 1))
def test_flag_ranks_every_account_as_without_links_and_marks_the_linked_ones(seed):
    teams, pairs, rows, sign = _random_competition(seed)
    groups = linked_groups(teams, pairs)
    ranked, removed = apply_linked_policy(rows, groups, "flag", sign)
    present = {row["team"] for row in rows}
    assert removed == [] and [row["team"] for row in ranked] == [row["team"] for row in rows]
    for row in ranked:
        group = next((group for group in groups if row["team"] in group), ())
        assert set(row["linked_with"]) == set(group) & present - {row["team"]}


@given(st.integers(0, 2**32 - 1))
def test_merge_gives_one_entry_per_group_with_its_best_final_score(seed):
    teams, pairs, rows, sign = _random_competition(seed)
    groups = linked_groups(teams, pairs)
    ranked, removed = apply_linked_policy(rows, groups, "merge", sign)
    by_team = {row["team"]: row for row in rows}
    assert removed == []
    assert sorted(team for row in ranked for team in row["team"].split(MEMBER_SEPARATOR)) == sorted(by_team)
    for row in ranked:
        members = row["team"].split(MEMBER_SEPARATOR)
        assert any(set(members) == set(group) & by_team.keys() for group in groups) or len(members) == 1
        assert sign * row["private"] == min(sign * by_team[team]["private"] for team in members)
        assert sign * row["public"] == min(sign * by_team[team]["public"] for team in members)
        assert row["submissions"] == sum(by_team[team]["submissions"] for team in members)
    assert [sign * row["private"] for row in ranked] == sorted(sign * row["private"] for row in ranked)


@given(st.integers(0, 2**32 - 1))
def test_disqualify_removes_exactly_the_linked_accounts_and_keeps_the_others_order(seed):
    teams, pairs, rows, sign = _random_competition(seed)
    groups = linked_groups(teams, pairs)
    ranked, removed = apply_linked_policy(rows, groups, "disqualify", sign, {"t0": "the reason"})
    linked = {row["team"] for row in rows if any(row["team"] in group and len(set(group) & {r["team"] for r in rows}) > 1
                                                 for group in groups)}
    assert [row["team"] for row in ranked] == [row["team"] for row in rows if row["team"] not in linked]
    assert {row["team"] for row in removed} == linked
    assert all(row["reason"] == ("the reason" if row["team"] == "t0" else f"linked with {', '.join(row['linked_with'])}")
               for row in removed)


def test_a_chain_of_links_is_one_group_not_two_pairs():
    groups = linked_groups(["a", "b", "c", "d"], [("a", "b"), ("b", "c")])
    assert groups == [("a", "b", "c")]
    rows = [{"team": team, "public": 0.0, "private": score} for team, score in (("c", 0.1), ("a", 0.2), ("d", 0.3),
                                                                                 ("b", 0.4))]
    ranked, _ = apply_linked_policy(rows, groups, "merge", 1.0)
    assert [(row["team"], row["counted_team"] if "counted_team" in row else None) for row in ranked] == [
        ("a + b + c", "c"), ("d", None)]


def test_an_unknown_policy_or_account_is_refused_naming_it():
    with pytest.raises(ValueError, match="--linked must be one of flag, merge, disqualify, got 'drop'"):
        check_linked_policy("drop", "--linked")
    with pytest.raises(ValueError, match="names the account 'zed'"):
        linked_groups(["a", "b"], [("a", "zed")])
    assert LINKED_POLICIES[0] == "flag"
