"""Plots of a run in the papers' style (matplotlib, headless: ``Figure`` objects, no pyplot state).

- :func:`scores_figure` and :func:`delta_figure`: boxplots of the final submission's
  released public and final scores, and of Δ, against the attack parameter that
  the scenario sweeps, one panel per mechanism (Chaibub Neto et al. 2016, Figs. 2,
  4, 6); without a sweep, one panel with a box per mechanism (Fig. 6).
- :func:`submissions_figure`: the released and the exact public score of the attack's
  final submission against the number of submissions, with its final-set score as the
  independent reference (Blum & Hardt 2015, Fig. 3, which plots the exact public score).
- :func:`zoo_figure`: a heat map of the worst median Δ of every mechanism × attack,
  with the attack parameters that attained it (the ``zoo`` scenario).
- :func:`trace_figure`: the released-score trace of one replication, with the
  submissions the attack marks (located jumps, iteration starts) as vertical lines
  (Chaibub Neto et al. 2016, Figs. 1, 3, 5).

:func:`report_figures` makes every figure that a run's results support.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import SymLogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ladderlab.naming import plugin_label
from ladderlab.reports import zoo
from ladderlab.utils.figure_style import fitted, styled

PANELS_PER_ROW = 4
MAX_TRACE_PANELS = 8
RELEASED_COLOR, FINAL_COLOR, DELTA_COLOR = "#1f77b4", "#d62728", "#7f7f7f"
MARK_STYLES = {"located jump": {"color": "red", "linestyle": "-"}, "iteration start": {"color": "0.6", "linestyle": ":"}}


@dataclass
class ReportFigure:
    """A figure with the words a report shows beside it."""

    title: str
    caption: str
    figure: Figure

    @property
    def slug(self) -> str:
        """A file-name form of the title."""
        return re.sub(r"[^A-Za-z0-9.]+", "-", self.title).strip("-").lower()

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
        return buffer.getvalue()


@dataclass(frozen=True)
class Sweep:
    """The cells of one task × attack family: what varies across them becomes the x axis."""

    title: str
    results: pd.DataFrame
    x_name: str | None
    x_of_cell: dict[str, Any]

    @property
    def xs(self) -> list[Any]:
        return sorted(set(self.x_of_cell.values()), key=lambda v: (isinstance(v, str), v))

    @property
    def mechanisms(self) -> list[tuple[str, str]]:
        pairs = self.results[["mechanism", "mechanism_params"]].drop_duplicates()
        return list(pairs.itertuples(index=False, name=None))

    def rows(self, mechanism: tuple[str, str]) -> pd.DataFrame:
        return self.results[(self.results.mechanism == mechanism[0]) & (self.results.mechanism_params == mechanism[1])]


def sweeps(results: pd.DataFrame) -> list[Sweep]:
    """Split finished replications by task and attack; find the swept attack parameter
    (or budget). Several swept parameters make a categorical axis of their combinations."""
    found = []
    ok = results[results.status == "ok"]
    for (task, task_params, attack), group in ok.groupby(["task", "task_params", "attack"], sort=False):
        settings = {
            cell: {**json.loads(params), "budget": None if pd.isna(budget) else int(budget)}
            for cell, params, budget in group[["cell", "attack_params", "budget"]].drop_duplicates("cell").itertuples(index=False)
        }
        varying = sorted({name for s in settings.values() for name in s if len({json.dumps(t.get(name)) for t in settings.values()}) > 1})
        if not varying:
            x_name, x_of_cell = None, {cell: "" for cell in settings}
        elif len(varying) == 1 and all(isinstance(s.get(varying[0]), (int, float)) for s in settings.values()):
            x_name, x_of_cell = varying[0], {cell: s[varying[0]] for cell, s in settings.items()}
        else:
            x_name = ", ".join(varying)
            x_of_cell = {cell: ", ".join(f"{name}={s.get(name)}" for name in varying) for cell, s in settings.items()}
        found.append(Sweep(f"{attack} on {plugin_label(task, task_params)}", group, x_name, x_of_cell))
    return found


def _grid(panels: int, width: float = 4.0, height: float = 3.2) -> tuple[Figure, list[Axes]]:
    """Panels on one shared y scale, so that a difference between mechanisms reads at a glance."""
    columns = min(panels, PANELS_PER_ROW)
    rows = -(-panels // columns)
    figure = Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False, sharey=True).ravel().tolist()
    for unused in axes[panels:]:
        unused.set_visible(False)
    return figure, axes[:panels]


def _suptitle(figure: Figure, text: str, fontsize: float = 10) -> None:
    """The figure's title, wrapped to its width."""
    figure.suptitle(fitted(text, figure.get_figwidth() * 0.95, fontsize), fontsize=fontsize)


def _boxes(ax: Axes, samples: list[np.ndarray], positions: np.ndarray, width: float, color: str) -> None:
    kept = [(s, p) for s, p in zip(samples, positions) if len(s)]
    if not kept:
        return
    ax.boxplot(
        [s for s, _ in kept], positions=[p for _, p in kept], widths=width, patch_artist=True, manage_ticks=False,
        boxprops={"facecolor": color, "alpha": 0.45}, medianprops={"color": "black"}, flierprops={"markersize": 2},
    )


def _values(rows: pd.DataFrame, sweep: Sweep, x: Any, column: str) -> np.ndarray:
    cells = [cell for cell, value in sweep.x_of_cell.items() if value == x]
    return rows.loc[rows.cell.isin(cells), column].to_numpy(dtype=float)


def _panels(sweep: Sweep, draw: Callable[[Axes, pd.DataFrame, np.ndarray, list[Any]], None]) -> tuple[Figure, list[Axes]]:
    """One panel per mechanism along the swept x, or one panel across mechanisms when nothing is swept."""
    if sweep.x_name is None:
        figure, (ax,) = _grid(1, width=max(4.0, 1.2 * len(sweep.mechanisms)), height=3.6)
        labels = [plugin_label(*m) for m in sweep.mechanisms]
        for position, mechanism in enumerate(sweep.mechanisms):
            draw(ax, sweep.rows(mechanism), np.array([position]), [""])
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_xlabel("mechanism")
        return figure, [ax]
    figure, axes = _grid(len(sweep.mechanisms))
    for ax, mechanism in zip(axes, sweep.mechanisms):
        positions = np.arange(len(sweep.xs))
        draw(ax, sweep.rows(mechanism), positions, sweep.xs)
        ax.set_xticks(positions, [f"{x:.4g}" if isinstance(x, float) else str(x) for x in sweep.xs], fontsize=8,
                      rotation=30 if len(sweep.xs) > 6 else 0)
        ax.set_xlabel(sweep.x_name)
        ax.set_title(plugin_label(*mechanism), fontsize=9)
    return figure, axes


@styled
def scores_figure(sweep: Sweep) -> ReportFigure:
    """Released public (blue) against final (red) score of the final submission (Chaibub Neto Fig. 2)."""

    def draw(ax: Axes, rows: pd.DataFrame, positions: np.ndarray, xs: list[Any]) -> None:
        for column, color, shift in (("final_released", RELEASED_COLOR, -0.18), ("final_final", FINAL_COLOR, 0.18)):
            _boxes(ax, [_values(rows, sweep, x, column) for x in xs], positions + shift, 0.32, color)
        ax.set_ylabel("score of the final submission")

    figure, axes = _panels(sweep, draw)
    handles = [Patch(facecolor=RELEASED_COLOR, alpha=0.45, label="released public"),
               Patch(facecolor=FINAL_COLOR, alpha=0.45, label="final (private)")]
    axes[0].legend(handles=handles, fontsize=8, loc="best")
    _suptitle(figure, f"Released public vs final score: {sweep.title}")
    return ReportFigure(f"scores: {sweep.title}", "Boxplots over replications of the attack's final submission: "
                        "the released public score (blue) and the score on the final set (red). "
                        "Chaibub Neto et al. 2016, Fig. 2 style.", figure)


@styled
def delta_figure(sweep: Sweep) -> ReportFigure:
    """Δ = released public − final score (Chaibub Neto Figs. 4, 6)."""

    def draw(ax: Axes, rows: pd.DataFrame, positions: np.ndarray, xs: list[Any]) -> None:
        _boxes(ax, [_values(rows, sweep, x, "delta") for x in xs], positions, 0.6, DELTA_COLOR)
        ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_ylabel("Δ = released − final")

    figure, _ = _panels(sweep, draw)
    _suptitle(figure, f"Δ of the final submission: {sweep.title}")
    return ReportFigure(f"delta: {sweep.title}", "Boxplots over replications of Δ = released public − final score "
                        "(ΔMSE; for a loss, below 0 means the leaderboard was overfitted). "
                        "Chaibub Neto et al. 2016, Figs. 4 and 6 style.", figure)


SUBMISSION_CURVES = (("final_released", "-", "released", True), ("final_public", ":", "exact public", False),
                     ("final_final", "--", "final set", True))
"""The curves of :func:`submissions_figure`: column, line style, legend text, whether a 95% band is drawn.
Blum & Hardt's Fig. 3 plots the exact public score (docs/decisions.md#fig3), which a mechanism that
rounds or holds its release does not show."""


@styled
def submissions_figure(sweep: Sweep) -> ReportFigure:
    """Median released (solid), exact public (dotted) and final (dashed) score of the final submission
    against the median number of submissions of each cell, with 95% bands (Blum & Hardt Fig. 3)."""
    figure, (ax,) = _grid(1, width=6.0, height=4.0)
    colors = [f"C{i % 10}" for i in range(len(sweep.mechanisms))]
    for color, mechanism in zip(colors, sweep.mechanisms):
        by_cell = sweep.rows(mechanism).groupby("cell")
        count = by_cell.submissions.median()
        order = np.argsort(count.to_numpy())
        x = count.to_numpy()[order]
        for column, style, what, band in SUBMISSION_CURVES:
            q = by_cell[column].quantile([0.025, 0.5, 0.975]).unstack().loc[count.index].to_numpy()[order]
            ax.plot(x, q[:, 1], style, color=color, marker="o", markersize=3, label=f"{plugin_label(*mechanism)}: {what}")
            if band:
                ax.fill_between(x, q[:, 0], q[:, 2], color=color, alpha=0.12)
    ax.set_xlabel("number of submissions")
    ax.set_ylabel("score of the attack's final submission")
    ax.set_title(fitted(f"Attack score against submissions: {sweep.title}", figure.get_figwidth() * 0.85, 10), fontsize=10)
    ax.legend(fontsize=7)
    return ReportFigure(f"submissions: {sweep.title}", "Median over replications of the score the leaderboard "
                        "released for the attack's final submission (solid; band: 95% interval), of its exact score "
                        "on the public rows (dotted), and of its score on the final set, the independent reference "
                        "(dashed; band: 95% interval). Blum & Hardt 2015, Fig. 3 style: their figure plots the exact "
                        "public score.", figure)


@styled
def trace_figure(sweep: Sweep) -> ReportFigure:
    """Released scores of the first finished replication, per mechanism, at the largest swept
    value (or the mechanism's own, where it did not play that one), with the attack's marks
    (Chaibub Neto Figs. 1, 3, 5)."""
    largest = [cell for cell, x in sweep.x_of_cell.items() if x == sweep.xs[-1]]
    mechanisms = sweep.mechanisms[:MAX_TRACE_PANELS]
    figure, axes = _grid(len(mechanisms), width=5.0, height=3.0)
    for ax, mechanism in zip(axes, mechanisms):
        rows = sweep.rows(mechanism)
        at_largest = rows[rows.cell.isin(largest)]  # a certify battery plays each mechanism at its own points
        row = (at_largest if not at_largest.empty else rows).sort_values("replication").iloc[0]
        released = np.asarray(row.released, dtype=float)
        ax.plot(np.arange(released.size), released, ".", markersize=2, color=RELEASED_COLOR, label="released")
        marks = json.loads(row.marks) if isinstance(row.marks, str) else {}
        for name, positions in marks.items():
            style = MARK_STYLES.get(name, {"color": "green", "linestyle": "--"})
            for i, position in enumerate(positions):
                ax.axvline(position, linewidth=0.8, label=name if i == 0 else None, **style)
        ax.set_title(f"{plugin_label(*mechanism)}, replication {row.replication}", fontsize=9)
        ax.set_xlabel("submission")
        ax.set_ylabel("released public score")
        ax.legend(fontsize=7, loc="best")
    suffix = f" ({sweep.x_name} = {sweep.xs[-1]})" if sweep.x_name else ""
    _suptitle(figure, f"Released-score trace: {sweep.title}{suffix}")
    return ReportFigure(f"trace: {sweep.title}", "The scores released to the attack, submission by submission, in one "
                        "replication; red lines: the jumps the attack located, dotted: where its iterations start. "
                        "Chaibub Neto et al. 2016, Figs. 1, 3 and 5 style.", figure)


def report_figures(results: pd.DataFrame) -> list[ReportFigure]:
    """Every figure the finished replications support: scores and Δ for each task × attack;
    against submissions where their number varies; traces where the attack marks submissions."""
    if results.empty or not (results.status == "ok").any():
        return []
    figures = []
    if zoo.applies(results):
        figures.append(zoo_figure(results))
    for sweep in sweeps(results):
        figures += [scores_figure(sweep), delta_figure(sweep)]
        if sweep.results.groupby("cell").submissions.median().nunique() > 1 and sweep.x_name is not None:
            figures.append(submissions_figure(sweep))
        if "marks" in sweep.results and sweep.results.marks.map(lambda m: bool(m) and m != "{}").any():
            figures.append(trace_figure(sweep))
    return figures


@styled
def zoo_figure(results: pd.DataFrame) -> ReportFigure:
    """Heat map, mechanism × attack, of the median Δ (as a loss) minimised over each attack's
    settings and tasks, annotated with the value and the worst parameters."""
    worst = zoo.worst_cases(results)
    mechanisms, attacks, values = zoo.matrix(worst)
    where = {(r.mechanism, r.attack): r for r in worst.itertuples(index=False)}
    figure = Figure(figsize=(1.0 + 2.1 * len(attacks), 1.2 + 0.75 * len(mechanisms)), layout="constrained")
    ax = figure.subplots()
    finite = values[np.isfinite(values)]
    limit = max(float(np.abs(finite).max()) if finite.size else 0.0, 1e-3)
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", aspect="auto",
                      norm=SymLogNorm(linthresh=0.01, vmin=-limit, vmax=limit))
    for i, mechanism in enumerate(mechanisms):
        for j, attack in enumerate(attacks):
            row = where.get((mechanism, attack))
            text = "not played" if row is None else f"{row.delta_median:+.3f}\n{row.worst_params}"
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                    color="white" if row is not None and abs(row.delta_median) > 0.3 * limit else "black")
    ax.grid(False)  # a heat map's cells are its grid
    ax.set_xticks(range(len(attacks)), attacks, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(mechanisms)), mechanisms, fontsize=8)
    figure.colorbar(image, ax=ax, label="worst median Δ (negative: overfitted)")
    ax.set_title("Every mechanism against every attack at its worst setting", fontsize=10)
    return ReportFigure("zoo: worst median delta, mechanism x attack",
                        "Each cell: the median over replications of Δ = released public − final score of the "
                        "attack's final submission (as a loss: below 0 the leaderboard was overfitted), at the "
                        "attack's worst parameter setting and task, which the cell names. Red: overfitted.", figure)
