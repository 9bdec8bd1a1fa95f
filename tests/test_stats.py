"""Statistics of the winner: Møllersen & Holsbø's best-of-m distribution and Zheng et al.'s extrapolation."""

import itertools
import json
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from ladderlab.cli.commands import main
from ladderlab.stats import (
    best_of_m,
    estimate_sota,
    exponential_extrapolation,
    high_dimensional_extrapolation,
    outscored_counts,
    simulate_best_of_m,
    unbiased_accuracy,
)
from ladderlab.stats.extrapolation import pi_bar
from ladderlab.stats.sota import conditional_accuracies

TABLE_1 = [  # m, n, θ, E(θ̂_max), sd, as printed (Møllersen & Holsbø, Table 1)
    (1000, 3000, 0.85, 0.8707, 0.002197),
    (1000, 3000, 0.90, 0.9173, 0.001817),
    (1000, 3000, 0.95, 0.9624, 0.001277),
    (100, 3000, 0.90, 0.9135, 0.002250),
    (500, 3000, 0.90, 0.9163, 0.001923),
    (1000, 1000, 0.90, 0.9294, 0.003007),
    (1000, 10000, 0.90, 0.9096, 0.001022),
]
DELTA = 1e-9


def dkw(samples: int) -> float:
    """Dvoretzky–Kiefer–Wolfowitz: sup |F_empirical − F| exceeds this with probability ≤ DELTA."""
    return math.sqrt(math.log(2 / DELTA) / (2 * samples))


@pytest.mark.parametrize(("m", "n", "theta", "mean", "sd"), TABLE_1)
def test_table_1_is_reproduced_to_the_printed_digits(m, n, theta, mean, sd):
    distribution = best_of_m(theta, n, m)
    assert round(distribution.mean, 4) == mean
    assert round(distribution.sd, 6) == sd


def test_the_multiplicity_adjusted_upper_limit_of_section_3_4():
    distribution = best_of_m(0.9, 3000, 1000)
    assert round(distribution.upper_limit(0.05), 4) == 0.9213
    x = round(3000 * (1 - distribution.upper_limit(0.05)))
    single = scipy_stats.binom.cdf(x, 3000, 0.1)  # the paper's P_x for one classifier
    assert 1 - (1 - single) ** 1000 >= 0.025 > 1 - (1 - scipy_stats.binom.cdf(x - 1, 3000, 0.1)) ** 1000
    assert round(1 - 0.975 ** (1 / 1000), 8) == 0.00002532


def test_non_identical_independent_row_of_table_2():
    distribution = best_of_m(np.linspace(0.875, 0.90, 1000), 3000)
    assert round(distribution.mean, 4) in (0.9129, 0.9130)  # the text and Table 2 round differently
    assert round(distribution.sd, 6) == 0.002129
    assert round(distribution.upper_limit(0.05), 4) == 0.9177


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 300), n=st.integers(1, 2000), theta=st.floats(0.0, 1.0))
def test_equal_thetas_reduce_the_non_identical_formula_to_eq_2(m, n, theta):
    distribution = best_of_m(np.full(m, theta), n)
    closed_form = 1 - scipy_stats.binom.sf(distribution.errors, n, 1 - theta) ** m  # Eq. 2: 1 − (1 − P_z)^m
    np.testing.assert_allclose(distribution.cdf_errors(), closed_form, atol=1e-12)
    assert distribution.pmf.sum() == pytest.approx(1.0, abs=1e-12)


def test_non_identical_formula_equals_the_product_of_eq_8():
    thetas = np.array([0.6, 0.7, 0.7, 0.75, 0.8])
    distribution = best_of_m(thetas, 50)
    product = 1 - np.prod(1 - scipy_stats.binom.cdf(distribution.errors[:, None], 50, 1 - thetas[None, :]), axis=1)
    np.testing.assert_allclose(distribution.cdf_errors(), product, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 50), n=st.integers(1, 500),
       identical=st.booleans())
def test_exact_distribution_agrees_with_simulation(seed, m, n, identical):
    rng = np.random.default_rng(seed)
    thetas = np.full(m, rng.uniform(0.3, 0.99)) if identical else rng.uniform(0.3, 0.99, size=m)
    distribution = best_of_m(thetas, n)
    samples = 4000
    fewest_errors = rng.binomial(n, 1 - thetas, size=(samples, m)).min(axis=1)
    empirical = np.searchsorted(np.sort(fewest_errors), distribution.errors, side="right") / samples
    assert np.max(np.abs(empirical - distribution.cdf_errors())) <= dkw(samples)


def test_independence_is_the_dependent_model_at_rho_zero():
    rng = np.random.default_rng(3)
    thetas = np.linspace(0.8, 0.9, 40)
    simulated = simulate_best_of_m(thetas, 400, rho=0.0, rng=rng, repetitions=20_000)
    exact = best_of_m(thetas, 400)
    accuracies = exact.accuracies[::-1]
    empirical = np.searchsorted(np.sort(simulated), accuracies + 1e-12, side="right") / simulated.size
    exact_cdf = np.cumsum(exact.pmf[::-1])  # P(θ̂_max ≤ a), a ascending
    assert np.max(np.abs(empirical - exact_cdf)) <= dkw(simulated.size)


def test_conditional_accuracies_keep_the_marginal_and_have_correlation_rho():
    thetas, theta0, rho = np.array([0.77, 0.85, 0.9]), 0.9, 0.6  # Eq. 12: θ ≥ 0.764
    given_one, given_zero = conditional_accuracies(thetas, theta0, rho)
    np.testing.assert_allclose(theta0 * given_one + (1 - theta0) * given_zero, thetas)
    covariance = theta0 * given_one - theta0 * thetas  # E[Y0 Yj] − E[Y0] E[Yj]
    np.testing.assert_allclose(covariance / np.sqrt(theta0 * (1 - theta0) * thetas * (1 - thetas)), rho)


@pytest.mark.parametrize(("thetas", "y0", "mean", "sd", "upper"), [
    (0.9, "fixed", 0.9140, 0.001484, 0.9173),    # Table 2, Sec. 4.1, fixed y0
    (0.9, "random", 0.9140, 0.003481, 0.9207),   # Table 2, Sec. 4.1, random Y0
    (np.linspace(0.875, 0.9, 1000), "random", 0.9101, 0.003649, 0.9173),  # Table 2, Sec. 4.3
])
def test_dependent_rows_of_table_2(thetas, y0, mean, sd, upper):
    """20,000 simulated test sets: the mean's standard error is below 3e-5, so 2e-4 is
    the paper's rounding plus more than six standard errors."""
    best = simulate_best_of_m(thetas, 3000, 0.6, np.random.default_rng(11), m=1000, y0=y0, repetitions=20_000)
    assert abs(best.mean() - mean) < 2e-4
    assert abs(best.std() - sd) < 0.1 * sd
    assert abs(np.quantile(best, 0.975) - upper) <= 1 / 3000 + 1e-9


def test_thetas_that_violate_eq_12_are_refused():
    with pytest.raises(ValueError, match="Eq. 12"):
        simulate_best_of_m([0.2, 0.9], 100, rho=0.9, rng=np.random.default_rng(0))


def test_largest_sizes_are_exact_within_a_second():
    start = time.perf_counter()
    distribution = best_of_m(0.9, 10**6, 10**5)
    assert time.perf_counter() - start < 1.0
    assert distribution.pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert 0.9 < distribution.mean < distribution.upper_limit(0.05) < 0.902


def test_cropping_recovers_the_true_state_of_the_art_of_identical_teams():
    """200 independent teams with θ = 0.8 on 2000 test points (so ρ = 0): the observed best
    is inflated by multiplicity; the cropping estimate falls back to about 0.8."""
    rng = np.random.default_rng(5)
    observed = rng.binomial(2000, 0.8, size=200) / 2000
    estimate = estimate_sota(observed, 2000, np.random.default_rng(6), rho=0.0, repetitions=400, bootstrap=8)
    assert observed.max() > 0.8 + 0.015
    assert estimate.expected_max_uncropped > estimate.observed_max  # Table 3's "Kaggle accuracies" row
    assert abs(estimate.estimate - 0.8) < 0.006
    assert estimate.interval[0] <= estimate.estimate <= estimate.interval[1]
    assert abs(estimate.expected_max - estimate.observed_max) < 0.002
    conservative = estimate_sota(observed, 2000, np.random.default_rng(6), rho=0.0, target="upper",
                                 repetitions=400, bootstrap=0)
    assert conservative.estimate < estimate.estimate


def test_cli_distribution_round_trips_through_json(capsys):
    assert main(["stats", "sota", "--m", "1000", "--n", "3000", "--theta", "0.9", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    distribution = best_of_m(0.9, 3000, 1000)
    assert printed["mean"] == distribution.mean and printed["sd"] == distribution.sd
    assert printed["upper"] == distribution.upper_limit(0.05)


def test_cli_reads_a_file_of_thetas_and_a_file_of_scores(tmp_path, capsys):
    thetas = tmp_path / "thetas.txt"
    thetas.write_text("\n".join(str(t) for t in np.linspace(0.875, 0.9, 1000)))
    assert main(["stats", "sota", "--thetas", str(thetas), "--n", "3000", "--format", "json"]) == 0
    assert round(json.loads(capsys.readouterr().out)["upper"], 4) == 0.9177
    scores = tmp_path / "scores.csv"
    scores.write_text(", ".join(str(s) for s in np.random.default_rng(1).binomial(1000, 0.7, 50) / 1000))
    assert main(["stats", "sota", "--scores", str(scores), "--n", "1000", "--repetitions", "200", "--bootstrap", "4",
                 "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {"estimate", "interval", "observed_max", "expected_max"} <= set(printed)
    assert printed["estimate"] <= printed["observed_max"]


@pytest.mark.parametrize(("arguments", "message"), [
    (["--m", "10", "--n", "100", "--theta", "1.5"], "theta must lie in [0, 1]"),
    (["--m", "0", "--n", "100", "--theta", "0.5"], "argument --m: must be a whole number ≥ 1"),
    (["--m", "10", "--n", "0", "--theta", "0.5"], "argument --n: must be a whole number ≥ 1"),
    (["--scores", "/no/such/file", "--n", "100"], "cannot read the scores file /no/such/file"),
    (["--n", "100", "--theta", "0.5"], "--theta needs --m"),
    (["--scores", "SCORES", "--n", "100"], "'0.9x' in the scores file is not a number"),
])
def test_bad_input_gets_a_clear_error(arguments, message, tmp_path, capsys):
    scores = tmp_path / "scores.txt"
    scores.write_text("0.8\n0.9x\n")
    arguments = [str(scores) if a == "SCORES" else a for a in arguments]
    assert main(["stats", "sota", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_unbiased_estimator_is_the_average_over_every_smaller_class_subset():
    """p̂ᵗ_UN (Eq. 5) equals the accuracy averaged over all t-class subsets containing the true class."""
    rng = np.random.default_rng(2)
    k, points = 6, 40
    scores = rng.normal(size=(points, k))
    labels = rng.integers(0, k, size=points)
    estimate = unbiased_accuracy(outscored_counts(scores, labels), k)
    for t in range(1, k + 1):
        correct = []
        for row, label in zip(scores, labels):
            others = [c for c in range(k) if c != label]
            for subset in itertools.combinations(others, t - 1):
                correct.append(all(row[label] > row[c] for c in subset))
        assert estimate[t - 1] == pytest.approx(np.mean(correct), abs=1e-12)


def test_ranks_and_scores_give_the_same_counts():
    rng = np.random.default_rng(4)
    scores = rng.normal(size=(30, 8))
    labels = rng.integers(0, 8, size=30)
    ranks = 1 + np.sum(scores > scores[np.arange(30), labels][:, None], axis=1)
    np.testing.assert_array_equal(outscored_counts(scores, labels), outscored_counts(ranks=ranks, k=8))


def test_pi_bar_is_chance_without_signal_and_increases_with_it():
    assert pi_bar(10, 0.0) == pytest.approx(0.1, abs=1e-9)
    assert pi_bar(10, 1.0) < pi_bar(10, 2.0) < pi_bar(10, 4.0) < 1
    assert high_dimensional_extrapolation(0.6, 10, 10) == pytest.approx(0.6, abs=1e-8)


def gaussian_classes(seed: int, K: int = 100, k: int = 20, dimension: int = 20, spread: float = 0.6,
                     training: int = 5, testing: int = 40) -> tuple[float, float, float, float]:
    """Nearest-class-mean classification of K Gaussian classes (means drawn at random, each
    estimated from its own training points): the accuracy on all K classes, and three
    predictions of it from k of them (the k-class accuracy, EXP and HD)."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0, spread, (K, dimension))
    estimated = means + rng.normal(size=(K, dimension)) / np.sqrt(training)
    labels = np.repeat(np.arange(K), testing)
    points = means[labels] + rng.normal(size=(K * testing, dimension))
    scores = -((points[:, None, :] - estimated[None, :, :]) ** 2).sum(axis=-1)
    accuracy_K = float(np.mean(scores.argmax(axis=1) == labels))
    chosen = rng.choice(K, size=k, replace=False)
    rows = np.isin(labels, chosen)
    position = np.empty(K, dtype=np.int64)
    position[chosen] = np.arange(k)
    unbiased = unbiased_accuracy(outscored_counts(scores[rows][:, chosen], position[labels[rows]]), k)
    return accuracy_K, unbiased[-1], exponential_extrapolation(unbiased, K)[-1], high_dimensional_extrapolation(unbiased[-1], k, K)


def test_extrapolation_from_20_to_100_gaussian_classes_predicts_the_measured_accuracy():
    """Averaged over 10 draws of the classes: HD lands within 0.04 of the 100-class accuracy
    and EXP (more variable, as the paper finds) within 0.08, while the 20-class accuracy is
    off by more than 0.15."""
    measured, naive, exp, hd = np.mean([gaussian_classes(seed) for seed in range(10)], axis=0)
    assert abs(naive - measured) > 0.15
    assert abs(hd - measured) < 0.04
    assert abs(exp - measured) < 0.08
