"""``ladderlab plan``: the smallest public set, the largest budget and the recommendation, on cases whose answer
is known, and its bad inputs refused in one line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladderlab.certification import plan
from ladderlab.certification.certify import AttackSpec
from ladderlab.cli.commands import main
from tests.helpers import assert_one_line_error

DATA = Path(__file__).resolve().parent / "data"
SAFE_ABOVE = f"{DATA / 'planted_mechanisms.py'}:SafeAbove"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "breast-cancer" / "challenge.toml"
BUDGET = 8
QUICK = {"attacks": ["boosting"], "replications": 60, "honest_replications": 2, "tau": 0.3, "epsilon": 0.3, "beta": 0.4}
"""One attack of the battery, wide tolerances (in the best constant prediction's loss, ½ on random labels) and a wide tail
(β = 0.4: a clear pass needs about 17 replications instead of about 100): the planted cases' answers do not need more."""


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The plan of a mechanism that overstates every score below 40 public rows and tells nothing from 40 on, against
    two attacks, screened one at a time (the search's screens and whole batteries both play)."""
    target = plan.task_target("random-labels(n_public=100, n_holdout=300)", BUDGET)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan, "SCREEN", 1)
        return plan.plan(target, BUDGET, [AttackSpec(SAFE_ABOVE, {"n_safe": 40})], tmp_path_factory.mktemp("planted"),
                         min_utility=-1.0, **{**QUICK, "attacks": ["boosting", "hill-climbing"]})


@pytest.mark.slow
def test_a_mechanism_safe_exactly_from_n_star_on_is_found_within_the_bisection_s_resolution(planted):
    row = planted["mechanisms"][0]
    assert row["certified_at_organiser_n"]
    assert 40 <= row["smallest_n"] <= 40 * (1 + plan.RESOLUTION)
    searched = {step["n"]: step["bound"] >= BUDGET for step in row["steps"]}
    assert all(certified == (n >= 40) for n, certified in searched.items())
    assert {step["battery"] for step in row["steps"]} == {"screen", "whole"}
    assert any(step["battery"] == "whole" and step["n"] == row["smallest_n"] for step in row["steps"])
    assert max(n for n, certified in searched.items() if not certified) * (1 + plan.RESOLUTION) >= row["smallest_n"]
    assert row["smallest_fraction"] == pytest.approx(row["smallest_n"] / 300)


def test_the_recommendation_deploys_what_is_certified_at_the_organiser_s_n(planted):
    recommendation = planted["recommendation"]
    assert (recommendation["kind"], recommendation["n"], recommendation["budget"]) == ("deploy", 100, BUDGET)
    assert recommendation["certificate"]["safe_budget"] >= BUDGET and recommendation["certificate"]["n"] == 100
    assert planted["mechanisms"][0]["largest_budget"]["budget"] == max(planted["budgets"]) == 2 * BUDGET


def test_the_plan_s_terminal_output_fits_120_columns_and_its_files_are_written(planted, tmp_path):
    printed = plan.text(planted)
    assert max(map(len, printed.splitlines())) <= 120
    assert "Deploy planted_mechanisms.py:SafeAbove(n_safe=40)" in printed
    written = plan.write(planted, tmp_path / "plan.json")
    assert [path.name for path in written] == ["plan.json", "plan.md", "plan-recommended.json", "plan-recommended.md",
                                               "plan.png"]
    stored = json.loads((tmp_path / "plan.json").read_text())
    assert stored["mechanisms"][0]["smallest_n"] == planted["mechanisms"][0]["smallest_n"]
    assert "certificate" not in stored["recommendation"]
    assert "## The search" in (tmp_path / "plan.md").read_text()


def test_the_proof_alone_suffices_from_the_smallest_public_set_whose_proven_bound_reaches_epsilon():
    """√(k/n)·log(1/δ) ≤ ε from n = ⌈k·(log(1/δ)/ε)²⌉ on: 30 submissions and the final prediction (k = 31),
    ε = 0.5, 95 % give n = 1113."""
    proven = f"{DATA / 'planted_mechanisms.py'}:ProvenRoot"
    assert plan.proof_alone(proven, {}, budget=30, epsilon=0.5, confidence=0.95, holdout=5000) == 1113
    assert plan.proof_alone(proven, {}, budget=30, epsilon=0.5, confidence=0.95, holdout=1000) is None
    assert plan.proof_alone(SAFE_ABOVE, {}, budget=30, epsilon=0.5, confidence=0.95, holdout=5000) is None


@pytest.mark.slow
def test_full_disclosure_needs_a_larger_public_set_than_the_ladder_under_boosting_on_the_0_1_loss(tmp_path):
    """Boosting overfits full disclosure by about 0.23·√(k/n) (Blum & Hardt 2015, Fig. 3) and the Ladder by little:
    at certify's tolerances (a tenth of the minority rate, in all but a tenth of contests) with k = 30, full disclosure
    needs a larger public set than the Ladder, or is not certified up to half of a 2,000-row holdout, and the plan
    recommends the Ladder, whatever full disclosure's better honest utility."""
    target = plan.task_target("random-labels(n_public=400, n_holdout=2000)", 30)
    result = plan.plan(target, 30, [AttackSpec("full-disclosure"), AttackSpec("ladder", {"eta": 0.01})], tmp_path,
                       min_utility=-1.0, attacks=["boosting"], replications=200, honest_replications=5)
    disclosure, ladder = result["mechanisms"]
    assert ladder["smallest_n"] is not None
    assert disclosure["smallest_n"] is None or disclosure["smallest_n"] > ladder["smallest_n"]
    assert result["recommendation"]["mechanism"] == "ladder"


@pytest.mark.parametrize(("arguments", "message"), [
    (["--challenge", "missing.toml"], "no such challenge file"),
    (["--challenge", str(EXAMPLE), "--budget", "0"], "--budget: must be a whole number ≥ 1"),
    (["--task", "random-labels", "--days", "3"], "--days: give --days and --per-day together"),
    (["--task", "random-labels"], "give the budget"),
    (["--task", "random-labels(n_holdout=100, n_public=50)", "--budget", "5", "--n", "100"], "--n 100: 100 public rows"),
    (["--challenge", str(EXAMPLE), "--adaptive", "3"], "--adaptive 3: more adaptive teams than the 2 teams"),
    (["--challenge", str(EXAMPLE), "--mechanism", "ladder(eta=-1)"], "--mechanism ladder(eta=-1)"),
    (["--challenge", str(EXAMPLE), "--min-utility", "2"], "--min-utility: must be a number between -1 and 1"),
    (["--challenge", str(EXAMPLE), "--tau", "1.5"], "more than the best constant prediction loses there"),
    (["--task", "random-labels(n_public=50, n_holdout=100)", "--budget", "5", "--epsilon", "2"], "--epsilon 2"),
])
def test_bad_input_is_one_line_before_any_work(capsys, tmp_path, arguments, message):
    code = main(["plan", *arguments, "--run-dir", str(tmp_path / "never")])
    assert_one_line_error(capsys, code, [message])
    assert not (tmp_path / "never").exists()


def test_bench_plan_keeps_the_rows_it_did_not_measure_again_each_stamped_for_ladderlab_pages(tmp_path):
    from ladderlab.dev import page_survey, plan_speed

    def timing(name: str, wall: float) -> plan_speed.PlanTiming:
        return plan_speed.PlanTiming(name, f"ladderlab plan {' '.join(plan_speed.PLANS[name])} --jobs 2", 2, wall,
                                     2 * wall, 12, 3, "Deploy ladder", (1.0, 1.5), {"mechanism:ladder": "v1:0"})

    page = tmp_path / "docs" / "certify-speed.md"
    page.parent.mkdir()
    first = plan_speed.table([timing("breast-cancer", 100.0), timing("task-10000", 250.0)])
    again = plan_speed.table([timing("breast-cancer", 90.0)], first)
    page.write_text(f"# Speed\n\n{again}\n")
    rows, stamps = plan_speed.kept(again)
    assert set(rows) == set(stamps) == {"breast-cancer --jobs 2", "task-10000 --jobs 2"}
    assert "| 90 |" in rows["breast-cancer --jobs 2"] and "| 250 |" in rows["task-10000 --jobs 2"]
    states = page_survey._plan_speed_rows(tmp_path, "docs/certify-speed.md")
    assert [state.part for state in states] == ["breast-cancer --jobs 2", "task-10000 --jobs 2"]
    assert all(state.command.startswith("ladderlab dev bench-plan --plan") for state in states)
