"""Certify an arena policy: how many private variants (or rigged votes, or how much sampling advantage)
it takes before a provider's published rating is inflated past τ, at a stated tail and confidence.

For each attack (every registered arena attack, or those named), at each budget (the attack's own
``default_budgets`` unless given) and each point of its strength grid, seasons
(:mod:`ladderlab.arena.season`) are replicated until a sequential verdict on

    p = P(the provider's listed rating exceeds its true strength by more than τ Elo points)

is decided against the tail level β, the holdout certificates' tail criterion and statistics
(:mod:`ladderlab.stats.sequential`): Robbins' confidence sequence for p *passes* the point once it lies
below β, *fails* it once it lies above β, and leaves it *inconclusive* at the most replications. Each
sequence runs at error δ = (1 − confidence) / points (``per_sequence_error``, one sequence a point), a
Bonferroni union over every point of the certificate, so all its decided verdicts are right together
with probability at least ``confidence``. An attack's verdict at
a budget is its worst point's; its *safe budget* is the largest budget up to which every verdict
passes, and the points above a failing budget stop at the end of their round (their verdict is
inconclusive, marked ``stopped``).

The certificate also gives, per row, the median inflation with its confidence interval, P(the board's
top model is inflated by more than τ), the target's rank inflation, and the plain board's
P(inflation > τ) at the same point (the reference a policy improves on); and the cost to an honest
provider who tests one variant and publishes it: how far its listed rating lies from its strength,
and how many votes it waits for before it is listed.
"""

from __future__ import annotations

import json
import math
import textwrap
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

import ladderlab
from ladderlab.arena.family import PairwiseArena
from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_POLICIES
from ladderlab.arena.season import Season
from ladderlab.naming import plugin_label
from ladderlab.plugin import fingerprint
from ladderlab.runs import page_stamps
from ladderlab.stats.sequential import (
    FAILS,
    INCONCLUSIVE,
    PASSES,
    confidence_sequence,
    first_decision,
    median_interval,
    per_sequence_error,
    sides,
)
from ladderlab.utils import cpu_time
from ladderlab.utils.progress import progress_bar

REFERENCE = "plain-board"
TAU = 20.0
"""The default tolerance, Elo points: about 1.7 standard errors of a variant rated on 1,000 votes."""
BETA = 0.1
MOST_REPLICATIONS = 1000
HONEST = ("best-of-n-variants", {"n_variants": 1})
MEASURES = ("inflation", "rank_inflation", "top_inflation", "votes_cast", "variants_tested", "board_votes")
CERTIFICATE_KIND = "arena"


@dataclass(frozen=True)
class ArenaAttackSpec:
    """An attack of the certificate: its id and the parameters pinned (None: its strength grid)."""

    id: str
    pinned: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return self.id if self.pinned is None else plugin_label(self.id, self.pinned)

    def points(self, budget: int) -> list[dict[str, Any]]:
        cls = ARENA_ATTACKS.get(self.id)
        if self.pinned is not None:
            return [{cls.budget: budget, **self.pinned}]
        return [dict(point) for point in cls.strength_grid(budget)]


def parse_attack(text: str, option: str = "--attack") -> ArenaAttackSpec:
    """``id`` or ``id(key=value, …)`` of an arena attack; an error names ``option`` and the text."""
    try:
        attack_id, pinned = ARENA_ATTACKS.parse(text)
    except ValueError as error:
        raise ValueError(f"{option} {text}: {error}") from None
    if pinned and ARENA_ATTACKS.get(attack_id).budget in pinned:
        raise ValueError(f"{option} {text}: the certificate sets {ARENA_ATTACKS.get(attack_id).budget!r} to each budget "
                         "(--budgets); leave it out")
    return ArenaAttackSpec(attack_id, pinned)


@dataclass
class _Point:
    key: int
    spec: ArenaAttackSpec
    budget: int
    params: dict[str, Any]
    records: list[dict[str, Any]]
    verdict: str | None = None
    used: int = 0
    stopped: bool = False


def _seasons(family: PairwiseArena, policy: tuple[str, dict[str, Any]], attack: tuple[str, dict[str, Any]], seed: int,
             replications: range, newcomer_gap: float) -> list[dict[str, Any]]:
    """Seasons ``replications`` of a point, on one BLAS thread (in a worker too)."""
    with threadpool_limits(limits=1, user_api="blas"):
        return [Season(family, ARENA_POLICIES.make(policy[0], **policy[1]), ARENA_ATTACKS.make(attack[0], **attack[1]),
                       seed, r, newcomer_gap).play().record() for r in replications]


def tail_side(exceeded: np.ndarray, delta: float, beta: float) -> tuple[int, int]:
    """The first replication after which the confidence sequence of P(exceeded) at error ``delta`` lies
    wholly above ``beta`` (side +1) or below it (−1), and that side; (len, 0) if it never does
    (:func:`ladderlab.stats.sequential.sides`)."""
    decided = np.flatnonzero(side := sides(np.asarray(exceeded, dtype=bool), delta, beta))
    if not decided.size:
        return len(exceeded), 0
    return int(decided[0]) + 1, int(side[decided[0]])


def certify_policy(policy: str, params: dict[str, Any] | None = None, attacks: list[ArenaAttackSpec] | None = None,
                   budgets: list[int] | None = None, family: PairwiseArena | None = None, tau: float = TAU,
                   beta: float = BETA, confidence: float = 0.95, replications: int = MOST_REPLICATIONS, seed: int = 0,
                   jobs: int = 1, newcomer_gap: float = 0.0, complete: bool = False,
                   progress: bool | None = False) -> dict[str, Any]:
    """The certificate of ``policy`` (see the module docstring), JSON-ready."""
    params = params or {}
    certified = ARENA_POLICIES.checked(policy, params)
    family = family or PairwiseArena()
    family.validate_params()
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be a finite number of Elo points > 0, got {tau!r}")
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie in (0.5, 1), got {confidence!r}")
    specs = attacks or [ArenaAttackSpec(attack_id) for attack_id in ARENA_ATTACKS.ids()]
    points: list[_Point] = []
    for spec in specs:
        for budget in sorted(budgets or ARENA_ATTACKS.get(spec.id).default_budgets):
            for point in spec.points(budget):
                ARENA_ATTACKS.checked(spec.id, point, f"--attack {spec.label} at budget {budget}")
                points.append(_Point(len(points), spec, budget, point, []))
    delta = per_sequence_error(confidence, len(points), sequences=1)
    start, cpu_start = time.perf_counter(), cpu_time.tree_seconds()
    target = first_decision(delta, beta)
    with Parallel(n_jobs=jobs) as parallel, progress_bar(progress=progress, total=len(points), desc="grid points",
                                                          unit="point") as bar:
        while True:
            open_points = [point for point in points if point.verdict is None]
            if not open_points:
                break
            goal = min(target, replications)
            tasks = [(point, range(len(point.records), goal)) for point in open_points if len(point.records) < goal]
            results = parallel(delayed(_seasons)(family, (policy, params), (point.spec.id, point.params), seed, todo,
                                                 newcomer_gap) for point, todo in tasks)
            for (point, _), records in zip(tasks, results):
                point.records += records
            for point in open_points:
                _judge(point, tau, beta, delta, final=goal >= replications)
                if point.verdict is not None:
                    bar.update(1)
            if not complete:
                for point in _stopped(points):
                    point.verdict, point.stopped, point.used = INCONCLUSIVE, True, len(point.records)
                    bar.update(1)
            target *= 2
        reference = _reference(points, family, seed, newcomer_gap, parallel, policy)
        honest = _honest(family, (policy, params), seed, newcomer_gap, parallel, tau)
    rows = _rows(specs, points, tau, confidence, reference)
    safe = {spec.label: _safe_budget([row for row in rows if row["attack_label"] == spec.label]) for spec in specs}
    prints = {f"arena policy:{policy}": fingerprint(ARENA_POLICIES.get(policy)),
              **{f"arena attack:{spec.id}": fingerprint(ARENA_ATTACKS.get(spec.id)) for spec in specs}}
    return {
        "certificate_kind": CERTIFICATE_KIND,
        "policy": policy, "params": certified.get_params(),
        "family": family.describe(), "newcomer_gap": newcomer_gap,
        "tau": tau, "beta": beta, "confidence": confidence, "per_sequence_error": delta, "units": "Elo points",
        "replications": replications, "seed": seed,
        "attacks": [{"attack": spec.id, "pinned": spec.pinned, "budget": ARENA_ATTACKS.get(spec.id).budget,
                     "unit": ARENA_ATTACKS.get(spec.id).budget_unit} for spec in specs],
        "safe": [{"attack": spec.label, "budget": safe[spec.label], "unit": ARENA_ATTACKS.get(spec.id).budget_unit}
                 for spec in specs],
        "rows": rows, "honest": honest,
        "replications_used": sum(point.used for point in points),
        "code": page_stamps.code_record(prints, CERTIFICATE_KIND),
        "versions": {"ladderlab": ladderlab.__version__},
        "wall_time_seconds": time.perf_counter() - start, "cpu_time_seconds": cpu_time.tree_seconds() - cpu_start,
    }


def _judge(point: _Point, tau: float, beta: float, delta: float, final: bool) -> None:
    played = [record for record in point.records if record["played"]]
    if len(point.records) >= 8 and not played:
        point.verdict, point.used = "did not play", len(point.records)
        return
    exceeded = np.array([record["played"] and record["inflation"] > tau for record in point.records])
    t, side = tail_side(exceeded, delta, beta)
    if side:
        point.verdict, point.used = (FAILS if side > 0 else PASSES), t
    elif final:
        point.verdict, point.used = INCONCLUSIVE, len(point.records)


def _stopped(points: list[_Point]) -> list[_Point]:
    """Undecided points at or above a budget at which a point of the same attack failed."""
    failing: dict[str, int] = {}
    for point in points:
        if point.verdict == FAILS:
            failing[point.spec.label] = min(failing.get(point.spec.label, point.budget), point.budget)
    return [point for point in points if point.verdict is None and point.budget >= failing.get(point.spec.label, math.inf)]


def _reference(points: list[_Point], family: PairwiseArena, seed: int, newcomer_gap: float, parallel: Parallel,
               policy: str) -> dict[int, list[dict[str, Any]]]:
    """The plain board's seasons at each played point, as many as the point used (the same worlds)."""
    if policy == REFERENCE:
        return {point.key: point.records[: point.used] for point in points}
    played = [point for point in points if point.used and point.verdict != "did not play"]
    results = parallel(delayed(_seasons)(family, (REFERENCE, {}), (point.spec.id, point.params), seed, range(point.used),
                                         newcomer_gap) for point in played)
    return {point.key: records for point, records in zip(played, results)}


def _honest(family: PairwiseArena, policy: tuple[str, dict[str, Any]], seed: int, newcomer_gap: float, parallel: Parallel,
            tau: float, replications: int = 200) -> dict[str, Any]:
    """The honest provider's cost: one variant, published as it is."""
    chunks = [range(start, min(start + 50, replications)) for start in range(0, replications, 50)]
    records = [record for part in parallel(delayed(_seasons)(family, policy, HONEST, seed, chunk, newcomer_gap)
                                           for chunk in chunks) for record in part]
    error = np.array([abs(record["inflation"]) for record in records if record["played"]])
    waits = ARENA_POLICIES.make(policy[0], **policy[1]).votes_before_listing()
    attack = ARENA_ATTACKS.make(*HONEST[:1], **HONEST[1])
    return {"provider": plugin_label(*HONEST), "replications": len(records), "listed": int(error.size),
            "absolute_error": dict(zip(("median", "lo", "hi"), median_interval(error, 0.95))) if error.size else None,
            "beyond_tau": float((error > tau).mean()) if error.size else None,
            "votes_before_listing": attack.battles_per_variant + waits}


def _rows(specs: list[ArenaAttackSpec], points: list[_Point], tau: float, confidence: float,
          reference: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows = []
    order = {FAILS: 3, INCONCLUSIVE: 2, PASSES: 1, "did not play": 0}
    for spec in specs:
        for budget in sorted({point.budget for point in points if point.spec == spec}):
            group = [point for point in points if point.spec == spec and point.budget == budget]
            worst = max(group, key=lambda point: (order[point.verdict or INCONCLUSIVE], _rate(point.records[: point.used], tau)))
            records = [record for record in worst.records[: worst.used] if record["played"]]
            inflation = np.array([record["inflation"] for record in records])
            exceeded = int((inflation > tau).sum())
            low, high = confidence_sequence(exceeded, len(records), (1 - confidence) / len(points)) if records else (0.0, 1.0)
            plain = [record for record in reference.get(worst.key, []) if record["played"]]
            rows.append({
                "attack": spec.id, "attack_label": spec.label, "budget": budget, "verdict": worst.verdict,
                "stopped": worst.stopped, "worst_params": worst.params, "replications": worst.used,
                "p_inflated": {"estimate": exceeded / len(records) if records else None, "lo": low, "hi": high},
                "inflation": dict(zip(("median", "lo", "hi"), median_interval(inflation, confidence))) if records else None,
                "inflation_mean": float(inflation.mean()) if records else None,
                "rank_inflation_median": float(np.median([r["rank_inflation"] for r in records])) if records else None,
                "p_top_inflated": float(np.mean([r["top_inflation"] > tau for r in records])) if records else None,
                "reference_p_inflated": float(np.mean([r["inflation"] > tau for r in plain])) if plain else None,
                "variants_tested_median": float(np.median([r["variants_tested"] for r in records])) if records else None,
                "votes_cast_median": float(np.median([r["votes_cast"] for r in records])) if records else None,
            })
    return rows


def _rate(records: list[dict[str, Any]], tau: float) -> float:
    played = [record for record in records if record["played"]]
    return float(np.mean([record["inflation"] > tau for record in played])) if played else -1.0


def _safe_budget(rows: list[dict[str, Any]]) -> int:
    """The largest budget up to which every row passes (0: not even the smallest)."""
    safe = 0
    for row in sorted(rows, key=lambda row: row["budget"]):
        if row["verdict"] != PASSES:
            break
        safe = row["budget"]
    return safe


def markdown(certificate: dict[str, Any]) -> str:
    """The certificate for people."""
    c = certificate
    confidence = f"{100 * c['confidence']:g}%"
    label = plugin_label(c["policy"], c["params"])
    heads = [f"**Safe {entry['unit']}: {entry['budget'] if entry['budget'] else 'none of the budgets tested'}** "
             f"({entry['attack']})" for entry in c["safe"]]
    lines = [f"# Arena certificate: {label}", "", "; ".join(heads) + ".", "",
             (f"A budget is safe when, at it and every smaller one, P(the provider's listed rating exceeds its true "
              f"strength by more than {c['tau']:g} Elo points) ≤ {c['beta']:g} for every attack at its worst setting, "
              f"each verdict at {confidence} confidence for the whole certificate (Bonferroni over its "
              f"{len(c['rows'])} rows' points; each sequence at error {c['per_sequence_error']:.2g}); every point "
              f"replicated until decided, at most {c['replications']} times; seed {c['seed']}."),
             "", f"Family: {plugin_label(c['family']['id'], c['family']['params'])}; the provider's model is "
             f"{c['newcomer_gap']:+g} Elo points from the pool's strongest.", "",
             f"| attack | budget | verdict | worst parameters | replications | P(inflation > τ) [{confidence} CS] "
             f"| inflation median [{confidence} CI] | mean | P(top inflated > τ) | rank gain | plain board P(> τ) |",
             "| --- | ---: | --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for row in c["rows"]:
        verdict = {PASSES: "passes", FAILS: "**fails**"}.get(row["verdict"], f"*{row['verdict']}*"
                                                              + (" (stopped)" if row["stopped"] else ""))
        p, inflation = row["p_inflated"], row["inflation"]
        lines.append(
            f"| {row['attack_label']} | {row['budget']} | {verdict} | {_params(row['worst_params'])} | {row['replications']} "
            f"| {_num(p['estimate'], 3)} [{p['lo']:.3f}, {p['hi']:.3f}] "
            f"| {_interval(inflation)} | {_num(row['inflation_mean'], 1)} | {_num(row['p_top_inflated'], 3)} "
            f"| {_num(row['rank_inflation_median'], 1)} | {_num(row['reference_p_inflated'], 3)} |")
    honest = c["honest"]
    lines += ["", "## Cost to an honest provider", "",
              (f"A provider that tests one variant and publishes it ({honest['provider']}) waits for "
               f"{honest['votes_before_listing']} votes before it is listed; its listed rating lies "
               + (f"{_interval(honest['absolute_error'])} Elo points from its strength (median [95% CI]), beyond τ in "
                  f"{100 * honest['beyond_tau']:.1f}% of {honest['listed']} seasons."
                  if honest["absolute_error"] else "nowhere: it was never listed."))]
    lines += ["", "## Run", "", f"- {c['replications_used']} seasons of the grid points; wall time "
              f"{c['wall_time_seconds']:.0f} s, CPU time {c['cpu_time_seconds']:.0f} s; versions: {json.dumps(c['versions'])}"]
    return "\n".join(lines) + "\n"


def summary(certificate: dict[str, Any], width: int = 120) -> str:
    """The headline and one line per row, for a terminal."""
    c = certificate
    lines = [f"arena certificate: {plugin_label(c['policy'], c['params'])}, τ = {c['tau']:g} Elo points, β = {c['beta']:g}, "
             f"{100 * c['confidence']:g}% confidence"]
    lines += [f"safe {entry['unit']}: {entry['budget'] or 'none of the budgets tested'} ({entry['attack']})"
              for entry in c["safe"]]
    for row in c["rows"]:
        p = row["p_inflated"]
        budget = ARENA_ATTACKS.get(row["attack"]).budget
        setting = _params({key: value for key, value in (row["worst_params"] or {}).items() if key != budget})
        lines.append(f"  {row['attack_label']:<20} {row['budget']:>6}  {row['verdict'] + (' (stopped)' if row['stopped'] else ''):<22}"
                     f" P(>τ) {_num(p['estimate'], 3)} [{p['lo']:.3f}, {p['hi']:.3f}] {row['replications']:>5} seasons  {setting}")
    return "\n".join(part for line in lines for part in textwrap.wrap(line, width, subsequent_indent="    ",
                                                                      drop_whitespace=False)) + "\n"


def _params(params: dict[str, Any] | None) -> str:
    return ", ".join(f"{key}={value}" for key, value in (params or {}).items()) or "–"


def _num(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval(entry: dict[str, float] | None) -> str:
    if not entry:
        return "–"
    return f"{entry['median']:.1f} [{_num(entry['lo'] if math.isfinite(entry['lo']) else None, 1)}, " \
           f"{_num(entry['hi'] if math.isfinite(entry['hi']) else None, 1)}]"
