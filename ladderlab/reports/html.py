"""A run's report as one self-contained HTML page.

The page says what ran (the scenario's tables in words), the run's status, every section
of :mod:`ladderlab.reports.formats` as a table for people (click a column's title to sort
by it; a column whose value is the same in every row is named once above the table), and
the plots, embedded as PNG data. Nothing is fetched from a network; the one script, inline,
sorts the tables.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import Any

from ladderlab.competition.results import rules_label
from ladderlab.naming import plugin_label
from ladderlab.reports import competition as competition_report
from ladderlab.reports import plots
from ladderlab.reports.formats import HEADLINES, provenance, sections
from ladderlab.reports.report import Run, status_lines
from ladderlab.reports.tables import (
    Column,
    Section,
    params_text,
    people_columns,
    split_constant,
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222;
       line-height: 1.4; }
h1 { margin-bottom: 0.2em; }
.provenance { color: #555; font-size: 0.9em; }
nav a { margin-right: 1em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.8em; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.4em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
th.num, td.num { text-align: right; }
td.num { min-width: 4.5em; }
td.label { white-space: nowrap; }
th button { all: unset; cursor: pointer; }
th button:focus-visible { outline: 2px solid #1f77b4; }
th[aria-sort="ascending"] button::after { content: " ▲"; }
th[aria-sort="descending"] button::after { content: " ▼"; }
.shared { font-size: 0.9em; color: #333; margin: 0.3em 0; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
.warning { color: #a40000; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
"""

_SORT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (header, column) {
    header.querySelector("button").addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var numeric = header.classList.contains("num");
      var body = table.tBodies[0];
      var key = function (row) {
        var cell = row.cells[column];
        return numeric ? (cell.dataset.key === "" ? NaN : Number(cell.dataset.key)) : cell.textContent;
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (numeric) {
          if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }
          return ascending ? x - y : y - x;
        }
        return ascending ? x.localeCompare(y) : y.localeCompare(x);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

LABEL_NOWRAP = 24
"""A label of at most this many characters is not broken across lines (not at a hyphen of 1e-05)."""
MEASURES_PER_TABLE = 10
"""The most measure columns one table of the page shows (a 1,280-pixel window holds them)."""
COMPETITION_HEADLINE = ("spearman_", "top10_overlap_", "best_team_wins_", "winner_delta_", "leaderboard_error_",
                        "honest_utility_")
"""The competition measures the page's first competition table shows (all are in "Every measure")."""


def table_html(columns: Sequence[Column]) -> str:
    """A sortable table, the columns that are the same in every row named once above it; a table
    of more than :data:`MEASURES_PER_TABLE` measures is split into tables of fewer, each with the
    row labels, so that every one fits a 1,280-pixel window."""
    columns, shared = split_constant(columns)
    said = " · ".join(f"<b>{html.escape(title)}</b>: {html.escape(text)}" for title, text in shared)
    parts = [f'<p class="shared">{said}</p>'] if shared else []
    if not columns:
        return "".join(parts)
    labels = [column for column in columns if not column.numeric]
    measures = [column for column in columns if column.numeric]
    tables = -(-len(measures) // MEASURES_PER_TABLE)
    if tables > 1:
        size = -(-len(measures) // tables)
        return "".join(parts) + "".join(_one_table([*labels, *measures[start:start + size]])
                                        for start in range(0, len(measures), size))
    return "".join(parts) + _one_table(columns)


def _one_table(columns: Sequence[Column]) -> str:
    head = "".join(f'<th scope="col"{" class=num" if column.numeric else ""}><button type="button">'
                   f"{html.escape(column.title)}</button></th>" for column in columns)
    rows = []
    for row in range(len(columns[0].texts)):
        cells = []
        for column in columns:
            text = html.escape(column.texts[row])
            if column.numeric:
                key = column.keys[row]
                cells.append(f'<td class="num" data-key="{"" if key is None else repr(float(key))}">{text}</td>')
            else:
                short = len(column.texts[row]) <= LABEL_NOWRAP
                cells.append(f'<td class="label">{text}</td>' if short else f"<td>{text}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _section_html(section: Section, columns: Sequence[Column] | None = None, level: int = 2) -> str:
    body = table_html(people_columns(section) if columns is None else columns)
    return f'<h{level} id="{section.key}">{html.escape(section.title)}</h{level}><p>{html.escape(section.note)}</p>{body}'


def _figure_html(figure: plots.ReportFigure) -> str:
    data = base64.b64encode(figure.png()).decode()
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(figure.title)}">'
            f"<figcaption>{html.escape(figure.caption)}</figcaption></figure>")


def _team_text(team: dict[str, Any]) -> str:
    """``20 × progressive-analyst (lam=0.9, view=8)``, with accounts and honesty where they differ."""
    label = team.get("label") or team["policy"]
    text = f"{team['count']} × {label}"
    details = [f"plays {plugin_label(team['policy'], team['params'])}" if label != team["policy"] or team["params"]
               else "", f"{team['accounts']} accounts each" if team.get("accounts", 1) > 1 else "",
               {True: "counted as honest", False: "not counted as honest"}.get(team.get("honest"), "")]
    details = [detail for detail in details if detail]
    return text + (f" ({'; '.join(details)})" if details else "")


def what_ran(run: Run) -> list[str]:
    """The scenario's cells in words, as HTML list items."""
    items = []
    cells = run.expected_cells
    if cells:
        def labels(role: str) -> str:
            return ", ".join(dict.fromkeys(plugin_label(*cell[role]) for cell in cells))

        budgets = sorted({cell["budget"] for cell in cells if cell.get("budget") is not None})
        items.append(f"<li><b>{len(cells)} duel cells</b>: tasks {html.escape(labels('task'))}; mechanisms "
                     f"{html.escape(labels('mechanism'))}; attacks {html.escape(labels('attack'))}"
                     + (f"; budgets {', '.join(map(str, budgets))}" if budgets else "") + ".</li>")
    competitions = run.expected_competitions
    if competitions:
        mechanisms = ", ".join(dict.fromkeys(plugin_label(*cell["mechanism"]) for cell in competitions))
        tasks = ", ".join(dict.fromkeys(plugin_label(*cell["task"]) for cell in competitions))
        rules = "; ".join(dict.fromkeys(rules_label(cell["rules"]) for cell in competitions))
        items.append(f"<li><b>{len(competitions)} competition cells</b>: task {html.escape(tasks)}; mechanisms "
                     f"{html.escape(mechanisms)}; rules {html.escape(rules)}.</li>")
        mixes = {cell["mix"]: cell["teams"] for cell in competitions}
        for name, teams in mixes.items():
            total = sum(team["count"] for team in teams)
            listed = "; ".join(_team_text(team) for team in teams)
            items.append(f"<li>Team mix <b>{html.escape(name)}</b>, {total} teams: {html.escape(listed)}.</li>")
    return items


def _headline(section: Section) -> list[Column]:
    """The competition summary's labels, counts and headline measures."""
    keep = [name for name in section.frame.columns
            if not name.endswith(("_median", "_lo", "_hi")) or name.startswith(COMPETITION_HEADLINE)]
    return people_columns(Section(section.key, section.title, section.note, section.frame[keep], decimals=3),
                          interval_titles=False)


def html_page(run: Run) -> str:
    """The whole report as one self-contained HTML page."""
    info = provenance(run)
    title = f"ladderlab report: {info['scenario']}"
    found = {section.key: section for section in sections(run)}
    lines = status_lines(run)
    warning = ' class="warning"' if not info["complete"] else ""
    machine = info["machine"]
    machine_text = (f"; machine: {machine['processor']}, {machine['cpus']} cores, {machine['memory_gib']} GiB, "
                    f"{machine['system']}, Python {machine['python']}") if machine else ""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(info['description'])}</p>",
        f'<p class="provenance">{html.escape(_provenance_text(info))}{html.escape(machine_text)}</p>',
        "<h2 id=\"what-ran\">What ran</h2>",
        "<ul>", *what_ran(run), "</ul>",
        "<p><b>Status</b></p>",
        f"<ul{warning}>", *(f"<li>{html.escape(line)}</li>" for line in lines), "</ul>",
    ]
    nav = ['<a href="#what-ran">What ran</a>'] + [
        f'<a href="#{key}">{html.escape(section.title)}</a>' for key, section in found.items() if section.for_people]
    parts.insert(parts.index("<h2 id=\"what-ran\">What ran</h2>"), f"<nav>{''.join(nav)}</nav>")
    parts += [_section_html(found[key]) for key in HEADLINES if key in found]
    if run.expected_cells:
        if "duels" in found:
            parts.append(_section_html(found["duels"]))
        else:
            parts.append('<h2 id="duels">Duels</h2><p>No duel replication has finished yet.</p>')
        figures = plots.report_figures(run.results)
        parts += [_figure_html(figure) for figure in figures]
    if run.expected_competitions:
        if "competitions" in found:
            summary = found["competitions"]
            parts.append(_section_html(summary, _headline(summary)).replace(
                "</p>", " Each cell: median [2.5%, 97.5%].</p>", 1))
            parts.append(f"<details><summary>Every measure, median [2.5%, 97.5%]</summary>"
                         f"{table_html(people_columns(summary))}</details>")
            parts.append(_section_html(found["competition_groups"], level=3) if "competition_groups" in found else "")
            replications = found["competition_replications"]
            parts.append(f'<h3 id="{replications.key}">{html.escape(replications.title)}</h3>'
                         f"<details><summary>{html.escape(replications.note)} ({len(replications.frame)} rows)</summary>"
                         f"{table_html(people_columns(replications))}</details>")
            parts += [_figure_html(figure) for figure in competition_report.report_figures(run.competitions)]
        else:
            parts.append('<h2 id="competitions">Competitions</h2><p>No competition replication has finished yet.</p>')
    if "extrapolation_errors" in found:
        from ladderlab.reports import extrapolation as extrapolation_report

        parts += [_section_html(found[key]) for key in ("extrapolation_errors", "extrapolation_statements")]
        parts += [_figure_html(figure) for figure in
                  extrapolation_report.report_figures(run.extrapolations)]
    scenario = run.manifest.get("scenario", {})
    parts += [
        "<h2 id=\"scenario\">Scenario and versions</h2>",
        "<details><summary>The scenario as run</summary>"
        f"<pre>{html.escape(json.dumps(scenario, indent=2, ensure_ascii=False))}</pre></details>",
        f"<p>Versions: {html.escape(params_text(info['versions']))}</p>",
        f"<script>{_SORT}</script>",
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part)


def _provenance_text(info: dict[str, Any]) -> str:
    source = f"Source: {info['source']}. " if info["source"] else ""
    finished = f", last cell finished {info['finished']}" if info["finished"] else ""
    return (f"{source}Run directory {info['directory']}, created {info['created'] or '?'}{finished}; "
            f"{info['replications'] or '?'} replications per cell, seed {info['seed']}")
