"""Properties of the eight mechanisms, as the papers' algorithm boxes state them."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladderlab.engines.ladder import PairedTTestLadder, t_critical_value
from ladderlab.params import Interval
from ladderlab.registry import MECHANISMS
from ladderlab.scoring import get_scorer
from tests.helpers import bound, improving_stream

seeds = st.integers(0, 2**32 - 1)
ALL = MECHANISMS.ids()
DETERMINISTIC_LADDERS = ["ladder", "ladder-free", "ladder-t"]
NOISY = ["ladder-boot", "bayesboot-ladderboot"]


def setup(seed, n=80, m=60):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n).astype(float)
    return labels, improving_stream(rng, labels, m)


def test_all_eight_mechanisms_are_registered():
    assert set(ALL) >= {
        "full-disclosure", "kaggle", "ladder", "ladder-free", "ladder-t",
        "ladder-boot", "bayesboot-ladder", "bayesboot-ladderboot",
    }


@pytest.mark.parametrize("mechanism_id", DETERMINISTIC_LADDERS)
@given(seed=seeds, alpha=st.floats(0.01, 0.5), eta=st.floats(0.005, 0.2))
def test_ladder_releases_never_get_worse(mechanism_id, seed, alpha, eta):
    labels, P = setup(seed)
    params = {"ladder": {"eta": eta}, "ladder-t": {"alpha": alpha}}.get(mechanism_id, {})
    released = bound(mechanism_id, labels, seed, **params).submit_many(P)
    assert np.all(np.diff(released) <= 0)


@pytest.mark.parametrize("mechanism_id", DETERMINISTIC_LADDERS + ["bayesboot-ladder"])
@given(seed=seeds)
def test_each_release_is_the_rounded_score_of_an_earlier_submission(mechanism_id, seed):
    labels, P = setup(seed)
    mechanism = bound(mechanism_id, labels, seed)
    step = mechanism.eta if mechanism_id == "ladder" else 1 / labels.size
    released = mechanism.submit_many(P)
    rounded = np.round(get_scorer("zero-one").score_many(labels, P) / step) * step
    for t, value in enumerate(released):
        assert np.isclose(rounded[: t + 1], value, rtol=0, atol=1e-12).any()


@pytest.mark.parametrize("mechanism_id", ["ladder-boot", "bayesboot-ladderboot"])
@given(seed=seeds)
def test_each_noisy_release_is_near_the_score_of_an_earlier_submission(mechanism_id, seed):
    """With b = 10⁴ the bootstrap mean of a [0, 1] loss is within Hoeffding's t of its score (δ = 1e-9)."""
    labels, P = setup(seed, n=60, m=15)
    b = 10_000
    released = bound(mechanism_id, labels, seed, b=b).submit_many(P)
    tolerance = math.sqrt(math.log(2 / 1e-9) / (2 * b * labels.size))
    scores = get_scorer("zero-one").score_many(labels, P)
    for t, value in enumerate(released):
        assert np.min(np.abs(scores[: t + 1] - value)) <= tolerance


@given(seed=seeds, eta=st.floats(0.02, 0.5))
def test_fixed_ladder_releases_at_most_ceil_one_over_eta_plus_one_values(seed, eta):
    labels, P = setup(seed, m=200)
    released = bound("ladder", labels, seed, eta=eta).submit_many(P)
    assert len(np.unique(released)) <= math.ceil(1 / eta) + 1


@given(seed=seeds, alpha=st.sampled_from([1e-5, 1e-3, 0.0158, 0.1]), scorer=st.sampled_from(["zero-one", "accuracy"]))
def test_kaggle_release_is_within_half_alpha_of_the_empirical_score(seed, alpha, scorer):
    labels, P = setup(seed)
    released = bound("kaggle", labels, seed, scorer=scorer, alpha=alpha).submit_many(P)
    exact = get_scorer(scorer).score_many(labels, P)
    assert np.all(np.abs(released - exact) <= alpha / 2 + 1e-12)
    assert np.allclose(released / alpha, np.round(released / alpha), atol=1e-6)


@given(seed=seeds)
def test_full_disclosure_releases_the_empirical_score(seed):
    labels, P = setup(seed)
    released = bound("full-disclosure", labels, seed).submit_many(P)
    np.testing.assert_array_equal(released, get_scorer("zero-one").score_many(labels, P))


@given(seed=seeds, n=st.integers(20, 300))
def test_t_ladder_with_critical_value_one_decides_as_the_parameter_free_ladder(seed, n):
    labels, P = setup(seed, n=n, m=80)
    free = bound("ladder-free", labels, seed).submit_many(P)
    t_one = bound("ladder-t", labels, seed, critical_value=1.0).submit_many(P)
    np.testing.assert_array_equal(free, t_one)


class LevelOnlyLadder(PairedTTestLadder):
    """A t-test Ladder variant that declares only ``alpha``, as a researcher's plugin would."""

    id = "level-only"
    _parameter_constraints = {"alpha": [Interval(float, 0, 0.5, closed="right")]}

    def __init__(self, alpha: float = 0.15):
        self.alpha = alpha


class AlphaSpendingLadder(LevelOnlyLadder):
    """The j-th acceptance (from 0) is tested at level α/((j+1)(j+2)): a critical value that grows with the state."""

    id = "alpha-spending"

    def _critical_value(self) -> float:
        accepted = len(self.acceptances_)
        return t_critical_value(self.alpha / ((accepted + 1) * (accepted + 2)), None, self.n_)


@given(seed=seeds)
def test_a_t_ladder_variant_may_declare_alpha_alone(seed):
    labels, P = setup(seed)
    variant = LevelOnlyLadder(alpha=0.3).bind(labels, "zero-one", np.random.default_rng(seed))
    np.testing.assert_array_equal(variant.submit_many(P), bound("ladder-t", labels, seed, alpha=0.3).submit_many(P))


@given(seed=seeds)
def test_a_t_ladder_critical_value_that_depends_on_the_state_is_computed_again_after_each_acceptance(seed):
    labels, P = setup(seed, n=200, m=120)
    rng = np.random.default_rng(seed)
    steps = [np.where(rng.uniform(size=200) < share, labels, 1 - labels) for share in (0.25, 0.5, 0.75, 1.0)]
    P = np.vstack([steps, P])  # four clear improvements first: several acceptances, so c changes
    variant = AlphaSpendingLadder(alpha=0.5).bind(labels, "zero-one", np.random.default_rng(seed))
    loop = AlphaSpendingLadder(alpha=0.5).bind(labels, "zero-one", np.random.default_rng(seed))
    np.testing.assert_array_equal(variant.submit_many(P), [loop.submit(row) for row in P])
    accepted = len(variant.acceptances_)
    assert accepted >= 2
    assert variant.critical_value_ == t_critical_value(0.5 / ((accepted + 1) * (accepted + 2)), None, 200)


def test_t_ladder_critical_value_is_the_upper_t_quantile():
    """docs/decisions.md#t-test-threshold: α = 0.15 gives c ≈ 1.04, the parameter-free Ladder's c = 1."""
    labels = np.zeros(4000)
    labels[::2] = 1
    assert bound("ladder-t", labels, 0, alpha=0.15).critical_value_ == pytest.approx(1.0365, abs=1e-3)
    assert bound("ladder-t", labels, 0, alpha=0.5).critical_value_ == pytest.approx(0.0, abs=1e-12)


def test_ladder_boot_compares_with_the_unrounded_best_risk():
    """docs/decisions.md#comparison: a submission better than the best by less than the rounding still counts."""
    n = 1000
    labels = np.zeros(n)
    best = np.ones(n)
    best[:400] = 0  # risk 0.6
    better = best.copy()
    better[400:700] = 0  # risk 0.3, sd of the difference ≈ 0.46: clearly significant
    mechanism = MECHANISMS.make("ladder-boot", critical_value=1.0)
    mechanism.bind(labels, "zero-one", np.random.default_rng(0), classes=[0, 1])
    mechanism.submit_many(np.stack([best, better]))
    assert mechanism.best_index_ == 1
    assert mechanism.best_risk_ == pytest.approx(0.3)


@given(seed=seeds)
def test_ladder_boot_release_has_the_distribution_of_the_direct_bootstrap(seed):
    """Two-sample Kolmogorov–Smirnov distance between N releases of the O(n) form and N direct
    b×n bootstrap means. Under equal distributions, by DKW (Massart) on each sample and the
    triangle inequality, P(D > ε) ≤ 4·exp(−N ε²/2); ε is set for δ = 1e-9."""
    rng = np.random.default_rng(seed)
    n, b, N = 40, 5, 3000
    labels = rng.integers(0, 2, n).astype(float)
    prediction = rng.integers(0, 2, n).astype(float)
    mechanism = bound("ladder-boot", labels, seed, b=b)
    released = mechanism.submit_many(np.tile(prediction, (N, 1)))  # the first is accepted, the rest held
    loss = (prediction != labels).astype(float)
    direct = loss[rng.integers(0, n, (N, b, n))].mean(axis=(1, 2))
    grid = np.union1d(released, direct)
    ecdf = lambda x: np.searchsorted(np.sort(x), grid, side="right") / N
    distance = np.max(np.abs(ecdf(released) - ecdf(direct)))
    assert distance <= math.sqrt(2 * math.log(4 / 1e-9) / N)


def test_ladder_boot_release_converges_to_the_empirical_score_as_b_grows():
    """Hoeffding for the mean of b·n draws from a [0, 1] loss, δ = 1e-9 for each b."""
    rng = np.random.default_rng(7)
    n = 200
    labels = rng.integers(0, 2, n).astype(float)
    prediction = rng.integers(0, 2, n).astype(float)
    exact = np.mean(prediction != labels)
    for b in [1, 10, 100, 10_000]:
        released = bound("ladder-boot", labels, b, b=b).submit_many(np.tile(prediction, (50, 1)))
        tolerance = math.sqrt(math.log(2 * 50 / 1e-9) / (2 * b * n))
        assert np.max(np.abs(released - exact)) <= tolerance


@pytest.mark.parametrize("mechanism_id", ALL)
@given(seed=seeds)
def test_same_seed_gives_an_identical_transcript(mechanism_id, seed):
    labels, P = setup(seed, m=25)
    first = bound(mechanism_id, labels, seed).submit_many(P)
    second = bound(mechanism_id, labels, seed).submit_many(P)
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("mechanism_id", NOISY)
def test_different_seeds_give_different_bootstrap_noise(mechanism_id):
    labels, P = setup(3, m=25)
    first = bound(mechanism_id, labels, 1).submit_many(P)
    second = bound(mechanism_id, labels, 2).submit_many(P)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("mechanism_id", ALL)
@given(seed=seeds, cuts=st.lists(st.integers(1, 59), max_size=4))
def test_submit_many_equals_repeated_submit(mechanism_id, seed, cuts):
    labels, P = setup(seed)
    one_by_one = bound(mechanism_id, labels, seed)
    singles = [one_by_one.submit(p) for p in P]
    batched = bound(mechanism_id, labels, seed)
    pieces = np.split(P, sorted(set(cuts)))
    in_batches = np.concatenate([batched.submit_many(piece) for piece in pieces])
    np.testing.assert_array_equal(singles, in_batches)
    assert one_by_one.released_ == batched.released_


def test_submit_many_equals_repeated_submit_across_many_engine_blocks():
    """Long runs without acceptance grow the Ladder engine's blocks; decisions must not change."""
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 2, 50).astype(float)
    P = improving_stream(rng, labels, 3000)
    for mechanism_id in ["ladder", "ladder-free", "ladder-t", "ladder-boot"]:
        one = bound(mechanism_id, labels, 1)
        singles = np.array([one.submit(p) for p in P])
        np.testing.assert_array_equal(singles, bound(mechanism_id, labels, 1).submit_many(P))


BAD_INPUTS = [
    (lambda n: np.zeros(n - 1), "length"),
    (lambda n: np.full(n, np.nan), "finite"),
    (lambda n: np.full(n, np.inf), "finite"),
    (lambda n: np.full(n, 2.0), "label"),
    (lambda n: np.zeros((0, n)), "empty"),
    (lambda n: np.array(["a"] * n), "numeric"),
    (lambda n: np.zeros((2, 2, n)), "shape"),
]


@pytest.mark.parametrize("mechanism_id", ALL)
@pytest.mark.parametrize("make_bad, message", BAD_INPUTS)
def test_bad_input_is_rejected_and_changes_nothing(mechanism_id, make_bad, message):
    labels, P = setup(5, m=10)
    mechanism = bound(mechanism_id, labels, 5)
    mechanism.submit_many(P[:5])
    rng_state = mechanism.rng_.bit_generator.state
    released_before = list(mechanism.released_)
    with pytest.raises(ValueError, match=message):
        mechanism.submit_many(make_bad(labels.size))
    assert mechanism.released_ == released_before
    assert mechanism.rng_.bit_generator.state == rng_state
    after = mechanism.submit_many(P[5:])
    untouched = bound(mechanism_id, labels, 5)
    untouched.submit_many(P[:5])
    np.testing.assert_array_equal(after, untouched.submit_many(P[5:]))


def test_a_bad_row_in_a_batch_rejects_the_whole_batch():
    labels, P = setup(5, m=10)
    mechanism = bound("ladder-t", labels, 5)
    P[7, 3] = np.nan
    with pytest.raises(ValueError, match="submission 7 has nan at position 3"):
        mechanism.submit_many(P)
    assert mechanism.released_ == []


@pytest.mark.parametrize("mechanism_id", ["ladder-free", "ladder-t", "ladder-boot"])
def test_t_test_mechanisms_refuse_whole_vector_metrics(mechanism_id):
    with pytest.raises(ValueError, match="bayesboot-ladder"):
        bound(mechanism_id, np.arange(10.0), 0, scorer="pearson")


@pytest.mark.parametrize(
    "mechanism_id, params, message",
    [
        ("kaggle", {"alpha": 0}, "'alpha' = 0 is invalid"),
        ("ladder", {"eta": -1}, r"'eta' = -1 is invalid; it must be a finite real number in \(0, 1\]"),
        ("ladder-t", {"alpha": 1.5}, r"'alpha' = 1.5 is invalid; it must be a finite real number in \(0, 0.5\]"),
        ("ladder-t", {"alpha": None}, "give alpha or critical_value"),
        ("ladder-boot", {"b": 0}, "'b' = 0 is invalid; it must be a whole number in"),
        ("bayesboot-ladder", {"B": 2.5}, "'B' = 2.5 is invalid; it must be a whole number"),
        ("bayesboot-ladderboot", {"alpha": None}, "give alpha or po_threshold"),
    ],
)
def test_bad_parameters_are_named_when_bound(mechanism_id, params, message):
    with pytest.raises(ValueError, match=message):
        bound(mechanism_id, np.arange(10.0) % 2, 0, **params)


def test_get_params_round_trips_through_the_constructor():
    for mechanism_id in ALL:
        cls = MECHANISMS.get(mechanism_id)
        params = cls().get_params()
        assert cls(**params).get_params() == params
        assert set(params) == set(cls.parameter_defaults())


@pytest.mark.parametrize("n", [997, 1000, 4000])
@pytest.mark.parametrize("one_at_a_time", [True, False])
def test_a_single_flipped_label_ties_the_parameter_free_margin_and_is_never_accepted(n, one_at_a_time):
    """docs/decisions.md#ties: flipping one wrong label of the best lowers the 0/1 risk by
    exactly 1/n and sd(l_t − l_best)/√n is exactly 1/n, so no single flip is accepted,
    whatever the rounding of either side, at any level of the best's risk."""
    rng = np.random.default_rng(n)
    labels = rng.integers(0, 2, n).astype(float)
    for errors in range(1, n, max(1, n // 150)):
        best = labels.copy()
        wrong = rng.choice(n, errors, replace=False)
        best[wrong] = 1 - best[wrong]
        flipped = np.resize(wrong, 3)
        flips = np.repeat(best[None, :], 3, axis=0)
        flips[np.arange(3), flipped] = labels[flipped]
        ladder = bound("ladder-free", labels, 0)
        ladder.submit_many(best[None, :])
        if one_at_a_time:
            for row in flips:
                ladder.submit_many(row[None, :])
        else:
            ladder.submit_many(flips)
        assert ladder.acceptances_ == [0], f"{errors} wrong labels of {n}"
