"""Proven leaderboard-error bounds: the arithmetic (exact counts, exact tails, never looser than the
paper's closed form) and the theorems themselves (over the battery's attacks the leaderboard error
exceeds ε in at most δ of replications, by an exact binomial test that a wrong bound fails)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel
from ladderlab.stats.bounds import ladder_error_bound
from ladderlab.stats.guess_check import check_width, failure_step, query_confidence, rounded_values
from ladderlab.stats.privacy import composed_epsilon, gaussian_max_error, laplace_max_error, transfer, zcdp_epsilon
from ladderlab.stats.transcripts import (
    grid_values,
    log_binomial_deviation,
    log_hoeffding_deviation,
    log_nodes_decreasing,
    log_nodes_free,
    union_deviation,
)

FAST = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def ladder_transcripts(k: int, values: int) -> int:
    """Nodes of the analyst's tree of depth k by enumeration: transcripts of length < k whose first
    release is any value and each later one repeats the last or moves strictly down."""
    count = 1
    level = {(v,): 1 for v in range(values)}
    for length in range(1, k):
        count += sum(level.values())
        following: dict[tuple[int, ...], int] = {}
        for (last,), ways in level.items():
            for value in range(last + 1):
                following[(value,)] = following.get((value,), 0) + ways
        level = following
        del length
    return count


@pytest.mark.parametrize("k, values", [(1, 3), (2, 3), (5, 4), (7, 2), (6, 6)])
def test_the_ladders_tree_is_counted_exactly(k, values):
    assert math.exp(log_nodes_decreasing(k, values)) == pytest.approx(ladder_transcripts(k, values), rel=1e-9)


@pytest.mark.parametrize("k, values", [(1, 5), (3, 2), (4, 7), (6, 1)])
def test_the_free_tree_is_counted_exactly(k, values):
    assert math.exp(log_nodes_free(k, values)) == pytest.approx(sum(values**i for i in range(k)), rel=1e-9)


def test_a_grid_counts_every_rounded_value():
    assert grid_values(0.01) == 101 and grid_values(0.3) == 4 and grid_values(0.01, 20) == 21
    assert len({round(x / 0.3) for x in np.linspace(0, 1, 1001)}) == grid_values(0.3)


@pytest.mark.parametrize("n", [7, 40, 150])
@pytest.mark.parametrize("epsilon", [0.05, 0.12, 0.3])
def test_the_binomial_tail_bounds_every_risk_and_beats_hoeffding(n, epsilon):
    """P(|X/n − p| > ε) on a fine grid of p, and just below or above each jump of the tails, stays
    below the bound, which is at most twice the largest one-sided tail found there, and below
    Hoeffding's."""
    bound = log_binomial_deviation(n, epsilon)
    x = np.arange(n + 1)
    worst_one_sided = 0.0
    jumps = np.concatenate([x / n - epsilon - 1e-12, x / n + epsilon + 1e-12])
    for p in np.concatenate([np.linspace(0, 1, 1001), jumps[(jumps >= 0) & (jumps <= 1)]]):
        pmf = stats.binom.pmf(x, n, p)
        upper, lower = pmf[x / n - p > epsilon].sum(), pmf[p - x / n > epsilon].sum()
        assert math.log(max(upper + lower, 1e-300)) <= bound + 1e-9
        worst_one_sided = max(worst_one_sided, upper, lower)
    assert bound <= math.log(2 * worst_one_sided) + 0.02
    assert bound <= log_hoeffding_deviation(n, epsilon) + 1e-12


def test_a_deep_binomial_tail_is_bounded_not_underflowed():
    """Where scipy's tail underflows, the geometric bound stays finite and below Hoeffding's."""
    deep = log_binomial_deviation(20_000, 0.2)
    assert stats.binom.sf(20_000 * 0.7, 20_000, 0.5) == 0.0
    assert -math.inf < deep < log_hoeffding_deviation(20_000, 0.2)
    # above the exact limit the Chernoff bound at its peak stands in, between the exact value and Hoeffding's
    assert log_binomial_deviation(60_000, 0.01) < log_hoeffding_deviation(60_000, 0.01)


@FAST
@given(n=st.integers(50, 20_000), k=st.integers(1, 3000), eta=st.floats(0.005, 0.5),
       delta=st.sampled_from([0.01, 0.05, 0.2]))
def test_the_exact_ladder_bound_is_never_looser_than_the_closed_form(n, k, eta, delta):
    """Theorem 3.1's encoding overcounts the tree and Hoeffding overstates a binomial tail."""
    closed = ladder_error_bound(n, k, eta, delta).value
    ladder = MECHANISMS.make("ladder", eta=eta)
    hoeffding = ladder.proven_bound(n, k, delta).epsilon
    assert hoeffding <= closed + 1e-12
    if n <= 3000:
        assert ladder.proven_bound(n, k, delta, zero_one=True).epsilon <= hoeffding + 1e-9


def test_the_issues_ladder_bound_is_tighter_than_the_closed_form():
    closed = ladder_error_bound(10_000, 300, 0.01).value
    exact = MECHANISMS.make("ladder", eta=0.01).proven_bound(10_000, 300, 0.05, zero_one=True).epsilon
    assert closed == pytest.approx(0.2552, abs=1e-4)
    assert exact < 0.12 < closed


@FAST
@given(n=st.integers(100, 50_000), k=st.integers(1, 2000), alpha=st.floats(1e-5, 0.2))
def test_kaggles_bound_grows_with_k_and_shrinks_with_n(n, k, alpha):
    kaggle = MECHANISMS.make("kaggle", alpha=alpha)
    bound = kaggle.proven_bound(n, k).epsilon
    assert kaggle.proven_bound(n, k + 1).epsilon >= bound
    assert kaggle.proven_bound(2 * n, k).epsilon <= bound
    assert bound >= alpha / 2


def test_union_deviation_is_the_smallest_epsilon_that_keeps_the_union_under_delta():
    for tail, n, log_count in itertools.product(("hoeffding", "binomial"), (100, 2000), (0.0, 30.0)):
        epsilon = union_deviation(log_count, n, 0.05, tail)
        deviation = log_hoeffding_deviation if tail == "hoeffding" else log_binomial_deviation
        assert log_count + deviation(n, epsilon) <= math.log(0.05) + 1e-9
        assert log_count + deviation(n, epsilon - 1e-3) > math.log(0.05)


def test_privacy_accounting_matches_its_formulas():
    assert zcdp_epsilon(0.5, 1e-6) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)))
    # advanced composition beats k·ε₀ once k is large, and zCDP beats both for tiny ε₀
    assert composed_epsilon(10_000, 1e-6, pure=0.01) < 10_000 * 0.01
    assert composed_epsilon(1, 1e-6, pure=0.3) == pytest.approx(0.3)
    assert composed_epsilon(5, 1e-6, rho=0.1) == pytest.approx(zcdp_epsilon(0.5, 1e-6))
    # the transfer theorem of Rogers et al.'s library: (e^ε − 1 + α + 2tδ)/(1 − (1 − β)^t)
    assert transfer(0.1, 1e-6, 0.02, 0.05) == pytest.approx((math.expm1(0.1) + 0.02 + 40e-6) / (1 - 0.95**20))


def test_noise_maxima_hold_their_failure_probability():
    rng = np.random.default_rng(0)
    draws, failure = 50, 0.1
    laplace = rng.laplace(0, 0.3, (20_000, draws))
    gauss = rng.normal(0, 0.3, (20_000, draws))
    assert np.mean(np.abs(laplace).max(axis=1) > laplace_max_error(0.3, draws, failure)) <= failure
    assert np.mean(np.abs(gauss).max(axis=1) > gaussian_max_error(0.3, draws, failure)) <= failure
    # and they are not loose by much: a fifth of the width fails often
    assert np.mean(np.abs(gauss).max(axis=1) > 0.8 * gaussian_max_error(0.3, draws, failure)) > failure


def _library_mgf_width(n: int, p: float, beta: float, upper: bool) -> float:
    """Rogers et al.'s ``mgf_width``, as their library computes it (numerical minimisation, bisection)."""
    if upper:
        p = 1 - p

    def log_bound(w: float) -> float:
        def f(lamb: np.ndarray) -> float:
            return float(n * (np.log(1 + p * (np.exp(lamb[0]) - 1)) - lamb[0] * (p + w)))
        return f(optimize.minimize(f, [p], bounds=((0, None),), tol=1e-10).x)

    low, high = 0.0, 1.0 - p
    while high > low + 1e-7:
        middle = (low + high) / 2
        low, high = (middle, high) if log_bound(middle) > math.log(beta) else (low, middle)
    return high


@pytest.mark.parametrize("g", [0.2, 0.5, 0.8])
def test_the_check_width_is_the_librarys_wider_end(g):
    n, tau, confidence = 500, 0.05, 1e-3
    library = max(_library_mgf_width(n, g + tau, confidence / 2, True), _library_mgf_width(n, g - tau, confidence / 2, False))
    assert check_width(n, [g], tau, [confidence])[0] == pytest.approx(library, abs=2e-5)


def test_the_guess_and_check_confidences_sum_to_at_most_beta():
    """Summed over queries, failure counts and the transcripts of failures, β_q adds up to ≤ β
    (one step γ for every failure, as the union bound counts)."""
    beta, gamma = 0.05, 0.1
    values = math.log(rounded_values(gamma))
    total = sum(query_confidence(beta, q, f, f * values) * special.comb(q, f) * rounded_values(gamma) ** f
                for q in range(400) for f in range(min(q, 30) + 1))
    assert total <= beta
    assert failure_step(10_000, 0.05, 0.01) == pytest.approx(0.05 - math.sqrt(math.log(200) / 20_000))
    assert failure_step(100, 0.05, 0.01) == 0.0


# -- the theorems, against the battery's attacks ----------------------------------------------------

N, K, REPLICATIONS, DELTA = 400, 50, 50, 0.05
TASK = ("random-labels", {"n_public": N, "n_holdout": 2 * N})
"""Random labels: every submission's population risk is exactly ½, so the leaderboard error is exact."""
ATTACK_GRID = [("boosting", {"k": K, "variant": "kaggle"}), ("boosting", {"k": K, "variant": "ladder"}),
               ("staircase", {"k": K, "block": 64}), ("hill-climbing", {"k": K})]
PROVEN = [("ladder", {"eta": 0.05}), ("kaggle", {"alpha": 0.01}), ("ladder-free", {}), ("ladder-t", {"alpha": 0.05}),
          ("full-disclosure", {}), ("subsample", {"size": 50}),
          ("sparse-vector-ladder", {"eta": 0.05, "sigma": 0.0001, "rounding": True})]
WRONG_FACTOR = 10
"""The proven bounds are some ten times the battery's errors at this size (docs/proofs.md), so only a bound
wrong by about that much is one the battery can catch here."""


def exceeds_at_most_delta(errors: np.ndarray, epsilon: float, delta: float, level: float = 1e-6) -> bool:
    """The exact one-sided binomial test of H0 "P(error > ε) ≤ δ": False when it rejects at ``level``."""
    return stats.binomtest(int(np.sum(errors > epsilon)), errors.size, delta, alternative="greater").pvalue >= level


def leaderboard_errors(mechanism: str, params: dict, attack: str, attack_params: dict, n: int = N,
                       replications: int = REPLICATIONS) -> np.ndarray:
    task = TASKS.make(TASK[0], **{**TASK[1], "n_public": n, "n_holdout": 2 * n})
    return np.array([duel(task, MECHANISMS.make(mechanism, **params), ATTACKS.make(attack, **attack_params),
                          seed=11, replication=r).leaderboard_error for r in range(replications)])


@pytest.fixture(scope="module")
def errors() -> dict[tuple[str, int], np.ndarray]:
    return {(mechanism, number): leaderboard_errors(mechanism, params, attack, attack_params)
            for mechanism, params in PROVEN for number, (attack, attack_params) in enumerate(ATTACK_GRID)}


@pytest.mark.parametrize("mechanism, params", PROVEN, ids=[m for m, _ in PROVEN])
def test_the_battery_never_breaks_a_proven_bound(errors, mechanism, params):
    bound = MECHANISMS.make(mechanism, **params).proven_bound(N, K + 1, DELTA, zero_one=True)
    assert bound is not None and not bound.vacuous
    for number in range(len(ATTACK_GRID)):
        assert exceeds_at_most_delta(errors[mechanism, number], bound.epsilon, DELTA), ATTACK_GRID[number]


@pytest.mark.parametrize("mechanism, params", PROVEN, ids=[m for m, _ in PROVEN])
def test_a_bound_off_by_a_constant_factor_fails_the_test(errors, mechanism, params):
    wrong = MECHANISMS.make(mechanism, **params).proven_bound(N, K + 1, DELTA, zero_one=True).epsilon / WRONG_FACTOR
    assert not all(exceeds_at_most_delta(errors[mechanism, number], wrong, DELTA) for number in range(len(ATTACK_GRID)))


@pytest.mark.slow
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(200, 600), k=st.integers(10, 60), eta=st.floats(0.02, 0.2), alpha=st.floats(0.002, 0.1))
def test_the_ladders_and_kaggles_bounds_hold_over_their_parameters(n, k, eta, alpha):
    for mechanism, params in (("ladder", {"eta": eta}), ("kaggle", {"alpha": alpha})):
        epsilon = MECHANISMS.make(mechanism, **params).proven_bound(n, k + 1, DELTA, zero_one=True).epsilon
        for attack, attack_params in ATTACK_GRID[:2]:
            errors = leaderboard_errors(mechanism, params, attack, {**attack_params, "k": k}, n, 30)
            assert exceeds_at_most_delta(errors, epsilon, DELTA)


@pytest.mark.parametrize("mechanism, params", [("noisy", {}), ("thresholdout", {"B": 20}), ("sparse-vector-ladder", {})])
def test_a_private_mechanisms_bound_says_when_it_is_vacuous(mechanism, params):
    """At n = 400 the privacy route proves nothing; the bound says so instead of a number below 1."""
    bound = MECHANISMS.make(mechanism, **params).proven_bound(N, K + 1, DELTA)
    assert bound.vacuous and "vacuous" in bound.text()


@FAST
@given(n=st.integers(10_000, 10_000_000), scale=st.floats(1e-4, 0.05), noise=st.sampled_from(["gaussian", "laplace"]))
def test_the_noisy_release_bound_shrinks_as_n_grows(n, scale, noise):
    noisy = MECHANISMS.make("noisy", noise=noise, scale=scale)
    assert noisy.proven_bound(10 * n, 100).epsilon <= noisy.proven_bound(n, 100).epsilon
    assert noisy.proven_bound(n, 100).epsilon > scale  # no bound beats the noise itself


def test_thresholdout_has_a_bound_only_with_a_budget_and_the_nips_noise():
    assert MECHANISMS.make("thresholdout").proven_bound(10**6, 100) is None
    assert MECHANISMS.make("thresholdout", B=10, variant="science").proven_bound(10**6, 100) is None
    bound = MECHANISMS.make("thresholdout", B=10).proven_bound(10**7, 100)
    assert not bound.vacuous and "budget" in bound.holds


def test_the_sparse_vector_ladder_without_noise_is_the_ladders_bound():
    svl = MECHANISMS.make("sparse-vector-ladder", eta=0.02, sigma=0.0, rounding=True)
    assert svl.proven_bound(5000, 200, zero_one=True).epsilon == pytest.approx(
        MECHANISMS.make("ladder", eta=0.02).proven_bound(5000, 200, zero_one=True).epsilon)
