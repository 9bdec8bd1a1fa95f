"""Conformance checks for arena policies and attacks, as :mod:`ladderlab.testing` has for mechanisms and attacks.

``check_arena_policy(policy)`` and ``check_arena_attack(attack)`` run every check on a small arena, raise
the first failure (:class:`ladderlab.testing.ConformanceError`), and return what passed; a plugin known
to fail one says so in ``expected_check_failures``. In a test suite, one test per check::

    from ladderlab.arena.testing import parametrize_arena_checks

    @parametrize_arena_checks(MyPolicy(), MyAttack())
    def test_conforms(plugin, check):
        check(plugin)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ladderlab.arena.attack import ArenaAttack
from ladderlab.arena.family import PairwiseArena
from ladderlab.arena.policy import ArenaPolicy
from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_POLICIES
from ladderlab.arena.season import Season, _Client
from ladderlab.testing import (
    GLOBAL_SEEDS,
    ConformanceError,
    ConformanceReport,
    check_get_params_round_trip,
    check_parameters_declared,
    reachable_arrays,
    run_checks,
)

Check = Callable[[Any], None]
FAMILY = PairwiseArena(models=12, providers=3, battles=3000)
"""A small arena: each check plays seasons of it in a fraction of a second."""


def _season(policy: ArenaPolicy, attack: ArenaAttack, replication: int = 0) -> Season:
    return Season(FAMILY, policy, attack, 5, replication, -60.0)


def _default_attack() -> ArenaAttack:
    return ARENA_ATTACKS.make("best-of-n-variants", n_variants=4, battles_per_variant=300)


def _scaled(attack: ArenaAttack) -> ArenaAttack:
    """The attack at its smallest default budget (a check plays it quickly)."""
    return type(attack)(**{**attack.get_params(), attack.budget: min(type(attack).default_budgets)})


def check_policy_hooks_answer_in_kind(policy: ArenaPolicy) -> None:
    """Each hook answers what the season reads: a count or None, a (bool, rating or None) pair, a bool, a
    whole number ≥ 0, a bool for ``counts_private_votes`` and a boolean mask of the votes' shape."""
    allowed = policy.variants_allowed()
    publish, shown = policy.on_test(1020.0, 1000.0)
    outcome = np.array([0, 1, 2, 2])
    kept = np.asarray(policy.keeps_votes(np.array([0.9, 0.5, 0.1, 0.6]), outcome))
    problems = [
        (allowed is not None and (isinstance(allowed, bool) or not isinstance(allowed, int) or allowed < 0),
         f"variants_allowed() gave {allowed!r}"),
        (not isinstance(publish, bool) or not (shown is None or isinstance(shown, float)), f"on_test gave {(publish, shown)!r}"),
        (not isinstance(policy.accepts(1020.0, 1000.0), bool), "accepts() is not a bool"),
        (not isinstance(policy.votes_before_listing(), int) or policy.votes_before_listing() < 0,
         f"votes_before_listing() gave {policy.votes_before_listing()!r}"),
        (not isinstance(policy.counts_private_votes(), bool), "counts_private_votes() is not a bool"),
        (kept.dtype != bool or kept.shape != outcome.shape, f"keeps_votes gave {kept!r}"),
        (not isinstance(policy.retraction, bool), f"retraction is {policy.retraction!r}"),
    ]
    for failed, what in problems:
        if failed:
            raise ConformanceError(f"{policy.id}: {what}")


def check_same_seed_same_season(plugin: ArenaPolicy | ArenaAttack) -> None:
    """Two seasons with equal seeds give equal results, bit for bit, whatever numpy's and Python's global
    generators hold (each season starts from another of :data:`ladderlab.testing.GLOBAL_SEEDS`, and the
    global states are restored afterwards)."""
    policy, attack = _pair(plugin)
    saved_numpy, saved_python = np.random.get_state(), random.getstate()
    try:
        records = []
        for seed in GLOBAL_SEEDS:
            np.random.seed(seed)
            random.seed(seed)
            records.append(_season(type(policy)(**policy.get_params()),
                                   type(attack)(**attack.get_params())).play().record())
    finally:
        np.random.set_state(saved_numpy)
        random.setstate(saved_python)
    first, second = records
    if first != second:
        raise ConformanceError(f"{plugin.id}: rule 'same seed, same season' broken: {first} vs {second}")


def check_attack_declares_its_budget(attack: ArenaAttack) -> None:
    """The budget names an ``__init__`` parameter, the default budgets are whole numbers ≥ 1, and each point of
    the strength grid sets the budget and is a valid setting."""
    cls = type(attack)
    if cls.budget not in cls.parameter_defaults():
        raise ConformanceError(f"{attack.id}: budget {cls.budget!r} is not an __init__ parameter")
    if not cls.default_budgets or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in cls.default_budgets):
        raise ConformanceError(f"{attack.id}: default_budgets {cls.default_budgets!r} are not whole numbers ≥ 1")
    for budget in cls.default_budgets:
        for point in cls.strength_grid(budget):
            if point.get(cls.budget) != budget:
                raise ConformanceError(f"{attack.id}: strength_grid({budget}) gives {point} without the budget")
            cls(**{**attack.get_params(), **point}).validate_params()


def check_attack_never_holds_the_truth(attack: ArenaAttack) -> None:
    """After a season, no array reachable from the attack holds the models' true strengths."""
    season = _season(ARENA_POLICIES.make("plain-board"), _scaled(attack))
    season.attack.play(_Client(season), np.random.default_rng(0))
    truth = season.pool.strength
    for array in reachable_arrays(season.attack, private=True):
        if array.size >= truth.size and np.isin(truth, array).mean() > 0.5:
            raise ConformanceError(f"{attack.id}: holds the pool's true strengths after playing")


def check_attack_respects_a_cap(attack: ArenaAttack) -> None:
    """Under a cap of one private variant the attack plays on (the season refuses more), and lists at most one."""
    result = _season(ARENA_POLICIES.make("variant-cap", max_variants=1), _scaled(attack)).play()
    if result.variants_tested > 1 or result.variants_listed > 1:
        raise ConformanceError(f"{attack.id}: tested {result.variants_tested} variants under a cap of one")


def _pair(plugin: ArenaPolicy | ArenaAttack) -> tuple[ArenaPolicy, ArenaAttack]:
    if isinstance(plugin, ArenaPolicy):
        return plugin, _default_attack()
    return ARENA_POLICIES.make("plain-board"), _scaled(plugin)


POLICY_CHECKS: dict[str, Check] = {
    "parameters_declared": check_parameters_declared,
    "get_params_round_trip": check_get_params_round_trip,
    "hooks_answer_in_kind": check_policy_hooks_answer_in_kind,
    "same_seed_same_season": check_same_seed_same_season,
}
ATTACK_CHECKS: dict[str, Check] = {
    "parameters_declared": check_parameters_declared,
    "get_params_round_trip": check_get_params_round_trip,
    "declares_its_budget": check_attack_declares_its_budget,
    "same_seed_same_season": check_same_seed_same_season,
    "never_holds_the_truth": check_attack_never_holds_the_truth,
    "respects_a_cap": check_attack_respects_a_cap,
}


def arena_checks(plugin: ArenaPolicy | ArenaAttack) -> Iterator[tuple[str, Check]]:
    """The checks that apply to ``plugin``, as (name, check) pairs."""
    if not isinstance(plugin, (ArenaPolicy, ArenaAttack)):
        raise TypeError(f"expected an ArenaPolicy or an ArenaAttack, got {type(plugin).__name__}")
    yield from (POLICY_CHECKS if isinstance(plugin, ArenaPolicy) else ATTACK_CHECKS).items()


def _check_all(plugin: ArenaPolicy | ArenaAttack, quiet: bool) -> ConformanceReport:
    return run_checks(plugin, arena_checks(plugin), plugin.expected_check_failures.get, quiet)


def check_arena_policy(policy: ArenaPolicy, quiet: bool = False) -> ConformanceReport:
    """Run every policy check (but those the policy declares it fails); raise the first failure."""
    return _check_all(policy, quiet)


def check_arena_attack(attack: ArenaAttack, quiet: bool = False) -> ConformanceReport:
    """Run every attack check (but those the attack declares it fails); raise the first failure. As for
    holdout attacks, the checks catch honest mistakes, not hostile code."""
    return _check_all(attack, quiet)


def parametrize_arena_checks(*plugins: ArenaPolicy | ArenaAttack) -> Callable[[Callable[..., Any]], Any]:
    """A pytest decorator: one test per plugin × check (arguments ``plugin`` and ``check``)."""
    import pytest

    cases = []
    for plugin in plugins:
        for name, check in arena_checks(plugin):
            reason = plugin.expected_check_failures.get(name)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            cases.append(pytest.param(plugin, check, id=f"{plugin.id}-{name}", marks=marks))
    return pytest.mark.parametrize(("plugin", "check"), cases)
