"""The attacks of the papers, against the mechanisms they were designed for."""

import math

import numpy as np
import pytest
from scipy import stats

from ladderlab.engines.regression import forward_step_predictions, ols_predictions
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel, play
from ladderlab.seeding import stream
from ladderlab.testing import reachable_arrays

PERMUTED = TASKS.make("gaussian-regression", preset="ad-challenge")


@pytest.mark.parametrize("attack_id, params", [("freedman", {"k": 10}), ("step-forward", {"iterations": 5})])
def test_regression_attacks_overfit_full_disclosure_on_permuted_data(attack_id, params):
    """A sign test: if the attack did not overfit, Δ < 0 would be no likelier than not, and 36 or
    more negatives in 40 replications would have probability P(Bin(40, ½) ≥ 36) < 1e-7."""
    deltas = [
        duel(PERMUTED, MECHANISMS.make("full-disclosure"), ATTACKS.make(attack_id, **params), seed=r).delta
        for r in range(40)
    ]
    negatives = int(np.sum(np.array(deltas) < 0))
    assert stats.binom.sf(negatives - 1, 40, 0.5) < 1e-7


def test_boosting_overfits_full_disclosure_and_kaggle_while_the_private_loss_stays_at_one_half():
    """n = 4000 public of 12000 (the paper's setting), k = 1000. Hoeffding, δ = 1e-9: a fixed
    vector's public loss is above ½ − 0.051 and its private loss within ½ ± 0.037."""
    task = TASKS.make("random-labels")
    public_margin = math.sqrt(math.log(1 / 1e-9) / (2 * 4000))
    private_margin = math.sqrt(math.log(2 / 1e-9) / (2 * 8000))
    for mechanism_id in ["full-disclosure", "kaggle"]:
        result = duel(task, MECHANISMS.make(mechanism_id), ATTACKS.make("boosting", k=1000), seed=3)
        assert result.final_released < 0.5 - public_margin
        assert abs(result.final_final - 0.5) <= private_margin
        assert result.leaderboard_error >= public_margin


def test_boosting_bias_against_the_parameter_free_ladder_is_of_order_sqrt_log_k_over_n():
    """Blum & Hardt §5.1: O(√(log k / n)) against the Ladder, while Kaggle's bias grows like √(k/n)."""
    task = TASKS.make("random-labels")
    k, n = 1000, 4000
    bound = 1.5 * math.sqrt(math.log(k) / n)
    for seed in range(3):
        ladder = duel(task, MECHANISMS.make("ladder-free"), ATTACKS.make("boosting", k=k, variant="ladder"), seed=seed)
        kaggle = duel(task, MECHANISMS.make("kaggle"), ATTACKS.make("boosting", k=k), seed=seed)
        assert 0.5 - ladder.final_released <= bound
        assert 0.5 - kaggle.final_released > bound


@pytest.mark.parametrize("variant", ["kaggle", "ladder"])
def test_boosting_submits_in_chunks_with_the_transcript_of_whole_batches(monkeypatch, variant):
    """Large holdouts are submitted in chunks of ``SUBMISSION_CHUNK_ELEMENTS``: the same
    vectors, releases and majority vote as one batch of ``batch`` rows."""
    import ladderlab.attacks.boosting as boosting

    task = TASKS.make("random-labels", n_public=300, n_holdout=900)
    whole = duel(task, MECHANISMS.make("ladder-free"), ATTACKS.make("boosting", k=250, variant=variant), seed=4)
    monkeypatch.setattr(boosting, "SUBMISSION_CHUNK_ELEMENTS", 37 * 900)  # chunks of 37 rows
    chunked = duel(task, MECHANISMS.make("ladder-free"), ATTACKS.make("boosting", k=250, variant=variant), seed=4)
    np.testing.assert_array_equal(chunked.released, whole.released)
    assert chunked.final_final == whole.final_final and chunked.final_public == whole.final_public


def test_step_forward_selects_the_feature_of_the_last_jump_on_the_t_ladder():
    task, attack = PERMUTED, ATTACKS.make("step-forward", iterations=4)
    split = task.split(stream(0, "task", 0))
    mechanism = MECHANISMS.make("ladder-t", alpha=0.15)
    play(split, mechanism, attack, np.random.default_rng(1), np.random.default_rng(2))
    remaining = list(range(split.public.X_train.shape[1]))
    starts = attack.iteration_starts_ + [attack.iteration_starts_[-1] + len(remaining) - len(attack.iteration_starts_) + 1]
    for iteration, feature in enumerate(attack.selected_):
        start, stop = starts[iteration], starts[iteration + 1]
        last_acceptance = max(i for i in mechanism.acceptances_ if start <= i < stop)
        assert feature == remaining[last_acceptance - start]
        remaining.remove(feature)


def test_step_forward_with_oracle_changepoints_locates_jumps_in_ladder_boot():
    """With b large the bootstrap noise is small: binary segmentation told the true number of
    jumps selects the same features as the exact last jump."""
    split = PERMUTED.split(stream(0, "task", 1))
    selections = []
    for attack in [
        ATTACKS.make("step-forward", iterations=3, jump="binseg", changepoints="oracle"),
        ATTACKS.make("step-forward", iterations=3, jump="binseg", changepoints="oracle", rules="r"),
    ]:
        mechanism = MECHANISMS.make("ladder-boot", b=100_000, critical_value=1.0)
        play(split, mechanism, attack, np.random.default_rng(1), np.random.default_rng(2), oracle=True)
        selections.append(attack.selected_)
    exact = ATTACKS.make("step-forward", iterations=3)
    play(split, MECHANISMS.make("ladder-t", critical_value=1.0), exact, np.random.default_rng(1), np.random.default_rng(2))
    assert selections[0] == selections[1] == exact.selected_


@pytest.mark.slow
def test_repeated_submissions_average_out_ladder_boot_noise():
    """Chaibub Neto, Discussion: against LadderBoot with b = 1, binary segmentation (told the true
    number of jumps) rarely finds the last jump in single releases, but finds it (within one
    feature) in the averages of T = 200 repeated submissions.

    40 independent replications (measured: 28 hits with T = 200, none with T = 1). If
    averaging found the jump at most 1 time in 5, 20 hits or more would have probability
    2·10⁻⁵; if single releases found it half the time, 4 hits or fewer would have
    probability 10⁻⁷ (binomial tails)."""
    hits = {1: 0, 200: 0}
    for replication in range(40):
        split = PERMUTED.split(stream(0, "task", replication))
        for repeats in hits:
            attack = ATTACKS.make("step-forward", iterations=1, jump="binseg", changepoints="oracle", repeats=repeats)
            mechanism = MECHANISMS.make("ladder-boot", b=1, alpha=0.15)
            play(split, mechanism, attack, stream(0, "mechanism", replication), stream(0, "attack", replication),
                 oracle=True)
            p = split.public.X_train.shape[1]
            last_jump = max(a for a in mechanism.acceptances_ if a < p * repeats) // repeats
            hits[repeats] += bool(attack.selected_) and abs(attack.selected_[0] - last_jump) <= 1
    assert hits[200] >= 20 and hits[1] <= 4


def test_oracle_needs_an_oracle_board():
    split = PERMUTED.split(stream(0, "task", 0))
    attack = ATTACKS.make("step-forward", iterations=1, jump="binseg", changepoints="oracle")
    with pytest.raises(PermissionError, match="oracle=True"):
        play(split, MECHANISMS.make("ladder-boot"), attack, np.random.default_rng(1), np.random.default_rng(2))


@pytest.mark.parametrize("attack_id", ATTACKS.ids())
@pytest.mark.parametrize("task_id", ["gaussian-regression", "random-labels", "breast-cancer"])
def test_no_object_an_attack_receives_holds_holdout_labels(attack_id, task_id, monkeypatch):
    task = TASKS.make(task_id, **({"n_public": 200, "n_holdout": 600} if task_id == "random-labels" else {}))
    split = task.split(np.random.default_rng(0))
    attack = ATTACKS.make(attack_id)
    if attack.incompatibility(split.public):
        pytest.skip(attack.incompatibility(split.public))
    labels = [split.y_holdout, split.y_public, split.y_final]
    received = []
    original_run = type(attack).run

    def spy(self, board, data, rng):
        received.extend([board, data, rng])
        return original_run(self, board, data, rng)

    monkeypatch.setattr(type(attack), "run", spy)
    play(split, MECHANISMS.make("kaggle"), attack, np.random.default_rng(1), np.random.default_rng(2))
    for array in [a for obj in received for a in reachable_arrays(obj)]:
        for y in labels:
            assert not np.shares_memory(array, y)
            assert array.shape != y.shape or not np.array_equal(array, y)


@pytest.mark.parametrize("selected", [[3, 7], [], [3, 3]], ids=["two", "none", "collinear"])
def test_vectorised_forward_step_equals_one_regression_per_candidate(selected):
    """A collinear base design (a feature selected twice) takes lstsq's path and still agrees."""
    rng = np.random.default_rng(0)
    X, y, X_new = rng.normal(size=(40, 12)), rng.normal(size=40), rng.normal(size=(25, 12))
    candidates = np.array([0, 1, 2, 4, 11])
    fast = forward_step_predictions(X, y, X_new, selected, candidates)
    slow = np.stack([ols_predictions(X, y, X_new, selected + [j]) for j in candidates])
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-10)


def test_honest_participants_play_multiclass_tasks_and_beat_chance():
    """Every model, the L1-logistic one included, fits 10 classes; the pick's final 0/1 loss is
    below chance by more than Hoeffding's bound at 1e-6 on the 2000 final rows (0.9 − 0.083)."""
    task = TASKS.make("random-labels", n_public=1000, n_holdout=3000, n_classes=10, side_information=1.0)
    result = duel(task, MECHANISMS.make("kaggle"), ATTACKS.make("honest"), seed=0)
    assert result.submissions == 4
    assert result.final_final < 0.9 - math.sqrt(math.log(2 / 1e-6) / (2 * 2000))


def test_honest_participants_do_not_overfit():
    """On permuted data the honest control's Δ is centred: a sign test does not reject at 1e-3."""
    honest = ATTACKS.make("honest", models=("ridge", "knn"))
    deltas = [duel(PERMUTED, MECHANISMS.make("full-disclosure"), honest, seed=r).delta for r in range(30)]
    negatives = int(np.sum(np.array(deltas) < 0))
    assert stats.binomtest(negatives, 30, 0.5).pvalue > 1e-3


def test_tasks_split_into_three_standardised_sets():
    split = PERMUTED.split(np.random.default_rng(0))
    data = split.public
    assert data.X_train.shape == (210, 300) and data.X_holdout.shape == (418, 300)
    assert split.public_rows.size == 209 and split.final_rows.size == 209
    for y in (data.y_train, split.y_public, split.y_final):
        assert abs(y.mean()) < 1e-12 and abs(y.std() - 1) < 1e-12


def test_permuted_mode_keeps_the_split_and_random_split_mode_changes_it():
    permuted = TASKS.make("diabetes", mode="permuted")
    a, b = permuted.split(np.random.default_rng(1)), permuted.split(np.random.default_rng(2))
    assert np.array_equal(np.sort(a.public.X_train, axis=0), np.sort(b.public.X_train, axis=0))
    assert not np.array_equal(a.public.y_train, b.public.y_train)
    resplit = TASKS.make("diabetes", mode="random-split")
    c, d = resplit.split(np.random.default_rng(1)), resplit.split(np.random.default_rng(2))
    assert not np.array_equal(np.sort(c.public.X_train, axis=0), np.sort(d.public.X_train, axis=0))


def test_random_labels_population_score_is_one_half():
    split = TASKS.make("random-labels").split(np.random.default_rng(0))
    assert split.population_score == 0.5 and split.public_rows.size == 4000 and split.y_holdout.size == 12000


def test_incompatible_pairs_say_why():
    data = TASKS.make("random-labels", n_public=10, n_holdout=30).split(np.random.default_rng(0)).public
    assert "regression" in ATTACKS.make("freedman").incompatibility(data)
    regression = PERMUTED.split(np.random.default_rng(0)).public
    assert "0/1 loss" in ATTACKS.make("boosting").incompatibility(regression)
