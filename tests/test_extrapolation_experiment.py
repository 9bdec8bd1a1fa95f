"""Zheng et al.'s Figure 3 as a scenario table: small versions by default, the built-in one slow."""

import json

import numpy as np
import pandas as pd
import pytest

from ladderlab.cli.commands import main
from ladderlab.extrapolation import experiment
from ladderlab.reports import extrapolation as extrapolation_report
from ladderlab.reports import html as report_html
from ladderlab.reports import report
from ladderlab.runs import runner
from ladderlab.runs.scenario import ScenarioError, load, validate

SMALL = experiment.MixtureDesign(classes=8, dimension=4, training=15, testing=20)


def small_scenario(**table):
    return {"schema_version": 1, "name": "small-figure3", "replications": 2, "seed": 3,
            "extrapolation": [{"mixture": {"classes": 8, "dimension": 4, "training": 15, "testing": 20},
                               "classifiers": ["qda", "network"], "step": 3, "conventions": ["ladderlab", "authors"],
                               **table}]}


def test_every_predictor_equals_the_truth_once_all_classes_are_observed():
    """At k = K nothing is extrapolated: acc(K), EXP, CONS and HD all return the K-class test
    accuracy in ladderlab's convention (the authors' grids only approximate it)."""
    results = experiment.run_replication(SMALL, "qda", 0, seed=3, sizes=SMALL.subset_sizes(3, 2))
    assert sorted(results["k"]) == [3, 5, 7, 8]
    at_K = results[results["k"] == SMALL.classes]
    for predictor in experiment.PREDICTORS:
        np.testing.assert_allclose(at_K[predictor], at_K["true"], atol=1e-6)


def test_every_classifier_and_convention_meets_the_same_mixture():
    first = experiment.run_replication(SMALL, "network", 0, seed=1, sizes=[3, 8], conventions=("ladderlab", "authors"))
    second = experiment.run_replication(SMALL, "network", 0, seed=1, sizes=[3, 8], conventions=("authors",))
    assert first.equals(experiment.run_replication(SMALL, "network", 0, seed=1, sizes=[3, 8],
                                                   conventions=("ladderlab", "authors")))
    authors_rows = first[first.convention == "authors"].reset_index(drop=True)
    pd.testing.assert_frame_equal(authors_rows, second.reset_index(drop=True))


def summary_with(errors: dict, roughness: dict, network_closest: float) -> pd.DataFrame:
    rows = []
    for classifier in ("qda", "logistic", "network"):
        for predictor in experiment.PREDICTORS:
            rows.append({"convention": "ladderlab", "classifier": classifier, "predictor": predictor,
                         "mean_abs_error": errors[classifier].get(predictor, 0.2),
                         "closest_share": network_closest if (classifier, predictor) == ("network", "acc_k") else 0.1,
                         "roughness": roughness.get(predictor, 0.01), "failed": 0})
    return pd.DataFrame(rows)


def test_the_papers_statements_are_decided_by_their_numbers():
    """The paper's four statements hold on a summary made to satisfy them, and each fails when
    the number it rests on is moved across its threshold."""
    alike = {"exp": 0.05, "cons": 0.03, "hd": 0.04}
    errors = {"qda": alike, "logistic": alike, "network": {"exp": 0.09, "cons": 0.08, "hd": 0.07}}
    roughness = {"exp": 0.05, "cons": 0.02, "hd": 0.01}
    assert all(s.holds for s in experiment.statements(summary_with(errors, roughness, 0.6)))
    broken = [
        summary_with({**errors, "logistic": {"exp": 0.01, "cons": 0.03, "hd": 0.04}}, roughness, 0.6),
        summary_with({**errors, "network": {"exp": 0.09, "cons": 0.08, "hd": 0.04}}, roughness, 0.6),
        summary_with(errors, roughness, 0.5),
        summary_with(errors, {**roughness, "hd": 0.06}, 0.6),
    ]
    for number, summary in enumerate(broken):
        held = [s.holds for s in experiment.statements(summary)]
        assert held == [i != number for i in range(4)]


@pytest.mark.slow
def test_a_small_figure_3_runs_resumes_and_reports(tmp_path, capsys):
    scenario = validate(small_scenario())
    out = tmp_path / "run"
    runner.run(scenario, out)
    files = sorted((out / "extrapolations").glob("*.parquet"))
    assert len(files) == 2
    stamps = [path.stat().st_mtime_ns for path in files]
    runner.run(scenario, out)  # resumes: every cell is done
    assert [path.stat().st_mtime_ns for path in files] == stamps
    results, damaged = extrapolation_report.load(out)
    assert not damaged and set(results.status) == {"ok"}
    assert len(results) == 2 * 2 * 2 * 3  # classifiers × replications × conventions × k
    assert main(["report", str(out), "--format", "markdown", "--out", str(tmp_path / "page.md"),
                 "--plots", str(tmp_path / "plots")]) == 0
    page = (tmp_path / "page.md").read_text()
    assert "| convention | the paper says |" in page and "EXP is more variable than CONS and HD" in page
    assert "](plots/01-zheng-et-al.-figure-3" in page and "## Summary" not in page
    assert len(list((tmp_path / "plots").glob("*.png"))) == 1
    html = report_html.html_page(report.load_run(out))
    assert "Accuracy extrapolation" in html and "2 of 2 extrapolation cells finished" in html
    assert main(["report", str(out)]) == 0
    assert "for the network, acc(k) itself is the better predictor" in capsys.readouterr().out
    assert "QDA and logistic regression behave alike" not in page  # no logistic regression in this run
    damaged = sorted((out / "extrapolations").glob("*.parquet"))[0]
    damaged.write_bytes(damaged.read_bytes()[:-10])
    lines = report.status_lines(report.load_run(out))
    assert "1 of 2 extrapolation cells finished" in lines and any("damaged, left out" in line for line in lines)


def test_a_bad_extrapolation_table_is_refused_by_name(tmp_path):
    with pytest.raises(ScenarioError, match=r"extrapolation\[0\]: mixture\.classess: not a mixture parameter"):
        validate(small_scenario(mixture={"classess": 8}))
    with pytest.raises(ScenarioError, match=r"mixture.classes = 3 must exceed smallest = 3"):
        validate(small_scenario(mixture={"classes": 3}))
    with pytest.raises(ScenarioError, match=r"extrapolation\[0\].conventions\[0\]"):
        validate(small_scenario(conventions=["paper"]))


def test_the_builtin_scenario_is_the_authors_mixture_in_both_conventions():
    scenario = load("zheng-figure3")
    (table,) = scenario.extrapolation
    assert table.conventions == ["ladderlab", "authors"] and table.mixture == {}
    assert experiment.MixtureDesign() == experiment.MixtureDesign(
        classes=50, dimension=10, spread=1.0, noise=1.0, scale_spread=0.0, training=20, testing=30)
    assert json.loads(scenario.model_dump_json())["extrapolation"][0]["classifiers"] == ["qda", "logistic", "network"]


@pytest.mark.slow
def test_figure_3_at_paper_scale(tmp_path):
    runner.run(load("zheng-figure3"), tmp_path / "run", jobs=2)
    results, _ = extrapolation_report.load(tmp_path / "run")
    assert set(results.status) == {"ok"} and results.k.max() == 50
