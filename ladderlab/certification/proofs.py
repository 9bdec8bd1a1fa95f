"""A certificate's proven side: which budgets the mechanism's theorem alone keeps safe, and from what public size.

The battery tests a mechanism against the attacks ladderlab knows; a theorem
(:meth:`ladderlab.mechanism.Mechanism.proven_bound`) covers every adaptive participant. A budget
b is **proven safe** when, for b + 1 releases (the attack's submissions and its final
prediction) on n public points, the theorem's ε (in units of B) is at most the smaller tolerance
(τ and ε in units of B, the smallest over the attacked families) with probability ≥ 1 − β, the
tail criterion's β: the leaderboard error is then within the tolerance except with probability
β, and so are Δ and the optimism of the reported submission against its population value (every
proof here bounds each release's distance to the population value of the submission it shows). The battery
measures Δ on the private set instead, so a proven budget is also safe against the battery up to
the private set's own sampling error. Otherwise the budget is **safe against the battery** only,
or not safe. A bound that holds only until a budget is spent proves no budget safe.
"""

from __future__ import annotations

from typing import Any

from ladderlab.mechanism import Mechanism
from ladderlab.scoring import get_scorer
from ladderlab.stats.bounds import EVERY_SUBMISSION

ZERO_ONE_SCORERS = frozenset({"zero-one", "accuracy"})
LARGEST_PUBLIC_SIZE = 10**9


def zero_one_families(scorers: list[str]) -> bool:
    """True when every attacked family's scorer is a mean of 0/1 values (exact binomial tails apply)."""
    return bool(scorers) and all(get_scorer(scorer).name in ZERO_ONE_SCORERS for scorer in scorers)


def proven_side(mechanism: Mechanism, n: int, budgets: list[int], delta: float, zero_one: bool,
                tolerance: float) -> dict[str, Any]:
    """The proven side of a certificate: for each budget the theorem's bound at ``delta``, whether it alone
    keeps the leaderboard error within ``tolerance`` (in units of B), and the public size from which it would;
    the largest budget proven safe (None: none)."""
    rows = []
    for budget in budgets:
        bound = mechanism.proven_bound(n, budget + 1, delta, zero_one)
        rows.append({
            "budget": budget,
            "bound": None if bound is None else bound.record(),
            "proven_safe": proves(bound, delta, tolerance),
            "public_size_for_proof": None if bound is None else proof_public_size(mechanism, budget, tolerance, delta),
        })
    proven = None
    for row in rows:
        if not row["proven_safe"]:
            break
        proven = row["budget"]
    return {"delta": delta, "tolerance": tolerance, "tail": "binomial" if zero_one else "hoeffding",
            "proven_budget": proven, "budgets": rows}


def proves(bound: Any, delta: float, tolerance: float) -> bool:
    """True when ``bound`` (a :class:`ladderlab.stats.bounds.ProvenBound` or None) guarantees ``tolerance``
    with probability ≥ 1 − ``delta`` for every submission (a bound that holds only until a budget
    is spent, as guess and check's or Thresholdout's, proves nothing about the submissions after)."""
    return (bound is not None and not bound.vacuous and bound.delta <= delta + 1e-12 and bound.epsilon <= tolerance
            and bound.holds == EVERY_SUBMISSION)


def proof_public_size(mechanism: Mechanism, budget: int, tolerance: float, delta: float) -> int | None:
    """The smallest number of public points (found by doubling, then bisection to 0.1 %) at which the theorem alone
    keeps ``budget`` submissions within ``tolerance``, with Hoeffding's tail (valid for any bounded
    loss; a 0/1 loss may need slightly fewer); None if not even 10⁹ do."""
    def enough(n: int) -> bool:
        return proves(mechanism.proven_bound(n, budget + 1, delta, False), delta, tolerance)

    high = 2
    while not enough(high):
        if high >= LARGEST_PUBLIC_SIZE:
            return None
        high = min(2 * high, LARGEST_PUBLIC_SIZE)
    low = high // 2
    while high - low > max(1, high // 1000):
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def proven_statements(verdicts: list[dict[str, Any]], proven: dict[str, Any]) -> list[dict[str, Any]]:
    """The certificate's per-budget verdicts with the proven side's statement added to each budget's
    ``statements``: proven safe, or what the theorem gives there and from what public size it would suffice."""
    rows = {row["budget"]: row for row in proven["budgets"]}
    for verdict in verdicts:
        row = rows[verdict["budget"]]
        verdict["statements"].append({"kind": "proven", "proven_safe": row["proven_safe"], "text": _budget_text(row)})
    return verdicts


def proven_headline(proven: dict[str, Any] | None) -> str:
    """The headline's proven side: the largest budget the theorem alone keeps safe, or that none is."""
    if not proven:
        return ""
    if proven["proven_budget"]:
        return f"; proven safe up to {proven['proven_budget']} by the theorem alone"
    return "; proven safe at no budget (safe against the battery only, where safe)"


def _budget_text(row: dict[str, Any]) -> str:
    bound = row["bound"]
    if bound is None:
        return "no theorem"
    value = "vacuous" if bound["vacuous"] else f"ε = {bound['epsilon']:.3g}·B"
    where = "" if bound["holds"] == EVERY_SUBMISSION else f" ({bound['holds']})"
    size = row["public_size_for_proof"]
    enough = "proven safe" if row["proven_safe"] else (
        f"the proof alone needs n ≈ {size:,}" if size else "no public size makes the proof suffice")
    return f"theorem: {value}{where}, {enough}"


def proven_text(proven: dict[str, Any], n: int) -> str:
    """The proven side for people: what the theorem gives at each budget and from what public size it
    alone would suffice."""
    tail = "exact binomial tails" if proven["tail"] == "binomial" else "Hoeffding's inequality"
    parts = [f"budget {row['budget']}: {_budget_text(row)}" for row in proven["budgets"]]
    sources = sorted({row["bound"]["source"] for row in proven["budgets"] if row["bound"]})
    return (f"**Proven side** (the theorem alone, against any adaptive participant, with probability ≥ "
            f"{1 - proven['delta']:g}, {tail}; proven safe means ε ≤ {proven['tolerance']:.3g}·B, the smaller "
            f"tolerance, at n = {n}): " + "; ".join(parts) + "." + (f" Source: {'; '.join(sources)}." if sources else
            " This mechanism has no theorem: its budgets are safe against the battery only."))
