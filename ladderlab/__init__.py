"""ladderlab: leaderboard mechanisms and adaptive attacks, pitted against each other.

The papers are the specification: Blum & Hardt (2015), "The Ladder"; Chaibub Neto
et al. (2016), "Reducing overfitting in challenge-based competitions".
"""

import importlib
from pathlib import Path
from typing import Any

from ladderlab.utils import moved, source_tree

source_tree.install(Path(__file__).parent)
moved.install()

_PUBLIC = {
    "Board": "ladderlab.board", "BudgetExceeded": "ladderlab.board", "Leaderboard": "ladderlab.board",
    "Mechanism": "ladderlab.mechanism", "MECHANISMS": "ladderlab.registry", "make_mechanism": "ladderlab.registry",
    "SCORERS": "ladderlab.scoring", "LossScorer": "ladderlab.scoring", "MetricScorer": "ladderlab.scoring",
    "Scorer": "ladderlab.scoring", "get_scorer": "ladderlab.scoring",
}
"""The public names and their modules, imported on first use (PEP 562), so that ``import
ladderlab.isolation.layout`` stays cheap for the command's early restart (:mod:`ladderlab.cli.entry`)."""

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("ladderlab")
        except PackageNotFoundError:  # running from a source tree that is not installed
            value = "0+unknown"
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
    else:
        raise AttributeError(f"module 'ladderlab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
