"""Text for a terminal: every line ladderlab prints fits :data:`WIDTH` columns."""

from __future__ import annotations

import textwrap

WIDTH = 120
"""Columns of the terminal every output is written for."""


def wrapped(text: str, indent: str = "", hanging: str = "  ", width: int = WIDTH) -> str:
    """``text`` as lines of at most ``width`` columns, the first indented by ``indent`` and the
    rest by ``indent + hanging``; words (paths, ``key=value``) are never broken, nor at hyphens."""
    return "\n".join(textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + hanging,
                                   break_long_words=False, break_on_hyphens=False)) or text


def wrapped_command(command: str, indent: str = "", width: int = WIDTH) -> str:
    """A shell command as lines of at most ``width`` columns that still paste as one command
    (each but the last ends with a backslash); its words are never broken."""
    lines = textwrap.wrap(command, width - 2, initial_indent=indent, subsequent_indent=indent + "  ",
                          break_long_words=False, break_on_hyphens=False)
    return " \\\n".join(lines) or command


def wrapped_markdown(page: str, width: int = WIDTH) -> str:
    """A Markdown page as a terminal shows it: its paragraphs and list items wrapped to ``width``
    (the same Markdown once joined); table rows, code blocks and HTML comments (a page's stamp)
    are kept as they are, since breaking them would change them."""
    lines, fenced = [], False
    for line in page.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        kept = fenced or len(line) <= width or line.lstrip().startswith(("|", "<!--", "```", "~~~", "    "))
        item = len(line) - len(line.lstrip("-*0123456789. ")) if line.lstrip()[:2] in ("- ", "* ") else 0
        lines.append(line if kept else wrapped(line, width=width, hanging=" " * item))
    return "\n".join(lines)
