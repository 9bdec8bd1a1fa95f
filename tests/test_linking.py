"""Linking a Sybil's accounts (issue 28, item 6): the near-identity rule's false-link rate on honest
pairs and its detection of a one-model Sybil, each with an exact Clopper–Pearson bound over fixed
seeds (never the global RNG), and the competition engine's ``link`` option."""

from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from ladderlab.accounts import probe_budget
from ladderlab.attack import Attack
from ladderlab.competition import Rules, TeamSpec, compete, play_competition
from ladderlab.duel import spec
from ladderlab.linking import Linker, LinkRule, differing_rows, pair_comparisons
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.seeding import stream
from tests.helpers import clopper_pearson

CONFIDENCE = 0.99
"""One-sided confidence of every Clopper–Pearson bound below: a correct rule fails a bound test
with probability at most 1 %, whatever the seeds (the seeds are fixed, so a test never flips)."""


def upper_bound(successes: int, trials: int) -> float:
    return clopper_pearson(successes, trials, 2 * CONFIDENCE - 1)[1]


def lower_bound(successes: int, trials: int) -> float:
    return clopper_pearson(successes, trials, 2 * CONFIDENCE - 1)[0]


HOLDOUT, PUBLIC, SUBMISSIONS = 1000, 400, 20
RULE = LinkRule(alpha=0.05, min_disagreement=0.05)
COMPARISONS = 2 * (SUBMISSIONS + 1)


def pair_linked(seed: int, rule: LinkRule, comparisons: int, differing: int) -> bool:
    """Two accounts on one population (a random public subset of the holdout) take turns: the first
    submits a random label vector, the second that vector with ``differing`` random holdout rows
    changed. ``differing`` = ⌈p₀N⌉ is an honest pair at the edge of the rule's assumption, every one
    of its comparisons as likely to link as the assumption allows; a small one is a one-model Sybil."""
    rng = stream(seed, "test-linking", HOLDOUT, PUBLIC, differing)
    public = np.sort(rng.permutation(HOLDOUT)[:PUBLIC])
    linker = Linker(rule, 2, rule.threshold(HOLDOUT, PUBLIC, comparisons))
    for _ in range(SUBMISSIONS + 1):
        first = rng.integers(0, 2, HOLDOUT).astype(float)
        linker.observe(0, first[public])
        second = first.copy()
        rows = rng.choice(HOLDOUT, differing, replace=False)
        second[rows] = 1 - second[rows]
        linker.observe(1, second[public])
    return linker.keeper(0) == linker.keeper(1)


def false_link_rate_holds(rule: LinkRule, comparisons: int, populations: int = 400) -> bool:
    """True when the Clopper–Pearson upper bound of the rate at which honest pairs at the edge of the
    assumption are linked is at most the rule's α."""
    edge = int(np.ceil(rule.min_disagreement * HOLDOUT))
    links = sum(pair_linked(seed, rule, comparisons, edge) for seed in range(populations))
    return upper_bound(links, populations) <= rule.alpha


def test_the_threshold_is_the_exact_hypergeometric_quantile_at_the_bonferroni_level():
    c = RULE.threshold(HOLDOUT, PUBLIC, COMPARISONS)
    cdf = stats.hypergeom.cdf([c, c + 1], HOLDOUT, 50, PUBLIC)
    assert cdf[0] <= RULE.alpha / COMPARISONS < cdf[1]
    assert LinkRule().threshold(100, 30, 20) == -1  # too few public rows to link anyone at that level


def test_honest_pairs_are_linked_at_most_at_the_stated_rate():
    assert false_link_rate_holds(RULE, COMPARISONS)


def test_a_rule_without_the_bonferroni_correction_fails_the_false_link_test():
    """The same test rejects a wrong rule: α per comparison instead of per pair links most honest pairs."""
    assert not false_link_rate_holds(RULE, 1, populations=100)


def test_a_rule_that_links_everything_fails_the_false_link_test():
    loose = LinkRule(alpha=0.05, min_disagreement=0.5)  # assumes honest teams differ on half the rows
    assert not false_link_rate_holds(loose, COMPARISONS, populations=100)


@pytest.mark.parametrize("differing", [0, 10])
def test_a_one_model_sybil_is_linked_with_high_probability(differing):
    """Accounts whose submissions are the same, or differ on 1 % of the holdout rows, are linked in
    at least 95 % of populations (exact lower bound)."""
    populations = 200
    linked = sum(pair_linked(seed, RULE, COMPARISONS, differing) for seed in range(populations))
    assert lower_bound(linked, populations) >= 0.95


def test_the_keeper_is_the_group_that_made_the_most_submissions():
    linker = Linker(RULE, 3, 5)
    row = np.zeros(10)
    for _ in range(3):
        assert linker.observe(1, row + np.arange(10)) == 1
    assert linker.observe(2, row + np.arange(10)) == 1  # identical: linked, answered by account 1's state
    assert linker.observe(0, row + np.arange(10)) == 1  # a fresh main account joins the worn-out state
    assert linker.groups() == [1, 1, 1] and [link.other for link in linker.links] == [1, 1]


def test_continuous_predictions_differ_beyond_the_tolerance_only():
    linker = Linker(LinkRule(tolerance=0.01), 2, 0)
    linker.observe(0, np.array([0.5, 0.25, 0.75]))
    assert linker.observe(1, np.array([0.505, 0.25, 0.75])) == 0
    linker = Linker(LinkRule(), 2, 0)
    linker.observe(0, np.array([0.5, 0.25, 0.75]))
    assert linker.observe(1, np.array([0.505, 0.25, 0.75])) == 1


@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 1e-300, 0.25]))
def test_the_differing_rows_are_those_further_apart_than_the_tolerance(seed, tolerance):
    """The count is the definition's, |a − b| > tolerance, also for the ``!=`` shortcut at tolerance 0
    on near ties: subnormals, −0.0 against 0.0, values one ulp apart."""
    rng = np.random.default_rng(seed)
    near = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-308, 1.0, np.nextafter(1.0, 2.0), 0.75, 0.5])
    latest = rng.choice(near, (6, 40, 2))
    row = rng.choice(near, (40, 2))
    expected = np.count_nonzero((np.abs(latest - row[None]) > tolerance).any(axis=2), axis=1)
    assert np.array_equal(differing_rows(latest, row, tolerance), expected)


def test_the_rule_is_checked():
    for bad in ({"alpha": 0}, {"alpha": 1.5}, {"min_disagreement": True}, {"tolerance": -1}):
        with pytest.raises(ValueError, match="link rule"):
            LinkRule(**bad)
    with pytest.raises(ValueError, match="LinkRule"):
        compete(task(), MECHANISMS.make("ladder"), [TeamSpec("boosting", {"k": 5})], Rules(rounds=1), link=0.05)


# --- the engine ---------------------------------------------------------------------------------------

N = 200


def task(n=N):
    return TASKS.make("random-labels", n_public=n, n_holdout=3 * n)


class Drifter(Attack):
    """One model on every account: a random label vector, each submission with one more row changed."""

    id = "drifter"
    reference = "test"

    def __init__(self, rows: int = 30):
        self.rows = rows

    seen: ClassVar[list[tuple[np.ndarray, np.ndarray]]] = []

    def run(self, board, data, rng):
        current = rng.integers(0, 2, board.holdout_size).astype(float)
        submitted, released = [], []
        for _ in range(self.rows):
            row = rng.integers(board.holdout_size)
            current[row] = 1 - current[row]
            submitted.append(current.copy())
            released.append(board.submit(current))
        Drifter.seen.append((np.array(submitted), np.array(released)))
        return current


def sybil(seed, link, budget=10, accounts=3, policy=None, n=N, batched=True):
    split = task(n).split(stream(seed, "task", spec(task(n)), 0))
    team = TeamSpec(policy or Drifter(rows=probe_budget(budget, accounts)), accounts=accounts, label="sybil")
    return play_competition(split, MECHANISMS.make("ladder", eta=0.01), [team], Rules(rounds=1, per_round=budget,
                            selection="last"), seed, 0, spec(task(n)), link=link, batched=batched)


def test_without_a_rule_nothing_changes():
    plain, unlinked = sybil(3, None), sybil(3, LinkRule(alpha=1e-12, min_disagreement=0.01))
    assert plain.links is None and unlinked.links == [] and unlinked.link_threshold == -1
    np.testing.assert_array_equal(plain.released_final, unlinked.released_final)
    np.testing.assert_array_equal(plain.private, unlinked.private)


@pytest.mark.parametrize("batched", [True, False])
def test_a_linked_sybil_shares_one_state_and_one_budget(batched):
    """The drifting Sybil (3 accounts of 10): its second probe account links at its first submission
    and the group has then made 11 > 10 submissions, so every row of it is refused and answered with
    the state's last release; the final prediction on the main account (outside the caps) is answered
    by the same Ladder: the releases are those of one Ladder fed the first 10 rows and the final one."""
    for seed in range(5):
        Drifter.seen.clear()
        linked = sybil(seed, RULE, batched=batched)
        assert linked.account_groups == [[1, 1, 1]]
        (P, released), = Drifter.seen
        split = task().split(stream(seed, "task", spec(task()), 0))
        ladder = MECHANISMS.make("ladder", eta=0.01).bind_to(split.public, split.y_public, np.random.default_rng(0))
        expected = ladder.submit_many(P[:10][:, split.public_rows])
        np.testing.assert_array_equal(released[:10], expected)
        np.testing.assert_array_equal(released[10:], np.full(10, expected[-1]))
        assert linked.released_final[0] == ladder.submit_many(P[-1:][:, split.public_rows])[0]


@pytest.mark.parametrize("mechanism", ["ladder", "kaggle", "thresholdout"])
def test_a_linked_group_shares_one_daily_quota_and_refused_rows_get_the_states_last_release(mechanism):
    """Two rounds of 5: each round the first probe account's 5 rows are answered and the linked
    second account's 5 are refused (the group has spent the day's quota), under a stateful release
    (the Ladder: the releases are one Ladder's fed the 10 answered rows), a stateless one (Kaggle:
    whole waves refused) and a per-account one (Thresholdout)."""
    Drifter.seen.clear()
    split = task().split(stream(1, "task", spec(task()), 0))
    team = TeamSpec(Drifter(rows=20), accounts=3, label="sybil")
    result = play_competition(split, MECHANISMS.make(mechanism), [team], Rules(rounds=2, per_round=5, selection="last"),
                              1, 0, spec(task()), link=RULE)
    (P, released), = Drifter.seen
    assert result.account_groups == [[1, 1, 1]]
    np.testing.assert_array_equal(released[5:10], np.full(5, released[4]))
    np.testing.assert_array_equal(released[15:], np.full(5, released[14]))
    if mechanism == "ladder":
        ladder = MECHANISMS.make(mechanism).bind_to(split.public, split.y_public, np.random.default_rng(0))
        answered = np.r_[0:5, 10:15]
        np.testing.assert_array_equal(released[answered], ladder.submit_many(P[answered][:, split.public_rows]))


def test_a_hill_climbing_sybil_is_linked_whole_in_the_engine():
    """The folklore Sybil (hill climbing, block 4, on 4 accounts of 25 submissions, n = 500: the
    default rule links at most 11 differing public rows) is linked whole in every one of 30 seeds:
    an exact lower bound above 85 %."""
    seeds = range(30)
    whole = 0
    for seed in seeds:
        result = sybil(seed, LinkRule(), budget=25, accounts=4,
                       policy=TeamSpec("hill-climbing", {"k": 75, "block": 4}).attack(), n=500)
        whole += len(set(result.account_groups[0])) == 1
    assert lower_bound(whole, len(seeds)) >= 0.85


def test_the_comparisons_count_every_submission_of_a_pair():
    assert pair_comparisons(Rules(rounds=3, per_round=5).cap) == 32
    assert sybil(0, RULE).link_threshold == RULE.threshold(3 * N, N, pair_comparisons(10))


def test_a_certificate_against_a_linked_sybil(tmp_path):
    """``certify --accounts A --link``: every battery cell of the attack plays under the wrapper, the
    certificate and its Markdown say so; a scenario without ``link`` keeps its identity."""
    from ladderlab import certify as certification
    from ladderlab.scenario import Scenario, cells

    certificate = certification.certify("ladder", n=N, budgets=[10], attacks=["hill-climbing(block=4)"],
                                        default_battery=False, replications=3, honest_replications=2, accounts=3,
                                        link=True, run_dir=tmp_path / "battery", scorer="zero-one")
    assert "one mechanism state" in certificate["link"]
    row, = certificate["battery"]
    assert row["verdict"] != "did not play"
    assert "linking wrapper" in certification.markdown(certificate)
    table = {"schema_version": 1, "name": "keys", "replications": 1, "matrix": [
        {"tasks": [{"id": "random-labels", "params": {"n_public": N, "n_holdout": 3 * N}}],
         "mechanisms": [{"id": "ladder"}], "attacks": [{"id": "boosting", "budget": 10, "accounts": 3}]}]}
    plain = Scenario.model_validate(table)
    table["matrix"][0]["attacks"][0]["link"] = False
    assert Scenario.model_validate(table).identity() == plain.identity()
    table["matrix"][0]["attacks"][0]["link"] = True
    linked = Scenario.model_validate(table)
    assert linked.identity() != plain.identity() and cells(linked)[0].key != cells(plain)[0].key
    assert cells(linked)[0].link and "linked by the wrapper" in cells(linked)[0].label
    table["matrix"][0]["attacks"][0]["accounts"] = 1
    with pytest.raises(ValueError, match="link = true needs accounts"):
        Scenario.model_validate(table)
    with pytest.raises(ValueError, match="link needs accounts"):
        certification.certify("ladder", n=N, budgets=[10], link=True, run_dir=tmp_path / "other")


def honest_populations_linked(rule: LinkRule, populations: int) -> int:
    """Competitions of four independently trained honest teams (``improving``: ridge regression on
    their own three features, one submission a day) in which the rule linked any two accounts."""
    regression = TASKS.make("gaussian-regression", n_samples=600)
    teams = [TeamSpec("improving", {"view": 3, "days": 3}, count=4, honest=True)]
    return sum(bool(compete(regression, MECHANISMS.make("ladder"), teams, Rules(rounds=3, per_round=1, selection="last"),
                            seed=0, replication=replication, link=rule).links)
               for replication in range(populations))


def test_independently_trained_honest_teams_are_not_linked():
    """The chance that some pair of a population is linked bounds each pair's: its exact upper bound
    over 100 populations is below α = 0.05."""
    rule = LinkRule(alpha=0.05)
    assert upper_bound(honest_populations_linked(rule, 100), 100) <= rule.alpha


@pytest.mark.slow
def test_independently_trained_honest_teams_are_not_linked_at_the_default_rate():
    rule = LinkRule()
    assert upper_bound(honest_populations_linked(rule, 500), 500) <= rule.alpha


def test_the_accounts_table_gains_the_wrapper_column():
    """Boosting's probes are independent random vectors: the wrapper links none of them, so its column
    is the own-states column exactly (what ``bench --accounts`` shows beside the oracle's 'linked')."""
    from ladderlab.accounts import accounts_table, table_text

    row, = accounts_table(n=N, budget=10, accounts=3, replications=3, mechanisms=["ladder"], wrapper=True)
    assert list(row.delta) == ["1 account", "3 accounts", "3 linked", "3 by the wrapper"]
    assert row.delta["3 by the wrapper"] == row.delta["3 accounts"]
    assert "'by the wrapper'" in table_text([row], N, 10, 3, 0.95)


def test_natural_analysts_are_linked_only_where_their_models_coincide():
    """The documented failure of the assumption: on the log loss, the natural analysts the rule links
    submitted *identical* predictions (analysts whose views share their first features fit one model)."""
    latent = TASKS.make("latent-classification", scorer="log-loss")
    teams = [TeamSpec("progressive-analyst", {"lam": 0.9}, count=5), TeamSpec("conservative-analyst", {"p": 0.5}, count=5)]
    links = [link for replication in range(6)
             for link in compete(latent, MECHANISMS.make("ladder", eta=0.01), teams, Rules(rounds=5, per_round=5,
                                 selection="last"), seed=0, replication=replication, link=LinkRule()).links]
    assert links and all(link.differing == 0 for link in links)
