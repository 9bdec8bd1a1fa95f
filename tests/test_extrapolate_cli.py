"""``ladderlab stats extrapolate``: the shipped examples, the output formats, and one-line errors for bad files."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ladderlab.cli.commands import main
from ladderlab.stats import outscored_counts, unbiased_accuracy
from ladderlab.stats.class_scores import read_observed_classes

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "extrapolation"
RANKS, SCORES = EXAMPLES / "ranks.txt", EXAMPLES / "scores.csv"


def run_json(capsys, *arguments: str) -> dict:
    assert main(["stats", "extrapolate", *arguments, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_shipped_ranks_example_runs_every_method(capsys, tmp_path):
    plot = tmp_path / "curve.png"
    result = run_json(capsys, str(RANKS), "--from", "20", "--to", "200", "--bins", "400", "--plot", str(plot))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (result["k"], result["K"], result["test_points"]) == (20, 200, 500)
    predictions = result["predictions"]
    assert set(predictions) == {"un", "exp", "cons", "mple", "hd"}
    assert predictions["un"]["accuracy"] is None and len(predictions["un"]["curve"]) == 200
    for method in ("exp", "cons", "hd"):
        curve = predictions[method]["curve"]
        assert len(curve) == 200 and curve[0] == pytest.approx(1.0)
        assert curve[19] == pytest.approx(result["observed_accuracy"], abs=1e-6)
        assert 0 < predictions[method]["accuracy"] < result["observed_accuracy"]


def test_shipped_score_matrix_gives_the_same_counts_as_its_ranks(capsys):
    result = run_json(capsys, str(SCORES), "--to", "40", "--method", "hd")
    assert (result["input"], result["k"], result["test_points"]) == ("scores", 10, 150)
    lines = [line.split(",") for line in SCORES.read_text().splitlines()]
    names = lines[0][1:]
    scores = np.array([[float(x) for x in row[1:]] for row in lines[1:]])
    labels = np.array([names.index(row[0]) for row in lines[1:]])
    expected = unbiased_accuracy(outscored_counts(scores, labels), 10)
    np.testing.assert_allclose(result["unbiased"], expected, atol=1e-12)


def test_text_output_names_each_method_and_its_prediction(capsys):
    assert main(["stats", "extrapolate", str(RANKS), "--from", "20", "--to", "100", "--method", "exp"]) == 0
    out = capsys.readouterr().out
    assert "observed accuracy at k = 20" in out
    assert "exp" in out and "predicted accuracy at K = 100" in out


def test_un_up_to_k_is_the_subset_averaged_accuracy(capsys):
    result = run_json(capsys, str(RANKS), "--from", "20", "--to", "20", "--method", "un")
    observed = read_observed_classes(RANKS, "ranks", 20)
    assert result["predictions"]["un"]["accuracy"] == pytest.approx(np.mean(observed.outscored == 19))


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name, text, arguments, message", [
    ("ranks.txt", "1 2 3\n4 x 1\n", ["--from", "5"], "'x' is not a rank"),
    ("ranks.txt", "1 2 3\n4 9 1\n", ["--from", "5"], "rank 9 is outside 1…5"),
    ("ranks.txt", "1 2 3\n", [], "give k (--from)"),
    ("ranks.txt", "# only a comment\n", ["--from", "5"], "is empty"),
    ("scores.csv", "a,b,c\n1,2,3\n", [], "no 'label' column"),
    ("scores.csv", "label,a,b\na,1,2\nz,3,1\n", [], "label 'z' is not one of the score columns"),
    ("scores.csv", "label,a,b\na,1,oops\n", [], "'oops' is not a finite number"),
    ("scores.csv", "label,a\na,1\n", [], "at least 2 classes"),
    ("scores.csv", "label,a,b,c\na,1,2,3\n", ["--from", "4"], "has 3 classes but k = 4"),
    ("ranks.txt", "1 2 3 1 1\n", ["--from", "5", "--to", "3"], "fewer classes than the 5 observed"),
    ("ranks.txt", "1 2 3 1 1\n", ["--from", "5", "--method", "un"], "exists only up to k = 5"),
])
def test_bad_input_is_a_one_line_error_naming_the_problem(capsys, tmp_path, name, text, arguments, message):
    path = write(tmp_path, name, text)
    argv = ["stats", "extrapolate", path, *arguments]
    if "--to" not in arguments:
        argv += ["--to", "50"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ladderlab: error: ") and err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize("content", [None, b"\xff\xfe\x00binary"])
def test_missing_or_unreadable_file_is_named_in_the_error(capsys, tmp_path, content):
    path = tmp_path / "absent.txt"
    if content is not None:
        path.write_bytes(content)
    assert main(["stats", "extrapolate", str(path), "--from", "5", "--to", "10"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ladderlab: error: ") and str(path) in err


def test_a_plot_into_a_missing_folder_is_refused_before_any_work(capsys, tmp_path):
    assert main(["stats", "extrapolate", str(RANKS), "--from", "20", "--to", "40",
                 "--plot", str(tmp_path / "no" / "such" / "curve.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cons_infeasibility_is_reported_without_failing_the_other_methods(capsys, tmp_path):
    """Every test point ranked last: accuracy 0 is below chance, no non-decreasing density fits it."""
    path = write(tmp_path, "ranks.txt", "5 5 5 5 5 5\n")
    result = run_json(capsys, path, "--from", "5", "--to", "10", "--method", "all")
    assert "1/k" in result["predictions"]["cons"]["error"]
    assert result["predictions"]["exp"]["accuracy"] is not None


def test_the_authors_convention_is_their_code_from_the_command_line(capsys):
    """--convention authors gives what ladderlab.stats.authors computes, here for CONS and HD."""
    from ladderlab.stats import authors, pseudolikelihood

    result = run_json(capsys, str(RANKS), "--from", "20", "--to", "100", "--method", "all", "--convention", "authors")
    assert result["convention"] == "authors"
    observed = read_observed_classes(RANKS, "ranks", 20)
    counts = pseudolikelihood.check_counts(observed.outscored, 20)
    masses = authors.fit_point_masses(counts, 20, constrained=True)
    assert result["predictions"]["cons"]["accuracy"] == pytest.approx(authors.point_moments(masses, 100)[-1], abs=1e-6)
    assert result["predictions"]["hd"]["accuracy"] == authors.high_dimensional_curve(result["observed_accuracy"], 20, 100)[-1]


def test_bins_with_the_authors_convention_is_refused_before_any_work(capsys):
    assert main(["stats", "extrapolate", str(RANKS), "--from", "20", "--to", "40", "--convention", "authors", "--bins", "400"]) == 2
    assert "--bins 400: the authors' convention has its own grid" in capsys.readouterr().err


@pytest.fixture
def without_cvxpy(monkeypatch):
    """A plain install, without the ``extrapolation`` extra: ``import cvxpy`` fails."""
    monkeypatch.setitem(sys.modules, "cvxpy", None)


def test_cons_without_cvxpy_is_a_one_line_error_naming_the_extra(capsys, without_cvxpy):
    assert main(["stats", "extrapolate", str(RANKS), "--from", "20", "--to", "40", "--method", "cons"]) == 2
    error = capsys.readouterr().err
    assert "--method cons" in error and "pip install 'ladderlab[extrapolation]'" in error
    assert error.count("\n") == 1


def test_every_method_without_cvxpy_runs_those_that_need_no_solver(capsys, without_cvxpy):
    result = run_json(capsys, str(RANKS), "--from", "20", "--to", "40")
    for method in ("cons", "mple"):
        assert "ladderlab[extrapolation]" in result["predictions"][method]["error"]
    assert all(result["predictions"][method]["accuracy"] is not None for method in ("exp", "hd"))


def test_fitting_without_cvxpy_names_the_extra(without_cvxpy):
    from ladderlab.stats import pseudolikelihood

    with pytest.raises(ModuleNotFoundError, match=r"ladderlab\[extrapolation\]"):
        pseudolikelihood.constrained_pseudolikelihood(np.array([0, 1, 2, 19]), 20)


def test_a_bootstrap_prediction_is_the_method_on_test_points_drawn_with_replacement():
    from ladderlab.stats import extrapolation

    outscored = read_observed_classes(RANKS, "ranks", 20).outscored
    resampled = extrapolation.bootstrap_accuracies(outscored, 20, 60, "exp", np.random.default_rng(7), 4)
    drawn = np.random.default_rng(7).integers(0, outscored.size, size=(4, outscored.size))
    expected = [extrapolation.accuracy_curve(outscored[rows], 20, 60, "exp")[-1] for rows in drawn]
    np.testing.assert_array_equal(resampled, expected)
    assert len(set(resampled)) == 4, "each resample draws its own test points"


def test_a_resample_on_which_the_method_fails_is_counted_not_fatal(tmp_path):
    from ladderlab.stats import extrapolation, extrapolation_spread

    resampled = extrapolation.bootstrap_accuracies(np.full(6, 4), 5, 10, "cons", np.random.default_rng(0), 3)
    assert extrapolation_spread.interval(resampled) == {"resamples": 3, "failed": 3, "interval": None}


def _prediction(accuracy, low, high):
    return {"accuracy": accuracy, "bootstrap": {"resamples": 100, "failed": 0, "interval": [low, high]}}


def test_the_verdict_says_which_intervals_sampling_cannot_separate():
    from ladderlab.stats.extrapolation_spread import verdict

    overlapping = {"exp": _prediction(0.23, 0.01, 0.32), "cons": _prediction(0.10, 0.05, 0.22), "un": {"accuracy": None}}
    spread, judged = verdict(overlapping, 20, 200, 100)
    assert spread.startswith("the methods predict from 0.1000 (cons) to 0.2300 (exp) at K = 200")
    assert judged.startswith("every 95% interval overlaps every other") and "(exp) is 0.3100 wide" in judged
    apart = {**overlapping, "hd": _prediction(0.40, 0.35, 0.45)}
    assert "do not overlap (exp–hd, cons–hd)" in verdict(apart, 20, 200, 100)[-1]
    assert verdict(overlapping, 20, 20, 100) == [], "no extrapolation, nothing to judge"


def test_extrapolate_bootstrap_gives_each_method_an_interval_reproducibly(capsys):
    arguments = (str(RANKS), "--from", "20", "--to", "60", "--method", "exp", "--bootstrap", "20")
    first, again = run_json(capsys, *arguments), run_json(capsys, *arguments)
    assert first == again
    spread = first["predictions"]["exp"]["bootstrap"]
    assert spread["resamples"] == 20 and spread["failed"] == 0
    assert spread["interval"][0] < first["predictions"]["exp"]["accuracy"] < spread["interval"][1]
    other_seed = run_json(capsys, *arguments, "--seed", "1")
    assert other_seed["predictions"]["exp"]["bootstrap"] != spread


def test_text_output_says_how_far_apart_the_methods_are(capsys):
    assert main(["stats", "extrapolate", str(RANKS), "--from", "20", "--to", "60", "--bins", "200"]) == 0
    out = capsys.readouterr().out
    result = run_json(capsys, str(RANKS), "--from", "20", "--to", "60", "--bins", "200")
    values = {m: p["accuracy"] for m, p in result["predictions"].items() if p["accuracy"] is not None}
    low, high = min(values, key=values.get), max(values, key=values.get)
    assert f"the methods predict from {values[low]:.4f} ({low}) to {values[high]:.4f} ({high}) at K = 60" in out
    assert "--bootstrap 200 adds each method's sampling interval" in out
    assert result["spread"] == [line for line in out.splitlines() if line.startswith(("the methods", "--bootstrap"))]
