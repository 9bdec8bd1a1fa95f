"""The battery's attacks on a 4-class log-loss challenge: label recovery, boosting, and who cannot play it."""

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.certification.certify import markdown
from ladderlab.certification.challenge_certify import certify_challenge
from ladderlab.engines.label_code import LabelCode
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel, play
from ladderlab.scoring import get_scorer
from tests.serve_helpers import write_challenge

CLIPPED = [0.01, 0.99]
"""The declared prediction range of the certificate's probability family."""


def four_classes(n_public: int, prediction_range: list[float] | None = CLIPPED, disclose: bool = True):
    return TASKS.make("random-labels-log-loss", preset=None, n_public=n_public, n_holdout=3 * n_public, n_classes=4,
                      disclose_public_rows=disclose, prediction_range=prediction_range)


def one_hot_losses(n_classes: int, prediction_range: list[float]) -> tuple[float, float]:
    """The clipped multiclass log loss of a one-hot row when its class is right, and when it is wrong."""
    scorer = get_scorer("multiclass-log-loss").within(tuple(prediction_range))
    row = np.eye(n_classes)[:1][None]
    hit, miss = scorer.loss(np.array([0.0, 1.0]), np.repeat(row, 2, axis=1))[0]
    return float(hit), float(miss)


@given(seed=st.integers(0, 2**32 - 1), n_classes=st.integers(2, 6),
       prediction_range=st.one_of(st.none(), st.tuples(st.floats(0.0, 0.2), st.floats(0.8, 1.0))))
@settings(max_examples=30, deadline=None)
def test_a_one_hot_row_loses_the_same_for_every_class_so_the_release_gives_the_zero_one_loss(
        seed, n_classes, prediction_range):
    """The code's premise: whatever the class and the clip (ε alone, or a declared range), a right
    label loses ``hit`` and a wrong one ``miss``, to the last bits, so a batch's released losses
    read back as their 0/1 losses. Without a range the binary code's surest probability 1 − ε is
    not exact in floating point, and a sure 0 and a sure 1 would lose 34.5388 and 34.5395."""
    rng = np.random.default_rng(seed)
    task = TASKS.make("random-labels-log-loss", preset=None, n_public=50, n_holdout=150, n_classes=n_classes,
                      prediction_range=None if prediction_range is None else list(prediction_range))
    split = task.split(rng)
    code = LabelCode.of(split.public)
    U = rng.integers(0, n_classes, (5, 150))
    losses = code.scorer.loss(split.y_holdout, code.submissions(U))
    np.testing.assert_allclose(losses, np.where(U == split.y_holdout, code.hit, code.miss), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(code.labels(code.submissions(U)), U)
    errors = (U[:, split.public_rows] != split.y_public).mean(axis=1)
    np.testing.assert_allclose(code.zero_one_loss(code.scorer.score_many(split.y_public, code.submissions(U)[:, split.public_rows])),
                               errors, rtol=0, atol=1e-12)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=3, deadline=None)
def test_the_log_loss_oracle_reads_every_public_label_of_a_clipped_four_class_leaderboard(seed):
    """Kaggle rounds to α·B (B: the clipped loss's width): the code is built within the declared
    range and at that resolution, so every public label is decoded; the final rows keep the
    uniform prediction, whose loss is log 4 whatever the labels. A code that ignores the range
    (the scorer's ε only) decodes wrong labels and its public loss is far from the one-hot hit."""
    hit, _ = one_hot_losses(4, CLIPPED)
    attack = ATTACKS.make("log-loss-oracle")
    result = duel(four_classes(200), MECHANISMS.make("kaggle"), attack, seed=seed)
    assert attack.batch_size_ == 4 and attack.recovered_ == 200 and attack.undecoded_batches_ == 0
    assert result.submissions == 50
    assert result.final_public == pytest.approx(hit, abs=1e-12)
    assert result.final_final == pytest.approx(math.log(4), abs=1e-12)


@pytest.mark.parametrize("mechanism", ["full-disclosure", "kaggle"])
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=2, deadline=None)
def test_the_log_loss_oracle_learns_which_rows_are_public_and_reads_their_labels(mechanism, seed):
    """The public rows are not disclosed: eight one-hot probes give their number (100 of 300), and
    the code with a "not scored" state reads every holdout row's membership and every public
    label, Kaggle's rounding included. The final rows stay uniform (log 4 exactly). A count
    finder that ignores the rounding finds no count against Kaggle; a code without the "not
    scored" state decodes no batch that mixes public and final rows."""
    hit, _ = one_hot_losses(4, CLIPPED)
    attack = ATTACKS.make("log-loss-oracle")
    result = duel(four_classes(100, disclose=False), MECHANISMS.make(mechanism), attack, seed=seed)
    assert attack.scored_rows_ == 100 and attack.recovered_ == 100 and attack.undecoded_batches_ == 0
    assert result.submissions == 8 + math.ceil(300 / attack.batch_size_)
    assert result.final_public == pytest.approx(hit, abs=1e-12)
    assert result.final_final == pytest.approx(math.log(4), abs=1e-12)


def test_a_resolution_that_cannot_separate_one_label_is_a_reason_not_to_play():
    """Rounded to B/n, one row's loss moves the score by less than a step: no code exists."""
    public = four_classes(200).split(np.random.default_rng(0)).public
    why = ATTACKS.make("log-loss-oracle", resolution=1 / 200).incompatibility(public)
    assert why is not None and "cannot be decoded uniquely" in why


DELTA = 1e-9


def hoeffding(n: int, two_sided: bool = True) -> float:
    """Deviation of a mean of n independent [0, 1] variables exceeded with probability at most DELTA."""
    return math.sqrt(math.log((2 if two_sided else 1) / DELTA) / (2 * n))


def zero_one(loss: float, n_classes: int) -> float:
    """The 0/1 loss of one-hot rows from their clipped log loss (every row loses the hit or the miss)."""
    hit, miss = one_hot_losses(n_classes, CLIPPED)
    return (loss - hit) / (miss - hit)


BOOSTED = [("multiclass-boosting", 4), ("multiclass-boosting", 2), ("boosting", 2)]


@pytest.mark.parametrize("mechanism", ["full-disclosure", "kaggle"])
@pytest.mark.parametrize(("attack", "n_classes"), BOOSTED)
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=2, deadline=None)
def test_boosting_one_hot_rows_overfits_a_log_loss_leaderboard_while_the_final_rows_stay_at_chance(
        attack, n_classes, mechanism, seed):
    """k = 500 random labellings on n = 1000 public rows, read back through the clipped log loss:
    the vote's public 0/1 loss lies below chance by more than any fixed prediction's could
    (Hoeffding, one-sided, 1e-9) while its loss on the 3000 final rows, whose labels it never
    touched, stays at chance (two-sided, 1e-9). Reading the released loss as if it were the
    0/1 loss keeps the wrong labellings and fails the first bound."""
    task = TASKS.make("random-labels-log-loss", preset=None, n_public=1000, n_holdout=4000, n_classes=n_classes,
                      disclose_public_rows=False, prediction_range=CLIPPED)
    result = duel(task, MECHANISMS.make(mechanism), ATTACKS.make(attack, k=500), seed=seed)
    chance = 1 - 1 / n_classes
    assert result.submissions == 500
    assert zero_one(result.final_public, n_classes) < chance - hoeffding(1000, two_sided=False)
    assert abs(zero_one(result.final_final, n_classes) - chance) <= hoeffding(3000)


@pytest.mark.parametrize(("attack", "params"), [("log-loss-oracle", {}), ("multiclass-boosting", {"k": 60}),
                                                ("hill-climbing", {"k": 60, "block": 4})])
def test_the_same_seed_plays_the_same_four_class_transcript(attack, params):
    task = four_classes(100)
    first, again, other = (duel(task, MECHANISMS.make("kaggle"), ATTACKS.make(attack, **params), seed=seed)
                           for seed in (3, 3, 4))
    np.testing.assert_array_equal(first.released, again.released)
    assert first.final_public == again.final_public and first.final_final == again.final_final
    assert not np.array_equal(first.released, other.released)


LABEL_ATTACKS = [("boosting", {"k": 300}, 2), ("boosting", {"k": 300, "variant": "ladder"}, 2),
                 ("multiclass-boosting", {"k": 300}, 4), ("threshold-evasion", {"k": 300}, 2),
                 ("staircase", {"k": 300, "block": 64}, 4), ("fresh-staircase", {"k": 300, "block": 64}, 4)]


@pytest.mark.parametrize(("attack", "params", "n_classes"), LABEL_ATTACKS)
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=2, deadline=None)
def test_a_label_attack_plays_the_clipped_log_loss_exactly_as_the_zero_one_loss(attack, params, n_classes, seed):
    """The same labels, the same streams, full disclosure: every release of the log-loss game, read back
    through the one-hot code, is the 0/1 game's release, so every decision and the final labels agree.
    A code that takes the one-hot row's loss before the scorer's clip (hit 0, miss log(1/ε)) does not."""
    log_loss = four_classes(500).split(np.random.default_rng(seed)) if n_classes == 4 else TASKS.make(
        "random-labels-log-loss", preset=None, n_public=500, n_holdout=1500, n_classes=2,
        disclose_public_rows=False, prediction_range=CLIPPED).split(np.random.default_rng(seed))
    zero_one_split = replace(log_loss, public=replace(log_loss.public, scorer="zero-one", prediction_range=None))
    results = [play(split, MECHANISMS.make("full-disclosure"), ATTACKS.make(attack, **params),
                    np.random.default_rng(seed), np.random.default_rng(seed + 1))
               for split in (log_loss, zero_one_split)]
    code = LabelCode.of(log_loss.public)
    np.testing.assert_allclose(code.zero_one_loss(results[0].released), results[1].released, rtol=0, atol=1e-12)
    assert code.zero_one_loss(results[0].final_final) == pytest.approx(results[1].final_final, abs=1e-12)


PLAYS_FOUR_CLASSES = {"hill-climbing", "multiclass-boosting", "staircase", "fresh-staircase", "sybil-staircase",
                      "log-loss-oracle"}
WHY_NOT = {"boosting": "binary labels", "threshold-evasion": "binary labels",
           "scale-probe": "multiclass-log-loss", "feature-selection": "multiclass-log-loss",
           "freedman": "regression", "step-forward": "regression", "resubmission-probe": "features"}


def test_certify_plays_the_label_attacks_on_a_four_class_log_loss_challenge_and_names_why_the_others_cannot(tmp_path):
    """The default battery on a 4-class challenge scored by the clipped multiclass log loss (100 public
    rows, budget 40, Kaggle's rounding): the label attacks play it through the one-hot code, the
    log-loss oracle learns which rows are public and breaks Kaggle, and every attack that does not
    play says why. The label attacks' one-hot rows lose far more than a constant prediction (a wrong
    row costs 4.6 nats): how much the board overstates them is not counted (the certificate measures
    scores that beat, or nearly beat, a constant), so they count for nothing here; their label
    information is what the 0/1 family measures."""
    path = write_challenge(tmp_path / "data", n=200, scorer="multiclass-log-loss", mechanism="kaggle", params="",
                           rules="total = 40", extra="prediction_range = [0.01, 0.99]")
    labels = pd.read_csv(tmp_path / "data" / "labels.csv")
    labels["label"] = np.random.default_rng(1).integers(0, 4, labels.shape[0])
    labels.to_csv(tmp_path / "data" / "labels.csv", index=False)
    certificate = certify_challenge(path, replications=8, honest_replications=1, run_dir=tmp_path / "battery")
    verdicts = {row["attack_label"]: row["verdict"] for row in certificate["battery"]}
    assert {attack for attack, verdict in verdicts.items() if verdict != "did not play"} == PLAYS_FOUR_CLASSES
    assert verdicts["log-loss-oracle"] == "fails" and certificate["safe_budget"] == 0
    boosting = next(row for row in certificate["battery"] if row["attack"] == "multiclass-boosting")
    assert boosting["delta"] == {"median": 0.0, "lo": 0.0, "hi": 0.0} and boosting["delta_raw"]["median"] == 0.0
    did_not_play = markdown(certificate).split("## Did not play")[1].split("\n## ")[0]
    for attack, reason in WHY_NOT.items():
        assert any(line.startswith(f"- {attack} ") and reason in line for line in did_not_play.splitlines()), attack
