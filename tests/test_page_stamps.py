"""``ladderlab dev pages``: every generated page says how to regenerate it and records the code its
numbers depend on, so that a page made before that code changed is named stale. Whether the
repository's pages are current is not tested here: pages are regenerated on idle machines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ladderlab.cli.commands import main
from ladderlab.dev import certify_speed, page_survey
from ladderlab.dev.benchmark import CertifyTiming
from ladderlab.runs import page_stamps
from tests.docs_helpers import ROOT, environment

NOT_YET_STAMPED = {  # pages whose command does not stamp them yet, or that were written before it did
    "docs/competition-speed.md": "ladderlab dev bench-competitions writes no stamp yet",
    "docs/isolation.md": "ladderlab dev bench-isolation writes no stamp yet",
    "docs/serve-bench.txt": "ladderlab dev bench-serve writes no stamp yet",
    "docs/kaggle-realistic.md": "ladderlab dev realism writes no stamp yet",
    "docs/roelofs-2019.md": "ladderlab dev realism writes no stamp yet",
    "docs/figures/accounts.txt": "ladderlab dev bench --accounts writes no stamp yet",
    "docs/figures/rank-certificate-competition.txt": "ladderlab stats rank-certificate writes no stamp yet",
    "docs/figures/rank-certificate-synthetic.txt": "ladderlab stats rank-certificate writes no stamp yet",
    "docs/figures/replay-champs.txt": "ladderlab stats replay writes no stamp yet",
    "docs/figures/replay-competition.txt": "ladderlab stats replay writes no stamp yet",
    "docs/figures/replay-synthetic.txt": "ladderlab stats replay writes no stamp yet",
    "docs/certify-speed.md": "rows measured before bench-certify stamped its rows",
    "docs/results/dwork-science-published.md": "a page of published values, built without a run",
    "docs/results/thresholdout.md": "built from an experiment's output, which records no plugins",
    "docs/results/zheng-figure3.md": "built from an experiment's output, which records no plugins",
}


def test_every_generated_page_names_the_command_that_regenerates_it() -> None:
    assert [(state.page, state.part) for state in page_survey.survey(ROOT) if not state.command] == []


def test_every_generated_page_records_its_code_but_those_listed_as_not_yet_stamped() -> None:
    """A page that records nothing to check is listed above with the reason; a page in the list
    that has since been stamped leaves it (the list only shrinks)."""
    unrecorded = {state.page for state in page_survey.survey(ROOT) if state.state == "unrecorded"}
    assert unrecorded == set(NOT_YET_STAMPED)


def _pages(root: Path) -> subprocess.CompletedProcess[str]:
    """``ladderlab dev pages --all`` in a fresh process, as the lead runs it (one process fingerprints
    the code it loaded once)."""
    completed = subprocess.run([sys.executable, "-m", "ladderlab", "dev", "pages", "--all"], cwd=root, env=environment(),
                               capture_output=True, text=True, timeout=300)
    completed.stdout = re.sub(r"( \\)?\n {15}", " ", completed.stdout)  # its lines wrapped at 120 columns, joined
    return completed


@pytest.mark.slow
def test_a_certificate_page_is_current_until_a_byte_of_its_mechanisms_source_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    plugin = tmp_path / "my_mech.py"
    plugin.write_text("from ladderlab.mechanisms.kaggle import Kaggle\n\n\nclass Mine(Kaggle):\n    version = 1\n")
    monkeypatch.chdir(tmp_path)
    command = ["certify", "my_mech.py:Mine", "--n", "20", "--budgets", "5", "--replications", "1", "--only",
               "--attack", "boosting", "--scorer", "zero-one", "--run-dir", "battery",
               "--out", "docs/figures/mine.json"]
    assert main(command) == 0
    (record,) = page_stamps.stamps_in((tmp_path / "docs/figures/mine.md").read_text())
    assert record["command"] == "ladderlab " + " ".join(command)
    assert {"mechanism:my_mech.py:Mine", "attack:boosting", "core:ladderlab.certification.certify"} <= set(record["code"])

    fresh = _pages(tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert "current      docs/figures/mine.md" in fresh.stdout

    plugin.write_text(plugin.read_text() + "    # the same version, another byte\n")
    edited = _pages(tmp_path)
    assert edited.returncode == 1, edited.stderr
    assert "stale        docs/figures/mine.md" in edited.stdout
    assert "changed: mechanism:my_mech.py:Mine" in edited.stdout
    assert f"regenerate: ladderlab {' '.join(command)}" in edited.stdout


def _code_of(mechanism: str) -> dict[str, str]:
    from ladderlab.plugin import fingerprint
    from ladderlab.registry import MECHANISMS

    return page_stamps.code_record({f"mechanism:{mechanism}": fingerprint(MECHANISMS.get(mechanism))}, "certificate")


def test_each_certify_speed_row_is_stamped_with_its_load_and_code_and_kept_when_others_are_measured(
        tmp_path: Path) -> None:
    page = tmp_path / "docs" / "certify-speed.md"
    page.parent.mkdir()
    page.write_text(f"# speed\n{certify_speed.BEGIN}\n{certify_speed.END}\n")
    default = certify_speed.SETTINGS["default"]
    kaggle = CertifyTiming(1, 2.5, 2.25, 7, 0, {"boosting": {"kaggle": 1.5}}, (0.4, 1.6), _code_of("kaggle"))
    certify_speed.write_section(page, certify_speed.table([("kaggle", default, kaggle)], 100, 0))
    ladder_code = _code_of("ladder") | {"mechanism:ladder": "v1:0000000000000000"}
    ladder = CertifyTiming(2, 3.5, 3.25, 9, 0, {"boosting": {"ladder": 2.5}}, (2.0, 3.0), ladder_code)
    section = page.read_text()
    certify_speed.write_section(page, certify_speed.table([("ladder", default, ladder)], 100, 0,
                                                          certify_speed.kept_rows(section),
                                                          certify_speed.kept_stamps(section)))
    assert "load 0.4 → 1.6 |" in page.read_text() and "load 2.0 → 3.0 |" in page.read_text()

    states = {state.part: state for state in page_survey.survey(tmp_path) if state.page == "docs/certify-speed.md"}
    kaggle_row = states["kaggle --n 200 --budgets 100 300 1000 2000 --jobs 1"]
    ladder_row = states["ladder --n 200 --budgets 100 300 1000 2000 --jobs 2"]
    assert (kaggle_row.state, kaggle_row.changed) == ("current", [])
    assert (ladder_row.state, ladder_row.changed) == ("stale", ["mechanism:ladder"])
    assert ladder_row.command == ("ladderlab dev bench-certify --mechanism ladder --setting default --jobs 2 "
                                  "--write docs/certify-speed.md")
    assert len(states) == len(certify_speed.expected_rows())
    assert {state.state for part, state in states.items() if state not in (kaggle_row, ladder_row)} == {"missing"}


def test_a_change_of_a_core_module_alone_is_told_apart_from_a_plugins(tmp_path: Path) -> None:
    code = _code_of("kaggle")
    page = tmp_path / "docs" / "figures" / "x.md"
    page.parent.mkdir(parents=True)
    page.write_text("numbers\n" + page_stamps.stamp("ladderlab certify kaggle", code | {"core:ladderlab.runs.duel": "0"}))
    (state,) = page_survey.survey(tmp_path)
    assert (state.state, state.changed, state.command) == ("core changed", ["core:ladderlab.runs.duel"],
                                                           "ladderlab certify kaggle")


def test_an_unstamped_page_is_checked_by_the_versions_it_records_and_its_documented_command(tmp_path: Path) -> None:
    figures = tmp_path / "docs" / "figures"
    figures.mkdir(parents=True)
    (figures / "old.md").write_text('- wall time 1 s; versions: {"mechanism:kaggle": "1", "attack:boosting": "0"}\n')
    (figures / "older.md").write_text('- wall time 1 s; versions: {"mechanism:kaggle": "1"}\n')
    (tmp_path / "docs" / "page.md").write_text(
        '## Old\n\n`ladderlab certify kaggle --n 20`\n\n--8<-- "docs/figures/old.md"\n\n'
        'Made with `ladderlab certify kaggle --n 30 --out docs/figures/older.json`.\n')
    states = {Path(state.page).name: state for state in page_survey.survey(tmp_path)}
    assert (states["old.md"].state, states["old.md"].changed) == ("stale", ["attack:boosting (v0 → v1)"])
    assert states["old.md"].command == "ladderlab certify kaggle --n 20" and states["old.md"].documented
    assert (states["older.md"].state, states["older.md"].command) == (
        "unverified", "ladderlab certify kaggle --n 30 --out docs/figures/older.json")


def test_pages_outside_a_repository_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", "pages", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"ladderlab: error: --root {tmp_path}: no docs/ folder there "
                                               "(give the repository's root)")
