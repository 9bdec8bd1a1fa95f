"""The organiser's challenge as a task: what an attack sees, identity and staleness, and
``certify --challenge`` agreeing with serve's certificate check."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladderlab.certification import certify
from ladderlab.certification import challenge as challenges
from ladderlab.certification.challenge_certify import certify_challenge
from ladderlab.certification.challenge_certify import (
    task_families as challenge_families,
)
from ladderlab.certification.challenge_task import ChallengeTask, load_challenge
from ladderlab.cli.commands import main
from ladderlab.registry import TASKS
from ladderlab.runs import runner, scenario
from ladderlab.runs.rundir import StaleCellsError
from ladderlab.tasks import PublicData, Split
from ladderlab.testing import (
    ConformanceError,
    check_leaves_global_rng_alone,
    check_task,
    check_task_public_data_hold_no_labels,
    check_task_same_seed_same_split,
    check_task_split_is_consistent,
    parametrize_checks,
)
from tests.helpers import VERSION_1_CERTIFICATE, assert_one_line_error
from tests.serve_helpers import write_challenge

SMALL = {"correlated-feature-selection": {"n": 100, "d": 50}}
"""Parameters that keep a built-in task's conformance checks to milliseconds."""
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "breast-cancer" / "challenge.toml"
PASSING = {"attacks": ["boosting"], "default_battery": False, "replications": 100, "tau": 0.5, "epsilon": 0.5,
           "honest_replications": 2}
"""A battery the Ladder passes quickly at a budget of 3: one attack, wide thresholds (half the constant
prediction's loss: on 100 public rows the sampling noise of three guesses alone reaches a quarter of it
in more than a tenth of contests)."""


def _scenario_file(folder: Path, challenge: str, replications: int = 2) -> Path:
    path = folder / "scenario.toml"
    path.write_text(f"""schema_version = 1
name = "own"
replications = {replications}
seed = 3

[[matrix]]
tasks = [{{ id = "challenge", params = {{ path = "{challenge}" }} }}]
mechanisms = [{{ id = "ladder" }}]
attacks = [{{ id = "boosting", params = {{ k = 20 }}, budget = 20 }}]
""")
    return path


def _example_with_total(folder: Path, total: int) -> Path:
    """A copy of the shipped example whose teams may submit ``total`` times (its data unchanged)."""
    copy = shutil.copytree(EXAMPLE.parent, folder / "breast-cancer")
    path = copy / "challenge.toml"
    path.write_text(path.read_text().replace("\ntotal = 30 ", f"\ntotal = {total} "))
    assert load_challenge(path)[0].per_team_budget() == total
    return path


def _features_challenge(folder: Path, labels: np.ndarray, scorer: str, extra: str = "") -> Path:
    """A challenge with training data and holdout inputs (the same features whatever ``labels``)."""
    path = write_challenge(folder, n=labels.size, scorer=scorer, extra=extra)
    table = pd.read_csv(folder / "labels.csv")
    table["label"] = labels
    table.to_csv(folder / "labels.csv", index=False)
    features = np.random.default_rng(11).normal(size=(labels.size + 30, 3)).round(4)
    pd.DataFrame({"id": table.id, "x0": features[:labels.size, 0], "x1": features[:labels.size, 1],
                  "x2": features[:labels.size, 2]}).to_csv(folder / "holdout.csv", index=False)
    pd.DataFrame({"x0": features[labels.size:, 0], "x1": features[labels.size:, 1], "x2": features[labels.size:, 2],
                  "label": labels[:30]}).to_csv(folder / "train.csv", index=False)
    path.write_text(path.read_text().replace("[labels]", '[data]\ntrain = "train.csv"\nholdout = "holdout.csv"\n\n[labels]'))
    return path


KINDS = {
    "binary": ("zero-one", lambda rng, n: rng.integers(0, 2, n).astype(float), ""),
    "multiclass": ("multiclass-log-loss", lambda rng, n: rng.integers(0, 4, n).astype(float),
                   "prediction_range = [0.01, 0.99]"),
    "regression": ("squared", lambda rng, n: rng.normal(size=n).round(3), "prediction_range = [-3.0, 3.0]"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_the_public_data_are_the_same_whatever_the_holdout_labels(tmp_path, kind, seed):
    scorer, draw, extra = KINDS[kind]
    rng = np.random.default_rng(seed)
    labels = draw(rng, 60)
    other = labels.copy()
    other[30:] = draw(rng, 30)  # other holdout labels, the same training labels (the first 30) and features
    first = ChallengeTask(str(_features_challenge(tmp_path / f"{seed}a", labels, scorer, extra))).split(rng)
    second = ChallengeTask(str(_features_challenge(tmp_path / f"{seed}b", other, scorer, extra))).split(rng)
    assert {field.name for field in dataclasses.fields(PublicData)} == {
        "X_train", "y_train", "X_holdout", "task_type", "scorer", "classes", "public_rows", "prediction_range"}
    for field in dataclasses.fields(PublicData):
        mine, theirs = getattr(first.public, field.name), getattr(second.public, field.name)
        assert np.array_equal(mine, theirs) if isinstance(mine, np.ndarray) else mine == theirs, field.name
    assert first.public.public_rows is None and first.public.X_holdout.shape == (60, 3)
    check_task_public_data_hold_no_labels(ChallengeTask(str(tmp_path / f"{seed}a" / "test.toml")))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_challenge_task_passes_the_task_checks(tmp_path, kind):
    scorer, draw, extra = KINDS[kind]
    check_task(ChallengeTask(str(_features_challenge(tmp_path, draw(np.random.default_rng(0), 60), scorer, extra))))


BUILT_IN_TASKS = [TASKS.make(task_id, **SMALL.get(task_id, {})) for task_id in sorted(TASKS.builtins())
                  if task_id != ChallengeTask.id]


@parametrize_checks(*BUILT_IN_TASKS, TASKS.make("challenge", path=str(EXAMPLE)))
def test_every_built_in_task_conforms(plugin, check):
    check(plugin)


THRESHOLD = TASKS.get(str(Path(__file__).resolve().parent.parent / "examples" / "threshold_task.py") + ":NoisyThreshold")


class Unseeded(THRESHOLD):
    def split(self, rng: np.random.Generator) -> Split:
        return super().split(np.random.default_rng())


class Overlapping(THRESHOLD):
    def split(self, rng: np.random.Generator) -> Split:
        honest = super().split(rng)
        return dataclasses.replace(honest, final_rows=honest.public_rows)


class GlobalDraw(THRESHOLD):
    def split(self, rng: np.random.Generator) -> Split:
        np.random.standard_normal()
        return super().split(rng)


@pytest.mark.parametrize(("task", "check", "rule"), [
    (Unseeded(), check_task_same_seed_same_split, "same seed"),
    (Overlapping(), check_task_split_is_consistent, "overlap"),
    (GlobalDraw(), check_leaves_global_rng_alone, "global random state"),
])
def test_the_task_checks_catch_a_broken_task(task, check, rule):
    check(THRESHOLD())
    with pytest.raises(ConformanceError, match=rule):
        check(task)


def test_the_task_check_catches_public_data_that_hold_the_labels(tmp_path):
    class Leaky(ChallengeTask):
        def split(self, rng: np.random.Generator) -> Split:
            honest = super().split(rng)
            public = dataclasses.replace(honest.public, X_holdout=honest.y_holdout[:, None])
            return dataclasses.replace(honest, public=public)

    with pytest.raises(ConformanceError, match="hold the holdout labels"):
        check_task_public_data_hold_no_labels(Leaky(str(write_challenge(tmp_path))))


def test_the_identity_is_the_data_not_the_place(tmp_path):
    shutil.copytree(EXAMPLE.parent, tmp_path / "copy")
    here, there = ChallengeTask(str(EXAMPLE)), ChallengeTask(str(tmp_path / "copy" / "challenge.toml"))
    assert here.identity_params() == there.identity_params()
    labels = tmp_path / "copy" / "labels.csv"
    labels.write_text(labels.read_text().replace("p001,1,", "p001,0,", 1))
    assert here.identity_params() != there.identity_params()
    with pytest.raises(ValueError, match="sha256.*have changed"):
        ChallengeTask(str(labels.parent / "challenge.toml"), sha256=here.data_fingerprint()).validate_params()


def test_run_plays_a_challenge_named_relative_to_the_scenario_and_resumes_or_refuses_edited_labels(tmp_path):
    challenge = write_challenge(tmp_path / "mine", n=100)
    path = _scenario_file(tmp_path, "mine/test.toml")
    assert main(["--quiet", "run", str(path), "--out", str(tmp_path / "run")]) == 0
    table = pq.read_table(next((tmp_path / "run" / "cells").glob("*.parquet"))).to_pandas()
    assert (table.status == "ok").all() and (table.submissions > 0).all()
    assert main(["--quiet", "run", str(path), "--out", str(tmp_path / "run")]) == 0  # unchanged: resumes
    labels = pd.read_csv(challenge.parent / "labels.csv")
    labels.loc[0, "label"] = 1 - labels.loc[0, "label"]
    labels.to_csv(challenge.parent / "labels.csv", index=False)
    with pytest.raises(StaleCellsError, match="task 'challenge'"):
        runner.run(scenario.load(path), tmp_path / "run")


def test_the_same_seed_gives_the_same_transcript_from_a_moved_copy(tmp_path):
    write_challenge(tmp_path / "a" / "data", n=100)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    tables = []
    for folder in ("a", "b"):
        path = _scenario_file(tmp_path / folder, "data/test.toml")
        runner.run(scenario.load(path), tmp_path / folder / "run")
        table = pq.read_table(next((tmp_path / folder / "run" / "cells").glob("*.parquet"))).to_pandas()
        tables.append(table[["released", "final", "delta", "leaderboard_error"]])
    assert tables[0].astype(str).equals(tables[1].astype(str))


@pytest.fixture(scope="module")
def tiny_certificate(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    path = write_challenge(folder, n=200, rules="total = 3")
    out = folder / "ladder.json"
    assert main(["--quiet", "certify", "ladder", "--challenge", str(path), "--attack", "boosting", "--only",
                 "--tau", "0.5", "--epsilon", "0.5", "--replications", "100", "--run-dir", str(folder / "battery"),
                 "--out", str(out)]) == 0
    return path, json.loads(out.read_text())


@pytest.mark.slow
def test_a_certificate_made_for_a_challenge_is_about_its_data(tiny_certificate):
    path, certificate = tiny_certificate
    loaded = challenges.load(path)
    assert certificate["n"] == 100 == loaded.split.public_rows.size
    assert certificate["budgets"] == [3] == [loaded.per_team_budget()]
    assert certificate["params"]["eta"] == 0.01  # the challenge's own parameters
    assert certificate["challenge"]["task_identity"] == loaded.task_identity()
    assert certificate["challenge"]["scorer"] == "zero-one" and certificate["safe_budget"] == 3
    assert {row["worst_task"] for row in certificate["battery"]} == {"challenge"}


def test_serve_accepts_the_certificate_for_its_challenge_only(tiny_certificate, tmp_path):
    source, _ = tiny_certificate
    shutil.copytree(source.parent, tmp_path, dirs_exist_ok=True)
    path = tmp_path / source.name
    path.write_text(path.read_text().replace("[mechanism]", '[mechanism]\ncertificate = "ladder.json"'))
    assert challenges.certificate_problems(challenges.load(path)) == []
    path.write_text(path.read_text().replace('scorer = "zero-one"', 'scorer = "accuracy"'))
    assert ["scorer 'zero-one'" in problem for problem in challenges.certificate_problems(challenges.load(path))] == [True]
    path.write_text(path.read_text().replace('scorer = "accuracy"', 'scorer = "zero-one"'))
    labels = pd.read_csv(tmp_path / "labels.csv")
    labels.loc[3, "label"] = 1 - labels.loc[3, "label"]
    labels.to_csv(tmp_path / "labels.csv", index=False)
    assert ["other data" in problem for problem in challenges.certificate_problems(challenges.load(path))] == [True]


def test_the_shipped_example_is_a_public_data_set_with_its_sizes():
    loaded, _ = load_challenge(EXAMPLE)
    public = loaded.split.public
    assert (loaded.split.public_rows.size, loaded.split.final_rows.size, public.X_train.shape, public.X_holdout.shape) == (
        200, 200, (169, 30), (400, 30))
    assert loaded.per_team_budget() == 30 and "CC BY 4.0" in (EXAMPLE.parent / "README.md").read_text()


def test_the_shipped_certificate_covers_the_shipped_example():
    assert challenges.certificate_problems(load_challenge(EXAMPLE)[0]) == []


def test_what_an_organiser_copies_from_the_example_allows_what_its_certificate_found_safe():
    """The example's rules, its default honest participant, its README and own-challenge.md all
    say the safe budget of the shipped certificate (re-certify, and they must follow)."""
    shipped = json.loads((EXAMPLE.parent / "ladder.json").read_text())
    safe, page = shipped["safe_budget"], (EXAMPLE.parents[2] / "docs" / "own-challenge.md").read_text()
    loaded, _ = load_challenge(EXAMPLE)
    assert loaded.spec.rules.total == loaded.per_team_budget() == safe == shipped["challenge"]["per_team_budget"]
    assert [entry["participant"] for entry in shipped["honest"]] == [f"improving(days={safe})"]
    assert f"finds {safe} submissions a team safe" in (EXAMPLE.parent / "README.md").read_text()
    assert page.count(f"`total = {safe}`") == 2 and f"`improving(days={safe})` here" in page


def test_certify_on_the_shipped_example_uses_its_n_budget_and_scorer(tmp_path):
    certificate = certify_challenge(EXAMPLE, attacks=["boosting(k=30)"], default_battery=False, replications=8,
                                    honest_replications=1, run_dir=tmp_path)
    assert (certificate["mechanism"], certificate["n"], certificate["budgets"]) == ("ladder", 200, [30])
    assert certificate["challenge"]["task_identity"] == load_challenge(EXAMPLE)[1]
    assert certificate["families"]["honest"]["task"] == "challenge"


def _fixed(families: dict[str, dict]) -> dict[str, dict]:
    """The challenge's families without resampling: every replication plays the organiser's data."""
    return {name: {**entry, "params": {**entry["params"], "resample": "none"}} if entry["id"] == ChallengeTask.id
            else entry for name, entry in families.items()}


def test_the_deterministic_honest_play_of_a_challenge_is_measured_once_with_the_values_of_twenty(tmp_path):
    """The version-1 certificate of the example (then 30 submissions a team) replayed the honest
    participant 20 times on the fixed data; on the same fixed data (a certificate now resamples them),
    one play gives the same numbers, bit for bit, and the certificate says it measured them once."""
    thirty = _example_with_total(tmp_path, 30)
    challenge, identity = load_challenge(thirty)
    families = _fixed(challenge_families(challenge, identity, thirty, [certify.default_honest()]))
    certificate = certify.certify("ladder", {"eta": 0.01}, n=200, budgets=[30], attacks=["boosting(k=30)"],
                                  default_battery=False, replications=8, task_families=families,
                                  honest=["improving(days=30)"], run_dir=tmp_path / "battery")
    shipped = json.loads(VERSION_1_CERTIFICATE.read_text())["honest"]  # a version-1 certificate's one entry
    [honest] = certificate["honest"]
    assert honest["participant"] == shipped["participant"] == "improving(days=30)"
    assert (honest["replications"], honest["deterministic"], shipped["replications"]) == (1, True, 20)
    ranks = ("rank_correlation", "rank_correlation_full_disclosure", "cost")
    assert {key: honest[key] for key in ranks} == {key: shipped[key] for key in ranks}
    unit = certificate["families"]["honest"]["unit_value"]  # the version-1 error is in units of B = 1
    for key in ("lberr", "lberr_full_disclosure"):
        assert honest[key]["median"] * unit == pytest.approx(shipped[key]["median"], rel=1e-12)
    assert "measured once" in certify.markdown(certificate)


@pytest.mark.parametrize(("mechanism", "draws"), [("ladder", False), ("noisy", True), ("ladder-boot", True)])
def test_the_honest_play_counts_as_random_when_the_mechanism_draws(mechanism, draws):
    """Noise (a draw) and LadderBoot's bootstrap (a derived stream) make the honest play random on
    fixed data too; full disclosure beside them draws nothing. A certificate resamples the data, so there
    every honest play is random."""
    challenge, identity = load_challenge(EXAMPLE)
    resampled = challenge_families(challenge, identity, EXAMPLE, [certify.default_honest()])
    specs = [certify.parse_attack("boosting(k=30)")]
    for families, expected in ((_fixed(resampled), {mechanism: draws, "full-disclosure": False}),
                               (resampled, {mechanism: True, "full-disclosure": True})):
        battery = certify.battery_scenario(mechanism, {}, 200, [30], specs, 2, 0, families)
        honest = certify._sorted_battery(battery, mechanism, specs, [30], 200, families).honest
        assert {cell.mechanism[0]: certify._draws_random(cell) for cell in honest} == expected


@pytest.mark.parametrize(("change", "words"), [
    (lambda text: text.replace('scorer = "zero-one"', 'scorer = "zero-one"\nprediction_range = [1.0, 0.0]'),
     ["test.toml", "prediction_range", "low < high"]),
    (lambda text: text.replace('scorer = "zero-one"', 'scorer = "zero-two"'), ["test.toml", "scorer", "zero-two"]),
    (lambda text: text.replace('file = "labels.csv"', 'file = "nowhere.csv"'), ["labels.file", "nowhere.csv"]),
    (lambda text: text.replace("total = 3", ""), ["rules.total", "--budgets"]),
    (lambda text: text.replace('scorer = "zero-one"', 'scorer = "squared"'), ["prediction_range", "unbounded"]),
])
def test_a_bad_challenge_file_is_refused_by_certify_in_one_line_naming_the_key(tmp_path, capsys, change, words):
    path = write_challenge(tmp_path, n=100, rules="total = 3")
    path.write_text(change(path.read_text()))
    assert_one_line_error(capsys, main(["certify", "ladder", "--challenge", str(path), "--run-dir", str(tmp_path / "b")]),
                          words)
    assert not (tmp_path / "b").exists()


def test_certify_refuses_options_the_challenge_decides(tmp_path, capsys):
    path = write_challenge(tmp_path, n=100, rules="total = 3")
    assert_one_line_error(capsys, main(["certify", "ladder", "--challenge", str(path), "--n", "50"]), ["--n 50", "challenge"])


@pytest.mark.parametrize("kind", ["multiclass", "regression"])
def test_certify_plays_multiclass_and_regression_challenges(tmp_path, kind):
    scorer, draw, extra = KINDS[kind]
    path = _features_challenge(tmp_path / "data", draw(np.random.default_rng(1), 120), scorer, extra)
    path.write_text(path.read_text().replace("per_day = 1000", "total = 10"))
    certificate = certify_challenge(path, attacks=["hill-climbing"], default_battery=False, replications=8,
                                    honest_replications=1, run_dir=tmp_path / "battery")
    assert (certificate["n"], certificate["budgets"], certificate["challenge"]["scorer"]) == (60, [10], scorer)
    assert certificate["challenge"]["prediction_range"] == list(load_challenge(path)[0].split.public.prediction_range)
    assert [row["verdict"] != "did not play" for row in certificate["battery"]] == [True]


def test_the_battery_directory_holds_the_certificate_about_the_challenge_and_its_report_renders(tmp_path):
    """The copy certify leaves beside its battery (which ``ladderlab report`` reads) is the whole
    certificate: the challenge it was made for, its scorer, the file as the organiser named it."""
    returned = certify_challenge(EXAMPLE, attacks=["boosting(k=10)"], default_battery=False, replications=8,
                                 honest_replications=1, run_dir=tmp_path / "battery")
    stored = json.loads((tmp_path / "battery" / "certificate.json").read_text())
    assert stored["challenge"] == returned["challenge"] and stored["families"] == returned["families"]
    assert stored["families"]["challenge"]["scorer"] == "zero-one"
    assert main(["report", str(tmp_path / "battery"), "--format", "markdown", "--out", str(tmp_path / "r.md")]) == 0
    assert "| challenge | the challenge breast-cancer scored by zero-one" in (tmp_path / "r.md").read_text()


def test_certify_and_serve_read_class_names_alike_and_a_renaming_voids_the_certificate(tmp_path):
    path = write_challenge(tmp_path, n=400, rules="total = 3")
    labels = pd.read_csv(tmp_path / "labels.csv")
    labels.assign(label=labels.label.map({0.0: "dog", 1.0: "cat"})).to_csv(tmp_path / "labels.csv", index=False)
    certificate = certify_challenge(path, attacks=["boosting(k=10)"], default_battery=False, replications=100,
                                    honest_replications=1, tau=0.5, epsilon=0.5, run_dir=tmp_path / "battery")
    assert certificate["challenge"]["class_names"] == ["cat", "dog"] == list(challenges.load(path).class_names)
    (tmp_path / "ladder.json").write_text(json.dumps(certificate))
    path.write_text(path.read_text().replace("[mechanism]", '[mechanism]\ncertificate = "ladder.json"'))
    assert challenges.certificate_problems(challenges.load(path)) == []
    labels.assign(label=labels.label.map({0.0: "cat", 1.0: "dog"})).to_csv(tmp_path / "labels.csv", index=False)
    assert ["other data" in problem for problem in challenges.certificate_problems(challenges.load(path))] == [True]


def test_an_honest_participant_beyond_a_teams_budget_is_refused_before_the_battery(tmp_path):
    with pytest.raises(ValueError, match=r"--honest improving\(days=31\): makes 31 submissions, more than a team's "
                                         "budget of 30"):
        certify_challenge(EXAMPLE, attacks=["boosting(k=30)"], default_battery=False, honest=["improving(days=31)"],
                          run_dir=tmp_path / "battery")
    assert not (tmp_path / "battery").exists()


def test_an_honest_participant_of_the_challenge_file_beyond_a_teams_budget_is_refused_naming_the_file(tmp_path, capsys):
    path = _example_with_total(tmp_path, 10)
    path.write_text(path.read_text() + '\n[certify]\nhonest = ["improving(days=11)"]\n')
    assert_one_line_error(capsys, main(["certify", "ladder", "--challenge", str(path), "--run-dir", str(tmp_path / "b")]),
                          [f"{path}: certify.honest improving(days=11): makes 11 submissions", "budget of 10"])
    assert not (tmp_path / "b").exists()


def test_a_certificate_of_another_honest_participant_does_not_cover_the_challenge(tmp_path):
    """Certified with --honest improving(days=5): the example's own (a submission a day up to its
    budget of 30) is not what the certificate measured, so serve's check names it; the certificate
    records its participant."""
    certificate = certify_challenge(EXAMPLE, attacks=["boosting(k=10)"], default_battery=False, replications=8,
                                    honest=["improving(days=5)"], run_dir=tmp_path / "battery")
    [honest] = certificate["honest"]
    assert (honest["participant"], honest["params"]["days"], certificate["honest"][0]["deterministic"]) == (
        "improving(days=5)", 5, False)
    [shipped] = json.loads((EXAMPLE.parent / "ladder.json").read_text())["honest"]
    assert shipped["participant"] == "improving(days=30)"
    assert honest["rank_correlation"] != shipped["rank_correlation"]  # five days rank otherwise than thirty
    certify.write_certificate(certificate, tmp_path / "ladder.json")
    challenge_file = tmp_path / "challenge.toml"
    challenge_file.write_text(EXAMPLE.read_text().replace('file = "labels.csv"', f'file = "{EXAMPLE.parent}/labels.csv"')
                              .replace('"train.csv"', f'"{EXAMPLE.parent}/train.csv"')
                              .replace('"holdout.csv"', f'"{EXAMPLE.parent}/holdout.csv"'))
    problems = challenges.certificate_problems(challenges.load(challenge_file))
    assert ["with improving(days=5); this challenge's are improving(days=30) (the default for its schedule)" in problem
            for problem in problems].count(True) == 1
