"""The competition plots of a run's report (matplotlib ``Figure`` objects, no pyplot state):

- shake-up scatter: every team's public rank against its private rank, one panel per
  mechanism (and task, rules, mix when they vary), pooled over replications; points on
  the diagonal kept their rank, honest teams and the others in two colours;
- the winner's Δ (public − private score of the private winner), a box per mechanism;
- the honest utility (Spearman ρ of the honest teams' public and population scores),
  a box per mechanism.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from ladderlab.competition.results import rules_label
from ladderlab.naming import plugin_label
from ladderlab.reports.plots import ReportFigure, _grid
from ladderlab.utils.figure_style import styled

MAX_SCATTER_PANELS = 12
HONEST_COLOR, OTHER_COLOR = "#1f77b4", "#d62728"


def _label_parts(results: pd.DataFrame) -> dict[str, list[str]]:
    return {
        "mechanism": [plugin_label(m, p) for m, p in zip(results.mechanism, results.mechanism_params)],
        "task": [plugin_label(t, p) for t, p in zip(results.task, results.task_params)],
        "rules": [rules_label(r) for r in results.rules],
        "mix": [f"mix {m}" for m in results.mix],
    }


def _panel_labels(results: pd.DataFrame) -> pd.Series:
    """A label per cell naming what varies between cells (the mechanism always)."""
    parts = _label_parts(results)
    varying = ["mechanism"] + [k for k in ("task", "rules", "mix") if len(set(parts[k])) > 1]
    return pd.Series([" | ".join(parts[k][i] for k in varying) for i in range(len(results))], index=results.index)


def _shared_label(results: pd.DataFrame) -> str:
    """What every cell shares (task, rules, mix), for a figure's title."""
    parts = _label_parts(results)
    return " · ".join(values[0] for key, values in parts.items() if key != "mechanism" and len(set(values)) == 1)


def _wrapped(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


@styled
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
        ax.set_title(_wrapped(panel, 40), fontsize=8)
        ax.set_xlabel("public rank")
        ax.set_ylabel("private rank")
    figure.suptitle(_wrapped(f"Public against private rank: {_shared_label(ok)}", 110), fontsize=9)
    return ReportFigure(
        "Competition shake-up",
        "Each team's public against private rank (1 = best), all replications; blue: honest teams, "
        "red crosses: the others. On the diagonal the final ranking kept the public one.",
        figure,
    )


@styled
def box_figure(results: pd.DataFrame, column: str, title: str, caption: str, ylabel: str) -> ReportFigure:
    """A horizontal box per mechanism (and what else varies) of one measure over replications:
    each label has a row as tall as its wrapped lines, so long labels never overlap."""
    ok = results[results.status == "ok"].copy()
    ok["panel"] = _panel_labels(ok)
    labels = list(dict.fromkeys(ok.panel))
    wrapped = [_wrapped(label, 48) for label in labels]
    lines = max(text.count("\n") + 1 for text in wrapped)
    figure = Figure(figsize=(8.0, 1.4 + len(labels) * (0.16 * lines + 0.12)), layout="constrained")
    ax = figure.subplots()
    samples = [ok.loc[ok.panel == label, column].dropna().to_numpy(dtype=float) for label in labels]
    kept = [(s, i) for i, s in enumerate(samples) if s.size]
    if kept:
        ax.boxplot([s for s, _ in kept], positions=[i for _, i in kept], widths=0.6, patch_artist=True,
                   orientation="horizontal", boxprops={"facecolor": "#7f7f7f", "alpha": 0.45},
                   medianprops={"color": "black"}, flierprops={"markersize": 2}, manage_ticks=False)
    ax.set_yticks(range(len(labels)), wrapped, fontsize=7)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(ylabel)
    ax.set_title(_wrapped(f"{title}: {_shared_label(ok)}", 100), fontsize=9)
    ax.axvline(0, color="0.8", linewidth=0.8)
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
