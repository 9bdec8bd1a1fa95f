"""How a released or final score is shown to people: short, and never more precise than the release.

A mechanism that releases on a grid (the fixed Ladder's multiples of η·B, noisy releases
rounded to a multiple of ``rounding``·B) says so with
:meth:`ladderlab.mechanism.Mechanism.release_step`; its releases are shown with the fewest
decimals that keep two multiples of the step apart. Any other score (a log loss under full
disclosure, a final-set score) is shown to :data:`SIGNIFICANT_DIGITS` significant digits. Only
the text changes: stored values, logs and JSON numbers keep every bit.
"""

from __future__ import annotations

import math
from typing import Any

from ladderlab.mechanism import Mechanism
from ladderlab.scoring import get_scorer

SIGNIFICANT_DIGITS = 4
"""Significant digits of a score shown without a release grid."""
FIXED_NOTATION = (1e-4, 1e6)
"""Magnitudes shown in fixed notation; smaller or larger ones in scientific notation."""
MISSING = "–"


def score_text(value: float | None, step: float | None = None) -> str:
    """``value`` as shown to people: to the precision of the release grid ``step`` (None: no grid),
    else to :data:`SIGNIFICANT_DIGITS` significant digits; a dash for a missing value."""
    if value is None or not math.isfinite(value):
        return MISSING if value is None or math.isnan(value) else str(value)
    if step is not None and step > 0:
        return f"{value:.{grid_decimals(step)}f}"
    size = abs(value)
    if size == 0:
        return "0"
    if not FIXED_NOTATION[0] <= size < FIXED_NOTATION[1]:
        return f"{value:.{SIGNIFICANT_DIGITS - 1}e}"
    decimals = max(0, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(size)))
    return f"{value:.{decimals}f}"


def grid_decimals(step: float) -> int:
    """The fewest decimals d that show two multiples of ``step`` as different texts: 10^−d ≤ step.
    Rounding moves each by at most 10^−d / 2, so multiples more than 10^−d apart stay apart, and
    multiples of exactly 10^−d are d-decimal numbers themselves."""
    return max(0, math.ceil(-math.log10(step) - 1e-9))


def release_step(mechanism: Mechanism, scorer: str, prediction_range: Any = None, n_classes: int | None = None
                 ) -> float | None:
    """The grid ``mechanism`` (bound or not) releases on for ``scorer`` under ``prediction_range``
    with ``n_classes`` classes, in the scorer's units: its :meth:`Mechanism.release_step` at the
    unit B it binds with (1 for an unbounded scorer)."""
    bound = get_scorer(scorer).within(None if prediction_range is None else tuple(prediction_range)).bound(n_classes)
    return mechanism.release_step(1.0 if bound is None else bound)


def described_release_step(challenge: dict[str, Any]) -> float | None:
    """:func:`release_step` of a challenge as ``GET /api/challenge`` describes it (its mechanism,
    scorer, prediction range and classes); None when this installation does not know its mechanism."""
    from ladderlab.registry import MECHANISMS

    mechanism = challenge["mechanism"]
    try:
        made = MECHANISMS.make(mechanism["id"], **mechanism["params"])
    except (ValueError, TypeError):
        return None
    classes = challenge.get("classes")
    return release_step(made, challenge["scorer"], challenge.get("prediction_range"), None if classes is None else len(classes))
