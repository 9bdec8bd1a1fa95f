"""The competition view of a certificate (``ladderlab certify MECHANISM --competition FILE``).

The file's ``[[competition]]`` tables are run with their mechanisms replaced by the
certified mechanism and Full-disclosure (the reference that protects nothing), so the
organiser sees, under their own rules and team mix, how the final ranking shakes up,
whether the truly best team wins, the winner's Δ and the honest teams' utility, beside
what the same competition gives without protection.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from ladderlab.competition.results import load_competition_results, summary
from ladderlab.competition.scenario import CompetitionPlugin
from ladderlab.naming import plugin_label
from ladderlab.runs import runner
from ladderlab.runs.scenario import Scenario, ScenarioError, load, preflight

REFERENCE = "full-disclosure"
MEASURES = ("spearman", "top10_overlap", "best_team_wins", "winner_delta", "honest_utility", "leaderboard_error")


def competition_scenario(mechanism: str, params: dict[str, Any], file: str | Path,
                         replications: int | None = None) -> Scenario:
    """The competitions of ``file`` with their mechanisms replaced by ``mechanism`` and
    Full-disclosure, checked against the data (:func:`ladderlab.runs.scenario.preflight`): call it
    before any other work, so that a bad file is refused first."""
    scenario = load(file, replications)
    if not scenario.competition:
        raise ScenarioError(f"{file}: has no [[competition]] table to certify against")
    mechanisms = [CompetitionPlugin(id=mechanism, params=params)]
    if mechanism != REFERENCE:
        mechanisms.append(CompetitionPlugin(id=REFERENCE))
    tables = [table.model_copy(update={"mechanisms": mechanisms}) for table in scenario.competition]
    scenario = scenario.model_copy(update={"name": f"{scenario.name}-certify", "matrix": [], "competition": tables})
    preflight(scenario)
    return scenario


def competition_view(
    mechanism: str,
    params: dict[str, Any],
    file: str | Path,
    replications: int | None = None,
    jobs: int = 1,
    run_dir: str | Path | None = None,
    scenario: Scenario | None = None,
    progress: bool | None = False,
    force: bool = False,
) -> dict[str, Any]:
    """Run the competitions of ``file`` under ``mechanism`` and Full-disclosure; the summary rows.
    ``scenario``: :func:`competition_scenario`'s, when the caller checked it already; ``force``
    as in :func:`ladderlab.runs.runner.run`."""
    scenario = scenario or competition_scenario(mechanism, params, file, replications)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(run_dir) if run_dir else Path(scratch) / "competition"
        runner.run(scenario, out, jobs=jobs, progress=progress, force=force)
        table = summary(load_competition_results(out))
    rows = []
    for record in json.loads(table.to_json(orient="records")):
        rows.append({
            "mechanism": plugin_label(record["mechanism"], record["mechanism_params"]),
            "task": plugin_label(record["task"], record["task_params"]),
            "rules": json.loads(record["rules"]),
            "mix": record["mix"],
            "replications_ok": record["n_ok"],
            **{f"{m}_{s}": record[f"{m}_{s}"] for m in MEASURES for s in ("median", "lo", "hi")},
        })
    return {"file": str(file), "replications": scenario.replications, "rows": rows,
            "wall_time_seconds": time.perf_counter() - start}


def markdown(view: dict[str, Any]) -> str:
    """The competition view as a Markdown section."""
    lines = [
        "## Competition view",
        "",
        f"From `{view['file']}`, {view['replications']} replications per cell, beside Full-disclosure. "
        "Median [2.5%, 97.5%]; best wins = share of replications the team with the best population score won.",
        "",
        "| mechanism | task | mix | Spearman public–private | top-10 overlap | best wins | winner's Δ | honest utility |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in view["rows"]:
        cells = [_interval(row, m) for m in ("spearman", "top10_overlap")]
        wins = row["best_team_wins_median"]
        cells.append("–" if wins is None else f"{wins:.2f}")
        cells += [_interval(row, m) for m in ("winner_delta", "honest_utility")]
        lines.append(f"| {row['mechanism']} | {row['task']} | {row['mix']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _interval(row: dict[str, Any], measure: str) -> str:
    median = row[f"{measure}_median"]
    if median is None:
        return "–"
    return f"{median:.3f} [{row[f'{measure}_lo']:.3f}, {row[f'{measure}_hi']:.3f}]"
