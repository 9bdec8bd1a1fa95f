"""The organiser's holdout at another public size (``public-size``): the planner's task."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ladderlab.certification.challenge_task import load_challenge
from ladderlab.certification.public_size import PublicSize, resplit
from ladderlab.registry import TASKS
from ladderlab.runs.duel import spec
from ladderlab.seeding import stream

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "breast-cancer" / "challenge.toml"


def test_the_public_rows_are_n_of_the_holdout_and_the_others_are_final():
    inner = TASKS.make("random-labels", n_public=30, n_holdout=100)
    split = PublicSize("random-labels", {"n_public": 30, "n_holdout": 100}, n_public=55).split(stream(0, "t"))
    assert split.public_rows.size == 55 and split.final_rows.size == 45
    assert np.intersect1d(split.public_rows, split.final_rows).size == 0
    assert np.array_equal(np.union1d(split.public_rows, split.final_rows), np.arange(100))
    assert np.array_equal(split.y_holdout, inner.split(stream(0, "t")).y_holdout)


def test_every_holdout_row_is_public_as_often_as_a_uniform_draw_makes_it():
    """Over 400 draws each of 100 rows is public with probability 30/100: every row's count lies within the
    exact two-sided binomial 99.9 % range (a draw that keeps the inner split's public rows, or favours low
    rows, puts some row far outside it)."""
    task = PublicSize("random-labels", {"n_public": 10, "n_holdout": 100}, n_public=30)
    counts = np.zeros(100, dtype=int)
    for replication in range(400):
        counts[task.split(stream(1, "draw", replication)).public_rows] += 1
    low, high = stats.binom.ppf([0.0005, 0.9995], 400, 0.3)
    assert low <= counts.min() and counts.max() <= high


def test_a_challenge_keeps_its_labels_and_public_data_and_draws_its_split():
    challenge, identity = load_challenge(EXAMPLE)
    task = PublicSize("challenge", {"path": str(EXAMPLE), "sha256": identity}, n_public=120)
    first, second = (task.split(stream(0, "c", r)) for r in (0, 1))
    assert np.array_equal(first.y_holdout, challenge.split.y_holdout)
    assert first.public.X_holdout is challenge.split.public.X_holdout
    assert first.public_rows.size == 120 and not np.array_equal(first.public_rows, second.public_rows)
    assert task.task_type == "classification" and task.default_scorer == "zero-one"
    assert task.data_fingerprint() == identity


def test_its_identity_is_the_inner_task_s_identity_not_where_a_challenge_file_lies(tmp_path):
    _, identity = load_challenge(EXAMPLE)
    here = PublicSize("challenge", {"path": str(EXAMPLE), "sha256": identity}, n_public=120)
    assert spec(here) == ("public-size", {"task": "challenge", "task_params": {"task_identity": identity},
                                          "n_public": 120})
    assert spec(here) != spec(PublicSize("challenge", {"path": str(EXAMPLE), "sha256": identity}, n_public=121))


def test_disclosed_public_rows_are_the_drawn_ones():
    task = PublicSize("random-labels-log-loss", {"n_public": 20, "n_holdout": 80, "disclose_public_rows": True}, 40)
    split = task.split(stream(2, "d"))
    assert np.array_equal(split.public.public_rows, split.public_rows)


@pytest.mark.parametrize(("n_public", "message"), [(100, "at most 100 rows in all"), (1, "n_public")])
def test_a_public_set_that_leaves_no_final_row_is_refused(n_public, message):
    with pytest.raises(ValueError, match=message):
        PublicSize("random-labels", {"n_public": 10, "n_holdout": 100}, n_public=n_public).validate_params()


def test_resplit_refuses_a_public_set_larger_than_the_holdout_less_one():
    split = TASKS.make("random-labels", n_public=10, n_holdout=20).split(stream(0, "r"))
    with pytest.raises(ValueError, match="between 2 and 19"):
        resplit(split, 20, stream(0, "x"))


def test_a_public_size_task_does_not_split_itself():
    with pytest.raises(ValueError, match="splits another task"):
        PublicSize("public-size", {}, 10).validate_params()
