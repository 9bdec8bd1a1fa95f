"""Every built-in plugin passes ladderlab.testing's conformance checks, and the checks catch what they claim to."""

from typing import ClassVar

import numpy as np
import pytest
from ladderlab.mechanisms.kaggle import Kaggle

from ladderlab.registry import ATTACKS, MECHANISMS
from ladderlab.testing import (
    ConformanceError,
    check_attack,
    check_mechanism,
    parametrize_checks,
)
from tests.helpers import FAST_PARAMS

FAST_ATTACK_PARAMS = {"boosting": {"k": 30}, "step-forward": {"iterations": 2}, "hill-climbing": {"k": 30},
                      "multiclass-boosting": {"k": 30}}
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
        "picklable": "the global draws make its copy diverge",
        "bad_input_changes_nothing": "the global draws make later releases differ",
    }


@pytest.mark.parametrize(("mechanism", "message"), [
    (GlobalRandomKaggle(), "same seed gave different releases"),
    (WorseningKaggle(), "declares monotone releases, but a release got worse"),
])
def test_checks_catch_broken_mechanisms(mechanism, message):
    with pytest.raises(ConformanceError, match=message):
        check_mechanism(mechanism)


def test_declared_failures_are_skipped_by_check_mechanism():
    check_mechanism(KnownFlawKaggle())


@parametrize_checks(KnownFlawKaggle())
def test_declared_failures_become_strict_expected_failures(plugin, check):
    check(plugin)


def test_an_attack_that_peeks_at_labels_is_caught():
    from ladderlab.attacks.freedman import Freedman

    class Peeking(Freedman):
        id = "peeking"

        def run(self, board, data, rng):
            self.stolen_ = board._leaderboard.mechanism.labels_
            return super().run(board, data, rng)

    with pytest.raises(ConformanceError, match="holdout labels"):
        check_attack(Peeking())
