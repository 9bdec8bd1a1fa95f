"""A simulated competition's final ranking acts on teams linked to each other as the organiser's
choice says (``rules.linked``, :func:`ladderlab.competition.engine.published_ranking`), as ``ladderlab serve`` does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.competition.engine import (PER_TEAM, CompetitionResult, Rules, TeamSpec, compete, linked_teams,
                                          published_ranking)
from ladderlab.competition.scenario import competition_cells
from ladderlab.registry import MECHANISMS, TASKS


def _result(seed: int) -> CompetitionResult:
    """Teams with one to three accounts whose keepers are drawn so that some teams share one."""
    rng = np.random.default_rng(seed)
    teams = int(rng.integers(1, 9))
    accounts = rng.integers(1, 4, teams)
    slots = int(accounts.sum())
    keepers = rng.integers(0, slots, slots) * (rng.random(slots) < 0.4) + np.arange(slots) * (rng.random(slots) >= 0.4)
    groups, start = [], 0
    for count in accounts.tolist():
        groups.append(keepers[start:start + count].tolist())
        start += count
    values = lambda: rng.integers(0, 6, teams).astype(float)  # noqa: E731  (ties are drawn on purpose)
    return CompetitionResult(
        labels=[f"g{team % 3}" for team in range(teams)], honest=rng.random(teams) < 0.5, accounts=accounts,
        public=values(), private=values(), population=values(), released_final=values(),
        submissions=rng.integers(1, 9, teams), public_by_round=rng.random((teams, 3)), best_population=0.0,
        sign=float(rng.choice([-1.0, 1.0])), n_public=10, n_private=10, scorer="zero-one",
        leaderboard_errors=values(), last_round=values(), first_round=rng.integers(0, 3, teams),
        improvements=rng.integers(0, 3, teams), counted=rng.integers(0, 3, teams), account_groups=groups)


@settings(max_examples=200)
@given(st.integers(0, 2**32 - 1))
def test_linked_teams_share_a_keeper_and_each_policy_keeps_its_promise(seed):
    result = _result(seed)
    groups = linked_teams(result)
    keepers = [set(group) for group in result.account_groups]
    for group in groups:
        members = [int(team) for team in group]
        assert len(members) > 1 and all(any(keepers[a] & keepers[b] for b in members if b != a) for a in members)
    linked = {int(team) for group in groups for team in group}
    unlinked = [team for team in range(len(result.labels)) if team not in linked]
    assert all(not keepers[a] & keepers[b] for a in unlinked for b in range(len(result.labels)) if b != a)

    assert published_ranking(result, "flag") is result
    if len(unlinked) == 0 and groups:
        with pytest.raises(ValueError, match="every team was linked to another and disqualified"):
            published_ranking(result, "disqualify")
    elif groups:
        dropped = published_ranking(result, "disqualify")
        assert dropped.private.tolist() == result.private[unlinked].tolist()
        assert dropped.labels == [result.labels[team] for team in unlinked]
    merged = published_ranking(result, "merge")
    assert len(merged.labels) == len(unlinked) + len(groups)
    assert merged.accounts.sum() == result.accounts.sum() and merged.submissions.sum() == result.submissions.sum()
    for group in groups:
        members = [int(team) for team in group]
        best = min(result.private[members] * result.sign)
        assert best * result.sign in merged.private.tolist()
    for name in PER_TEAM:
        value = getattr(merged, name)
        assert value is None or len(value) == len(merged.labels), name


def test_the_engine_publishes_the_merged_ranking_of_the_same_competition():
    """``rules.linked = "merge"`` gives the flagged competition's result, merged: the linking and
    every submission are the same; two teams of the deterministic honest models are linked."""
    task, teams = TASKS.make("breast-cancer"), [TeamSpec("honest", count=2), TeamSpec("improving")]
    flagged = compete(task, MECHANISMS.make("ladder"), teams, Rules(rounds=2, per_round=2, link=True), seed=3)
    merged = compete(task, MECHANISMS.make("ladder"), teams, Rules(rounds=2, per_round=2, link=True, linked="merge"),
                     seed=3)
    assert linked_teams(flagged) == [("0", "1")]
    expected = published_ranking(flagged, "merge")
    assert merged.labels == expected.labels == ["honest", "improving"]
    np.testing.assert_array_equal(merged.private, expected.private)
    np.testing.assert_array_equal(merged.submissions, flagged.submissions[[0, 2]] + [flagged.submissions[1], 0])
    captured = compete(task, MECHANISMS.make("ladder"), teams, Rules(rounds=2, per_round=2, link=True, linked="merge"),
                       seed=3, capture=merged.flagged.counted)  # as a ranking certificate replays a run
    assert captured.counted_private_predictions.shape[0] == 2
    best_honest = int(np.argmin(flagged.sign * flagged.private[:2]))
    np.testing.assert_array_equal(captured.counted_private_predictions,
                                  captured.flagged.counted_private_predictions[[best_honest, 2]])


def test_the_link_rules_keep_the_cells_of_scenarios_written_before_them():
    from ladderlab.competition.scenario import CompetitionMatrix

    plain = {"tasks": [{"id": "breast-cancer"}], "mechanisms": [{"id": "ladder"}],
             "mixes": [{"name": "m", "teams": [{"policy": "honest"}]}]}
    [before] = competition_cells([CompetitionMatrix(**plain)])
    [same] = competition_cells([CompetitionMatrix(**plain, rules=[{"link": False, "linked": "flag"}])])
    [linked] = competition_cells([CompetitionMatrix(**plain, rules=[{"link": True, "linked": "merge"}])])
    assert before.key == same.key and "link" not in before.rules
    assert linked.key != before.key and Rules(**linked.rules).linked == "merge"
    with pytest.raises(ValueError, match="linked"):
        CompetitionMatrix(**plain, rules=[{"link": True, "linked": "drop"}])
