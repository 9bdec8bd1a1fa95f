"""The report of ``ladderlab stats replay``: a real challenge's submissions log through the competition
measures, and what a mechanism would have released had it run.

The report of a log (:mod:`ladderlab.final_rankings.submission_log`) or of one replication of a competition
run directory: the final leaderboard (:mod:`ladderlab.final_rankings.final_leaderboard`) and its shake-up,
measured by the code that measures simulated competitions
(:func:`ladderlab.competition.measures.leaderboard_measures`: public–private Spearman and
Kendall, top-10 overlap, the private winner's public − private gap, the private rank of the
public winner), and the multiplicity-adjusted state of the art (Møllersen & Holsbø v2,
Sec. 5) where the scores are accuracies of a known number of private samples.

**Replaying a mechanism.** A mechanism that declares ``scores_only`` releases from exact
scores (:meth:`ladderlab.mechanism.Mechanism.release_scores`): each team's public scores go,
in time order, through its own bound copy (one state per team, as in competitions; one for
all under ``shared_state``), bound to stand-in labels of the public set's size, with a random
stream derived from (seed, mechanism, team). That is what it would have released for the same
submissions, as Blum & Hardt (2015, §6) replayed a Kaggle competition with the Ladder; the
teams would have played differently against it, which no log can show. The leaderboard under
the mechanism ranks its releases (its last release for a mechanism that releases its best),
and the selection rule, where the log has no ``selected`` column, picks by them.

Two checks run before any work: a mechanism whose releases depend on the public set's size
(noisy release's default scale 1/√n, the sparse-vector Ladder's defaults) needs
``--public-size`` (its releases at two stand-in sizes are compared); and a log of public
improvements only (a Kaggle leaderboard download) replays exactly only a mechanism that draws
no random numbers (docs/decisions.md#replay-improvements): a submission that does not improve a
team's exact best changes neither the state nor the board of Kaggle's rounding, Full-disclosure
or the fixed Ladder, while a random mechanism's draws for the missing submissions are unknown.
"""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from sklearn.base import clone

from ladderlab.competition.measures import state_of_the_art
from ladderlab.final_rankings.certificate import text_certificate
from ladderlab.final_rankings.final_leaderboard import (
    FinalLeaderboard,
    compared,
    describe_rules_selection,
    describe_selection,
    from_competition_row,
    from_log,
    logged_releases_best,
    row_label,
)
from ladderlab.final_rankings.submission_log import SubmissionLog, log_summary
from ladderlab.mechanism import Mechanism
from ladderlab.naming import plugin_label
from ladderlab.registry import MECHANISMS
from ladderlab.runs.duel import spec
from ladderlab.scoring import PredictionKind, Scorer, get_scorer
from ladderlab.seeding import stream
from ladderlab.utils.progress import progress_bar

FloatArray = NDArray[np.float64]
TEXT_WIDTH = 100
SIZE_PROBE = (2, 1 << 16)
"""Stand-in public-set sizes at which a mechanism's releases must agree when the size is unknown."""
LEGEND = (
    (("changes",), "changes: submissions that changed their team's value on the board"),
    (("Spearman", "Kendall", "top-10"), "Spearman, Kendall, top-10: the public board against the private one"),
    (("win. gap",), "win. gap: the private winner's public − private score"),
    (("pub. win.",), "pub. win.: the public winner's private rank"),
    (("ρ log", "top-10 log"), "ρ log, top-10 log: the public board against the logged one"),
)
MEASURE_COLUMNS = ("spearman", "kendall", "top10_overlap", "winner_delta", "public_winner_private_rank",
                   "public_spearman_vs_logged", "top10_overlap_vs_logged", "same_public_winner")


@dataclass(frozen=True, kw_only=True)
class LoggedScore(Scorer):
    """A score known only by its logged values and orientation: what a replayed mechanism is
    bound to when the log does not name a ladderlab scorer. It has no predictions to score."""

    name: str = "logged-score"
    prediction_kind: PredictionKind = PredictionKind.REAL

    def weighted(self, y: FloatArray, P: FloatArray, W: FloatArray) -> FloatArray:
        raise TypeError("a logged score is known by its values only; it cannot score predictions")


def replay_scorer(log: SubmissionLog) -> Scorer:
    """The log's scorer where ladderlab knows it, else a :class:`LoggedScore` of its orientation."""
    if log.scorer is not None:
        try:
            return get_scorer(log.scorer)
        except ValueError:
            pass
    return LoggedScore(greater_is_better=log.greater_is_better)


@dataclass(frozen=True)
class MechanismReplay:
    """A scores-only mechanism to replay on a log, with the stand-in holdout it is bound to."""

    mechanism: Mechanism
    scorer: Scorer
    public_size: int | None
    label: str
    """The mechanism with the parameters given (``ladder(eta=0.01)``)."""

    def bound(self, rng: np.random.Generator, size: int | None = None) -> Mechanism:
        labels = np.zeros(size or self.public_size or SIZE_PROBE[0])
        return clone(self.mechanism).bind(labels, self.scorer, rng)

    def releases(self, log: SubmissionLog, seed: int) -> FloatArray:
        """What the mechanism releases for every row of the log (in the log's row order)."""
        frame = log.submissions
        scores = frame.public_score.to_numpy(dtype=float)
        released = np.empty(scores.size)
        identity = spec(self.mechanism)
        if type(self.mechanism).shared_state:
            released[:] = self.bound(stream(seed, "replay", identity, "shared")).release_scores(scores)
            return released
        for team, rows in frame.groupby("team", sort=False).indices.items():
            released[rows] = self.bound(stream(seed, "replay", identity, team)).release_scores(scores[rows])
        return released


def replay_mechanism(text: str) -> tuple[Mechanism, str]:
    """The mechanism ``text`` names (``id`` or ``id(key=value, ...)``) and its label, checked as a
    scenario checks a mechanism (:meth:`ladderlab.registry.Registry.parse`) and declaring
    ``scores_only``; needs no log, so the command checks every ``--mechanism`` before reading one."""
    try:
        mechanism_id, params = MECHANISMS.parse(text)
    except ValueError as error:
        raise ValueError(f"--mechanism {text}: {error}") from None
    mechanism = MECHANISMS.make(mechanism_id, **(params or {}))
    if not mechanism.scores_only:
        replayable = ", ".join(i for i in MECHANISMS.ids() if MECHANISMS.get(i).scores_only)
        raise ValueError(f"--mechanism {text}: {mechanism_id!r} needs the predictions, not only their scores, "
                         f"so a log cannot replay it; mechanisms that release from scores: {replayable}")
    return mechanism, plugin_label(mechanism_id, params or {})


def prepare_replay(text: str, log: SubmissionLog, public_size: int | None) -> MechanismReplay:
    """The mechanism ``text`` names (:func:`replay_mechanism`), checked against the log before
    any replay: it does not depend on an unknown public-set size, and on a log of improvements
    only it draws no random numbers (see the module docstring)."""
    mechanism, label = replay_mechanism(text)
    replay = MechanismReplay(mechanism, replay_scorer(log), public_size, label)
    probe = log.sign * np.array([1.0, 0.5, 0.45, 0.3, 0.31, 0.1, 0.1, 0.05])
    if public_size is None:
        at = [replay.bound(np.random.default_rng(0), size).release_scores(probe) for size in SIZE_PROBE]
        if not np.array_equal(*at, equal_nan=True):
            raise ValueError(f"--mechanism {text}: its releases depend on the size of the public set (a parameter "
                             "derived from it); give --public-size N, or set that parameter explicitly")
    if log.improvements_only:
        rng = np.random.default_rng(0)
        before = (json.dumps(rng.bit_generator.state, default=str), rng.bit_generator.seed_seq.n_children_spawned)
        replay.bound(rng).release_scores(probe)
        if (json.dumps(rng.bit_generator.state, default=str), rng.bit_generator.seed_seq.n_children_spawned) != before:
            raise ValueError(f"--mechanism {text}: it draws random numbers, and {log.source} holds each team's public "
                             "improvements only: its draws for the other submissions, which change what it shows, "
                             "are unknown; replay it on a log of every submission")
    return replay


def _plain(value: Any) -> Any:
    """Python numbers for numpy's, NaN as None: what JSON holds."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _board_record(name: str, board: FinalLeaderboard, top: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, **extra, "measures": board.measures(), "top": _plain(board.table(top).to_dict(orient="records"))}


def log_report(log: SubmissionLog, selection: str | int, replays: list[MechanismReplay], seed: int = 0,
               private_size: int | None = None, top: int = 10, progress: bool | None = False) -> dict[str, Any]:
    """The replay report of a log: the logged leaderboard and one per replayed mechanism
    (``progress``: a bar over the mechanisms, each a pass over the whole log)."""
    logged = from_log(log, selection)
    boards = [_board_record("as logged", logged, top, shown="released" if "released" in log.submissions else "exact public score")]
    for replay in progress_bar(replays, progress=progress, desc="replay", unit="mechanism"):
        released = replay.releases(log, seed)
        board = from_log(log, selection, shown=released, shows_last=type(replay.mechanism).releases_best)
        record = _board_record(replay.label, board, top, shown=f"{replay.label}'s releases",
                               board_changes=_board_changes(log, released, type(replay.mechanism).releases_best))
        record["measures"].update(compared(board, logged))
        boards.append(record)
    unavailable = []
    if not log.has_private:
        unavailable.append(f"{log.source} holds public scores only: no shake-up, winner's gap or state of the art")
    sota = _sota(logged, log.scorer, private_size, seed, unavailable)
    return {"log": log_summary(log), "selection": describe_selection(log, selection), "leaderboards": boards,
            "logged_board_changes": _board_changes(log, None, logged_releases_best(log)), "state_of_the_art": sota,
            "unavailable": unavailable}


def _board_changes(log: SubmissionLog, released: FloatArray | None, shows_last: bool) -> int:
    """How many submissions changed their team's value on the leaderboard (its improvements as shown)."""
    frame = log.submissions
    shown = frame["released"].to_numpy(dtype=float) if released is None and "released" in frame else (
        frame.public_score.to_numpy(dtype=float) if released is None else released)
    risk = pd.Series(log.sign * shown)
    value = risk if shows_last else risk.groupby(frame.team.to_numpy()).cummin()
    previous = value.groupby(frame.team.to_numpy()).shift()
    return int((previous.isna() | (value != previous)).sum())


def _sota(board: FinalLeaderboard, scorer: str | None, private_size: int | None, seed: int,
          unavailable: list[str]) -> dict[str, float]:
    if not board.has_private:
        return {}
    missing = ([] if scorer in ("zero-one", "accuracy") else ["accuracies (--scorer zero-one or accuracy)"]) + (
        [] if private_size is not None else ["the private set's size (--private-size)"])
    if missing:
        unavailable.append(f"the state of the art needs {' and '.join(missing)}")
        return {}
    found = state_of_the_art(board.private, scorer, private_size, stream(seed, "replay-sota", board.teams))
    return {k: v for k, v in found.items() if k != "sota_true"}


def run_report(row: Any, top: int = 10) -> dict[str, Any]:
    """The replay report of one replication of a competition run (its final leaderboard as recorded)."""
    board = from_competition_row(row)
    return {"log": {"source": row_label(row), "format": "competition run", "teams": len(board.teams),
                    "greater_is_better": board.sign < 0},
            "selection": describe_rules_selection(json.loads(row.rules)["selection"]),
            "leaderboards": [_board_record("as recorded", board, top, shown="the mechanism's releases")],
            "state_of_the_art": {k: float(row[k]) for k in ("sota_estimate", "sota_observed", "sota_true")},
            "unavailable": ["a competition run records final leaderboards, not submissions: no mechanism replay"]}


def measure_table(report: dict[str, Any]) -> pd.DataFrame:
    """One row per leaderboard of the report, one column per measure (the CSV output)."""
    rows = []
    for board in report["leaderboards"]:
        rows.append({"leaderboard": board["name"], "shown": board["shown"],
                     "board_changes": board.get("board_changes", report.get("logged_board_changes")),
                     **{m: board["measures"].get(m, np.nan) for m in MEASURE_COLUMNS}})
    return pd.DataFrame(rows)


def text_report(report: dict[str, Any], top: int | None = None) -> str:
    """The report for a terminal: tables within 100 columns, prose wrapped to them; a measure
    that no leaderboard has is left out of the tables."""
    log = report["log"]
    oriented = "larger" if log["greater_is_better"] else "smaller"
    lines = _wrapped(f"{log['source']} ({log['format']})")
    if "submissions" in log:
        held = "public improvements only" if log["improvements_only"] else "every submission"
        lines.append(f"{log['teams']} teams, {log['submissions']} submissions ({held}), "
                     f"{log['first_submission'][:10]} to {log['last_submission'][:10]}")
        lines += [f"left out: {count} submissions {reason}" for reason, count in log.get("excluded", {}).items() if count]
    else:
        lines.append(f"{log['teams']} teams")
    private = f"; a team's private score: {report['selection']}" if report["leaderboards"][0]["measures"] else ""
    lines += _wrapped(f"{oriented} scores are better{private}")
    table = measure_table(report)
    columns = {
        "leaderboard": table.leaderboard.map(lambda name: _clip(name, 24)),
        "changes": table.board_changes.map(_count_text),
        "Spearman": table.spearman.map(_number), "Kendall": table.kendall.map(_number),
        "top-10": table.top10_overlap.map(_number), "win. gap": table.winner_delta.map(lambda v: _number(v, 4)),
        "pub. win.": table.public_winner_private_rank.map(lambda v: "–" if pd.isna(v) else f"#{int(v)}"),
        "ρ log": table.public_spearman_vs_logged.map(_number),
        "top-10 log": table.top10_overlap_vs_logged.map(_number),
    }
    shown = {k: v for k, v in columns.items() if (v != "–").any()}
    lines += ["", *_left_aligned(pd.DataFrame(shown), "leaderboard").splitlines()]
    lines += _wrapped("; ".join(text for names, text in LEGEND if any(name in shown for name in names)))
    for board in report["leaderboards"]:
        lines += ["", *_wrapped(f"{board['name']}: the top {len(board['top'])} (public: {board['shown']})")]
        lines += _top_table(board["top"]).splitlines()
    sota = {k.removeprefix("sota_"): v for k, v in (report.get("state_of_the_art") or {}).items() if not math.isnan(v)}
    if sota:
        lines += ["", *_wrapped("multiplicity-adjusted state of the art (Møllersen & Holsbø v2, Sec. 5): "
                                + ", ".join(f"{k} {v:.4f}" for k, v in sota.items()))]
    for note in report.get("unavailable", []):
        lines += _wrapped(f"not available: {note}")
    if "rank_certificate" in report:
        lines += ["", "ranking certificate:", *text_certificate(report["rank_certificate"], top).splitlines()]
    return "\n".join(lines) + "\n"


def _top_table(rows: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(rows)
    columns = {
        "rank": frame["rank"].map(str),
        "team": frame["name"].map(lambda name: _clip(str(name), 40)),
        "public": frame["public"].map(lambda v: _number(v, 5)),
        "private": frame["private"].map(lambda v: _number(v, 5)),
        "private rank": frame["private_rank"].map(_count_text),
        "submissions": frame["submissions"].map(_count_text),
    }
    return _left_aligned(pd.DataFrame({k: v for k, v in columns.items() if (v != "–").any()}), "team")


def _left_aligned(frame: pd.DataFrame, column: str) -> str:
    """``frame`` as text, ``column`` (names) left-aligned."""
    width = max(len(column), *frame[column].map(len))
    frame = frame.assign(**{column: frame[column].map(lambda text: text.ljust(width))})
    return frame.rename(columns={column: column.ljust(width)}).to_string(index=False)


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, TEXT_WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def _count_text(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{int(value)}"


def _number(value: Any, digits: int = 3) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def write_report(report: dict[str, Any], form: str, top: int | None = None) -> str:
    """The report as ``text`` (the ranking certificate's first ``top`` teams), ``json`` or ``csv``
    (the measures, one row per leaderboard)."""
    if form == "json":
        return json.dumps(_plain(report), indent=2, ensure_ascii=False) + "\n"
    if form == "csv":
        return measure_table(report).to_csv(index=False)
    return text_report(report, top)


def competition_row(run_dir: Path, cell: str | None, replication: int) -> Any:
    """One finished replication of a competition cell of a run directory, chosen by ``cell`` (a
    key or its prefix; needed when the run has several) and ``replication``."""
    from ladderlab.competition.results import load_competition_results

    if not (run_dir / "manifest.json").is_file():
        raise ValueError(f"{run_dir} is not a run directory: it has no manifest.json (made by 'ladderlab run'); "
                         "a submissions log is a file")
    rows = load_competition_results(run_dir, teams=True)
    if rows.empty:
        raise ValueError(f"{run_dir}: the run has no finished competition replications")
    cells = rows.drop_duplicates("cell")
    if cell is not None:
        cells = cells[cells.cell.str.startswith(cell)]
        if cells.empty:
            raise ValueError(f"--cell {cell}: no competition cell of {run_dir} has a key starting so")
    if len(cells) > 1:
        listed = "; ".join(f"{c.cell[:10]} ({plugin_label(c.mechanism, c.mechanism_params)}, mix {c.mix})"
                           for c in cells.itertuples())
        raise ValueError(f"{run_dir} has {len(cells)} competition cells: choose one with --cell: {listed}")
    chosen = rows[(rows.cell == cells.iloc[0].cell) & (rows.replication == replication)]
    if chosen.empty or chosen.iloc[0].status != "ok":
        found = sorted(rows[(rows.cell == cells.iloc[0].cell) & (rows.status == "ok")].replication)
        raise ValueError(f"--replication {replication}: not a finished replication of the cell; finished: {found}")
    return chosen.iloc[0]
