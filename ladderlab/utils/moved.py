"""The modules that moved into area packages, importable under their old names.

Third-party plugins and scripts written against the documented imports of ladderlab 0.2
(``from ladderlab.ladder import Ladder``, ``from ladderlab.duel import duel``, …) keep working:
:class:`MovedModuleFinder` answers an old name with the module at its new place (the same module
object, so classes and ``isinstance`` agree) and warns once with a ``DeprecationWarning`` that
names the new place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED = {
    "atomic": "utils.atomic",
    "progress": "utils.progress",
    "locations": "utils.locations",
    "tables": "utils.tables",
    "markdown": "utils.markdown",
    "cpu_time": "utils.cpu_time",
    "memory": "utils.memory",
    "determinism": "utils.determinism",
    "source_tree": "utils.source_tree",
    "sources": "utils.sources",
    "sequential": "stats.sequential",
    "replications": "stats.replications",
    "bounds": "stats.bounds",
    "ladder": "engines.ladder",
    "bayesboot": "engines.bayesboot",
    "bootstrap": "engines.bootstrap",
    "poissonized": "engines.poissonized",
    "noise": "engines.noise",
    "changepoint": "engines.changepoint",
    "regression": "engines.regression",
    "voting": "engines.voting",
    "analysts": "engines.analysts",
    "label_code": "engines.label_code",
    "linking": "engines.linking",
    "linked_ranking": "engines.linked_ranking",
    "competition.cohort": "engines.cohort",
    "sandbox": "isolation.sandbox",
    "multiplexing": "isolation.multiplexing",
    "untrusted": "isolation.untrusted",
    "colocation": "isolation.colocation",
    "layout": "isolation.layout",
    "duel": "runs.duel",
    "sharing": "runs.sharing",
    "scenario": "runs.scenario",
    "grid": "runs.grid",
    "runner": "runs.runner",
    "rundir": "runs.rundir",
    "schema": "runs.schema",
    "workload": "runs.workload",
    "arguments": "runs.arguments",
    "page_stamps": "runs.page_stamps",
    "paper_values": "runs.paper_values",
    "display": "runs.display",
    "accounts": "competition.accounts",
    "extrapolation_experiment": "extrapolation.experiment",
    "extrapolation_scenario": "extrapolation.scenario",
    "certify": "certification.certify",
    "battery": "certification.battery",
    "tune": "certification.tune",
    "challenge": "certification.challenge",
    "challenge_task": "certification.challenge_task",
    "challenge_certify": "certification.challenge_certify",
    "competition.certificate": "certification.competition",
    "ranking_certificate": "final_rankings.certificate",
    "rank_certificate": "final_rankings.cli",
    "private_samples": "final_rankings.private_samples",
    "final_leaderboard": "final_rankings.final_leaderboard",
    "replay": "final_rankings.replay",
    "replay_report": "final_rankings.replay_report",
    "submission_log": "final_rankings.submission_log",
    "report": "reports.report",
    "report_formats": "reports.formats",
    "report_html": "reports.html",
    "report_tables": "reports.tables",
    "plots": "reports.plots",
    "zoo": "reports.zoo",
    "extrapolation_report": "reports.extrapolation",
    "competition.report": "reports.competition",
    "thresholdout_experiment": "reports.thresholdout",
    "entry": "cli.entry",
    "demo": "cli.demo",
    "benchmark": "dev.benchmark",
    "isolation_benchmark": "dev.isolation_benchmark",
    "certify_speed": "dev.certify_speed",
    "competition.benchmark": "dev.competition_benchmark",
    "serve.bench": "dev.serve_bench",
    "page_survey": "dev.page_survey",
    "competition.realism": "dev.realism",
    "results": "dev.results",
}
"""Old name (under ``ladderlab.``) -> new name (under ``ladderlab.``)."""


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``ladderlab.<old>`` for every old name in :data:`MOVED`."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("ladderlab.") or fullname[len("ladderlab."):] not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def __init__(self) -> None:
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}
        """The module's own spec, by old name, between ``create_module`` and ``exec_module``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = "ladderlab." + MOVED[spec.name[len("ladderlab."):]]
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module at its new place has run already. The import machinery has just set the old
        name's spec on it (it does so on whatever ``create_module`` returns): it gets its own back, so
        that its spec still names its file (``importlib.util.find_spec``, the page stamps' hashes)."""
        module.__spec__ = self._specs.pop(module.__spec__.name)


def install() -> None:
    """Put the finder behind the regular ones (a module at an old path, if any, wins), once."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
