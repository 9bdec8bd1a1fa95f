"""One look for every figure ladderlab draws (reports, competitions, extrapolations, tuning).

:data:`STYLE` holds the matplotlib settings they share: sizes that stay legible when a figure is
shrunk into a page, constrained layout (so that titles, labels and rotated tick labels get room
instead of colliding or being cut), light grids, no top and right frame. :func:`styled` applies
it to a function that builds a figure: matplotlib reads its settings when an artist is made.
It lives below every area that draws (statistics, certification, extrapolation and reports).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

STYLE: dict[str, Any] = {
    "figure.constrained_layout.use": True,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "legend.fontsize": 8.0,
    "figure.titlesize": 11.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "image.cmap": "RdBu",
}
"""The matplotlib settings every figure is drawn with."""

Builder = TypeVar("Builder", bound=Callable[..., Any])


def styled(build: Builder) -> Builder:
    """``build`` (a function that makes a figure) run with :data:`STYLE` in force."""

    @functools.wraps(build)
    def in_style(*args: Any, **kwargs: Any) -> Any:
        import matplotlib  # where a figure is made: modules that draw load without it

        with matplotlib.rc_context(STYLE):
            return build(*args, **kwargs)

    return in_style  # type: ignore[return-value]


CHARACTER_WIDTH = 0.6
"""A character's average width in units of the font size (DejaVu Sans, measured: 0.55-0.6)."""


def fitted(text: str, width_inches: float, fontsize: float) -> str:
    """``text`` wrapped into lines that fit ``width_inches`` at ``fontsize`` points: a title as wide
    as its figure or panel, never cut by the edge."""
    import textwrap

    characters = max(10, int(width_inches * 72 / (fontsize * CHARACTER_WIDTH)))
    return "\n".join(textwrap.wrap(text, characters, break_long_words=False, break_on_hyphens=False)) or text
