"""The forced-updates attack (after Hardt 2017's separating attack): it declines tasks without a side model,
and it separates the Ladder from the sparse-vector Ladder."""

from __future__ import annotations

import numpy as np
import pytest

from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import Incompatible, duel


def test_without_features_there_is_no_side_model_to_steer_with():
    with pytest.raises(Incompatible, match="side model"):
        duel(TASKS.make("random-labels", n_public=100, n_holdout=300), MECHANISMS.make("ladder"),
             ATTACKS.make("forced-updates", k=10))


def test_every_update_is_harvested_and_the_board_is_steered_down():
    task = TASKS.make("random-labels", n_public=1000, n_holdout=3000, side_information=1.5, n_train=600)
    outcome = duel(task, MECHANISMS.make("ladder", eta=0.01), ATTACKS.make("forced-updates", k=100), seed=3)
    released = outcome.released[:-1]
    assert np.unique(released).size > 10 and released[-1] < released[0] - 0.1


@pytest.mark.slow
def test_forced_updates_overfit_the_ladder_and_not_its_noisy_version():
    """Hardt 2017's separation, as the reconstruction plays it: against the Ladder the attack's
    final prediction looks better on the public rows than it is, against the sparse-vector Ladder
    it does not (mean optimism over replications, each side beyond four standard errors)."""
    task = TASKS.make("random-labels", n_public=2000, n_holdout=6000, side_information=1.0, n_train=1000)
    attack = ATTACKS.make("forced-updates", k=400)
    optimism = {name: np.array([duel(task, MECHANISMS.make(name, **params), attack, seed=1, replication=r).optimism
                                for r in range(6)])
                for name, params in (("ladder", {"eta": 0.01}), ("sparse-vector-ladder", {}))}
    ladder, noisy = optimism["ladder"], optimism["sparse-vector-ladder"]
    assert ladder.mean() > 4 * ladder.std(ddof=1) / np.sqrt(ladder.size)
    assert ladder.mean() - noisy.mean() > 4 * np.sqrt(ladder.var(ddof=1) / 6 + noisy.var(ddof=1) / 6)
