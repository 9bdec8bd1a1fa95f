"""``ladderlab dev bench-proofs``: each mechanism's proven leaderboard error against n at a fixed budget, beside
the battery's worst measured one (docs/proofs.md).

The proven side is :meth:`ladderlab.mechanism.Mechanism.proven_bound` for a 0/1 loss at δ = 0.05,
for k + 1 releases (the attack's k submissions and its final prediction). The measured side plays
every attack of the default battery that can play ``random-labels`` (no features: every
submission's population 0/1 loss is exactly ½, so the leaderboard error is exact) with k
submissions, and ``forced-updates``, which needs a side model, on the same task with
``side_information`` 1 (its error then measured against the private set, 2n rows); at each n it
keeps, for each attack, the 95th percentile of the leaderboard error over the replications, the
quantile the bound's δ speaks of, and shows the worst attack's.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ladderlab.runs import arguments

BEGIN, END = "<!-- proofs -->", "<!-- /proofs -->"
DELTA = 0.05
SHOWN = (("ladder", {"eta": 0.01}), ("ladder-free", {}), ("ladder-t", {}), ("kaggle", {}), ("full-disclosure", {}),
         ("subsample", {}), ("noisy", {}), ("sparse-vector-ladder", {}), ("thresholdout", {"B": 100}),
         ("guess-and-check", {}))
"""The mechanisms the page shows, with the parameters (Thresholdout with a budget: without one it has no bound)."""
CURVE = np.unique(np.round(np.logspace(2, 7, 31)).astype(int))
SIDE_MODEL_ATTACKS = {"forced-updates": {"side_information": 1.0}}


@dataclass(frozen=True)
class Measured:
    """The battery's worst 95th-percentile leaderboard error of one mechanism at one n."""

    mechanism: str
    n: int
    worst: float
    attack: str
    attacks: int


def proven_curve(mechanism: str, params: dict[str, Any], k: int, sizes: np.ndarray = CURVE) -> list[float | None]:
    """The proven ε at each n (None: no theorem; ∞: vacuous beyond any number)."""
    from ladderlab.registry import MECHANISMS

    plugin = MECHANISMS.make(mechanism, **params)
    bounds = [plugin.proven_bound(int(n), k + 1, DELTA, zero_one=True) for n in sizes]
    return [None if bound is None else float(bound.epsilon) for bound in bounds]


def battery_attacks() -> list[str]:
    """The default battery: every registered attack that is not an honest participant."""
    from ladderlab.registry import ATTACKS

    return [attack for attack in ATTACKS.ids() if not ATTACKS.get(attack).honest]


def measure(mechanism: str, params: dict[str, Any], n: int, k: int, replications: int, seed: int) -> Measured:
    """Every battery attack that plays against ``mechanism`` at n public points, ``replications`` times."""
    from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
    from ladderlab.runs.duel import Incompatible, duel

    worst, worst_attack, played = -math.inf, "", 0
    for attack in battery_attacks():
        task = TASKS.make("random-labels", n_public=n, n_holdout=3 * n, **SIDE_MODEL_ATTACKS.get(attack, {}),
                          **({"n_train": n} if attack in SIDE_MODEL_ATTACKS else {}))
        cls = ATTACKS.get(attack)
        errors = []
        try:
            for replication in range(replications):
                errors.append(duel(task, MECHANISMS.make(mechanism, **params), cls(**cls.budget_params(k)), seed=seed,
                                   replication=replication, budget=k).leaderboard_error)
        except Incompatible:
            continue
        played += 1
        high = float(np.quantile(errors, 1 - DELTA))
        if high > worst:
            worst, worst_attack = high, attack
    return Measured(mechanism, n, worst, worst_attack, played)


def plugin_prints() -> dict[str, dict[str, Any]]:
    """The fingerprints of every plugin the page's numbers depend on."""
    from ladderlab.plugin import fingerprint
    from ladderlab.registry import ATTACKS, MECHANISMS, TASKS

    prints = {f"mechanism:{name}": fingerprint(MECHANISMS.get(name)) for name, _ in SHOWN}
    prints |= {f"attack:{name}": fingerprint(ATTACKS.get(name)) for name in battery_attacks()}
    return prints | {"task:random-labels": fingerprint(TASKS.get("random-labels"))}


def section(curves: dict[str, list[float | None]], measured: list[Measured], k: int, replications: int, seed: int,
            figure: str, command: str) -> str:
    """The page's section between its markers: the figure, the table and the stamp."""
    from ladderlab.registry import MECHANISMS
    from ladderlab.runs.page_stamps import code_record, stamp
    from ladderlab.stats.bounds import EVERY_SUBMISSION

    lines = [BEGIN, stamp(command, code_record(plugin_prints(), "proofs")), "",
             f"k = {k} submissions (and the final prediction), δ = {DELTA}, 0/1 loss on `random-labels`; measured: "
             f"{replications} replications of every battery attack that plays, seed {seed}.", "",
             f"![proven ε against n beside the battery's worst 95th-percentile error]({figure})", "",
             "| mechanism | n | proven ε | battery's worst error (95th pct.) | worst attack | proven / measured |",
             "| --- | ---: | ---: | ---: | --- | ---: |"]
    for row in measured:
        name = row.mechanism
        params = dict(SHOWN)[name]
        bound = MECHANISMS.make(name, **params).proven_bound(row.n, k + 1, DELTA, zero_one=True)
        proven = None if bound is None else float(bound.epsilon)
        proven_text = "no theorem" if bound is None else ("vacuous" if bound.vacuous else f"{proven:.3g}")
        if bound is not None and bound.holds != EVERY_SUBMISSION:
            proven_text += " (until its budget is spent)"
        ratio = "–" if bound is None or bound.vacuous or row.worst <= 0 else f"{proven / row.worst:.1f}"
        lines.append(f"| {_label(name, params)} | {row.n:,} | {proven_text} | {row.worst:.3g} | {row.attack} "
                     f"| {ratio} |")
    return "\n".join(lines + ["", END])


def _label(name: str, params: dict[str, Any]) -> str:
    from ladderlab.naming import plugin_label

    return plugin_label(name, params)


def plot(curves: dict[str, list[float | None]], measured: list[Measured], k: int, path: Path) -> None:
    """One panel per mechanism: its proven ε against n (vacuous values drawn at 1) and the measured points."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from ladderlab.registry import MECHANISMS
    from ladderlab.stats.bounds import EVERY_SUBMISSION
    from ladderlab.utils.atomic import save_figure

    columns = 5
    rows = math.ceil(len(SHOWN) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.8 * rows), sharex=True, sharey=True)
    for axis, (name, params) in zip(axes.flat, SHOWN):
        curve = curves[name]
        values = np.array([np.nan if value is None else min(value, 1.0) for value in curve])
        bound = MECHANISMS.make(name, **params).proven_bound(int(CURVE[0]), k + 1, DELTA, zero_one=True)
        until_spent = bound is not None and bound.holds != EVERY_SUBMISSION
        axis.plot(CURVE, values, color="tab:blue", ls="--" if until_spent else "-",
                  label="proven ε (dashed: until a budget is spent)" if until_spent else "proven ε")
        if until_spent:
            axis.legend(fontsize=6, loc="lower left")
        points = [row for row in measured if row.mechanism == name]
        axis.plot([row.n for row in points], [row.worst for row in points], "o", color="tab:red",
                  label="battery's worst (95th pct.)")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_ylim(1e-3, 1.2)
        axis.axhline(1.0, color="grey", lw=0.5, ls=":")
        axis.set_title(_label(name, params), fontsize=8)
    for axis in axes.flat[len(SHOWN):]:
        axis.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    figure.supxlabel("n (public points)")
    figure.supylabel("leaderboard error / B")
    figure.suptitle(f"Proven against measured at k = {k} (δ = {DELTA}; vacuous bounds drawn at 1)", fontsize=10)
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev bench-proofs``: parser and handler."""
    parser = commands.add_parser("bench-proofs", help="each mechanism's proven leaderboard error against n beside "
                                 "the battery's worst measured one (docs/proofs.md)")
    parser.add_argument("--n", type=arguments.count(2), action="append",
                        help="public size to measure at (repeatable; default 500 and 2000)")
    parser.add_argument("--k", type=arguments.count(1), default=300, help="submissions (default 300)")
    parser.add_argument("--replications", type=arguments.count(1), default=20, help="per attack and n (default 20)")
    parser.add_argument("--seed", type=arguments.count(0), default=0, help="root seed (default 0)")
    parser.add_argument("--write", metavar="PAGE", help="put the figure and table into PAGE between its proofs "
                        "markers (docs/proofs.md); the figure goes to docs/figures/proofs.png beside it")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.utils.markdown import page_to_write, write_marked_section

    page = page_to_write(args.write, BEGIN, END)
    sizes = args.n or [500, 2000]
    curves = {name: proven_curve(name, params, args.k) for name, params in SHOWN}
    measured = []
    for name, params in SHOWN:
        for n in sizes:
            print(f"{name} at n = {n} …", flush=True)
            measured.append(measure(name, params, n, args.k, args.replications, args.seed))
    command = (f"ladderlab dev bench-proofs {' '.join(f'--n {n}' for n in sizes)} --k {args.k} "
               f"--replications {args.replications} --seed {args.seed} --write docs/proofs.md")
    text = section(curves, measured, args.k, args.replications, args.seed, "figures/proofs.png", command)
    if page is None:
        print(text)
        return 0
    plot(curves, measured, args.k, page.parent / "figures" / "proofs.png")
    write_marked_section(page, BEGIN, END, text)
    print(f"wrote {page} and {page.parent / 'figures' / 'proofs.png'}")
    return 0
