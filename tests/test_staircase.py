"""The staircase attack: hill climbing with blocks sized to the Ladder's step breaks a certificate
that hill climbing's own grid (blocks up to √n) leaves standing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.competition import Rules, TeamSpec, play_competition
from ladderlab.competition.accounts import duel_with_accounts
from ladderlab.engines.linking import LinkRule
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel, open_board, spec
from ladderlab.seeding import stream
from tests.helpers import clopper_pearson

FAILURE = 1e-6
"""Each one-sided Clopper–Pearson bound below fails with at most this probability."""
TAU = 0.05
N_PUBLIC, BUDGET = 2000, 300


def deltas(attack_id: str, params: dict, seed: int, replications: int) -> np.ndarray:
    """Δ of ``replications`` duels against the Ladder at η = 0.005, the setting that
    ``certify ladder --n 2000 --budgets 300 --tune`` recommended before the staircase."""
    task = TASKS.make("random-labels", n_public=N_PUBLIC, n_holdout=3 * N_PUBLIC)
    return np.array([duel(task, MECHANISMS.make("ladder", eta=0.005), ATTACKS.make(attack_id, **params),
                          seed=seed, replication=r, budget=BUDGET).delta for r in range(replications)])


def test_the_staircase_grid_starts_where_hill_climbing_stops_and_flips_labels_only():
    hill = ATTACKS.get("hill-climbing").strength_grid(BUDGET, N_PUBLIC)
    stairs = ATTACKS.get("staircase").strength_grid(BUDGET, N_PUBLIC)
    assert [p["block"] for p in stairs] == [64, 128, 256, 512, 1024]
    assert min(p["block"] for p in stairs) == 2 * max(p["block"] for p in hill)
    regression = TASKS.make("gaussian-regression", n_samples=150, n_features=10).split(np.random.default_rng(0))
    assert "label vectors" in ATTACKS.make("staircase").incompatibility(regression.public)


@pytest.mark.slow  # 390 duels; the grid and the fixed-Ladder tests below check the climb itself by default
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=1, deadline=None)
def test_the_staircase_overfits_the_ladder_beyond_tau_where_every_hill_climb_of_its_grid_does_not(seed):
    """Median Δ below −τ for the staircase (block 256): P(Δ < −τ) > ½, exact lower bound over 150
    replications (about 85% measured). Hill climbing's whole grid (blocks 1 … 32, the worst block in
    each replication) stays above −τ: P(min Δ < −τ) < ½, exact upper bound over 40 replications
    (0 of 60 measured). A staircase of hill climbing's largest block (32) fails the first bound."""
    stairs = deltas("staircase", {"k": BUDGET, "block": 256}, seed, 150)
    assert clopper_pearson(int(np.sum(stairs < -TAU)), stairs.size, 1 - 2 * FAILURE)[0] > 0.5
    grid = ATTACKS.get("hill-climbing").strength_grid(BUDGET, N_PUBLIC)
    worst = np.min([deltas("hill-climbing", params, seed, 40) for params in grid], axis=0)
    assert clopper_pearson(int(np.sum(worst < -TAU)), worst.size, 1 - 2 * FAILURE)[1] < 0.5


def test_the_fixed_ladders_held_releases_leave_the_staircase_climbing_as_hill_climbing_does():
    """Against the fixed Ladder the held releases are exact copies, so the estimated noise is 0
    and the staircase keeps exactly the candidates hill climbing keeps: with the same coins, the
    same transcript and final prediction."""
    split = TASKS.make("random-labels", n_public=500, n_holdout=1500).split(np.random.default_rng(5))
    plays = []
    for attack_id in ("staircase", "hill-climbing"):
        board = open_board(split, MECHANISMS.make("ladder", eta=0.005), np.random.default_rng(6))
        final = ATTACKS.make(attack_id, k=200, block=64).run(board, split.public, np.random.default_rng(7))
        plays.append((board.transcript, final))
    assert np.array_equal(plays[0][0], plays[1][0]) and np.array_equal(plays[0][1], plays[1][1])
    assert plays[0][0].size == 200


def test_the_staircase_tells_ladderboots_noise_from_an_acceptance():
    """The cheap sibling of the paired comparison below: against LadderBoot, whose every release
    carries fresh bootstrap noise, the noise-aware rule keeps other candidates than the plain rule
    on the same coins (a staircase that ignored ``noise_multiple`` would play both alike), and it
    keeps fewer: a release within 4 estimated deviations of the current mean is noise."""
    split = TASKS.make("random-labels", n_public=1000, n_holdout=3000).split(np.random.default_rng(3))
    plays = {}
    for multiple in (4.0, 0.0):
        board = open_board(split, MECHANISMS.make("ladder-boot", b=50), np.random.default_rng(4))
        attack = ATTACKS.make("staircase", k=100, block=64, noise_multiple=multiple)
        plays[multiple] = (attack.run(board, split.public, np.random.default_rng(5)), attack.accepted_steps_)
    assert not np.array_equal(plays[4.0][0], plays[0.0][0])
    assert plays[4.0][1] < plays[0.0][1]


@pytest.mark.slow
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=1, deadline=None)
def test_telling_ladderboots_noise_from_an_acceptance_is_what_climbs_it(seed):
    """LadderBoot (Chaibub Neto et al. Alg. 4) releases fresh bootstrap noise around the best's score
    at every submission, so hill climbing's rule (keep what was released lower) keeps rejected
    candidates half the time. Keeping only releases more than 4 estimated noise deviations below
    the current point's mean release overfits more in a paired comparison: P(Δ lower) > ½, exact
    lower bound over 60 replications at n = 4000 and 300 submissions (38 of 40 measured; median
    Δ −0.054 against −0.007). The staircase with ``noise_multiple=0`` (the wrong rule) is that
    comparison's other side, so a staircase that ignored the noise would fail it."""
    task = TASKS.make("random-labels", n_public=4000, n_holdout=12000)

    def deltas_against_ladder_boot(noise_multiple: float) -> np.ndarray:
        return np.array([duel(task, MECHANISMS.make("ladder-boot"),
                              ATTACKS.make("staircase", k=300, block=128, noise_multiple=noise_multiple),
                              seed=seed, replication=r).delta for r in range(60)])

    aware, plain = deltas_against_ladder_boot(4.0), deltas_against_ladder_boot(0.0)
    assert clopper_pearson(int(np.sum(aware < plain)), aware.size, 1 - 2 * FAILURE)[0] > 0.5


def test_the_linking_wrapper_never_links_a_staircase_whose_steps_change_more_than_its_min_disagreement():
    """A known limit of the linking rule (docs/certification.md#linking): every candidate of a
    climb with blocks of 512 of 6000 rows differs from the last on 8.5 % of the rows, above the
    rule's 5 %, so five accounts under the wrapper are never linked and play exactly as five
    unlinked accounts do. With blocks of 16 (0.3 %) the same climb is linked."""
    task = TASKS.make("random-labels", n_public=2000, n_holdout=6000)
    split = task.split(stream(13, "task", spec(task), 0))

    def links(block: int) -> list:
        team = TeamSpec(ATTACKS.make("staircase", k=1200, block=block), accounts=5, label="staircase")
        result = play_competition(split, MECHANISMS.make("ladder"), [team], Rules(rounds=1, per_round=300,
                                  selection="last"), 13, 0, spec(task), link=LinkRule())
        return result.links

    assert links(512) == [] and links(16) != []
    linked, unlinked = (duel_with_accounts(task, MECHANISMS.make("ladder"), ATTACKS.make("staircase", k=1200, block=512),
                                           seed=13, replication=0, budget=300, accounts=5, link=link)
                        for link in (LinkRule(), None))
    assert (linked.delta, linked.leaderboard_error) == (unlinked.delta, unlinked.leaderboard_error)
