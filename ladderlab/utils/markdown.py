"""Markdown for the pages a report writes (``ladderlab report RUN --format markdown``), and the
sections of hand-written pages that a command writes between two markers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def table(frame: pd.DataFrame) -> str:
    """A pipe table of ``frame`` (its values as they print, ``|`` escaped); numbers right-aligned."""
    def cell(value: object) -> str:
        return "–" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value).replace("|", "\\|")

    numeric = [pd.api.types.is_numeric_dtype(frame[column]) for column in frame.columns]
    lines = ["| " + " | ".join(cell(column) for column in frame.columns) + " |",
             "|" + "|".join(" ---: " if right else " --- " for right in numeric) + "|"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def marked_section(text: str, begin: str, end: str) -> str | None:
    """The part of ``text`` from the ``begin`` marker to the ``end`` marker, both included (None:
    the text lacks either)."""
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    return None if stop < 0 else text[start:stop + len(end)]


def page_to_write(write: str | None, begin: str, end: str) -> Path | None:
    """The page a command's ``--write PAGE`` names (None without one), or ``ValueError`` before any work
    unless it exists and has the section between the markers."""
    if write is None:
        return None
    page = Path(write)
    if not page.is_file() or marked_section(page.read_text(), begin, end) is None:
        raise ValueError(f"--write {page}: the page does not exist or has no {begin} marker")
    return page


def replace_marked_section(text: str, begin: str, end: str, section: str, where: str) -> str:
    """``text`` with its part between the markers (both included) replaced by ``section``; a
    ``ValueError`` naming ``where`` (the page) when the text lacks a marker."""
    old = marked_section(text, begin, end)
    if old is None:
        raise ValueError(f"{where}: no section between {begin} and {end} to replace")
    return text.replace(old, section, 1)


def write_marked_section(page: Path, begin: str, end: str, section: str) -> None:
    """Replace the part of ``page`` between the markers (both included) with ``section``, atomically
    (:func:`replace_marked_section`); how the commands' ``--write PAGE`` keep their figures in a page."""
    from ladderlab.utils.atomic import write_atomically

    write_atomically(page, replace_marked_section(page.read_text(), begin, end, section, str(page)).encode())
