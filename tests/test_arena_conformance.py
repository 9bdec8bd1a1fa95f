"""Every built-in arena policy and attack passes the arena's conformance checks, and a plugin that breaks a
rule fails the check of that rule."""

from __future__ import annotations

import numpy as np
import pytest

from ladderlab.arena.attacks.best_of_n_variants import BestOfNVariants
from ladderlab.arena.policies.plain_board import PlainBoard
from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_POLICIES
from ladderlab.arena.testing import (
    check_arena_attack,
    check_attack_never_holds_the_truth,
    check_policy_hooks_answer_in_kind,
    check_same_seed_same_season,
    parametrize_arena_checks,
)
from ladderlab.testing import ConformanceError, check_parameters_declared

BUILT_INS = [*(ARENA_POLICIES.make(name) for name in ARENA_POLICIES.ids()),
             *(ARENA_ATTACKS.make(name) for name in ARENA_ATTACKS.ids())]


@parametrize_arena_checks(*BUILT_INS)
def test_built_in_arena_plugins_conform(plugin, check):
    check(plugin)


class Peeking(BestOfNVariants):
    """Keeps what it can reach of the season: the pool's true strengths."""

    id = "peeking"

    def play(self, client, rng):
        self.seen = client.test_variants.__closure__[0].cell_contents.pool.strength.copy() \
            if getattr(client.test_variants, "__closure__", None) else client.test_variants.__self__.pool.strength.copy()
        super().play(client, rng)


class Undeclared(PlainBoard):
    """A parameter without its declaration."""

    id = "undeclared"

    def __init__(self, retraction: bool = True, patience: int = 3):
        self.retraction = retraction
        self.patience = patience


class Moody(PlainBoard):
    """Draws from numpy's global generator: another season, another board."""

    id = "moody"

    def accepts(self, rating, flagship):
        return bool(np.random.random() < 0.5)

    def on_test(self, rating, flagship):
        return bool(np.random.random() < 0.5), rating


class Sloppy(PlainBoard):
    """Answers a count where a flag is due."""

    id = "sloppy"

    def counts_private_votes(self):
        return 1


@pytest.mark.parametrize(("plugin", "check", "message"), [
    (Peeking(n_variants=2), check_attack_never_holds_the_truth, "holds the pool's true strengths"),
    (Undeclared(), check_parameters_declared, "undeclared: patience"),
    (Moody(), check_same_seed_same_season, "same seed, same season"),
    (Sloppy(), check_policy_hooks_answer_in_kind, "counts_private_votes() is not a bool"),
])
def test_a_plugin_that_breaks_a_rule_fails_its_check(plugin, check, message):
    with pytest.raises(ConformanceError, match=message.replace("(", "\\(").replace(")", "\\)")):
        check(plugin)


def test_check_arena_attack_reports_what_passed(capsys):
    report = check_arena_attack(ARENA_ATTACKS.make("best-of-n-variants"))
    assert "never_holds_the_truth" in report.passed and "passed 6 conformance checks" in capsys.readouterr().out
