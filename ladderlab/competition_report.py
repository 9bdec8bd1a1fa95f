"""The competition part of a run's report: status, summary tables and plots.

Plots (matplotlib ``Figure`` objects, no pyplot state):

- shake-up scatter: every team's public rank against its private rank, one panel per
  mechanism (and task, rules, mix when they vary), pooled over replications; points on
  the diagonal kept their rank, honest teams and the others in two colours;
- the winner's Δ (public − private score of the private winner), a box per mechanism;
- the honest utility (Spearman ρ of the honest teams' public and population scores),
  a box per mechanism.
"""

from __future__ import annotations

import html
from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from ladderlab.competition_results import group_summary, summary, text_summary
from ladderlab.naming import plugin_label
from ladderlab.plots import ReportFigure, _grid

MAX_SCATTER_PANELS = 12
HONEST_COLOR, OTHER_COLOR = "#1f77b4", "#d62728"


def status_lines(expected: list[dict[str, Any]], results: pd.DataFrame, damaged: Collection[str] = ()) -> list[str]:
    """Finished and missing competition cells (``damaged``: the keys of cells whose file is
    damaged and left out), failed and skipped replications, in words."""
    finished = set(results.cell) if not results.empty else set()
    missing = [cell for cell in expected if cell["key"] not in finished]
    lines = [f"{len(expected) - len(missing)} of {len(expected)} competition cells finished"]
    lines += [f"  - {'damaged, left out' if cell['key'] in damaged else 'no results yet'}: {_cell_label(cell)}"
              for cell in missing]
    if not results.empty:
        for status, verb in (("failed", "failed"), ("skipped", "were skipped")):
            for (_, error), group in results[results.status == status].groupby(["cell", "error"], sort=True):
                first = group.iloc[0]
                label = f"{plugin_label(first.task, first.task_params)} × {plugin_label(first.mechanism, first.mechanism_params)} × {first.mix}"
                lines.append(f"{len(group)} competition replications {verb} in {label}: {error}")
    return lines


def _cell_label(cell: dict[str, Any]) -> str:
    return f"{plugin_label(*cell['task'])} × {plugin_label(*cell['mechanism'])} × {cell['mix']}"


def _panel_labels(results: pd.DataFrame) -> pd.Series:
    """A label per cell naming what varies between cells (the mechanism always)."""
    parts = {
        "mechanism": [plugin_label(m, p) for m, p in zip(results.mechanism, results.mechanism_params)],
        "task": [plugin_label(t, p) for t, p in zip(results.task, results.task_params)],
        "rules": results.rules.tolist(),
        "mix": results.mix.tolist(),
    }
    varying = ["mechanism"] + [k for k in ("task", "rules", "mix") if len(set(parts[k])) > 1]
    return pd.Series([" | ".join(str(parts[k][i]) for k in varying) for i in range(len(results))], index=results.index)


def shakeup_figure(results: pd.DataFrame) -> ReportFigure:
    """Public rank against private rank of every team, a panel per cell."""
    ok = results[results.status == "ok"].copy()
    ok["panel"] = _panel_labels(ok)
    panels = list(dict.fromkeys(ok.panel))[:MAX_SCATTER_PANELS]
    figure, axes = _grid(len(panels), width=3.6, height=3.4)
    for ax, panel in zip(axes, panels):
        rows = ok[ok.panel == panel]
        for _, row in rows.iterrows():
            public = stats.rankdata(row.sign * np.asarray(row.team_public, dtype=float), method="min")
            private = stats.rankdata(row.sign * np.asarray(row.team_private, dtype=float), method="min")
            honest = np.asarray(row.team_honest, dtype=bool)
            ax.scatter(public[honest], private[honest], s=3, alpha=0.35, color=HONEST_COLOR, linewidths=0)
            ax.scatter(public[~honest], private[~honest], s=10, alpha=0.8, color=OTHER_COLOR, marker="x")
        top = max(len(row.team_public) for _, row in rows.iterrows())
        ax.plot([1, top], [1, top], color="0.6", linewidth=0.8)
        ax.set_title(panel, fontsize=8)
        ax.set_xlabel("public rank")
        ax.set_ylabel("private rank")
    return ReportFigure(
        "Competition shake-up",
        "Each team's public against private rank (1 = best), all replications; blue: honest teams, "
        "red crosses: the others. On the diagonal the final ranking kept the public one.",
        figure,
    )


def box_figure(results: pd.DataFrame, column: str, title: str, caption: str, ylabel: str) -> ReportFigure:
    """A box per mechanism (and what else varies) of one measure over replications."""
    ok = results[results.status == "ok"].copy()
    ok["panel"] = _panel_labels(ok)
    labels = list(dict.fromkeys(ok.panel))
    figure = Figure(figsize=(max(4.0, 0.9 * len(labels) + 2), 3.6), layout="constrained")
    ax = figure.subplots()
    samples = [ok.loc[ok.panel == label, column].dropna().to_numpy(dtype=float) for label in labels]
    kept = [(s, i) for i, s in enumerate(samples) if s.size]
    if kept:
        ax.boxplot([s for s, _ in kept], positions=[i for _, i in kept], widths=0.6, patch_artist=True,
                   boxprops={"facecolor": "#7f7f7f", "alpha": 0.45}, medianprops={"color": "black"},
                   flierprops={"markersize": 2}, manage_ticks=False)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.axhline(0, color="0.8", linewidth=0.8)
    return ReportFigure(title, caption, figure)


def report_figures(results: pd.DataFrame) -> list[ReportFigure]:
    """Every competition figure the results support."""
    if results.empty or not (results.status == "ok").any():
        return []
    return [
        shakeup_figure(results),
        box_figure(results, "winner_delta", "Winner's delta",
                   "Δ = public − private score of the team that wins the private leaderboard, per replication.",
                   "winner's Δ"),
        box_figure(results, "honest_utility", "Honest utility",
                   "Spearman ρ between honest teams' public scores and their population scores: how well the "
                   "mechanism ranks honest work (1: perfectly).", "honest utility (ρ)"),
    ]


def html_section(expected: list[dict[str, Any]], results: pd.DataFrame, figure_html: Any) -> list[str]:
    """The competition part of the HTML page; ``figure_html`` renders a :class:`ReportFigure`."""
    if not expected and results.empty:
        return []
    table = summary(results)
    parts = ["<h2>Competitions</h2>", "<ul>", *(f"<li>{html.escape(line)}</li>" for line in status_lines(expected, results)), "</ul>"]
    if not table.empty:
        parts += [
            "<p>Median [2.5%, 97.5%] over replications: Spearman ρ of public vs private scores, top-10 overlap, "
            "the winner's Δ, the honest utility and the leaderboard error (Blum &amp; Hardt Def. 2.1, population "
            "scores); best wins = share of replications the team with the best population score won.</p>",
            f"<pre>{html.escape(text_summary(table))}</pre>",
        ]
        groups = group_summary(results)
        if not groups.empty:
            shown = groups.drop(columns=["cell"])
            parts += ["<h3>Team groups (means over replications)</h3>",
                      shown.to_html(index=False, escape=True, na_rep="–", float_format=lambda v: f"{v:.4g}", border=0)]
    parts += [figure_html(figure) for figure in report_figures(results)]
    return parts

