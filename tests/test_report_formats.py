"""Every format of a run's report carries every section (duels, competitions per replication,
summarised and by team group, a certificate's rows, the papers' values) with the run's own
numbers; the compact text fits a 120-column terminal; the competition report reads like one,
in a real browser."""

import io
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from ladderlab.cli.commands import main
from ladderlab.competition import results as competition_results
from ladderlab.reports import competition as competition_report
from ladderlab.reports import formats as report_formats
from ladderlab.reports import html as report_html
from ladderlab.reports import report
from ladderlab.reports.tables import compact_labels
from ladderlab.runs import runner
from ladderlab.runs.scenario import ScenarioError, load
from ladderlab.utils.strict_json import finite_or_null
from tests.helpers import CHROMIUM, TINY_COMPETITION, browser_page

MIXED = """
schema_version = 1
name = "mixed"
replications = 2
seed = 3

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 200, n_holdout = 600 } }]
mechanisms = [{ id = "kaggle" }, { id = "ladder-free" }]
attacks = [{ id = "boosting", params = { k = 40, variant = "kaggle" } }]
""" + TINY_COMPETITION + """
[[paper_values]]
source = "A paper, Fig. 1"
where = { mechanism = "kaggle", attack = "boosting" }
measure = "delta_median"
value = -0.05
note = "read off the figure"

[[paper_values]]
source = "Another paper, Table 2"
where = { mechanism = "ladder", "mechanism.eta" = 0.02 }
measure = "spearman_median"
value = 0.9
"""


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "mixed.toml").write_text(MIXED)
    runner.run(load(folder / "mixed.toml"), folder / "run", progress=False)
    return report.load_run(folder / "run")


def test_json_carries_every_section_with_the_runs_numbers(mixed_run):
    document = json.loads(report_formats.render(mixed_run, "json"))
    assert document["run"]["scenario"] == "mixed" and document["run"]["complete"]
    assert set(document["run"]["machine"]) == {"processor", "cpus", "memory_gib", "system", "python"}
    assert len(document["duels"]) == 2 and len(document["duel_replications"]) == 4
    assert len(document["competitions"]) == 3 and len(document["competition_replications"]) == 6
    competitions = mixed_run.competitions
    for row in document["competition_replications"]:
        mine = competitions[(competitions.cell == row["cell"]) & (competitions.replication == row["replication"])].iloc[0]
        assert row["spearman"] == mine.spearman and row["winner_delta"] == mine.winner_delta
        assert row["groups"] == finite_or_null(json.loads(mine.groups))
    for row in document["competitions"]:
        mine = competitions[competitions.cell == row["cell"]]
        assert row["top10_overlap_median"] == mine.top10_overlap.median()
        assert row["params"]["rules"]["rounds"] == 3
    groups = {(row["params"]["mechanism"].get("eta"), row["group"]) for row in document["competition_groups"]}
    assert groups == {(eta, group) for eta in (None, 0.01, 0.02)
                      for group in ("progressive-analyst(lam=0.5)", "progressive-analyst(lam=0.9)", "boosting")}
    kaggle = next(row for row in document["duels"] if row["mechanism"] == "kaggle")
    first, second = document["paper_values"]
    assert (first["paper"], first["ours_median"], first["ours_lo"]) == (-0.05, kaggle["delta_median"], kaggle["delta_lo"])
    assert first["difference"] == pytest.approx(kaggle["delta_median"] + 0.05)
    ladder = next(row for row in document["competitions"] if row["params"]["mechanism"] == {"eta": 0.02})
    assert second["ours_median"] == ladder["spearman_median"] and second["where"] == {"mechanism": "ladder",
                                                                                        "mechanism.eta": 0.02}
    assert document["certificate"] is None


def test_csv_holds_every_section_in_one_table_with_the_same_numbers(mixed_run):
    table = pd.read_csv(io.StringIO(report_formats.render(mixed_run, "csv")))
    document = json.loads(report_formats.render(mixed_run, "json"))
    counts = table.section.value_counts().to_dict()
    assert counts == {key: len(document[key]) for key in ("duels", "duel_replications", "competitions",
                                                           "competition_replications", "competition_groups",
                                                           "paper_values")}
    replications = table[table.section == "competition_replications"].set_index(["cell", "replication"])
    for row in document["competition_replications"]:
        assert replications.loc[(row["cell"], row["replication"]), "kendall"] == row["kendall"]
    assert table[table.section == "duels"].n_ok.tolist() == [2, 2]


def test_text_and_markdown_show_every_section_for_people(mixed_run):
    for form in ("text", "markdown"):
        shown = report_formats.render(mixed_run, form)
        for title in ("Duels", "Competitions", "Competition replications", "Team groups", "Against the papers"):
            assert title in shown, (form, title)
        assert "A paper, Fig. 1" in shown and "read off the figure" in shown
        assert "progressive-analyst(lam=0.9)" in shown and "ladder(eta=0.02)" in shown
        assert '"rounds"' not in shown and "{" not in shown  # parameters as words, not JSON
    markdown = report_formats.render(mixed_run, "markdown")
    assert "**rules**: per_round=2, public_fraction=0.4, rounds=3, selection=2" in markdown
    replication_rows = markdown.split("## Competition replications")[1].split("## ")[0]
    assert sum(line.startswith("| kaggle") or line.startswith("| ladder") for line in replication_rows.splitlines()) == 6


def test_the_report_command_writes_every_format(mixed_run, tmp_path, capsys):
    for form in report_formats.FORMATS:
        out = tmp_path / f"report.{form}"
        assert main(["report", str(mixed_run.directory), "--format", form, "--out", str(out)]) == 0
        assert out.read_text() == report_formats.render(mixed_run, form)
    assert main(["report", str(mixed_run.directory), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["competitions"]


@pytest.mark.slow
def test_the_quickstart_table_says_which_sign_of_delta_is_overfitting(quickstart_run):
    """Every quickstart Δ is negative: the footer must say that this, on a loss, is overfitting."""
    assert "below 0 on a loss, above 0 on a score: the leaderboard flattered it" in " ".join(
        report_formats.compact_text(quickstart_run).split())


def test_the_quickstart_table_fits_a_120_column_terminal(quickstart_run):
    compact = report_formats.compact_text(quickstart_run)
    assert max(len(line) for line in compact.splitlines()) <= 120
    for label in ("kaggle", "ladder-free", "ladder-t(alpha=0.15)", "ladder-boot(alpha=0.15, b=10)",
                  "boosting(variant=kaggle)", "boosting(variant=ladder)", "random-labels(n_holdout=12000, n_public=4000)"):
        assert label in compact
    assert "boosting: k=400" in compact and "step-forward: changepoints=penalty, iterations=5, jump=binseg" in compact
    full = report_formats.render(quickstart_run, "text")
    assert "step-forward(changepoints=penalty, iterations=5, jump=binseg)" in full and "released median [95%]" in full


def test_a_certify_run_directory_reports_its_certificate_in_every_format(tmp_path):
    from ladderlab.certification import certify

    issued = certify.certify("kaggle", n=50, budgets=[30], attacks=['boosting(k=20, variant="kaggle")'],
                             replications=2, default_battery=False, run_dir=tmp_path / "battery")
    run = report.load_run(tmp_path / "battery")
    document = json.loads(report_formats.render(run, "json"))
    assert document["certificate"]["safe_budget"] == issued["safe_budget"]
    assert document["certificate"]["battery"][0]["delta"] == issued["battery"][0]["delta"]
    rows = pd.read_csv(io.StringIO(report_formats.render(run, "csv")))
    row = rows[rows.section == "certificate"].iloc[0]
    assert (row.attack_label, row.verdict) == ('boosting(k=20, variant=kaggle)', issued["battery"][0]["verdict"])
    assert row.delta_median == issued["battery"][0]["delta"]["median"]
    for form in ("text", "markdown"):
        assert "Not safe at any budget tested (30)" in report_formats.render(run, form)
    assert "Certificate" in report_html.html_page(run)


def test_best_wins_is_a_share_with_its_clopper_pearson_interval():
    results = pd.DataFrame({"cell": "c", "task": "t", "task_params": "{}", "mechanism": "m", "mechanism_params": "{}",
                            "rules": "{}", "mix": "x", "status": "ok", "wall_time": 1.0,
                            "best_team_wins": [1.0, 1.0, 0.0, 1.0, np.nan]})
    for name in competition_results.SUMMARY_MEASURES:
        if name not in results:
            results[name] = 0.5
    row = competition_results.summary(results).iloc[0]
    assert row.best_team_wins_median == 0.75  # 3 of the 4 replications with a unique best team
    assert (row.best_team_wins_lo, row.best_team_wins_hi) == pytest.approx((0.19412, 0.99369), abs=1e-5)


# --- paper values ----------------------------------------------------------------------------


@pytest.mark.parametrize("entry, message", [
    ('where = { mechanism = "ladder-t" }\nmeasure = "delta_median"', r"paper_values\[0\]: where \{mechanism=ladder-t\} selects no cell"),
    ('where = { attack = "boosting" }\nmeasure = "delta_median"', r"paper_values\[0\]: where \{attack=boosting\} selects 2 cells"),
    ('where = { mechanism = "kaggle", attack = "boosting" }\nmeasure = "spearman_median"',
     r"paper_values\[0\]: measure 'spearman_median' is not a column of a duel summary"),
    ('where = { mechanism = "ladder", "mechanism.eta" = 0.01, "rules.rounds" = 3 }\nmeasure = "delta_median"',
     r"measure 'delta_median' is not a column of a competition summary"),
    ('where = { mechanisms = "kaggle" }\nmeasure = "delta_median"', r"where: unknown key 'mechanisms'"),
])
def test_a_paper_value_selects_exactly_one_cell_and_one_of_its_measures(tmp_path, entry, message):
    head = MIXED.split("[[paper_values]]")[0]
    (tmp_path / "bad.toml").write_text(f'{head}[[paper_values]]\nsource = "P"\nvalue = 1.0\n{entry}\n')
    with pytest.raises(ScenarioError, match=message):
        load(tmp_path / "bad.toml")


def paper_rows(run: report.Run) -> pd.DataFrame:
    """The report's papers' values section (empty when it has none)."""
    return next((section.frame for section in report_formats.sections(run) if section.key == "paper_values"),
                pd.DataFrame())


def test_paper_values_do_not_change_the_scenario_identity_and_reach_an_existing_run(mixed_run, tmp_path):
    head = MIXED.split("[[paper_values]]")[0]
    (tmp_path / "without.toml").write_text(head)
    assert load(tmp_path / "without.toml").identity() == load(mixed_run.directory.parent / "mixed.toml").identity()
    run_dir = tmp_path / "run"
    shutil.copytree(mixed_run.directory, run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["scenario"]["paper_values"] = []
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    assert paper_rows(report.load_run(run_dir)).empty
    runner.run(load(mixed_run.directory.parent / "mixed.toml"), run_dir, progress=False)  # nothing to compute
    assert len(paper_rows(report.load_run(run_dir))) == 2


def test_a_papers_mean_is_set_beside_our_mean_with_its_t_interval(mixed_run, tmp_path):
    """A paper that averages its runs (Blum & Hardt's Fig. 3: 5) is compared with our mean, not our median."""
    from scipy import stats

    run_dir = tmp_path / "run"
    shutil.copytree(mixed_run.directory, run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["scenario"]["paper_values"] = [{"source": "P", "where": {"mechanism": "kaggle", "attack": "boosting"},
                                             "measure": "final_public_mean", "value": 0.45, "note": ""}]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    run = report.load_run(run_dir)
    (row,) = paper_rows(run).itertuples()
    values = run.results[(run.results.cell == row.cell) & (run.results.status == "ok")].final_public.to_numpy()
    assert len(values) == 2 and values[0] != values[1]
    assert row.ours_median == pytest.approx(values.mean(), abs=1e-15)
    expected = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert (row.ours_lo, row.ours_hi) == pytest.approx(expected, rel=1e-12)
    assert row.difference == pytest.approx(values.mean() - 0.45, abs=1e-15)


def test_a_mean_is_a_measure_a_paper_value_may_name_and_an_average_is_not(tmp_path):
    head = MIXED.split("[[paper_values]]")[0]
    entry = 'source = "P"\nvalue = 0.5\nwhere = { mechanism = "kaggle", attack = "boosting" }\n'
    (tmp_path / "mean.toml").write_text(f'{head}[[paper_values]]\n{entry}measure = "final_public_mean"\n')
    assert load(tmp_path / "mean.toml").paper_values[0].measure == "final_public_mean"
    (tmp_path / "average.toml").write_text(f'{head}[[paper_values]]\n{entry}measure = "final_public_average"\n')
    with pytest.raises(ScenarioError, match=r"measure 'final_public_average' is not a column .*final_public_mean"):
        load(tmp_path / "average.toml")


def test_the_compact_report_sets_the_papers_values_beside_ours(mixed_run):
    """What ``ladderlab run`` prints for a paper's scenario shows the comparison, not only --format text."""
    compact = report_formats.compact_text(mixed_run)
    rows = paper_rows(mixed_run)
    assert "against the papers:" in compact
    for source, paper, ours in zip(rows.source, rows.paper, rows.ours_median):
        block = compact.split(source, 1)[1].splitlines()[1]
        assert f"{paper:.4f}" in block and f"{ours:.4f}" in block
    assert max(len(line) for line in compact.splitlines()) <= 120  # a competition's long heading wrapped too


# --- the competition report --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_competition_only_report_reads_like_one_in_a_browser(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    image = pytest.importorskip("PIL.Image")
    (tmp_path / "competition.toml").write_text('schema_version = 1\nname = "competition-only"\nreplications = 2\n'
                                               + TINY_COMPETITION)
    runner.run(load(tmp_path / "competition.toml"), tmp_path / "run", progress=False)
    page_file, screen = tmp_path / "report.html", tmp_path / "first-screen.png"
    assert main(["report", str(tmp_path / "run"), "--html", str(page_file)]) == 0
    with browser_page(sync_api, width=1280, height=800) as page:
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(screen))
        text = page.inner_text("body")
        first_screen = page.evaluate("""() => Array.from(document.querySelectorAll('h2, table')).filter(
            e => e.getBoundingClientRect().top < window.innerHeight).map(e => e.tagName === 'H2' ? e.textContent : 'table')""")
        cells = page.evaluate("Array.from(document.querySelectorAll('td')).map(td => td.textContent)")
        wide = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        summary = "#competitions + p + p + div table"
        page.click(f"{summary} th:has-text('Spearman') button")
        ascending = page.evaluate(f"Array.from(document.querySelectorAll('{summary} tbody tr')).map(r => "
                                  "Number(r.cells[2].dataset.key))")
        page.click(f"{summary} th:has-text('Spearman') button")
        descending = page.evaluate(f"Array.from(document.querySelectorAll('{summary} tbody tr')).map(r => "
                                   "Number(r.cells[2].dataset.key))")
        images = page.evaluate("Array.from(document.images).map(i => i.complete && i.naturalWidth > 100)")
        problems, requests = page.problems, page.requests
    assert "What ran" in first_screen and "Competitions" in first_screen and "table" in first_screen
    assert "3 of 3 competition cells finished" in text and "6 × progressive-analyst" in text
    assert "0 of 0" not in text and "No plots" not in text and "No finished" not in text
    assert not any("{" in cell or "}" in cell for cell in cells) and "{" not in text  # parameters as words, not JSON
    assert not wide
    assert ascending == sorted(ascending) and descending == sorted(ascending, reverse=True) and len(ascending) == 3
    assert images == [True, True, True]
    assert problems == [] and all(url.startswith(("file:", "data:")) for url in requests)
    pixels = np.asarray(image.open(screen).convert("L"), dtype=float)
    assert pixels.shape == (800, 1280)
    assert (pixels < 128).mean() > 0.02  # text and table rules on the first screen, not a blank page
    assert (pixels[:100] < 128).any()  # the title at the top


def test_compact_labels_note_only_what_every_row_shares():
    frame = pd.DataFrame({"attack": ["boosting"] * 2, "attack_params": [
        json.dumps({"k": 2000, "variant": "kaggle", "keep_first": "always"}),
        json.dumps({"k": 5000, "variant": "ladder", "keep_first": "below-half"})]})
    assert compact_labels(frame, "attack", width=10) == (
        ["boosting(k=2000, variant=kaggle, keep_first=always)", "boosting(k=5000, variant=ladder, keep_first=below-half)"],
        [])
    frame.loc[1, "attack_params"] = json.dumps({"k": 5000, "variant": "kaggle", "keep_first": "always"})
    assert compact_labels(frame, "attack", width=10) == (
        ["boosting(k=2000)", "boosting(k=5000)"], ["boosting: variant=kaggle, keep_first=always"])
