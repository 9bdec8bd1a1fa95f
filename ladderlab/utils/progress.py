"""Progress bars for long work: tqdm on standard error, only where someone watches."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any


def progress_bar(iterable: Iterable[Any] | None = None, *, progress: bool | None = None, **options: Any) -> Any:
    """A tqdm bar over ``iterable``, shown when ``progress`` is True, or, when it is None,
    when standard error is a terminal (never in a pipe, a log file or a test)."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if progress is None else progress
    return tqdm(iterable, disable=not show, **options)
