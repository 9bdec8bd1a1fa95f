"""Competitions: the engine (turns, quotas, accounts, selection, determinism), the measures,
and competitions as scenarios."""

import threading
from dataclasses import replace
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ladderlab.mechanisms.full_disclosure import FullDisclosure
from scipy import stats

from ladderlab.attack import Attack
from ladderlab.board import BudgetExceeded
from ladderlab.competition import CompetitionResult, Rules, TeamSpec, compete
from ladderlab.competition.measures import measures, rank_correlations, top_overlap
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import leaderboard_error
from tests.helpers import TINY_COMPETITION

SMALL_TASK = {"n_train": 300, "n_public": 300, "n_holdout": 900, "n_features": 8}
ANALYST = {"view": 4, "grow_every": 3, "batch": 2}


def small_task(**params):
    return TASKS.make("latent-classification", **{**SMALL_TASK, **params})


class Flood(Attack):
    """Submits ``rows`` random label vectors in one call, then returns the last one."""

    id = "flood"
    reference = "test"

    def __init__(self, rows: int = 10):
        self.rows = rows

    def run(self, board, data, rng):
        P = rng.integers(0, 2, (self.rows, board.holdout_size)).astype(float)
        board.submit_many(P)
        return P[-1]


class Witness(Attack):
    """Floods one submission a round until round ``crash_round``'s turn, where it raises when
    ``crash`` is set; records the thread it ran in and whether its cleanup ran."""

    id = "witness"
    reference = "test"
    threads: ClassVar[list[int]] = []
    cleaned_up: ClassVar[list[bool]] = []

    def __init__(self, crash: bool = False, crash_round: int = 1):
        self.crash, self.crash_round = crash, crash_round

    def run(self, board, data, rng):
        Witness.threads.append(threading.get_ident())
        try:
            for day in range(board.remaining):
                if self.crash and day == self.crash_round:
                    raise RuntimeError("the witness crashed")
                board.submit(np.zeros(board.holdout_size))
            return np.zeros(board.holdout_size)
        finally:
            Witness.cleaned_up.append(True)


class BatchLog(FullDisclosure):
    """Full disclosure with one state for all accounts, logging the size of every batch."""

    id = "batch-log"
    shared_state = True
    log: ClassVar[list[int]] = []

    def _release(self, P):
        BatchLog.log.append(P.shape[0])
        return super()._release(P)


def result_with(public, private, population=None, honest=None, errors=None) -> CompetitionResult:
    public, private = np.asarray(public, float), np.asarray(private, float)
    population = private if population is None else np.asarray(population, float)
    count = public.size
    return CompetitionResult(
        labels=["team"] * count, honest=np.ones(count, bool) if honest is None else np.asarray(honest),
        accounts=np.ones(count, int), public=public, private=private, population=population,
        released_final=public, submissions=np.ones(count, int), public_by_round=public[:, None],
        best_population=float(population.min()), sign=1.0, n_public=100, n_private=100, scorer="log-loss",
        leaderboard_errors=np.zeros(count) if errors is None else np.asarray(errors, float),
    )


# --- measures ---------------------------------------------------------------------------------

def test_no_shakeup_when_public_equals_private():
    scores = np.random.default_rng(1).uniform(size=40)
    found = measures(result_with(scores, scores), np.random.default_rng(0))
    assert found["spearman"] == pytest.approx(1.0) and found["kendall"] == pytest.approx(1.0)
    assert found["top10_overlap"] == 1.0 and found["best_team_wins"] == 1.0 and found["winner_delta"] == 0.0


def test_a_reversed_leaderboard_has_correlation_minus_one_and_no_top_overlap():
    scores = np.arange(40.0)
    found = measures(result_with(scores, scores[::-1], population=scores), np.random.default_rng(0))
    assert found["spearman"] == pytest.approx(-1.0) and found["kendall"] == pytest.approx(-1.0)
    assert found["top10_overlap"] == 0.0
    assert found["best_team_wins"] == 0.0 and found["best_team_private_rank"] == 40.0


def test_top_overlap_counts_shared_teams():
    public = np.arange(20.0)
    private = public.copy()
    private[[0, 1, 2]] = [30, 31, 32]  # three public leaders fall out of the private top 10
    assert top_overlap(public, private) == pytest.approx(0.7)


def test_winner_delta_is_public_minus_private_of_the_private_winner():
    public, private = [0.10, 0.30, 0.25], [0.40, 0.20, 0.35]
    found = measures(result_with(public, private), np.random.default_rng(0))
    assert found["winner_delta"] == pytest.approx(0.30 - 0.20)
    assert found["winner_population_rank"] == 1.0


def test_honest_utility_uses_only_honest_teams():
    population = np.arange(10.0)
    public = population.copy()
    public[[8, 9]] = [-5, -6]  # two non-honest teams that look best publicly
    honest = np.array([True] * 8 + [False] * 2)
    found = measures(result_with(public, population, population, honest), np.random.default_rng(0))
    assert found["honest_utility"] == pytest.approx(1.0)
    assert rank_correlations(public, population)[0] < 0.5


def test_multiplicity_adjusted_state_of_the_art_recovers_a_known_best():
    """200 teams of true accuracy 0.8 on 1000 private points: the best observed private accuracy
    overstates 0.8 by about 3 standard errors; the adjusted estimate is much closer."""
    rng = np.random.default_rng(5)
    teams, n, theta = 200, 1000, 0.8
    error = 1 - rng.binomial(n, theta, size=teams) / n
    result = replace(result_with(error, error, np.full(teams, 1 - theta)), scorer="zero-one", n_private=n)
    found = measures(result, np.random.default_rng(0))
    assert found["sota_true"] == pytest.approx(theta)
    assert found["sota_observed"] - theta > 0.02
    assert abs(found["sota_estimate"] - theta) < 0.4 * (found["sota_observed"] - theta)


# --- the engine -------------------------------------------------------------------------------

def test_same_seed_same_competition_and_other_seed_another():
    teams = [TeamSpec("progressive-analyst", ANALYST, count=3), TeamSpec("boosting", {"k": 8}, count=2)]
    rules = Rules(rounds=4, per_round=2, public_fraction=0.3)
    first, second = (compete(small_task(), MECHANISMS.make("kaggle"), teams, rules, seed=3) for _ in range(2))
    other = compete(small_task(), MECHANISMS.make("kaggle"), teams, rules, seed=4)
    for name in ("public", "private", "population", "public_by_round"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert not np.array_equal(first.private, other.private)


def test_daily_quota_splits_a_batch_over_rounds_in_the_seeded_team_order():
    BatchLog.log.clear()
    rules = Rules(rounds=3, per_round=2)
    result = compete(small_task(), BatchLog(), [TeamSpec(Flood(rows=6), count=2)], rules)
    assert BatchLog.log == [2] * 6 + [1, 1]  # 2 teams × 3 rounds of 2, then the two final selections
    np.testing.assert_array_equal(result.submissions, [6, 6])


def test_every_team_plays_in_the_callers_thread():
    """So the runner's thread-local settings (joblib's sequential backend) reach every team."""
    Witness.threads.clear()
    compete(small_task(), MECHANISMS.make("kaggle"), [TeamSpec(Witness(), count=3)], Rules(rounds=2, per_round=1))
    assert Witness.threads == [threading.get_ident()] * 3


def test_a_team_that_raises_stops_the_competition_and_every_waiting_team_is_ended():
    Witness.cleaned_up.clear()
    teams = [TeamSpec(Witness(), count=3), TeamSpec(Witness(crash=True), label="crashing")]
    with pytest.raises(RuntimeError, match="the witness crashed"):
        compete(small_task(), MECHANISMS.make("kaggle"), teams, Rules(rounds=4, per_round=1))
    assert Witness.cleaned_up == [True] * 4


def test_exceeding_what_the_rules_allow_raises_before_submitting():
    with pytest.raises(BudgetExceeded, match="rules still allow"):
        compete(small_task(), MECHANISMS.make("kaggle"), [TeamSpec(Flood(rows=7))], Rules(rounds=3, per_round=2))


def test_total_cap_limits_each_account():
    result = compete(small_task(), MECHANISMS.make("kaggle"), [TeamSpec("boosting", {"k": 100}, count=2)],
                     Rules(rounds=5, per_round=3, total=7))
    np.testing.assert_array_equal(result.submissions, [7, 7])


def test_each_extra_account_adds_a_probe_budget_and_only_the_main_account_is_ranked():
    rules = Rules(rounds=3, per_round=2)
    result = compete(small_task(), MECHANISMS.make("kaggle"),
                     [TeamSpec("boosting", {"k": 100}, accounts=a, label=f"a{a}") for a in (1, 2, 4)], rules)
    np.testing.assert_array_equal(result.submissions, [6, 6, 18])
    np.testing.assert_array_equal(result.accounts, [1, 2, 4])
    assert np.isnan(result.public_by_round[1:]).all()  # Sybil main accounts only hold the final selection


def test_leaderboard_error_is_definition_2_1_on_the_population_scores():
    rules = Rules(rounds=5, per_round=2, selection="last")
    result = compete(small_task(), MECHANISMS.make("ladder", eta=0.02), [TeamSpec("boosting", {"k": 10, "variant": "ladder"})], rules)
    assert 0 <= result.leaderboard_errors[0] <= 1
    constant = compete(TASKS.make("random-labels", n_public=200, n_holdout=600), MECHANISMS.make("kaggle"),
                       [TeamSpec("boosting", {"k": 10})], rules)
    # Every submission's population 0/1 loss is 1/2: the error is the largest gap of the best release to 1/2.
    assert constant.population[0] == 0.5
    assert constant.leaderboard_errors[0] == pytest.approx(leaderboard_error(
        np.array([constant.public[0]]), np.array([0.5]), 1.0, False), abs=0.5)
    assert constant.leaderboard_errors[0] >= abs(constant.public[0] - 0.5) - 1e-12


def test_selection_rules_order_the_private_scores():
    teams = [TeamSpec("progressive-analyst", ANALYST, count=4)]
    base = dict(rounds=5, per_round=2, public_fraction=0.3)
    by_rule = {rule: compete(small_task(), MECHANISMS.make("kaggle"), teams, Rules(**base, selection=rule), seed=1)
               for rule in ("last", "best-public", 2, 100)}
    # k selections score the best private of k ⊇ {the last}: never worse than 'last', and all of them is best
    assert (by_rule[2].private <= by_rule["last"].private + 1e-12).all()
    assert (by_rule[100].private <= by_rule[2].private + 1e-12).all()
    assert (by_rule[100].private <= by_rule["best-public"].private + 1e-12).all()


def test_released_precision_rounds_on_top_of_the_mechanism():
    result = compete(small_task(scorer="log-loss"), MECHANISMS.make("full-disclosure"),
                     [TeamSpec("progressive-analyst", ANALYST, count=3)], Rules(rounds=3, per_round=2, precision=0.01))
    np.testing.assert_allclose(result.public, np.round(result.public / 0.01) * 0.01)


def test_an_incompatible_team_skips_the_competition():
    from ladderlab.runs.duel import Incompatible

    with pytest.raises(Incompatible, match="plays regression tasks"):
        compete(small_task(), MECHANISMS.make("kaggle"), [TeamSpec("freedman")], Rules(rounds=2))


def test_population_scores_are_expected_losses_under_the_known_label_noise():
    from ladderlab.competition import population_scores
    from ladderlab.scoring import get_scorer

    split = small_task().split(np.random.default_rng(0))
    p = split.holdout_probabilities
    always_one = np.ones((1, p.size))
    assert population_scores(split, get_scorer("zero-one"), always_one)[0] == pytest.approx(np.mean(1 - p))
    assert population_scores(split, get_scorer("accuracy"), always_one)[0] == pytest.approx(np.mean(p))
    bayes = (p >= 0.5).astype(float)[None, :]
    assert population_scores(split, get_scorer("zero-one"), bayes)[0] == pytest.approx(np.mean(np.minimum(p, 1 - p)))


# --- honest teams -----------------------------------------------------------------------------

def test_an_analyst_without_steps_ignores_the_released_scores_and_one_with_steps_does_not():
    """step = 0 leaves only the training-data path: the same final prediction whatever the
    mechanism releases; step > 0 adapts to the releases."""
    from ladderlab.runs.duel import duel

    task = small_task()
    finals = {}
    for step in (0.0, 1.0):
        for mechanism in ("full-disclosure", "ladder"):
            result = duel(task, MECHANISMS.make(mechanism), ATTACKS.make("progressive-analyst", **ANALYST, step=step,
                                                                         submissions=12), seed=2)
            finals[step, mechanism] = (result.final_public, result.final_final)
    assert finals[0.0, "full-disclosure"] == finals[0.0, "ladder"]
    assert finals[1.0, "full-disclosure"] != finals[1.0, "ladder"]


def test_analysts_learn_from_training_data_far_beyond_chance():
    """The Bayes 0/1 loss of the task is about 0.2 and chance is 0.5; a team with the whole view
    and honest growth ends well below chance on the private set."""
    result = compete(small_task(), MECHANISMS.make("ladder-free"),
                     [TeamSpec("conservative-analyst", {"view": 8, "grow_every": 2, "batch": 2}, count=3)],
                     Rules(rounds=8, per_round=2))
    assert (result.population < 0.35).all()


# --- scenarios --------------------------------------------------------------------------------

SCENARIO = """
schema_version = 1
name = "tiny-competition"
replications = 2
""" + TINY_COMPETITION


def run_tiny_scenario(tmp_path):
    from ladderlab.runs import runner
    from ladderlab.runs.scenario import load

    path = tmp_path / "tiny.toml"
    path.write_text(SCENARIO)
    runner.run(load(path), tmp_path / "run", progress=False)
    return tmp_path / "run"


def test_competitions_run_from_scenario_files_resume_and_report(tmp_path, monkeypatch):
    """The run, the resume and the report page's words; the figures are built but not drawn
    (drawing them costs seconds: the slow test below draws them)."""
    from ladderlab.competition.results import load_competition_results
    from ladderlab.reports import html as report_html
    from ladderlab.reports import plots, report
    from ladderlab.runs import runner
    from ladderlab.runs.scenario import cells, load

    path = tmp_path / "tiny.toml"
    path.write_text(SCENARIO)
    scenario = load(path)
    assert len(cells(scenario)) == 3
    runner.run(scenario, tmp_path / "run", progress=False)
    results = load_competition_results(tmp_path / "run", teams=True)
    assert len(results) == 6 and (results.status == "ok").all()
    assert set(results.team_labels.iloc[0]) == {"progressive-analyst(lam=0.5)", "progressive-analyst(lam=0.9)", "boosting"}
    assert len(results.team_public.iloc[0]) == 13
    written = {p: p.stat().st_mtime_ns for p in (tmp_path / "run" / "competitions").glob("*.parquet")}
    runner.run(scenario, tmp_path / "run", progress=False, jobs=2)
    assert {p: p.stat().st_mtime_ns for p in written} == written  # resumed: nothing recomputed
    monkeypatch.setattr(plots.ReportFigure, "png", lambda self: b"figure")
    page = report_html.html_page(report.load_run(tmp_path / "run"))
    assert "Competition shake-up" in page and "Honest utility" in page and "3 of 3 competition cells finished" in page


def test_a_damaged_competition_file_is_left_out_by_the_report_and_computed_again_on_resume(tmp_path, caplog):
    from ladderlab.competition.results import load_competition_results
    from ladderlab.reports import report
    from ladderlab.runs import rundir, runner
    from ladderlab.runs.scenario import load

    out = run_tiny_scenario(tmp_path)
    manifest = rundir.read_manifest(out)
    victim = sorted((out / "competitions").glob("*.parquet"))[0]
    record = manifest["completed"][victim.stem]
    assert record["file"] == f"competitions/{victim.stem}.parquet"
    assert set(record["plugins"]) == {"task", "mechanism", "team boosting", "team progressive-analyst"}
    before = load_competition_results(out, teams=True).drop(columns="wall_time")
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])

    assert len(load_competition_results(out)) == 4  # the other two cells' replications
    assert f"left out competitions/{victim.stem}.parquet" in caplog.text
    lines = report.load_run(out).status.lines()
    assert any(line.startswith(f"competitions/{victim.stem}.parquet (competition latent-classification") and "damaged" in line
               for line in lines)

    runner.run(load(tmp_path / "tiny.toml"), out, progress=False)
    assert len(list((out / "quarantine").glob(f"{victim.stem}.*.parquet"))) == 1
    pd.testing.assert_frame_equal(load_competition_results(out, teams=True).drop(columns="wall_time"), before)


@pytest.mark.slow
def test_the_competition_report_draws_its_figures(tmp_path):
    from ladderlab.reports import competition as competition_report
    from ladderlab.reports import html as report_html
    from ladderlab.reports import report

    run = report.load_run(run_tiny_scenario(tmp_path))
    figures = competition_report.report_figures(run.competitions)
    assert len(figures) == 3 and all(figure.png().startswith(b"\x89PNG") for figure in figures)
    assert report_html.html_page(run).count("data:image/png;base64,") == 3


def test_a_competition_table_names_unknown_policies_and_rules():
    from ladderlab.runs.scenario import ScenarioError

    with pytest.raises(ScenarioError, match="did you mean 'boosting'"):
        load_text(SCENARIO.replace('policy = "boosting"', 'policy = "bosting"'))
    with pytest.raises(ScenarioError, match="public_fraction"):
        load_text(SCENARIO.replace("public_fraction = 0.4", "public_fraction = 1.5"))
    with pytest.raises(ScenarioError, match="did you mean 'per_round'"):
        load_text(SCENARIO.replace("per_round = 2", "per_day = 2"))


def load_text(text):
    import tempfile
    from pathlib import Path

    from ladderlab.runs.scenario import load

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.toml"
        path.write_text(text)
        return load(path)


def test_the_builtin_kaggle_like_scenario_expands_to_every_mechanism_and_both_losses():
    from ladderlab.runs.scenario import cells, load

    found = cells(load("kaggle-like"))
    assert len(found) == 12
    assert {c.task[1]["scorer"] for c in found} == {"zero-one", "log-loss"}
    assert sum(t["count"] for t in found[0].teams) == 300


# --- integration with main: disclosure, preflight, parameter checks, base-class declarations ---

DSB_LIKE = {"scorer": "log-loss", "n_train": 200, "n_public": 198, "n_holdout": 400, "n_features": 4,
            "disclose_public_rows": True}


@pytest.mark.parametrize("mechanism, perfect", [("kaggle", 1.0), ("ladder-free", 0.0)])
def test_the_log_loss_oracle_decodes_the_public_rows_in_days_unless_the_ladder_holds_its_score(mechanism, perfect):
    """198 disclosed public rows, 3 submissions a day, released to 1e-5: the oracle packs 14 labels a
    submission (Trott's script: 14 submissions), so it is done on day 5 and its final public log loss
    is 0 under Kaggle's rounding; a Ladder releases only improvements by its margin, so nothing decodes."""
    task = TASKS.make("latent-classification", **DSB_LIKE)
    teams = [TeamSpec("progressive-analyst", {**ANALYST, "batch": 3}, count=3), TeamSpec("log-loss-oracle")]
    params = {"alpha": 1e-5} if mechanism == "kaggle" else {}
    result = compete(task, MECHANISMS.make(mechanism, **params), teams,
                     Rules(rounds=8, per_round=3, precision=1e-5, selection=2), seed=1)
    oracle = measures(result, np.random.default_rng(0), 10)["groups"]["log-loss-oracle"]
    assert oracle["final_perfect"] == perfect and oracle["last_round_mean"] == 5.0
    if perfect:
        assert oracle["public_rank_mean"] == 1.0 and oracle["private_rank_mean"] == 4.0  # first in public, last in private


def test_a_competition_split_discloses_its_own_public_rows_where_the_task_discloses():
    from ladderlab.competition.engine import _with_rows

    rows, final = np.arange(0, 900, 3), np.setdiff1d(np.arange(900), np.arange(0, 900, 3))
    for disclose in (True, False):
        split = small_task(disclose_public_rows=disclose).split(np.random.default_rng(0))
        moved = _with_rows(split, rows, final)
        np.testing.assert_array_equal(moved.public_rows, rows)
        if disclose:
            np.testing.assert_array_equal(moved.public.public_rows, rows)
        else:
            assert moved.public.public_rows is None


def test_preflight_skips_a_competition_whose_team_cannot_play_and_names_bad_parameters():
    from ladderlab.runs.scenario import ScenarioError, cells, preflight

    scenario = load_text(SCENARIO.replace('policy = "boosting"', 'policy = "freedman"'))
    skipped = preflight(scenario)
    assert set(skipped) == {cell.key for cell in cells(scenario)}
    assert all("regression" in reason for reason in skipped.values())
    with pytest.raises(ScenarioError, match=r"competition\[0\]\.mixes\[0\]\.teams\[0\]\.params\.lam: .*1\.5"):
        load_text(SCENARIO.replace("lam = [0.5, 0.9]", "lam = [0.5, 1.5]"))
    with pytest.raises(ScenarioError, match=r"competition\[0\]\.mechanisms\[1\]\.params\.eta"):
        load_text(SCENARIO.replace("eta = [0.01, 0.02]", "eta = [0.01, -0.02]"))
    with pytest.raises(ScenarioError, match=r"teams\[0\]\.count: .*got '6'"):
        load_text(SCENARIO.replace("count = 6", 'count = "6"'))


def test_shared_state_and_honest_are_declared_on_the_base_classes():
    from ladderlab.attack import Attack
    from ladderlab.mechanism import Mechanism

    assert Mechanism.shared_state is False and BatchLog.shared_state is True
    assert Attack.honest is False
    assert {a for a in ATTACKS.ids() if ATTACKS.get(a).honest} == {"honest", "improving", "progressive-analyst", "conservative-analyst"}
    assert TeamSpec("honest").is_honest and not TeamSpec("boosting").is_honest


@pytest.mark.parametrize("name", ["kaggle-like", "dsb-2017", "idg-dream-1b", "kaggle-scale", "kaggle-realistic", "roelofs-2019"])
def test_the_builtin_competitions_can_play(name):
    """Every built-in competition cell passes the preflight (dsb-2017 once lost every cell to a
    log-loss oracle that did not know the public rows)."""
    from ladderlab.competition.scenario import CompetitionCell
    from ladderlab.runs.scenario import cells, load, preflight

    scenario = load(name)
    competitions = [cell for cell in cells(scenario) if isinstance(cell, CompetitionCell)]
    assert competitions
    assert not set(preflight(scenario)) & {cell.key for cell in competitions}
    if name in ("kaggle-like", "dsb-2017"):
        log_loss = [cell for cell in competitions if cell.task[1].get("scorer") == "log-loss"]
        assert log_loss and all(any(t["policy"] == "log-loss-oracle" for t in cell.teams) for cell in log_loss)


def test_a_competition_listed_twice_is_an_error_naming_both_tables(tmp_path):
    from ladderlab.runs.scenario import load

    table = SCENARIO[SCENARIO.index("[[competition]]"):]
    path = tmp_path / "twice.toml"
    path.write_text(SCENARIO + table)
    with pytest.raises(ValueError, match=r"(?s)twice\.toml.*competition\[1\].*listed twice.*also in competition\[0\]"):
        load(path)


def test_improving_teams_with_a_view_differ_in_skill_and_without_one_are_clones():
    task = TASKS.make("gaussian-regression", preset="ad-challenge", n_features=20, mode="permuted")
    rules = Rules(rounds=5, per_round=1, selection="last")
    clones = compete(task, MECHANISMS.make("kaggle"), [TeamSpec("improving", {"days": 5}, count=3)], rules)
    views = compete(task, MECHANISMS.make("kaggle"), [TeamSpec("improving", {"days": 5, "view": 3}, count=3)], rules)
    assert np.unique(clones.private).size == 1
    assert np.unique(views.private).size == 3


@pytest.mark.parametrize("teams", range(2, 61))
def test_identical_and_reversed_rankings_correlate_exactly_one_and_minus_one(teams):
    """scipy's sums give 0.9999999999999999 for 5, 10 or 24 teams; the correlations are ratios of
    whole numbers, so these are exact."""
    scores = np.linspace(0.1, 0.9, teams) ** 2
    assert rank_correlations(scores, 3 * scores + 1) == (1.0, 1.0)
    assert rank_correlations(scores, -scores) == (-1.0, -1.0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_rank_correlations_with_ties_are_scipys_spearman_and_kendall_tau_b(seed):
    rng = np.random.default_rng(seed)
    teams = int(rng.integers(3, 90))
    a, b = rng.integers(0, 8, teams).astype(float), rng.integers(0, 8, teams).astype(float)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        assert all(np.isnan(rank_correlations(a, b)))
        return
    spearman, kendall = rank_correlations(a, b)
    assert abs(spearman - stats.spearmanr(a, b).statistic) <= 4e-16
    assert abs(kendall - stats.kendalltau(a, b).statistic) <= 4e-16
