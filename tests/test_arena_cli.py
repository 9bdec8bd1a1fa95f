"""``ladderlab arena``: rate, robustness, simulate, list and sweep as a user runs them, with one-line errors."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from ladderlab.arena.sweep import load
from ladderlab.cli.commands import main
from ladderlab.runs.page_stamps import stamps_in
from tests.test_arena_rating import DATA, FIXTURE

BATTLES = str(DATA / "fastchat-battles.csv")


def test_rate_prints_fastchats_ratings_in_every_format(capsys, tmp_path):
    assert main(["arena", "rate", BATTLES, "--format", "json", "--bootstrap", "20"]) == 0
    records = json.loads(capsys.readouterr().out)
    by_model = {row["model"]: row for row in records["ratings"]}
    assert max(abs(by_model[m]["rating"] - e["rating"]) for m, e in FIXTURE["models"].items()) <= 0.05
    assert records["anchor"] == ["mixtral-8x7b-instruct-v0.1", 1114.0] and records["bootstrap_rounds"] == 20
    assert main(["arena", "rate", BATTLES, "--format", "csv", "--bootstrap", "0", "--out", str(tmp_path / "r.csv")]) == 0
    table = pd.read_csv(tmp_path / "r.csv")
    assert list(table.columns) == ["model", "rating", "num_battles"] and len(table) == 40
    assert main(["arena", "rate", BATTLES, "--top", "3", "--bootstrap", "10"]) == 0
    text = capsys.readouterr().out
    assert all(len(line) <= 120 for line in text.splitlines()) and "Chatbot" in text


def test_rate_with_another_anchor_or_none_shifts_every_rating_alike(capsys):
    ratings = {}
    for option in (["--no-anchor"], ["--anchor", "p00-model-015=1500"]):
        assert main(["arena", "rate", BATTLES, "--bootstrap", "0", "--format", "json", *option]) == 0
        ratings[option[0]] = {row["model"]: row["rating"] for row in json.loads(capsys.readouterr().out)["ratings"]}
    shift = {m: ratings["--anchor"][m] - ratings["--no-anchor"][m] for m in ratings["--anchor"]}
    assert ratings["--anchor"]["p00-model-015"] == pytest.approx(1500)
    assert max(shift.values()) - min(shift.values()) < 1e-9


@pytest.mark.parametrize(("arguments", "message"), [
    (["rate", "missing.csv"], "missing.csv: no such file"),
    (["rate", BATTLES, "--anchor", "nobody=1000"], "--anchor nobody=1000: 'nobody' fought no battle"),
    (["rate", BATTLES, "--anchor", "1000"], "--anchor 1000: give MODEL=RATING"),
    (["rate", BATTLES, "--anonymous-only"], "needs a column 'anony'"),
    (["robustness", BATTLES, "--challengers", "0"], "argument --challengers: must be a whole number ≥ 1"),
    (["simulate", "--out", "x.txt"], "--out x.txt: name a battles file ending in"),
    (["simulate", "--out", "x.csv", "--family", "pairwise(models=1)"], "--family pairwise(models=1): "),
    (["list", "mechanisms"], "'mechanisms' is none of policies, attacks, families"),
])
def test_a_mistake_is_one_line_naming_it(arguments, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["arena", *arguments]) == 2
    error = capsys.readouterr().err
    assert message in error and len(error.strip().splitlines()) == 1


def test_a_table_without_a_winner_column_says_which_columns_it_has(tmp_path, capsys):
    path = tmp_path / "b.csv"
    pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "result": ["model_a"]}).to_csv(path, index=False)
    assert main(["arena", "rate", str(path)]) == 2
    assert "no column 'winner' (columns found: model_a, model_b, result)" in capsys.readouterr().err


def test_simulated_battles_with_their_truth_read_back_as_a_battles_file(tmp_path, capsys):
    out, truth = tmp_path / "sim.jsonl", tmp_path / "truth.csv"
    assert main(["arena", "simulate", "--out", str(out), "--family", "pairwise(models=8, battles=3000, lifetime=0.6)",
                 "--truth", str(truth), "--seed", "3"]) == 0
    capsys.readouterr()
    assert main(["arena", "rate", str(out), "--anonymous-only", "--solver", "exact", "--bootstrap", "0", "--format", "json",
                 "--no-anchor"]) == 0
    rated = {row["model"]: row["rating"] for row in json.loads(capsys.readouterr().out)["ratings"]}
    strength = pd.read_csv(truth).set_index("model").strength
    assert len(rated) == 8 and pd.Series(rated).corr(strength) > 0.9


def test_robustness_names_the_votes_and_the_new_top_model(capsys):
    assert main(["arena", "robustness", BATTLES, "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["new_top_model"] != found["winner"] and found["lower_bound"] <= found["fewest_votes"]
    assert sum(row["count"] for row in found["removed"]) == found["fewest_votes"]


def test_list_names_the_arena_plugins(capsys):
    assert main(["arena", "list"]) == 0
    listed = capsys.readouterr().out
    for name in ("plain-board", "provisional", "variant-cap", "margin-rule", "upset-filter", "best-of-n-variants",
                 "vote-rigging", "sampling-advantage", "pairwise"):
        assert f"  {name} " in listed


SWEEP = """
name = "tiny"
source = "a test"
replications = 6
seed = 2
tau = 15.0

[family]
id = "pairwise"
params = { models = 10, providers = 2, battles = 2000 }

[[table]]
title = "best of N"
policies = [{ id = "plain-board" }, { id = "variant-cap", params = { max_variants = 2 } }]
attack = { id = "best-of-n-variants", params = { n_variants = [1, 4], battles_per_variant = 300 } }

[[paper]]
what = "a number"
value = "4"
where = "here"
"""


def test_a_sweep_writes_its_page_and_figure_with_its_stamp(tmp_path):
    (tmp_path / "tiny.toml").write_text(SWEEP)
    page = tmp_path / "tiny.md"
    assert main(["arena", "sweep", str(tmp_path / "tiny.toml"), "--write", str(page)]) == 0
    text = page.read_text()
    stamp = stamps_in(text)[0]
    assert stamp["command"].startswith("ladderlab arena sweep") and "arena policy:variant-cap" in stamp["code"]
    assert "| a number | 4 | here |" in text and text.count("| plain-board |") == 2 and (tmp_path / "tiny.png").stat().st_size
    assert "| variant-cap(max_variants=2) | n_variants=4, battles_per_variant=300 | 6 |" in text


@pytest.mark.parametrize(("change", "message"), [
    (("replications = 6", "replications = 0"), "tiny.toml: replications: a whole number ≥ 1"),
    (('title = "best of N"', 'title = "best of N"\ncolour = 1'), "tiny.toml: table[0]: unknown key 'colour'"),
    (("max_variants = 2", "max_variants = 0"), "tiny.toml: table[0].policies[1]: variant-cap: parameter 'max_variants'"),
    (("n_variants = [1, 4]", "n_variant = [1, 4]"), "tiny.toml: table[0].attack: unknown parameter of arena attack"),
])
def test_a_sweep_file_mistake_names_its_key(change, message, tmp_path):
    (tmp_path / "tiny.toml").write_text(SWEEP.replace(*change))
    with pytest.raises(ValueError, match=re.escape(message)):
        load(str(tmp_path / "tiny.toml"))


def test_the_built_in_sweep_loads():
    sweep = load("leaderboard-illusion")
    assert [len(table.grid) for table in sweep.tables][:2] == [16, 4] and sweep.paper


def test_the_arena_benchmark_times_every_step_and_writes_its_stamped_page(tmp_path, capsys):
    page = tmp_path / "bench.md"
    assert main(["dev", "bench-arena", "--battles", "20000", "--models", "20", "--jobs", "1", "--write", str(page)]) == 0
    text = page.read_text()
    assert "| 100 bootstrap fits on 1 worker |" in text and "| one fit, a row per battle |" in text
    assert stamps_in(text)[0]["command"] == f"ladderlab dev bench-arena --battles 20000 --models 20 --jobs 1 --write {page}"


@pytest.mark.slow
def test_two_million_battles_over_250_models_are_rated_within_thirty_seconds_on_two_cores():
    from ladderlab.dev.arena_benchmark import TARGET_SECONDS, measure

    assert measure(2_000_000, 250, 2)["total_wall"] <= TARGET_SECONDS
