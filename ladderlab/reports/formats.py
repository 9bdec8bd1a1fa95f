"""A run's whole report in every format: compact text, text, Markdown, CSV and JSON.

Every format carries every section a run has (:class:`ladderlab.reports.tables.Section`):

- ``duels``: per task × mechanism × attack × budget, the replications ok / failed /
  skipped and the median [2.5%, 97.5%] over replications of Δ, the leaderboard error and
  the final submission's released, exact public and final scores (:func:`ladderlab.reports.report.summary`);
- ``duel_replications``: every duel replication's values (JSON and CSV only: a paper
  scenario has up to 120,000 of them);
- ``competitions``, ``competition_replications``, ``competition_groups``: the competition
  measures summarised per cell, per replication, and per team group
  (:mod:`ladderlab.competition.results`);
- ``certificate``: the battery rows of ``ladderlab certify`` when the run directory holds
  its certificate (``certificate.json``); text and Markdown show the certificate as
  ``certify`` writes it for people;
- ``paper_values``: the papers' values the scenario declares, beside ours
  (:mod:`ladderlab.runs.paper_values`).

JSON is one object: ``run`` (scenario, dates, versions, machine), ``status``, a list of
records per section and ``certificate`` (the whole certificate, or null). CSV is one
table with a ``section`` column. The compact text (``ladderlab report RUN`` and
``ladderlab run``) fits a 120-column terminal: the summaries' main measures, grouped by
task, with long labels cut to the parameters that vary between rows.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ladderlab.certification import certificate_text, certify
from ladderlab.competition import results as competition_results
from ladderlab.naming import plugin_label
from ladderlab.reports import extrapolation as extrapolation_report
from ladderlab.reports import zoo
from ladderlab.reports.report import (
    Run,
    cells_lacking_replications,
    status_lines,
    summary,
)
from ladderlab.reports.tables import (
    Column,
    Section,
    compact_labels,
    csv_text,
    fixed_width,
    machine_records,
    markdown_table,
    number_text,
    people_columns,
)
from ladderlab.runs import paper_values
from ladderlab.runs.rundir import write_atomically

FORMATS = ("text", "markdown", "csv", "json")
COMPACT_WIDTH = 120
"""The terminal width the compact text's notes are wrapped to."""
LIST_COLUMNS = ("released", "public", "final", "marks", "team_labels", "team_honest",
                *competition_results.SCORE_COLUMNS, *competition_results.ACTIVITY_COLUMNS, "team_gap_z")
"""Per-submission and per-team lists: in the run directory's Parquet files, not in reports."""


def certificate(run: Run) -> dict[str, Any] | None:
    """The certificate of a certify battery's run directory, or None."""
    path = run.directory / certify.CERTIFICATE_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _scalars(frame: pd.DataFrame) -> pd.DataFrame:
    """A replication table without its lists, the root seed and the team entries (the manifest has them)."""
    return frame.drop(columns=[c for c in (*LIST_COLUMNS, "seed", "teams") if c in frame])


def _battery_frame(battery: list[dict[str, Any]]) -> pd.DataFrame:
    """A certificate's battery rows as a flat table: parameter dicts stay whole (as JSON
    text), other dicts become ``key_subkey`` columns, lists (the grid) stay in the JSON."""
    rows = []
    for record in battery:
        row: dict[str, Any] = {}
        for name, value in record.items():
            if name == "params" or isinstance(value, list):
                continue
            if isinstance(value, dict) and not name.endswith("params"):
                row.update({f"{name}_{key}": item for key, item in value.items()})
            else:
                row[name] = json.dumps(value, sort_keys=True) if isinstance(value, dict) else value
        rows.append(row)
    return pd.DataFrame(rows)


HEADLINES = ("certificate", "paper_values")
"""Sections shown first: what a certify battery concluded, and the papers' values beside ours."""


def sections(run: Run) -> list[Section]:
    """Every section the run has (empty ones left out), the headlines first."""
    found = []
    duels, competitions = summary(run.results), competition_results.summary(run.competitions)
    if not run.results.empty:
        found += [
            Section("duels", "Duels", "Per task × mechanism × attack × budget: replications ok/failed/skipped, and "
                    "the median [2.5%, 97.5%] over replications of Δ = released public − final score of the "
                    "attack's final submission, of the leaderboard error (Blum & Hardt 2015, Def. 2.1), and of the "
                    "final submission's released, exact public and final scores.", duels),
            Section("duel_replications", "Duel replications", "Every replication of every duel cell.",
                    _scalars(run.results), for_people=False),
        ]
        if zoo.applies(run.results):
            found.append(Section("worst_cases", "Worst case per mechanism × attack", "Per mechanism and attack id: "
                                 "the median over replications of Δ as a loss (negative: overfitted), at the attack's "
                                 "worst parameters and task (the zoo's heat map).", zoo.worst_cases(run.results),
                                 decimals=3))
    if not run.competitions.empty:
        found += [
            Section("competitions", "Competitions", "Per competition cell: replications ok/failed/skipped, and the "
                    "median [2.5%, 97.5%] over replications of each measure (docs/competitions.md); best wins is "
                    "the share of replications the team with the best population score won, with its exact "
                    "(Clopper–Pearson) 95% interval.",
                    competitions, decimals=3),
            Section("competition_replications", "Competition replications",
                    "Every measure of every competition replication.", _scalars(run.competitions), decimals=3),
            Section("competition_groups", "Team groups", "Per competition cell and team group: means over "
                    "replications of the group's measures.", competition_results.group_summary(run.competitions),
                    decimals=3),
        ]
    found += _extrapolation_sections(run)
    issued = certificate(run)
    if issued is not None:
        said = (certificate_text.headline(issued) if issued.get("certificate_version", 1) >= 3 else
                f"Safe submission budget: {issued.get('safe_budget') or 'none of the budgets tested'}")
        headline = f"{said}. One row per attack × budget, at the attack's worst parameters."
        found.append(Section("certificate", "Certificate", headline, _battery_frame(issued.get("battery", []))))
    compared = _paper_values(run, duels, competitions)
    if not compared.empty:
        found.append(Section("paper_values", "Against the papers", paper_values.NOTE, compared))
    found = [section for section in found if not section.frame.empty]
    return sorted(found, key=lambda section: section.key not in HEADLINES)


def _extrapolation_sections(run: Run) -> list[Section]:
    """Zheng et al.'s Figure 3 experiments (``[[extrapolation]]`` tables): each predictor's error
    and the paper's statements as they came out, per mixture design."""
    if not extrapolation_report.expected_cells(run.manifest):
        return []
    tables = extrapolation_report.tables(run.extrapolations)
    if not tables:
        return []
    errors = pd.concat([frame.assign(experiment=title) for title, frame, _ in tables], ignore_index=True)
    claims = pd.concat([frame.assign(experiment=title) for title, _, frame in tables], ignore_index=True)
    return [Section("extrapolation_errors", "Accuracy extrapolation", extrapolation_report.ERROR_NOTE,
                    errors[["experiment", *errors.columns[:-1]]]),
            Section("extrapolation_statements", "The paper's statements", "Each statement of Zheng et al. "
                    "(arXiv:1606.05228, Sec. 5) as measured here, beside the same measure on the authors' own run.",
                    claims[["experiment", *claims.columns[:-1]]])]


def _paper_values(run: Run, duels: pd.DataFrame, competitions: pd.DataFrame) -> pd.DataFrame:
    """The scenario's paper values, each with our value of its measure in its cell (NaN while
    the cell has not finished), and our 95% interval beside a median; ``duels`` and
    ``competitions``: the run's summaries."""
    declared = run.manifest.get("scenario", {}).get("paper_values", [])
    if not declared:
        return pd.DataFrame()
    tables = {"duel": duels.set_index("cell"), "competition": competitions.set_index("cell")}
    replications = {"duel": run.results, "competition": run.competitions}
    rows = []
    for raw in declared:
        value = paper_values.PaperValue.model_validate(raw)
        cell = paper_values.locate(value, run.expected_cells + run.expected_competitions)
        if value.measure.endswith("_mean"):
            ours, lo, hi = _mean_of(replications[paper_values.kind(cell)], cell["key"],
                                    paper_values.REPLICATION_COLUMNS[paper_values.kind(cell)][value.measure[:-5]])
        else:
            table = tables[paper_values.kind(cell)]
            found = table.loc[cell["key"]] if cell["key"] in table.index else None
            stem = value.measure.removesuffix("_median")
            interval = stem != value.measure and found is not None
            ours = float("nan") if found is None else float(found[value.measure])
            lo, hi = (float(found[f"{stem}_lo"]), float(found[f"{stem}_hi"])) if interval else (math.nan, math.nan)
        rows.append({
            "source": value.source, "where": json.dumps(value.where), "measure": value.measure, "paper": value.value,
            "ours_median": ours, "ours_lo": lo, "ours_hi": hi,
            "difference": ours - value.value, "note": value.note, "cell": cell["key"],
        })
    return pd.DataFrame(rows)


def _mean_of(replications: pd.DataFrame, cell: str, column: str) -> tuple[float, float, float]:
    """The mean of ``column`` over the cell's finished replications, with its t interval (NaN while none finished)."""
    if replications.empty:
        return math.nan, math.nan, math.nan
    finished = replications[(replications.cell == cell) & (replications.status == "ok")]
    return paper_values.mean_interval(finished[column].astype(float))


def provenance(run: Run) -> dict[str, Any]:
    """What ran, where and when: scenario, dates, versions and machine (from the manifest), and
    the sum of the replications' wall times (what the run cost, without its workers' overhead)."""
    scenario = run.manifest.get("scenario", {})
    finished = [cell.get("finished") for cell in run.manifest.get("completed", {}).values() if cell.get("finished")]
    return {
        "directory": str(run.directory),
        "scenario": scenario.get("name", run.directory.name),
        "description": scenario.get("description", ""),
        "source": scenario.get("source", ""),
        "replications": scenario.get("replications"),
        "seed": scenario.get("seed"),
        "created": run.manifest.get("created"),
        "finished": max(finished) if finished else None,
        "complete": (run.status.complete and not competition_results.incomplete(run.expected_competitions, run.competitions)
                     and not cells_lacking_replications(run)),
        "replication_seconds": float(sum(frame.wall_time.sum() for frame in (run.results, run.competitions)
                                         if not frame.empty)),
        "versions": run.manifest.get("versions", {}),
        "machine": run.manifest.get("machine"),
    }


SECTIONS = ("duels", "duel_replications", "worst_cases", "competitions", "competition_replications",
            "competition_groups", "extrapolation_errors", "extrapolation_statements", "certificate", "paper_values")
"""Every section a report may have, in order."""


def json_text(run: Run) -> str:
    """The report as one JSON object: ``run``, ``status``, a list of records per section (empty
    when the run has none) and the whole ``certificate`` (or null)."""
    document: dict[str, Any] = {"run": provenance(run), "status": status_lines(run)}
    document |= {key: [] for key in SECTIONS if key != "certificate"}
    for section in sections(run):
        if section.key != "certificate":
            document[section.key] = machine_records(section.frame)
    document["certificate"] = certificate(run)
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _for_people(found: list[Section], issued: dict[str, Any] | None) -> list[tuple[Section, str | None]]:
    """The sections for people, with the certificate as ``certify`` writes it for people."""
    return [(section, certify.markdown(issued) if issued and section.key == "certificate" else None)
            for section in found if section.for_people]


def text(run: Run) -> str:
    """Every section for people, each table at its full width (no wrapping)."""
    found = sections(run)
    parts = []
    for section, written in _for_people(found, certificate(run)):
        parts.append(f"{section.title}\n{'=' * len(section.title)}\n{section.note}\n")
        parts.append(written or fixed_width(people_columns(section)))
        parts.append("")
    if any(section.key == "duel_replications" for section in found):
        parts.append("Every duel replication: ladderlab report RUN --format json (or csv).")
    return "\n".join(parts).rstrip() + "\n" if parts else "no finished replications yet\n"


def _demoted(markdown_text: str, levels: int) -> str:
    """Markdown with every heading ``levels`` deeper."""
    return re.sub(r"^(#+) ", lambda match: "#" * (len(match[1]) + levels) + " ", markdown_text, flags=re.M)


def sections_markdown(found: list[Section], issued: dict[str, Any] | None, heading_level: int = 2) -> str:
    """Sections for people as Markdown, their headings at ``heading_level``; the certificate
    (``issued``) as ``certify`` writes it."""
    parts = []
    for section, written in _for_people(found, issued):
        body = _demoted(written, heading_level) if written else markdown_table(people_columns(section))
        parts += [f"{'#' * heading_level} {section.title}", "", section.note, "", body, ""]
    return "\n".join(parts).rstrip() + "\n" if parts else "No finished replications yet.\n"


def markdown(run: Run, figures: Sequence[tuple[str, str]] = ()) -> str:
    """A Markdown page: the scenario's name and description, every section for people, and
    ``figures`` (title and image path, as ``report --plots`` writes them)."""
    info = provenance(run)
    parts = [f"# {info['scenario']}", "", info["description"], "", sections_markdown(sections(run), certificate(run))]
    if figures:
        parts += ["## Figures", ""] + [f"![{title}]({path})\n" for title, path in figures]
    return "\n".join(parts).rstrip() + "\n"


def render(run: Run, form: str, figures: Sequence[tuple[str, str]] = ()) -> str:
    """The report in ``form``: ``text``, ``markdown`` (linking ``figures``), ``csv`` or ``json``."""
    if form == "text":
        return text(run)
    if form == "markdown":
        return markdown(run, figures)
    if form == "csv":
        return csv_text(sections(run))
    if form == "json":
        return json_text(run)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {form!r}")


# --- compact text ----------------------------------------------------------------------------


def _wrapped(paragraphs: list[str]) -> list[str]:
    """Notes wrapped to the compact table's width."""
    return [line for paragraph in paragraphs for line in textwrap.wrap(paragraph, COMPACT_WIDTH)]


def _headed(labels: list[str]) -> dict[int, str]:
    """A heading above each row whose group label differs from the previous row's, wrapped to the compact width."""
    return {row: "\n".join(textwrap.wrap(label, COMPACT_WIDTH, subsequent_indent="    "))
            for row, label in enumerate(labels) if row == 0 or labels[row - 1] != label}


def _counts(table: pd.DataFrame) -> Column:
    """Replications ok, with failed and skipped only where some did not finish."""
    counts = table[["n_ok", "n_failed", "n_skipped"]].astype(int).to_numpy()
    if counts[:, 1:].any():
        return Column("ok/failed/skipped", ["/".join(map(str, row)) for row in counts], counts[:, 0].tolist(), True)
    return Column("ok", [str(row[0]) for row in counts], counts[:, 0].tolist(), True)


def _compact(table: pd.DataFrame, groups: list[str], measures: list[str], decimals: int, medians_only: bool
             ) -> tuple[str, list[str]]:
    """A summary as a narrow table: rows headed by their group, compact labels, the measures."""
    section = Section("compact", "", "", table[[c for c in table.columns if any(c.startswith(m) for m in measures)]],
                      decimals=decimals)
    mechanisms, notes = compact_labels(table, "mechanism")
    columns = [Column("mechanism", mechanisms, mechanisms, False)]
    if "attack" in table:
        attacks, attack_notes = compact_labels(table, "attack")
        columns.append(Column("attack", attacks, attacks, False))
        notes += attack_notes
    if "budget" in table and table.budget.notna().any():
        budgets = [number_text(b, 0) for b in table.budget]
        columns.append(Column("budget", budgets, budgets, True))
    columns.append(_counts(table))
    for column in people_columns(section):
        if medians_only:
            texts = [text.split(" [")[0] for text in column.texts]
            column = Column(column.title.replace(" median [95%]", ""), texts, column.keys, True)
        columns.append(column)
    return fixed_width(columns, _headed(groups), indent="  "), notes


def compact_text(run: Run) -> str:
    """The summaries' main measures in a table that fits a 120-column terminal."""
    parts = []
    if not run.results.empty:
        table = summary(run.results)
        tasks = [plugin_label(task, params) for task, params in zip(table.task, table.task_params)]
        body, notes = _compact(table, tasks, ["delta_", "lberr_"], 4, medians_only=False)
        parts += [body, *_wrapped([f"same in every row: {'; '.join(notes)}"] if notes else []),
                  *_wrapped(["Δ = released public − final score of the attack's final submission (below 0 on a "
                             "loss, above 0 on a score: the leaderboard flattered it); lb error = "
                             "leaderboard error; median [2.5%, 97.5%] over replications. Every column: --format text."])]
    if not run.competitions.empty:
        table = competition_results.summary(run.competitions)
        groups = [f"{plugin_label(task, params)} · {competition_results.rules_label(rules)} · mix {mix}"
                  for task, params, rules, mix in zip(table.task, table.task_params, table.rules, table["mix"])]
        measures = ["spearman_", "top10_overlap_", "winner_delta_", "honest_utility_", "leaderboard_error_",
                    "best_team_wins_"]
        body, notes = _compact(table, groups, measures, 3, medians_only=True)
        parts += ["", "competitions:"] if parts else ["competitions:"]
        parts += [body, *_wrapped([f"same in every row: {'; '.join(notes)}"] if notes else []),
                  *_wrapped(["Medians over replications (best wins: the share of replications the truly best team "
                             "won). Intervals, every measure, each replication and the team groups: --format text."])]
    if extrapolation_report.expected_cells(run.manifest):
        parts += ["", extrapolation_report.text(run.extrapolations)] if parts else \
            [extrapolation_report.text(run.extrapolations)]
    compared = _paper_values(run, summary(run.results), competition_results.summary(run.competitions))
    if not compared.empty and parts:
        parts += ["", "against the papers:", _compact_paper_values(compared),
                  *_wrapped(["paper: the value the scenario declares ([[paper_values]]); ours: our median [2.5%, "
                             "97.5%] over replications, or for a mean our mean [95% t-interval]; difference: ours − "
                             "paper. Their notes: --format text."])]
    return "\n".join(parts) + "\n" if parts else "no finished replications yet\n"


def _compact_paper_values(compared: pd.DataFrame) -> str:
    """The papers' values beside ours, under a line per source, without the notes."""
    section = Section("compact", "", "", compared.drop(columns=["source", "note"]))
    return fixed_width(people_columns(section, interval_titles=False), _headed(compared.source.tolist()), indent=" ")


def write(run: Run, form: str | None, out: str | Path | None = None, figures: Sequence[tuple[str, str]] = ()) -> str:
    """The report in ``form`` (None: the compact text), written to ``out`` when given; a Markdown
    page links ``figures``."""
    rendered = compact_text(run) if form is None else render(run, form, figures)
    if out is not None:
        write_atomically(Path(out), rendered.encode())
    return rendered
