"""The ``authors`` convention against Zheng, Achanta & Benjamini's own R code, on the same inputs.

``tests/data/zheng-authors/authors-outputs.json`` holds 25 inputs (V of 15 synthetic data sets
and of QDA and multinomial logistic regression on the authors' Figure 3 mixture) with the
outputs of their ``simulation_source.R``, made by ``make_fixtures.R`` beside it.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from ladderlab.stats import authors, extrapolation, pseudolikelihood

FIXTURES = json.loads((Path(__file__).parent / "data" / "zheng-authors" / "authors-outputs.json").read_text())
CASES = FIXTURES["cases"]
IDS = [f"{case['design']}-k{case['k']}" for case in CASES]


def curve_at(case: dict, method: str, convention: str = "authors") -> np.ndarray:
    K = np.array(case["K"])
    return extrapolation.accuracy_curve(np.array(case["V"]), case["k"], int(K.max()), method,
                                        convention=convention)[K - 1]


def constraint_violation(case: dict, masses: np.ndarray) -> float:
    """How far the authors' SLSQP answer is from their CONS constraints (total mass ≤ 1,
    non-decreasing, (k − 1)-th moment = the observed accuracy)."""
    observed = np.mean(np.array(case["V"]) == case["k"] - 1)
    return max(abs(authors.POINTS ** (case["k"] - 1) @ masses - observed),
               max(0.0, -np.diff(masses).min()), max(0.0, masses.sum() - 1.0))


def test_the_fixtures_use_the_authors_grid():
    np.testing.assert_allclose(FIXTURES["grid"], authors.POINTS, rtol=0, atol=1e-15)


def test_the_hd_quadrature_is_the_normal_quantile_function_bit_for_bit():
    """Computed without scipy.stats, which the module no longer imports at load time."""
    from scipy import stats

    assert np.array_equal(authors.QUANTILES, stats.norm.ppf((np.arange(1, 10_001) - 0.5) / 10_000))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_exp_and_hd_equal_the_authors_code(case):
    """Same grids, same fit, same quadrature: equal to the last bits of a double."""
    np.testing.assert_allclose(curve_at(case, "exp"), case["exp"], rtol=0, atol=1e-9)
    if case["hd"] is not None:
        np.testing.assert_allclose(curve_at(case, "hd"), case["hd"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cons_equals_the_authors_code_wherever_their_optimiser_converged(case):
    """Their SLSQP either reaches the optimum of their problem, and CONS agrees to 1e-3 at
    K = 50, 100 and 400, or it stops outside the constraints or short of the maximum that
    ours reaches (by more than one unit of log pseudolikelihood)."""
    counts = pseudolikelihood.check_counts(np.array(case["V"]), case["k"])
    theirs = np.array(case["cons_masses"])
    ours = authors.fit_point_masses(counts, case["k"], constrained=True)
    assert constraint_violation(case, ours) < 1e-6
    if np.max(np.abs(curve_at(case, "cons") - case["cons"])) < 1e-3:
        return
    stopped_short = authors.point_log_pseudolikelihood(counts, case["k"], ours) > case["cons_loglik"] + 1
    assert stopped_short or constraint_violation(case, theirs) > 1e-3


def test_cons_agrees_on_most_inputs():
    agreeing = sum(np.max(np.abs(curve_at(case, "cons") - case["cons"])) < 1e-3 for case in CASES)
    assert agreeing == 19


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mple_reaches_at_least_the_authors_pseudolikelihood(case):
    """MPLE's density is not identified (the paper's point), so only its objective is compared."""
    counts = pseudolikelihood.check_counts(np.array(case["V"]), case["k"])
    ours = authors.point_log_pseudolikelihood(counts, case["k"], authors.fit_point_masses(counts, case["k"], False))
    assert ours >= case["mple_loglik"] - 1e-4 * abs(case["mple_loglik"])


@pytest.mark.slow
def test_the_default_convention_departs_from_the_authors_code():
    """ladderlab's default (Binomial(k − 1, U), 1000 bins, wider grids) is not the authors' code:
    on their own Figure 3 data its CONS differs by up to 0.4 (docs/extrapolation.md)."""
    figure3 = [case for case in CASES if case["design"].startswith("figure3")]
    differences = [np.max(np.abs(curve_at(case, "cons", "ladderlab") - case["cons"])) for case in figure3]
    assert max(differences) > 0.3


def test_the_authors_convention_has_its_own_grid():
    with pytest.raises(ValueError, match="bins = 400: the authors' convention has its fixed grid of 51 points"):
        extrapolation.accuracy_curve(np.array([0, 1, 2]), 3, 10, "cons", bins=400, convention="authors")
    with pytest.raises(ValueError, match="unknown convention 'paper'"):
        extrapolation.accuracy_curve(np.array([0, 1, 2]), 3, 10, "cons", convention="paper")
