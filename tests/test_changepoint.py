"""Binary segmentation: planted changes, ruptures' textbook rules, R changepoint's BinSeg rules."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import ruptures
from hypothesis import given
from hypothesis import strategies as st

from ladderlab.engines.changepoint import binary_segmentation

seeds = st.integers(0, 2**32 - 1)


def planted(rng, n, n_changes, jump=5.0, noise=1.0):
    changes = np.sort(rng.choice(np.arange(5, n - 5), n_changes, replace=False))
    while n_changes > 1 and np.min(np.diff(changes)) < 15:
        changes = np.sort(rng.choice(np.arange(5, n - 5), n_changes, replace=False))
    levels = -jump * np.arange(n_changes + 1)  # a staircase, like a Ladder's released scores
    mean = np.repeat(levels, np.diff(np.concatenate([[0], changes, [n]])))
    return changes.tolist(), mean + noise * rng.standard_normal(n)


@pytest.mark.parametrize("n_changes", [1, 2, 3, 4])
def test_recovers_planted_changepoints(n_changes):
    """A staircase with steps of 8 sd 15 or more apart: each step found within one index
    (closer steps can mislead binary segmentation's greedy first split). On fixed seeds:
    greedy splitting, like ruptures' Binseg, can be two indices off when the points just
    before a step are low (seed 12142021 with four steps), however large the steps."""
    for seed in range(100):
        changes, x = planted(np.random.default_rng(seed), 120, n_changes, jump=8.0)
        for rules in ("textbook", "r"):
            found = binary_segmentation(x, n_changepoints=n_changes, rules=rules)
            assert len(found) == n_changes
            assert all(abs(f - c) <= 1 for f, c in zip(found, changes)), (seed, found, changes)


@given(seed=seeds, n=st.integers(10, 150), n_changes=st.integers(1, 5), jump=st.floats(0.0, 3.0))
def test_textbook_mode_matches_ruptures_with_a_fixed_number_of_changepoints(seed, n, n_changes, jump):
    _, x = planted(np.random.default_rng(seed), max(n, 20), 1, jump=jump)
    expected = ruptures.Binseg(model="l2", min_size=1, jump=1).fit(x).predict(n_bkps=n_changes)[:-1]
    assert binary_segmentation(x, n_changepoints=n_changes) == expected


@given(seed=seeds, penalty=st.floats(0.5, 50.0))
def test_textbook_mode_matches_ruptures_with_a_penalty(seed, penalty):
    _, x = planted(np.random.default_rng(seed), 80, 3, jump=2.0)
    expected = ruptures.Binseg(model="l2", min_size=1, jump=1).fit(x).predict(pen=penalty)[:-1]
    assert binary_segmentation(x, penalty=penalty) == expected


def test_r_rules_never_split_at_1_or_the_last_two_positions():
    """A single outlier at either end: textbook splits it off, R's loop (j = 2 … n−3) cannot."""
    x = np.zeros(30)
    x[0] = 10.0
    assert binary_segmentation(x, n_changepoints=1) == [1]
    assert binary_segmentation(x, n_changepoints=1, rules="r") == [2]
    x = np.zeros(30)
    x[-1] = 10.0
    assert binary_segmentation(x, n_changepoints=1) == [29]
    assert binary_segmentation(x, n_changepoints=1, rules="r") == [27]


def test_r_rules_need_a_left_segment_of_min_size_plus_one():
    x = np.r_[np.zeros(3), np.full(27, 5.0)]
    assert binary_segmentation(x, n_changepoints=1, rules="r", min_size=1) == [3]
    assert binary_segmentation(x, n_changepoints=1, rules="r", min_size=3) == [4]


def test_ties_go_to_the_first_index_in_r_and_the_last_in_ruptures():
    x = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    expected = ruptures.Binseg(model="l2", min_size=1, jump=1).fit(x).predict(n_bkps=1)[:-1]
    assert binary_segmentation(x, n_changepoints=1) == expected
    r_choice = binary_segmentation(x, n_changepoints=1, rules="r")
    assert r_choice[0] < expected[0]


def test_r_mbic_drops_small_unstandardised_jumps_and_keeps_standardised_ones():
    """docs/decisions.md#changepoints: MBIC assumes unit variance; a Ladder-sized jump of 0.01 is below 3·log n."""
    rng = np.random.default_rng(0)
    x = np.r_[np.full(100, 1.0), np.full(100, 0.99)] + 0.001 * rng.standard_normal(200)
    assert binary_segmentation(x, n_changepoints=3, rules="r", mbic=True) == []
    standardised = x / (np.median(np.abs(np.diff(x))) / (0.6745 * math.sqrt(2)))
    assert binary_segmentation(standardised, n_changepoints=1, rules="r", mbic=True) == [100]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="exactly one of n_changepoints and penalty"):
        binary_segmentation(np.zeros(10))
    with pytest.raises(ValueError, match="rules must be"):
        binary_segmentation(np.zeros(10), n_changepoints=1, rules="python")


R_FIXTURE = json.loads((Path(__file__).parent / "data" / "r-changepoint-binseg.json").read_text())["series"]


@pytest.mark.parametrize("penalty", ["None", "MBIC"])
def test_r_rules_agree_exactly_with_r_changepoint_2_3_on_every_fixture_series(penalty):
    """350 series answered by R 4.2.2 / changepoint 2.3 (``cpt.mean(x, method="BinSeg", Q=Q,
    penalty=...)``): Gaussian shifts, short series, ties, and noiseless steps where Q exceeds the
    real changes, so that the extra changepoints (and R's changepoint 0) are decided by
    round-off. Double-precision prefix sums or the gain summed in another order disagree on
    some of the noiseless ones."""
    key = "r_none" if penalty == "None" else "r_mbic"
    disagreements = [
        (series["id"], series["category"], series[key], found)
        for series in R_FIXTURE
        if (found := binary_segmentation(np.array(series["x"]), n_changepoints=series["Q"], rules="r",
                                         mbic=penalty == "MBIC")) != series[key]
    ]
    assert disagreements == []


def test_r_reports_changepoint_0_and_then_only_0s_when_no_split_gains():
    """A constant series: every gain is 0, R's maximum search stays on index 0, and a 0 among
    the segment bounds stops every later scan."""
    assert binary_segmentation(np.full(12, 0.3), n_changepoints=3, rules="r") == [0, 0, 0]
    with_step = np.r_[np.zeros(6), np.ones(6)]
    assert binary_segmentation(with_step, n_changepoints=3, rules="r")[-1] == 6
    assert binary_segmentation(with_step, n_changepoints=3, rules="r").count(0) == 2


def test_r_prefix_sums_accumulate_in_long_double_like_rs_cumsum():
    """R's cumsum keeps its running sum in long double: 1e16 + 1 + 1 is 1e16 + 2, which a
    double running sum (1e16 + 1 rounds back to 1e16) never reaches."""
    from ladderlab.engines.changepoint import _r_prefix_sums

    sums = _r_prefix_sums(np.array([1e16, 1.0, 1.0]))
    if np.finfo(np.longdouble).eps >= np.finfo(float).eps:
        pytest.skip("this platform's long double is a double, as R's would be here")
    assert sums[-1] == 1e16 + 2
    assert np.cumsum([1e16, 1.0, 1.0])[-1] == 1e16
