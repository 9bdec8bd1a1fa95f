"""Values made fit for strict JSON, which has no NaN or infinity."""

from __future__ import annotations

import math
from typing import Any


def finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None, in nested dicts and lists
    too: strict JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(item) for item in value]
    return value
