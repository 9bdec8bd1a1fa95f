"""Certify a mechanism: an attack battery over submission budgets, a safe budget, and the cost to honest participants.

The battery is an ordinary scenario (run, resumed and reported like any other):

- every registered attack, plus any named by the organiser (a third-party id or a
  ``file.py:Class``), at every budget (``Attack.budget_params`` lets an attack use
  the whole budget), on the task family it plays: random labels with n public
  labels scored with the 0/1 loss for classification attacks, a null Gaussian
  regression with n public rows and 300 features scored with the squared error
  (standardised MSE units, Chaibub Neto et al. Suppl. S3) for regression attacks;
- ``honest`` participants on a Gaussian regression with real signal;
- each against the mechanism and against ``full-disclosure``, the reference.

Verdict: the safe budget is the largest budget up to which every attack keeps the
median Δ (released public − final loss of its final submission) above −τ and the
median leaderboard error below ε (τ = 0.05 by default, Suppl. S3). The cost to
honest participants is how much less the released scores agree with the final-set
scores (Spearman correlation over each replication's honest submissions) than
under full disclosure. Where the mechanism has a theoretical bound
(``Mechanism.leaderboard_error_bound``), it is reported beside the measurement.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ladderlab import report, runner
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS
from ladderlab.scenario import Scenario

REFERENCE = "full-disclosure"
REGRESSION_FEATURES = 300


def _families(n: int) -> dict[str, dict[str, Any]]:
    return {
        "classification": {"id": "random-labels", "params": {"n_public": n, "n_holdout": 3 * n}},
        "regression": {"id": "gaussian-regression",
                       "params": {"n_samples": 3 * n, "n_features": REGRESSION_FEATURES, "mode": "permuted"}},
        "honest": {"id": "gaussian-regression",
                   "params": {"n_samples": 3 * n, "n_features": 20, "n_signal": 5, "snr": 1.0, "mode": "random-split"}},
    }


def battery_scenario(mechanism: str, params: dict[str, Any], n: int, budgets: list[int],
                     attacks: list[str], replications: int, seed: int) -> Scenario:
    """The certification battery as a scenario."""
    if n < 10:
        raise ValueError(f"n must be at least 10 holdout points, got {n}")
    if not budgets or min(budgets) < 1:
        raise ValueError(f"budgets must be whole numbers ≥ 1, got {budgets}")
    MECHANISMS.make(mechanism, **params).bind(np.arange(n, dtype=float), "squared", np.random.default_rng(0))
    families = _families(n)
    mechanisms = [{"id": mechanism, "params": params}, {"id": REFERENCE}]
    matrix = []
    for attack_id in attacks:
        cls = ATTACKS.get(attack_id)
        family = "regression" if "regression" in cls.task_types else "classification"
        entries = [{"id": attack_id, "params": cls.budget_params(budget), "budget": budget} for budget in sorted(set(budgets))]
        matrix.append({"tasks": [families[family]], "mechanisms": mechanisms, "attacks": entries})
    matrix.append({"tasks": [families["honest"]], "mechanisms": mechanisms, "attacks": [{"id": "honest"}]})
    return Scenario.model_validate({
        "schema_version": 1, "name": f"certify-{mechanism.replace(':', '-').replace('/', '-')}",
        "description": f"Certification battery for {plugin_label(mechanism, params)} at n = {n}",
        "source": "ladderlab certify", "replications": replications, "seed": seed, "matrix": matrix,
    })


def safe_budget(battery: list[dict[str, Any]], budgets: list[int]) -> int:
    """The largest budget up to which every row of the battery passes (0: not even the smallest)."""
    safe = 0
    for budget in sorted(budgets):
        at_budget = [row for row in battery if row["params"]["budget"] == budget]
        if not at_budget or not all(row["passes"] for row in at_budget):
            break
        safe = budget
    return safe


def _honest_agreement(results: pd.DataFrame, mechanism: str) -> float:
    """Mean Spearman correlation between released and final-set scores of the honest submissions."""
    rows = results[(results.attack == "honest") & (results.mechanism == mechanism) & (results.status == "ok")]
    correlations = []
    for released, final in zip(rows.released, rows.final):
        released, final = np.asarray(released)[:-1], np.asarray(final)[:-1]  # the last row is the organiser's scoring
        if released.size > 2 and np.ptp(released) > 0 and np.ptp(final) > 0:
            correlations.append(stats.spearmanr(released, final).statistic)
    return float(np.mean(correlations)) if correlations else float("nan")


def certify(
    mechanism: str,
    params: dict[str, Any] | None = None,
    n: int = 200,
    budgets: list[int] | None = None,
    attacks: list[str] | None = None,
    replications: int = 100,
    seed: int = 0,
    tau: float = 0.05,
    epsilon: float = 0.05,
    jobs: int = 1,
    run_dir: str | Path | None = None,
    isolation: str = "none",
    secret_seed: int | None = None,
) -> dict[str, Any]:
    """Run the battery and return the certificate (a JSON-ready dict); ``isolation`` and
    ``secret_seed`` as in :func:`ladderlab.runner.run`."""
    params = params or {}
    budgets = sorted(set(budgets or [100, 300, 1000, 2000]))
    battery_attacks = [a for a in ATTACKS.ids() if a != "honest"] + [a for a in (attacks or []) if a not in ATTACKS.ids()]
    if tau <= 0 or epsilon <= 0:
        raise ValueError(f"tau and epsilon must be positive, got {tau} and {epsilon}")
    scenario = battery_scenario(mechanism, params, n, budgets, battery_attacks, replications, seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(run_dir) if run_dir else Path(scratch) / "battery"
        runner.run(scenario, out, jobs=jobs, progress=False, isolation=isolation, secret_seed=secret_seed)
        run = report.load_run(out)
    wall_time = time.perf_counter() - start
    table = report.summary(run.results)
    certified = MECHANISMS.make(mechanism, **params)
    battery = []
    for row in report.summary_records(table[(table.mechanism == mechanism) & (table.attack != "honest")]):
        reference = table[(table.mechanism == REFERENCE) & (table.attack == row["attack"])
                          & (table.budget == row["params"]["budget"])]
        row["reference_delta_median"] = float(reference.delta_median.iloc[0]) if len(reference) else None
        row["passes"] = bool(row["n_ok"] and row["delta_median"] > -tau and row["lberr_median"] < epsilon)
        bound = certified.leaderboard_error_bound(n, row["params"]["budget"])
        row["theoretical_bound"] = None if bound is None else {
            "kind": bound.kind, "value": bound.value, "statement": bound.statement, "reference": bound.reference}
        battery.append(row)
    honest = {name: _honest_agreement(run.results, name) for name in (mechanism, REFERENCE)}
    honest_rows = table[table.attack == "honest"].set_index("mechanism")
    return {
        "mechanism": mechanism,
        "params": certified.get_params(),
        "n": n,
        "budgets": budgets,
        "replications": replications,
        "seed": seed,
        "tau": tau,
        "epsilon": epsilon,
        "safe_budget": safe_budget(battery, budgets),
        "battery": battery,
        "honest": {
            "rank_correlation": honest[mechanism],
            "rank_correlation_full_disclosure": honest[REFERENCE],
            "cost": honest[REFERENCE] - honest[mechanism],
            "final_score_median": _number(honest_rows, mechanism, "final_final_median"),
            "final_score_median_full_disclosure": _number(honest_rows, REFERENCE, "final_final_median"),
        },
        "status": run.status.lines(),
        "versions": run.manifest["versions"],
        "wall_time_seconds": wall_time,
    }


def _number(table: pd.DataFrame, index: str, column: str) -> float | None:
    if index not in table.index:
        return None
    value = float(table.loc[index, column])
    return None if math.isnan(value) else value


def markdown(certificate: dict[str, Any]) -> str:
    """The certificate for people."""
    c = certificate
    safe = c["safe_budget"]
    lines = [
        f"# Certificate: {plugin_label(c['mechanism'], c['params'])} on n = {c['n']} holdout points",
        "",
        (
            f"**Safe submission budget: {safe if safe else 'none of the budgets tested'}** "
            f"(largest budget up to which every attack keeps median Δ > −{c['tau']:g} and median "
            f"leaderboard error < {c['epsilon']:g}; budgets tested: {', '.join(map(str, c['budgets']))}; "
            f"{c['replications']} replications, seed {c['seed']})."
        ),
        "",
        "| attack | budget | ok | Δ median [95%] | full disclosure Δ | lb error median [95%] | bound | passes |",
        "| --- | ---: | ---: | --- | ---: | --- | --- | --- |",
    ]
    for row in c["battery"]:
        bound = row["theoretical_bound"]
        bound_text = "–" if bound is None else f"{bound['kind']} {bound['value']:.3g}"
        lines.append(
            f"| {plugin_label(row['attack'], row['params']['attack'])} | {row['params']['budget']} | {row['n_ok']} | "
            f"{_interval(row, 'delta')} | {_float(row['reference_delta_median'])} | {_interval(row, 'lberr')} | "
            f"{bound_text} | {'yes' if row['passes'] else '**no**'} |"
        )
    honest = c["honest"]
    lines += [
        "",
        "## Cost to honest participants",
        "",
        (
            f"Spearman correlation between released and final-set scores of honest submissions: "
            f"{_float(honest['rank_correlation'])} under the mechanism, "
            f"{_float(honest['rank_correlation_full_disclosure'])} under full disclosure "
            f"(cost {_float(honest['cost'])}). Median final score of the honest pick: "
            f"{_float(honest['final_score_median'])} "
            f"(full disclosure {_float(honest['final_score_median_full_disclosure'])})."
        ),
    ]
    bounds = {row["theoretical_bound"]["reference"]: row["theoretical_bound"] for row in c["battery"] if row["theoretical_bound"]}
    if bounds:
        lines += ["", "## Theory", ""]
        lines += [f"- {reference}: {bound['statement']} (at the largest budget)" for reference, bound in bounds.items()]
    lines += ["", "## Run", "", *[f"- {line}" for line in c["status"]],
              f"- wall time {c['wall_time_seconds']:.0f} s; versions: {json.dumps(c['versions'])}"]
    return "\n".join(lines) + "\n"


def _float(value: float | None) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def _interval(row: dict[str, Any], measure: str) -> str:
    return report.interval_text(row[f"{measure}_median"], row[f"{measure}_lo"], row[f"{measure}_hi"])
