"""Linking a Sybil's accounts (issue 28, item 6): the rule on differing holdout rows never depends on
the split, links no honest pair and catches every one-model Sybil the rule on public rows caught
(up to that rule's α), each rate with an exact Clopper–Pearson bound over fixed seeds (never the
global RNG); and the competition engine's ``link`` option."""

import dataclasses
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.attack import Attack
from ladderlab.competition import Rules, TeamSpec, compete, play_competition
from ladderlab.competition.accounts import probe_budget
from ladderlab.engines.linking import Linker, LinkRule, differing_rows
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs.duel import spec
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
RULE = LinkRule(min_disagreement=0.05)
EDGE = 50
"""⌈p₀N⌉: the fewest holdout rows on which two honest submissions differ, by the rule's assumption."""
OLD_ALPHA, COMPARISONS = 0.05, 2 * (SUBMISSIONS + 1)
"""The rule on public rows that this one replaced: its level per pair, over a pair's comparisons."""


def old_threshold() -> int:
    """The replaced rule's threshold on differing *public* rows: the largest c with
    HypergeomCDF(c; N, ⌈p₀N⌉, n) ≤ α / comparisons (−1: none)."""
    cdf = stats.hypergeom.cdf(np.arange(PUBLIC + 1), HOLDOUT, EDGE, PUBLIC)
    below = np.flatnonzero(cdf <= OLD_ALPHA / COMPARISONS)
    return int(below[-1]) if below.size else -1


def pair_outcomes(seed: int, differing: int) -> tuple[bool, bool]:
    """Two accounts on one population (a random public subset of the holdout) take turns: the first
    submits a random label vector, the second that vector with ``differing`` random holdout rows
    changed. Whether the rule linked them, and whether the replaced rule on public rows would have
    at some comparison (its differing public rows at most :func:`old_threshold`). ``differing`` =
    ⌈p₀N⌉ is an honest pair at the edge of the assumption; a smaller one is a one-model Sybil."""
    rng = stream(seed, "test-linking", HOLDOUT, PUBLIC, differing)
    public = np.sort(rng.permutation(HOLDOUT)[:PUBLIC])
    linker, old, old_linked = Linker(RULE, 2, HOLDOUT), old_threshold(), False
    for _ in range(SUBMISSIONS + 1):
        first = rng.integers(0, 2, HOLDOUT).astype(float)
        linker.observe(0, first)
        second = first.copy()
        rows = rng.choice(HOLDOUT, differing, replace=False)
        second[rows] = 1 - second[rows]
        old_linked |= int(np.count_nonzero(first[public] != second[public])) <= old
        linker.observe(1, second)
    return linker.keeper(0) == linker.keeper(1), old_linked


def test_the_threshold_is_one_below_the_assumptions_least_disagreement():
    assert RULE.threshold(HOLDOUT) == EDGE - 1
    assert LinkRule(min_disagreement=0.001).threshold(100) == 0  # only identical submissions link
    linker = Linker(RULE, 3, HOLDOUT)
    linker.observe(0, np.zeros(HOLDOUT))
    linker.observe(1, np.r_[np.ones(EDGE), np.zeros(HOLDOUT - EDGE)])
    linker.observe(2, np.r_[np.zeros(EDGE), np.ones(EDGE - 1), np.zeros(HOLDOUT - 2 * EDGE + 1)])
    assert linker.groups() == [0, 1, 0] and [(link.other, link.differing) for link in linker.links] == [(0, EDGE - 1)]


def test_honest_pairs_at_the_edge_of_the_assumption_are_never_linked():
    """Zero links in 400 populations of 21 submissions per account: the guarantee is exact. The rule
    on public rows linked such pairs at up to its α, and one that links at D ≤ ⌈p₀N⌉ links them all."""
    assert not any(pair_outcomes(seed, EDGE)[0] for seed in range(400))


@pytest.mark.parametrize("differing", [0, 10, 25, EDGE - 1])
def test_a_one_model_sybil_is_linked_whenever_the_rule_on_public_rows_could_link_it(differing):
    """Accounts whose submissions differ on fewer than ⌈p₀N⌉ holdout rows are linked in every
    population; the replaced rule on public rows caught them only while few enough differing rows
    fell among the public ones (40 and 49 differing rows: in 57 and 5 of these 200 populations)."""
    outcomes = [pair_outcomes(seed, differing) for seed in range(200)]
    assert all(new for new, _ in outcomes)
    assert lower_bound(sum(new for new, _ in outcomes), len(outcomes)) >= 0.97


def test_the_old_rule_links_where_this_one_does_not_at_most_at_its_alpha():
    """The docstring's coupling: on split-oblivious pairs whose differing rows straddle the edge
    (uniform in 0 … 2⌈p₀N⌉), the old rule links a pair this one leaves alone at a rate whose exact
    upper bound is below the old rule's α."""
    outcomes = [pair_outcomes(seed, differing) for seed, differing in
                enumerate(stream(7, "test-linking-straddle").integers(0, 2 * EDGE + 1, 300))]
    missed = sum(old and not new for new, old in outcomes)
    assert upper_bound(missed, len(outcomes)) <= OLD_ALPHA
    assert sum(new for new, _ in outcomes) >= sum(old for _, old in outcomes)


def test_the_keeper_is_the_group_that_made_the_most_submissions():
    linker = Linker(RULE, 3, 10)  # threshold 0: identical submissions link
    row = np.zeros(10)
    for _ in range(3):
        assert linker.observe(1, row + np.arange(10)) == 1
    assert linker.observe(2, row + np.arange(10)) == 1  # identical: linked, answered by account 1's state
    assert linker.observe(0, row + np.arange(10)) == 1  # a fresh main account joins the worn-out state
    assert linker.groups() == [1, 1, 1] and [link.other for link in linker.links] == [1, 1]


def test_continuous_predictions_differ_beyond_the_tolerance_only():
    linker = Linker(LinkRule(tolerance=0.01), 2, 3)  # threshold 0: only submissions within the tolerance link
    linker.observe(0, np.array([0.5, 0.25, 0.75]))
    assert linker.observe(1, np.array([0.505, 0.25, 0.75])) == 0
    linker = Linker(LinkRule(), 2, 3)
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
    for bad in ({"min_disagreement": 0}, {"min_disagreement": 1.5}, {"min_disagreement": True}, {"tolerance": -1}):
        with pytest.raises(ValueError, match="link rule"):
            LinkRule(**bad)
    with pytest.raises(ValueError, match="alpha = 0.01 is no longer a parameter: the rule counts the differing holdout"):
        LinkRule(alpha=0.01)
    assert LinkRule.from_record(LinkRule(0.1, 0.5).record()) == LinkRule(0.1, 0.5)
    for old in ({"alpha": 0.01, "min_disagreement": 0.05, "tolerance": 0.0}, {}):
        with pytest.raises(ValueError, match="is the old rule on differing public rows"):
            LinkRule.from_record(old)
    with pytest.raises(ValueError, match="no parameter 'alpha'"):
        LinkRule.from_record({**LinkRule().record(), "alpha": 0.01})
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
    boosting = TeamSpec("boosting", {"k": probe_budget(10, 3)}).attack()  # random probes: none identical
    plain, unlinked = sybil(3, None, policy=boosting), sybil(3, LinkRule(min_disagreement=1e-9), policy=boosting)
    assert plain.links is None and unlinked.links == [] and unlinked.link_threshold == 0
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


def test_the_engine_links_on_every_holdout_row():
    assert sybil(0, RULE).link_threshold == RULE.threshold(3 * N) == 29


class Straddler(Attack):
    """One base vector, each submission it with a random number of rows changed, from none to
    three times the rule's edge: some submissions link, some do not, whatever the releases say."""

    id = "straddler"
    reference = "test"

    def __init__(self, rows: int = 30):
        self.rows = rows

    def run(self, board, data, rng):
        base = rng.integers(0, 2, board.holdout_size).astype(float)
        edge = RULE.threshold(board.holdout_size) + 1
        for _ in range(self.rows):
            row = base.copy()
            changed = rng.choice(board.holdout_size, int(rng.integers(0, 3 * edge)), replace=False)
            row[changed] = 1 - row[changed]
            board.submit(row)
        return base


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_links_do_not_depend_on_which_rows_are_public(seed):
    """The same submissions under two public/final splits of one holdout (a permutation of which rows
    are public, drawn from the seed) make the same links, submission by submission."""
    split = task().split(stream(seed, "task", spec(task()), 0))
    order = np.random.default_rng(seed).permutation(split.y_holdout.size)
    moved = dataclasses.replace(split, public_rows=np.sort(order[:N]), final_rows=np.sort(order[N:]))
    team = TeamSpec(Straddler(rows=probe_budget(10, 3)), accounts=3, label="sybil")
    links = [[dataclasses.astuple(link) for link in
              play_competition(population, MECHANISMS.make("ladder", eta=0.01), [team],
                               Rules(rounds=1, per_round=10, selection="last"), seed, 0, spec(task()), link=RULE).links]
             for population in (split, moved)]
    assert links[0] == links[1]


def test_a_certificate_against_a_linked_sybil(tmp_path):
    """``certify --accounts A --link``: every battery cell of the attack plays under the wrapper, the
    certificate and its Markdown say so; a scenario without ``link`` keeps its identity."""
    from ladderlab.certification import certify as certification
    from ladderlab.runs.scenario import Scenario, cells

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


@pytest.mark.slow
def test_independently_trained_honest_teams_are_not_linked():
    """Adaptive honest teams are outside the theorem's reach only where two of their submissions
    come within ⌈p₀N⌉ rows; these never do: no population of 100 has a link, an exact upper bound
    of 4.5 % on each pair's chance."""
    assert upper_bound(honest_populations_linked(LinkRule(), 100), 100) <= 0.05


@pytest.mark.slow
def test_independently_trained_honest_teams_are_not_linked_at_the_paper_scale():
    assert upper_bound(honest_populations_linked(LinkRule(), 500), 500) <= 0.01


def test_the_accounts_table_gains_the_wrapper_column():
    """Boosting's probes are independent random vectors: the wrapper links none of them, so its column
    is the own-states column exactly (what ``bench --accounts`` shows beside the oracle's 'linked')."""
    from ladderlab.competition.accounts import accounts_table, table_text

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
