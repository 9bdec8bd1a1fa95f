"""The fewest votes whose removal changes the top model: exactly the brute-force minimum on small battle
sets, always between the certified lower bound and the upper bound it attains, with votes that do it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ladderlab.arena.battles import from_frame, read_battles, to_frame
from ladderlab.arena.bradley_terry import components, fit_exact, unidentified
from ladderlab.arena.family import PairwiseArena
from ladderlab.arena.robustness import fewest_removals
from tests.test_arena_rating import DATA


def _brute_force(battles, most: int) -> int | None:
    """The fewest battles, one by one, whose removal rates a model strictly above the winner (ratings that
    stay finite and comparable), refitting every set of up to ``most`` battles."""
    cells = battles.cells()
    codes = (battles.a * len(battles.models) + battles.b) * 3 + battles.outcome
    cell_of = np.searchsorted((cells.a * len(battles.models) + cells.b) * 3 + cells.outcome, codes)
    winner = int(np.argmax(fit_exact(cells.pairs)))
    for k in range(1, most + 1):
        counts = []
        for dropped in itertools.combinations(range(len(battles)), k):
            left = cells.count - np.bincount(cell_of[list(dropped)], minlength=cells.count.size)
            pairs = cells.pair_counts(left)
            if not unidentified(pairs) and np.unique(components(pairs)).size == 1:
                counts.append(left)
        if counts:
            refitted = fit_exact(cells.pair_counts(np.array(counts)))
            if (np.delete(refitted, winner, axis=1).max(axis=1) > refitted[:, winner] + 1e-12).any():
                return k
    return None


def _small(seed: int, models: int, battles: int):
    family = PairwiseArena(models=models, providers=1, battles=battles, spread=60.0)
    rng = np.random.default_rng(seed)
    return family.battles_of(rng, family.pool(rng))[0]


@pytest.mark.parametrize("seed", [1, 2, 3, 6])
def test_on_small_battle_sets_the_answer_is_the_brute_force_minimum(seed):
    battles = _small(seed, 3, 11)
    found = fewest_removals(battles)
    assert found.exact and found.upper == _brute_force(battles, 4)


def test_the_bounds_hold_the_minimum_where_brute_force_can_find_it():
    checked = 0
    for seed in range(12):
        battles = _small(seed, 4, 16)
        try:
            found = fewest_removals(battles, exhaustive_limit=0)
        except ValueError:
            continue  # a model unbeaten: no finite top model
        truth = _brute_force(battles, 3)
        if truth is None:
            assert found.lower > 3 or found.upper is None or found.upper > 3
            continue
        checked += 1
        assert found.lower <= truth <= found.upper
    assert checked >= 4


def test_the_votes_found_do_change_the_top_model_and_no_fewer_can_by_the_bound():
    battles = read_battles(DATA / "fastchat-battles.csv")
    found = fewest_removals(battles)
    frame = to_frame(battles)
    for row in found.removed:
        rows = frame.index[(frame.model_a == row["model_a"]) & (frame.model_b == row["model_b"]) & (frame.winner == row["winner"])]
        frame = frame.drop(index=rows[: row["count"]])
    kept = from_frame(frame)
    refitted = fit_exact(kept.cells().pairs)
    assert kept.models[int(np.argmax(refitted))] == found.challenger != found.winner
    assert sum(row["count"] for row in found.removed) == found.upper and 1 <= found.lower <= found.upper


def test_a_board_that_is_not_one_comparison_graph_has_no_top_model_to_move():
    frame = to_frame(_small(1, 3, 30))
    apart = frame.assign(model_a="x-" + frame.model_a, model_b="x-" + frame.model_b)
    import pandas as pd

    with pytest.raises(ValueError, match="never met"):
        fewest_removals(from_frame(pd.concat([frame, apart], ignore_index=True), "two.csv"))
