"""``ladderlab stats replay``: logs read and validated, final leaderboards and measures that can be
computed by hand, mechanisms replayed from scores, and the shipped CHAMPS log."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.cli.commands import main
from ladderlab.final_rankings.final_leaderboard import from_log
from ladderlab.final_rankings.replay_report import log_report, prepare_replay
from ladderlab.final_rankings.submission_log import (
    META_KAGGLE,
    SubmissionLog,
    read_log,
    write_log,
)
from tests.helpers import FOUR_TEAMS, ladderlab_log, write_csv
from tests.test_competition import run_tiny_scenario

ROOT = Path(__file__).resolve().parent.parent
CHAMPS = ROOT / "examples" / "logs" / "champs-public-leaderboard.csv.gz"


@pytest.mark.parametrize(("selection", "private"), [
    (2, {"A": 0.21, "B": 0.19, "C": 0.30, "D": 0.40}),           # the two best public: A's 0.20 and 0.25
    ("last", {"A": 0.21, "B": 0.19, "C": 0.30, "D": 0.40}),
    ("best-public", {"A": 0.25, "B": 0.20, "C": 0.30, "D": 0.40}),
    (1, {"A": 0.25, "B": 0.20, "C": 0.30, "D": 0.40}),
])
def test_the_final_leaderboard_ranks_by_public_score_ties_by_time_and_counts_the_selected(tmp_path, selection, private):
    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False)
    board = from_log(log, selection)
    assert board.teams == ["A", "D", "B", "C"]
    assert board.public.tolist() == [0.20, 0.20, 0.22, 0.35]
    assert board.private.tolist() == [private[t] for t in board.teams]
    assert board.submissions.tolist() == [3, 1, 2, 1]


def test_the_shake_up_measures_of_a_small_log_are_those_computed_by_hand(tmp_path):
    board = from_log(read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False), 2)
    measures = board.measures()
    # public ranks A 1.5, D 1.5, B 3, C 4; private ranks A 2, D 4, B 1, C 3
    assert measures["spearman"] == pytest.approx(np.corrcoef([1.5, 1.5, 3, 4], [2, 4, 1, 3])[0, 1])
    # pairs: AD tied in public; AB, DB, DC discordant; AC, BC concordant: τ_b = (2 − 3) / √(5·6)
    assert measures["kendall"] == pytest.approx(-1 / np.sqrt(30))
    assert measures["winner_delta"] == pytest.approx(0.22 - 0.19)   # B wins privately
    assert measures["public_winner_private_rank"] == 2                # A, the public winner, is second
    assert measures["top10_overlap"] == 1.0                           # four teams: all in both top tens


def test_top_ten_overlap_public_winner_and_winner_gap_on_twelve_teams(tmp_path):
    rows = [(f"T{i:02d}", 0.01 * i, 0.01 * i) for i in range(1, 13)]
    rows[9] = ("T10", 0.10, 0.50)     # falls out of the private top ten
    rows[10] = ("T11", 0.11, 0.001)   # enters it, first
    measures = from_log(read_log(write_csv(tmp_path, ladderlab_log(rows)), greater_is_better=False), "last").measures()
    assert measures["top10_overlap"] == pytest.approx(0.9)
    assert measures["public_winner_private_rank"] == 2
    assert measures["winner_delta"] == pytest.approx(0.11 - 0.001)


def test_larger_is_better_turns_every_order_around(tmp_path):
    flipped = [(team, 1 - public, 1 - private) for team, public, private in FOUR_TEAMS]
    smaller = from_log(read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False), 2)
    larger = from_log(read_log(write_csv(tmp_path, ladderlab_log(flipped), "flipped.csv"), scorer="accuracy"), 2)
    assert larger.teams == smaller.teams
    for name, value in smaller.measures().items():
        expected = -value if name == "winner_delta" else value
        assert larger.measures()[name] == pytest.approx(expected)


def test_a_selected_column_counts_and_a_team_that_selected_nothing_gets_the_rule(tmp_path):
    selected = [True, False, False, False, False, False, True]   # A picks its first; C and D pick nothing
    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS, selected=selected)), greater_is_better=False)
    board = from_log(log, "best-public")
    assert dict(zip(board.teams, board.private.tolist())) == {"A": 0.32, "B": 0.19, "C": 0.30, "D": 0.40}


def test_released_scores_are_what_the_board_ranks(tmp_path):
    frame = ladderlab_log(FOUR_TEAMS, released=[0.3, 0.3, 0.2, 0.4, 0.1, 0.2, 0.3])
    board = from_log(read_log(write_csv(tmp_path, frame), greater_is_better=False), 2)
    assert board.teams == ["D", "A", "B", "C"]
    assert board.public.tolist() == [0.1, 0.2, 0.3, 0.4]


def test_parquet_logs_carry_their_orientation_and_read_as_the_csv_does(tmp_path):
    frame = ladderlab_log(FOUR_TEAMS)
    write_log(frame, tmp_path / "log.parquet", greater_is_better=False, scorer="zero-one")
    from_parquet = read_log(tmp_path / "log.parquet")
    assert from_parquet.scorer == "zero-one" and not from_parquet.greater_is_better
    from_csv = read_log(write_csv(tmp_path, frame), greater_is_better=False)
    pd.testing.assert_frame_equal(from_parquet.submissions, from_csv.submissions)


def meta_kaggle(frame: pd.DataFrame, late: list[int], unscored: list[int]) -> pd.DataFrame:
    """The ladderlab log as Meta Kaggle writes it, with extra rows after the deadline or unscored."""
    rows = pd.DataFrame({
        "Id": frame.submission_id, "SubmittedUserId": 7, "TeamId": frame.team.map(lambda t: 1000 + ord(t[0])),
        "SourceKernelVersionId": "", "SubmissionDate": frame.submitted_at.dt.strftime("%m/%d/%Y %H:%M:%S"),
        "ScoreDate": "", "IsAfterDeadline": "False",
        "PublicScoreLeaderboardDisplay": frame.public_score.round(3), "PublicScoreFullPrecision": frame.public_score,
        "PrivateScoreLeaderboardDisplay": frame.private_score.round(3), "PrivateScoreFullPrecision": frame.private_score,
    })
    extra = rows.iloc[late + unscored].copy()
    extra["Id"] += 1000
    extra.iloc[: len(late), extra.columns.get_loc("IsAfterDeadline")] = "True"
    extra.iloc[: len(late), extra.columns.get_loc("PublicScoreFullPrecision")] = 0.0   # would win, but is late
    extra.iloc[len(late):, extra.columns.get_loc("PrivateScoreFullPrecision")] = np.nan
    return pd.concat([rows, extra], ignore_index=True)[list(META_KAGGLE)]


def test_meta_kaggle_submissions_drop_late_and_unscored_rows_and_give_the_same_leaderboard(tmp_path):
    frame = ladderlab_log(FOUR_TEAMS)
    log = read_log(write_csv(tmp_path, meta_kaggle(frame, late=[0, 1], unscored=[2]), "Submissions.csv"),
                   greater_is_better=False)
    assert log.format == "meta-kaggle"
    assert log.excluded == {"after the deadline": 2, "without a public or private score": 1}
    expected = from_log(read_log(write_csv(tmp_path, frame), greater_is_better=False), 2)
    board = from_log(log, 2)
    assert board.public.tolist() == expected.public.tolist() and board.private.tolist() == expected.private.tolist()
    assert board.measures() == expected.measures()


def test_a_kaggle_leaderboard_download_is_a_public_history_and_its_orientation_is_checked(tmp_path):
    history = pd.DataFrame({"TeamId": [1, 2, 1, 2], "TeamName": ["one", "two", "one", "two"],
                            "SubmissionDate": ["2019-05-29 20:36:11", "2019-05-30 10:00:00", "2019-06-01 08:00:00",
                                               "2019-06-02 08:00:00"],
                            "Score": [0.7, 0.9, 0.5, 0.4]})
    path = write_csv(tmp_path, history, "publicleaderboard.csv")
    log = read_log(path, greater_is_better=False)
    assert log.improvements_only and not log.has_private
    assert from_log(log).names == ["two", "one"]
    with pytest.raises(ValueError, match=r"publicleaderboard\.csv: column 'Score', line 4: team 'one' \(TeamId 1\) got worse"):
        read_log(path, greater_is_better=True)


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.drop(columns="team_sequence"), r"a ladderlab log needs the column team_sequence"),
    (lambda f: f.assign(public_score=f.public_score.astype(object).where(f.index != 2, "oops")),
     r"column 'public_score', line 4: needs a finite number, got 'oops'"),
    (lambda f: f.assign(submission_id=[101, 102, 103, 104, 105, 106, 101]),
     r"column 'submission_id', line 8: submission id 101 appears twice"),
    (lambda f: f.assign(team_sequence=f.team_sequence.where(f.index != 5, 4)),
     r"column 'team_sequence', line 7: team 'A' numbers its submissions 1, 2, … without gaps or repeats; expected 3, got 4"),
    (lambda f: f.assign(submitted_at=f.submitted_at.astype(object).where(f.index != 3, "yesterday")),
     r"column 'submitted_at', line 5: needs a date and time .*got 'yesterday'"),
    (lambda f: f.assign(private_score=f.private_score.where(f.index != 1)),
     r"column 'private_score', line 3: is empty while other rows have private scores"),
    (lambda f: f.assign(selected="maybe"), r"column 'selected', line 2: needs true or false, got 'maybe'"),
    (lambda f: f.assign(submitted_at=f.submitted_at[::-1].to_numpy()),
     r"column 'submitted_at', line 4: team 'A''s submission 2 is dated before its previous one"),
    (lambda f: f.rename(columns={"team": "who"}), r"a ladderlab log needs the column team; it has who, "),
    (lambda f: f[["team", "public_score"]].rename(columns={"team": "who"}), r"not a submissions log ladderlab knows"),
])
def test_a_bad_log_is_one_line_naming_file_column_line_and_value(tmp_path, change, message):
    path = write_csv(tmp_path, change(ladderlab_log(FOUR_TEAMS)))
    with pytest.raises(ValueError, match=message) as caught:
        read_log(path, greater_is_better=False)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_the_orientation_must_be_stated_once_or_consistently(tmp_path):
    path = write_csv(tmp_path, ladderlab_log(FOUR_TEAMS))
    with pytest.raises(ValueError, match="which scores are better is not stated"):
        read_log(path)
    with pytest.raises(ValueError, match="stated both ways: --scorer accuracy, --smaller-is-better"):
        read_log(path, greater_is_better=False, scorer="accuracy")
    write_log(ladderlab_log(FOUR_TEAMS), tmp_path / "log.parquet", greater_is_better=False)
    with pytest.raises(ValueError, match="--greater-is-better, the file's ladderlab.greater_is_better 'false'"):
        read_log(tmp_path / "log.parquet", greater_is_better=True)


@pytest.mark.parametrize("value", ["-3", "many", "0"])
def test_a_holdout_size_in_the_metadata_is_a_whole_number_or_the_log_is_refused(tmp_path, value):
    import pyarrow.parquet as pq

    write_log(ladderlab_log(FOUR_TEAMS), tmp_path / "log.parquet", greater_is_better=False)
    table = pq.read_table(tmp_path / "log.parquet")
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"ladderlab.private_size": value.encode()}),
                   tmp_path / "log.parquet")
    with pytest.raises(ValueError, match=f"log.parquet: metadata ladderlab.private_size must be a whole number ≥ 1, "
                                         f"got '{value}'"):
        read_log(tmp_path / "log.parquet")


def test_full_disclosure_replays_the_logged_board_and_kaggle_rounds_it(tmp_path):
    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False)
    report = log_report(log, 2, [prepare_replay("full-disclosure", log, None), prepare_replay("kaggle(alpha=0.1)", log, None)])
    logged, full, kaggle = report["leaderboards"]
    assert full["measures"] == {**logged["measures"], "public_spearman_vs_logged": 1.0, "top10_overlap_vs_logged": 1.0,
                                "same_public_winner": 1.0}
    rounded = {}
    for team, public, _ in FOUR_TEAMS:
        rounded[team] = min(rounded.get(team, np.inf), np.rint(public / 0.1) * 0.1)
    assert sorted(row["public"] for row in kaggle["top"]) == sorted(rounded.values())
    assert [row["team"] for row in kaggle["top"]][:3] == ["B", "A", "D"]   # all at 0.2: B reached it first


@pytest.mark.parametrize(("spec", "message"), [
    ("ladder-free", "'ladder-free' needs the predictions, not only their scores"),
    ("noisy", "depend on the size of the public set"),
    ("sparse-vector-ladder", "depend on the size of the public set"),
    ("ladder(eta=-1)", "eta"),
])
def test_mechanisms_a_log_cannot_replay_are_refused_before_any_work(tmp_path, spec, message):
    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False)
    with pytest.raises(ValueError, match=message):
        prepare_replay(spec, log, None)


def test_a_random_mechanism_cannot_replay_a_log_of_improvements_only():
    log = read_log(CHAMPS, greater_is_better=False)
    with pytest.raises(ValueError, match="draws random numbers.*improvements only"):
        prepare_replay("noisy(scale=0.01)", log, None)
    with pytest.raises(ValueError, match="draws random numbers"):
        prepare_replay("sparse-vector-ladder(eta=0.01, sigma=0.001)", log, None)
    prepare_replay("ladder(eta=0.01)", log, None)


def history(frame: pd.DataFrame, sign: float) -> pd.DataFrame:
    """The public-leaderboard history of a log: each team's rows that improve its exact best."""
    risk = sign * frame.public_score
    best_before = risk.groupby(frame.team).cummin().groupby(frame.team).shift()
    return frame[best_before.isna() | (risk < best_before)]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), eta=st.sampled_from([0.005, 0.02, 0.1]), sign=st.sampled_from([1.0, -1.0]))
def test_deterministic_mechanisms_replay_a_history_of_improvements_exactly(seed, eta, sign):
    """docs/decisions.md#replay-improvements: on a log of every submission and on its history of
    improvements, Kaggle's rounding, Full-disclosure and the fixed Ladder give every team the same
    board value, reached at the same submission."""
    rng = np.random.default_rng(seed)
    teams = rng.choice(list("ABCDEFG"), size=120)
    scores = np.round(rng.uniform(0, 1, 120), 3)   # rounded: ties between submissions happen
    full = ladderlab_log([(t, s, 0.5) for t, s in zip(teams, scores)])
    improvements = history(full, sign).reset_index(drop=True)
    logs = [SubmissionLog(frame, sign < 0, "in memory", "ladderlab", improvements_only=only)
            for frame, only in ((full, False), (improvements, True))]
    for spec in ("full-disclosure", f"kaggle(alpha={eta})", f"ladder(eta={eta})"):
        boards = []
        for log in logs:
            replay = prepare_replay(spec, log, None)
            released = replay.releases(log, seed=0)
            boards.append(from_log(log, "last", shown=released, shows_last=type(replay.mechanism).releases_best))
        assert boards[0].teams == boards[1].teams, spec
        assert boards[0].public.tolist() == boards[1].public.tolist(), spec


def test_replay_is_the_same_for_the_same_seed_and_noise_differs_between_teams(tmp_path):
    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS * 3)), greater_is_better=False)
    replay = prepare_replay("noisy(scale=0.01)", log, 100)
    first, again = replay.releases(log, seed=3), replay.releases(log, seed=3)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, replay.releases(log, seed=4))


def test_the_shipped_champs_history_reads_and_replays():
    log = read_log(CHAMPS, greater_is_better=False)
    assert (log.teams, len(log.submissions), log.improvements_only) == (2736, 21401, True)
    report = log_report(log, 2, [prepare_replay("ladder(eta=0.05)", log, None)])
    logged, ladder = report["leaderboards"]
    assert logged["top"][0]["name"] == "hybrid" and logged["top"][0]["public"] == pytest.approx(-3.2453)
    assert logged["measures"] == {} and "public scores only" in report["unavailable"][0]
    assert ladder["board_changes"] < report["logged_board_changes"]


def run(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_text_report_fits_a_100_column_terminal(capsys):
    code, out, _ = run(["stats", "replay", str(CHAMPS), "--smaller-is-better", "--mechanism", "kaggle(alpha=0.001)",
                        "--mechanism", "ladder(eta=0.01)"], capsys)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "ladder(eta=0.01)" in out


def test_json_and_csv_outputs_carry_the_same_measures(tmp_path, capsys):
    path = write_csv(tmp_path, ladderlab_log(FOUR_TEAMS))
    assert run(["stats", "replay", str(path), "--smaller-is-better", "--format", "json", "--out", str(tmp_path / "r.json")], capsys)[0] == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["leaderboards"][0]["measures"]["kendall"] == pytest.approx(-1 / np.sqrt(30))
    code, out, _ = run(["stats", "replay", str(path), "--smaller-is-better", "--format", "csv"], capsys)
    table = pd.read_csv(pd.io.common.StringIO(out))
    assert table.kendall.iloc[0] == pytest.approx(-1 / np.sqrt(30))


def test_command_line_errors_are_one_line_and_exit_2(tmp_path, capsys):
    path = write_csv(tmp_path, ladderlab_log(FOUR_TEAMS))
    for args, message in [
        (["stats", "replay", str(path)], "which scores are better is not stated"),
        (["stats", "replay", str(path), "--smaller-is-better", "--mechanism", "ladder-t"], "needs the predictions"),
        (["stats", "replay", str(path), "--smaller-is-better", "--selection", "first"], "--selection 'first'"),
        (["stats", "replay", str(tmp_path / "missing.csv"), "--smaller-is-better"], "no such file"),
        (["stats", "replay", str(path), "--smaller-is-better", "--out", str(tmp_path)], "is a directory"),
    ]:
        code, out, err = run(args, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and message in err, (args, err)


@pytest.fixture(scope="module")
def competition_run(tmp_path_factory):
    return run_tiny_scenario(tmp_path_factory.mktemp("competition"))


def test_a_competition_run_goes_through_the_same_measures_as_the_competition(competition_run, capsys):
    from ladderlab.competition.results import load_competition_results

    rows = load_competition_results(competition_run, teams=True)
    row = rows[(rows.mechanism == "ladder") & (rows.replication == 1)].iloc[0]
    code, out, _ = run(["stats", "replay", str(competition_run), "--cell", row.cell[:6], "--replication", "1",
                        "--format", "json"], capsys)
    assert code == 0
    measures = json.loads(out)["leaderboards"][0]["measures"]
    for name in ("spearman", "kendall", "top10_overlap", "winner_delta"):
        assert measures[name] == row[name], name


def test_a_run_with_several_cells_needs_a_cell_and_no_mechanism(competition_run, capsys):
    code, _, err = run(["stats", "replay", str(competition_run)], capsys)
    assert code == 2 and "has 3 competition cells: choose one with --cell" in err
    code, _, err = run(["stats", "replay", str(competition_run), "--mechanism", "kaggle"], capsys)
    assert code == 2 and "records final leaderboards, not submissions" in err
    code, _, err = run(["stats", "replay", str(competition_run), "--cell", "zzz"], capsys)
    assert code == 2 and "--cell zzz" in err


def figure_commands() -> list[str]:
    """The ``sh`` commands of the replay and rank-certificate pages, in order, without repeats."""
    import re

    commands = []
    for page in ("replay.md", "rank-certificate.md"):
        for block in re.findall(r"```sh\n(.*?)\n```", (ROOT / "docs" / page).read_text(), re.S):
            commands += [line for line in block.splitlines() if line.strip() and line not in commands]
    return commands


@pytest.mark.slow
def test_the_docs_figures_are_what_their_commands_write(tmp_path, monkeypatch, capsys):
    import shlex

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    written = []
    for command in figure_commands():
        arguments = shlex.split(command)
        assert arguments[0] == "ladderlab", command
        assert main(arguments[1:]) == 0, f"{command}\n{capsys.readouterr().err}"
        if "--out" in arguments and arguments[arguments.index("--out") + 1].startswith("docs/figures/"):
            written.append(arguments[arguments.index("--out") + 1])
    assert len(written) == 5
    for figure in written:
        assert (tmp_path / figure).read_text() == (ROOT / figure).read_text(), f"{figure} is out of date: run its command"


def test_a_log_with_per_sample_data_gets_the_ranking_certificate(capsys):
    logs = ROOT / "examples" / "logs"
    code, out, err = run(["stats", "replay", str(logs / "synthetic-log.csv"), "--scorer", "zero-one", "--samples",
                          str(logs / "synthetic-private-losses.parquet"), "--format", "json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    board = {row["team"]: row["private"] for row in from_log(read_log(logs / "synthetic-log.csv", scorer="zero-one"), 2)
             .table().to_dict(orient="records")}
    scores = {row["team"]: row["score"] for row in report["rank_certificate"]["ranking"]}
    assert scores == pytest.approx(board)   # the per-sample losses are those of each team's counted submission
    code, _, err = run(["stats", "replay", str(logs / "synthetic-log.csv"), "--scorer", "zero-one", "--rank-certificate"], capsys)
    assert code == 2 and "give --samples FILE" in err


def test_per_sample_data_of_teams_the_log_does_not_have_are_refused(tmp_path, capsys):
    pd.DataFrame({"team": ["A", "A", "Z", "Z"], "sample": [1, 2, 1, 2], "loss": [0, 1, 1, 1]}).to_csv(tmp_path / "s.csv", index=False)
    path = write_csv(tmp_path, ladderlab_log(FOUR_TEAMS))
    code, _, err = run(["stats", "replay", str(path), "--smaller-is-better", "--samples", str(tmp_path / "s.csv")], capsys)
    assert code == 2 and "team 'Z' is not in the log" in err


@pytest.mark.parametrize("mechanism", ["ladder", "kaggle"])
def test_a_log_exported_by_ladderlab_serve_replays_to_the_services_final_ranking(tmp_path, mechanism):
    from ladderlab.serve.storage import sqlite_url
    from tests.serve_helpers import TEAMS, open_service, write_challenge

    params = "eta = 0.01" if mechanism == "ladder" else "alpha = 0.001"
    service, _ = open_service(write_challenge(tmp_path, mechanism=mechanism, params=params, rules="selection = 2"),
                              sqlite_url(tmp_path / "log.sqlite"))
    labels = service.challenge.split.y_holdout
    for index, team in enumerate(TEAMS):   # better teams copy more of the labels
        rng = np.random.default_rng(index)
        service.submit(team, np.where(rng.random((4, labels.size)) < 0.15 * (index + 1), labels, 1 - labels))
    service.close()
    (tmp_path / "export.parquet").write_bytes(service.export())
    final = service.final()
    log = read_log(tmp_path / "export.parquet")
    assert log.mechanism == mechanism and not log.greater_is_better
    board = from_log(log)
    expected = {row["team"]: (row["public"], row["private"]) for row in final["teams"]}
    assert {team: (public, private) for team, public, private in zip(board.teams, board.public, board.private)} == expected
    for name in ("spearman", "kendall", "winner_delta"):
        assert board.measures()[name] == pytest.approx(final["shake_up"][name]), name


@pytest.mark.parametrize(("scorer", "private_size", "asked_for"), [
    ("zero-one", None, ["--private-size"]),
    (None, 2000, ["--scorer"]),
    (None, None, ["--scorer", "--private-size"]),
])
def test_the_state_of_the_art_names_only_what_it_still_needs(tmp_path, scorer, private_size, asked_for):
    log = read_log(write_csv(tmp_path, ladderlab_log(FOUR_TEAMS)), greater_is_better=False, scorer=scorer)
    note = " ".join(log_report(log, 2, [], private_size=private_size)["unavailable"])
    assert [option for option in ("--scorer", "--private-size") if option in note] == asked_for
