"""A certificate without artefacts: crashes are counted, lag is no overfitting, one duel is one piece of
evidence, a challenge's replications resample what is random in practice, a clear mechanism's safe
budget does not depend on the seed, and the headline states utility with safety."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from ladderlab.certification import certificate_text, certify
from ladderlab.certification.challenge_task import ChallengeTask
from ladderlab.runs.duel import AttackCrashed, duel, keeping_crashes
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.stats.sequential import FAILS, INCONCLUSIVE, PASSES

DATA = Path(__file__).parent / "data"
CRASHING = str(DATA / "crashing.py")
KNOWN_DELTA = str(DATA / "known_delta.py")
EXAMPLE = Path(__file__).parents[1] / "examples" / "breast-cancer" / "challenge.toml"
CHEAP = dict(default_battery=False, scorer="zero-one", honest=["improving(days=3)"], honest_replications=1)


# Crashes: counted with what was submitted, never dropped.

def test_an_attack_that_raises_keeps_its_transcript():
    """The duel of an attack that raises at the end is the duel of its submissions, without a final one (where
    crashes are kept, as the runner keeps them; elsewhere the attack's own exception propagates)."""
    task = TASKS.make("random-labels", n_public=500, n_holdout=1500)
    unlucky = ATTACKS.make(f"{CRASHING}:Guesses", k=20, raise_unless_below=0.0)
    kept = duel(task, MECHANISMS.make("kaggle"), ATTACKS.make(f"{CRASHING}:Guesses", k=20), seed=1)
    with pytest.raises(RuntimeError, match="no luck"):
        duel(task, MECHANISMS.make("kaggle"), unlucky, seed=1)
    with keeping_crashes(), pytest.raises(AttackCrashed, match="no luck") as raised:
        duel(task, MECHANISMS.make("kaggle"), unlucky, seed=1)
    partial = raised.value.partial
    assert partial.submissions == kept.submissions == 20 and partial.released.size == 20 == kept.released.size - 1
    assert partial.delta == kept.delta and np.array_equal(partial.released, kept.released[:-1])
    with keeping_crashes(), pytest.raises(AttackCrashed) as early:
        duel(task, MECHANISMS.make("kaggle"), ATTACKS.make(f"{CRASHING}:MostlyRaises", rate=1.0), seed=1)
    assert early.value.partial is None


def test_a_plugin_that_raises_unless_lucky_gets_the_verdict_of_its_twin_that_never_raises(tmp_path):
    """Raising unless the best release lies below 0.43 (about 4 in 5 replications raise): each crash counts with its
    transcript, so the rates, the verdict and the safe budget are those of the same climb that never raises
    (dropping the crashes would keep only the lucky climbs, whose Δ lies beyond −τ in every replication)."""
    options = dict(n=300, budgets=[30], replications=100, seed=2, run_dir=tmp_path / "battery", **CHEAP)
    twins = certify.certify("kaggle", attacks=[f"{CRASHING}:Guesses", f"{CRASHING}:Guesses(raise_unless_below=0.43)"],
                            **options)
    plain, raising = twins["battery"]
    assert raising["crash_share"] > 0.5 and plain["crash_share"] == 0
    for key in ("verdict", "replications", "p_delta", "p_optimism", "delta"):
        assert raising[key] == plain[key], key
    assert "crashed in" in certificate_text.markdown(twins) and "no luck" in certificate_text.summary(twins)


def test_a_plugin_that_raises_in_97_percent_of_replications_neither_fails_the_mechanism_nor_erases_the_certificate(
        tmp_path):
    certificate = certify.certify("ladder", n=2000, budgets=[1], attacks=[f"{CRASHING}:MostlyRaises"], replications=100,
                                  seed=1, run_dir=tmp_path / "battery", **CHEAP)
    (row,) = certificate["battery"]
    assert row["verdict"] == PASSES and certificate["safe_budget"] == 1
    assert 0.9 < row["crash_share"] < 1 and row["n_crashed_unsubmitted"] == row["n_crashed"]
    assert f"crashed in {100 * row['crash_share']:.0f} %" in certificate_text.markdown(certificate)


# Lag: an honest cost, not overfitting.

IMPROVING = {"id": "gaussian-regression", "params": {"n_samples": 3000, "n_features": 20, "n_signal": 5, "snr": 1.0,
                                                     "mode": "random-split", "scorer": "squared",
                                                     "prediction_range": "training"}}


@pytest.mark.slow
def test_a_participant_who_never_looks_and_improves_shows_lag_not_optimism_and_passes(tmp_path):
    """An attack that submits ever better models without reading the board (``improving`` as an attack), against
    the sparse-vector Ladder with a step of 0.02·B that hides its improvements and little noise: over 30 days the
    leaderboard lags the truth by more than ε = 0.15·U in most contests (its error, counted whole, would fail it),
    while its optimism and Δ stay well inside: it passes."""
    certificate = certify.certify("sparse-vector-ladder", {"eta": 0.02, "sigma": 1e-5}, n=1000, budgets=[30],
                                  attacks=[f"{DATA / 'blind_improver.py'}:BlindImprover"], default_battery=False,
                                  replications=120, seed=1, tau=0.15, epsilon=0.15, honest=["improving(days=3)"],
                                  honest_replications=1,
                                  task_families={"regression": IMPROVING, "honest": IMPROVING},
                                  run_dir=tmp_path / "battery")
    (row,) = certificate["battery"]
    epsilon = certificate["epsilon"]
    assert row["lberr"]["median"] > epsilon and row["lag"]["median"] > epsilon
    assert row["p_optimism"]["estimate"] == 0 and row["verdict"] == PASSES


# One duel is one piece of evidence; a challenge resamples.

def test_identical_replications_count_once(tmp_path):
    """On the breast-cancer challenge's fixed data, the Ladder against a constant prediction plays the same duel
    in every replication: the point counts it once and stays inconclusive, however many replications."""
    fixed = {"id": ChallengeTask.id, "params": {"path": str(EXAMPLE)}}
    certificate = certify.certify("ladder", n=200, budgets=[1], attacks=[f"{CRASHING}:Constant"], replications=50,
                                  task_families={"challenge": fixed, "honest": certify.families(200, "zero-one")["honest"]},
                                  run_dir=tmp_path / "battery", **CHEAP)
    (row,) = certificate["battery"]
    assert row["verdict"] == INCONCLUSIVE and row["replications"] == 1 and row["one_duel"]
    assert certificate["families"]["challenge"]["resampled"].startswith("nothing")
    assert "same duel" in certificate_text.markdown(certificate)


def test_a_challenge_certificate_resamples_so_a_deterministic_attack_plays_other_duels(tmp_path):
    """Certified for the challenge, the same constant prediction meets a bootstrap of the public and the final
    rows in each replication (the split is the organiser's column): its Δ varies, and the point is decided."""
    from ladderlab.certification.challenge_certify import certify_challenge

    certificate = certify_challenge(EXAMPLE, "ladder", {"eta": 0.01}, [1], attacks=[f"{CRASHING}:Constant"],
                                    replications=120, seed=1, tau=0.5, epsilon=0.5, run_dir=tmp_path / "battery",
                                    default_battery=False, honest=["honest"], honest_replications=1)
    (row,) = certificate["battery"]
    family = certificate["families"]["challenge"]
    assert family["params"]["resample"] == "bootstrap" and "bootstrap" in family["resampled"]
    assert row["delta"]["lo"] < row["delta"]["hi"] and row["verdict"] == PASSES and not row["one_duel"]


def test_a_drawn_split_is_drawn_afresh_in_each_replication(tmp_path):
    path = tmp_path / "drawn.toml"
    path.write_text(EXAMPLE.read_text().replace('column = "split"', "public_fraction = 0.5\nseed = 3")
                    .replace('"labels.csv"', f'"{EXAMPLE.parent / "labels.csv"}"')
                    .replace('"train.csv"', f'"{EXAMPLE.parent / "train.csv"}"')
                    .replace('"holdout.csv"', f'"{EXAMPLE.parent / "holdout.csv"}"'))
    task = ChallengeTask(str(path), resample="split")
    first, second = (task.split(np.random.default_rng(seed)) for seed in (1, 2))
    assert first.public_rows.size == second.public_rows.size == 200
    assert not np.array_equal(first.public_rows, second.public_rows)
    from ladderlab.certification import challenge_certify
    from ladderlab.certification.challenge_task import load_challenge

    assert challenge_certify.resampled_by(load_challenge(path)[0]) == "split"


# The same safe budget on every seed, for a clear mechanism.

def clear_safe_budgets(seeds: range, directory: Path) -> set[int]:
    """A mechanism that overstates the t-th submission by 0.001·t, against k random guesses on n = 4000 random
    labels: at 3 and 10 submissions Δ lies well inside τ = 0.1·U ≈ 0.05 (P(Δ < −τ) below 1 %), at 300 far beyond
    it. The safe budgets its certificates give on ``seeds``."""
    return {certify.certify(f"{KNOWN_DELTA}:Slope", n=4000, budgets=[3, 10, 300], attacks=[f"{CRASHING}:Guesses"],
                            replications=150, seed=seed, run_dir=directory / f"seed-{seed}", **CHEAP)["safe_budget"]
            for seed in seeds}


@pytest.mark.slow
def test_a_clear_mechanisms_safe_budget_is_the_same_on_several_seeds(tmp_path):
    assert clear_safe_budgets(range(5), tmp_path) == {10}


@pytest.mark.slow
def test_a_clear_mechanisms_safe_budget_is_the_same_on_20_seeds(tmp_path):
    assert clear_safe_budgets(range(20), tmp_path) == {10}


# Safety and utility in one headline.

UTILITY = {"participant": "improving(days=30)", "rank_correlation_full_disclosure": {"median": 0.95, "lo": 0.9, "hi": 0.97}}


@pytest.mark.parametrize("mine, full, releases_nothing", [
    ({"median": 0.0, "lo": 0.0, "hi": 0.1}, None, True),
    ({"median": 0.4, "lo": 0.2, "hi": 0.6}, None, False),
    ({"median": 0.0, "lo": 0.0, "hi": 0.1}, {"median": 0.2, "lo": 0.0, "hi": 0.4}, False),
])
def test_safe_only_because_it_releases_nothing_is_a_verdict_of_its_own(mine, full, releases_nothing):
    """Useless: the honest participant's interval under the mechanism lies wholly below the useful level 0.5
    while full disclosure's reaches it; where even full disclosure does not rank its progress, nothing is
    measured and the verdict stays safe."""
    entry = {**UTILITY, "rank_correlation": mine, **({"rank_correlation_full_disclosure": full} if full else {})}
    utility = certify.honest_utility([entry])
    assert utility["releases_nothing"] is releases_nothing
    assert certify.verdict(30, utility) == (certify.USELESS if releases_nothing else certify.SAFE)
    assert certify.verdict(0, utility) == certify.NOT_SAFE


def test_a_mechanism_that_releases_nothing_new_is_safe_only_because_it_releases_nothing(tmp_path):
    """A leaderboard frozen at the first submission's score passes the battery and tells the honest participant
    nothing (Spearman 0); full disclosure, on the same duels, is safe and useful."""
    options = dict(n=2000, budgets=[1], attacks=[f"{KNOWN_DELTA}:Guess"], default_battery=False, replications=100,
                   seed=1, scorer="zero-one", honest=["improving(days=10)"], honest_replications=8)
    frozen = certify.certify(f"{KNOWN_DELTA}:Frozen", run_dir=tmp_path / "frozen", **options)
    assert frozen["safe_budget"] == 1 and frozen["verdict"] == certify.USELESS
    assert certificate_text.headline(frozen).startswith("Safe at 1 submissions only because it releases nothing")
    full = certify.certify("full-disclosure", run_dir=tmp_path / "full", **options)
    assert full["verdict"] == certify.SAFE and certificate_text.headline(full).startswith("Safe at 1 submissions")
    assert "honest participants keep Spearman" in certificate_text.headline(full)


def test_the_summary_fits_120_columns_and_every_budget_has_a_place_for_another_statement(tmp_path):
    certificate = certify.certify(f"{KNOWN_DELTA}:Slope", n=2000, budgets=[3, 300], attacks=[f"{CRASHING}:Guesses"],
                                  replications=100, seed=0, run_dir=tmp_path / "battery", **CHEAP)
    assert [entry["battery"] for entry in certificate["budget_verdicts"]] == ["safe", FAILS]
    proven = copy.deepcopy(certificate)
    proven["budget_verdicts"][0]["statements"].append({"kind": "proven", "text": "proven safe: " + "x" * 200})
    for shown in (certificate, proven):
        text = certificate_text.summary(shown)
        assert max(map(len, text.splitlines())) <= 120 and certificate_text.headline(shown)[:60] in text.replace("\n  ", " ")
    assert "proven safe" in certificate_text.markdown(proven) and "proven safe" in certificate_text.summary(proven)
    json.dumps(certificate)
