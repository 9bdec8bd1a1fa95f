"""The zoo: every mechanism against every attack at its strongest, in one table.

A zoo run (the built-in ``zoo`` scenario) crosses mechanisms with attacks expanded
into their strength grids (``Attack.strength_grid``) on the tasks each attack can
play. :func:`worst_cases` reduces it to one entry per mechanism × attack: the
median over replications of Δ (released public − final score of the attack's
final submission, oriented as a loss so that negative means the leaderboard was
overfitted; for a larger-is-better score that is −Δ), minimised over the attack's
parameter settings and tasks, with the setting that attained it. "A certificate is
only as good as the strongest attack behind it": the worst setting is the cell's value.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ladderlab.naming import plugin_label

WORST_COLUMNS = ["mechanism", "attack", "delta_median", "worst_params", "task", "settings", "replications"]


def applies(results: pd.DataFrame) -> bool:
    """Whether finished replications cross at least two mechanisms with two attacks: what a
    table (and heat map) of worst cases needs."""
    ok = results[results.status == "ok"] if not results.empty else results
    return not ok.empty and ok.attack.nunique() > 1 and ok[["mechanism", "mechanism_params"]].drop_duplicates().shape[0] > 1


def worst_cases(results: pd.DataFrame) -> pd.DataFrame:
    """One row per mechanism (with its parameters) × attack id: the worst median Δ (as a loss)
    over the attack's settings and tasks, the attack parameters and task that attained it
    (``worst_params``: only the parameters that differ between the attack's settings),
    the number of settings tried and the replications behind the worst one."""
    ok = results[results.status == "ok"] if not results.empty else results
    if ok.empty:
        return pd.DataFrame(columns=WORST_COLUMNS)
    ok = ok.assign(loss_delta=-ok.optimism)
    cells = ok.groupby("cell", sort=False).agg(
        task=("task", "first"), task_params=("task_params", "first"), mechanism=("mechanism", "first"),
        mechanism_params=("mechanism_params", "first"), attack=("attack", "first"),
        attack_params=("attack_params", "first"), delta_median=("loss_delta", "median"),
        replications=("loss_delta", "size"),
    )
    rows = []
    for (mechanism, mechanism_params, attack), group in cells.groupby(
        ["mechanism", "mechanism_params", "attack"], sort=False
    ):
        worst = group.loc[group.delta_median.idxmin()]
        settings = [json.loads(p) for p in group.attack_params]
        varying = sorted({name for s in settings for name in s if len({json.dumps(t.get(name)) for t in settings}) > 1})
        chosen = {name: value for name, value in json.loads(worst.attack_params).items() if name in varying}
        several_tasks = group[["task", "task_params"]].drop_duplicates().shape[0] > 1
        rows.append({
            "mechanism": plugin_label(mechanism, mechanism_params),
            "attack": attack,
            "delta_median": float(worst.delta_median),
            "worst_params": ", ".join(f"{k}={_short(v)}" for k, v in chosen.items()),
            "task": plugin_label(worst.task, worst.task_params) if several_tasks else "",
            "settings": int(len(group)),
            "replications": int(worst.replications),
        })
    return pd.DataFrame(rows, columns=WORST_COLUMNS)


def _short(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def matrix(worst: pd.DataFrame) -> tuple[list[str], list[str], np.ndarray]:
    """Mechanisms (rows), attacks (columns) and the worst median Δ of each pair (NaN: not played)."""
    mechanisms = list(dict.fromkeys(worst.mechanism))
    attacks = list(dict.fromkeys(worst.attack))
    values = np.full((len(mechanisms), len(attacks)), np.nan)
    for row in worst.itertuples(index=False):
        values[mechanisms.index(row.mechanism), attacks.index(row.attack)] = row.delta_median
    return mechanisms, attacks, values


def markdown_table(worst: pd.DataFrame) -> str:
    """The zoo as a Markdown table: one row per mechanism, one column per attack, each entry
    the worst median Δ and its parameters."""
    mechanisms, attacks, values = matrix(worst)
    where = {(r.mechanism, r.attack): r for r in worst.itertuples(index=False)}
    lines = ["| mechanism | " + " | ".join(f"`{a}`" for a in attacks) + " |",
             "| --- |" + " ---: |" * len(attacks)]
    for i, mechanism in enumerate(mechanisms):
        entries = []
        for j, attack in enumerate(attacks):
            row = where.get((mechanism, attack))
            if row is None:
                entries.append("–")
                continue
            detail = "; ".join(part for part in (row.worst_params, row.task) if part)
            entries.append(f"{values[i, j]:+.3f}" + (f" ({detail})" if detail else ""))
        lines.append(f"| `{mechanism}` | " + " | ".join(entries) + " |")
    return "\n".join(lines) + "\n"
