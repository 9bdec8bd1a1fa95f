"""What makes a figure unreadable, found with matplotlib's own extents: texts that collide, and
texts cut by the figure's edge.

Every visible text of a drawn figure (titles, axis labels, tick labels, legend entries, colour-bar
labels, annotations) is measured with ``get_window_extent`` on the figure's renderer. Two texts
collide when their outlines (rotated with them) overlap by more than :data:`TOLERANCE_PIXELS`; a text is cut
when its box leaves the figure's canvas by more than that (as ``savefig`` without
``bbox_inches="tight"`` would cut it).
"""

from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axis import Axis, Tick
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

TOLERANCE_PIXELS = 1.0
"""Anti-aliasing slack: boxes that touch within a pixel are apart."""


def _texts(artist: Artist) -> list[Text]:
    """The visible, non-empty texts under ``artist`` that are drawn: those of a hidden axes or
    legend left out, and the tick labels of ticks outside the axis' view (matplotlib skips them)."""
    if not artist.get_visible():
        return []
    if isinstance(artist, Axis):
        low, high = sorted(artist.get_view_interval())
        slack = 1e-9 * max(1.0, abs(high - low))
        ticks = [tick for tick in artist.get_major_ticks() + artist.get_minor_ticks()
                 if low - slack <= tick.get_loc() <= high + slack]
        others = [child for child in artist.get_children() if not isinstance(child, Tick)]
        return [text for child in ticks + others for text in _texts(child)]
    own = [artist] if isinstance(artist, Text) and artist.get_text().strip() else []
    return own + [text for child in artist.get_children() for text in _texts(child)]


def _outline(text: Text, box: Bbox, renderer) -> np.ndarray:
    """The four corners of a text as drawn: its unrotated box turned by its rotation about the
    centre of its drawn (axis-aligned) extent. For a rotated tick label the axis-aligned extent is
    far larger than the letters, and neighbours' extents overlap where the letters do not."""
    angle = np.deg2rad(text.get_rotation())
    if np.isclose(np.sin(2 * angle), 0.0):
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    rotation = text.get_rotation()
    text.set_rotation(0)
    flat = text.get_window_extent(renderer)
    text.set_rotation(rotation)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [flat.width / 2, flat.height / 2]
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    return half @ turn.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two convex outlines overlap by more than the tolerance (separating axis theorem)."""
    for outline in (a, b):
        for edge in np.diff(np.vstack([outline, outline[:1]]), axis=0):
            normal = np.array([-edge[1], edge[0]]) / np.hypot(*edge)
            on_a, on_b = a @ normal, b @ normal
            if min(on_a.max(), on_b.max()) - max(on_a.min(), on_b.min()) <= TOLERANCE_PIXELS:
                return False
    return True


def _inside_axes_data(text: Text) -> bool:
    """A text placed in an axes' data coordinates (a heat map's annotation): it lies on the plot, so
    only another such text can collide with it."""
    return text.axes is not None and text.get_transform() == text.axes.transData


def problems(figure: Figure) -> list[str]:
    """Each collision of two texts and each text cut by the edge, in words; empty when the figure reads."""
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = _texts(figure)
    boxes = [text.get_window_extent(renderer) for text in texts]
    outlines = [_outline(text, box, renderer) for text, box in zip(texts, boxes)]
    found = []
    canvas_box = figure.bbox
    for text, box in zip(texts, boxes):
        if (box.x0 < canvas_box.x0 - TOLERANCE_PIXELS or box.y0 < canvas_box.y0 - TOLERANCE_PIXELS
                or box.x1 > canvas_box.x1 + TOLERANCE_PIXELS or box.y1 > canvas_box.y1 + TOLERANCE_PIXELS):
            found.append(f"cut by the edge: {text.get_text()!r}")
    for i, (a, outline_a) in enumerate(zip(texts, outlines)):
        for b, outline_b in zip(texts[i + 1:], outlines[i + 1:]):
            if _inside_axes_data(a) != _inside_axes_data(b):
                continue
            if _overlap(outline_a, outline_b):
                found.append(f"collide: {a.get_text()!r} and {b.get_text()!r}")
    return found
