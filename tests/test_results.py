"""The results pages (docs/results) are what their runs give: each page is rendered from its data
file, a number edited on a page fails the check, and the quickstart page's data are what a fresh
quickstart run gives."""

import json
import shutil
from pathlib import Path, PurePath

import pytest

from ladderlab.cli.commands import main
from ladderlab.dev.results_pages import (
    PageSpec,
    caveats,
    check,
    load_pages,
    page_data,
    run_command,
)

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "docs" / "results"


def test_every_results_page_is_what_its_data_file_gives():
    assert check(FOLDER, ROOT / "mkdocs.yml") == []


def test_a_number_edited_on_a_page_fails_the_check(tmp_path):
    folder = tmp_path / "docs" / "results"
    shutil.copytree(FOLDER, folder)
    page = folder / "quickstart.md"
    text = page.read_text()
    number = next(part for part in text.split() if part.startswith("-0.0"))
    page.write_text(text.replace(number, number[:-1] + str((int(number[-1]) + 1) % 10), 1))
    problems = check(folder, nav=None)
    assert len(problems) == 1 and problems[0].startswith(f"{page}: differs from what data/quickstart.json gives")


def _without_wall_times(value):
    """``value`` without wall times, its floats to 12 significant digits: the shipped page was made on
    another machine, whose BLAS kernels may round a regression's last bits otherwise."""
    if isinstance(value, dict):
        return {key: _without_wall_times(item) for key, item in value.items() if "wall_time" not in key}
    if isinstance(value, list):
        return [_without_wall_times(item) for item in value]
    if isinstance(value, float):
        return float(f"{value:.12g}")
    return value


def test_the_quickstart_page_holds_what_a_quickstart_run_gives(quickstart_run):
    spec = next(spec for spec in load_pages(FOLDER) if spec.name == "quickstart")
    shipped = json.loads((FOLDER / "data" / "quickstart.json").read_text())
    fresh = json.loads(json.dumps(page_data(spec, quickstart_run)))
    assert _without_wall_times(fresh["sections"]) == _without_wall_times(shipped["sections"])
    assert fresh["caveats"] == shipped["caveats"] == [] and fresh["command"] == shipped["command"]


def test_the_pages_file_names_its_problems(tmp_path):
    (tmp_path / "pages.toml").write_text('[[page]]\nname = "a"\ntitle = "A"\ncommand = "c"\nrun = "r"\n' * 2)
    with pytest.raises(ValueError, match=r"pages\.toml: page names listed twice: a"):
        load_pages(tmp_path)
    (tmp_path / "pages.toml").write_text('[[page]]\nname = "a"\ntitle = "A"\ncommand = "c"\nrun = "r"\nabout = 1\n')
    with pytest.raises(ValueError, match=r"pages\.toml: .*about"):
        load_pages(tmp_path)


def test_a_clone_elsewhere_checks_the_shipped_pages(tmp_path, monkeypatch):
    """The pages name their run directories relative to the repository, never where they were built."""
    shutil.copytree(FOLDER, tmp_path / "clone" / "docs" / "results")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "clone")
    monkeypatch.chdir(tmp_path / "clone")
    assert main(["dev", "results", "check"]) == 0
    assert all(not PurePath(spec.run).is_absolute() for spec in load_pages(FOLDER))
    (tmp_path / "pages.toml").write_text('[[page]]\nname = "a"\ntitle = "A"\ncommand = "c"\nrun = "/home/me/runs/a"\n')
    with pytest.raises(ValueError, match=r"pages\.toml: page\.0\.run: .*'/home/me/runs/a'"):
        load_pages(tmp_path)


def test_a_smaller_run_is_labelled_and_its_own_command_named():
    certify = PageSpec(name="c", title="C", command="ladderlab certify kaggle --replications 100 --run-dir runs/c",
                       run="runs/c")
    scenario = PageSpec(name="s", title="S", command="ladderlab run chaibub-neto-fig4 --jobs 2", run="runs/s")
    info = {"scenario": "certify-kaggle", "replications": 20, "complete": True}
    assert run_command(certify, info) == "ladderlab certify kaggle --replications 20 --run-dir runs/c"
    assert caveats(certify, info, [])[0].startswith("Smaller run: 20 of the experiment's 100 replications")
    info = {"scenario": "chaibub-neto-fig4", "replications": 100, "complete": False}
    assert run_command(scenario, info) == scenario.command
    assert caveats(scenario, info, ["3 of 12 cells finished"]) == ["Partial run: 3 of 12 cells finished."]
    assert run_command(scenario, {**info, "replications": 7}) == "ladderlab run chaibub-neto-fig4 --jobs 2 --replications 7"
