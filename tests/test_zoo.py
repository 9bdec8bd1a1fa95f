"""The zoo: strength-grid expansion and playable-only matrices in scenarios, the worst-case table and its heat map."""

import json

import numpy as np
import pytest

from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.reports import html as report_html
from ladderlab.reports import plots, report, zoo
from ladderlab.runs import runner
from ladderlab.runs.duel import incompatibility
from ladderlab.runs.scenario import ScenarioError, cells, load

TINY_ZOO = """
schema_version = 1
name = "tiny-zoo"
replications = 2
seed = 0

[[matrix]]
playable_only = true
tasks = [{ id = "random-labels", params = { n_public = 100, n_holdout = 300 } },
         { id = "random-labels-log-loss", params = { preset = "dsb-2017" } }]
mechanisms = [{ id = "kaggle" }, { id = "ladder-free" }]
attacks = [{ id = "hill-climbing", budget = 40, strength_grid = true },
           { id = "log-loss-oracle", budget = 40, strength_grid = true }]
"""


def test_the_zoo_crosses_every_builtin_mechanism_with_every_builtin_attack_on_what_it_can_play():
    scenario = load("zoo")
    zoo_cells = cells(scenario)
    assert {c.mechanism[0] for c in zoo_cells} == set(MECHANISMS.ids())
    assert {c.attack[0] for c in zoo_cells} == set(ATTACKS.ids())
    splits = {}
    for cell in zoo_cells:
        key = json.dumps(cell.task, sort_keys=True)
        if key not in splits:
            splits[key] = TASKS.make(cell.task[0], **cell.task[1]).split(np.random.default_rng(0))
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        attack = ATTACKS.make(cell.attack[0], **cell.attack[1])
        assert incompatibility(splits[key], mechanism, attack) is None, cell


def test_a_strength_grid_entry_expands_into_the_attacks_grid_at_the_tasks_public_size(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_ZOO)
    found = cells(load(path))
    hill = [c.attack[1] for c in found if c.attack[0] == "hill-climbing" and c.task[0] == "random-labels"
            and c.mechanism[0] == "kaggle"]
    assert hill == ATTACKS.get("hill-climbing").strength_grid(40, 100)
    oracle = {c.task[0] for c in found if c.attack[0] == "log-loss-oracle"}
    assert oracle == {"random-labels-log-loss"}


def test_a_strength_grid_needs_a_budget(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(TINY_ZOO.replace("budget = 40, strength_grid", "strength_grid"))
    with pytest.raises(ScenarioError, match="strength_grid = true needs a budget"):
        load(path)


@pytest.mark.slow
def test_the_zoo_report_shows_the_worst_setting_of_each_attack_in_a_heat_map(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_ZOO)
    results = runner.run(path, tmp_path / "run", progress=False)
    worst = zoo.worst_cases(results)
    assert len(worst) == 4
    ok = results[results.status == "ok"]
    for row in worst.itertuples(index=False):
        label_rows = ok[(ok.attack == row.attack) & (ok.mechanism == row.mechanism)]
        medians = (-label_rows.optimism).groupby(label_rows.cell).median()
        assert row.delta_median == pytest.approx(medians.min())
    kaggle_oracle = worst[(worst.mechanism == "kaggle") & (worst.attack == "log-loss-oracle")].iloc[0]
    assert kaggle_oracle.delta_median < -0.6
    figures = plots.report_figures(report.load_run(tmp_path / "run").results)
    assert figures[0].title.startswith("zoo")
    assert "log-loss-oracle" in zoo.markdown_table(worst)
    page = report_html.html_page(report.load_run(tmp_path / "run"))
    assert "Every mechanism against every attack" in page or "zoo: worst median" in page
