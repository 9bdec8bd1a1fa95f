"""Throughput of every mechanism, batched and one at a time, against a plain numpy loop and the bare loss.

The workload is the boosting attack's (Blum & Hardt §5): random 0/1 vectors scored
with the 0/1 loss against random labels, so the Ladders accept rarely, as under
attack, and every submission is tested against a fixed best. In the same process
each mechanism is compared with

- a *plain loop*: a direct numpy transcription of its algorithm that handles one
  submission at a time (``REFERENCE_LOOPS``; LadderBoot's draws the b × n bootstrap
  indices, the Bayesian-bootstrap Ladders call ``rng.dirichlet`` for every
  submission, as the papers' pseudo-code reads);
- the *bare loss*: the mean 0/1 loss of every row of the batch, one numpy expression,
  the least any mechanism must compute.

Each rate is the best of repeated timings (fresh mechanisms, ``seconds`` per
measurement), the usual way to time code on a shared machine. The timings of one
mechanism and its references take turns, round after round, so that a ratio compares
timings made under the same load even when the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import ladderlab
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import arguments, workload
from ladderlab.runs.duel import duel
from ladderlab.runs.rundir import machine, write_atomically
from ladderlab.runs.workload import add_force_option, check_work
from ladderlab.utils import cpu_time
from ladderlab.utils.progress import progress_bar

FloatArray = np.ndarray
BENCHMARK_PARAMS = {"ladder-boot": {"b": 1000}, "bayesboot-ladder": {"B": 1000}, "bayesboot-ladderboot": {"B": 1000, "b": 1000}}
CHEAP = ("kaggle", "full-disclosure", "ladder", "ladder-free", "ladder-t")
"""Mechanisms whose work is the loss itself plus a comparison: batched should be within 3× of the bare loss."""
SINGLE_ROWS = 100
"""Submissions per timing of one-at-a-time ``submit``."""


def _t_critical(alpha: float, n: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(1 - alpha, n - 1))


def _score_loop(release: Callable[[float], float]) -> Callable:
    def loop(y: FloatArray, P: FloatArray, rng: np.random.Generator) -> FloatArray:
        out = np.empty(len(P))
        for i, p in enumerate(P):
            out[i] = release(np.mean(p != y))
        return out

    return loop


def _ladder_loop(y: FloatArray, P: FloatArray, rng: np.random.Generator, eta: float = 0.01) -> FloatArray:
    """Blum & Hardt Fig. 1."""
    out, current = np.empty(len(P)), np.inf
    for i, p in enumerate(P):
        risk = np.mean(p != y)
        if risk < current - eta:
            current = round(risk / eta) * eta
        out[i] = current
    return out


def _t_test_loop(critical: Callable[[int], float], b: int | None = None) -> Callable:
    """Chaibub Neto Algs. 2–4: the paired t-test Ladder; with ``b``, LadderBoot's release
    from b × n resampled indices (Alg. 4, lines 12–16)."""

    def loop(y: FloatArray, P: FloatArray, rng: np.random.Generator) -> FloatArray:
        n = y.size
        c = critical(n)
        out, current, best_risk, best_loss = np.empty(len(P)), np.inf, np.inf, np.zeros(n)
        for i, p in enumerate(P):
            loss = (p != y).astype(float)
            risk = loss.mean()
            reference = best_risk if b else current
            if risk < reference - c * np.std(loss - best_loss, ddof=1) / math.sqrt(n):
                best_loss, best_risk, current = loss, risk, round(risk * n) / n
            out[i] = best_loss[rng.integers(0, n, (b, n))].mean() if b else current
        return out

    return loop


def _bayesboot_loop(b: int | None = None, B: int = 1000, alpha: float = 0.15) -> Callable:
    """Chaibub Neto Algs. 5–6: B Dirichlet weight vectors per submission; with ``b``, the
    release is the mean of b bootstrap replicates of the best loss from b × n indices."""

    def loop(y: FloatArray, P: FloatArray, rng: np.random.Generator) -> FloatArray:
        n = y.size
        out, best_loss = np.empty(len(P)), None
        for i, p in enumerate(P):
            loss = (p != y).astype(float)
            if best_loss is None:
                improved = True
            else:
                W = rng.dirichlet(np.ones(n), B)
                probability = np.mean(W @ loss - W @ best_loss < 0)
                improved = probability < 1 and probability / (1 - probability) >= (1 - alpha) / alpha or probability == 1
            if improved:
                best_loss = loss
            out[i] = best_loss[rng.integers(0, n, (b, n))].mean() if b else round(best_loss.mean() * n) / n
        return out

    return loop


REFERENCE_LOOPS: dict[str, Callable[[FloatArray, FloatArray, np.random.Generator], FloatArray]] = {
    "full-disclosure": _score_loop(lambda risk: risk),
    "kaggle": _score_loop(lambda risk: round(risk / 1e-5) * 1e-5),
    "ladder": _ladder_loop,
    "ladder-free": _t_test_loop(lambda n: 1.0),
    "ladder-t": _t_test_loop(lambda n: _t_critical(0.15, n)),
    "ladder-boot": _t_test_loop(lambda n: _t_critical(0.15, n), b=1000),
    "bayesboot-ladder": _bayesboot_loop(),
    "bayesboot-ladderboot": _bayesboot_loop(b=1000),
}
"""Plain per-submission numpy transcriptions of the built-in mechanisms at ``BENCHMARK_PARAMS``."""


@dataclass(frozen=True)
class Throughput:
    """Submissions per second of one mechanism at holdout size n, and the references beside it."""

    mechanism: str
    n: int
    batched_per_second: float
    single_per_second: float
    loop_per_second: float | None
    bare_loss_per_second: float

    @property
    def batched_over_loop(self) -> float | None:
        """How many times faster ``submit_many`` is than the plain loop."""
        return None if self.loop_per_second is None else self.batched_per_second / self.loop_per_second

    @property
    def single_over_loop(self) -> float | None:
        """How many times faster one-at-a-time ``submit`` is than the plain loop."""
        return None if self.loop_per_second is None else self.single_per_second / self.loop_per_second

    @property
    def batched_cost_over_bare_loss(self) -> float:
        """How many times the bare loss computation one batched submission costs."""
        return self.bare_loss_per_second / self.batched_per_second


@dataclass(frozen=True)
class Timed:
    """One thing to time: ``run`` handles ``count`` submissions, after ``prepare`` (untimed)."""

    run: Callable[[], object]
    count: int
    prepare: Callable[[], object] | None = None


def _best_rates(timed: dict[str, Timed], seconds: float) -> dict[str, float]:
    """Per entry, ``count`` / its shortest timing, the entries timed in turn, round after round
    (at least three rounds, ``seconds`` in all)."""
    best = dict.fromkeys(timed, math.inf)
    spent, rounds = 0.0, 0
    while rounds < 3 or spent < seconds:
        for name, entry in timed.items():
            if entry.prepare is not None:
                entry.prepare()
            start = time.perf_counter()
            entry.run()
            elapsed = time.perf_counter() - start
            best[name], spent = min(best[name], elapsed), spent + elapsed
        rounds += 1
    return {name: timed[name].count / best[name] for name in timed}


def measure(mechanism_id: str, n: int, seconds: float = 1.0, batch: int = 1000) -> Throughput:
    """Submissions per second of one mechanism at holdout size n, with its references."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, n).astype(float)
    predictions = rng.integers(0, 2, (batch, n)).astype(float)
    params = BENCHMARK_PARAMS.get(mechanism_id, {})
    state: dict[str, object] = {}

    def fresh() -> None:
        state["mechanism"] = MECHANISMS.make(mechanism_id, **params).bind(labels, "zero-one", np.random.default_rng(1))

    def one_at_a_time() -> None:
        submit = state["mechanism"].submit
        for row in single_rows:
            submit(row)

    single_rows = predictions[:SINGLE_ROWS]

    budget = seconds / 4
    fresh()
    rows = _rows_for(lambda rows: state["mechanism"].submit_many(predictions[:rows]), batch, budget)
    single_rows = predictions[: min(rows, SINGLE_ROWS)]
    timed = {
        "batched": Timed(lambda: state["mechanism"].submit_many(predictions[:rows]), rows, fresh),
        "single": Timed(one_at_a_time, len(single_rows), fresh),
        "bare": Timed(lambda: (predictions != labels).astype(float).mean(axis=1), batch),
    }
    if mechanism_id in REFERENCE_LOOPS:
        loop = REFERENCE_LOOPS[mechanism_id]
        loop_rows = _rows_for(lambda rows: loop(labels, predictions[:rows], np.random.default_rng(1)), SINGLE_ROWS, budget)
        timed["loop"] = Timed(lambda: loop(labels, predictions[:loop_rows], np.random.default_rng(1)), loop_rows)
    rates = _best_rates(timed, seconds)
    return Throughput(mechanism_id, n, rates["batched"], rates["single"], rates.get("loop"), rates["bare"])


def _rows_for(run: Callable[[int], object], most: int, budget: float, probe: int = 4) -> int:
    """How many submissions one timing can hold: three timings fit in ``budget`` (at least ``probe``)."""
    start = time.perf_counter()
    run(probe)
    per_row = (time.perf_counter() - start) / probe
    return int(min(most, max(probe, budget / 3 / max(per_row, 1e-9))))


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
        described = f"{_with_params(attack_id, attack_params)} vs {_with_params(mechanism_id, mechanism_params)} on {task_id}"
        yield DuelTiming(described, result.submissions, elapsed)


def _with_params(plugin_id: str, params: dict[str, object]) -> str:
    """``id(k=v, ...)``, or the bare id without parameters."""
    return f"{plugin_id}({', '.join(f'{k}={v!r}' for k, v in params.items())})" if params else plugin_id


README_CERTIFICATE: dict[str, Any] = {"mechanism": "ladder-boot", "params": {"b": 1000}, "n": 200,
                                      "budgets": [100, 300, 1000, 2000], "replications": 100}
"""The README's example: ``ladderlab certify ladder-boot --param b=1000 --n 200 --budgets 100 300 1000 2000
--replications 100 --jobs 2`` (target: at most 2 minutes on 2 cores)."""


@dataclass(frozen=True)
class CertifyTiming:
    """One certification from an empty battery directory."""

    jobs: int
    wall_seconds: float
    cpu_seconds: float
    """User and system CPU of this process and of its workers."""
    replications: int
    safe_budget: int
    duel_seconds: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    """Seconds inside the duels the certificate used, by attack and then mechanism (where the time goes)."""
    load: tuple[float, float] | None = None
    """The machine's one-minute load average before and after (None: not recorded)."""
    code: dict[str, str] = dataclasses.field(default_factory=dict)
    """The certificate's code record (:func:`ladderlab.runs.page_stamps.code_record`)."""


def time_certify(jobs: int = 2, **overrides: Any) -> CertifyTiming:
    """Time the README's certificate (``overrides`` change its arguments) into a fresh temporary
    directory; the CPU time counts the workers (:func:`ladderlab.utils.cpu_time.tree_seconds`), started
    afresh and shut down after it."""
    from joblib.externals.loky import get_reusable_executor

    from ladderlab.certification.certify import certify
    from ladderlab.reports.report import load_run

    get_reusable_executor().shutdown(wait=True)
    load_before = os.getloadavg()[0]
    before = cpu_time.tree_seconds()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        certificate = certify(**{**README_CERTIFICATE, **overrides}, jobs=jobs, run_dir=directory)
        wall = time.perf_counter() - start
        get_reusable_executor().shutdown(wait=True)
        cpu = cpu_time.tree_seconds() - before
        seconds = load_run(directory).results.groupby(["attack", "mechanism"]).wall_time.sum()
    by_attack: dict[str, dict[str, float]] = {}
    for (attack, mechanism), value in seconds.items():
        by_attack.setdefault(attack, {})[mechanism] = float(value)
    return CertifyTiming(jobs, wall, cpu, certificate["replications_used"], certificate["safe_budget"], by_attack,
                         (load_before, os.getloadavg()[0]), certificate["code"])


def document(throughputs: list[Throughput], duels: list[DuelTiming], command: str) -> dict[str, object]:
    """A bench run as JSON-ready data (``ladderlab dev bench --out``): every measurement with its
    ratios, the parameters, the command, the date, the version and the machine."""
    rows = [{**dataclasses.asdict(result), "batched_over_loop": result.batched_over_loop,
             "single_over_loop": result.single_over_loop,
             "batched_cost_over_bare_loss": result.batched_cost_over_bare_loss} for result in throughputs]
    return {"kind": "bench", "command": command, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "versions": {"ladderlab": ladderlab.__version__}, "machine": machine(),
            "parameters": BENCHMARK_PARAMS, "throughput": rows, "duels": [dataclasses.asdict(t) for t in duels]}


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev bench``: parser and handler."""
    bench = commands.add_parser("bench", help="submissions per second of every mechanism")
    bench.add_argument("--n", type=arguments.count(2), nargs="+", default=[200, 4000], help="holdout sizes (default: 200 4000)")
    bench.add_argument("--certify", action="store_true",
                       help="instead: time the README's certify example from an empty battery directory")
    bench.add_argument("--jobs", type=arguments.count(1), default=2, help="workers of --certify (default 2)")
    bench.add_argument("--accounts", action="store_true", help="instead: what several accounts buy an attacker "
                       "against each built-in mechanism at n = 200 (--out writes the table)")
    bench.add_argument("--seconds", type=arguments.positive, default=1.0,
                       help="time per mechanism and n, its references included (default: 1)")
    bench.add_argument("--out", help="also write the measurements, machine and date as JSON to this file "
                                     "(the bench results page is built from it)")
    add_force_option(bench)
    bench.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    arguments.output_file("--out", args.out)
    if args.accounts:
        return _accounts_table(args)
    if args.certify:
        timing = time_certify(args.jobs)
        print(f"README certificate ({', '.join(f'{k}={v}' for k, v in README_CERTIFICATE.items())}), "
              f"--jobs {timing.jobs}: wall {timing.wall_seconds:.1f} s, CPU {timing.cpu_seconds:.1f} s "
              f"(workers included), {timing.replications} replications of the grid points, safe budget {timing.safe_budget}")
        return 0

    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}×"

    print("submissions per second; ratios to a plain per-submission numpy loop and to the bare 0/1 loss, same process")
    parameters = "; ".join(f"{mechanism_id} {', '.join(f'{k}={v}' for k, v in params.items())}"
                           for mechanism_id, params in BENCHMARK_PARAMS.items())
    print(f"parameters: {parameters}; others at their defaults; '-': no plain loop for that mechanism")
    print(
        f"{'mechanism':<22} {'n':>5} {'batched /s':>11} {'one at a time /s':>17} {'plain loop /s':>14} "
        f"{'batched ÷ loop':>15} {'single ÷ loop':>14} {'batched cost ÷ bare loss':>25}"
    )
    measurements = len(MECHANISMS.ids()) * len(args.n) + len(DUELS)
    check_work(workload.benchmark_work(args.n, measurements, args.seconds), args.force, "a smaller --n needs less")
    bar = progress_bar(progress=args.progress, total=measurements, desc="bench", unit="measurement")
    throughputs, duels = [], []
    for result in run(tuple(args.n), args.seconds):
        throughputs.append(result)
        bar.update()
        bar.write(
            f"{result.mechanism:<22} {result.n:>5} {result.batched_per_second:>11,.0f} "
            f"{result.single_per_second:>17,.0f} "
            f"{'-' if result.loop_per_second is None else f'{result.loop_per_second:,.0f}':>14} "
            f"{ratio(result.batched_over_loop):>15} {ratio(result.single_over_loop):>14} "
            f"{ratio(result.batched_cost_over_bare_loss):>25}"
        )
    bar.write(f"\n{'duel (one replication)':<110} {'submissions':>11} {'wall s':>8}")
    for timing in time_duels():
        duels.append(timing)
        bar.update()
        bar.write(f"{timing.description:<110} {timing.submissions:>11} {timing.seconds_per_replication:>8.3f}")
    bar.close()
    if args.out:
        command = " ".join(["ladderlab dev bench", "--n", *map(str, args.n), "--seconds", f"{args.seconds:g}",
                            "--out", args.out])
        text = json.dumps(document(throughputs, duels, command), indent=1) + "\n"
        write_atomically(Path(args.out), text.encode())
    return 0


def _accounts_table(args: argparse.Namespace) -> int:
    """``ladderlab dev bench --accounts [--out FILE]``: print the accounts table
    (:func:`ladderlab.competition.accounts.accounts_table`), and write it to FILE."""
    from ladderlab.competition.accounts import accounts_table, table_text

    out = Path(args.out) if args.out else None  # checked by the command line (arguments.output_file)
    settings = {"n": 200, "budget": 100, "replications": 10, "confidence": 0.95}
    text = table_text(accounts_table(**settings, progress=args.progress, wrapper=True), **settings)
    print(text, end="")
    if out is not None:
        write_atomically(out, text)
    return 0
