"""ladderlab: leaderboard mechanisms and adaptive attacks, pitted against each other.

The papers are the specification: Blum & Hardt (2015), "The Ladder"; Chaibub Neto
et al. (2016), "Reducing overfitting in challenge-based competitions".
"""

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ladderlab import source_tree

source_tree.install(Path(__file__).parent)

from ladderlab.board import Board, BudgetExceeded, Leaderboard
from ladderlab.mechanism import Mechanism
from ladderlab.registry import MECHANISMS, make_mechanism
from ladderlab.scoring import SCORERS, LossScorer, MetricScorer, Scorer, get_scorer

try:
    __version__ = version("ladderlab")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "MECHANISMS",
    "SCORERS",
    "Board",
    "BudgetExceeded",
    "Leaderboard",
    "LossScorer",
    "Mechanism",
    "MetricScorer",
    "Scorer",
    "__version__",
    "get_scorer",
    "make_mechanism",
]
