"""The bad-input battery on the surfaces of a live challenge (issue 30, round two): challenge
files and the files they name (through ``ladderlab serve verify``), ``ladderlab serve attack``,
``ladderlab stats replay`` and ``ladderlab stats rank-certificate``, and the Python API behind them.

As in tests/test_hostile_inputs.py, each surface is one table and one parametrised test; a case
must be refused with one line that names the file, key, column, row or argument and the value
(``ladderlab: error: …``, exit code 2), with no traceback, before any work, and without changing
any file in the case's folder (no state folder, secret or log appears).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pandas as pd
import pytest

from ladderlab.certification import challenge as challenges
from ladderlab.certification.challenge import ChallengeError
from ladderlab.cli.commands import main
from ladderlab.runs.workload import TooLarge
from tests.helpers import assert_one_line_error, files_in
from tests.serve_helpers import write_challenge


def _refused_changing_nothing(capsys, folder: Path, line: str, words: list[str]) -> None:
    before = files_in(folder)
    code = main([part.format(tmp=folder) for part in shlex.split(line)])
    assert_one_line_error(capsys, code, [word.format(tmp=folder) for word in words])
    assert files_in(folder) == before
    assert not any(path.is_dir() for path in folder.iterdir() if path.name.endswith("-state"))


# --- challenge files -------------------------------------------------------------------------

SCORER = 'scorer = "zero-one"'
MECHANISM = 'id = "ladder"'
PARAMS = "params = { eta = 0.01 }"
RULES = "per_day = 1000"
SPLIT = 'column = "split"'
LABELS = 'file = "labels.csv"'
TEAM = 'name = "alpha"'
LIMITS = "[limits]\n"

# (text replaced, replacement, words the message must contain)
CHALLENGE_CASES = [
    ("schema_version = 1", "schema_version = 2", ["schema_version", "2"]),
    ("schema_version = 1", 'schema_version = "1"', ["schema_version", "'1'"]),
    ("schema_version = 1\n", "", ["schema_version", "required"]),
    ('name = "test"', 'name = ""', ["name", "''"]),
    ('name = "test"', 'name = "a b"', ["name", "'a b'"]),
    ('name = "test"', 'name = "../escape"', ["name", "'../escape'"]),
    ('name = "test"', f'name = "{"x" * 65}"', ["name", "x" * 65]),
    ('name = "test"', "name = 7", ["name", "7"]),
    ('name = "test"', 'name = "test"\nname = "again"', ["not valid TOML", "line"]),
    ('name = "test"', 'name = "test"\ntitle = 5', ["title", "5"]),
    ('name = "test"', f'name = "test"\ntitle = "{"t" * 201}"', ["title", "200"]),
    ('name = "test"', 'name = "test"\nnmae = "x"', ["nmae"]),
    (SCORER, 'scorer = "zero-on"', ["scorer", "did you mean 'zero-one'"]),
    (SCORER, "scorer = 1", ["scorer", "1"]),
    (SCORER, 'scorer = "zero-one"\ntask_type = "regression"', ["task_type", "zero-one", "not a regression"]),
    (SCORER, 'scorer = "zero-one"\ntask_type = "ranking"', ["task_type", "'ranking'"]),
    (SCORER, 'scorer = "zero-one"\nclasses = [0]', ["classes", "at least two"]),
    (SCORER, 'scorer = "zero-one"\nclasses = [0, 1, 1]', ["classes", "listed twice"]),
    (SCORER, 'scorer = "zero-one"\nclasses = [0, nan]', ["classes", "nan"]),
    (SCORER, 'scorer = "zero-one"\nclasses = [0, inf]', ["classes", "inf"]),
    (SCORER, 'scorer = "zero-one"\nclasses = [0, true]', ["classes", "True"]),
    (SCORER, 'scorer = "zero-one"\nclasses = [0, 2]', ["labels.csv", "label 1", "classes"]),
    (SCORER, 'scorer = "zero-one"\nclasses = 2', ["classes", "2"]),
    (SCORER, 'scorer = "squared"\nclasses = [0, 1]', ["classes", "regression"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [1.0, 0.0]', ["prediction_range", "low < high"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [0.0, 0.0]', ["prediction_range", "low < high"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [0.0, nan]', ["prediction_range", "nan"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [-inf, 1.0]', ["prediction_range", "inf"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [-1e308, 1e308]', ["prediction_range", "finite width"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [0.0, 1e-320]', ["prediction_range", "subnormal"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [0.0]', ["prediction_range"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = [0.0, 1.0, 2.0]', ["prediction_range"]),
    (SCORER, 'scorer = "zero-one"\nprediction_range = ["0", 1.0]', ["prediction_range", "'0'"]),
    (LABELS, 'file = "nowhere.csv"', ["labels.file", "no such file", "nowhere.csv"]),
    (LABELS, 'file = "."', ["labels.file", "no such file"]),
    (LABELS, 'file = "test.toml"', ["labels.file", "neither CSV", "test.toml"]),
    (LABELS, "file = 3", ["labels.file", "3"]),
    (LABELS, 'file = "labels.csv"\nid_column = "ID"', ["labels.csv", "no column 'ID'"]),
    (LABELS, 'file = "labels.csv"\nlabel_column = "split"', ["labels.label_column", "split.column", "'split'"]),
    (LABELS, 'file = "labels.csv"\nid_column = "label"', ["labels.id_column", "labels.label_column", "'label'"]),
    (LABELS, 'file = "labels.csv"\nextra = 1', ["labels.extra"]),
    (SPLIT, 'column = "fold"', ["labels.csv", "no column 'fold'"]),
    (SPLIT, 'column = "split"\npublic_fraction = 0.5', ["split"]),
    (SPLIT, 'column = "split"\nid = "ladder"', ["split.id", "unknown key", "another table"]),
    (SPLIT, "", ["split"]),
    (SPLIT, "public_fraction = 0.5", ["split"]),
    (SPLIT, "public_fraction = 0.5\nseed = 1", None),
    (SPLIT, "public_fraction = 0\nseed = 1", ["split.public_fraction", "0"]),
    (SPLIT, "public_fraction = 1\nseed = 1", ["split.public_fraction", "1"]),
    (SPLIT, "public_fraction = nan\nseed = 1", ["split.public_fraction", "nan"]),
    (SPLIT, "public_fraction = 1e-320\nseed = 1", ["split.public_fraction", "subnormal"]),
    (SPLIT, "public_fraction = 0.001\nseed = 1", ["split", "public set has 0 rows", "at least 2"]),
    (SPLIT, "public_fraction = 0.999\nseed = 1", ["split", "final set has 0 rows", "at least 2"]),
    (SPLIT, "public_fraction = 0.5\nseed = -1", ["split.seed", "-1"]),
    (SPLIT, "public_fraction = 0.5\nseed = 1.5", ["split.seed", "1.5"]),
    (SPLIT, "public_fraction = 0.5\nseed = 9223372036854775808", ["split.seed", "9223372036854775808"]),
    (MECHANISM, 'id = "ladr"', ["mechanism", "did you mean 'ladder'"]),
    (MECHANISM, 'id = "boosting"', ["mechanism", "boosting"]),
    (PARAMS, "params = { eta = -0.01 }", ["eta", "-0.01"]),
    (PARAMS, "params = { eta = nan }", ["eta", "nan"]),
    (PARAMS, "params = { eta = inf }", ["eta", "inf"]),
    (PARAMS, "params = { eta = 1e300 }", ["mechanism.params.eta", "1e+300", "(0, 1]"]),
    (PARAMS, "params = { eta = 1.5 }", ["mechanism.params.eta", "1.5", "(0, 1]"]),
    (PARAMS, "params = { eta = [0.01, 0.02] }", ["mechanism.params", "runs one"]),
    (PARAMS, "params = { etta = 0.01 }", ["etta", "did you mean 'eta'"]),
    (PARAMS, 'params = { eta = "0.01" }', ["eta", "'0.01'"]),
    (PARAMS, 'params = { eta = 0.01 }\ncertificate = 5', ["mechanism.certificate", "5"]),
    (RULES, "per_day = 0", ["rules.per_day", "0"]),
    (RULES, "per_day = -3", ["rules.per_day", "-3"]),
    (RULES, "per_day = 2.5", ["rules.per_day", "2.5"]),
    (RULES, 'per_day = "5"', ["rules.per_day", "'5'"]),
    (RULES, "per_day = true", ["rules.per_day", "True"]),
    (RULES, "per_day = 9223372036854775808", ["rules.per_day", "9223372036854775808"]),
    (RULES, "per_day = 5\ntotal = 0", ["rules.total", "0"]),
    (RULES, "per_day = 5\ntotal = 9223372036854775808", ["rules.total", "9223372036854775808"]),
    (RULES, "per_day = 5\nstart = 2026-03-01T00:00:00Z\nend = 2026-01-01T00:00:00Z", ["rules", "start", "end"]),
    (RULES, "per_day = 5\nstart = 2026-01-01T00:00:00", ["rules.start", "time zone"]),
    (RULES, 'per_day = 5\nstart = "yesterday"', ["rules.start", "'yesterday'"]),
    (RULES, "per_day = 5\nend = 2026-13-01T00:00:00Z", ["not valid TOML"]),
    (RULES, "per_day = 5\nend = 12", ["rules.end", "12"]),
    (RULES, "per_day = 5\nselection = 0", ["rules.selection", "0"]),
    (RULES, "per_day = 5\nselection = -2", ["rules.selection", "-2"]),
    (RULES, "per_day = 5\nselection = true", ["rules.selection", "True"]),
    (RULES, "per_day = 5\nselection = 1.5", ["rules.selection", "1.5"]),
    (RULES, 'per_day = 5\nselection = "best"', ["rules.selection", "'best'", "did you mean 'best-public'"]),
    (RULES, "per_day = 5\nselection = 9223372036854775808", ["rules.selection", "9223372036854775808"]),
    (RULES, "per_day = 5\nper_dya = 3", ["rules.per_dya", "did you mean 'per_day'"]),
    (LIMITS, "[limits]\nmax_upload_bytes = 10", ["limits.max_upload_bytes", "10"]),
    (LIMITS, "[limits]\nmax_upload_bytes = 9223372036854775808", ["limits.max_upload_bytes"]),
    (LIMITS, "[limits]\nmax_upload_bytes = 9000000000000000000", ["a challenge of 40 holdout rows", "memory",
                                                                  "limits.max_upload_bytes", "--force"]),
    (LIMITS, "[limits]\nuploads_per_second = 0", ["limits.uploads_per_second", "0"]),
    (LIMITS, "[limits]\nuploads_per_second = nan", ["limits.uploads_per_second", "nan"]),
    (LIMITS, "[limits]\nuploads_per_second = inf", ["limits.uploads_per_second", "inf"]),
    (LIMITS, "[limits]\nuploads_per_second = 1e-320", ["limits.uploads_per_second", "subnormal"]),
    (LIMITS, "[limits]\nburst = 0", ["limits.burst", "0"]),
    (LIMITS, "[limits]\nburst = 2.0", ["limits.burst", "2.0"]),
    (TEAM, 'name = ""', ["teams[0].name", "''"]),
    (TEAM, 'name = " alpha"', ["teams[0].name", "' alpha'"]),
    (TEAM, 'name = "alpha "', ["teams[0].name", "'alpha '"]),
    (TEAM, f'name = "{"a" * 65}"', ["teams[0].name"]),
    (TEAM, 'name = "al\\npha"', ["teams[0].name"]),
    (TEAM, 'name = "organiser"', ["teams[0].name", "'organiser'"]),
    (TEAM, 'name = "Organiser"', ["teams[0].name", "'Organiser'"]),
    (TEAM, 'name = "beta"', ["teams", "'beta'"]),
    (TEAM, 'name = "BETA"', ["teams", "'beta'"]),
    (TEAM, "name = 5", ["teams[0].name", "5"]),
    (TEAM, 'name = "alpha"\ntoken = "x"', ["teams[0].token"]),
    ("[limits]\n", "[limits]\n[limits]\n", ["not valid TOML"]),
    ("[rules]\n", "[rules]\nper_day = 1\n", ["not valid TOML"]),
    ("[split]", "[data]\ntrain = \"nowhere.csv\"\n[split]", ["data.train", "no such file"]),
    ("[split]", "[data]\nholdout = \"labels.csv\"\n[split]", ["labels.csv", "column 'split'", "'final'", "not a finite number"]),
]


def _label_file(folder: Path, change) -> None:
    table = pd.read_csv(folder / "labels.csv", dtype={"id": str})
    table = change(table)
    if isinstance(table, str):
        (folder / "labels.csv").write_text(table)
    else:
        table.to_csv(folder / "labels.csv", index=False)


def _cell(column: str, row: int, value):
    def change(table: pd.DataFrame) -> pd.DataFrame:
        table[column] = table[column].astype(object)
        table.loc[row, column] = value
        return table
    return change


LABEL_FILE_CASES = [
    (lambda table: "", ["labels.csv"]),
    (lambda table: "id,label,split\n", ["labels.csv", "no rows"]),
    (lambda table: "\x00\x01\x02binary", ["labels.csv"]),
    (lambda table: table.drop(columns="label"), ["labels.csv", "no column 'label'"]),
    (lambda table: table.drop(columns="split"), ["labels.csv", "no column 'split'"]),
    (lambda table: table.rename(columns={"split": "label"}), ["labels.csv", "label"]),
    (lambda table: table.head(4).assign(label=[0, 1, 0, 1], split=["public"] + ["final"] * 3),
     ["split", "public set has 1 rows of 4", "at least 2"]),
    (_cell("id", 0, None), ["labels.csv", "column 'id'", "row 1", "no id"]),
    (_cell("id", 5, "1000"), ["labels.csv", "column 'id'", "appears 2 times"]),
    (_cell("label", 4, "cat"), ["labels.csv", "column 'label'", "row 5", "'cat'", "not both"]),
    (_cell("label", 4, "nan"), ["labels.csv", "column 'label'", "not a finite number"]),
    (_cell("label", 4, "inf"), ["labels.csv", "column 'label'", "not a finite number"]),
    (_cell("label", 4, None), ["labels.csv", "column 'label'", "row 5", "has no label"]),
    (_cell("label", 4, "1e400"), ["labels.csv", "column 'label'", "not a finite number"]),
    (_cell("split", 4, "private"), ["labels.csv", "column 'split'", "'private'", "'public' or 'final'"]),
    (_cell("split", 4, None), ["labels.csv", "column 'split'", "'public' or 'final'"]),
    (lambda table: table.assign(split="public"), ["split", "final set has 0 rows"]),
    (lambda table: table.assign(split=["final"] * (len(table) - 1) + ["public"]), ["split", "public set has 1 rows"]),
    (lambda table: table.assign(label=0.0), ["labels.csv", "at least two classes"]),
]


@pytest.fixture
def challenge_folder(tmp_path):
    write_challenge(tmp_path, n=40)
    return tmp_path


def _verify_line() -> str:
    return "serve verify {tmp}/test.toml"


@pytest.mark.parametrize(("old", "new", "words"), CHALLENGE_CASES)
def test_bad_challenge_files_are_refused_in_one_line_before_any_state_is_made(challenge_folder, capsys, old, new, words):
    path = challenge_folder / "test.toml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    if words is None:
        challenges.load(path)
        return
    _refused_changing_nothing(capsys, challenge_folder, _verify_line(), words)
    with pytest.raises((ChallengeError, TooLarge)):
        challenges.load(path)


@pytest.mark.parametrize(("change", "words"), LABEL_FILE_CASES)
def test_bad_label_files_are_refused_in_one_line_before_any_state_is_made(challenge_folder, capsys, change, words):
    _label_file(challenge_folder, change)
    _refused_changing_nothing(capsys, challenge_folder, _verify_line(), words)


SERVE_LINE_CASES = [
    ("serve verify {tmp}/nowhere.toml", ["nowhere.toml", "no such challenge file"]),
    ("serve verify {tmp}", ["no such challenge file"]),
    ("serve verify {tmp}/labels.csv", ["labels.csv", "not valid TOML"]),
    ("serve {tmp}/test.toml --uncertified --port -1", ["--port", "-1"]),
    ("serve {tmp}/test.toml --uncertified --port 65536", ["--port", "65536"]),
    ("serve {tmp}/test.toml --demo", ["--demo"]),
    ("serve", ["--demo"]),
    ("serve {tmp}/test.toml extra", ["'extra'"]),
    ("serve {tmp}/test.toml --uncertified --reissue nobody", ["--reissue", "'nobody'"]),
    ("serve verify {tmp}/test.toml --database notaurl", ["--database", "'notaurl'"]),
    ("serve verify {tmp}/test.toml --database sqlite:///{tmp}/nowhere/log.sqlite", ["--database", "nowhere"]),
    ("serve {tmp}/test.toml --uncertified --reissue alpha --secret {tmp}/labels.csv", ["labels.csv", "secret seed"]),
    ("serve verify {tmp}/test.toml --secret {tmp}", ["--secret", "directory"]),
    ("serve verify {tmp}/test.toml --state {tmp}/labels.csv", ["--state", "labels.csv"]),
    ("serve verify {tmp}/test.toml", ["--state", "no log", "serve"]),
    ("serve verify {tmp}/test.toml --database sqlite:///{tmp}/empty.sqlite", ["--database", "empty.sqlite", "no log"]),
    ("serve verify {tmp}/test.toml --database mysql://u@h/db", ["--database", "'mysql'"]),
    ("serve verify {tmp}/test.toml --anchor 3", ["--anchor", "'3'", "ID:HASH"]),
    ("serve verify {tmp}/test.toml --anchor 0:" + "a" * 64, ["--anchor", "ID:HASH"]),
    ("dev bench-serve --n 1", ["--n", "1"]),
    ("dev bench-serve --n 1000000000000", ["--n", "--force"]),
    ("dev bench-serve --clients 0", ["--clients", "0"]),
    ("dev bench-serve --clients 100000", ["--clients", "100000"]),
    ("dev bench-serve --seconds 0", ["--seconds", "0"]),
    ("dev bench-serve --seconds nan", ["--seconds", "nan"]),
    ("dev bench-serve --n 100000000 --clients 256", ["server benchmark", "memory", "--force"]),
    ("dev bench-serve --seconds inf", ["--seconds", "inf"]),
    ("dev bench-serve --mechanisms ladr", ["--mechanisms", "'ladr'"]),
    ("dev bench-serve --out {tmp}", ["--out", "directory"]),
]


@pytest.mark.parametrize(("line", "words"), SERVE_LINE_CASES)
def test_bad_serve_command_lines_are_refused_in_one_line_and_change_nothing(challenge_folder, capsys, line, words):
    _refused_changing_nothing(capsys, challenge_folder, line, words)


# --- ladderlab serve attack -----------------------------------------------------------------

ATTACK_CASES = [
    ("serve attack 'not a url' --token t --attack boosting", ["'not a url'", "address"]),
    ("serve attack ftp://127.0.0.1:1 --token t --attack boosting", ["'ftp://127.0.0.1:1'", "address"]),
    ("serve attack http:// --token t --attack boosting", ["'http://'", "address"]),
    ("serve attack http://127.0.0.1:99999 --token t --attack boosting", ["'http://127.0.0.1:99999'", "address"]),
    ("serve attack http://127.0.0.1:x --token t --attack boosting", ["'http://127.0.0.1:x'", "address"]),
    ("serve attack http://127.0.0.1:1 --token '' --attack boosting", ["--token", "''"]),
    ("serve attack http://127.0.0.1:1 --token 'a b' --attack boosting", ["--token", "'a b'"]),
    ("serve attack http://127.0.0.1:1 --token 'é' --attack boosting", ["--token", "'é'"]),
    ("serve attack http://127.0.0.1:1 --token t --attack bosting", ["bosting", "did you mean 'boosting'"]),
    ("serve attack http://127.0.0.1:1 --token t --attack ladder", ["ladder"]),
    ("serve attack http://127.0.0.1:1 --token t --attack 'boosting(k=0)'", ["k", "0"]),
    ("serve attack http://127.0.0.1:1 --token t --attack 'boosting(k=4, k=5)'", ["k", "twice"]),
    ("serve attack http://127.0.0.1:1 --token t --attack 'boosting(k=[4,5])'", ["boosting"]),
    ("serve attack http://127.0.0.1:1 --token t --attack 'boosting(k=nan)'", ["k", "nan"]),
    ("serve attack http://127.0.0.1:1 --token t --attack 'hill-climbing(block=0)'", ["block", "0"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --budget -1", ["--budget", "-1"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --budget 0", ["--budget", "0"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --budget x", ["--budget", "'x'"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --budget 18446744073709551616", ["--budget"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --seed -1", ["--seed", "-1"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --final-out {tmp}", ["--final-out", "directory"]),
    ("serve attack http://127.0.0.1:1 --token t --attack boosting --final-out {tmp}/no/where.csv", ["--final-out", "does not exist"]),
    ("serve attack http://127.0.0.1:1 --attack boosting", ["--token"]),
    ("serve attack http://127.0.0.1:1 --token t", ["--attack"]),
]


@pytest.mark.parametrize(("line", "words"), ATTACK_CASES)
def test_bad_attack_command_lines_are_refused_in_one_line_and_change_nothing(tmp_path, capsys, line, words):
    _refused_changing_nothing(capsys, tmp_path, line, words)


# --- ladderlab stats replay and ladderlab stats rank-certificate ----------------------------

LOG = """team,submission_id,team_sequence,submitted_at,public_score,private_score
A,101,1,2024-01-01T00:00:00Z,0.30,0.32
B,102,1,2024-01-01T01:00:00Z,0.22,0.20
A,103,2,2024-01-01T02:00:00Z,0.20,0.25
C,104,1,2024-01-01T03:00:00Z,0.35,0.30
"""
HEADER, FIRST = LOG.splitlines()[0], LOG.splitlines()[1]
SAMPLES = "team,sample,loss\n" + "".join(f"{team},{sample},{(ord(team) * 7 + sample * 3) % 5 / 4}\n"
                                          for team in "ABC" for sample in range(6))
PREDICTIONS = "team,sample,prediction\n" + "".join(f"{team},{sample},{(ord(team) + sample) % 2}\n"
                                                   for team in "ABC" for sample in range(6))
LABELS_OF_SAMPLES = "sample,label\n" + "".join(f"{sample},{sample % 2}\n" for sample in range(6))
REPLAY_FILES = {"log.csv": LOG, "samples.csv": SAMPLES, "predictions.csv": PREDICTIONS,
                "sample_labels.csv": LABELS_OF_SAMPLES, "empty.csv": "", "notes.txt": "just words\n"}


def _log(old: str, new: str) -> str:
    assert old in LOG, old
    return LOG.replace(old, new, 1)


# (file name and text written before the command, the command, words the message must contain)
REPLAY_CASES = [
    (None, "stats replay {tmp}/nowhere.csv --smaller-is-better", ["nowhere.csv", "no such file"]),
    (None, "stats replay {tmp}/empty.csv --smaller-is-better", ["empty.csv"]),
    (None, "stats replay {tmp}/notes.txt --smaller-is-better", ["notes.txt"]),
    (None, "stats replay {tmp}/log.csv", ["log.csv", "--scorer"]),
    (None, "stats replay {tmp}/log.csv --scorer zero-on", ["--scorer", "zero-on"]),
    (None, "stats replay {tmp}/log.csv --log-format kaggle", ["--log-format", "'kaggle'"]),
    (None, "stats replay {tmp}/log.csv --log-format meta-kaggle --smaller-is-better", ["log.csv", "Id"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --selection 0", ["selection", "0"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --selection best", ["selection", "'best'"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --top 0", ["--top", "0"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --public-size 0", ["--public-size", "0"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --seed -1", ["--seed", "-1"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --mechanism ladr", ["--mechanism", "ladr"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --mechanism 'ladder(eta=nan)'", ["eta", "nan"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --mechanism 'ladder(eta=0.1, eta=0.2)'", ["eta", "twice"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --out {tmp}", ["--out", "directory"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --rank-certificate", ["--rank-certificate", "--samples"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --samples {tmp}/nowhere.csv", ["nowhere.csv", "no such file"]),
    (None, "stats replay {tmp}/log.csv --smaller-is-better --samples {tmp}/log.csv", ["log.csv", "team, sample"]),
    (("samples.csv", SAMPLES.replace("C,", "Z,")), "stats replay {tmp}/log.csv --smaller-is-better --samples {tmp}/samples.csv",
     ["--samples", "'Z'", "not in the log"]),
    (None, "stats replay {tmp} --smaller-is-better --mechanism ladder", ["--mechanism", "competition run"]),
    (("log.csv", _log("0.20,0.25", "0.20,abc")), "stats replay {tmp}/log.csv --smaller-is-better",
     ["log.csv", "private_score", "line 4", "'abc'"]),
    (("log.csv", _log("0.20,0.25", "nan,0.25")), "stats replay {tmp}/log.csv --smaller-is-better", ["public_score", "line 4"]),
    (("log.csv", _log("0.20,0.25", "inf,0.25")), "stats replay {tmp}/log.csv --smaller-is-better", ["public_score", "line 4"]),
    (("log.csv", _log("0.20,0.25", "1e400,0.25")), "stats replay {tmp}/log.csv --smaller-is-better", ["public_score", "line 4"]),
    (("log.csv", _log("2024-01-01T02:00:00Z", "someday")), "stats replay {tmp}/log.csv --smaller-is-better",
     ["submitted_at", "line 4", "'someday'"]),
    (("log.csv", _log("2024-01-01T02:00:00Z", "2023-12-31T00:00:00Z")), "stats replay {tmp}/log.csv --smaller-is-better",
     ["submitted_at", "dated before"]),
    (("log.csv", _log("A,103", "A,101")), "stats replay {tmp}/log.csv --smaller-is-better",
     ["submission_id", "101 appears twice"]),
    (("log.csv", _log("A,103,2", "A,103,3")), "stats replay {tmp}/log.csv --smaller-is-better", ["team_sequence", "expected 2"]),
    (("log.csv", _log("A,103,2", "A,103,x")), "stats replay {tmp}/log.csv --smaller-is-better", ["team_sequence", "'x'"]),
    (("log.csv", _log("A,103", ",103")), "stats replay {tmp}/log.csv --smaller-is-better", ["team", "line 4"]),
    (("log.csv", LOG.replace("team_sequence,", "")), "stats replay {tmp}/log.csv --smaller-is-better", ["log.csv"]),
    (("log.csv", LOG.replace(",private_score", ",public_score")), "stats replay {tmp}/log.csv --smaller-is-better",
     ["log.csv", "public_score"]),
    (("log.csv", HEADER + "\n"), "stats replay {tmp}/log.csv --smaller-is-better", ["log.csv", "no submissions"]),
    (("log.csv", _log("0.20,0.25", "1e308,0.25")), "stats replay {tmp}/log.csv --scorer zero-one",
     ["public_score", "line 4", "1e+308", "zero-one", "[0, 1]"]),
    (("log.csv", _log("0.20,0.25", "0.20,230000")), "stats replay {tmp}/log.csv --scorer zero-one",
     ["private_score", "line 4", "230000.0", "zero-one"]),
    (("log.csv", _log("0.20,0.25", "-0.2,0.25")), "stats replay {tmp}/log.csv --scorer zero-one",
     ["public_score", "line 4", "-0.2"]),
    (("log.csv", _log("A,103", "A,99999999999999999999")), "stats replay {tmp}/log.csv --smaller-is-better",
     ["submission_id", "line 4", "64 bits", "99999999999999999999"]),
    (("log.csv", LOG.replace(",private_score\n", ",private_score,selected\n").replace(",0.32\n", ",0.32,maybe\n")),
     "stats replay {tmp}/log.csv --smaller-is-better", ["selected", "'maybe'"]),
]

RANK_CASES = [
    (None, "stats rank-certificate {tmp}/nowhere.csv", ["nowhere.csv", "no such file"]),
    (None, "stats rank-certificate {tmp}/empty.csv", ["empty.csv"]),
    (None, "stats rank-certificate {tmp}/log.csv", ["log.csv", "team, sample"]),
    (None, "stats rank-certificate {tmp}/samples.csv --replicates 0", ["--replicates", "0"]),
    (None, "stats rank-certificate {tmp}/samples.csv --replicates 1000000000000", ["ranking certificate", "1 T bootstrap resamples", "memory", "--force"]),
    (None, "stats rank-certificate {tmp}/samples.csv --level 1", ["--level", "1"]),
    (None, "stats rank-certificate {tmp}/samples.csv --level 0", ["--level", "0"]),
    (None, "stats rank-certificate {tmp}/samples.csv --level nan", ["--level", "nan"]),
    (None, "stats rank-certificate {tmp}/samples.csv --challengers 0", ["--challengers", "0"]),
    (None, "stats rank-certificate {tmp}/samples.csv --seed -1", ["--seed", "-1"]),
    (None, "stats rank-certificate {tmp}/samples.csv --top 0", ["--top", "0"]),
    (None, "stats rank-certificate {tmp}/samples.csv --format xml", ["--format", "'xml'"]),
    (None, "stats rank-certificate {tmp}/samples.csv --out {tmp}", ["--out", "directory"]),
    (None, "stats rank-certificate {tmp}/samples.csv --scorer zero-one", ["--scorer", "losses"]),
    (None, "stats rank-certificate {tmp}/predictions.csv", ["predictions.csv", "--labels"]),
    (None, "stats rank-certificate {tmp}/predictions.csv --labels {tmp}/sample_labels.csv --scorer zero-on",
     ["--scorer", "zero-on"]),
    (None, "stats rank-certificate {tmp}/predictions.csv --labels {tmp}/log.csv --scorer zero-one",
     ["log.csv", "sample and label"]),
    (("sample_labels.csv", LABELS_OF_SAMPLES.replace("5,1\n", "")),
     "stats rank-certificate {tmp}/predictions.csv --labels {tmp}/sample_labels.csv --scorer zero-one", ["no label for sample '5'"]),
    (("sample_labels.csv", LABELS_OF_SAMPLES + "5,0\n"),
     "stats rank-certificate {tmp}/predictions.csv --labels {tmp}/sample_labels.csv --scorer zero-one", ["sample '5'", "two labels"]),
    (("sample_labels.csv", LABELS_OF_SAMPLES.replace("5,1\n", "5,x\n")),
     "stats rank-certificate {tmp}/predictions.csv --labels {tmp}/sample_labels.csv --scorer zero-one", ["label", "'x'"]),
    (("samples.csv", SAMPLES.replace("A,0,", "A,1,")), "stats rank-certificate {tmp}/samples.csv", ["'A'", "twice"]),
    (("samples.csv", SAMPLES.replace("B,3,0.25\n", "")), "stats rank-certificate {tmp}/samples.csv", ["every sample once"]),
    (("samples.csv", "".join(line + "\n" for line in SAMPLES.splitlines() if not line.startswith(("B", "C")))),
     "stats rank-certificate {tmp}/samples.csv", ["at least two teams"]),
    (("samples.csv", SAMPLES.replace("A,2,", "A,2,x").replace("x0", "x")), "stats rank-certificate {tmp}/samples.csv",
     ["'loss'", "'A'", "finite"]),
    (("samples.csv", SAMPLES.replace("team,sample,loss", "team,sample,loss,loss")), "stats rank-certificate {tmp}/samples.csv",
     ["samples.csv", "loss"]),
    (("samples.csv", SAMPLES.replace("team,sample,loss", "team,sample,risk")), "stats rank-certificate {tmp}/samples.csv",
     ["samples.csv", "loss or prediction"]),
    (("samples.csv", SAMPLES.replace("B,3,", ",3,")), "stats rank-certificate {tmp}/samples.csv",
     ["samples.csv", "'team'", "line 11", "needs a team name"]),
    (("samples.csv", SAMPLES.replace("B,3,", "B,,")), "stats rank-certificate {tmp}/samples.csv",
     ["samples.csv", "'sample'", "line 11", "needs a sample name"]),
    (None, "stats rank-certificate {tmp} --labels {tmp}/sample_labels.csv", ["--labels", "competition run"]),
]


@pytest.mark.parametrize(("written", "line", "words"), REPLAY_CASES + RANK_CASES)
def test_bad_logs_and_samples_are_refused_in_one_line_and_change_nothing(tmp_path, capsys, written, line, words):
    for name, text in REPLAY_FILES.items():
        (tmp_path / name).write_text(text)
    if written is not None:
        (tmp_path / written[0]).write_text(written[1])
    _refused_changing_nothing(capsys, tmp_path, line, words)


def test_the_round_two_battery_has_at_least_100_new_cases():
    tables = (CHALLENGE_CASES, LABEL_FILE_CASES, SERVE_LINE_CASES, ATTACK_CASES, REPLAY_CASES, RANK_CASES)
    assert sum(map(len, tables)) >= 100


@pytest.mark.parametrize(("line", "words"), [
    ("stats replay {big} --smaller-is-better", ["reading {big}", "memory", "fewer submissions", "--force"]),
    ("stats rank-certificate {big}", ["reading {big}", "memory", "fewer teams or samples", "--force"]),
    ("serve verify {tmp}/test.toml", ["reading {big}", "memory", "labels.file", "--force"]),
])
def test_files_too_large_to_read_are_refused_by_their_size_before_reading(challenge_folder, capsys, line, words):
    big = challenge_folder / "labels.csv"
    with open(big, "r+b") as file:
        file.truncate(1 << 42)  # sparse: 4 TiB that take no disk
    code = main(shlex.split(line.format(tmp=challenge_folder, big=big)))
    assert_one_line_error(capsys, code, [word.format(big=big) for word in words])
    assert sorted(path.name for path in challenge_folder.iterdir()) == ["labels.csv", "test.toml"]
