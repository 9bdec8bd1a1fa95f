"""Arena ratings are FastChat's: its Bradley–Terry fit to 0.05 Elo points on the same battles, its
bootstrap resamples and intervals, its rank rule; and the bootstrap over cells is the bootstrap over
battles, exactly.

A committed fixture (tests/data/arena/fastchat-*.{csv,json}, written by fastchat_fixture.py from
FastChat's own code at the commit it records) keeps the comparison in the default suite; with
FASTCHAT_DIR naming a FastChat checkout (or FastChat installed), FastChat's functions run here too,
on battles drawn now."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ladderlab.arena import battles as arena_battles
from ladderlab.arena.battles import from_frame, read_battles, to_frame
from ladderlab.arena.bradley_terry import ALPHA, elo, fit_exact
from ladderlab.arena.family import PairwiseArena
from ladderlab.arena.rating import bootstrap_fits, rate
from ladderlab.stats.interval_ranks import interval_rank

DATA = Path(__file__).parent / "data" / "arena"
FIXTURE = json.loads((DATA / "fastchat-ratings.json").read_text())
ELO_TOLERANCE = 0.05


def _fastchat():
    """FastChat's rating_systems module, or None: from FASTCHAT_DIR (a checkout), else installed."""
    checkout = os.environ.get("FASTCHAT_DIR")
    if checkout and (Path(checkout) / "fastchat" / "serve" / "monitor" / "rating_systems.py").is_file():
        sys.path.insert(0, checkout)  # imported by name: its bootstrap pickles its functions for its workers
    if importlib.util.find_spec("fastchat") is not None:
        from fastchat.serve.monitor import rating_systems
        return rating_systems
    return None


FASTCHAT = _fastchat()
needs_fastchat = pytest.mark.skipif(FASTCHAT is None, reason="FastChat is absent: set FASTCHAT_DIR to a lm-sys/FastChat checkout")


def _by_name(ratings, values):
    return dict(zip(ratings.models, values))


def test_the_ratings_of_the_fixture_are_fastchats_to_five_hundredths_of_a_point():
    ours = rate(read_battles(DATA / "fastchat-battles.csv"))
    rating = _by_name(ours, ours.rating)
    worst = max(abs(rating[model] - entry["rating"]) for model, entry in FIXTURE["models"].items())
    assert worst <= ELO_TOLERANCE
    assert set(rating) == set(FIXTURE["models"])


def test_fastchats_optimizer_stops_short_of_the_maximum_on_the_fixture_so_the_exact_fit_is_not_fastchats():
    """Why ``rate`` fits as FastChat does by default: the maximum-likelihood ratings of these sparse,
    time-windowed battles lie more than 0.05 points from what FastChat publishes."""
    battles = read_battles(DATA / "fastchat-battles.csv")
    exact = rate(battles, replicates=0, solver="exact")
    rating = _by_name(exact, exact.rating)
    assert max(abs(rating[model] - entry["rating"]) for model, entry in FIXTURE["models"].items()) > ELO_TOLERANCE
    assert rate(battles, replicates=0).optimizer["gap_to_maximum_likelihood"] > ELO_TOLERANCE


def test_the_bootstrap_of_the_fixture_draws_fastchats_resamples_and_ranks_as_fastchat_does():
    ours = rate(read_battles(DATA / "fastchat-battles.csv"), replicates=FIXTURE["rounds"], seed=0)
    for model, entry in FIXTURE["models"].items():
        index = ours.models.index(model)
        assert np.abs(np.sort(ours.bootstrap[:, index]) - entry["bootstrap_sorted"]).max() <= ELO_TOLERANCE
        assert abs(ours.lower[index] - entry["q025"]) <= ELO_TOLERANCE and abs(ours.upper[index] - entry["q975"]) <= ELO_TOLERANCE
        assert ours.rank[index] == entry["rank"]


def test_a_bootstrap_of_another_seed_has_fastchats_distribution_model_by_model():
    """Two-sample Kolmogorov–Smirnov, each model at 1e-4 / models (Bonferroni): the same bootstrap
    distribution, other resamples. Resampling the cells uniformly instead fails it."""
    battles = read_battles(DATA / "fastchat-battles.csv")
    ours = rate(battles, replicates=FIXTURE["rounds"], seed=1)
    level = 1e-4 / len(FIXTURE["models"])
    p_values = [stats.ks_2samp(ours.bootstrap[:, ours.models.index(model)], entry["bootstrap_sorted"]).pvalue
                for model, entry in FIXTURE["models"].items()]
    assert min(p_values) > level
    cells = battles.cells()
    rng = np.random.default_rng(1)
    uniform = rng.multinomial(len(battles), np.full(cells.count.size, 1 / cells.count.size), size=FIXTURE["rounds"])
    wrong = elo(bootstrap_fits(cells.pair_counts(uniform), len(battles), "fastchat"), battles.models)
    wrong_p = [stats.ks_2samp(wrong[:, battles.models.index(model)], entry["bootstrap_sorted"]).pvalue
               for model, entry in FIXTURE["models"].items()]
    assert min(wrong_p) < level


def test_resampling_the_cells_is_resampling_the_battles_exactly():
    """Five battles in three cells: every one of the 5⁵ equally likely draws with replacement, counted
    by cell, gives the multinomial the bootstrap draws from, probability for probability."""
    frame = pd.DataFrame({"model_a": ["x", "x", "y", "x", "y"], "model_b": ["y", "y", "x", "y", "x"],
                          "winner": ["model_a", "model_a", "tie", "model_b", "tie"]})
    battles = from_frame(frame)
    cells = battles.cells()
    codes = (battles.a * 2 + battles.b) * 3 + battles.outcome
    cell_of_row = np.searchsorted((cells.a * 2 + cells.b) * 3 + cells.outcome, codes)
    enumerated: dict[tuple[int, ...], Fraction] = {}
    for draw in itertools.product(range(5), repeat=5):
        key = tuple(np.bincount(cell_of_row[list(draw)], minlength=cells.count.size).tolist())
        enumerated[key] = enumerated.get(key, Fraction(0)) + Fraction(1, 5**5)
    shares = [Fraction(int(c), 5) for c in cells.count]
    for key, probability in enumerated.items():
        multinomial = Fraction(math.factorial(5), math.prod(math.factorial(k) for k in key)) * math.prod(
            share**k for share, k in zip(shares, key))
        assert probability == multinomial
    assert sum(enumerated.values()) == 1 and len(enumerated) == math.comb(5 + 2, 2)


def test_the_exact_fit_is_the_logistic_regression_of_the_duplicated_rows():
    """Min et al.'s construction (a win counts 2 for the winner, a tie 1 for each, rows ±ln 10),
    fitted by scikit-learn without a penalty, gives the same maximum-likelihood ratings."""
    from sklearn.linear_model import LogisticRegression

    family = PairwiseArena(models=8, battles=3000, tie_rate=0.3)
    rng = np.random.default_rng(3)
    battles, _ = family.battles_of(rng, family.pool(rng))
    pairs = battles.cells().pairs
    rows, labels, weights = [], [], []
    for i, j, n, s in zip(pairs.i, pairs.j, pairs.n, pairs.s):
        row = np.zeros(len(battles.models))
        row[i], row[j] = ALPHA, -ALPHA
        rows += [row, row]
        labels += [1, 0]
        weights += [2 * s, 2 * (n - s)]
    model = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-12, max_iter=10_000)
    model.fit(np.array(rows), np.array(labels), sample_weight=np.array(weights))
    reference = model.coef_[0] - model.coef_[0].mean()
    assert np.abs(400 * (fit_exact(pairs) - reference)).max() < 1e-4


def test_swapping_the_sides_of_every_battle_changes_no_rating_and_an_anchor_shifts_them_all_alike():
    frame = to_frame(read_battles(DATA / "fastchat-battles.csv"))
    swapped = frame.rename(columns={"model_a": "model_b", "model_b": "model_a"})
    swapped["winner"] = swapped.winner.map({"model_a": "model_b", "model_b": "model_a", "tie": "tie"})
    plain, mirrored = (rate(from_frame(f), replicates=0, solver="exact") for f in (frame, swapped))
    assert np.abs(pd.Series(plain.rating, plain.models) - pd.Series(mirrored.rating, mirrored.models)).max() < 1e-8
    unanchored = rate(from_frame(frame), replicates=0, solver="exact", anchor=None)
    shift = plain.rating - unanchored.rating
    assert np.ptp(shift) < 1e-9 and abs(np.mean(unanchored.rating) - 1000) < 1e-9


def test_the_arena_rank_is_fastchats_loop():
    rng = np.random.default_rng(5)
    low = rng.normal(1000, 30, 40)
    high = low + rng.uniform(0, 60, 40)
    expected = [1 + sum(low[o] > high[m] for o in range(40) if o != m) for m in range(40)]
    assert interval_rank(low, high).tolist() == expected


def test_a_model_that_never_lost_has_no_maximum_likelihood_rating_and_says_so():
    frame = pd.DataFrame({"model_a": ["x", "x", "y", "z"], "model_b": ["y", "z", "z", "y"],
                          "winner": ["model_a", "model_a", "tie", "model_b"]})
    with pytest.raises(ValueError, match="'x' won or lost every battle"):
        rate(from_frame(frame, "f.csv"), replicates=0, solver="exact")
    assert np.isfinite(rate(from_frame(frame), replicates=0).rating).all()  # FastChat's stops somewhere


@pytest.mark.parametrize("winner", ["draw", "Model_A", ""])
def test_a_winner_the_battles_do_not_know_is_refused_with_its_row(winner, tmp_path):
    path = tmp_path / "b.csv"
    path.write_text(f"model_a,model_b,winner\nx,y,model_a\nx,y,{winner}\n")
    with pytest.raises(ValueError, match=r"b.csv: row 2: winner .* is none of"):
        read_battles(path)


def test_json_battles_as_fastchat_writes_them_read_as_their_csv():
    csv = read_battles(DATA / "fastchat-battles.csv")
    records = to_frame(csv).assign(anony=True).to_dict(orient="records")
    assert arena_battles.from_table(arena_battles.pa.Table.from_pylist(records)).models == csv.models


@needs_fastchat
@pytest.mark.parametrize("family", [
    {"models": 12, "battles": 4000},
    {"models": 20, "battles": 6000, "provider_weights": [4.0, 1.0, 1.0, 0.5], "providers": 4, "style_effect": 40.0},
    {"models": 30, "battles": 5000, "lifetime": 0.15, "spread": 200.0, "tie_rate": 0.45},
])
def test_fastchats_own_functions_agree_on_battles_drawn_now(family):
    model = PairwiseArena(**family)
    rng = np.random.default_rng(sum(map(ord, json.dumps(family))))
    battles, _ = model.battles_of(rng, model.pool(rng))
    frame = to_frame(battles)
    reference = FASTCHAT.compute_bt(frame)
    bootstrap = FASTCHAT.compute_bootstrap_bt(frame, num_round=20, num_cpu=1)
    ours = rate(battles, replicates=20)
    rating, low, high = (_by_name(ours, values) for values in (ours.rating, ours.lower, ours.upper))
    assert max(abs(rating[m] - reference[m]) for m in reference.index) <= ELO_TOLERANCE
    assert max(abs(low[m] - bootstrap[m].quantile(0.025)) for m in reference.index) <= ELO_TOLERANCE
    assert max(abs(high[m] - bootstrap[m].quantile(0.975)) for m in reference.index) <= ELO_TOLERANCE


def test_the_fixture_names_the_fastchat_commit_that_computed_it():
    assert FIXTURE["fastchat_commit"].startswith("0e6d3e4") and "compute_bootstrap_bt" in FIXTURE["computed_by"]
    assert sys.modules.get("fastchat") is None or FASTCHAT is not None


STYLE_FIXTURE = json.loads((DATA / "fastchat-style-ratings.json").read_text())


def test_style_control_is_fastchats_on_the_fixture():
    from ladderlab.arena.style import rate_style_controlled

    controlled = rate_style_controlled(read_battles(DATA / "fastchat-style-battles.csv"), replicates=0)
    rating = _by_name(controlled.ratings, controlled.ratings.rating)
    assert max(abs(rating[m] - value) for m, value in STYLE_FIXTURE["ratings"].items()) <= ELO_TOLERANCE
    assert np.allclose(list(controlled.coefficients.values()), STYLE_FIXTURE["coefficients"], atol=1e-6)


def test_style_control_reads_fastchats_conv_metadata_records_as_their_columns():
    from ladderlab.arena.battles import STYLE_ELEMENTS

    frame = pd.read_csv(DATA / "fastchat-style-battles.csv")
    records = frame[list(STYLE_ELEMENTS)].to_dict(orient="records")
    nested = [{**record, "header_count_a": {"h1": record["header_count_a"], "h2": 0}} for record in records]
    with_metadata = frame.drop(columns=list(STYLE_ELEMENTS)).assign(conv_metadata=nested)
    assert np.array_equal(from_frame(with_metadata).style, from_frame(frame).style)


def test_style_control_recovers_the_strengths_that_style_hides():
    """Voters reward style worth 120 points a unit: the plain fit ranks by strength plus style, the
    style-controlled one by strength."""
    from ladderlab.arena.style import rate_style_controlled

    family = PairwiseArena(models=12, battles=20000, style_effect=120.0)
    rng = np.random.default_rng(11)
    pool = family.pool(rng)
    battles, _ = family.battles_of(rng, pool)
    order = [pool.names.index(model) for model in battles.models]
    truth = pool.strength[order]
    plain = rate(battles, replicates=0, solver="exact").rating
    controlled = rate_style_controlled(battles, replicates=0).ratings.rating
    assert stats.spearmanr(controlled, truth)[0] > stats.spearmanr(plain, truth)[0] + 0.1


@needs_fastchat
def test_fastchats_style_control_agrees_on_battles_drawn_now():
    from ladderlab.arena.battles import STYLE_ELEMENTS
    from ladderlab.arena.style import rate_style_controlled

    family = PairwiseArena(models=10, battles=3000, style_effect=80.0, tie_rate=0.4)
    rng = np.random.default_rng(21)
    battles, _ = family.battles_of(rng, family.pool(rng))
    frame = to_frame(battles)
    records = pd.DataFrame(battles.style.astype(int), columns=list(STYLE_ELEMENTS)).to_dict(orient="records")
    reference, params = FASTCHAT.compute_style_control(frame.assign(conv_metadata=records))
    controlled = rate_style_controlled(battles, replicates=0)
    rating = _by_name(controlled.ratings, controlled.ratings.rating)
    assert max(abs(rating[m] - reference[m]) for m in reference.index) <= ELO_TOLERANCE
    assert np.allclose(list(controlled.coefficients.values()), params, atol=1e-5)
