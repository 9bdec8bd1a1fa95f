"""Throughput of every mechanism: submissions per second, batched and one at a time.

The workload is the boosting attack's (Blum & Hardt §5): random 0/1 vectors scored
with the 0/1 loss against random labels, so the Ladders accept rarely, as under
attack. Each measurement repeats until it has run for ``seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ladderlab.duel import duel
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS

BENCHMARK_PARAMS = {"ladder-boot": {"b": 1000}, "bayesboot-ladder": {"B": 1000}, "bayesboot-ladderboot": {"B": 1000, "b": 1000}}


@dataclass(frozen=True)
class Throughput:
    mechanism: str
    n: int
    batched_per_second: float
    single_per_second: float


def _rate(submit, predictions: np.ndarray, seconds: float, batched: bool) -> float:
    done, start = 0, time.perf_counter()
    while True:
        if batched:
            submit(predictions)
            done += predictions.shape[0]
        else:
            for row in predictions[: max(1, predictions.shape[0] // 10)]:
                submit(row)
                done += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def measure(mechanism_id: str, n: int, seconds: float = 1.0, batch: int = 1000) -> Throughput:
    """Submissions per second of one mechanism at holdout size n."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, n).astype(float)
    predictions = rng.integers(0, 2, (batch, n)).astype(float)
    params = BENCHMARK_PARAMS.get(mechanism_id, {})
    rates = []
    for batched in (True, False):
        mechanism = MECHANISMS.make(mechanism_id, **params).bind(labels, "zero-one", np.random.default_rng(1))
        submit = mechanism.submit_many if batched else mechanism.submit
        rates.append(_rate(submit, predictions, seconds, batched))
    return Throughput(mechanism_id, n, *rates)


def run(sizes: tuple[int, ...] = (200, 4000), seconds: float = 1.0) -> Iterator[Throughput]:
    """Throughput of every registered mechanism at each holdout size."""
    for mechanism_id in MECHANISMS.ids():
        for n in sizes:
            yield measure(mechanism_id, n, seconds)


DUELS = [
    ("gaussian-regression", {}, "ladder-boot", {"b": 1000}, "step-forward", {"iterations": 5, "jump": "binseg", "changepoints": 1}),
    ("gaussian-regression", {}, "ladder-t", {}, "freedman", {"k": 10}),
    ("random-labels", {}, "kaggle", {}, "boosting", {"k": 400}),
    ("random-labels", {}, "ladder-free", {}, "boosting", {"k": 400, "variant": "ladder"}),
]


@dataclass(frozen=True)
class DuelTiming:
    description: str
    submissions: int
    seconds_per_replication: float


def time_duels(replications: int = 5) -> Iterator[DuelTiming]:
    """Wall time of one replication of the papers' duels (task drawn, attack played, scored)."""
    for task_id, task_params, mechanism_id, mechanism_params, attack_id, attack_params in DUELS:
        task = TASKS.make(task_id, **task_params)
        start = time.perf_counter()
        for replication in range(replications):
            result = duel(
                task,
                MECHANISMS.make(mechanism_id, **mechanism_params),
                ATTACKS.make(attack_id, **attack_params),
                replication=replication,
            )
        elapsed = (time.perf_counter() - start) / replications
        described = f"{attack_id}{attack_params} vs {mechanism_id}{mechanism_params} on {task_id}"
        yield DuelTiming(described, result.submissions, elapsed)
