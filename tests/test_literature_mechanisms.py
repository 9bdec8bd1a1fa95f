"""Properties of the mechanisms after the seed papers: noisy release, the sparse-vector Ladder,
Thresholdout on a leaderboard, and Sage Bionetworks' bootLadderBoot."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ladderlab.mechanisms.sage_bootladderboot import bootladderboot_decision
from scipy import stats

from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel
from ladderlab.scoring import get_scorer
from tests.helpers import bound, improving_stream

seeds = st.integers(0, 2**32 - 1)
DELTA = 1e-9


def setup(seed, n=80, m=60):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n).astype(float)
    return labels, improving_stream(rng, labels, m)


def regression_stream(seed, n=60, m=30):
    """Real-valued labels and predictions that get better along the stream."""
    rng = np.random.default_rng(seed)
    labels = rng.normal(size=n)
    noise_sd = np.linspace(3.0, 0.1, m)[:, None]
    return labels, labels + noise_sd * rng.normal(size=(m, n))


# --- noisy -----------------------------------------------------------------------------------


@given(seed=seeds, noise=st.sampled_from(["gaussian", "laplace"]), scorer=st.sampled_from(["zero-one", "accuracy"]))
def test_noisy_with_zero_scale_releases_exactly_what_full_disclosure_does(seed, noise, scorer):
    labels, P = setup(seed)
    noisy = bound("noisy", labels, seed, scorer=scorer, noise=noise, scale=0.0).submit_many(P)
    exact = bound("full-disclosure", labels, seed, scorer=scorer).submit_many(P)
    np.testing.assert_array_equal(noisy, exact)


@pytest.mark.parametrize(("noise", "distribution"), [
    ("gaussian", stats.norm(scale=0.05)),
    ("laplace", stats.laplace(scale=0.05)),
])
def test_noisy_release_minus_score_has_the_noise_distribution(noise, distribution):
    """One-sample DKW: sup |F_N − F| ≤ √(ln(2/δ)/(2N)) with probability 1 − δ."""
    labels, P = setup(5, m=4000)
    mechanism = bound("noisy", labels, 5, noise=noise, scale=0.05)
    residuals = np.sort(mechanism.submit_many(P) - get_scorer("zero-one").score_many(labels, P))
    N = residuals.size
    cdf = distribution.cdf(residuals)
    distance = max(np.max(np.arange(1, N + 1) / N - cdf), np.max(cdf - np.arange(N) / N))
    assert distance <= math.sqrt(math.log(2 / DELTA) / (2 * N))


def test_noisy_default_scale_is_one_over_root_n():
    labels, _ = setup(0, n=400)
    assert bound("noisy", labels, 0).scale_ == pytest.approx(0.05)


@given(seed=seeds, rounding=st.sampled_from([0.01, 0.05]))
def test_noisy_rounding_gives_multiples_of_the_step(seed, rounding):
    labels, P = setup(seed)
    released = bound("noisy", labels, seed, rounding=rounding).submit_many(P)
    np.testing.assert_allclose(released / rounding, np.round(released / rounding), atol=1e-9)


# --- sparse-vector Ladder --------------------------------------------------------------------


@given(seed=seeds, eta=st.floats(0.005, 0.3))
def test_sparse_vector_ladder_without_noise_decides_and_releases_as_the_fixed_ladder(seed, eta):
    labels, P = setup(seed, m=150)
    fixed = bound("ladder", labels, seed, eta=eta)
    svl = bound("sparse-vector-ladder", labels, seed, eta=eta, sigma=0.0, rounding=True)
    np.testing.assert_array_equal(svl.submit_many(P), fixed.submit_many(P))
    assert svl.acceptances_ == fixed.acceptances_


@given(seed=seeds, eta=st.floats(0.02, 0.3), adversarial=st.booleans())
@settings(max_examples=50)
def test_sparse_vector_ladder_updates_at_most_about_one_over_eta_plus_one_times(seed, eta, adversarial):
    """The proof's counting step. Each update lowers R by at least η − (|τ| + |ξ| + |ν|); every
    Laplace draw of scale c·σ is below c·σ·ln(3m/δ) in absolute value with probability 1 − δ
    (union bound over ≤ 3m draws), and releases lie in [−|ν|max, 1 + |ν|max] for a [0, 1] loss."""
    m = 300
    labels, P = setup(seed, m=m)
    if adversarial:  # resubmitting near-copies of the best keeps testing the noisy threshold
        P[1::2] = P[0]
    sigma = eta / 1000
    mechanism = bound("sparse-vector-ladder", labels, seed, eta=eta, sigma=sigma)
    mechanism.submit_many(P)
    tail = math.log(3 * m / DELTA)
    release_noise, drift = sigma * tail, (2 + 4 + 1) * sigma * tail
    bound_on_updates = 1 + math.floor((1 + 2 * release_noise) / (eta - drift))
    assert len(mechanism.acceptances_) <= bound_on_updates


def test_sparse_vector_ladder_defaults_follow_the_n_to_the_minus_0_4_derivation():
    """n = 10,000 and k = 1,000: α ≈ 0.074 and σ ≈ 2.7e-3."""
    labels = np.tile([0.0, 1.0], 5000)
    mechanism = bound("sparse-vector-ladder", labels, 0)
    assert mechanism.eta_ == pytest.approx(0.0739, abs=5e-4)
    assert mechanism.sigma_ == pytest.approx(2.67e-3, abs=5e-5)


def test_sparse_vector_ladder_noisy_release_can_go_up():
    """Noise in the comparison and the release: releases need not be monotone (so it does not
    declare itself monotone)."""
    labels, P = setup(2, m=400)
    mechanism = bound("sparse-vector-ladder", labels, 2, eta=0.01, sigma=0.02)
    assert np.any(np.diff(mechanism.submit_many(P)) > 0)
    assert not MECHANISMS.get("sparse-vector-ladder").monotone


# --- Thresholdout ----------------------------------------------------------------------------


@given(seed=seeds)
@settings(max_examples=30)
def test_thresholdout_releases_the_released_half_score_for_non_adaptive_submissions(seed):
    """Submissions fixed in advance. Hoeffding (valid without replacement) puts each half's loss
    within 0.0795 of the whole public loss for all 50 submissions with probability 1 − 1e-9,
    so the gap is ≤ 0.159; the noise adds at most 2σ·ln(1/δ) + 4σ·ln(50/δ) ≈ 0.14 at σ = 0.001,
    below T = 0.35: no submission crosses the threshold."""
    rng = np.random.default_rng(seed)
    n, m = 4000, 50
    labels = rng.integers(0, 2, n).astype(float)
    P = improving_stream(rng, labels, m)
    mechanism = bound("thresholdout", labels, seed, T=0.35, sigma=0.001)
    released = mechanism.submit_many(P)
    rows = mechanism.released_rows_
    np.testing.assert_array_equal(released, get_scorer("zero-one").score_many(labels[rows], P[:, rows]))
    assert mechanism.overfitting_events_ == []


def test_thresholdout_halves_partition_the_public_labels():
    labels, _ = setup(0, n=101)
    mechanism = bound("thresholdout", labels, 0, guard_fraction=0.3)
    both = np.concatenate([mechanism.guard_rows_, mechanism.released_rows_])
    np.testing.assert_array_equal(np.sort(both), np.arange(101))
    assert mechanism.guard_rows_.size == 30


def test_thresholdout_spends_budget_against_boosting_and_releases_a_guard_estimate():
    """Boosting overfits the released half (loss ≈ 0.45 there), not the guard half; the final
    vector's gap crosses the threshold and its release is the noisy guard score. The guard
    score of a vector chosen without the guard labels is ≥ 0.5 − √(ln(1/δ)/(2·2000)) = 0.428."""
    task = TASKS.make("random-labels", n_public=4000, n_holdout=8000)
    mechanism = MECHANISMS.make("thresholdout", B=100)
    attack = ATTACKS.make("boosting", k=800, variant="kaggle")
    result = duel(task, mechanism, attack, seed=3)
    assert mechanism.budget_remaining_ < 100
    assert mechanism.overfitting_events_[-1] == result.released.size - 1
    full_disclosure = duel(task, MECHANISMS.make("full-disclosure"), attack, seed=3)
    assert full_disclosure.final_released < 0.47
    assert result.final_released > 0.5 - math.sqrt(math.log(1 / DELTA) / 4000) - 4 * mechanism.sigma_ * math.log(1 / DELTA)


@given(seed=seeds)
@settings(max_examples=30)
def test_thresholdout_freezes_the_transcript_once_the_budget_is_spent(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 200).astype(float)
    half_right = np.tile(labels, (40, 1))
    mechanism = bound("thresholdout", labels, seed, T=0.0, sigma=0.0, B=3)
    guard = mechanism.guard_rows_
    half_right[:, guard] = 1 - labels[guard]  # perfect on the released half, wrong on the guard
    released = mechanism.submit_many(half_right)
    assert mechanism.overfitting_events_ == [0, 1, 2]
    assert mechanism.budget_remaining_ == 0
    np.testing.assert_array_equal(released[:3], 1.0)
    np.testing.assert_array_equal(released[3:], released[2])


# --- Sage's bootLadderBoot -------------------------------------------------------------------


def reference_boot_ladder_boot(gold, new, prev, score_fn, idx, report_n=10, k_thr=3.0, larger_is_better=True, variant="2019"):
    """The Python port of challengescoring::bootLadderBoot (both Bayes-factor versions), given the
    resample index matrix instead of drawing it."""
    s_new = np.array([score_fn(gold[i], new[i]) for i in idx])
    if prev is None:
        return dict(score=s_new[:report_n].mean(), met=None, bayes=None)
    s_prev = np.array([score_fn(gold[i], prev[i]) for i in idx])
    d = s_new - s_prev
    a, b = int((d >= 0).sum()), int((d < 0).sum())
    div = lambda x, y: np.inf if y == 0 else x / y
    k_raw = div(a, b) if (variant == "2019" or a > b) else div(b, a)
    m_new, m_prev = s_new.mean(), s_prev.mean()
    k = (0.0 if np.isinf(k_raw) else div(1, k_raw)) if m_new <= m_prev else k_raw
    better = (m_new > m_prev) if larger_is_better else (m_new < m_prev)
    met = bool(k > k_thr and better)
    score = (s_new if met else s_prev)[:report_n].mean()
    return dict(score=score, met=met, bayes=k)


REFERENCE_SCORES = {
    "spearman": lambda g, p: stats.spearmanr(g, p)[0],
    "pearson": lambda g, p: stats.pearsonr(g, p)[0],
    "rmse": lambda g, p: np.sqrt(np.mean((g - p) ** 2)),
}


@pytest.mark.parametrize("scorer", sorted(REFERENCE_SCORES))
@pytest.mark.parametrize("variant", ["2019", "head"])
@given(seed=seeds, closeness=st.sampled_from([0.0, 0.5, 0.8, 0.95, 1.0]))
@settings(max_examples=6, deadline=None)
def test_bootladderboot_matches_the_reference_port_on_the_same_resamples(scorer, variant, seed, closeness):
    """closeness = 1 submits the lead again (every d_b = 0); between 0.95 and 1 the differences
    would be rounding noise, which no two implementations order alike. A resample on which
    both predictions rank alike ties exactly in one implementation and by rounding noise in
    the other (Spearman at closeness 0.95, seed 51): such draws are left out."""
    rng = np.random.default_rng(seed)
    n, B = 40, 80
    gold = np.round(rng.normal(size=n), 1)  # ties, as in binding affinities
    prev = gold + rng.normal(size=n)
    new = closeness * prev + (1 - closeness) * (gold + rng.normal(size=n))
    idx = rng.integers(0, n, (B, n))
    counts = np.stack([np.bincount(i, minlength=n) for i in idx]).astype(float)
    metric = get_scorer(scorer)
    scores = metric.on_resamples(gold, np.stack([new, prev]), counts)
    reference = reference_boot_ladder_boot(
        gold, new, prev, REFERENCE_SCORES[scorer], idx,
        larger_is_better=metric.greater_is_better, variant=variant,
    )
    reference_new = np.array([REFERENCE_SCORES[scorer](gold[i], new[i]) for i in idx])
    reference_prev = np.array([REFERENCE_SCORES[scorer](gold[i], prev[i]) for i in idx])
    for differences in (scores[:, 0] - scores[:, 1], reference_new - reference_prev):
        assume(not np.any((differences != 0) & (np.abs(differences) < 1e-12)))
    np.testing.assert_allclose(scores[:, 0], reference_new, rtol=0, atol=1e-12)
    ours = bootladderboot_decision(scores[:, 0], scores[:, 1], metric.greater_is_better, variant)
    assert ours.met == reference["met"]
    assert ours.bayes == pytest.approx(reference["bayes"], rel=1e-12)
    assert ours.score == pytest.approx(reference["score"], abs=1e-12)


def test_head_variant_never_accepts_for_a_smaller_is_better_metric():
    """LITERATURE quirk: with RMSE, a clearly better submission inverts K to 1/max(a/b, b/a) ≤ 1."""
    labels, P = regression_stream(4)
    deployed = bound("sage-bootladderboot", labels, 4, scorer="rmse", variant="2019")
    head = bound("sage-bootladderboot", labels, 4, scorer="rmse", variant="head")
    deployed.submit_many(P)
    head.submit_many(P)
    assert head.acceptances_ == [0]
    assert len(deployed.acceptances_) >= 5
    lead, better = P[0], P[-1]
    scores = get_scorer("rmse").on_resamples(labels, np.stack([better, lead]), np.ones((50, labels.size)))
    head_decision = bootladderboot_decision(scores[:, 0], scores[:, 1], False, "head")
    deployed_decision = bootladderboot_decision(scores[:, 0], scores[:, 1], False, "2019")
    assert head_decision.bayes == 0.0 and not head_decision.met
    assert deployed_decision.bayes == np.inf and deployed_decision.met


@given(seed=seeds)
@settings(max_examples=20, deadline=None)
def test_head_and_2019_agree_for_a_larger_is_better_metric_when_the_new_one_leads(seed):
    labels, P = regression_stream(seed)
    deployed = bound("sage-bootladderboot", labels, seed, scorer="spearman", variant="2019")
    head = bound("sage-bootladderboot", labels, seed, scorer="spearman", variant="head")
    np.testing.assert_array_equal(deployed.submit_many(P), head.submit_many(P))


def test_bootladderboot_lead_is_the_most_recent_accepted_submission():
    """A worse submission after an accepted one is compared with the accepted one, and a rejected
    submission re-releases a fresh 10-resample estimate of the lead."""
    labels, P = regression_stream(9, n=200, m=3)
    good, bad = P[2], P[0]
    mechanism = bound("sage-bootladderboot", labels, 9, scorer="spearman", bootstrap_n=2000)
    released = mechanism.submit_many(np.stack([bad, good, bad, bad]))
    assert mechanism.acceptances_ == [0, 1]
    assert mechanism.lead_ is not None and np.array_equal(mechanism.lead_, good)
    exact_good = get_scorer("spearman").score(labels, good)
    assert released[2] != released[3]
    assert abs(released[2] - exact_good) < 0.05 and abs(released[3] - exact_good) < 0.05


def test_bootladderboot_keeps_its_own_copy_of_the_lead():
    """A participant who changes its array after submitting cannot change the lead."""
    labels, P = regression_stream(9, n=200, m=3)
    mechanism = bound("sage-bootladderboot", labels, 9, scorer="spearman", bootstrap_n=200)
    submitted = P[2:3].copy()
    mechanism.submit_many(submitted)
    submitted[:] = 0.0
    np.testing.assert_array_equal(mechanism.lead_, P[2])
