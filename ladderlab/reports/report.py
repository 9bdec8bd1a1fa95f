"""Reports of a run directory: its status, the summary table, and a self-contained HTML page.

Everything comes from the run directory alone (``manifest.json`` lists the cells the
scenario expands to, ``cells/*.parquet`` holds the finished ones), so a report can
be made on another machine, while the run is still going, or after it failed.

The summary has, per task × mechanism × attack (with parameters and budget), the
median and the 95% interval (2.5% and 97.5% quantiles over replications, the
spread the papers' boxplots show) of Δ = released public − final score
(Chaibub Neto et al. 2016, ΔMSE), of the leaderboard error (Blum & Hardt 2015,
Def. 2.1) and of the final submission's released, exact public and final scores.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ladderlab.competition.results import read_competition_files
from ladderlab.competition.results import status_lines as competition_status_lines
from ladderlab.naming import plugin_label
from ladderlab.reports.tables import missing
from ladderlab.runs import rundir
from ladderlab.runs.rundir import RunDirectoryError
from ladderlab.runs.runner import (
    cell_records,
    held_replications,
    read_cell_files,
    verified_cell_files,
)
from ladderlab.runs.scenario import Scenario
from ladderlab.stats.replications import (
    DUEL_MEASURES,
    median_interval,
    status_counts,
    summary_columns,
)

GROUP_KEYS = ["task", "task_params", "mechanism", "mechanism_params", "attack", "attack_params", "budget"]
MEASURES = DUEL_MEASURES


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """One row per task × mechanism × attack × budget: counts by status, and the median,
    2.5% and 97.5% quantiles (``_median``, ``_lo``, ``_hi``) of every measure over the
    replications that finished."""
    columns = ["cell", *GROUP_KEYS, "n_ok", "n_failed", "n_skipped", *summary_columns(MEASURES)]
    if results.empty:
        return pd.DataFrame(columns=columns)
    table = status_counts(results, GROUP_KEYS)
    finished = results[results.status == "ok"]
    for short, column in MEASURES.items():
        table = table.join(median_interval(finished, column, short), how="left")
    return table.reset_index()[columns]


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
        budget = None if missing(first["budget"]) else int(first["budget"])
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
    """One row per competition replication (see :mod:`ladderlab.competition.scenario`)."""
    extrapolations: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The rows of the verified extrapolation cells (:mod:`ladderlab.reports.extrapolation`)."""

    @property
    def status(self) -> RunStatus:
        finished = frozenset(self.results.cell) if not self.results.empty else frozenset()
        labels = {cell["key"]: f"competition {plugin_label(*cell['task'])} × {plugin_label(*cell['mechanism'])}, mix {cell['mix']}"
                  for cell in self.expected_competitions}
        return RunStatus(self.expected_cells, finished, self.results, self.damaged, labels)


def load_run(directory: str | Path) -> Run:
    """Read a run directory written by :func:`ladderlab.runs.runner.run`, finished or not."""
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
    expected = [cell for cell in expected if cell.get("kind") is None]
    files, damaged = verified_cell_files(directory)
    competition_files, damaged_competitions = rundir.verified_files(directory, "competitions")
    results = _in_scenario_order(read_cell_files(files, submissions=True), expected)
    extrapolations, damaged_extrapolations = pd.DataFrame(), {}
    if any(cell.get("kind") == "extrapolation" for cell in manifest.get("cells") or []):
        from ladderlab.reports import (
            extrapolation as extrapolation_report,  # its experiment imports scikit-learn
        )

        extrapolations, damaged_extrapolations = extrapolation_report.load(directory)
    damaged_files = {str(path.relative_to(directory)): reason
                     for path, reason in (damaged | damaged_competitions | damaged_extrapolations).items()}
    return Run(directory, manifest, expected, results, damaged_files, competitions,
               _in_scenario_order(read_competition_files(competition_files, teams=True), competitions), extrapolations)


def _in_scenario_order(results: pd.DataFrame, expected: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows ordered by their cell's place in the scenario, then by replication."""
    if results.empty:
        return results
    order = {cell["key"]: position for position, cell in enumerate(expected)}
    return results.sort_values(["cell", "replication"], key=lambda c: c.map(order) if c.name == "cell" else c,
                               ignore_index=True)


def status_lines(run: Run) -> list[str]:
    """The run's status in words: its duel cells (unless it has only competitions or
    extrapolations: then only damaged files), its competition and extrapolation cells."""
    from ladderlab.reports import extrapolation as extrapolation_report

    extrapolations = extrapolation_report.expected_cells(run.manifest)
    duels = bool(run.expected_cells) or not (run.expected_competitions or extrapolations)
    lines = run.status.lines() if duels else run.status.damaged_lines()
    damaged = {Path(file).stem for file in run.damaged}
    if run.expected_competitions:
        lines += competition_status_lines(run.expected_competitions, run.competitions, damaged)
    if extrapolations:
        lines += extrapolation_report.status_lines(extrapolations, run.extrapolations, damaged)
    return lines + topped_up_lines(run)


def cells_lacking_replications(run: Run) -> dict[str, int]:
    """The finished cells whose files hold fewer replications than the scenario asks for (its
    replications were raised since they ran, :func:`ladderlab.runs.runner.grows`), with how many they hold."""
    wanted = run.manifest.get("scenario", {}).get("replications")
    return {key: count for key, count in held_replications(run.manifest).items() if count < wanted}


def topped_up_lines(run: Run) -> list[str]:
    """The cells not yet topped up to the scenario's replications, in words (none when every cell is)."""
    lacking = cells_lacking_replications(run)
    if not lacking:
        return []
    counts = Counter(lacking.values())
    held = "; ".join(f"{cells} cell{'s hold' if cells > 1 else ' holds'} {count}" for count, cells in sorted(counts.items()))
    return [f"{len(lacking)} of {len(run.manifest.get('completed', {}))} finished cells hold fewer than the scenario's "
            f"{run.manifest['scenario']['replications']} replications, and their numbers rest on those ({held}): "
            "'ladderlab run' computes only the ones they lack"]
