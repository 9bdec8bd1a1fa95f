"""Simulated competitions: many teams, daily caps, a public and a private leaderboard.

The package owns everything about them: the engine that plays a competition in waves
(:mod:`~ladderlab.competition.engine`), the mechanism banks that release a wave for every
account at once (:mod:`~ladderlab.competition.banks`), cohorts of natural analysts
(:class:`~ladderlab.attack.Cohort`), scoring a wave as one matrix
(:mod:`~ladderlab.competition.scoring`), the activity calibrated on real challenges
(:mod:`~ladderlab.competition.kaggle_calibration`), the ``[[competition]]`` scenario tables
(:mod:`~ladderlab.competition.scenario`), the measures, their results files and reports
(:mod:`~ladderlab.competition.measures`, :mod:`~ladderlab.competition.results`,
:mod:`~ladderlab.reports.competition`), the competition part of a certificate
(:mod:`~ladderlab.certification.competition`), the realism pages
(:mod:`~ladderlab.dev.realism`) and the speed benchmark
(:mod:`~ladderlab.dev.competition_benchmark`). The engine's API is importable from here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RULES_CONSTRAINTS", "SELECTIONS", "CompetitionBoard", "CompetitionResult", "Rules", "TeamSpec", "compete",
           "leaderboard_values", "play_competition", "population_scores", "public_rows", "selected_submissions"]


def __getattr__(name: str) -> Any:
    """The engine's API, imported when first used (PEP 562), so that the package's light
    modules (the command line's subcommands) do not import the engine's libraries."""
    if name in __all__:
        from ladderlab.competition import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'ladderlab.competition' has no attribute {name!r}")
