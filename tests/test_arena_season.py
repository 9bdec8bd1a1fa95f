"""The pairwise family votes as it says, and a season's board shows what its policy and attack make of it:
best-of-N inflation grows with N as order statistics predict, caps and provisional listing take it away,
and the vote-rigging strategies vote as Min et al.'s code does."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ladderlab.arena.attack import ABSTAIN
from ladderlab.arena.attacks.vote_rigging import VoteRigging
from ladderlab.arena.battles import A_WINS, B_WINS, TIE
from ladderlab.arena.family import PairwiseArena, all_pairs, outcome_probabilities, pair_probabilities
from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_FAMILIES, ARENA_POLICIES
from ladderlab.arena.season import Season, _skip_two, _weighted_pairs, play_season
from ladderlab.arena.sweep import expected_maximum

SMALL = PairwiseArena(models=16, providers=4, battles=4000)
"""A family small enough for hundreds of seasons in a second or two."""
LEVEL = 1e-6
"""Each statistical check's level: a correct implementation fails one with probability at most this."""


def _inside(successes: int, trials: int, p: float) -> bool:
    """Whether ``successes`` of ``trials`` is a plausible Binomial(trials, p) draw at two-sided level LEVEL."""
    return stats.binomtest(successes, trials, p).pvalue > LEVEL


def seasons(policy: str, attack: str, replications: int, family: PairwiseArena = SMALL, policy_params=None,
            newcomer_gap: float = 0.0, **params):
    return [Season(family, ARENA_POLICIES.make(policy, **(policy_params or {})), ARENA_ATTACKS.make(attack, **params), 0, r,
                   newcomer_gap) for r in range(replications)]


def test_a_vote_scores_the_bradley_terry_probability_on_average_and_ties_peak_between_equals():
    difference = np.linspace(-600, 600, 25)
    for tie_rate in (0.0, 0.2, 0.5):
        p = outcome_probabilities(difference, tie_rate)
        assert np.allclose(p.sum(axis=1), 1) and (p >= 0).all()
        assert np.allclose(p[:, 0] + p[:, 1] / 2, 1 / (1 + 10 ** (-difference / 400)))
        assert p[:, 1].max() == pytest.approx(tie_rate) and p[12, 1] == pytest.approx(tie_rate)


def test_drawn_votes_follow_their_probabilities_and_the_pairs_the_sampler():
    family = PairwiseArena(models=6, providers=3, battles=60000, provider_weights=[4.0, 1.0, 1.0], tie_rate=0.4)
    rng = np.random.default_rng(1)
    pool = family.pool(rng)
    battles, times = family.battles_of(rng, pool)
    i, j = all_pairs(pool.size)
    expected = pair_probabilities(pool.weight, i, j)
    low, high = np.minimum(battles.a, battles.b), np.maximum(battles.a, battles.b)
    index = {name: number for number, name in enumerate(pool.names)}
    order = np.array([index[name] for name in battles.models])
    key = np.minimum(order[low], order[high]) * pool.size + np.maximum(order[low], order[high])
    for pair in range(i.size):
        assert _inside(int((key == i[pair] * pool.size + j[pair]).sum()), len(battles), expected[pair])
    first = order[battles.a] == 0
    tie_share = family.vote_probabilities(pool.strength[order[battles.a]] - pool.strength[order[battles.b]],
                                          pool.style[order[battles.a]] - pool.style[order[battles.b]])[:, 1]
    assert _inside(int((battles.outcome == TIE).sum()), len(battles), float(tie_share.mean()))
    assert (np.diff(times) >= 0).all() and first.any()


def test_a_favoured_providers_models_meet_the_voters_as_often_as_their_weight_says():
    family = PairwiseArena(models=10, providers=2, battles=50000, provider_weights=[3.0, 1.0])
    rng = np.random.default_rng(2)
    pool = family.pool(rng)
    outcomes = family.outcomes(rng, pool)
    total = outcomes.wins + outcomes.ties + outcomes.losses
    share = np.bincount(outcomes.i, total, 10) + np.bincount(outcomes.j, total, 10)
    favoured, other = share[pool.provider == 0].mean(), share[pool.provider == 1].mean()
    assert 2.2 < favoured / other < 3.5  # 3 times as likely to be drawn first, about as likely as a rival


def test_models_live_for_their_lifetime_only_and_battles_pair_live_models():
    family = PairwiseArena(models=20, battles=8000, lifetime=0.2)
    rng = np.random.default_rng(3)
    pool = family.pool(rng)
    battles, times = family.battles_of(rng, pool)
    index = {name: number for number, name in enumerate(pool.names)}
    for model in (battles.a, battles.b):
        number = np.array([index[battles.models[m]] for m in model])
        assert (pool.start[number] - 1 / 200 <= times).all() and (times <= pool.start[number] + 0.2 + 1 / 200).all()  # slices


def test_the_samplers_pair_draws_are_min_et_als_and_a_misperceived_pair_avoids_the_true_one():
    weight = np.array([1.0, 2.0, 3.0, 4.0])
    rng = np.random.default_rng(4)
    a, b = _weighted_pairs(weight, *rng.random((3, 200000)))
    assert (a != b).all()
    i, j = all_pairs(4)
    counts = np.array([((np.minimum(a, b) == x) & (np.maximum(a, b) == y)).sum() for x, y in zip(i, j)])
    for count, p in zip(counts, pair_probabilities(weight, i, j)):
        assert _inside(int(count), a.size, p)
    index = rng.integers(0, 3, 1000)
    first, second = rng.integers(0, 5, 1000), rng.integers(0, 5, 1000)
    keep = first != second
    other = _skip_two(index[keep], first[keep], second[keep])
    assert ((other != first[keep]) & (other != second[keep]) & (other < 5)).all()


def test_the_world_is_the_same_whatever_the_policy_and_budget():
    one = Season(SMALL, ARENA_POLICIES.make("plain-board"), ARENA_ATTACKS.make("best-of-n-variants", n_variants=1), 0, 7)
    two = Season(SMALL, ARENA_POLICIES.make("provisional"), ARENA_ATTACKS.make("vote-rigging", votes=5), 0, 7)
    assert np.array_equal(one.pool.strength, two.pool.strength) and np.array_equal(one.history.wins, two.history.wins)


def test_the_best_of_more_variants_is_never_rated_lower_on_the_plain_board():
    """Variant v's votes come from its own stream, so the best of 10 is the best of the first 3 and 7 more."""
    for replication in range(15):
        three, ten = (play_season(SMALL, ARENA_POLICIES.make("plain-board"),
                                  ARENA_ATTACKS.make("best-of-n-variants", n_variants=n, battles_per_variant=400), 0, replication)
                      for n in (3, 10))
        assert ten.inflation >= three.inflation - 1e-9


def test_best_of_n_inflation_is_what_order_statistics_predict_and_one_variant_is_unbiased():
    results = {}
    for n in (1, 8):
        records = []
        for season in seasons("plain-board", "best-of-n-variants", 150, n_variants=n, battles_per_variant=400):
            result = season.play()
            records.append((result.inflation, np.var([v.private_rating for v in season.variants], ddof=1) if n > 1 else 0.0))
        results[n] = np.array(records)
    single = results[1][:, 0]
    assert abs(single.mean()) < stats.t.ppf(1 - LEVEL / 2, single.size - 1) * single.std(ddof=1) / math.sqrt(single.size)
    spread = math.sqrt(results[8][:, 1].mean())
    best = results[8][:, 0]
    predicted = spread * expected_maximum(8)
    assert predicted > 15
    assert abs(best.mean() - predicted) < 0.25 * predicted  # the shared pool noise is not selected


def test_a_cap_stops_testing_and_its_best_of_ten_is_the_plain_boards_best_of_three():
    for replication in range(5):
        capped = play_season(SMALL, ARENA_POLICIES.make("variant-cap", max_variants=3),
                             ARENA_ATTACKS.make("best-of-n-variants", n_variants=10, battles_per_variant=400), 0, replication)
        plain = play_season(SMALL, ARENA_POLICIES.make("plain-board"),
                            ARENA_ATTACKS.make("best-of-n-variants", n_variants=3, battles_per_variant=400), 0, replication)
        assert capped.variants_tested == 3 and capped.inflation == plain.inflation


def test_provisional_listing_on_fresh_votes_only_leaves_no_selection_to_inflate():
    inflation = np.array([season.play().inflation for season in
                          seasons("provisional", "best-of-n-variants", 120, policy_params={"fresh_votes": 1500},
                                  n_variants=12, battles_per_variant=400)])
    assert abs(inflation.mean()) < stats.t.ppf(1 - LEVEL / 2, inflation.size - 1) * inflation.std(ddof=1) / math.sqrt(inflation.size)


def test_without_retraction_every_tested_variant_is_listed():
    result = play_season(SMALL, ARENA_POLICIES.make("plain-board", retraction=False),
                         ARENA_ATTACKS.make("best-of-n-variants", n_variants=4, battles_per_variant=400), 0, 1)
    assert (result.variants_tested, result.variants_listed) == (4, 4)


def test_the_margin_rule_lists_a_variant_only_when_it_beats_the_listed_one_by_the_margin_and_hides_the_others():
    season = seasons("margin-rule", "best-of-n-variants", 1, policy_params={"margin": 15.0}, n_variants=1)[0]
    feedback = season.test_variants(12, 300)
    listed_ratings = []
    for item in feedback:
        rating = season.variants[item.variant].private_rating
        if item.published:
            assert not listed_ratings or rating >= listed_ratings[-1] + 15.0
            listed_ratings.append(rating)
            assert item.rating == rating
        else:
            assert item.rating is None and rating < listed_ratings[-1] + 15.0
    assert season.listed() == [season.flagship] and season.publish(feedback[-1].variant) is feedback[-1].published


def test_the_upset_filter_drops_exactly_the_upsets_of_strong_favourites():
    policy = ARENA_POLICIES.make("upset-filter", threshold=0.8)
    expected = np.array([0.9, 0.9, 0.9, 0.1, 0.1, 0.5, 0.5])
    outcome = np.array([B_WINS, A_WINS, TIE, A_WINS, B_WINS, A_WINS, B_WINS])
    assert policy.keeps_votes(expected, outcome).tolist() == [False, True, True, False, True, True, True]


def test_a_rigging_voter_votes_for_its_model_wherever_it_sees_it():
    season = seasons("plain-board", "vote-rigging", 1, votes=400, strategy="t-abstain", accuracy=1.0)[0]
    season.attack.play(_client(season), np.random.default_rng(0))
    a, b, outcome = (np.concatenate(parts) for parts in zip(*season.extra))
    target = season.size + season.listed().index(season.flagship)
    assert ((a == target) & (outcome == A_WINS) | (b == target) & (outcome == B_WINS)).all()
    assert season.votes_cast == len(a) > 0


def test_min_et_als_online_elo_heuristic_chooses_as_their_code_does():
    """Their reward for a vote: the target's expected score against both models after a K = 4 Elo update."""
    class Session:
        models = ["t", "a", "b", "c"]
        target = 0
        perceived_a = np.array([1, 2, 1])
        perceived_b = np.array([2, 3, 0])

        def ratings(self):
            return np.array([1200.0, 1250.0, 1100.0, 1000.0])

    decisions = VoteRigging(strategy="omni-on")._frozen_votes(Session(), np.random.default_rng(0))
    def reward(ra, rb, rt=1200.0):
        return 1 / (1 + 10 ** ((ra - rt) / 400)) + 1 / (1 + 10 ** ((rb - rt) / 400))
    expected = []
    for a, b in ((1, 2), (2, 3)):
        ra, rb = Session().ratings()[a], Session().ratings()[b]
        ea = 1 / (1 + 10 ** ((rb - ra) / 400))
        eb = 1 - ea
        options = [reward(ra + 4 * eb, rb - 4 * eb), reward(ra - 4 * ea, rb + 4 * ea),
                   reward(ra - 2 * (ea - eb), rb + 2 * (ea - eb)), reward(ra, rb)]
        expected.append([A_WINS, B_WINS, TIE, ABSTAIN][int(np.argmax(options))])
    assert decisions.tolist() == [*expected, B_WINS]


def test_omnipresent_rigging_lifts_the_target_over_more_models_than_target_only_rigging():
    """A mid-table model (250 points below the best): omnipresent votes move every pair, not only the target's."""
    gains = {strategy: np.mean([season.play().rank_inflation for season in
                                seasons("plain-board", "vote-rigging", 8, newcomer_gap=-250.0, votes=1500, strategy=strategy,
                                        refit_every=50)])
             for strategy in ("t-abstain", "omni-on", "omni-bt")}
    assert gains["omni-bt"] > gains["t-abstain"] + 0.75 and gains["omni-on"] > gains["t-abstain"]


def test_more_sampling_weight_buys_more_variants_and_the_attack_sees_no_truth():
    season = seasons("plain-board", "sampling-advantage", 1, weight=1.0)[0]
    client = _client(season)
    counts = [ARENA_ATTACKS.make("sampling-advantage", weight=w, window=20000, battles_per_variant=500).variants(client)
              for w in (1.0, 4.0, 16.0)]
    assert counts[0] < counts[1] < counts[2]
    assert {name for name in vars(client)} == {"test_variants", "publish", "voting", "leaderboard", "battle_share"}


def test_the_families_registry_reads_a_family_with_parameters():
    family_id, params = ARENA_FAMILIES.parse("pairwise(models=12, lifetime=0.5)")
    assert ARENA_FAMILIES.checked(family_id, params).models == 12
    with pytest.raises(ValueError, match="providers .* must not exceed models"):
        ARENA_FAMILIES.checked("pairwise", {"models": 3, "providers": 5})


def _client(season):
    from ladderlab.arena.season import _Client

    return _Client(season)


def test_the_count_form_integrates_the_answers_style_as_the_battle_by_battle_draws_do():
    """One pair, votes drawn battle by battle with each answer's own style, against the integrated probabilities."""
    family = PairwiseArena(models=2, providers=1, battles=60000, style_effect=150.0, tie_rate=0.3)
    rng = np.random.default_rng(8)
    pool = family.pool(rng)
    battles, _ = family.battles_of(rng, pool)
    first = np.array([pool.names.index(name) for name in battles.models])[battles.a]
    expected = family.vote_probabilities(pool.strength[first] - pool.strength[1 - first],
                                         pool.style[first] - pool.style[1 - first])
    for code, column in ((A_WINS, 0), (TIE, 1)):
        assert _inside(int((battles.outcome == code).sum()), len(battles), float(expected[:, column].mean()))
