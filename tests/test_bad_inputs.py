"""A battery of bad inputs over scenario files, the command line and the Python API.

Every case must be refused with the documented error type (``ScenarioError`` / exit
code 2 with one line ``ladderlab: error: …`` / ``ValueError`` or ``TypeError``),
with a message that names the offending key or argument, without a traceback, and
without changing any state (a rejected submission leaves the transcript and the
random stream as they were).
"""

import subprocess
import sys

import numpy as np
import pytest

from ladderlab.attack import Attack
from ladderlab.board import Board, Leaderboard
from ladderlab.cli.commands import main
from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.competition.measures import measures
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs.scenario import ScenarioError, load, preflight
from ladderlab.scoring import ScoreError
from ladderlab.validation import rows_per_block
from tests.helpers import FAST_PARAMS, assert_one_line_error, failing_mechanism

BASE = """
schema_version = 1
name = "battery"
replications = 1
seed = 0

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 50, n_holdout = 150 } }]
mechanisms = [{ id = "kaggle" }]
attacks = [{ id = "boosting", params = { k = 10 } }]
"""
REGRESSION = BASE.replace(
    '{ id = "random-labels", params = { n_public = 50, n_holdout = 150 } }',
    '{ id = "gaussian-regression", params = { n_samples = 60, n_features = 10 } }',
).replace('{ id = "boosting", params = { k = 10 } }', '{ id = "step-forward", params = { iterations = 1 } }')

KAGGLE = '{ id = "kaggle" }'
BOOSTING = '{ id = "boosting", params = { k = 10 } }'
TASK = '{ id = "random-labels", params = { n_public = 50, n_holdout = 150 } }'
GAUSSIAN = '{ id = "gaussian-regression", params = { n_samples = 60, n_features = 10 } }'
STEP = '{ id = "step-forward", params = { iterations = 1 } }'

# (base, text replaced, replacement, words the message must contain)
SCENARIO_CASES = [
    (BASE, "replications = 1", 'replications = "10"', ["replications", "'10'"]),
    (BASE, "replications = 1", "replications = true", ["replications", "True"]),
    (BASE, "replications = 1", "replications = 2.0", ["replications", "2.0"]),
    (BASE, "replications = 1", "replications = 0", ["replications"]),
    (BASE, "replications = 1", "replications = -3", ["replications"]),
    (BASE, "replications = 1", "", ["replications", "required"]),
    (BASE, "replications = 1", "replicatons = 1", ["replicatons", "did you mean 'replications'"]),
    (BASE, "seed = 0", "seed = -1", ["seed"]),
    (BASE, "seed = 0", 'seed = "0"', ["seed", "'0'"]),
    (BASE, "seed = 0", "seed = 1.5", ["seed", "1.5"]),
    (BASE, "schema_version = 1", "schema_version = 2", ["schema_version"]),
    (BASE, 'name = "battery"', 'name = "bat tery"', ["name"]),
    (BASE, 'name = "battery"', "name = 7", ["name"]),
    (BASE, "seed = 0", "seed = = 0", ["not valid TOML"]),
    (BASE, KAGGLE, "", ["mechanisms"]),
    (BASE, KAGGLE, '{ id = "kagle" }', ["kagle", "did you mean 'kaggle'"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = -0.1 } }', ["mechanisms[0].params.alpha", "-0.1"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = nan } }', ["params.alpha", "nan"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = inf } }', ["params.alpha", "inf"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = "high" } }', ["params.alpha", "'high'"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = true } }', ["params.alpha", "True"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = [] } }', ["params.alpha", "empty"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpah = 0.1 } }', ["alpah", "did you mean 'alpha'"]),
    (BASE, KAGGLE, '{ id = "kaggle" }, { id = "kaggle" }', ["matrix[0]", "listed twice"]),
    (BASE, KAGGLE, '{ id = "kaggle" }, { id = "kaggle", params = { alpha = 1e-5 } }', ["listed twice", "defaults included"]),
    (BASE, KAGGLE, '{ id = "kaggle", params = { alpha = [0.1, 0.1] } }', ["listed twice"]),
    (BASE, KAGGLE, '{ id = "ladder", params = { eta = 0 } }', ["params.eta", "0"]),
    (BASE, KAGGLE, '{ id = "ladder", params = { eta = -0.5 } }', ["params.eta", "-0.5"]),
    (BASE, KAGGLE, '{ id = "ladder-t", params = { alpha = 2 } }', ["params.alpha", "2"]),
    (BASE, KAGGLE, '{ id = "ladder-t", params = { critical_value = -1.0 } }', ["params.critical_value", "-1.0"]),
    (BASE, KAGGLE, '{ id = "ladder-boot", params = { b = 0 } }', ["params.b", "0"]),
    (BASE, KAGGLE, '{ id = "ladder-boot", params = { b = 2.5 } }', ["params.b", "2.5"]),
    (BASE, KAGGLE, '{ id = "ladder-boot", params = { b = "10" } }', ["params.b", "'10'"]),
    (BASE, KAGGLE, '{ id = "bayesboot-ladder", params = { B = 0 } }', ["params.B", "0"]),
    (BASE, KAGGLE, '{ id = "bayesboot-ladder", params = { alpha = 1.0 } }', ["params.alpha", "1.0"]),
    (BASE, KAGGLE, '{ id = "bayesboot-ladder", params = { po_threshold = -1.0 } }', ["params.po_threshold", "-1.0"]),
    (BASE, KAGGLE, '{ id = "bayesboot-ladder", params = { initial_prediction = "x" } }', ["params.initial_prediction"]),
    (BASE, KAGGLE, '{ id = "bayesboot-ladder", params = { initial_prediction = [0, 1] } }', ["initial_prediction", "length 2"]),
    (BASE, KAGGLE, '{ id = "bayesboot-ladderboot", params = { b = -1 } }', ["params.b", "-1"]),
    (BASE, BOOSTING, '{ id = "boosting", params = { k = 0 } }', ["attacks[0].params.k", "0"]),
    (BASE, BOOSTING, '{ id = "boosting", params = { k = 10.5 } }', ["params.k", "10.5"]),
    (BASE, BOOSTING, '{ id = "boosting", params = { k = "10" } }', ["params.k", "'10'"]),
    (BASE, BOOSTING, '{ id = "boosting", params = { variant = "kagle" } }', ["params.variant", "did you mean 'kaggle'"]),
    (BASE, BOOSTING, '{ id = "boosting", params = { batch = 0 } }', ["params.batch", "0"]),
    (BASE, BOOSTING, '{ id = "boosting", budget = -1 }', ["budget", "-1"]),
    (BASE, BOOSTING, '{ id = "boosting", budget = 0 }', ["attacks[0].budget", "0"]),
    (BASE, BOOSTING, '{ id = "boosting", budget = "5" }', ["budget", "'5'"]),
    (BASE, BOOSTING, '{ id = "boosting", budget = 2.5 }', ["budget", "2.5"]),
    (BASE, BOOSTING, '{ id = "boosting", oracle = "yes" }', ["oracle", "'yes'"]),
    (BASE, BOOSTING, '{ id = "boosting", oracle = 1 }', ["oracle", "1"]),
    (BASE, BOOSTING, '{ id = "bosting" }', ["bosting", "did you mean 'boosting'"]),
    (BASE, BOOSTING, '{ id = "boosting", colour = "red" }', ["colour"]),
    (BASE, TASK, '{ id = "random-labels", params = { n_public = 0 } }', ["tasks[0].params.n_public", "0"]),
    (BASE, TASK, '{ id = "random-labels", params = { n_public = 200, n_holdout = 150 } }', ["n_public", "n_holdout"]),
    (BASE, TASK, '{ id = "random-labels", params = { n_holdout = "many" } }', ["params.n_holdout", "'many'"]),
    (BASE, TASK, '{ id = "random-labels", params = { scorer = "zero-once" } }', ["params.scorer", "did you mean 'zero-one'"]),
    (BASE, TASK, '{ id = "random-label" }', ["random-label", "did you mean 'random-labels'"]),
    (BASE, "tasks = [" + TASK + "]", "tasks = []", ["tasks"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { preset = "ad-chalenge" } }', ["params.preset", "did you mean 'ad-challenge'"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { rho = 1.0 } }', ["params.rho", "1.0"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { n_samples = 5 } }', ["params.n_samples", "5"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { n_features = 10, n_signal = 40 } }', ["n_signal", "40"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { correlation = "ar2" } }', ["params.correlation", "'ar2'"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { scorer = "squard" } }', ["params.scorer", "did you mean 'squared'"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { mode = "permute" } }', ["params.mode", "did you mean 'permuted'"]),
    (REGRESSION, GAUSSIAN, '{ id = "gaussian-regression", params = { snr = 0 } }', ["params.snr", "0"]),
    (REGRESSION, GAUSSIAN, '{ id = "diabetes", params = { scorer = "zero-one" } }', ["scorer", "regression"]),
    (REGRESSION, GAUSSIAN, '{ id = "diabetes", params = { data_seed = -1 } }', ["params.data_seed", "-1"]),
    (REGRESSION, STEP, '{ id = "step-forward", params = { changepoints = 0 } }', ["params.changepoints", "0"]),
    (REGRESSION, STEP, '{ id = "step-forward", params = { jump = "bin" } }', ["params.jump", "'bin'"]),
    (REGRESSION, STEP, '{ id = "step-forward", params = { iterations = 0 } }', ["params.iterations", "0"]),
    (REGRESSION, STEP, '{ id = "step-forward", params = { repeats = 0 } }', ["params.repeats", "0"]),
    (REGRESSION, STEP, '{ id = "step-forward", params = { rules = "R" } }', ["params.rules", "'R'"]),
    (REGRESSION, STEP, '{ id = "honest", params = { models = ["ridge", "nope"] } }', ["params.models", "'nope'"]),
    (REGRESSION, STEP, '{ id = "honest", params = { models = [] } }', ["params.models", "[]"]),
    (REGRESSION, STEP, '{ id = "freedman", params = { k = 0 } }', ["params.k", "0"]),
    (BASE, BOOSTING, '{ id = "hill-climbing", params = { block = 100000 } }', ["'block' = 100000", "150 holdout rows"]),
    (REGRESSION, STEP, '{ id = "improving", params = { view = 40 } }', ["'view' = 40", "10 features"]),
]


def _scenario(tmp_path, base, old, new):
    assert old in base, old
    path = tmp_path / "battery.toml"
    path.write_text(base.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("base", "old", "new", "words"), SCENARIO_CASES)
def test_bad_scenarios_are_refused_before_anything_runs(tmp_path, base, old, new, words):
    path = _scenario(tmp_path, base, old, new)
    with pytest.raises(ScenarioError) as caught:
        preflight(load(path))
    message = str(caught.value)
    assert "battery.toml" in message
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize(("base", "old", "new", "words"), SCENARIO_CASES[::8])
def test_bad_scenarios_on_the_command_line_are_one_line_errors(tmp_path, capsys, base, old, new, words):
    path = _scenario(tmp_path, base, old, new)
    code = main(["run", str(path), "--out", str(tmp_path / "run")])
    assert_one_line_error(capsys, code, words)
    assert not (tmp_path / "run").exists()


def test_a_list_valued_parameter_is_one_value_not_a_grid(tmp_path):
    path = _scenario(tmp_path, REGRESSION, STEP, '{ id = "honest", params = { models = ["ridge", "knn"] } }')
    from ladderlab.runs.scenario import cells

    (cell,) = cells(load(path))
    assert cell.attack == ("honest", {"models": ["ridge", "knn"]})
    grid = _scenario(tmp_path, REGRESSION, STEP, '{ id = "honest", params = { models = [["ridge"], ["knn"]] } }')
    assert [c.attack[1]["models"] for c in cells(load(grid))] == [["ridge"], ["knn"]]


SYNTAX_ERROR_PLUGIN = "from ladderlab.mechanisms.kaggle import Kaggle\nclass Broken(Kaggle:\n    pass\n"
IMPORT_ERROR_PLUGIN = "raise RuntimeError('this plugin cannot be imported')\n"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("battery")
    path = folder / "ok.toml"
    path.write_text(BASE)
    assert main(["run", str(path), "--out", str(folder / "run")]) == 0
    return folder / "run"


def cli_cases(tmp_path, run_dir):
    good = tmp_path / "good.toml"
    good.write_text(BASE)
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("not a folder")
    syntax = tmp_path / "syntax_error.py"
    syntax.write_text(SYNTAX_ERROR_PLUGIN)
    raising = tmp_path / "raising.py"
    raising.write_text(IMPORT_ERROR_PLUGIN)
    binary_secret = tmp_path / "binary-secret"
    binary_secret.write_bytes(b"\xd8\x01\xff")
    superscript_secret = tmp_path / "superscript-secret"
    superscript_secret.write_text("\u00b2\n")
    return [
        (["frobnicate"], ["frobnicate"]),
        (["run"], ["scenario"]),
        (["run", "no-such-scenario"], ["no-such-scenario"]),
        (["run", str(tmp_path / "typo.toml")], ["typo.toml", "no such scenario file"]),
        (["run", str(good), "--jobs", "0"], ["--jobs", "'0'"]),
        (["run", str(good), "--jobs", "two"], ["--jobs", "'two'"]),
        (["run", str(good), "--replications", "0"], ["--replications", "'0'"]),
        (["run", str(good), "--replications", "2.5"], ["--replications", "'2.5'"]),
        (["run", str(good), "--backend", "spark"], ["--backend", "'spark'"]),
        (["run", str(good), "--scheduler", "tcp://127.0.0.1:1"], ["--scheduler", "--backend dask"]),
        (["run", str(good), "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1"], ["--scheduler", "cannot reach"]),
        (["run", str(good), "--out", str(a_file)], ["--out", "a-file.txt"]),
        (["run", str(good), "--out", str(a_file / "below")], ["--out", "a-file.txt"]),
        (["run", str(good), "--colour"], ["--colour"]),
        (["report"], ["run_dir"]),
        (["report", str(tmp_path / "nowhere")], ["nowhere"]),
        (["report", str(tmp_path)], [str(tmp_path), "manifest.json"]),
        (["report", str(run_dir), "--html", str(tmp_path)], ["--html", str(tmp_path)]),
        (["report", str(run_dir), "--html", str(a_file / "page.html")], ["--html", "a-file.txt"]),
        (["report", str(run_dir), "--plots", str(a_file)], ["--plots", "a-file.txt"]),
        (["report", str(run_dir), "--out", str(tmp_path)], ["--out", str(tmp_path)]),
        (["report", str(run_dir), "--format", "xml"], ["--format", "'xml'"]),
        (["list", "atacks"], ["atacks"]),
        (["demo", "--n", "1"], ["--n", "'1'"]),
        (["demo", "--n", "ten"], ["--n", "'ten'"]),
        (["demo", "--k", "0"], ["--k", "'0'"]),
        (["demo", "--seed", "-1"], ["--seed", "'-1'"]),
        (["dev", "bench", "--seconds", "-1"], ["--seconds", "'-1'"]),
        (["dev", "bench", "--seconds", "nan"], ["--seconds", "'nan'"]),
        (["dev", "bench", "--seconds", "0"], ["--seconds", "'0'"]),
        (["dev", "bench", "--n", "0"], ["--n", "'0'"]),
        (["certify", "kaggle", "--jobs", "0"], ["--jobs", "'0'"]),
        (["certify", "kaggle", "--param", "alpha=high"], ["alpha", "'high'"]),
        (["certify", "kaggle", "--param", "alpha=inf"], ["alpha", "inf"]),
        (["certify", "kaggle", "--param", "alpha"], ["--param", "'alpha'"]),
        (["certify", "kaggle", "--param", "alhpa=0.1"], ["alhpa", "did you mean 'alpha'"]),
        (["certify", "kagle"], ["kagle", "did you mean 'kaggle'"]),
        (["certify", "kaggle", "--out", str(tmp_path)], ["--out", str(tmp_path)]),
        (["certify", "kaggle", "--run-dir", str(a_file)], ["--run-dir", "a-file.txt"]),
        (["certify", f"{syntax}:Broken"], ["syntax_error.py", "syntax error"]),
        (["certify", f"{raising}:Anything"], ["raising.py", "this plugin cannot be imported"]),
        (["certify", "ladder", "--param", "eta=-1", "--tune"], ["--param eta=-1", "'eta' = -1"]),
        (["certify", "ladder", "--param", "eta=0.05", "--tune"], ["--param eta=0.05", "the search sets eta"]),
        (["certify", "ladder", "--param", "eta=0", "--challenge", str(tmp_path / "none.toml")], ["--param eta=0"]),
        (["certify", "kaggle", "--attack", "boosting(k=0)"], ["--attack boosting(k=0)", "'k' = 0"]),
        (["stats", "replay", str(tmp_path / "none.csv"), "--smaller-is-better", "--mechanism", "ladder(eta=-2)"],
         ["--mechanism ladder(eta=-2)", "'eta' = -2"]),
        (["serve", "attack", "http://127.0.0.1:9", "--token", "t", "--attack", "hill-climbing(block=0)"],
         ["--attack hill-climbing(block=0)", "'block' = 0"]),
        (["stats", "sota", "--m", "10", "--n", "100", "--theta", "1.5"], ["theta"]),
        (["run", str(good), "--secret-seed", str(binary_secret)], ["binary-secret", "whole number"]),
        (["run", str(good), "--secret-seed", str(superscript_secret)], ["superscript-secret", "whole number"]),
        (["run", str(good), "--secret-seed", str(tmp_path)], [str(tmp_path), "secret seed file"]),
    ]


CLI_CASE_COUNT = 51


@pytest.mark.parametrize("case", range(CLI_CASE_COUNT))
def test_bad_command_lines_are_one_line_errors_naming_the_argument(tmp_path, capsys, run_dir, case):
    cases = cli_cases(tmp_path, run_dir)
    assert len(cases) == CLI_CASE_COUNT
    argv, words = cases[case]
    code = main(argv)
    assert_one_line_error(capsys, code, words)


def test_local_plugins_that_cannot_load_are_named_in_scenarios(tmp_path, capsys):
    for name, text, words in [
        ("syntax_error.py", SYNTAX_ERROR_PLUGIN, ["syntax_error.py", "line 2"]),
        ("raising.py", IMPORT_ERROR_PLUGIN, ["raising.py", "RuntimeError"]),
    ]:
        plugin = tmp_path / name
        plugin.write_text(text)
        path = _scenario(tmp_path, BASE, KAGGLE, f'{{ id = "{plugin}:Broken" }}')
        assert_one_line_error(capsys, main(["run", str(path), "--out", str(tmp_path / "run")]), words)


def test_a_run_where_every_replication_fails_ends_with_a_summary_and_can_be_reported(tmp_path, capsys):
    path = _scenario(tmp_path, BASE, KAGGLE, failing_mechanism(tmp_path))
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Length mismatch" not in captured.err
    assert "1 of 1 replications failed" in captured.err and "the release failed on purpose" in captured.err
    assert main(["report", str(tmp_path / "run"), "--html", str(tmp_path / "page.html")]) == 0
    assert "the release failed on purpose" in (tmp_path / "page.html").read_text()


def test_an_incompatible_pair_is_skipped_with_its_reason(tmp_path, capsys):
    path = _scenario(tmp_path, BASE, BOOSTING, '{ id = "freedman" }')
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert "skipped (cannot play)" in captured.err and "regression" in captured.err
    assert "0/0/1" in captured.out


# Python API: every rejected submission leaves the released scores and the random stream as they were.
LABELS = np.tile([0.0, 1.0], 20)
BAD_SUBMISSIONS = {
    "scalar": (1.0, ValueError),
    "none": (None, ValueError),
    "string": ("0101", ValueError),
    "wrong length": (np.zeros(39), ValueError),
    "nan": (np.r_[np.nan, np.zeros(39)], ValueError),
    "inf": (np.r_[np.inf, np.zeros(39)], ValueError),
    "label outside the classes": (np.r_[2.0, np.zeros(39)], ValueError),
    "three dimensions": (np.zeros((1, 1, 40)), ValueError),
    "empty batch": (np.zeros((0, 40)), ValueError),
}
SEVERAL_BLOCKS = rows_per_block(40) + 100
"""Rows in a batch that is released in two blocks."""
REGRESSION_SUBMISSIONS = {
    "overflowing squared loss": (np.full(40, 1e200), ValueError),
    "overflow in a later row": (np.vstack([np.zeros(40), np.full(40, 1e200)]), ValueError),
    "overflow in the last row of a batch of several blocks": (
        np.vstack([np.zeros((SEVERAL_BLOCKS - 1, 40)), np.full(40, 1e200)]), ValueError),
}


def _state(mechanism):
    return (list(mechanism.released_), list(mechanism.acceptances_), mechanism.rng_.bit_generator.state)


@pytest.mark.parametrize("what", [*BAD_SUBMISSIONS, *REGRESSION_SUBMISSIONS])
@pytest.mark.parametrize("mechanism_id", MECHANISMS.ids())
def test_bad_submissions_raise_and_change_nothing(mechanism_id, what):
    regression = what in REGRESSION_SUBMISSIONS
    scorer, labels = ("squared", np.random.default_rng(0).normal(size=40)) if regression else ("zero-one", LABELS)
    mechanism = MECHANISMS.make(mechanism_id, **FAST_PARAMS.get(mechanism_id, {}))
    mechanism.bind(labels, scorer, np.random.default_rng(1))
    mechanism.submit_many(np.zeros((3, 40)))
    before = _state(mechanism)
    bad, error = (REGRESSION_SUBMISSIONS if regression else BAD_SUBMISSIONS)[what]
    submit = mechanism.submit_many if np.ndim(bad) == 2 else mechanism.submit
    with pytest.raises(error) as caught:
        submit(bad)
    assert not isinstance(caught.value, (IndexError, KeyError))
    assert _state(mechanism) == before
    if regression:
        assert "overflows" in str(caught.value)
        assert f"submission {len(np.atleast_2d(bad)) - 1} " in str(caught.value)  # the row of the batch


@pytest.mark.parametrize("mechanism_id", MECHANISMS.ids())
def test_a_board_batch_with_a_bad_score_in_its_last_block_releases_nothing(mechanism_id):
    labels = np.random.default_rng(0).normal(size=40)
    mechanism = MECHANISMS.make(mechanism_id, **FAST_PARAMS.get(mechanism_id, {}))
    mechanism.bind(labels[:20], "squared", np.random.default_rng(1))
    board = Board(Leaderboard(mechanism, np.arange(20), np.arange(20, 40), labels[20:]))
    board.submit_many(np.zeros((3, 40)))
    before = _state(mechanism), board.transcript.tolist(), {k: v.tolist() for k, v in board._leaderboard.records().items()}
    batch = np.zeros((SEVERAL_BLOCKS, 40))
    batch[-1, 25] = 1e200  # a final row: only the organiser's record overflows
    with pytest.raises(ValueError, match=f"submission {SEVERAL_BLOCKS - 1} "):
        board.submit_many(batch)
    after = _state(mechanism), board.transcript.tolist(), {k: v.tolist() for k, v in board._leaderboard.records().items()}
    assert after == before


BIND_CASES = [
    ("kaggle", {}, dict(classes=[5, 6]), ValueError, "classes"),
    ("kaggle", {"alpha": float("inf")}, {}, ValueError, "'alpha' = inf"),
    ("kaggle", {"alpha": float("nan")}, {}, ValueError, "'alpha' = nan"),
    ("kaggle", {"alpha": "high"}, {}, ValueError, "'alpha' = 'high'"),
    ("ladder", {"eta": True}, {}, ValueError, "'eta' = True"),
    ("ladder-t", {"alpha": None, "critical_value": None}, {}, ValueError, "critical_value"),
    ("ladder-boot", {"b": 10.0}, {}, ValueError, "'b' = 10.0"),
    ("bayesboot-ladder", {"initial_prediction": [0.0, 1.0]}, {}, ValueError, "initial_prediction"),
    ("bayesboot-ladderboot", {"po_threshold": float("inf")}, {}, ValueError, "'po_threshold' = inf"),
    ("kaggle", {}, dict(labels=[1.0]), ValueError, "labels"),
    ("kaggle", {}, dict(labels=[0.0, np.nan, 1.0]), ValueError, "labels"),
    ("kaggle", {}, dict(rng=0), TypeError, "rng"),
    ("kaggle", {}, dict(scorer="zero-once"), ValueError, "zero-once"),
    ("ladder-t", {}, dict(scorer="pearson"), ValueError, "pearson"),
]


@pytest.mark.parametrize(("mechanism_id", "params", "bind_args", "error", "word"), BIND_CASES)
def test_bad_parameters_and_bindings_are_refused(mechanism_id, params, bind_args, error, word):
    arguments = {"labels": LABELS, "scorer": "zero-one", "rng": np.random.default_rng(0), **bind_args}
    with pytest.raises(error, match=None) as caught:
        MECHANISMS.make(mechanism_id, **params).bind(**arguments)
    assert word in str(caught.value)


def test_a_closed_pipe_ends_quietly():
    result = subprocess.run(
        f"{sys.executable} -m ladderlab.cli.commands list attacks | head -2", shell=True, capture_output=True, text=True,
        timeout=300,
    )
    assert len(result.stdout.splitlines()) == 2
    assert result.stderr == ""


@pytest.mark.slow
def test_a_real_process_prints_one_line_and_exits_with_2(tmp_path):
    plugin = tmp_path / "syntax_error.py"
    plugin.write_text(SYNTAX_ERROR_PLUGIN)
    result = subprocess.run(
        [sys.executable, "-m", "ladderlab.cli.commands", "certify", f"{plugin}:Broken"], capture_output=True, text=True,
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"ladderlab: error: plugin file {plugin}: syntax error at line 2: invalid syntax"
    ] or ("Traceback" not in result.stderr and "syntax_error.py" in result.stderr and len(result.stderr.splitlines()) == 1)



def test_commands_the_tests_start_find_the_font_cache_already_built():
    """A command the tests start reads matplotlib's font cache where this process built it, so
    it never builds one and never prints "Matplotlib is building the font cache" (on a loaded
    machine), which broke the one-line check above."""
    import matplotlib

    result = subprocess.run([sys.executable, "-c", "import matplotlib; print(matplotlib.get_cachedir())"],
                            capture_output=True, text=True, timeout=300, check=True)
    assert result.stdout.strip() == matplotlib.get_cachedir()

class OverflowingBatch(Attack):
    """Submits four rows whose last overflows the squared loss, then gives up."""

    id = "overflowing-batch"
    reference = "a bad-input test"
    _parameter_constraints = {}

    def run(self, board, data, rng):
        batch = np.zeros((4, board.holdout_size))
        batch[-1] = 1e200
        with pytest.raises(ScoreError, match="submission 3 "):
            board.submit_many(batch)
        return np.zeros(board.holdout_size)


def test_a_competition_batch_that_spans_two_days_with_a_bad_last_row_releases_nothing():
    task = TASKS.make("gaussian-regression", n_samples=60, n_features=10)
    result = compete(task, MECHANISMS.make("kaggle"), [TeamSpec(OverflowingBatch())], Rules(rounds=2, per_round=2))
    assert result.submissions.tolist() == [0]


def test_a_competition_whose_team_scores_perfectly_on_a_small_final_set_is_measured():
    """θ₀ = the best private accuracy, 1 here, is moved just inside (0, 1): the state-of-the-art
    estimate is then 1, where it used to fail the replication ("theta0 must lie in (0, 1)")."""
    task = TASKS.make("latent-classification", n_train=200, n_public=4, n_holdout=8, n_features=3, signal=20.0)
    teams = [TeamSpec("honest"), TeamSpec("progressive-analyst", {"view": 2}, count=3)]
    result = compete(task, MECHANISMS.make("kaggle"), teams, Rules(rounds=2, per_round=2), seed=0)
    assert result.private.min() == 0.0
    assert measures(result, np.random.default_rng(0), 20)["sota_estimate"] == 1.0


@pytest.mark.parametrize(("argv", "resumable"), [(["run", "quickstart"], True), (["demo"], False)])
def test_an_interrupt_says_whether_the_same_command_resumes(monkeypatch, capsys, argv, resumable):
    from ladderlab.runs import duel, runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    monkeypatch.setattr(duel, "duel", interrupted)
    assert main(argv) == 130
    error = capsys.readouterr().err
    assert error.startswith("ladderlab: error: interrupted")
    assert ("run the same command again to resume" in error) is resumable
