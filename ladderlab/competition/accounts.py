"""Duels against an attacker with several accounts (a Sybil; issue 28, item 6).

A leaderboard's guarantees hold per state: the Ladder's description-length argument
(Blum & Hardt, Theorem 3.1), the noise of Thresholdout or of a noisy release, the
budget. An attacker who registers A accounts gets A states. The competition engine
(:mod:`ladderlab.competition`) already plays such a team: it probes on A − 1 accounts,
each with its own bound copy of the mechanism and the rules' cap, filling one account's
quota before the next, and submits its final prediction on the main account, the only
one ranked. A duel with ``accounts = A`` is that competition with one team, one round,
``budget`` submissions per account (so the attack has (A − 1) · budget) and the final
submission selected.

Its measures are those of the main account (Blum & Hardt Def. 2.1): the release of the
final prediction on a fresh state, and Δ = that release − its final-set score. The
leaderboard error compares the release with the population score where the task knows
it (the competition's definition). The engine keeps no exact public score, so a
duel's ``public`` and ``final_public`` are NaN here. ``linked = True`` gives all accounts one mechanism
state (what a mechanism with ``shared_state`` does, or a wrapper that links every
account): the submissions still come from A − 1 budgets. ``link`` (a
:class:`~ladderlab.engines.linking.LinkRule`) plays the accounts under the linking wrapper instead: accounts
whose submissions are near-identical are linked as they submit and answered by one state from then
on (:mod:`ladderlab.engines.linking`).

Such a duel is a kind of cell of its own (:class:`SybilDuels`, :mod:`ladderlab.runs.cell_kinds`): a
``[[matrix]]`` attack entry with ``accounts`` ≥ 2 makes it, and the runner plays it through this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ladderlab.attack import Attack
from ladderlab.competition import Rules, TeamSpec, play_competition
from ladderlab.engines.linking import LinkRule
from ladderlab.mechanism import Mechanism
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import runner
from ladderlab.runs.duel import DuelResult, duel, spec
from ladderlab.runs.duels import DuelKind
from ladderlab.runs.scenario import Cell
from ladderlab.scoring import get_scorer
from ladderlab.seeding import stream
from ladderlab.stats.sequential import median_interval
from ladderlab.tasks import Task
from ladderlab.utils.progress import progress_bar


def probe_budget(budget: int, accounts: int) -> int:
    """The submissions an attacker with ``accounts`` accounts of ``budget`` each has for probing:
    all of one account's, or those of the A − 1 accounts it probes on."""
    return budget * max(1, accounts - 1)


def duel_with_accounts(task: Task, mechanism: Mechanism, attack: Attack, seed: int, replication: int, budget: int,
                       accounts: int, linked: bool = False, link: LinkRule | None = None) -> DuelResult:
    """One duel in which ``attack`` holds ``accounts`` ≥ 2 accounts of ``budget`` submissions each (see the
    module docstring). The task's data are those of :func:`ladderlab.runs.duel.duel` with the same seed and
    replication; raises :class:`~ladderlab.runs.duel.Incompatible` when the pair cannot play."""
    if isinstance(accounts, bool) or not isinstance(accounts, int) or accounts < 2:
        raise ValueError(f"accounts must be a whole number ≥ 2 for a duel with several accounts, got {accounts!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be a whole number ≥ 1 submissions per account, got {budget!r}")
    if linked and link is not None:
        raise ValueError("linked (every account one state from the start) and link (a linking rule) exclude each other")
    task.validate_params()
    task_spec = spec(task)
    split = task.split(stream(seed, "task", task_spec, replication))
    team = TeamSpec(attack, accounts=accounts, label=attack.id)
    rules = Rules(rounds=1, per_round=budget, selection="last")
    result = play_competition(split, mechanism, [team], rules, seed, replication, task_spec, shared=linked, link=link)
    released, final = float(result.released_final[0]), float(result.private[0])
    sign = get_scorer(split.public.scorer).sign
    return DuelResult(
        released=np.array([released]),
        public=np.array([math.nan]),
        final=np.array([final]),
        population=split.population_score,
        leaderboard_error=float(result.leaderboard_errors[0]),
        final_released=released,
        final_public=math.nan,
        final_final=final,
        delta=released - final,
        optimism=sign * (final - released),
        submissions=int(result.submissions[0]),
        reported=0,
        loss_bound=result.loss_bound,
    )


class SybilDuels(DuelKind):
    """Duels whose attacker holds several accounts (``accounts`` ≥ 2 in a ``[[matrix]]`` attack entry):
    a duel cell in every respect but how a replication is played, :func:`duel_with_accounts`."""

    name: ClassVar[str] = "sybil-duel"
    table_key: ClassVar[str | None] = None

    def play(self, cell: Cell, seed: int, replication: int, isolation: str = "none", secret_seed: int | None = None,
             isolated: Any = None) -> dict[str, Any]:
        def with_accounts(task: Task, mechanism: Mechanism, attack: Attack) -> DuelResult:
            return duel_with_accounts(task, mechanism, attack, seed, replication, cell.budget, cell.accounts,
                                      link=LinkRule() if cell.link else None)

        return runner.run_replication(cell, seed, replication, isolation, secret_seed, isolated, play=with_accounts)


SYBIL_DUELS = SybilDuels()
"""The kind of the duels with several accounts (entry point ``sybil-duel``)."""


SYBIL_ATTACKS: tuple[tuple[str, dict[str, Any]], ...] = (("boosting", {"variant": "kaggle"}), ("boosting", {"variant": "ladder"}))
"""The attacks of the accounts table (:func:`accounts_table`), each with k = every probe it has."""


@dataclass(frozen=True)
class AccountsRow:
    """One mechanism's overfitting by the worst of :data:`SYBIL_ATTACKS`: the median Δ/B with its
    interval, per setting (one account, A accounts with their own states, A accounts linked)."""

    mechanism: str
    delta: dict[str, tuple[float, float, float]]


def accounts_table(n: int = 200, budget: int = 100, accounts: int = 5, replications: int = 10, seed: int = 0,
                   confidence: float = 0.95, mechanisms: list[str] | None = None,
                   progress: bool | None = False, wrapper: bool = False) -> list[AccountsRow]:
    """What ``accounts`` accounts of ``budget`` submissions buy an attacker against each built-in mechanism
    (default parameters) on random labels at public size ``n``: the median Δ/B (with its
    sign-test interval at ``confidence``) of the worst attack, with one account, with ``accounts``
    accounts each with its own state, and with them linked into one state; ``wrapper`` adds the
    accounts under the linking wrapper (:mod:`ladderlab.engines.linking`, its default rule)."""
    task = TASKS.make("random-labels", n_public=n, n_holdout=3 * n)
    settings: dict[str, tuple[int, bool | None]] = {"1 account": (1, False), f"{accounts} accounts": (accounts, False),
                                                     f"{accounts} linked": (accounts, True)}
    if wrapper:
        settings[f"{accounts} by the wrapper"] = (accounts, None)
    rows = []
    for mechanism_id in progress_bar(mechanisms or MECHANISMS.ids(), progress=progress, desc="mechanisms"):
        delta = {}
        for name, (count, linked) in settings.items():
            worst = None
            for attack_id, params in SYBIL_ATTACKS:
                attack = ATTACKS.make(attack_id, **params, k=probe_budget(budget, count))
                values = []
                for replication in range(replications):
                    mechanism = MECHANISMS.make(mechanism_id)
                    result = (duel(task, mechanism, attack, seed, replication, budget=budget) if count == 1 else
                              duel_with_accounts(task, mechanism, attack, seed, replication, budget, count, bool(linked),
                                                 link=LinkRule() if linked is None else None))
                    values.append(result.delta / (result.loss_bound or 1.0))
                interval = median_interval(values, confidence)
                if worst is None or interval[0] < worst[0]:
                    worst = interval
            delta[name] = worst
        rows.append(AccountsRow(mechanism_id, delta))
    return rows


def table_text(rows: list[AccountsRow], n: int, budget: int, replications: int, confidence: float) -> str:
    """The accounts table as text (``ladderlab dev bench --accounts``'s output)."""
    names = list(rows[0].delta)
    lines = [f"median Δ/B [{100 * confidence:g}% CI] of the worse of "
             f"{', '.join(plugin_label(a, p) for a, p in SYBIL_ATTACKS)} (k = every probe), random labels, n = {n}, "
             f"{budget} submissions per account, {replications} replications; 'linked': one mechanism state for all accounts"
             + ("; 'by the wrapper': linked by ladderlab.engines.linking's default rule" if any("wrapper" in name for name in names)
                else ""),
             f"{'mechanism':<22}" + "".join(f"{name:>28}" for name in names)]
    for row in rows:
        lines.append(f"{row.mechanism:<22}" + "".join(
            f"{f'{m:+.3f} [{lo:+.3f}, {hi:+.3f}]':>28}" for m, lo, hi in (row.delta[name] for name in names)))
    return "\n".join(lines) + "\n"
