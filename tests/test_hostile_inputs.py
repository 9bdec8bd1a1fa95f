"""The bad-input battery, second round: competition files, certify, extrapolate, sota and the
Python API, as a hostile user would try them (issue 30).

Each surface is one table and one parametrised test. A case must be refused with a one-line
error that names the offending key or argument (``ladderlab: error: …`` and exit code 2 on
the command line; the documented exception in Python), with no traceback, before any work,
and without changing anything: no file in the case's folder is created or changed (an old
certificate and an old plot stay as they were, no run directory appears). Sizes that cannot
fit are refused by their estimate (ladderlab.runs.workload); they are absurd enough to be refused
on any machine. Adding a surface is adding a table.
"""

import math
import shlex

import numpy as np
import pytest

from ladderlab.certification import certify
from ladderlab.certification.certify import parse_attack
from ladderlab.cli.commands import main
from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.params import ParameterError
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import workload
from ladderlab.runs.duel import duel
from ladderlab.runs.scenario import ScenarioError, load, preflight
from ladderlab.stats import (
    accuracy_curve,
    best_of_m,
    estimate_sota,
    exponential_extrapolation,
    simulate_best_of_m,
)
from ladderlab.stats.class_scores import read_observed_classes
from tests.helpers import assert_one_line_error, files_in

COMPETITION = """
schema_version = 1
name = "contest"
replications = 1
seed = 0

[[competition]]
tasks = [{ id = "latent-classification", params = { n_train = 50, n_public = 20, n_holdout = 60, n_features = 3 } }]
mechanisms = [{ id = "kaggle" }]
rules = [{ rounds = 3, per_round = 2 }]

[[competition.mixes]]
name = "m"
teams = [
  { policy = "progressive-analyst", count = 3 },
  { policy = "boosting", count = 1, params = { k = 4 } },
]
"""
RULES = "rounds = 3, per_round = 2"
ANALYSTS = '{ policy = "progressive-analyst", count = 3 }'
BOOSTING = '{ policy = "boosting", count = 1, params = { k = 4 } }'
TASK = "n_train = 50, n_public = 20, n_holdout = 60, n_features = 3"
MIX = 'name = "m"'
SECOND_TABLE = COMPETITION[COMPETITION.index("[[competition]]"):]

# (text replaced, replacement, words the message must contain)
COMPETITION_CASES = [
    (RULES, "rounds = 0, per_round = 2", ["rules[0].rounds", "0"]),
    (RULES, "rounds = -1, per_round = 2", ["rules[0].rounds", "-1"]),
    (RULES, "rounds = 2.5, per_round = 2", ["rounds", "2.5"]),
    (RULES, 'rounds = "3", per_round = 2', ["rounds", "'3'"]),
    (RULES, "rounds = true, per_round = 2", ["rounds", "True"]),
    (RULES, "rounds = [], per_round = 2", ["rules[0].rounds", "empty grid"]),
    (RULES, "rounds = 9223372036854775808, per_round = 2", ["rules[0].rounds", "64-bit"]),
    (RULES, "rounds = 1000000000, per_round = 2", ["scenario contest needs about", "submissions", "--force"]),
    (RULES, "rounds = 3, per_round = 0", ["rules[0].per_round", "0"]),
    (RULES, "rounds = 3, per_round = []", ["rules[0].per_round", "empty grid"]),
    (RULES, 'rounds = 3, per_round = "x"', ["per_round", "'x'"]),
    (RULES, "rounds = 3, per_round = 1000000000", ["scenario contest needs about", "--force"]),
    (RULES, "rounds = 3, per_round = 2, total = 0", ["rules[0].total", "0"]),
    (RULES, "rounds = 3, per_round = 2, total = -5", ["rules[0].total", "-5"]),
    (RULES, "rounds = 3, per_round = 2, total = 1.5", ["total", "1.5"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = 0", ["rules[0].public_fraction", "0"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = 1", ["rules[0].public_fraction", "1"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = 1.5", ["rules[0].public_fraction", "1.5"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = nan", ["rules[0].public_fraction", "nan"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = inf", ["rules[0].public_fraction", "inf"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = 1e-300", ["public_fraction", "leaves 0 public rows"]),
    (RULES, "rounds = 3, per_round = 2, public_fraction = 0.999", ["public_fraction", "leaves 60 public rows"]),
    (RULES, "rounds = 3, per_round = 2, precision = 0", ["rules[0].precision", "0"]),
    (RULES, "rounds = 3, per_round = 2, precision = -0.01", ["rules[0].precision", "-0.01"]),
    (RULES, "rounds = 3, per_round = 2, precision = inf", ["rules[0].precision", "inf"]),
    (RULES, "rounds = 3, per_round = 2, precision = nan", ["rules[0].precision", "nan"]),
    (RULES, "rounds = 3, per_round = 2, precision = 1e-320", ["rules[0].precision", "subnormal"]),
    (RULES, "rounds = 3, per_round = 2, precision = 1e300", ["rules[0].precision", "1e+300"]),
    (RULES, "rounds = 3, per_round = 2, precision = 2", ["rules[0].precision", "(0, 1]"]),
    (RULES, 'rounds = 3, per_round = 2, precision = "1e-5"', ["precision", "'1e-5'"]),
    (RULES, "rounds = 3, per_round = 2, selection = 0", ["rules[0].selection", "0"]),
    (RULES, 'rounds = 3, per_round = 2, selection = "Last"', ["rules[0].selection", "did you mean 'last'"]),
    (RULES, "rounds = 3, per_round = 2, selection = true", ["selection", "True"]),
    (RULES, "rounds = 3, per_round = 2, selection = []", ["rules[0].selection", "empty grid"]),
    (RULES, "round = 3, per_round = 2", ["round", "did you mean 'rounds'"]),
    (RULES, "rounds = [3, 3], per_round = 2", ["listed twice"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 0 }', ["teams[0].count", "0"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = -1 }', ["teams[0].count", "-1"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = "3" }', ["teams[0].count", "'3'"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 1.5 }', ["teams[0].count", "1.5"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = true }', ["teams[0].count", "True"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 100000000 }', ["scenario contest needs about", "--force"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 9223372036854775808 }', ["teams[0].count"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 3, accounts = 0 }', ["teams[0].accounts", "0"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 3, accounts = 100000000 }', ["scenario contest needs", "--force"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 3, label = "" }', ["teams[0].label"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 3, label = "  " }', ["teams[0].label"]),
    (ANALYSTS, '{ policy = "progressive-analyst", count = 3, label = "x" }, { policy = "conservative-analyst", label = "x" }',
     ["teams[1]", "'x'", "teams[0]"]),
    (ANALYSTS, f'{ANALYSTS}, {{ policy = "progressive-analyst", params = {{ lam = 0.5 }} }}',
     ["teams[1]", "'progressive-analyst'", "own label"]),
    (BOOSTING, '{ policy = "boosting", params = { k = [4, 4] } }', ["teams[1].params", "same group 'boosting'", "repeated value"]),
    (BOOSTING, '{ policy = "boosting", params = { k = [] } }', ["teams[1].params.k", "empty"]),
    (BOOSTING, '{ policy = "boosting", params = { k = 0 } }', ["teams[1].params.k", "0"]),
    (BOOSTING, '{ policy = "boosting", params = { kk = 4 } }', ["teams[1].params.kk", "did you mean 'k'"]),
    (BOOSTING, '{ policy = "boosting", params = { k = 4, batch = 0 } }', ["teams[1].params.batch", "0"]),
    (BOOSTING, '{ policy = "bosting" }', ["teams[1].policy", "did you mean 'boosting'"]),
    (BOOSTING, '{ policy = "kaggle" }', ["teams[1].policy", "kaggle"]),
    (BOOSTING, '{ policy = "boosting", honest = "yes" }', ["teams[1].honest", "'yes'"]),
    (BOOSTING, '{ policy = "boosting", cnt = 2 }', ["cnt", "did you mean 'count'"]),
    (BOOSTING, '{ policy = "boosting", params = { k = 4, variant = "kagle" } }', ["teams[1].params.variant", "did you mean"]),
    (MIX, 'name = ""', ["mixes[0].name", "''"]),
    (MIX, 'name = "my mix"', ["mixes[0].name", "'my mix'"]),
    (MIX, 'name = "m"\nteams = [{ policy = "boosting" }]\n\n[[competition.mixes]]\nname = "m"',
     ["mixes[1].name", "'m'", "mixes[0]"]),
    (f"teams = [\n  {ANALYSTS},\n  {BOOSTING},\n]", "teams = []", ["teams"]),
    (TASK, "n_train = 50, n_public = 60, n_holdout = 60, n_features = 3", ["n_public", "n_holdout"]),
    (TASK, "n_train = 50, n_public = 20, n_holdout = 60, n_features = 0", ["tasks[0].params.n_features", "0"]),
    (TASK, "n_train = 50, n_public = 20, n_holdout = 60, n_features = 3, signal = nan", ["params.signal", "nan"]),
    (TASK, "n_train = 50, n_public = 20, n_holdout = 6000000000000, n_features = 3", ["latent-classification", "--force"]),
    ('{ id = "kaggle" }', '{ id = "kaggle", params = { alpha = 1e-320 } }', ["mechanisms[0].params.alpha", "subnormal"]),
    ('{ id = "kaggle" }', '{ id = "kaggle", params = { alpha = inf } }', ["mechanisms[0].params.alpha", "inf"]),
    ('{ id = "kaggle" }', '{ id = "ladder-boot", params = { b = 9223372036854775808 } }', ["mechanisms[0].params.b", "64-bit"]),
    ('{ id = "kaggle" }', "", ["mechanisms"]),
    ("replications = 1", "replications = 1000000000", ["scenario contest needs about", "--force"]),
    ("replications = 1", "replications = 9223372036854775808", ["replications", "9223372036854775808"]),
    ("seed = 0", "seed = 18446744073709551616", ["seed", "18446744073709551616"]),
    (SECOND_TABLE, SECOND_TABLE + SECOND_TABLE.replace("count = 3", "count = 2"), ["competition[1]", "other teams", "rename"]),
]


def _refusal(path, jobs: int = 1) -> None:
    """What ``ladderlab run`` does before any work: load, size, preflight."""
    scenario = load(path)
    workload.refuse_if_too_large(workload.scenario_work(scenario, jobs), hint="")
    preflight(scenario)


@pytest.mark.parametrize(("old", "new", "words"), COMPETITION_CASES)
def test_bad_competition_files_are_refused_before_anything_runs(tmp_path, old, new, words):
    assert old in COMPETITION, old
    path = tmp_path / "contest.toml"
    path.write_text(COMPETITION.replace(old, new, 1))
    with pytest.raises((ScenarioError, workload.TooLarge)) as caught:
        _refusal(path)
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    for word in words:
        assert word in message, (word, message)


def test_a_good_competition_file_passes_the_same_checks(tmp_path):
    path = tmp_path / "contest.toml"
    path.write_text(COMPETITION)
    _refusal(path)


# --- the command line: certify, extrapolate, sota, and run's sizes ----------------------------

SCORES = "label,a,b,c\na,3,1,2\nb,1,3,2\nc,1,2,3\na,2,1,0\n"
INPUTS = {
    "contest.toml": COMPETITION,
    "duels.toml": COMPETITION[: COMPETITION.index("[[competition]]")].replace('"contest"', '"duels"')
    + '[[matrix]]\ntasks = [{ id = "random-labels", params = { n_public = 50, n_holdout = 150 } }]\n'
    'mechanisms = [{ id = "kaggle" }]\nattacks = [{ id = "boosting", params = { k = 10 } }]\n',
    "bad-contest.toml": COMPETITION.replace(RULES, "rounds = 3, per_round = 2, precision = 5"),
    "twin-labels.toml": COMPETITION.replace(BOOSTING, '{ policy = "boosting", label = "progressive-analyst" }'),
    "ranks.txt": "# ranks among 4 classes\n1 2 1 3 4 1 2 1\n",
    "scores.csv": SCORES,
    "twin-class.csv": SCORES.replace("label,a,b,c", "label,a,a,c"),
    "twin-label.csv": SCORES.replace("label,a,b,c", "label,a,b,label"),
    "no-label.csv": SCORES.replace("label,", "truth,"),
    "one-class.csv": "label,a\na,1\n",
    "odd-label.csv": SCORES + "d,1,2,3\n",
    "nan-score.csv": SCORES + "a,nan,1,2\n",
    "float-ranks.txt": "1 2.5 3\n",
    "zero-rank.txt": "1 0 3\n",
    "empty.txt": "# nothing\n",
    "accuracies.txt": "0.9 0.85 0.8 0.7 0.91\n",
    "nan-accuracies.txt": "0.9 nan\n",
    "big-accuracies.txt": "0.9 1.2\n",
    "one-accuracy.txt": "0.9\n",
    "words.txt": "0.9 high\n",
    "old.json": '{"the": "previous certificate"}\n',
    "old.md": "the previous certificate\n",
    "old.png": "the previous plot",
}

# (command line, words the one-line error must contain)
CERTIFY_CASES = [
    ("certify kaggle --n 5", ["--n", "'5'"]),
    ("certify kaggle --n ten", ["--n", "'ten'"]),
    ("certify kaggle --n 0", ["--n", "'0'"]),
    ("certify kaggle --n 10000000000", ["random-labels(n_public=10000000000", "--force"]),
    ("certify kaggle --n 99999999999999999999", ["--n", "2^63"]),
    ("certify kaggle --budgets 0", ["--budgets", "'0'"]),
    ("certify kaggle --budgets -1", ["--budgets", "'-1'"]),
    ("certify kaggle --budgets 2.5", ["--budgets", "'2.5'"]),
    ("certify kaggle --budgets 10 10", ["budgets", "10 given twice"]),
    ("certify kaggle --budgets 1000000000 --only --attack boosting", ["scenario certify-kaggle needs about", "--force"]),
    ("certify kaggle --replications 0", ["--replications", "'0'"]),
    ("certify kaggle --replications 100000000 --only --attack boosting --budgets 10", ["certify-kaggle", "--force"]),
    ("certify kaggle --seed -1", ["--seed", "'-1'"]),
    ("certify kaggle --seed 18446744073709551616", ["--seed", "2^63"]),
    ("certify kaggle --tau nan", ["--tau", "'nan'"]),
    ("certify kaggle --tau inf", ["--tau", "'inf'"]),
    ("certify kaggle --tau 0", ["--tau", "'0'"]),
    ("certify kaggle --tau -0.1", ["--tau", "'-0.1'"]),
    ("certify kaggle --epsilon nan", ["--epsilon", "'nan'"]),
    ("certify kaggle --epsilon 0", ["--epsilon", "'0'"]),
    ("certify kaggle --param alpha=0.1 --param alpha=0.2", ["--param alpha", "twice"]),
    ("certify kaggle --param =0.1", ["--param", "'=0.1'"]),
    ("certify kaggle --param alpha=1e-320", ["alpha", "subnormal"]),
    ("certify kaggle --param alpha=nan", ["alpha", "nan"]),
    ("certify ladder-boot --param b=99999999999999999999", ["'b'", "64-bit"]),
    ("certify kaggle --attack 'hill-climbing(block=1, block=20)'", ["'block'", "twice"]),
    ("certify kaggle --only --attack boosting --attack boosting", ["'boosting'", "twice"]),
    ("certify kaggle --only --attack 'boosting(k=5)' --attack 'boosting(k=5)'", ["boosting(k=5)", "twice"]),
    ("certify kaggle --only --attack honest", ["'honest'", "honest participant"]),
    ("certify kaggle --only --attack progressive-analyst", ["'progressive-analyst'", "honest participant"]),
    ("certify kaggle --attack 'boosting(k=0)'", ["'k'", "0"]),
    ("certify kaggle --attack 'boosting(kk=1)'", ["kk", "did you mean 'k'"]),
    ("certify kaggle --attack 'boosting(k=1'", ["boosting(k=1", "parentheses"]),
    ("certify kaggle --attack 'boosting(k=abc)'", ["'k'", "'abc'"]),
    ("certify kaggle --attack bosting", ["bosting", "did you mean 'boosting'"]),
    ("certify kaggle --only", ["no attack", "--attack"]),
    ("certify kaggle --competition {tmp}/missing.toml", ["--competition", "missing.toml"]),
    ("certify kaggle --competition {tmp}/duels.toml", ["--competition", "no [[competition]] table"]),
    ("certify kaggle --competition {tmp}/bad-contest.toml", ["--competition", "rules[0].precision", "5"]),
    ("certify kaggle --competition {tmp}/twin-labels.toml", ["--competition", "teams[1]", "own label"]),
    ("certify kaggle --competition {tmp}/contest.toml --param alpha=-1", ["alpha", "-1"]),
    ("certify kaggle --out {tmp}/old.json --tau nan", ["--tau"]),
    ("certify kaggle --out {tmp}/old.md", ["--out", "JSON"]),
    ("certify kagle --out {tmp}/old.json", ["kagle", "did you mean 'kaggle'"]),
    ("certify kaggle --run-dir {tmp}/battery --n 5", ["--n"]),
]

EXTRAPOLATE_CASES = [
    ("stats extrapolate {tmp}/ranks.txt --from 0 --to 10", ["--from", "'0'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 1 --to 10", ["--from", "'1'"]),
    ("stats extrapolate {tmp}/ranks.txt --from -3 --to 10", ["--from", "'-3'"]),
    ("stats extrapolate {tmp}/ranks.txt --from two --to 10", ["--from", "'two'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 0", ["--to", "'0'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 18446744073709551616", ["--to", "2^63"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 3", ["--to 3", "--from"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 1000000000", ["K = 1000000000", "--to", "--force"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 1000000000 --method hd", ["K = 1000000000", "--force"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --bins 0", ["--bins", "'0'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --bins 1", ["--bins", "'1'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --bins 1000000000", ["--bins", "--force"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --method nope", ["--method", "'nope'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --method un", ["un", "--to"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --input xml", ["--input", "'xml'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --format xml", ["--format", "'xml'"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --plot {tmp}/old.nope", ["--plot", ".nope"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --plot {tmp}/old", ["--plot", "no suffix"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --plot {tmp}", ["--plot", "directory"]),
    ("stats extrapolate {tmp}/ranks.txt --from 4 --to 10 --plot {tmp}/missing/plot.png", ["--plot", "does not exist"]),
    ("stats extrapolate {tmp}/ranks.txt --from 3 --to 10 --plot {tmp}/old.png", ["ranks.txt", "rank 4"]),
    ("stats extrapolate {tmp}/ranks.txt --to 10", ["ranks.txt", "--from"]),
    ("stats extrapolate {tmp}/missing.txt --from 4 --to 10", ["missing.txt"]),
    ("stats extrapolate {tmp} --from 4 --to 10", ["{tmp}"]),
    ("stats extrapolate {tmp}/empty.txt --from 4 --to 10", ["empty.txt", "empty"]),
    ("stats extrapolate {tmp}/float-ranks.txt --from 4 --to 10", ["float-ranks.txt", "'2.5'"]),
    ("stats extrapolate {tmp}/zero-rank.txt --from 4 --to 10", ["zero-rank.txt", "rank 0"]),
    ("stats extrapolate {tmp}/twin-class.csv --to 10", ["twin-class.csv", "'a'", "twice"]),
    ("stats extrapolate {tmp}/twin-label.csv --to 10", ["twin-label.csv", "'label'", "twice"]),
    ("stats extrapolate {tmp}/no-label.csv --to 10", ["no-label.csv", "'label'"]),
    ("stats extrapolate {tmp}/one-class.csv --to 10", ["one-class.csv", "at least 2"]),
    ("stats extrapolate {tmp}/odd-label.csv --to 10", ["odd-label.csv", "'d'"]),
    ("stats extrapolate {tmp}/nan-score.csv --to 10", ["nan-score.csv", "'a'", "finite"]),
    ("stats extrapolate {tmp}/scores.csv --from 4 --to 10", ["scores.csv", "3 classes", "k = 4"]),
]

SOTA_CASES = [
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --bootstrap -1", ["--bootstrap", "'-1'"]),
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --bootstrap 0", ["--bootstrap", "'0'"]),
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --repetitions 0", ["--repetitions", "'0'"]),
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --repetitions -5", ["--repetitions", "'-5'"]),
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --repetitions 1000000000000", ["1 T test sets", "--repetitions", "--force"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --rho 0.5 --repetitions 1000000000000", ["test sets", "--repetitions", "--force"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --seed -1", ["--seed", "'-1'"]),
    ("stats sota --m 0 --n 100 --theta 0.9", ["--m", "'0'"]),
    ("stats sota --m 10 --n 0 --theta 0.9", ["--n", "'0'"]),
    ("stats sota --m 10 --n 100 --theta nan", ["theta", "nan"]),
    ("stats sota --m 10 --n 100 --theta -0.1", ["theta", "-0.1"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --alpha 0", ["alpha", "0"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --alpha nan", ["alpha", "nan"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --rho nan", ["rho", "nan"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --rho 2", ["rho", "2.0"]),
    ("stats sota --thetas {tmp}/accuracies.txt --m 3 --n 100", ["--m 3", "--thetas"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --y0 fixed", ["--y0 fixed", "--rho"]),
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --theta 0.9", ["--theta 0.9", "--scores"]),
    ("stats sota --scores {tmp}/accuracies.txt --n 100 --y0 fixed", ["--y0 fixed", "--scores"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --bootstrap 5", ["--bootstrap 5", "--scores"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --target upper", ["--target upper", "--scores"]),
    ("stats sota --m 10 --n 100 --theta 0.9 --repetitions 50", ["--repetitions 50", "--rho"]),
    ("stats sota --scores {tmp}/missing.txt --n 100", ["missing.txt"]),
    ("stats sota --scores {tmp}/nan-accuracies.txt --n 100", ["scores", "nan"]),
    ("stats sota --scores {tmp}/big-accuracies.txt --n 100", ["scores", "1.2"]),
    ("stats sota --scores {tmp}/one-accuracy.txt --n 100", ["scores", "two"]),
    ("stats sota --scores {tmp}/words.txt --n 100", ["words.txt", "'high'"]),
    ("stats sota --scores {tmp}/accuracies.txt", ["--scores", "--n"]),
    ("stats sota --n 100", ["--theta", "--thetas"]),
    ("stats sota --n 100 --theta 0.9", ["--theta needs --m"]),
]

RUN_CASES = [
    ("run {tmp}/duels.toml --replications 1000000000 --out {tmp}/run", ["scenario duels needs about", "--force"]),
    ("run {tmp}/duels.toml --replications 18446744073709551616 --out {tmp}/run", ["--replications", "2^63"]),
    ("run {tmp}/bad-contest.toml --out {tmp}/run", ["bad-contest.toml", "rules[0].precision"]),
    ("run {tmp}/twin-labels.toml --out {tmp}/run", ["twin-labels.toml", "teams[1]"]),
    ("demo --n 1000000000000", ["random-labels", "--force"]),
    ("demo --k 1000000000000", ["the demo needs about", "--force"]),
    ("demo --n 18446744073709551616", ["--n", "2^63"]),
    ("dev bench --n 1000000000000", ["the benchmark needs about", "--force"]),
    ("--quiet --progress list", ["--progress", "--quiet"]),
]



@pytest.fixture
def inputs(tmp_path):
    for name, text in INPUTS.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(("line", "words"), CERTIFY_CASES + EXTRAPOLATE_CASES + SOTA_CASES + RUN_CASES)
def test_bad_command_lines_are_refused_in_one_line_and_change_nothing(inputs, capsys, line, words):
    before = files_in(inputs)
    code = main([part.format(tmp=inputs) for part in shlex.split(line)])
    assert_one_line_error(capsys, code, [word.format(tmp=inputs) for word in words])
    assert files_in(inputs) == before


# --- the Python API ------------------------------------------------------------------------

def _bound_kaggle():
    return MECHANISMS.make("kaggle").bind(np.tile([0.0, 1.0], 10), "zero-one", np.random.default_rng(0))


OUTSCORED = np.array([0, 1, 2, 3, 3, 2])
# (what is called, the exception, words its message must contain)
API_CASES = [
    (lambda: Rules(precision=math.inf), ParameterError, ["'precision' = inf"]),
    (lambda: Rules(precision=5e-324), ParameterError, ["'precision'", "subnormal"]),
    (lambda: Rules(precision=1e300), ParameterError, ["'precision' = 1e+300", "(0, 1]"]),
    (lambda: Rules(total=0), ParameterError, ["'total' = 0"]),
    (lambda: Rules(rounds=True), ParameterError, ["'rounds' = True"]),
    (lambda: Rules(rounds=2**63), ParameterError, ["'rounds'", "64-bit"]),
    (lambda: Rules(per_round=0), ParameterError, ["'per_round' = 0"]),
    (lambda: Rules(public_fraction=1.0), ParameterError, ["'public_fraction' = 1.0"]),
    (lambda: Rules(public_fraction=math.nan), ParameterError, ["'public_fraction' = nan"]),
    (lambda: Rules(selection="Last"), ParameterError, ["'selection'", "did you mean 'last'"]),
    (lambda: Rules(selection=0), ParameterError, ["'selection' = 0"]),
    (lambda: TeamSpec("boosting", count=0), ValueError, ["count", "0"]),
    (lambda: TeamSpec("boosting", accounts=True), ValueError, ["accounts", "True"]),
    (lambda: compete(TASKS.make("latent-classification"), MECHANISMS.make("kaggle"), []), ValueError, ["at least one team"]),
    (lambda: compete(TASKS.make("latent-classification"), MECHANISMS.make("kaggle"),
                     [TeamSpec("boosting"), TeamSpec("boosting", {"k": 10})]), ValueError, ["'boosting'", "own label"]),
    (lambda: duel(TASKS.make("random-labels"), MECHANISMS.make("kaggle"), ATTACKS.make("boosting"), budget=0), ValueError,
     ["budget", "got 0"]),
    (lambda: parse_attack("boosting(k=1, k=2)"), ValueError, ["'k'", "twice"]),
    (lambda: parse_attack("boosting(k=1"), ValueError, ["parentheses"]),
    (lambda: certify.certify("kaggle", tau=math.nan), ValueError, ["tau", "nan"]),
    (lambda: certify.certify("kaggle", epsilon=math.inf), ValueError, ["epsilon", "inf"]),
    (lambda: certify.certify("kaggle", budgets=[10, 10]), ValueError, ["budgets", "10 given twice"]),
    (lambda: certify.certify("kaggle", attacks=["honest"], default_battery=False), ValueError, ["'honest'", "honest participant"]),
    (lambda: certify.certify("kaggle", n=10**12, attacks=["boosting"], default_battery=False), workload.TooLarge,
     ["random-labels", "--force"]),
    (lambda: estimate_sota([0.9, 0.8], 100, np.random.default_rng(0), bootstrap=-1), ValueError, ["bootstrap", "-1"]),
    (lambda: estimate_sota([0.9, 0.8], 100, np.random.default_rng(0), repetitions=0), ValueError, ["repetitions", "0"]),
    (lambda: estimate_sota([0.9, math.nan], 100, np.random.default_rng(0)), ValueError, ["scores", "nan"]),
    (lambda: simulate_best_of_m([0.9], 100, 0.5, np.random.default_rng(0), m=3, repetitions=0), ValueError, ["repetitions"]),
    (lambda: best_of_m([0.9], 0, 3), ValueError, ["n must be", "0"]),
    (lambda: best_of_m([1.5], 100, 3), ValueError, ["theta", "1.5"]),
    (lambda: accuracy_curve(OUTSCORED, 4, 3, "exp"), ValueError, ["K must be at least k = 4", "3"]),
    (lambda: accuracy_curve(OUTSCORED, 4, 10, "nope"), ValueError, ["'nope'"]),
    (lambda: accuracy_curve(OUTSCORED, 4, 10, "cons", bins=1), ValueError, ["bins", "1"]),
    (lambda: exponential_extrapolation([1.0, 0.5, 0.4], 2), ValueError, ["K must be at least k = 3"]),
    (lambda: MECHANISMS.make("kaggle", alpha=1e-320).validate_params(), ParameterError, ["'alpha'", "subnormal"]),
    (lambda: MECHANISMS.make("noisy", scale=-1e-320).validate_params(), ParameterError, ["'scale'"]),
    (lambda: MECHANISMS.make("ladder-boot", b=2**63).validate_params(), ParameterError, ["'b'", "64-bit"]),
    (lambda: TASKS.make("random-labels", n_holdout=2**64).validate_params(), ParameterError, ["'n_holdout'", "64-bit"]),
    (lambda: workload.refuse_if_too_large(workload.Estimate("this", 10, 2 << 40, 1.0), available=1 << 30),
     workload.TooLarge, ["this needs about 2 TiB", "1 GiB available", "--force"]),
    (lambda: _bound_kaggle().submit_many(np.zeros((3, 20)), repeats=0), ValueError, ["repeats", "0"]),
]


@pytest.mark.parametrize(("call", "error", "words"), API_CASES)
def test_the_python_api_refuses_bad_input_naming_it(call, error, words):
    with pytest.raises(error) as caught:
        call()
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    for word in words:
        assert word in message, (word, message)


def test_a_csv_with_a_repeated_class_column_is_refused_in_python_too(inputs):
    with pytest.raises(ValueError, match="column 'a' appears twice"):
        read_observed_classes(inputs / "twin-class.csv")


def test_the_battery_has_at_least_150_new_cases():
    surfaces = [COMPETITION_CASES, CERTIFY_CASES, EXTRAPOLATE_CASES, SOTA_CASES, RUN_CASES, API_CASES]
    assert sum(map(len, surfaces)) >= 150
