"""An attacker with several accounts (issue 28, item 6): each account its own mechanism state and
budget, the final prediction on a fresh one, in duels, scenarios and certificates."""

import hashlib
import json
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.attack import Attack
from ladderlab.board import BudgetExceeded
from ladderlab.certification import certify as certification
from ladderlab.competition.accounts import duel_with_accounts, probe_budget
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs.duel import spec
from ladderlab.runs.runner import check_accounts
from ladderlab.runs.scenario import Scenario, cells
from ladderlab.seeding import stream

seeds = st.integers(0, 2**32 - 1)
N = 200


class Recorder(Attack):
    """Submits ``rows`` random label vectors in blocks of ``block`` (``extra`` more at the end)
    and keeps every submission and release in ``seen``; returns the first vector."""

    id = "recorder"
    reference = "test"
    seen: ClassVar[list[tuple[np.ndarray, np.ndarray]]] = []

    def __init__(self, rows: int = 30, block: int = 7, extra: int = 0):
        self.rows, self.block, self.extra = rows, block, extra

    def run(self, board, data, rng):
        P = rng.integers(0, 2, (self.rows, board.holdout_size)).astype(float)
        released = np.concatenate([board.submit_many(P[start:start + self.block])
                                   for start in range(0, self.rows, self.block)])
        Recorder.seen.append((P, released))
        if self.extra:
            board.submit_many(P[: self.extra])
        return P[0]


def task():
    return TASKS.make("random-labels", n_public=N, n_holdout=3 * N)


def split_of(seed, replication):
    return task().split(stream(seed, "task", spec(task()), replication))


def ladder_releases(split, P):
    """What one fresh Ladder bound to the split's public labels releases for ``P``."""
    ladder = MECHANISMS.make("ladder", eta=0.01).bind_to(split.public, split.y_public, np.random.default_rng(0))
    return ladder.submit_many(P[:, split.public_rows])


@given(seed=seeds, accounts=st.integers(2, 5))
@settings(max_examples=10, deadline=None)
def test_each_probe_account_has_its_own_state_and_budget(seed, accounts):
    """With 10 submissions per account, an attacker with A accounts makes 10·(A − 1) probes, and
    the releases are those of A − 1 fresh Ladders fed 10 submissions each (the Ladder is
    deterministic, so its random stream does not matter); linked, of one Ladder fed them all."""
    for linked in (False, True):
        Recorder.seen.clear()
        rows = probe_budget(10, accounts)
        duel_with_accounts(task(), MECHANISMS.make("ladder", eta=0.01), Recorder(rows=rows), seed, 0, 10, accounts,
                           linked=linked)
        (P, released), = Recorder.seen
        split = split_of(seed, 0)
        expected = (ladder_releases(split, P) if linked else
                    np.concatenate([ladder_releases(split, P[start:start + 10]) for start in range(0, rows, 10)]))
        np.testing.assert_array_equal(released, expected)


def test_the_probe_accounts_hold_no_more_than_their_budgets():
    with pytest.raises(BudgetExceeded):
        duel_with_accounts(task(), MECHANISMS.make("ladder"), Recorder(rows=20, extra=1), 0, 0, 10, 3)


@given(seed=seeds)
@settings(max_examples=5, deadline=None)
def test_delta_is_the_final_predictions_release_on_a_fresh_account(seed):
    """The main account sees only the final prediction: on a fresh Ladder its release is its public
    score rounded to η, and Δ is that release minus its final-set score."""
    Recorder.seen.clear()
    result = duel_with_accounts(task(), MECHANISMS.make("ladder", eta=0.01), Recorder(rows=5), seed, 0, 5, 4)
    (P, _), = Recorder.seen
    split = split_of(seed, 0)
    final_score = float(np.mean(P[0, split.final_rows] != split.y_final))
    assert result.final_released == ladder_releases(split, P[:1])[0]
    assert result.final_final == pytest.approx(final_score)
    assert result.delta == pytest.approx(result.final_released - final_score)
    assert result.submissions == 5 and result.loss_bound == 1.0


def test_a_sybil_may_leave_accounts_unused():
    result = duel_with_accounts(task(), MECHANISMS.make("ladder"), Recorder(rows=3, block=3), 0, 0, 10, 6)
    assert result.submissions == 3


def test_one_account_keeps_the_keys_of_existing_run_directories():
    """A scenario without accounts keeps its identity and its cells' file names."""
    table = {"schema_version": 1, "name": "keys", "replications": 1, "matrix": [
        {"tasks": [{"id": "random-labels", "params": {"n_public": N, "n_holdout": 3 * N}}],
         "mechanisms": [{"id": "ladder"}], "attacks": [{"id": "boosting", "params": {"k": 10}, "budget": 10}]}]}
    scenario = Scenario.model_validate(table)
    cell, = cells(scenario)
    before = json.dumps([cell.task, cell.mechanism, cell.attack, cell.budget, cell.oracle], sort_keys=True, default=str)
    assert cell.key == hashlib.sha256(before.encode()).hexdigest()[:20]
    table["matrix"][0]["attacks"][0]["accounts"] = 1
    assert Scenario.model_validate(table).identity() == scenario.identity()
    table["matrix"][0]["attacks"][0]["accounts"] = 3
    several = Scenario.model_validate(table)
    assert several.identity() != scenario.identity()
    assert cells(several)[0].key != cell.key and cells(several)[0].accounts == 3


def test_several_accounts_are_refused_where_a_competition_cannot_play():
    table = {"schema_version": 1, "name": "sybil", "replications": 1, "matrix": [
        {"tasks": [{"id": "random-labels"}], "mechanisms": [{"id": "ladder"}],
         "attacks": [{"id": "boosting", "budget": 10, "accounts": 3}]}]}
    scenario = Scenario.model_validate(table)
    with pytest.raises(ValueError, match="several accounts.*isolation='process'"):
        check_accounts(scenario, "process", None)
    with pytest.raises(ValueError, match="several accounts.*secret seed"):
        check_accounts(scenario, "none", 1234)
    check_accounts(scenario, "none", None)
    table["matrix"][0]["attacks"][0].pop("budget")
    with pytest.raises(ValueError, match="accounts = 3 needs a budget"):
        Scenario.model_validate(table)


def test_a_certificate_against_several_accounts(tmp_path):
    """The attack's strength grid is that of the (A − 1) · budget submissions it probes with, every
    battery cell plays with A accounts (the honest participant with one), and the certificate says A."""
    certificate = certification.certify("ladder", n=N, budgets=[10], attacks=["boosting(variant='kaggle')"],
                                        default_battery=False, replications=3, honest_replications=2, accounts=4,
                                        run_dir=tmp_path / "battery", scorer="zero-one")
    assert certificate["accounts"] == 4
    row, = certificate["battery"]
    assert row["verdict"] != "did not play"
    assert {point["params"]["k"] for point in row["grid"]} == {30}
    manifest = json.loads((tmp_path / "battery" / "manifest.json").read_text())
    accounts = {(cell["attack"][0], cell["accounts"]) for cell in manifest["cells"]}
    assert accounts == {("boosting", 4), ("improving", 1)}
    assert "holds 4 accounts" in certification.markdown(certificate)


def test_the_accounts_table_shows_that_a_stateless_release_gains_nothing_from_linking():
    """Kaggle's release depends on the submission alone, so linking its accounts changes no
    release: the two columns agree exactly; the text names every setting."""
    from ladderlab.competition.accounts import accounts_table, table_text

    row, = accounts_table(n=N, budget=10, accounts=3, replications=3, mechanisms=["kaggle"])
    assert list(row.delta) == ["1 account", "3 accounts", "3 linked"]
    assert row.delta["3 accounts"] == row.delta["3 linked"]
    text = table_text([row], N, 10, 3, 0.95)
    assert "kaggle" in text and "3 linked" in text and "10 submissions per account" in text


def test_the_work_estimate_counts_every_probe_account():
    from ladderlab.runs.workload import scenario_work

    def submissions(accounts):
        attack = {"id": "boosting", "params": {"k": 1000}, "budget": 10, "accounts": accounts}
        return scenario_work(Scenario.model_validate({"schema_version": 1, "name": "work", "replications": 2, "matrix": [
            {"tasks": [{"id": "random-labels", "params": {"n_public": N, "n_holdout": 3 * N}}],
             "mechanisms": [{"id": "ladder"}], "attacks": [attack]}]})).submissions

    assert submissions(5) == 4 * submissions(1)
