"""The final leaderboard of a challenge: each team's public standing and the private score that counts.

From a :class:`~ladderlab.final_rankings.submission_log.SubmissionLog`:

- a team's **public** value is what the leaderboard shows at the end: its best shown score
  (the ``released`` column where the log has one, else the exact public score), or, for a
  mechanism that releases its best so far (a Ladder; a log names its mechanism in its
  metadata), its last release; teams are ranked by it, and a tie goes to the team that reached
  its value first (Kaggle's rule);
- its **private** score is the best private score among its selected submissions: the log's
  ``selected`` column where it has one (a team that selected nothing falls back to the rule),
  else a rule: ``"last"``, ``"best-public"`` (the best shown score, the earliest on ties) or
  an integer k, the k best shown scores (Kaggle selects a team's two best public submissions
  when it selects none).

From a competition run directory, the final leaderboard of one replication as the run
recorded it, teams in the engine's order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ladderlab.competition.measures import leaderboard_measures, rank_correlations
from ladderlab.final_rankings.submission_log import SubmissionLog

FloatArray = NDArray[np.float64]
SELECTION_RULES = ("last", "best-public")
KAGGLE_SELECTION = 2


@dataclass(frozen=True)
class FinalLeaderboard:
    """Teams in leaderboard order, with their public values and private scores (NaN when unknown)."""

    teams: list[str]
    names: list[str]
    public: FloatArray
    private: FloatArray
    sign: float
    submissions: NDArray[np.int64] | None = None

    @property
    def has_private(self) -> bool:
        return bool(np.isfinite(self.private).all()) and len(self.teams) > 0

    def measures(self) -> dict[str, float]:
        """:func:`ladderlab.competition.measures.leaderboard_measures` (empty without private scores)."""
        return leaderboard_measures(self.public, self.private, self.sign) if self.has_private else {}

    def table(self, top: int | None = None) -> pd.DataFrame:
        """Rank, team, name, public, private, private rank and submissions of the first ``top`` teams
        by public value (a tie goes to the earlier team)."""
        risk = self.sign * self.private
        frame = pd.DataFrame({
            "team": self.teams,
            "name": self.names,
            "public": self.public,
            "private": self.private,
            "private_rank": pd.Series(risk).rank(method="min").to_numpy() if self.has_private else np.nan,
            "submissions": self.submissions if self.submissions is not None else np.nan,
        })
        frame = frame.iloc[np.argsort(self.sign * self.public, kind="stable")]
        frame.insert(0, "rank", np.arange(1, len(frame) + 1))
        return frame.reset_index(drop=True) if top is None else frame.head(top).reset_index(drop=True)


def check_selection(selection: str | int) -> str | int:
    """``selection`` as a rule, or ``ValueError`` naming it."""
    if isinstance(selection, str) and selection.isdigit():
        selection = int(selection)
    if selection in SELECTION_RULES or (isinstance(selection, int) and not isinstance(selection, bool) and selection >= 1):
        return selection
    raise ValueError(f"--selection {selection!r}: choose 'last', 'best-public' or a whole number k ≥ 1 (the k best public)")


def from_log(log: SubmissionLog, selection: str | int = KAGGLE_SELECTION, shown: FloatArray | None = None,
             shows_last: bool = False) -> FinalLeaderboard:
    """The final leaderboard of ``log`` (see the module docstring); ``shown`` replaces what the
    leaderboard showed for each row (a replayed mechanism's releases), and ``shows_last`` says the
    leaderboard shows a team's last release (a mechanism that releases its best so far)."""
    frame = log.submissions
    sign = log.sign
    if shown is None and "released" in frame:
        shown, shows_last = frame["released"].to_numpy(dtype=float), logged_releases_best(log)
    elif shown is None:
        shown = frame.public_score.to_numpy(dtype=float)
    rows = pd.DataFrame({"team": frame.team.to_numpy(), "risk": sign * shown, "private": sign * frame.private_score.to_numpy(dtype=float)})
    by_team = rows.groupby("team", sort=True)
    value = rows.risk if shows_last else by_team.risk.cummin()
    final = value.groupby(rows.team).transform("last")
    position = pd.Series(np.arange(len(rows)), index=rows.index)
    last_different = position.where(value != final).groupby(rows.team).transform("max").fillna(-1)
    reached = position.where(position > last_different).groupby(rows.team).min()  # from it on, the value is final
    chosen = _selected(frame, rows, check_selection(selection))
    private = rows.private.where(chosen).groupby(rows.team).min()
    teams = pd.DataFrame({"value": final.groupby(rows.team).last(), "reached": reached, "private": private,
                          "submissions": by_team.size()})
    teams = teams.sort_values(["value", "reached"], kind="stable")
    names = frame.groupby("team").team_name.last() if "team_name" in frame else None
    return FinalLeaderboard(
        teams=teams.index.tolist(),
        names=[names[t] if names is not None else t for t in teams.index],
        public=sign * teams.value.to_numpy(dtype=float),
        private=sign * teams.private.to_numpy(dtype=float),
        sign=sign,
        submissions=teams.submissions.to_numpy(dtype=np.int64),
    )


def logged_releases_best(log: SubmissionLog) -> bool:
    """Whether the mechanism the log names (if ladderlab knows it) releases its best so far."""
    from ladderlab.registry import MECHANISMS

    try:
        return log.mechanism is not None and MECHANISMS.get(log.mechanism).releases_best
    except ValueError:
        return False


def _selected(frame: pd.DataFrame, rows: pd.DataFrame, rule: str | int) -> pd.Series:
    """Which rows count privately: the log's ``selected`` column, and the rule for the teams
    that selected nothing (or for every team without the column)."""
    by_team = rows.groupby("team")
    if rule == "last":
        by_rule = by_team.cumcount(ascending=False) == 0
    elif rule == "best-public":
        by_rule = pd.Series(False, index=rows.index)
        by_rule[by_team.risk.idxmin()] = True
    else:
        by_rule = by_team.risk.rank(method="first") <= rule
    if "selected" not in frame:
        return by_rule
    selected = pd.Series(frame.selected.to_numpy(dtype=bool), index=rows.index)
    any_selected = selected.groupby(rows.team).transform("any")
    return selected.where(any_selected, by_rule)


def from_competition_row(row: Any) -> FinalLeaderboard:
    """The final leaderboard of one replication of a competition cell (a row of
    :func:`ladderlab.competition.results.load_competition_results` with ``teams=True``),
    teams in the engine's order (as its measures break ties), named by group and number."""
    labels = list(row.team_labels)
    counters: dict[str, int] = {}
    names = []
    for label in labels:
        counters[label] = counters.get(label, 0) + 1
        names.append(f"{label} #{counters[label]}")
    return FinalLeaderboard(teams=names, names=names, public=np.asarray(row.team_public, dtype=float),
                            private=np.asarray(row.team_private, dtype=float), sign=float(row.sign))


def compared(board: FinalLeaderboard, reference: FinalLeaderboard, top: int = 10) -> dict[str, float]:
    """How ``board``'s public standing differs from ``reference``'s (the same teams): Spearman's ρ
    of the public values, the share of the top ``top`` in common, and whether the public winner
    is the same team."""
    position = {team: i for i, team in enumerate(board.teams)}
    aligned = np.array([board.public[position[team]] for team in reference.teams])
    k = min(top, len(reference.teams))
    return {
        "public_spearman_vs_logged": rank_correlations(board.sign * aligned, reference.sign * reference.public)[0],
        "top10_overlap_vs_logged": len(set(board.teams[:k]) & set(reference.teams[:k])) / k,
        "same_public_winner": float(board.teams[0] == reference.teams[0]),
    }


def describe_selection(log: SubmissionLog, selection: str | int) -> str:
    """The selection in words, for a report."""
    rule = {"last": "the last submission", "best-public": "the best public submission"}.get(
        selection, f"the {selection} best public submissions" if selection != 1 else "the best public submission")
    if "selected" in log.submissions:
        return f"the log's selected submissions ({rule} for a team that selected none)"
    return rule


def describe_rules_selection(selection: str | int) -> str:
    """A competition's selection rule (:class:`ladderlab.competition.Rules`) in words."""
    if selection == "last":
        return "its final prediction"
    if selection == "best-public":
        return "its best public submission"
    others = {1: "", 2: " and its best other release"}.get(selection, f" and its {selection - 1} best other releases")
    return f"its final prediction{others}"


def row_label(row: Any) -> str:
    """A competition cell's replication, for a report."""
    rules = ", ".join(f"{k}={v}" for k, v in json.loads(row.rules).items() if v is not None)
    return f"{row.task} × {row.mechanism} ({rules}; mix {row.mix}), replication {row.replication}"
