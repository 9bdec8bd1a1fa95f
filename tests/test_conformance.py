"""Every built-in plugin passes ladderlab.testing's conformance checks, and the checks catch what they claim to."""

import re
from typing import ClassVar

import numpy as np
import pytest
from ladderlab.mechanisms.kaggle import Kaggle

from ladderlab.registry import ATTACKS, MECHANISMS
from ladderlab.attacks.freedman import Freedman
from ladderlab.testing import (
    ConformanceError,
    check_attack,
    check_attack_never_holds_labels,
    check_attack_same_seed_same_transcript,
    check_batch_equals_loop,
    check_leaves_global_rng_alone,
    check_mechanism,
    check_releases_from_scores,
    parametrize_checks,
    plugin_checks,
)
from tests.helpers import FAST_PARAMS

FAST_ATTACK_PARAMS = {"boosting": {"k": 30}, "step-forward": {"iterations": 2}, "hill-climbing": {"k": 30},
                      "multiclass-boosting": {"k": 30}, "staircase": {"k": 30},
                      "fresh-staircase": {"k": 30}}
BUILTIN_MECHANISMS = [MECHANISMS.make(i, **FAST_PARAMS.get(i, {})) for i in MECHANISMS.ids()]
BUILTIN_ATTACKS = [ATTACKS.make(i, **FAST_ATTACK_PARAMS.get(i, {})) for i in ATTACKS.ids()]


@parametrize_checks(*BUILTIN_MECHANISMS, *BUILTIN_ATTACKS)
def test_builtin_plugins_conform(plugin, check):
    check(plugin)


class GlobalRandomKaggle(Kaggle):
    """Adds noise from numpy's global random state: irreproducible."""

    id = "global-random-kaggle"

    def _release(self, P):
        return super()._release(P) + np.random.normal(0, 1e-3, P.shape[0])


class WorseningKaggle(Kaggle):
    """Claims monotone releases, but is plain Kaggle."""

    id = "worsening-kaggle"
    monotone = True


class KnownFlawKaggle(GlobalRandomKaggle):
    id = "known-flaw-kaggle"
    expected_check_failures: ClassVar[dict[str, str]] = {
        "leaves_global_rng_alone": "demonstrates declared failures",
        "same_seed_same_transcript": "demonstrates declared failures",
        "batch_equals_loop": "a batch and a loop draw different global noise",
        "picklable": "the global draws make its copy diverge",
        "bad_input_changes_nothing": "the global draws make later releases differ",
        "releases_from_scores": "the global draws make the replay from scores diverge",
        "stateless": "the global draws make a release depend on what came before",
    }


@pytest.mark.parametrize(("mechanism", "message"), [
    (GlobalRandomKaggle(), "rule 'leave the global random state alone' broken.*draw from the Generator you are given"),
    (WorseningKaggle(), "declares monotone releases, but a release got worse"),
])
def test_checks_catch_broken_mechanisms(mechanism, message):
    with pytest.raises(ConformanceError, match=message):
        check_mechanism(mechanism)


class NoisePerBatchKaggle(Kaggle):
    """Seeded, but draws one noise value per batch instead of one per submission."""

    id = "noise-per-batch-kaggle"

    def _release(self, P):
        return super()._release(P) + self.rng_.normal(0, 1e-3)


class ReseedingFreedman(Freedman):
    """Reseeds numpy's global generator and draws its tie-breaking from it."""

    id = "reseeding-freedman"

    def run(self, board, data, rng):
        np.random.seed(0)
        np.random.permutation(3)
        return super().run(board, data, rng)


def test_a_mechanism_with_one_noise_draw_per_batch_breaks_batch_equals_loop():
    check_mechanism(Kaggle())
    with pytest.raises(ConformanceError, match="rule 'submit_many equals a loop of submit' broken"):
        check_batch_equals_loop(NoisePerBatchKaggle())
    with pytest.raises(ConformanceError, match="submit_many equals a loop"):
        check_mechanism(NoisePerBatchKaggle())


class RepeatsOnceLadderBoot(MECHANISMS.get("ladder-boot")):
    """Answers the copies of a row with its first release: the averaging attack would see no noise."""

    id = "repeats-once-ladder-boot"

    def _release_repeated(self, P, repeats):
        return np.repeat(self._release(P), repeats)


def test_a_mechanism_that_answers_copies_with_one_draw_breaks_batch_equals_loop():
    with pytest.raises(ConformanceError, match=r"rule 'submit_many\(P, repeats=3\) equals submitting each row 3 times' broken"):
        check_batch_equals_loop(RepeatsOnceLadderBoot())


class ScoresOnlyLadderFree(MECHANISMS.get("ladder-free")):
    """Declares scores_only wrongly: the parameter-free Ladder's margin needs the loss vectors."""

    id = "scores-only-ladder-free"
    scores_only = True


class LabelShiftedKaggle(Kaggle):
    """Declares scores_only (as Kaggle does) but shifts its releases by the first label."""

    id = "label-shifted-kaggle"

    def _release(self, P):
        return super()._release(P) + self.labels_[0]


@pytest.mark.parametrize("mechanism", [ScoresOnlyLadderFree(), LabelShiftedKaggle()], ids=lambda m: m.id)
def test_a_mechanism_that_reads_more_than_scores_cannot_declare_scores_only(mechanism):
    with pytest.raises(ConformanceError, match="rule 'scores_only: releases from exact scores equal releases"):
        check_releases_from_scores(mechanism)


def test_a_mechanism_drawing_global_noise_is_named_by_the_global_rng_rule():
    with pytest.raises(ConformanceError, match="rule 'leave the global random state alone' broken"):
        check_leaves_global_rng_alone(GlobalRandomKaggle())


@pytest.mark.parametrize("earlier_global_seed", [0, None])
def test_an_attack_reseeding_the_global_generator_is_caught_whatever_ran_before(earlier_global_seed):
    check_attack_same_seed_same_transcript(ReseedingFreedman())  # leaves the global state at seed 0 …
    if earlier_global_seed is not None:
        np.random.seed(earlier_global_seed)
    before = np.random.get_state()[1].copy()
    with pytest.raises(ConformanceError, match="leave the global random state alone"):
        check_leaves_global_rng_alone(ReseedingFreedman())
    assert np.array_equal(np.random.get_state()[1], before), "the check restores the caller's global state"


@parametrize_checks(ReseedingFreedman())
def test_parametrized_checks_catch_global_reseeding(plugin, check, request):
    if request.node.callspec.id.endswith("leaves_global_rng_alone"):
        with pytest.raises(ConformanceError, match="leave the global random state alone"):
            check(plugin)
    else:
        check(plugin)


def test_declared_failures_are_skipped_by_check_mechanism(capsys):
    report = check_mechanism(KnownFlawKaggle())
    assert report.passed == ("parameters_declared", "get_params_round_trip", "adaptive_analyst")
    assert dict(report.skipped) == KnownFlawKaggle.expected_check_failures
    printed = capsys.readouterr().out
    assert "passed 3 conformance checks: parameters_declared, get_params_round_trip, adaptive_analyst" in printed
    assert "picklable (the global draws make its copy diverge)" in printed


def test_a_successful_check_says_what_passed(capsys):
    report = check_attack(ATTACKS.make("boosting"))
    assert report.passed == tuple(name for name, _ in plugin_checks(ATTACKS.make("boosting")))
    assert report.skipped == ()
    assert capsys.readouterr().out == f"Boosting() passed {len(report.passed)} conformance checks: {', '.join(report.passed)}\n"
    check_attack(ATTACKS.make("boosting"), quiet=True)
    assert capsys.readouterr().out == ""


@parametrize_checks(KnownFlawKaggle())
def test_declared_failures_become_strict_expected_failures(plugin, check):
    check(plugin)


def test_an_attack_that_peeks_at_labels_is_caught():
    class Peeking(Freedman):
        id = "peeking"

        def run(self, board, data, rng):
            self.stolen_ = board._leaderboard.mechanism.labels_
            return super().run(board, data, rng)

    with pytest.raises(ConformanceError, match="holdout labels"):
        check_attack_never_holds_labels(Peeking())
    with pytest.raises(ConformanceError, match=re.escape("reads the board's private attributes ['_leaderboard']")):
        check_attack(Peeking())  # the first failure names what the attack read


GRID_PLUGIN = '''
from ladderlab.attacks.boosting import Boosting


class TwiceBoosting(Boosting):
    """Lists one setting twice: k = the budget, then the same with the default variant spelt out."""

    id = "twice-boosting"

    @classmethod
    def strength_grid(cls, budget, n):
        return [cls.budget_params(budget), {**cls.budget_params(budget), "variant": "kaggle"}]


class ZeroBoosting(Boosting):
    """A grid point the attack refuses: k = 0."""

    id = "zero-boosting"

    @classmethod
    def strength_grid(cls, budget, n):
        return [{"k": 0}]


class TupleBoosting(Boosting):
    """A tuple where a list of parameter dicts is due."""

    id = "tuple-boosting"

    @classmethod
    def strength_grid(cls, budget, n):
        return ({"k": budget},)
'''


@pytest.mark.parametrize(("name", "message"), [
    ("TwiceBoosting", "attack 'twice-boosting': strength_grid(1, 20) lists one setting twice, entries 0 and 1"),
    ("ZeroBoosting", "attack 'zero-boosting': strength_grid(1, 20)[0]: zero-boosting: parameter 'k' = 0 is invalid"),
    ("TupleBoosting", "attack 'tuple-boosting': strength_grid(1, 20) must return a list of parameter dicts, got tuple"),
])
def test_check_attack_names_a_bad_strength_grid_and_certify_refuses_it_in_one_line(tmp_path, capsys, name, message):
    from ladderlab.cli.commands import main

    path = tmp_path / "grids.py"
    path.write_text(GRID_PLUGIN)
    with pytest.raises(ConformanceError, match=re.escape(message)):
        check_attack(ATTACKS.make(f"{path}:{name}"), quiet=True)
    code = main(["certify", "kaggle", "--only", "--attack", f"{path}:{name}", "--n", "20", "--budgets", "1",
                 "--replications", "1", "--run-dir", str(tmp_path / "battery")])
    error = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and error[-1].startswith("ladderlab: error: ") and message.split(": ", 1)[1] in error[-1]
    assert not any("validation error" in line for line in error)
