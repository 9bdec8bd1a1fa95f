"""Co-location (ladderlab.isolation.colocation): during an isolated duel or competition the organiser's
thread and its attack process run on one CPU, the organiser's own allowed set comes back
afterwards (also when the duel raises), and where the kernel refuses or there is one CPU
nothing is pinned and the duel gives the same results."""

import errno
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from ladderlab.board import Board
from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.competition.engine import CompetitionBoard
from ladderlab.isolation import colocation, sandbox
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel
from tests.test_isolation import mode  # noqa: F401  (each sandbox mode)

DATA = Path(__file__).parent / "data"
REPORTS_ITS_CPUS = f"{DATA / 'affinity_attack.py'}:ReportsItsCpus"
FAILS_AFTER_SUBMITTING = f"{DATA / 'affinity_attack.py'}:FailsAfterSubmitting"
ALLOWED = frozenset(os.sched_getaffinity(0))

needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="co-location needs two CPUs to choose from")


@pytest.fixture(autouse=True)
def own_claims(monkeypatch, tmp_path):
    """CPU claims of this test alone (other runs on the machine claim CPUs too)."""
    monkeypatch.setattr(colocation, "CLAIMS", tmp_path)


def random_labels():
    return TASKS.make("random-labels", n_public=100, n_holdout=300)


@pytest.fixture
def organiser_cpus(monkeypatch):
    """The organiser's allowed CPUs each time a board scores a submission, in order."""
    seen: list[frozenset[int]] = []
    for board in (Board, CompetitionBoard):
        def recording(self, *args, _submit_many=board.submit_many, **kwargs):
            seen.append(frozenset(os.sched_getaffinity(0)))
            return _submit_many(self, *args, **kwargs)

        monkeypatch.setattr(board, "submit_many", recording)
    yield seen
    os.sched_setaffinity(0, ALLOWED)


def isolated_duel(attack: str = REPORTS_ITS_CPUS, seed: int = 3):
    return duel(random_labels(), MECHANISMS.make("kaggle"), ATTACKS.make(attack, k=4), seed=seed, isolation="process")


@needs_two_cpus
def test_the_attack_process_and_the_organiser_share_one_cpu_during_each_duel(mode, organiser_cpus):
    for seed in (3, 4):  # a new attack process, then the same one kept for the next duel
        organiser_cpus.clear()
        result = isolated_duel(seed=seed)
        assert len(set(organiser_cpus)) == 1 and len(organiser_cpus[0]) == 1
        assert result.marks["cpus"] == sorted(organiser_cpus[0])
        assert os.sched_getaffinity(0) == ALLOWED


@needs_two_cpus
def test_the_organisers_cpus_come_back_when_the_duel_raises(organiser_cpus):
    with pytest.raises(ValueError, match="fails on purpose"):
        isolated_duel(FAILS_AFTER_SUBMITTING)
    assert len(organiser_cpus[0]) == 1
    assert os.sched_getaffinity(0) == ALLOWED


@needs_two_cpus
def test_an_isolated_competition_pins_the_organiser_while_its_teams_play_and_restores_it(organiser_cpus):
    teams = [TeamSpec(REPORTS_ITS_CPUS, {"k": 3}, count=2), TeamSpec("boosting", {"k": 10})]
    compete(random_labels(), MECHANISMS.make("kaggle"), teams, Rules(rounds=3, per_round=5), seed=2,
            isolation="process")
    assert organiser_cpus and len(set(organiser_cpus)) == 1 and len(organiser_cpus[0]) == 1
    assert os.sched_getaffinity(0) == ALLOWED


def assert_nothing_pinned(result, organiser_cpus, allowed):
    assert set(organiser_cpus) == {allowed}
    assert result.marks["cpus"] == sorted(allowed)
    assert os.sched_getaffinity(0) == allowed


def test_where_the_kernel_refuses_nothing_is_pinned_and_the_duel_is_the_same(monkeypatch, organiser_cpus):
    pinned = isolated_duel()

    def refused(pid, cpus):
        if set(cpus) != ALLOWED:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))

    monkeypatch.setattr(os, "sched_setaffinity", refused)  # in the organiser only: the attack adopts its set
    organiser_cpus.clear()
    refused_result = isolated_duel()
    assert_nothing_pinned(refused_result, organiser_cpus, ALLOWED)
    np.testing.assert_array_equal(refused_result.released, pinned.released)
    assert refused_result.final_final == pinned.final_final


def test_with_one_allowed_cpu_nothing_is_pinned_and_the_attack_keeps_to_it(organiser_cpus):
    only = frozenset({min(ALLOWED)})
    os.sched_setaffinity(0, only)
    assert_nothing_pinned(isolated_duel(), organiser_cpus, only)


def test_when_other_duels_claim_every_cpu_nothing_is_pinned(organiser_cpus):
    claims = [colocation._claim(cpu) for cpu in ALLOWED]
    try:
        assert None not in claims
        assert_nothing_pinned(isolated_duel(), organiser_cpus, ALLOWED)
    finally:
        for claim in claims:
            os.close(claim)


@needs_two_cpus
def test_two_threads_in_duels_at_once_claim_different_cpus():
    inside, leave = threading.Barrier(3), threading.Event()
    chosen: list[frozenset[int]] = []

    def play():
        with colocation.colocated() as cpus:
            chosen.append(cpus)
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=play) for _ in range(2)]
    for thread in threads:
        thread.start()
    inside.wait()
    leave.set()
    for thread in threads:
        thread.join()
    assert all(len(cpus) == 1 for cpus in chosen) and chosen[0] != chosen[1]


def test_ladderlab_pin_0_turns_co_location_off(monkeypatch, organiser_cpus):
    monkeypatch.setenv(colocation.SWITCH, "0")
    assert_nothing_pinned(isolated_duel(), organiser_cpus, ALLOWED)


def test_an_attack_process_told_a_cpu_the_kernel_refuses_stays_where_it_is():
    before = os.sched_getaffinity(0)
    colocation.adopt([1 << 20])  # beyond any CPU: EINVAL
    assert os.sched_getaffinity(0) == before


@needs_two_cpus
def test_a_sandbox_server_started_during_a_duel_gets_the_organisers_whole_set():
    with colocation.colocated() as cpus:
        assert len(cpus) == 1 and os.sched_getaffinity(0) == cpus
        server = sandbox.Sandbox(sandbox.View())
        try:
            assert os.sched_getaffinity(server._process.pid) == ALLOWED
        finally:
            server.close()
        assert os.sched_getaffinity(0) == cpus
    assert os.sched_getaffinity(0) == ALLOWED
