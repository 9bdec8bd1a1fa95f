"""The accuracy-extrapolation part of a run's report (``[[extrapolation]]`` tables): status,
the error table, the paper's Sec. 5 statements as they came out, and Figure 3.

Zheng, Achanta & Benjamini, arXiv:1606.05228, Sec. 5 (:mod:`ladderlab.extrapolation.experiment`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pandas as pd

from ladderlab.extrapolation.experiment import (
    AUTHORS_RUN,
    CLASSIFIER_LABELS,
    PREDICTOR_LABELS,
    MixtureDesign,
    figure,
    statements,
    summarise,
)
from ladderlab.extrapolation.scenario import ExtrapolationCell, read_files
from ladderlab.reports.plots import ReportFigure
from ladderlab.runs import rundir


def expected_cells(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The manifest's extrapolation cells."""
    return [cell for cell in manifest.get("cells", []) if cell.get("kind") == "extrapolation"]


def load(directory: str | Path) -> tuple[pd.DataFrame, dict[Path, str]]:
    """Every verified extrapolation cell's rows, and the damaged files with why."""
    files, damaged = rundir.verified_files(Path(directory), ExtrapolationCell.directory)
    return read_files(files), damaged


def _design_label(mixture: str) -> str:
    changed = {k: v for k, v in json.loads(mixture).items() if v != getattr(MixtureDesign(), k)}
    return ", ".join(f"{k} = {v}" for k, v in changed.items()) or "the authors' mixture"


def status_lines(expected: list[dict[str, Any]], results: pd.DataFrame, damaged: Collection[str] = ()) -> list[str]:
    """Finished and missing extrapolation cells (``damaged``: the keys of cells whose file is
    damaged and left out) and failed replications, in words."""
    finished = set(results.cell) if not results.empty else set()
    missing = [cell for cell in expected if cell["key"] not in finished]
    lines = [f"{len(expected) - len(missing)} of {len(expected)} extrapolation cells finished"]
    lines += [f"  - {'damaged, left out' if cell['key'] in damaged else 'no results yet'}: {cell['classifier']} on "
              f"{_design_label(json.dumps(cell['mixture']))}" for cell in missing]
    failed = results[results.status == "failed"] if not results.empty else results
    for (classifier, error), group in failed.groupby(["classifier", "error"], sort=True):
        lines.append(f"{len(group)} extrapolation replications failed for {classifier}: {error}")
    return lines


def _experiments(results: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The finished rows of each mixture design, with its label."""
    if results.empty:
        return []
    finished = results[results.status == "ok"]
    return [(_design_label(mixture), group) for mixture, group in finished.groupby("mixture", sort=False)]


def _error_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per convention and classifier: each predictor's mean absolute error (share of k closest)."""
    rows = []
    for (convention, classifier), group in summary.groupby(["convention", "classifier"], sort=False):
        row = {"convention": convention, "classifier": CLASSIFIER_LABELS.get(classifier, classifier).split(" (")[0]}
        for record in group.itertuples():
            failed = f", {record.failed} failed" if record.failed else ""
            row[PREDICTOR_LABELS[record.predictor]] = f"{record.mean_abs_error:.3f} ({record.closest_share:.0%}{failed})"
        rows.append(row)
    return pd.DataFrame(rows)


def _statement_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Each statement per convention, beside the same measure on the authors' own run."""
    reference = {statement.claim: statement for statement in statements(AUTHORS_RUN)}
    rows = []
    for convention, group in summary.groupby("convention", sort=False):
        for statement in statements(group):
            theirs = reference[statement.claim]
            rows.append({"convention": convention, "the paper says": statement.claim,
                         "measured as": statement.measure, "here": statement.value,
                         "holds here": "yes" if statement.holds else "no",
                         "authors' run": f"{theirs.value} ({'holds' if theirs.holds else 'does not hold'})"})
    return pd.DataFrame(rows)


def tables(results: pd.DataFrame) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    found = []
    for label, group in _experiments(results):
        summary = summarise(group)
        replications = group.replication.nunique()
        title = f"Zheng et al. Figure 3 on {label}, {replications} replication{'s' if replications > 1 else ''}"
        found.append((title, _error_table(summary), _statement_table(summary)))
    return found


def _authors_errors() -> str:
    table = AUTHORS_RUN.set_index(["classifier", "predictor"]).mean_abs_error
    return ", ".join(f"{CLASSIFIER_LABELS[c].split(' (')[0]} " + " / ".join(f"{table[(c, p)]:.3f}" for p in PREDICTOR_LABELS)
                     for c in dict.fromkeys(AUTHORS_RUN.classifier))


ERROR_NOTE = ("Mean absolute error of each predictor of acc(K) over the subset sizes k < K (replications "
              "pooled), and in brackets the share of those k at which it is the closest predictor. The authors' "
              f"own run (one mixture, their R code) by the same measure, acc(k) / EXP / CONS / HD: {_authors_errors()}.")


def text(results: pd.DataFrame) -> str:
    """The error tables and the statements, for a terminal."""
    parts = []
    with pd.option_context("display.width", 400, "display.max_colwidth", 120):
        for title, errors, claims in tables(results):
            parts += [title, ERROR_NOTE, errors.to_string(index=False), "",
                      claims[["convention", "the paper says", "here", "holds here"]].to_string(index=False), ""]
    return "\n".join(parts) if parts else "no finished extrapolation replications yet"


def report_figures(results: pd.DataFrame) -> list[ReportFigure]:
    """Figure 3 for each mixture design: a panel per classifier, a row per convention."""
    return [ReportFigure(f"Zheng et al. Figure 3, {label}",
                         "Predicted acc(K) against the number k of classes observed, for acc(k), EXP, CONS and HD; "
                         "the dashed line is the accuracy on all K classes (arXiv:1606.05228, Fig. 3).",
                         figure(group))
            for label, group in _experiments(results)]
