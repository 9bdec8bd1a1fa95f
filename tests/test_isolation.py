"""Hostile attack code: under process isolation an attack finds no route to the labels, and
honest attacks give the same results, bit for bit."""

import gc
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ladderlab import runner
from ladderlab.attack import Attack
from ladderlab.board import BudgetExceeded
from ladderlab.duel import duel
from ladderlab.isolation import AttackProcessError, AttackRef
from ladderlab.params import InstanceOf
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.testing import ConformanceError, check_attack, check_attack_keeps_to_the_public_board
from tests.helpers import SMALL

RED_TEAM = f"{Path(__file__).parent / 'data' / 'redteam_attack.py'}:RedTeam"
OBJECT_ROUTES = {"private_attributes", "gc_referrers", "gc_objects", "frames"}
"""The routes that reach the labels in-process; ``sys_modules`` (module globals) does not,
and under isolation none does."""


def random_labels():
    return TASKS.make("random-labels", n_public=200, n_holdout=600)


def red_team_duel(isolation, secret_seed=None, seed=2):
    return duel(random_labels(), MECHANISMS.make("kaggle"), ATTACKS.make(RED_TEAM), seed=seed, replication=1,
                isolation=isolation, secret_seed=secret_seed)


def test_in_process_the_red_team_reaches_the_labels_by_every_route():
    """Documented: without isolation, hostile code in the same process finds the labels."""
    result = red_team_duel("none")
    assert OBJECT_ROUTES <= set(result.marks)
    assert result.final_final == 0.0 and result.final_public == 0.0


def test_under_isolation_the_red_team_finds_nothing():
    result = red_team_duel("process", secret_seed=12345)
    assert result.marks == {}
    assert result.final_public > 0.4 and result.final_final > 0.4  # zeros against random labels


def test_a_public_seed_regenerates_simulated_labels_and_a_secret_seed_stops_that():
    """What isolation does not cover: simulated data derived from the scenario's public seed."""
    public = red_team_duel("process", seed=2)
    assert set(public.marks) == {"regenerated_from_public_seed"} and public.final_final == 0.0
    secret = red_team_duel("process", secret_seed=2**100 + 7, seed=2)
    assert secret.marks == {}


@pytest.mark.parametrize(
    "task, attack",
    [
        (("diabetes", {}), ("honest", {})),
        (("random-labels", {"n_public": 200, "n_holdout": 600}), ("boosting", {"k": 60})),
        (("gaussian-regression", {"n_samples": 240, "n_features": 60}), ("freedman", {})),
        (("gaussian-regression", {"n_samples": 240, "n_features": 60}), ("step-forward", {"iterations": 2})),
        (("diabetes", {}), ("resubmission-probe", {"repeats": 30})),
        (("random-labels", {"n_public": 200, "n_holdout": 600}), ("hill-climbing", {"k": 60, "repeats": 4})),
    ],
)
def test_isolated_attacks_give_the_same_results_bit_for_bit(task, attack):
    results = {}
    for isolation in ("none", "process"):
        outcome = duel(TASKS.make(task[0], **task[1]), MECHANISMS.make("ladder-boot", b=10),
                       ATTACKS.make(attack[0], **attack[1]), seed=5, replication=2, budget=80, isolation=isolation)
        results[isolation] = outcome
    a, b = results["none"], results["process"]
    for name in ("released", "public", "final"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.delta, a.leaderboard_error, a.submissions, a.marks) == (b.delta, b.leaderboard_error, b.submissions, b.marks)


def test_an_isolated_run_equals_the_in_process_run(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }, { id = "ladder" }'))
    plain = runner.run(path, tmp_path / "plain")
    isolated = runner.run(path, tmp_path / "isolated", isolation="process", jobs=2)
    pd.testing.assert_frame_equal(plain.drop(columns="wall_time"), isolated.drop(columns="wall_time"))


class OverBudget(ATTACKS.get("boosting")):
    id = "over-budget"

    def run(self, board, data, rng):
        board.submit_many(np.zeros((3, board.holdout_size)))
        return np.zeros(board.holdout_size)


def test_errors_cross_the_pipe_as_themselves():
    with pytest.raises(BudgetExceeded, match="exceed the budget of 2"):
        duel(random_labels(), MECHANISMS.make("kaggle"), OverBudget(), budget=2, isolation="process")


class Payload:
    """Unpickled, it creates the file ``target``."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


class Smuggler(Attack):
    """Sends the organiser a pickle that would create a file if it were ever unpickled."""

    id = "smuggler"
    reference = "ladderlab isolation tests"
    _parameter_constraints = {"target": [InstanceOf(str)]}

    def __init__(self, target: str = ""):
        self.target = target

    def run(self, board, data, rng):
        board._connection.send_bytes(pickle.dumps(Payload(self.target)))
        return np.zeros(board.holdout_size)


def test_the_organiser_never_unpickles_what_the_attack_sends(tmp_path):
    with pytest.raises(AttackProcessError, match="broke the protocol"):
        duel(random_labels(), MECHANISMS.make("kaggle"), Smuggler(str(tmp_path / "pwned")), isolation="process")
    assert not (tmp_path / "pwned").exists()


def test_check_attack_flags_reading_the_boards_private_attributes():
    red_team = ATTACKS.make(RED_TEAM)
    with pytest.raises(ConformanceError, match=r"private attributes \['_leaderboard'\]"):
        check_attack_keeps_to_the_public_board(red_team)
    with pytest.raises(ConformanceError):
        check_attack(red_team)
    check_attack_keeps_to_the_public_board(ATTACKS.make("boosting", k=20))


def test_an_attack_reference_names_its_stream_like_the_instance():
    attack = ATTACKS.make(RED_TEAM, guess_seeds=2)
    ref = AttackRef.of(attack)
    assert ref.identity == ("red-team", {"guess_seeds": 2})
    assert type(ref.make()).__name__ == "RedTeam"
    gc.collect()
