"""The certificate's units: the best constant prediction's loss on every scorer, the refusal of a tolerance
larger than it, and the mechanism parameters a certificate sets so that an honest improvement of τ is released."""

import math

import numpy as np
import pytest

from ladderlab.certification import certify
from ladderlab.certification.units import CONSTANT_LOSSES, check_tolerances, constant_loss, unit_of
from ladderlab.registry import MECHANISMS
from ladderlab.runs.duel import open_board
from ladderlab.scoring import SCORERS, get_scorer
from ladderlab.tasks import PublicData, Split

RNG = np.random.default_rng(5)
BINARY = RNG.integers(0, 2, 400).astype(float)
THREE = RNG.choice(3, 400, p=[0.5, 0.3, 0.2]).astype(float)
REAL = RNG.gamma(2.0, 1.5, 400)


def data(scorer: str, labels: np.ndarray, prediction_range=None, classes=None) -> PublicData:
    task_type = "regression" if get_scorer(scorer).prediction_kind.value == "real" and classes is None else "classification"
    return PublicData(np.zeros((1, 1)), np.zeros(1), np.zeros((labels.size, 1)), task_type, scorer, classes,
                      prediction_range=prediction_range)


def test_every_built_in_scorer_has_a_reference_unit():
    assert set(CONSTANT_LOSSES) == set(SCORERS)


@pytest.mark.parametrize("scorer, labels, prediction_range", [
    ("zero-one", BINARY, None), ("squared", REAL, (0.0, 20.0)), ("absolute", REAL, (0.0, 20.0)),
    ("rmse", REAL, (0.0, 20.0)), ("log-loss", BINARY, (0.01, 0.99)), ("squared", REAL, (4.0, 20.0)),
])
def test_a_losss_unit_is_the_loss_of_the_best_constant_prediction(scorer, labels, prediction_range):
    """Against a grid of 2001 constants across the range (labels for the 0/1 loss): none does better than U,
    and the best of them is within the grid's resolution of it; a range that excludes the mean moves it."""
    classes = np.array([0.0, 1.0]) if scorer in ("zero-one", "log-loss") else None
    bound = get_scorer(scorer).within(prediction_range)
    grid = [0.0, 1.0] if scorer == "zero-one" else np.linspace(*prediction_range, 2001)
    best = min(bound.score(labels, np.full(labels.size, constant)) for constant in grid)
    unit = constant_loss(data(scorer, labels, prediction_range, classes), labels)
    assert unit <= best + 1e-12 and best - unit < 1e-4 * max(1.0, unit)


def test_the_units_named_in_the_docstring_are_the_variance_the_minority_rate_and_the_entropy():
    share = BINARY.mean()
    assert constant_loss(data("squared", REAL, (0.0, 20.0)), REAL) == pytest.approx(REAL.var())
    assert constant_loss(data("zero-one", BINARY, classes=np.array([0.0, 1.0])), BINARY) == min(share, 1 - share)
    entropy = -(share * math.log(share) + (1 - share) * math.log(1 - share))
    assert constant_loss(data("log-loss", BINARY, (0.01, 0.99), np.array([0.0, 1.0])), BINARY) == pytest.approx(entropy)
    shares = np.bincount(THREE.astype(int)) / THREE.size
    multiclass = data("multiclass-log-loss", THREE, (0.01, 0.99), np.array([0.0, 1.0, 2.0]))
    assert constant_loss(multiclass, THREE) == pytest.approx(-(shares * np.log(shares)).sum())


@pytest.mark.parametrize("scorer, expected", [("accuracy", 1 - max(BINARY.mean(), 1 - BINARY.mean())),
                                              ("roc-auc", 0.5), ("pearson", 1.0), ("spearman", 1.0), ("ccc", 1.0)])
def test_a_metrics_unit_is_the_gap_from_the_best_constant_to_the_best_score(scorer, expected):
    labels = BINARY if scorer in ("accuracy", "roc-auc") else REAL
    classes = np.array([0.0, 1.0]) if scorer in ("accuracy", "roc-auc") else None
    shown = data(scorer, labels, classes=classes)
    assert constant_loss(shown, labels) == pytest.approx(expected)
    unit = unit_of("constant", shown, labels, 1.0)
    if scorer == "accuracy":
        assert unit.constant_score == pytest.approx(get_scorer(scorer).score(labels, np.full(labels.size, 1.0 * (
            BINARY.mean() > 0.5))))


def test_sign_agreements_unit_scales_with_its_range():
    shown = data("sign-agreement", BINARY, (-2.0, 2.0))
    assert constant_loss(shown, BINARY) == pytest.approx(2.0 * min(BINARY.mean(), 1 - BINARY.mean()))


def test_a_tolerance_larger_than_the_constant_predictions_loss_is_refused_with_the_reason():
    unit = unit_of("score", data("squared", REAL, (0.0, 20.0)), REAL, 400.0)
    check_tolerances(REAL.var(), 0.5, unit, "regression")
    with pytest.raises(ValueError, match=r"--tau 6000 .* more than the best constant prediction loses there"):
        check_tolerances(6000.0, 0.5, unit, "regression")
    with pytest.raises(ValueError, match="--epsilon 1.5"):
        check_tolerances(0.1, 1.5, unit_of("constant", data("squared", REAL, (0.0, 20.0)), REAL, 400.0), "regression")
    constant = np.zeros(50)
    with pytest.raises(ValueError, match="all alike"):
        check_tolerances(0.1, 0.1, unit_of("constant", data("zero-one", constant, classes=np.array([0.0, 1.0])),
                                           constant, 1.0), "challenge")


def test_certify_refuses_a_tolerance_beyond_the_constant_predictions_loss_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="--tau 1.5"):
        certify.certify("ladder", n=200, tau=1.5, run_dir=tmp_path / "battery")
    assert not (tmp_path / "battery").exists()


# The parameters a certificate sets: an honest improvement of τ must be released.

def released_after(mechanism_id: str, params: dict, improvement: float, rng: np.random.Generator) -> bool:
    """Whether a submission whose public 0/1 loss is ``improvement`` below the last one's is released below it."""
    n = 4000
    labels = rng.integers(0, 2, n).astype(float)
    split = Split(PublicData(np.zeros((1, 1)), np.zeros(1), np.zeros((n, 1)), "classification", "zero-one",
                             np.array([0.0, 1.0])), np.arange(n), np.array([], dtype=np.int64), labels)
    board = open_board(split, MECHANISMS.make(mechanism_id, **params), rng)
    first = np.where(rng.random(n) < 0.4, 1 - labels, labels)
    better = first.copy()
    wrong = np.flatnonzero(first != labels)
    better[wrong[: round(improvement * n)]] = labels[wrong[: round(improvement * n)]]
    last = board.submit(first)
    return board.submit(better) < last


@pytest.mark.parametrize("mechanism_id", ["ladder", "kaggle", "sparse-vector-ladder", "noisy"])
def test_the_coarsest_setting_that_releases_an_improvement_releases_it(mechanism_id):
    """At ``releasing(0.05)`` an improvement of 0.05 of the 0/1 loss (200 of 4000 labels) is released below the
    last release in at least 24 of 25 boards; the Ladders at ``releasing(0.15)`` (a step three times as coarse)
    hide it in all but a few: the setting is the coarsest that releases it, not merely a fine one."""
    fine = MECHANISMS.make(mechanism_id).releasing(0.05)
    released = [released_after(mechanism_id, fine, 0.05, np.random.default_rng(seed)) for seed in range(25)]
    assert sum(released) >= 24
    if mechanism_id in ("ladder", "sparse-vector-ladder"):
        coarse = MECHANISMS.make(mechanism_id).releasing(0.15)
        assert sum(released_after(mechanism_id, coarse, 0.05, np.random.default_rng(seed)) for seed in range(25)) <= 3


def test_a_certificate_sets_only_the_parameters_whose_default_would_hide_an_improvement_of_tau():
    regression = certify.families(1000, "squared", (-3.0, 3.0))
    improvement = certify.tolerance_improvement(regression)
    assert improvement == pytest.approx(0.1 * min(
        unit.constant_loss / unit.bound for unit in certify.measured_families(regression)[1].values()))
    assert certify.tolerance_defaults("ladder", {}, improvement) == {"eta": improvement / 2}
    assert certify.tolerance_defaults("ladder", {"eta": 0.5}, improvement) == {}  # the organiser's own
    assert certify.tolerance_defaults("ladder", {}, 0.1) == {}  # 0.01 already releases 0.1
    assert certify.tolerance_defaults("kaggle", {}, improvement) == {}  # α = 1e-5 releases anything
    assert certify.tolerance_defaults("ladder-t", {}, improvement) == {}  # scale-free
    assert set(certify.tolerance_defaults("sparse-vector-ladder", {}, improvement)) == {"eta", "sigma"}
