"""Reports of a run directory: its status, the summary table, and a self-contained HTML page.

Everything comes from the run directory alone (``manifest.json`` lists the cells the
scenario expands to, ``cells/*.parquet`` holds the finished ones), so a report can
be made on another machine, while the run is still going, or after it failed.

The summary has, per task × mechanism × attack (with parameters and budget), the
median and the 95% interval (2.5% and 97.5% quantiles over replications, the
spread the papers' boxplots show) of Δ = released public − final score
(Chaibub Neto et al. 2016, ΔMSE), of the leaderboard error (Blum & Hardt 2015,
Def. 2.1) and of the final submission's released and final scores.
"""

from __future__ import annotations

import base64
import html
import json
import math
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ladderlab import competition_report, plots
from ladderlab import rundir
from ladderlab.competition_results import read_competition_files
from ladderlab.naming import plugin_label
from ladderlab.replications import median_interval, status_counts
from ladderlab.rundir import RunDirectoryError
from ladderlab.runner import cell_records, read_cell_files, verified_cell_files
from ladderlab.scenario import Scenario

GROUP_KEYS = ["task", "task_params", "mechanism", "mechanism_params", "attack", "attack_params", "budget"]
MEASURES = {"delta": "delta", "lberr": "leaderboard_error", "final_released": "final_released", "final_final": "final_final"}


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """One row per task × mechanism × attack × budget: counts by status, and the median,
    2.5% and 97.5% quantiles (``_median``, ``_lo``, ``_hi``) of every measure over the
    replications that finished."""
    columns = GROUP_KEYS + ["n_ok", "n_failed", "n_skipped"] + [
        f"{short}_{stat}" for short in MEASURES for stat in ("median", "lo", "hi")
    ]
    if results.empty:
        return pd.DataFrame(columns=columns)
    table = status_counts(results, GROUP_KEYS)
    finished = results[results.status == "ok"]
    for short, column in MEASURES.items():
        table = table.join(median_interval(finished, column, short), how="left")
    return table.reset_index()[columns]


def summary_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The summary as JSON-ready rows: ``params`` holds the task's, mechanism's and attack's
    parameters and the budget; missing values are None."""
    records = []
    for row in table.to_dict("records"):
        record: dict[str, Any] = {
            "task": row["task"],
            "mechanism": row["mechanism"],
            "attack": row["attack"],
            "params": {
                "task": json.loads(row["task_params"]),
                "mechanism": json.loads(row["mechanism_params"]),
                "attack": json.loads(row["attack_params"]),
                "budget": None if _missing(row["budget"]) else int(row["budget"]),
            },
        }
        for name, value in row.items():
            if name not in GROUP_KEYS:
                record[name] = None if _missing(value) else (int(value) if name.startswith("n_") else float(value))
        records.append(record)
    return records


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def interval_text(median: float | None, lo: float | None, hi: float | None) -> str:
    """``median [lo, hi]`` to four decimals, or a dash when nothing finished."""
    return "–" if _missing(median) else f"{median:.4f} [{lo:.4f}, {hi:.4f}]"


@dataclass(frozen=True)
class RunStatus:
    """What a run directory holds compared with what its scenario asks for."""

    expected: list[dict[str, Any]]
    finished: frozenset[str]
    results: pd.DataFrame
    damaged: dict[str, str] = field(default_factory=dict)
    """Cell files (``cells/<key>.parquet``, ``competitions/<key>.parquet``) left out because
    they do not match the manifest's checksum, with why."""
    competition_labels: dict[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> list[dict[str, Any]]:
        """Cells without a result file: not started, still running, or interrupted."""
        return [cell for cell in self.expected if cell["key"] not in self.finished]

    @property
    def complete(self) -> bool:
        """Every cell finished and no replication failed."""
        return not self.missing and (self.results.empty or not (self.results.status == "failed").any())

    def damaged_lines(self) -> list[str]:
        """Each damaged cell file (duel or competition) in words, with the cell it holds."""
        labels = {cell["key"]: _cell_label(cell["task"], cell["mechanism"], cell["attack"], cell["budget"])
                  for cell in self.expected} | self.competition_labels
        return [f"{file} ({labels.get(Path(file).stem, 'not a cell of this scenario')}) is damaged and left out: "
                f"{reason}; 'ladderlab run' will quarantine it and compute the cell again"
                for file, reason in self.damaged.items()]

    def lines(self) -> list[str]:
        """The status in words: finished cells, missing cells, failed and skipped replications."""
        lines = [f"{len(self.finished)} of {len(self.expected)} cells finished", *self.damaged_lines()]
        if self.missing:
            lines.append(f"{len(self.missing)} cells have no results yet (still running, interrupted, or not started):")
            lines += [f"  - {_cell_label(cell['task'], cell['mechanism'], cell['attack'], cell['budget'])}"
                      for cell in self.missing]
        if self.results.empty:
            return lines
        for status, verb in (("failed", "failed"), ("skipped", "were skipped")):
            rows = self.results[self.results.status == status]
            for (_, error), group in rows.groupby(["cell", "error"], sort=True):
                first = group.iloc[0]
                pairs = [(first[name], first[f"{name}_params"]) for name in ("task", "mechanism", "attack")]
                lines.append(f"{len(group)} replications {verb} in {_cell_label(*pairs)}: {error}")
        return lines


def failure_lines(results: pd.DataFrame) -> list[str]:
    """The failures of a run in words: a count line, then per cell with failed replications
    how many failed and the first error message (empty when nothing failed)."""
    if results.empty or not (results.status == "failed").any():
        return []
    failed = results[results.status == "failed"]
    lines = [f"{len(failed)} of {len(results)} replications failed, in {failed.cell.nunique()} cells:"]
    for cell, group in failed.groupby("cell", sort=False):
        first = group.sort_values("replication").iloc[0]
        pairs = [(first[name], first[f"{name}_params"]) for name in ("task", "mechanism", "attack")]
        total = int((results.cell == cell).sum())
        budget = None if _missing(first["budget"]) else int(first["budget"])
        lines.append(f"  {len(group)} of {total} failed in {_cell_label(*pairs, budget)}: first error: {first['error']}")
    return lines


def _cell_label(task: tuple[str, Any], mechanism: tuple[str, Any], attack: tuple[str, Any], budget: Any = None) -> str:
    """``task × mechanism × attack``, each with its parameters, and the budget if there is one."""
    label = " × ".join(plugin_label(*pair) for pair in (task, mechanism, attack))
    return label if budget is None else f"{label}, budget {budget}"


@dataclass(frozen=True)
class Run:
    """A run directory read back: its manifest, the cells its scenario expands to, and every
    finished replication (in the scenario's cell order)."""

    directory: Path
    manifest: dict[str, Any]
    expected_cells: list[dict[str, Any]]
    results: pd.DataFrame
    damaged: dict[str, str] = field(default_factory=dict)
    expected_competitions: list[dict[str, Any]] = field(default_factory=list)
    competitions: pd.DataFrame = field(default_factory=pd.DataFrame)
    """One row per competition replication (see :mod:`ladderlab.competition_scenario`)."""

    @property
    def status(self) -> RunStatus:
        finished = frozenset(self.results.cell) if not self.results.empty else frozenset()
        labels = {cell["key"]: f"competition {plugin_label(*cell['task'])} × {plugin_label(*cell['mechanism'])}, mix {cell['mix']}"
                  for cell in self.expected_competitions}
        return RunStatus(self.expected_cells, finished, self.results, self.damaged, labels)


def load_run(directory: str | Path) -> Run:
    """Read a run directory written by :func:`ladderlab.runner.run`, finished or not."""
    directory = Path(directory)
    manifest_path = directory / "manifest.json"
    if not manifest_path.is_file():
        raise RunDirectoryError(f"{directory} is not a run directory: it has no manifest.json (made by 'ladderlab run')")
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as error:
        raise RunDirectoryError(f"{manifest_path}: not valid JSON: {error}") from None
    expected = manifest.get("cells")
    if expected is None:  # written before manifests listed their cells: needs the plugins installed
        expected = cell_records(Scenario.model_validate(manifest["scenario"]))
    competitions = [cell for cell in expected if cell.get("kind") == "competition"]
    expected = [cell for cell in expected if cell.get("kind") != "competition"]
    files, damaged = verified_cell_files(directory)
    competition_files, damaged_competitions = rundir.verified_files(directory, "competitions")
    results = read_cell_files(files, submissions=True)
    if not results.empty:
        order = {cell["key"]: position for position, cell in enumerate(expected)}
        results = results.sort_values(["cell", "replication"], key=lambda c: c.map(order) if c.name == "cell" else c,
                                      ignore_index=True)
    damaged_files = {str(path.relative_to(directory)): reason for path, reason in (damaged | damaged_competitions).items()}
    return Run(directory, manifest, expected, results, damaged_files, competitions,
               read_competition_files(competition_files, teams=True))


MEASURE_TITLES = {"delta": "Δ", "lberr": "lb error", "final_released": "released", "final_final": "final"}


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    """The summary's identifying columns as readable labels, and its counts."""
    return pd.DataFrame({
        "task": [plugin_label(t, p) for t, p in zip(table.task, table.task_params)],
        "mechanism": [plugin_label(m, p) for m, p in zip(table.mechanism, table.mechanism_params)],
        "attack": [plugin_label(a, p) for a, p in zip(table.attack, table.attack_params)],
        "budget": ["–" if _missing(b) else str(int(b)) for b in table.budget],
        "ok/failed/skipped": [f"{o}/{f}/{s}" for o, f, s in zip(table.n_ok, table.n_failed, table.n_skipped)],
    })


def text_table(table: pd.DataFrame) -> str:
    """The summary for a terminal: labels, counts, and median [2.5%, 97.5%] of each measure."""
    if table.empty:
        return "no finished replications yet"
    shown = _labelled(table)
    for short, title in MEASURE_TITLES.items():
        shown[f"{title} median [95%]"] = [
            interval_text(m, lo, hi) for m, lo, hi in zip(table[f"{short}_median"], table[f"{short}_lo"], table[f"{short}_hi"])
        ]
    width = shutil.get_terminal_size((400, 24)).columns if sys.stdout.isatty() else 400
    with pd.option_context("display.max_colwidth", 60, "display.max_rows", 1000):
        return shown.to_string(index=False, line_width=width)


def write_table(table: pd.DataFrame, form: str) -> str:
    """The summary as ``text``, ``csv`` (parameters as JSON columns) or ``json`` (a list of rows)."""
    if form == "text":
        return text_table(table)
    if form == "csv":
        return table.to_csv(index=False)
    if form == "json":
        return json.dumps(summary_records(table), indent=2, ensure_ascii=False)
    raise ValueError(f"format must be 'text', 'csv' or 'json', got {form!r}")


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th { background: #f0f0f0; }
td:nth-child(-n+3) { text-align: left; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
.warning { color: #a40000; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
"""


def html_page(run: Run) -> str:
    """One self-contained HTML page (no script, plots embedded as PNG data): the scenario,
    the run's status, the summary table and the plots."""
    scenario = run.manifest.get("scenario", {})
    status = run.status
    table = summary(run.results)
    figures = plots.report_figures(run.results)
    title = f"ladderlab report: {scenario.get('name', run.directory.name)}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(scenario.get('description', ''))}</p>",
        f"<p>{html.escape(_provenance(run))}</p>",
        "<h2>Status</h2>",
        '<ul class="warning">' if not status.complete else "<ul>",
        *(f"<li>{html.escape(line)}</li>" for line in status.lines()),
        "</ul>",
        "<h2>Summary</h2>",
        (
            "<p>Median and 95% interval (2.5% and 97.5% quantiles over replications) of "
            "Δ = released public − final score of the attack's final submission, of the leaderboard "
            "error, and of the final submission's released and final scores.</p>"
        ),
        _html_table(table),
        "<h2>Plots</h2>",
    ]
    if not figures:
        parts.append("<p>No plots: no replication has finished yet.</p>")
    parts += [_figure_html(figure) for figure in figures]
    parts += competition_report.html_section(run.expected_competitions, run.competitions, _figure_html)
    parts += [
        "<h2>Scenario</h2>",
        f"<pre>{html.escape(json.dumps(scenario, indent=2, ensure_ascii=False))}</pre>",
        "<h2>Versions</h2>",
        f"<pre>{html.escape(json.dumps(run.manifest.get('versions', {}), indent=2))}</pre>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _figure_html(figure: plots.ReportFigure) -> str:
    data = base64.b64encode(figure.png()).decode()
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(figure.title)}">'
            f"<figcaption>{html.escape(figure.caption)}</figcaption></figure>")


def _provenance(run: Run) -> str:
    scenario = run.manifest.get("scenario", {})
    source = f"Source: {scenario['source']}. " if scenario.get("source") else ""
    return (
        f"{source}Run directory {run.directory}, created {run.manifest.get('created', '?')}, "
        f"{scenario.get('replications', '?')} replications per cell, seed {scenario.get('seed', '?')}."
    )


def _html_table(table: pd.DataFrame) -> str:
    if table.empty:
        return "<p>No finished replications yet.</p>"
    shown = _labelled(table)
    for short, title in MEASURE_TITLES.items():
        shown[f"{title} median"] = table[f"{short}_median"]
        shown[f"{title} 95%"] = [
            "–" if _missing(lo) else f"[{lo:.4f}, {hi:.4f}]" for lo, hi in zip(table[f"{short}_lo"], table[f"{short}_hi"])
        ]
    return shown.to_html(index=False, escape=True, na_rep="–", float_format=lambda v: f"{v:.4f}", border=0)
