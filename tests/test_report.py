"""Reports: the summary's statistics, its formats, partial runs, portability, and the HTML page in a real browser."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ladderlab.cli.commands import main
from ladderlab.reports import formats as report_formats
from ladderlab.reports import html as report_html
from ladderlab.reports import plots, report
from ladderlab.runs import runner
from ladderlab.runs.scenario import cells, load
from tests.helpers import CHROMIUM, browser_page, failing_mechanism, scenario_file


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("finished")
    runner.run(scenario_file(folder), folder / "run")
    return folder / "run"


def test_summary_has_the_median_and_the_95_percent_interval_over_finished_replications():
    rng = np.random.default_rng(0)
    deltas = rng.normal(size=200)
    results = pd.DataFrame({
        "cell": "c", "task": "t", "task_params": "{}", "mechanism": "m", "mechanism_params": "{}", "attack": "a",
        "attack_params": "{}", "budget": np.nan, "status": ["ok"] * 200 + ["failed"] * 3,
        "delta": np.concatenate([deltas, [1e9] * 3]), "leaderboard_error": 1.0, "final_released": 2.0, "final_public": 2.5,
        "final_final": 3.0,
    })
    row = report.summary(results).iloc[0]
    assert (row.n_ok, row.n_failed, row.n_skipped) == (200, 3, 0)
    assert row.delta_median == pytest.approx(np.median(deltas))
    assert (row.delta_lo, row.delta_hi) == pytest.approx(tuple(np.quantile(deltas, [0.025, 0.975])))
    assert row.lberr_median == row.lberr_lo == row.lberr_hi == 1.0


def test_json_rows_carry_ids_params_and_statistics(finished_run, capsys):
    assert main(["report", str(finished_run), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["duels"]
    results = runner.load_results(finished_run)
    assert len(rows) == results.cell.nunique() == 4
    for row in rows:
        assert {"task", "mechanism", "attack", "params", "delta_median", "lberr_median", "n_ok"} <= set(row)
        mine = results[(results.mechanism == row["mechanism"])
                       & (results.attack_params.map(json.loads) == row["params"]["attack"])]
        assert row["n_ok"] == len(mine) == 3
        assert row["delta_median"] == pytest.approx(mine.delta.median())
        assert row["params"]["task"] == {"n_public": 200, "n_holdout": 600}


def test_markdown_is_a_page_with_the_summary_and_links_to_the_plots(finished_run, tmp_path):
    page = tmp_path / "pages" / "run.md"
    page.parent.mkdir()
    assert main(["report", str(finished_run), "--format", "markdown", "--out", str(page),
                 "--plots", str(tmp_path / "plots")]) == 0
    text = page.read_text()
    table = report.summary(report.load_run(finished_run).results)
    assert text.startswith("# ") and "## Duels" in text
    rows = [line for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| ---") and "median [95%]" not in line]
    assert len(rows) == len(table)
    links = [line[line.index("](") + 2:-1] for line in text.splitlines() if line.startswith("![")]
    assert links and all((page.parent / link).is_file() for link in links)


def test_csv_has_one_line_per_cell(finished_run, tmp_path):
    out = tmp_path / "summary.csv"
    assert main(["report", str(finished_run), "--format", "csv", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    table = table[table.section == "duels"]
    assert len(table) == 4 and {"delta_median", "delta_lo", "delta_hi", "lberr_median", "n_ok"} <= set(table.columns)


def test_a_partial_run_says_which_cells_are_missing_and_which_replications_failed(tmp_path):
    path = scenario_file(tmp_path, '{ id = "kaggle" }, ' + failing_mechanism(tmp_path))
    runner.run(path, tmp_path / "run")
    missing = next((tmp_path / "run" / "cells").glob("*.parquet"))
    missing.unlink()
    status = report.load_run(tmp_path / "run").status
    assert not status.complete
    assert [cell["key"] for cell in status.missing] == [missing.stem]
    text = "\n".join(status.lines())
    assert "3 of 4 cells finished" in text and "1 cells have no results yet" in text
    assert "replications failed in" in text and "the release failed on purpose" in text
    page = report_html.html_page(report.load_run(tmp_path / "run"))
    assert "the release failed on purpose" in page and "have no results yet" in page


def test_a_run_with_no_finished_cell_is_reported_without_plots(tmp_path):
    scenario = load(scenario_file(tmp_path))
    runner.prepare(scenario, tmp_path / "run")
    run = report.load_run(tmp_path / "run")
    assert len(run.status.missing) == len(cells(scenario))
    assert "No duel replication has finished yet" in report_html.html_page(run)
    assert report_formats.compact_text(run) == "no finished replications yet\n"


def test_a_report_needs_only_the_run_directory(tmp_path):
    """A plugin from a local file ran the scenario; the report is made elsewhere, without it."""
    plugin = tmp_path / "my_mechanism.py"
    plugin.write_text(
        "from ladderlab.mechanisms.kaggle import Kaggle\n\n"
        "class Coarse(Kaggle):\n    id = 'coarse'\n"
    )
    path = scenario_file(tmp_path, f'{{ id = "{plugin}:Coarse", params = {{ alpha = 0.01 }} }}')
    runner.run(path, tmp_path / "run")
    shutil.move(tmp_path / "run", tmp_path / "elsewhere")
    plugin.unlink()
    run = report.load_run(tmp_path / "elsewhere")
    assert run.status.complete
    assert "alpha=0.01" in report_formats.compact_text(run)


def test_an_unknown_directory_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_sweeps_put_the_varying_attack_parameter_on_the_x_axis(finished_run):
    (sweep,) = plots.sweeps(runner.load_results(finished_run, submissions=True))
    assert sweep.x_name == "k" and sweep.xs == [50, 100]
    assert {m for m, _ in sweep.mechanisms} == {"kaggle", "ladder-boot"}


def test_plots_name_mechanism_and_parameters(finished_run):
    figures = plots.report_figures(runner.load_results(finished_run, submissions=True))
    assert [f.title.split(":")[0] for f in figures] == ["scores", "delta", "submissions"]
    titles = {ax.get_title() for f in figures for ax in f.figure.axes}
    assert "ladder-boot(b=5)" in titles and "kaggle" in titles
    for figure in figures:
        assert figure.png().startswith(b"\x89PNG")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_html_report_renders_every_plot_in_a_headless_browser(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = scenario_file(tmp_path, '{ id = "kaggle" }, ' + failing_mechanism(tmp_path))
    runner.run(path, tmp_path / "run")
    page_file = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "--html", str(page_file)]) == 0
    with browser_page(sync_api) as page:
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        images = page.evaluate(
            "Array.from(document.images).map(i => ({ok: i.complete, w: i.naturalWidth, h: i.naturalHeight,"
            " shown: i.getBoundingClientRect().width}))"
        )
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        heading = page.inner_text("h1")
        problems, requests = page.problems, page.requests
    assert heading == "ladderlab report: small"
    assert len(images) == len(plots.report_figures(runner.load_results(tmp_path / "run", submissions=True))) >= 3
    assert all(image["ok"] and image["w"] > 100 and image["h"] > 100 and image["shown"] > 0 for image in images)
    assert problems == []
    assert all(url.startswith(("file:", "data:")) for url in requests)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_mechanism_panels_share_one_y_scale():
    from ladderlab.reports.plots import _grid

    figure, axes = _grid(3)
    axes[0].plot([0, 1], [0.0, 0.02])
    axes[2].plot([0, 1], [-0.2, 0.0])
    assert axes[0].get_ylim() == axes[1].get_ylim() == axes[2].get_ylim()


def test_the_fig3_style_plot_shows_the_exact_public_score_blum_and_hardt_plot(finished_run):
    """Blum & Hardt's Fig. 3 plots the boosted vector's exact public loss, not its release: the curve
    of each mechanism is the median of ``final_public`` per cell, in order of submissions."""
    results = runner.load_results(finished_run, submissions=True)
    (figure,) = [f for f in plots.report_figures(results) if f.title.startswith("submissions")]
    lines = {line.get_label(): line for line in figure.figure.axes[0].get_lines()}
    for mechanism, rows in results.groupby("mechanism"):
        label = next(label for label in lines if label.startswith(mechanism) and label.endswith(": exact public"))
        by_cell = rows.groupby("cell")
        expected = by_cell.final_public.median()[by_cell.submissions.median().sort_values(kind="stable").index]
        np.testing.assert_array_equal(lines[label].get_ydata(), expected.to_numpy())
    assert "exact score on the public rows (dotted)" in figure.caption
