"""The tables of a report, for machines and for people, generic over their columns.

A report is a list of :class:`Section` s, each a table of machine values (one row per
record; parameters as JSON text in the ``*_params`` and ``rules`` columns). The same
section is rendered

- for machines: JSON records (parameters as objects under ``params``, NaN as null) and
  CSV (every section in one table, a ``section`` column first);
- for people (text, Markdown, HTML): plugins named with their parameters
  (``ladder-t(alpha=0.15)``), a measure's ``_median``, ``_lo`` and ``_hi`` columns as one
  column ``median [lo, hi]``, counts by status as ``ok/failed/skipped``.

Nothing here knows which measures a run has, so a column added to a summary (a new
measure, an interval) appears in every format without a change here.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ladderlab.naming import plugin_label
from ladderlab.utils.strict_json import finite_or_null
from ladderlab.utils.terminal import wrapped

ROLES = ("task", "mechanism", "attack")
"""Plugin columns: ``role`` holds the id and ``role_params`` its parameters as JSON text."""
JSON_COLUMNS = ("rules", "teams", "groups", "where")
"""Further columns of JSON text (besides ``*_params``)."""
INTERVAL_TITLES = {"paper_values": "[95%]"}
"""How an interval column's title says what it holds, where not ``median [95%]``: the papers' values
set our median or our mean beside the paper's, as the section's note says."""
HIDDEN = ("cell", "seed", "groups", "sign")
"""Columns people do not read: file keys, the root seed (in the provenance), a replication's
group measures (the team groups' table summarises them), a score's orientation."""
TITLES = {
    "delta": "Δ", "lberr": "lb error", "final_released": "released", "final_final": "final",
    "final_public": "public", "leaderboard_error": "lb error", "leaderboard_error_median": "median team lb error",
    "spearman": "Spearman", "kendall": "Kendall", "top10_overlap": "top-10 overlap", "best_team_wins": "best wins",
    "best_team_private_rank": "best team's private rank", "winner_population_rank": "winner's population rank",
    "winner_delta": "winner's Δ", "honest_utility": "honest utility", "sota_estimate": "SOTA estimate",
    "sota_observed": "best private accuracy", "sota_true": "true best accuracy", "wall_time": "wall s",
    "public_rank_mean": "mean public rank", "private_rank_mean": "mean private rank",
    "private_rank_best": "best private rank", "delta_mean": "mean Δ", "private_mean": "mean private",
    "population_mean": "mean population", "first_leading_round": "first leading day",
    "first_perfect_round": "first perfect day", "delta_median": "worst median Δ", "worst_params": "worst parameters", "final_perfect": "share perfect", "last_round_mean": "mean last day",
}
STATUS_COUNTS = ("n_ok", "n_failed", "n_skipped")
INTERVAL = ("_median", "_lo", "_hi")
DASH = "–"


@dataclass(frozen=True)
class Section:
    """One table of a report."""

    key: str
    """Its name for machines: the JSON key and the CSV ``section`` value."""
    title: str
    note: str
    """What its numbers are, in one or two sentences."""
    frame: pd.DataFrame
    for_people: bool = True
    """Shown in text, Markdown and HTML (False: too long for people; JSON and CSV carry it)."""
    decimals: int = 4


@dataclass(frozen=True)
class Column:
    """A column of a table for people: its title, each row's text, and what a sort orders by."""

    title: str
    texts: list[str]
    keys: list[Any]
    numeric: bool


def missing(value: Any) -> bool:
    """None, NaN or pandas' NA."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy numbers as Python's, NaN as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if missing(value):
        return None
    return value


def _is_json(name: str, value: Any) -> bool:
    """A value of a JSON column (``*_params``, :data:`JSON_COLUMNS`) holding an object or a list."""
    return ((name.endswith("_params") or name in JSON_COLUMNS) and isinstance(value, str)
            and value.startswith(("{", "[")))


def machine_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows as JSON-ready dicts: ``params`` holds every ``role_params`` column (as objects),
    the ``rules`` and the ``budget`` where the table has them; other JSON columns are objects;
    missing values are None."""
    params_columns = [f"{role}_params" for role in ROLES if f"{role}_params" in frame]
    nested = params_columns + [name for name in ("rules", "budget") if name in frame and params_columns]
    records = []
    for row in frame.to_dict("records"):
        record: dict[str, Any] = {}
        params: dict[str, Any] = {}
        for name, value in row.items():
            value = _plain(value)
            if _is_json(name, value):
                value = finite_or_null(json.loads(value))
            if name == "budget" and value is not None:
                value = int(value)
            if name in nested:
                params[name.removesuffix("_params")] = value
                if "params" not in record:
                    record["params"] = params
            else:
                record[name] = value
        records.append(record)
    return records


def csv_text(sections: Sequence[Section]) -> str:
    """Every section in one CSV table: a ``section`` column, then the union of the sections'
    columns in order of appearance (empty where a section has no such column)."""
    frames = [section.frame.assign(section=section.key).astype(
        {name: "Int64" for name, dtype in section.frame.dtypes.items() if pd.api.types.is_integer_dtype(dtype)})
        for section in sections if not section.frame.empty]
    if not frames:
        return "section\n"
    table = pd.concat(frames, ignore_index=True, sort=False)
    table = table[["section", *[c for c in table.columns if c != "section"]]]
    buffer = io.StringIO()
    table.to_csv(buffer, index=False)
    return buffer.getvalue()


def title_of(name: str) -> str:
    """A column's title for people."""
    return TITLES.get(name, name.replace("_", " "))


def number_text(value: Any, decimals: int) -> str:
    """A number for people with ``decimals`` decimals (a dash for a missing one)."""
    return DASH if missing(value) else f"{value:.{decimals}f}"


def column_decimals(values: Sequence[Any], decimals: int) -> int:
    """Decimals for a column of numbers: none when all are whole or at least 100 in size, one
    when some is ≥ 10 in size, ``decimals`` otherwise."""
    present = [float(v) for v in values if not missing(v)]
    if all(v.is_integer() or abs(v) >= 100 for v in present):
        return 0
    return 1 if any(abs(v) >= 10 for v in present) else decimals


def interval_text(median: Any, lo: Any, hi: Any, decimals: int = 4) -> str:
    """``median [lo, hi]``, the median alone without an interval, or a dash when nothing finished."""
    if missing(median):
        return DASH
    if missing(lo) or missing(hi):
        return f"{median:.{decimals}f}"
    return f"{median:.{decimals}f} [{lo:.{decimals}f}, {hi:.{decimals}f}]"


def params_text(value: Any) -> str:
    """Parameters (a dict, or its JSON) as ``k=v, …``."""
    if isinstance(value, str) and value.startswith("{"):
        value = json.loads(value)
    if not isinstance(value, dict):
        return DASH if missing(value) else str(value)
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items() if v is not None)


def _sort_key(value: Any) -> Any:
    return None if missing(value) else value


def people_columns(section: Section, interval_titles: bool = True) -> list[Column]:
    """The section's columns for people (see the module docstring); ``interval_titles=False``
    leaves " median [95%]" out of the titles of interval columns (for a table whose caption
    says it)."""
    frame = section.frame
    names = [name for name in frame.columns if name not in HIDDEN]
    consumed: set[str] = set()
    columns = []
    for name in names:
        if name in consumed:
            continue
        values = frame[name].tolist()
        if name in ROLES and f"{name}_params" in frame:
            consumed.add(f"{name}_params")
            texts = [plugin_label(i, p) for i, p in zip(values, frame[f"{name}_params"])]
            columns.append(Column(name, texts, texts, False))
        elif name == STATUS_COUNTS[0] and all(c in frame for c in STATUS_COUNTS):
            consumed.update(STATUS_COUNTS)
            counts = frame[list(STATUS_COUNTS)].to_numpy()
            texts = ["/".join(str(int(c)) for c in row) for row in counts]
            columns.append(Column("ok/failed/skipped", texts, [int(row[0]) for row in counts], True))
        elif name.endswith(INTERVAL[0]) and all(name.removesuffix(INTERVAL[0]) + s in frame for s in INTERVAL[1:]):
            stem = name.removesuffix(INTERVAL[0])
            consumed.update(stem + s for s in INTERVAL)
            lo, hi = frame[stem + "_lo"].tolist(), frame[stem + "_hi"].tolist()
            texts = [interval_text(m, a, b, section.decimals) for m, a, b in zip(values, lo, hi)]
            title = f"{title_of(stem)} {INTERVAL_TITLES.get(section.key, 'median [95%]')}" if interval_titles \
                else title_of(stem)
            columns.append(Column(title, texts, [_sort_key(v) for v in values], True))
        elif any(isinstance(v, dict) or _is_json(name, v) for v in values):
            texts = [params_text(v) for v in values]
            columns.append(Column(title_of(name), texts, texts, False))
        elif pd.api.types.is_numeric_dtype(frame[name]) and not pd.api.types.is_bool_dtype(frame[name]):
            decimals = column_decimals(values, section.decimals)
            texts = [number_text(v, decimals) for v in values]
            columns.append(Column(title_of(name), texts, [_sort_key(v) for v in values], True))
        else:
            texts = [DASH if missing(v) or v == "" else ("yes" if v is True else "no" if v is False else str(v))
                     for v in values]
            columns.append(Column(title_of(name), texts, texts, False))
    return columns


def split_constant(columns: Sequence[Column]) -> tuple[list[Column], list[tuple[str, str]]]:
    """The columns, less those empty in every row (a dash) and the label columns whose text is
    the same in every row of several; those as (title, text) pairs, to be said once."""
    columns = [column for column in columns if any(text != DASH for text in column.texts)]
    if not columns or len(columns[0].texts) < 2:
        return list(columns), []
    kept, shared = [], []
    for column in columns:
        if not column.numeric and len(set(column.texts)) == 1:
            shared.append((column.title, column.texts[0]))
        else:
            kept.append(column)
    return kept, shared


def fixed_width(columns: Sequence[Column], headings: dict[int, str] | None = None, indent: str = "") -> str:
    """Columns as aligned text (labels left, numbers right, two spaces apart); ``headings``
    puts a line above the row of that index."""
    if not columns:
        return ""
    widths = [max(len(column.title), *(len(text) for text in column.texts)) for column in columns]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(width) if column.numeric else cell.ljust(width)
                 for cell, width, column in zip(cells, widths, columns)]
        return (indent + "  ".join(parts)).rstrip()

    lines = [line([column.title for column in columns])]
    for row in range(len(columns[0].texts)):
        if headings and row in headings:
            lines.append(headings[row])
        lines.append(line([column.texts[row] for column in columns]))
    return "\n".join(lines)


def folded(columns: Sequence[Column], width: int) -> str:
    """Columns as aligned text in blocks at most ``width`` wide where they fit: the label columns
    that are the same in every row said once above; leading label columns that leave too little
    room made headings over the rows they group; then each block the row labels and as many
    measures as fit beside them (at least one)."""
    columns, shared = split_constant(columns)
    above = [f"{title}: {text}" for title, text in shared]
    labels = [column for column in columns if not column.numeric]
    measures = [column for column in columns if column.numeric]

    def width_of(column: Column) -> int:
        return max(len(column.title), *(len(text) for text in column.texts)) + 2

    widest = max(map(width_of, measures), default=0)
    grouping: list[Column] = []
    while len(labels) > 1 and sum(map(width_of, labels)) + widest > width:
        grouping.append(labels.pop(0))
    groups = [" · ".join(f"{column.title} {column.texts[row]}" for column in grouping)
              for row in range(len(columns[0].texts))] if grouping and columns else []
    headings = {row: wrapped(group, hanging="    ", width=width)
                for row, group in enumerate(groups) if row == 0 or groups[row - 1] != group}
    room = width - sum(map(width_of, labels))
    blocks: list[list[Column]] = []
    for measure in measures:
        if blocks and sum(map(width_of, blocks[-1])) + width_of(measure) <= room:
            blocks[-1].append(measure)
        else:
            blocks.append([measure])
    tables = [fixed_width([*labels, *block], headings) for block in blocks] or [fixed_width(labels, headings)]
    return "\n".join(above + ["\n\n".join(tables)])


def markdown_table(columns: Sequence[Column]) -> str:
    """Columns as a Markdown pipe table (numbers right-aligned), the label columns that are the
    same in every row said once above it."""
    columns, shared = split_constant(columns)

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    above = [" · ".join(f"**{title}**: {cell(text)}" for title, text in shared), ""] if shared else []
    if not columns:
        return above[0] if above else ""
    lines = above + ["| " + " | ".join(cell(column.title) for column in columns) + " |",
             "|" + "|".join(" ---: " if column.numeric else " --- " for column in columns) + "|"]
    lines += ["| " + " | ".join(cell(column.texts[row]) for column in columns) + " |"
              for row in range(len(columns[0].texts))]
    return "\n".join(lines)


LABEL_WIDTH = 30
"""A compact label longer than this keeps only the parameters that vary between rows."""


def compact_labels(frame: pd.DataFrame, role: str, width: int = LABEL_WIDTH) -> tuple[list[str], list[str]]:
    """Labels of a plugin role for a narrow table, and notes naming what they leave out.

    A label of at most ``width`` characters is the full ``id(k=v, …)``; a longer one keeps
    only the parameters whose values differ between the rows of that plugin, and a note
    (``id: k=v, …``) names the rest, which every row of it shares.
    """
    ids, params = frame[role].tolist(), [json.loads(p) for p in frame[f"{role}_params"]]
    varying: dict[str, set[str]] = {}
    for plugin_id in dict.fromkeys(ids):
        settings = [p for i, p in zip(ids, params) if i == plugin_id]
        names = {name for setting in settings for name in setting}
        varying[plugin_id] = {name for name in names
                              if len({json.dumps(s.get(name), sort_keys=True) for s in settings}) > 1}
    labels, notes = [], {}
    for plugin_id, setting in zip(ids, params):
        full = plugin_label(plugin_id, setting)
        if len(full) <= width:
            labels.append(full)
            continue
        labels.append(plugin_label(plugin_id, {k: v for k, v in setting.items() if k in varying[plugin_id]}))
        shared = {k: v for k, v in setting.items() if k not in varying[plugin_id]}
        if shared:
            notes[plugin_id] = f"{plugin_label(plugin_id, {})}: {params_text(shared)}"
    return labels, list(notes.values())
