"""``ladderlab demo``: one boosting duel (Blum & Hardt 2015, §5) against Kaggle and the
parameter-free Ladder, and what its numbers say.

The labels are random, so every prediction's true 0/1 loss is ½ and a prediction chosen
without the leaderboard makes each public and each final error with probability ½,
independently. Its optimism (final − released public loss) then has a known distribution:
the difference of two binomial proportions. The demo's conclusion for each mechanism is
the exact probability that such a prediction looks at least as optimistic as the attack's
final submission did (:func:`optimism_probability`), not a sentence written in advance.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ladderlab.runs import arguments, workload

LEVEL = 0.05
"""A probability below this calls the released score overfitted."""
TOLERANCE = 1e-12
"""Differences of losses closer than this count as equal (the floating-point error of a
difference of two mean losses is far smaller)."""


def optimism_probability(optimism: float, n_public: int, n_final: int) -> float:
    """P(Y/m − X/n ≥ optimism) for independent X ~ Bin(n, ½) public errors and Y ~ Bin(m, ½)
    final errors: how often a prediction made without the leaderboard is this optimistic.
    Exact (a sum over the n + 1 public error counts)."""
    from scipy import stats

    public_errors = np.arange(n_public + 1)
    needed = np.ceil(n_final * (optimism + public_errors / n_public - TOLERANCE))
    tail = stats.binom.sf(needed - 1, n_final, 0.5)
    return float(np.clip(np.sum(stats.binom.pmf(public_errors, n_public, 0.5) * tail), 0.0, 1.0))


def conclusions(results: dict[str, Any], n_public: int, n_final: int) -> list[str]:
    """One line per mechanism from its released and final loss, and a comparison of the two."""
    lines = []
    optimism = {name: result.final_final - result.final_released for name, result in results.items()}
    for name, gap in optimism.items():
        if gap <= 0:
            lines.append(f"{name}: released loss not below the final one ({gap:+.4f}): not overfitted.")
            continue
        probability = optimism_probability(gap, n_public, n_final)
        verdict = "overfitted" if probability < LEVEL else "within what chance gives an honest prediction"
        lines.append(f"{name}: released loss {gap:.4f} below the final one; a prediction made without the "
                     f"leaderboard is that optimistic with probability {probability:.2g}: {verdict}.")
    (first, a), (second, b) = optimism.items()
    if a > 0 and b > 0:
        more, less = (first, second) if a >= b else (second, first)
        lines.append(f"{less}'s released loss is {max(a, b) / min(a, b):.1f} times less optimistic than {more}'s.")
    return lines


def run(args: argparse.Namespace) -> int:
    from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
    from ladderlab.runs.duel import duel

    n_final = 2 * args.n
    task_params = {"n_public": args.n, "n_holdout": args.n + n_final}
    data, _ = workload.task_data("random-labels", task_params, args.force)
    work = workload.combined("the demo", [workload.duel_cells(variant, args.n + n_final, data, args.k, 1)
                                          for variant in ("kaggle", "ladder")])
    workload.refuse_if_too_large(work, args.force, hint="a smaller --n or --k needs less")
    workload.announce(work)
    task = TASKS.make("random-labels", **task_params)
    print(f"Boosting attack (Blum & Hardt §5), k = {args.k} random label vectors, n = {args.n} public labels, "
          f"{n_final} final")
    print(f"{'mechanism':<14} {'public (released)':>18} {'final (private)':>16} {'leaderboard error':>18}")
    results = {}
    for mechanism_id, variant in [("kaggle", "kaggle"), ("ladder-free", "ladder")]:
        result = duel(task, MECHANISMS.make(mechanism_id), ATTACKS.make("boosting", k=args.k, variant=variant),
                      seed=args.seed, isolation=args.isolation)
        results[mechanism_id] = result
        print(f"{mechanism_id:<14} {result.final_released:>18.4f} {result.final_final:>16.4f} "
              f"{result.leaderboard_error:>18.4f}")
    print("The labels are random: every prediction's true 0/1 loss is 0.5.")
    for line in conclusions(results, args.n, n_final):
        print(line)
    return 0


def register(commands: Any) -> None:
    """``ladderlab demo``."""
    from ladderlab.isolation.protocol import ISOLATION_MODES

    count = arguments.count
    demo = commands.add_parser("demo", help="the boosting attack against kaggle and ladder-free")
    demo.add_argument("--k", type=count(1), default=400, help="number of attack submissions (default 400)")
    demo.add_argument("--n", type=count(2), default=4000, help="public holdout size (default 4000; the final set is twice as large)")
    demo.add_argument("--seed", type=count(0), default=0, help="root seed of the duels (default 0)")
    demo.add_argument("--isolation", type=arguments.isolation_mode, choices=ISOLATION_MODES, default="none",
                      help="'process': play each attack in a sandboxed process of its own (see docs/isolation.md)")
    workload.add_force_option(demo)
    demo.set_defaults(handler=run)
