"""``ladderlab stats rank-certificate``: rankings whose answers are known (two teams differing on known
samples, identical teams, a winner ahead by construction), the fewest removals against brute
force, and per-sample data from files and from a competition run played again."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.cli.commands import main
from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.final_rankings.certificate import (
    bootstrap_scores,
    certificate_records,
    certify_ranking,
    fewest_removals,
    text_certificate,
)
from ladderlab.final_rankings.private_samples import PrivateSamples, read_samples
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.scoring import get_scorer

DELTA = 1e-9
"""Failure probability of each statistical assertion (Hoeffding)."""


def hoeffding(replicates: int) -> float:
    """Half-width that a mean of ``replicates`` values in [0, 1] exceeds around its expectation
    with probability at most DELTA."""
    return float(np.sqrt(np.log(2 / DELTA) / (2 * replicates)))


def zero_one_losses(n: int, errors: dict[str, list[int]]) -> PrivateSamples:
    """Teams whose 0/1 losses are 1 exactly on the given samples."""
    losses = np.zeros((len(errors), n))
    for row, wrong in enumerate(errors.values()):
        losses[row, wrong] = 1.0
    return PrivateSamples(list(errors), list(range(n)), losses=losses, source="constructed")


def two_teams(n: int = 400, a: int = 30, b: int = 20, common: int = 150) -> PrivateSamples:
    """The winner W errs on b samples of its own, the challenger C on a of its own, both on ``common``."""
    shared = list(range(common))
    return zero_one_losses(n, {"W": shared + list(range(common, common + b)),
                               "C": shared + list(range(common + b, common + b + a))})


def paired_probability_best(n: int, a: int, b: int) -> float:
    """P(W is best) under the paired bootstrap, exactly: a resample draws X of C's own errors and
    Y of W's, (X, Y, rest) ~ Multinomial(n; a/n, b/n, ·); W is best when X > Y, half when X = Y."""
    x = np.arange(n + 1)[:, None]
    y = np.arange(n + 1)[None, :]
    joint = stats.binom.pmf(x, n, a / n) * stats.binom.pmf(y, n - x, (b / n) / (1 - a / n))
    return float((joint * (x > y)).sum() + 0.5 * (joint * (x == y)).sum())


def test_two_teams_differing_on_known_samples_need_a_minus_b_plus_one_removals():
    removal = fewest_removals(two_teams(a=30, b=20))
    assert (removal.count, removal.challenger, removal.exact) == (11, "C", True)
    assert set(removal.samples) <= set(range(170, 200))   # only C's own errors go


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_probability_that_the_winner_is_best_is_the_paired_bootstraps(seed):
    """Resampling each team on its own (unpaired) would give 0.76 here, not 0.92."""
    replicates = 2000
    certificate = certify_ranking(two_teams(), np.random.default_rng(seed), replicates)
    assert abs(certificate.p_best[0] - paired_probability_best(400, 30, 20)) <= hoeffding(replicates)
    assert certificate.p_best.sum() == pytest.approx(1.0)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_identical_teams_tie_everywhere(seed):
    errors = [1, 5, 9, 20, 33]
    samples = zero_one_losses(40, {"first": errors, "second": errors, "third": errors})
    certificate = certify_ranking(samples, np.random.default_rng(seed), 200)
    assert certificate.p_best.tolist() == pytest.approx([1 / 3] * 3, abs=1e-12)
    assert certificate.arena_rank.tolist() == [1, 1, 1] and certificate.rank.tolist() == [1, 1, 1]
    assert certificate.score_low.tolist() == [certificate.score_low[0]] * 3
    assert certificate.winner == 0
    assert certificate.removal.count is None and certificate.removal.exact


def test_the_winner_line_names_the_teams_tied_with_the_winner():
    samples = zero_one_losses(40, {"first": [1, 5], "second": [2, 6], "third": [1, 2, 3]})
    text = text_certificate(certificate_records(certify_ranking(samples, np.random.default_rng(0), 100)))
    assert "winner: first (0.05), tied with second (the first of them in the input's order); probability" in text
    alone = zero_one_losses(40, {"first": [1], "second": [2, 6]})
    assert "winner: first (0.025); probability" in text_certificate(certificate_records(
        certify_ranking(alone, np.random.default_rng(0), 100)))


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_winner_ahead_by_construction_is_best_in_every_resample(seed):
    """The others err on at least 40 of 200 samples: a resample misses all of them with probability
    (1 − 40/200)^200 < 1e-19, so over 1000 resamples a tie has probability below 1e-15."""
    rng = np.random.default_rng(seed)
    samples = zero_one_losses(200, {"perfect": [],
                                    **{f"team {i}": sorted(rng.choice(200, 40 + 10 * i, replace=False).tolist())
                                       for i in range(3)}})
    certificate = certify_ranking(samples, np.random.default_rng(seed), 1000)
    assert certificate.p_best.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert (certificate.score_low[0], certificate.score_high[0]) == (0.0, 0.0)
    assert certificate.arena_rank[0] == 1 and (certificate.arena_rank[1:] >= 2).all()
    assert certificate.removal.count is None   # no one is better than perfect on any samples left


def test_arena_ranks_count_the_teams_whose_whole_interval_is_better():
    """Error rates 0.1, 0.1, 0.3 and 0.5 on 2000 samples: the intervals (half-width about 0.02) of the
    last two are ten standard deviations apart from the others."""
    rng = np.random.default_rng(5)
    shared = sorted(rng.choice(2000, 200, replace=False).tolist())
    samples = zero_one_losses(2000, {"a": shared, "b": shared, "c": sorted(rng.choice(2000, 600, replace=False).tolist()),
                                     "d": sorted(rng.choice(2000, 1000, replace=False).tolist())})
    certificate = certify_ranking(samples, np.random.default_rng(0), 500)
    assert certificate.arena_rank.tolist() == [1, 1, 3, 4]
    assert certificate.rank_low.tolist() == [1, 1, 3, 4] and certificate.rank_high.tolist() == [1, 1, 3, 4]


def brute_force_removals(samples: PrivateSamples) -> int | None:
    """The fewest samples whose removal lets another team score strictly better than the winner,
    by trying every set (small n only)."""
    scores = samples.sign * samples.scores()
    winner = int(np.argmin(scores))
    for k in range(1, samples.size):
        for removed in itertools.combinations(range(samples.size), k):
            keep = np.ones((1, samples.size))
            keep[0, list(removed)] = 0
            risk = samples.sign * samples.resampled(keep)[0]
            if (risk < risk[winner] - 1e-12 * max(1.0, abs(risk[winner]))).any():   # within rounding error: a tie
                return k
    return None


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), teams=st.integers(2, 4), n=st.integers(2, 9), levels=st.sampled_from([2, 3, 50]))
def test_the_fewest_removals_of_a_mean_loss_are_those_of_brute_force(seed, teams, n, levels):
    rng = np.random.default_rng(seed)
    losses = rng.integers(0, levels, (teams, n)) / (levels - 1)   # few levels: many ties
    samples = PrivateSamples([f"t{i}" for i in range(teams)], list(range(n)), losses=losses)
    removal = fewest_removals(samples)
    assert removal.exact and removal.count == brute_force_removals(samples)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scorer=st.sampled_from(["roc-auc", "pearson", "spearman", "accuracy", "rmse"]))
def test_the_fewest_removals_of_any_metric_are_those_of_brute_force_where_the_search_is_exhaustive(seed, scorer):
    rng = np.random.default_rng(seed)
    n = 9
    labels = np.r_[np.zeros(4), np.ones(5)] if scorer in ("roc-auc", "accuracy") else rng.normal(size=n)
    if scorer == "accuracy":
        predictions = np.where(rng.random((3, n)) < 0.7, labels, 1 - labels)
    else:
        predictions = labels + rng.normal(scale=1.0, size=(3, n))
    samples = PrivateSamples(["a", "b", "c"], list(range(n)), predictions=predictions, labels=labels,
                             scorer=get_scorer(scorer))
    if not np.isfinite(samples.scores()).all():
        return
    removal = fewest_removals(samples)
    expected = brute_force_removals(samples)
    if removal.exact:
        assert removal.count == expected
    else:
        assert expected is None or removal.count is None or removal.count >= expected


def test_without_an_exhaustive_search_a_whole_vector_metric_gets_an_upper_bound():
    rng = np.random.default_rng(3)
    labels = np.r_[np.zeros(100), np.ones(100)]
    predictions = labels + rng.normal(scale=[[1.0], [1.1], [1.4]], size=(3, 200))
    samples = PrivateSamples(["a", "b", "c"], list(range(200)), predictions=predictions, labels=labels,
                             scorer=get_scorer("roc-auc"))
    removal = fewest_removals(samples, exhaustive_limit=0)
    assert not removal.exact and removal.count is not None and "upper bound" in removal.method
    keep = np.ones((1, 200))
    keep[0, [s for s in removal.samples]] = 0
    risk = -samples.resampled(keep)[0]
    winner = int(np.argmax(samples.scores()))
    assert (risk < risk[winner]).any()   # the set found does change the winner


def test_subsets_and_resamples_score_as_the_metric_on_the_rows_themselves():
    rng = np.random.default_rng(1)
    labels = np.r_[np.zeros(10), np.ones(10)]
    predictions = labels + rng.normal(size=(2, 20))
    for name in ("roc-auc", "spearman", "pearson", "log-loss"):
        P = np.clip(predictions, 0.01, 0.99) if name == "log-loss" else predictions
        samples = PrivateSamples(["a", "b"], list(range(20)), predictions=P, labels=labels, scorer=get_scorer(name))
        counts = np.array([rng.integers(0, 3, 20)], dtype=float)
        rows = np.repeat(np.arange(20), counts[0].astype(int))
        expected = get_scorer(name).score_many(labels[rows], P[:, rows])
        assert samples.resampled(counts)[0] == pytest.approx(expected, rel=1e-12), name


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_bootstrap_scores_of_losses_are_the_mean_losses_of_the_resampled_rows(seed):
    samples = two_teams(n=50, a=5, b=3, common=10)
    scores = bootstrap_scores(samples, np.random.default_rng(seed), 7)
    # the same counts drawn again by hand
    from ladderlab.engines.bootstrap import bootstrap_counts
    counts = next(bootstrap_counts(np.random.default_rng(seed), 7, 50))
    assert np.array_equal(scores, counts @ samples.losses.T / 50)


def test_same_seed_same_certificate():
    one = certify_ranking(two_teams(), np.random.default_rng(4), 300)
    two = certify_ranking(two_teams(), np.random.default_rng(4), 300)
    assert np.array_equal(one.score_low, two.score_low) and np.array_equal(one.p_best, two.p_best)


# --- inputs ----------------------------------------------------------------------------------

def long_form(samples: PrivateSamples, column: str = "loss") -> pd.DataFrame:
    values = samples.losses if column == "loss" else samples.predictions
    return pd.DataFrame([{"team": team, "sample": f"s{i}", column: values[t, i]}
                         for t, team in enumerate(samples.teams) for i in range(samples.size)])


def test_a_losses_file_and_a_predictions_file_give_the_same_certificate(tmp_path):
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 60).astype(float)
    predictions = np.where(rng.random((3, 60)) < 0.8, labels, 1 - labels)
    given = PrivateSamples(["x", "y", "z"], list(range(60)), predictions=predictions, labels=labels,
                           scorer=get_scorer("zero-one"))
    long_form(given, "loss").to_csv(tmp_path / "losses.csv", index=False)
    long_form(given, "prediction").to_parquet(tmp_path / "predictions.parquet")
    pd.DataFrame({"sample": [f"s{i}" for i in range(60)], "label": labels}).to_csv(tmp_path / "labels.csv", index=False)
    from_losses = read_samples(tmp_path / "losses.csv")
    from_predictions = read_samples(tmp_path / "predictions.parquet", tmp_path / "labels.csv", "zero-one")
    first = certify_ranking(from_losses, np.random.default_rng(0), 200)
    second = certify_ranking(from_predictions, np.random.default_rng(0), 200)
    assert np.array_equal(first.score_low, second.score_low) and first.removal == second.removal


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: f.drop(columns="loss"), "need the columns team, sample and one of loss or prediction"),
    (lambda f: f.iloc[:-1], "every team needs every sample once; team 'C' has 39 of the 40 samples"),
    (lambda f: pd.concat([f, f.iloc[[0]]]), "team 'W' has sample 's0' twice"),
    (lambda f: f.assign(loss=f.loss.astype(object).where(f.index != 3, "x")), "column 'loss', team 'W', sample 's3': needs a finite number, got 'x'"),
    (lambda f: f[f.team == "W"], "at least two teams and two samples"),
])
def test_bad_per_sample_files_are_one_line_naming_the_problem(tmp_path, change, message):
    change(long_form(two_teams(n=40, a=3, b=2, common=5))).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match=message):
        read_samples(tmp_path / "bad.csv")


def test_predictions_need_labels_and_a_scorer(tmp_path):
    long_form(PrivateSamples(["a", "b"], [0, 1], predictions=np.zeros((2, 2)), labels=np.zeros(2),
                             scorer=get_scorer("squared")), "prediction").to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(ValueError, match="give --labels FILE"):
        read_samples(tmp_path / "p.csv")
    pd.DataFrame({"sample": ["s0"], "label": [1.0]}).to_csv(tmp_path / "labels.csv", index=False)
    with pytest.raises(ValueError, match="no label for sample 's1'"):
        read_samples(tmp_path / "p.csv", tmp_path / "labels.csv", "squared")


@pytest.mark.parametrize("scorer", ["zero-one", "log-loss"])
def test_a_competition_played_again_captures_each_teams_counted_prediction(scorer):
    task = TASKS.make("latent-classification", n_train=300, n_public=200, n_holdout=600, n_features=6, scorer=scorer)
    teams = [TeamSpec("progressive-analyst", {"view": 3, "batch": 2}, count=4), TeamSpec("boosting", {"k": 20})
             ] if scorer == "zero-one" else [TeamSpec("progressive-analyst", {"view": 3, "batch": 2}, count=5)]
    rules = Rules(rounds=3, per_round=2, public_fraction=0.4, selection=2)
    first = compete(task, MECHANISMS.make("ladder", eta=0.02), teams, rules, 3, 1)
    again = compete(task, MECHANISMS.make("ladder", eta=0.02), teams, rules, 3, 1, capture=first.counted)
    assert np.array_equal(again.public, first.public) and np.array_equal(again.private, first.private)
    rescored = get_scorer(scorer).score_many(again.private_labels, again.counted_private_predictions)
    assert np.array_equal(rescored, first.private)


def run(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_command_certifies_a_competition_run_and_a_file(tmp_path, capsys):
    from ladderlab.competition.results import load_competition_results
    from tests.test_competition import run_tiny_scenario

    run_tiny_scenario(tmp_path)
    row = load_competition_results(tmp_path / "run", teams=True).iloc[0]
    code, out, err = run(["stats", "rank-certificate", str(tmp_path / "run"), "--cell", row.cell, "--replicates", "200",
                          "--format", "json"], capsys)
    assert code == 0, err
    certificate = json.loads(out)
    scores = {entry["team"]: entry["score"] for entry in certificate["ranking"]}
    from ladderlab.final_rankings.final_leaderboard import from_competition_row
    board = from_competition_row(row)
    assert [scores[team] for team in board.teams] == board.private.tolist()   # the run's private scores, replayed
    long_form(two_teams(n=40, a=3, b=2, common=5)).to_csv(tmp_path / "losses.csv", index=False)
    code, out, _ = run(["stats", "rank-certificate", str(tmp_path / "losses.csv"), "--replicates", "100"], capsys)
    assert code == 0 and max(map(len, out.splitlines())) <= 100 and "exactly 2, after which C scores better" in out
    code, _, err = run(["stats", "rank-certificate", str(tmp_path / "run"), "--cell", row.cell, "--scorer", "zero-one"], capsys)
    assert code == 2 and "gives its own labels and scorer" in err
