"""Step-forward as the papers and R's changepoint see it: no changepoint in a constant trace,
an oracle that counts only visible jumps, and Blum & Hardt's keep-first rule for boosting."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.board import Board, Leaderboard
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import play
from ladderlab.seeding import stream


@pytest.mark.parametrize("rules", ["textbook", "r"])
@pytest.mark.parametrize("value", [208 / 209, 0.1, 1 / 3, 1234.5678, -2.0, 0.0])
def test_a_constant_trace_has_no_changepoint_in_penalty_mode(rules, value):
    attack = ATTACKS.make("step-forward", jump="binseg", changepoints="penalty", rules=rules)
    assert attack._last_jump(np.full(300, value), np.inf, None, 0) is None


@pytest.mark.parametrize("rules", ["textbook", "r"])
def test_a_trace_constant_up_to_round_off_has_no_changepoint(rules):
    """The same score computed by two summation orders differs in the last bits: no change."""
    trace = np.full(300, 208 / 209)
    trace[150:] = np.nextafter(trace[150:], 1.0)
    attack = ATTACKS.make("step-forward", jump="binseg", changepoints="penalty", rules=rules)
    assert attack._last_jump(trace, np.inf, None, 0) is None


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rules=st.sampled_from(["textbook", "r"]))
def test_penalty_mode_finds_the_last_step_of_a_noiseless_staircase_at_kaggle_precision(seed, rules):
    """Released scores that step down by 1e-5 (Kaggle's rounding) at random places at least 3
    apart (R's rules cannot isolate a single point): every step is a real change, far above
    round-off, and the last one is found exactly."""
    rng = np.random.default_rng(seed)
    steps = 3 * np.sort(rng.choice(np.arange(1, 99), 3, replace=False))
    trace = 0.99521 - 1e-5 * (np.arange(300)[:, None] >= steps).sum(axis=1)
    attack = ATTACKS.make("step-forward", jump="binseg", changepoints="penalty", rules=rules)
    assert attack._last_jump(trace, np.inf, None, 0) == steps[-1]


def test_the_oracle_counts_acceptances_whose_release_differs_from_the_previous_one():
    """The t-test Ladder at α = 0.5 accepts new bests whose rounded release equals the last
    one; those are no jumps a changepoint method could see."""
    split = TASKS.make("gaussian-regression", preset="ad-challenge").split(stream(0, "task", 0))
    mechanism = MECHANISMS.make("ladder-t", alpha=0.5)
    attack = ATTACKS.make("step-forward", iterations=2, jump="binseg", changepoints="oracle", rules="r")
    play(split, mechanism, attack, np.random.default_rng(1), np.random.default_rng(2), oracle=True)
    released = np.asarray(mechanism.released_)
    visible = [a for a in mechanism.acceptances_ if a > 0 and released[a] != released[a - 1]]
    board = Board(Leaderboard(mechanism), oracle=True)
    assert board.oracle_jumps(1) == len(visible) == int(np.sum(np.diff(released) != 0))
    assert len(visible) < len([a for a in mechanism.acceptances_ if a >= 1])  # some acceptances are invisible


def test_keep_first_below_half_drops_a_first_vector_that_is_not_below_one_half():
    """Ladder.jl's Fig. 3 code keeps the first vector only if its released loss is below ½;
    the default keeps it always. With the same coins, the two final vectors are identical
    exactly when the first vector's release is below ½."""
    task = TASKS.make("random-labels", n_public=400, n_holdout=800)
    outcomes = set()
    for replication in range(30):
        split = task.split(stream(0, "task", replication))
        finals = {}
        for keep_first in ("always", "below-half"):
            attack = ATTACKS.make("boosting", k=50, variant="ladder", keep_first=keep_first)
            finals[keep_first] = play(split, MECHANISMS.make("ladder-free"), attack, np.random.default_rng(replication),
                                      np.random.default_rng(replication))
        first_below_half = finals["always"].released[0] < 0.5
        same = finals["always"].final_public == finals["below-half"].final_public
        assert same or not first_below_half
        outcomes.add((first_below_half, same))
    assert (False, False) in outcomes  # the rule made a difference at least once


def test_keep_first_is_a_declared_parameter():
    with pytest.raises(ValueError, match="keep_first"):
        ATTACKS.make("boosting", keep_first="never").validate_params()


def test_the_new_keep_first_parameter_leaves_existing_boosting_streams_unchanged():
    """A parameter added to a plugin stays out of its seeding identity at its default, so every
    earlier boosting result is reproduced bit for bit; a non-default value is part of it."""
    from ladderlab.runs.duel import spec

    assert spec(ATTACKS.make("boosting", k=400)) == ("boosting", {"k": 400, "variant": "kaggle", "batch": 1000})
    assert spec(ATTACKS.make("boosting", keep_first="always")) == spec(ATTACKS.make("boosting"))
    assert spec(ATTACKS.make("boosting", keep_first="below-half"))[1]["keep_first"] == "below-half"


def _ladder_jl_boosted_vector(U: np.ndarray, released: np.ndarray) -> np.ndarray:
    """Ladder.jl's ``boostingattack`` (examples/attacks.jl) against its FreeLadder, from the releases
    ``ls``: keep the first vector if ``ls[1] < 0.5``, then every i with ``ls[i] < ls[i-1]``; the
    coordinate-wise vote ``U * bl .>= countnz(bl)/2`` (a tie gives 1)."""
    kept = np.concatenate([[released[0] < 0.5], released[1:] < released[:-1]])
    return (U[kept].sum(axis=0) >= kept.sum() / 2).astype(float)


def test_the_fig3_scenario_boosts_the_ladder_as_the_authors_code_does():
    """Every ladder-free cell of ``blum-hardt-fig3`` outputs the vector Ladder.jl's Fig. 3 code builds from
    the same random vectors and releases (the first vector kept only below ½: keeping it always
    adds a vector that may be worse than chance to the vote, and the boosted public loss sits above
    the authors' curve)."""
    from ladderlab.runs.scenario import cells, load

    ladder_cells = [cell for cell in cells(load("blum-hardt-fig3")) if cell.mechanism[0] == "ladder-free"]
    assert ladder_cells
    cell = min(ladder_cells, key=lambda cell: cell.attack[1]["k"])
    task = TASKS.make(cell.task[0], **cell.task[1])
    differs = False
    for replication in range(6):
        split = task.split(stream(0, "task", replication))
        attack = ATTACKS.make(cell.attack[0], **cell.attack[1])
        mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
        result = play(split, mechanism, attack, np.random.default_rng(replication), np.random.default_rng(replication))
        U = np.random.default_rng(replication).integers(0, 2, (attack.k, split.y_holdout.size))
        reference = _ladder_jl_boosted_vector(U, np.asarray(mechanism.released_[: attack.k]))
        assert result.final_public == np.mean(reference[split.public_rows] != split.y_public)
        differs |= bool(mechanism.released_[0] >= 0.5)
    assert differs  # some replication's first vector was not below ½, where the two rules part
