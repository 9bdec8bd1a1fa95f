"""Errors for unknown names, with "did you mean" suggestions (as in Gymnasium's registry)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown_name_error(kind: str, name: str, known: Iterable[str]) -> ValueError:
    """A ``ValueError`` naming the unknown ``name``, its near misses and every known name."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
    return ValueError(f"unknown {kind} {name!r}{hint} Known: {', '.join(known)}")
