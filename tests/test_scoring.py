"""Each scorer agrees with the reference implementation, and its weighted form is a resample."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from sklearn import metrics

from ladderlab.scoring import SCORERS, LossScorer, get_scorer

pytestmark = pytest.mark.filterwarnings(
    "ignore::scipy.stats.ConstantInputWarning", "ignore::sklearn.exceptions.UndefinedMetricWarning"
)

seeds = st.integers(0, 2**32 - 1)
sizes = st.integers(5, 60)


def lin_ccc(y, p):
    return 2 * np.cov(y, p, bias=True)[0, 1] / (y.var() + p.var() + (y.mean() - p.mean()) ** 2)


REFERENCE = {
    "zero-one": lambda y, p: 1 - metrics.accuracy_score(y, p),
    "accuracy": metrics.accuracy_score,
    "squared": metrics.mean_squared_error,
    "absolute": metrics.mean_absolute_error,
    "rmse": lambda y, p: np.sqrt(metrics.mean_squared_error(y, p)),
    "log-loss": lambda y, p: metrics.log_loss(y, np.clip(p, 1e-15, 1 - 1e-15), labels=[0, 1]),
    "pearson": lambda y, p: stats.pearsonr(y, p)[0],
    "spearman": lambda y, p: stats.spearmanr(y, p)[0],
    "ccc": lin_ccc,
    "roc-auc": metrics.roc_auc_score,
}


def sample(name, rng, n):
    """Labels and predictions of the kind the scorer takes, with ties and both classes."""
    y = rng.integers(0, 2, n).astype(float)
    y[:2] = [0, 1]
    kind = get_scorer(name).prediction_kind.value
    if kind == "label":
        return y, rng.integers(0, 2, (3, n)).astype(float)
    if kind == "probability":
        return y, rng.uniform(0, 1, (3, n))
    return y, np.round(rng.normal(size=(3, n)) + y, 1)


@pytest.mark.parametrize("name", sorted(REFERENCE))
@given(seed=seeds, n=sizes)
def test_score_matches_reference_implementation(name, seed, n):
    y, P = sample(name, np.random.default_rng(seed), n)
    expected = [REFERENCE[name](y, p) for p in P]
    np.testing.assert_allclose(get_scorer(name).score_many(y, P), expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(set(REFERENCE) - {"spearman"}))  # spearman ranks once
@given(seed=seeds, n=sizes)
def test_count_weights_equal_the_score_of_the_resampled_data(name, seed, n):
    rng = np.random.default_rng(seed)
    y, P = sample(name, rng, n)
    resamples = rng.integers(0, n, (4, n))
    W = np.stack([np.bincount(r, minlength=n) / n for r in resamples])
    weighted = get_scorer(name).weighted(y, P, W)
    direct = np.array([[REFERENCE[name](y[r], p[r]) for p in P] for r in resamples])
    defined = np.isfinite(direct)
    np.testing.assert_allclose(weighted[defined], direct[defined], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["pearson", "ccc", "spearman"])
@given(seed=seeds, n=sizes)
def test_uniform_weights_give_the_unweighted_correlation(name, seed, n):
    y, P = sample(name, np.random.default_rng(seed), n)
    uniform = np.full((2, n), 1 / n)
    weighted = get_scorer(name).weighted(y, P, uniform)
    np.testing.assert_allclose(
        weighted, np.tile([REFERENCE[name](y, p) for p in P], (2, 1)), rtol=1e-9, atol=1e-12
    )


def test_orientation_is_declared():
    smaller = {"zero-one", "squared", "absolute", "log-loss", "multiclass-log-loss", "rmse"}
    for name, scorer in SCORERS.items():
        assert scorer.greater_is_better is (name not in smaller)
    assert {n for n, s in SCORERS.items() if isinstance(s, LossScorer)} == smaller - {"rmse"}


def test_aliases_and_unknown_names():
    assert get_scorer("mse") is get_scorer("squared")
    with pytest.raises(ValueError, match="did you mean 'pearson'"):
        get_scorer("pearsn")


@given(seed=seeds, n=st.integers(1, 3000), m=st.integers(1, 5))
def test_counting_zero_one_errors_gives_the_bits_of_the_mean_loss(seed, n, m):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n).astype(float)
    P = rng.integers(0, 3, (m, n)).astype(float)
    scorer = get_scorer("zero-one")
    assert np.array_equal(scorer.score_many(y, P), scorer.loss(y, P).mean(axis=1))


@pytest.mark.parametrize("name", sorted(SCORERS))
@given(seed=seeds, n=st.integers(5, 300), m=st.integers(2, 40))
def test_a_rows_score_does_not_depend_on_the_rows_scored_with_it(name, seed, n, m):
    rng = np.random.default_rng(seed)
    scorer = get_scorer(name)
    if scorer.prediction_kind.value == "probabilities":
        y = rng.integers(0, 3, n).astype(float)
        P = rng.dirichlet(np.ones(3), (m, n))
    else:
        y, P = sample(name, rng, n)
        P = np.concatenate([P, sample(name, rng, n)[1]] * (m // 3 + 1))[:m]
    batch = scorer.score_many(y, P)
    assert np.array_equal(batch, [scorer.score_many(y, P[row : row + 1])[0] for row in range(m)])
