"""Certify a mechanism: an attack battery over submission budgets, a safe budget, and the cost to honest participants.

The battery is an ordinary scenario (run, resumed and reported like any other):

- every registered attack (not the honest participants, whose class sets
  ``honest = True``: ``honest`` and the natural analysts), plus any named by the organiser (a third-party id or a
  ``file.py:Class``, optionally with parameters: ``hill-climbing(block=10)``), at
  every budget, on every task family it plays: random labels with n public labels
  scored with the 0/1 loss for classification, a null Gaussian regression with n
  public rows and 300 features scored with the squared error (standardised MSE
  units, Chaibub Neto et al. Suppl. S3) for regression. An attack that plays both
  (hill climbing) is judged by its worse family;
- each attack at every point of its strength grid (``Attack.strength_grid``: the
  parameter settings that make it weaker or stronger at that budget and holdout
  size); an attack named with parameters is run at exactly those (with
  ``Attack.budget_params`` filling in what it does not pin), with no grid;
- ``honest`` participants on a Gaussian regression with real signal;
- each against the mechanism and against ``full-disclosure``, the reference.

Verdict. A grid point *passes* when the median Δ (released public − final loss of
the attack's final submission) stays above −τ and the median leaderboard error
below ε (τ = 0.05 by default, Suppl. S3); its severity is max(−Δ/τ, error/ε), so it
passes exactly when the severity is below 1. An attack's verdict at a budget is
that of its worst grid point (highest severity), and the certificate names that
point's parameters. A grid point that made no submission in any replication (one
step of the attack needs more submissions than the budget allows, or it submits
nothing), or could not run at all, *did not play*: it is no evidence either way.
An attack none of whose points played is reported as "did not play", with the
reason, and never counts as a pass. The safe budget is the largest budget up to
which, at every budget, some attack played and every attack that played passed.

The cost to honest participants is how much less the released scores agree with
the final-set scores (Spearman correlation over each replication's honest
submissions) than under full disclosure. Where the mechanism has a theoretical
bound (``Mechanism.leaderboard_error_bound``), it is reported beside the
measurement.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ladderlab import report, runner
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS
from ladderlab.report_tables import finite_or_null
from ladderlab.rundir import write_atomically
from ladderlab.scenario import Scenario

REFERENCE = "full-disclosure"
REGRESSION_FEATURES = 300
DID_NOT_PLAY = "did not play"
CERTIFICATE_FILE = "certificate.json"
"""The certificate's copy in the battery's run directory, which ``ladderlab report`` reads."""


@dataclass(frozen=True)
class AttackSpec:
    """An attack of the battery: its id (or ``file.py:Class``), and the parameters the
    organiser pinned (None: the attack's strength grid)."""

    id: str
    pinned: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return self.id if self.pinned is None else plugin_label(self.id, self.pinned)

    def points(self, budget: int, n: int) -> list[dict[str, Any]]:
        """The parameter settings to run at ``budget``: the strength grid, or the pinned ones."""
        cls = ATTACKS.get(self.id)
        if self.pinned is not None:
            return [{**cls.budget_params(budget), **self.pinned}]
        grid = cls.strength_grid(budget, n)
        if not grid:
            raise ValueError(f"attack {self.id!r}: strength_grid({budget}, {n}) is empty")
        return [dict(point) for point in grid]


def parse_attack(text: str) -> AttackSpec:
    """``id``, ``file.py:Class``, or either with parameters: ``hill-climbing(block=10, repeats=1)``
    (:meth:`ladderlab.registry.Registry.parse`); without parentheses the attack plays its
    strength grid."""
    attack_id, pinned = ATTACKS.parse(text)
    return AttackSpec(attack_id, pinned)


ATTACK_FAMILIES = ("classification", "regression")
"""An attack plays on every family its ``task_types`` name; its verdict is its worst there."""


def _families(n: int) -> dict[str, dict[str, Any]]:
    return {
        "classification": {"id": "random-labels", "params": {"n_public": n, "n_holdout": 3 * n}},
        "regression": {"id": "gaussian-regression",
                       "params": {"n_samples": 3 * n, "n_features": REGRESSION_FEATURES, "mode": "permuted"}},
        "honest": {"id": "gaussian-regression",
                   "params": {"n_samples": 3 * n, "n_features": 20, "n_signal": 5, "snr": 1.0, "mode": "random-split"}},
    }


def _as_scenario_params(point: dict[str, Any]) -> dict[str, Any]:
    """A grid point as scenario parameters: a list value is one value, not a grid axis."""
    return {name: [value] if isinstance(value, list) else value for name, value in point.items()}


def battery_scenario(mechanism: str, params: dict[str, Any], n: int, budgets: list[int],
                     attacks: list[str | AttackSpec], replications: int, seed: int) -> Scenario:
    """The certification battery as a scenario: every attack at every point of its strength
    grid (or at its pinned parameters) at every budget."""
    if n < 10:
        raise ValueError(f"n must be at least 10 holdout points, got {n}")
    if not budgets or min(budgets) < 1:
        raise ValueError(f"budgets must be whole numbers ≥ 1, got {budgets}")
    MECHANISMS.make(mechanism, **params).bind(np.arange(n, dtype=float), "squared", np.random.default_rng(0))
    families = _families(n)
    mechanisms = [{"id": mechanism, "params": params}, {"id": REFERENCE}]
    matrix = []
    for attack in attacks:
        spec = attack if isinstance(attack, AttackSpec) else parse_attack(attack)
        task_types = ATTACKS.get(spec.id).task_types
        entries = [{"id": spec.id, "params": _as_scenario_params(point), "budget": budget}
                   for budget in sorted(set(budgets)) for point in spec.points(budget, n)]
        matrix.extend({"tasks": [families[family]], "mechanisms": mechanisms, "attacks": entries}
                      for family in ATTACK_FAMILIES if family in task_types)
    matrix.append({"tasks": [families["honest"]], "mechanisms": mechanisms, "attacks": [{"id": "honest"}]})
    return Scenario.model_validate({
        "schema_version": 1, "name": f"certify-{mechanism.replace(':', '-').replace('/', '-')}",
        "description": f"Certification battery for {plugin_label(mechanism, params)} at n = {n}",
        "source": "ladderlab certify", "replications": replications, "seed": seed, "matrix": matrix,
    })


def safe_budget(battery: list[dict[str, Any]], budgets: list[int]) -> int:
    """The largest budget up to which, at every budget, some row played and every row that
    played passes (0: not even the smallest). Rows that did not play count neither way."""
    safe = 0
    for budget in sorted(budgets):
        played = [row for row in battery
                  if row["params"]["budget"] == budget and row.get("verdict") != DID_NOT_PLAY]
        if not played or not all(row["passes"] for row in played):
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


@dataclass
class _Point:
    """One grid point's outcome against the certified mechanism."""

    record: dict[str, Any]
    submissions_used: float | None
    verdict: str
    reason: str | None
    severity: float
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.record["task"], "params": self.record["params"]["attack"], "verdict": self.verdict,
                "submissions_used": self.submissions_used, "reason": self.reason,
                "severity": None if math.isnan(self.severity) else self.severity,
                "n_ok": self.record["n_ok"], "delta_median": self.record["delta_median"],
                "lberr_median": self.record["lberr_median"]}


def _judge(record: dict[str, Any], rows: pd.DataFrame, label: str, tau: float, epsilon: float) -> _Point:
    budget = record["params"]["budget"]
    ok = rows[rows.status == "ok"]
    used = float(np.median(ok.submissions)) if len(ok) else None
    if used is not None and used.is_integer():
        used = int(used)
    if not len(ok):
        errors = sorted(set(rows.error.dropna()))
        reason = f"{label} could not run at a budget of {budget}: {'; '.join(errors) or 'no replication finished'}"
        return _Point(record, used, DID_NOT_PLAY, reason, math.nan, errors)
    if int(ok.submissions.max()) == 0:
        reason = (f"{label} made no submission in any of its {len(ok)} replications at a budget of {budget}: "
                  "one step of it needs more submissions than the budget allows, or it submits nothing here")
        return _Point(record, used, DID_NOT_PLAY, reason, math.nan)
    severity = max(-record["delta_median"] / tau, record["lberr_median"] / epsilon)
    return _Point(record, used, "passes" if severity < 1 else "fails", None, severity)


def _battery_rows(table: pd.DataFrame, results: pd.DataFrame, specs: list[AttackSpec], mechanism: str,
                  certified: Any, n: int, budgets: list[int], tau: float, epsilon: float) -> list[dict[str, Any]]:
    """One row per attack × budget: the worst grid point's measures, its parameters, and the grid."""
    mine = table[table.mechanism == mechanism]
    rows = []
    for spec in specs:
        for budget in budgets:
            points = []
            for point in spec.points(budget, n):
                key = json.dumps(point, sort_keys=True)
                summary = mine[(mine.attack == spec.id) & (mine.attack_params == key) & (mine.budget == budget)]
                for record in report.summary_records(summary):
                    replications = results[(results.mechanism == mechanism) & (results.attack == spec.id)
                                           & (results.attack_params == key) & (results.budget == budget)
                                           & (results.task == record["task"])]
                    label = f"{plugin_label(spec.id, point)} on {record['task']}"
                    points.append(_judge(record, replications, label, tau, epsilon))
            if not points:
                continue
            played = [point for point in points if point.verdict != DID_NOT_PLAY]
            worst = max(played, key=lambda point: point.severity) if played else points[0]
            row = dict(worst.record)
            reference = table[(table.mechanism == REFERENCE) & (table.attack == spec.id) & (table.task == worst.record["task"])
                              & (table.attack_params == json.dumps(worst.record["params"]["attack"], sort_keys=True))
                              & (table.budget == budget)]
            bound = certified.leaderboard_error_bound(n, budget)
            row.update(
                attack_label=spec.label,
                pinned=spec.pinned is not None,
                budget=budget,
                submissions_used=worst.submissions_used,
                verdict=worst.verdict if played else DID_NOT_PLAY,
                passes=bool(played) and worst.verdict == "passes",
                did_not_play=None if played else _not_played_reason(spec, budget, points),
                worst_params=worst.record["params"]["attack"] if played else None,
                worst_task=worst.record["task"] if played else None,
                severity=worst.severity if played else None,
                reference_delta_median=float(reference.delta_median.iloc[0]) if len(reference) else None,
                theoretical_bound=None if bound is None else {
                    "kind": bound.kind, "value": bound.value, "statement": bound.statement,
                    "reference": bound.reference},
                grid=[point.as_dict() for point in points],
            )
            rows.append(row)
    return rows


def _not_played_reason(spec: AttackSpec, budget: int, points: list[_Point]) -> str:
    if len(points) > 1 and not any(point.errors for point in points):
        return (f"{spec.label} made no submission at a budget of {budget} at any of its {len(points)} parameter "
                "settings, in any replication: one step of it needs more submissions than the budget allows, "
                "or it submits nothing here")
    return "; ".join(dict.fromkeys(point.reason for point in points))


def _broken_by(battery: list[dict[str, Any]], safe: int, budgets: list[int]) -> list[dict[str, Any]]:
    """The rows that fail at the first budget above the safe one, worst first."""
    above = [budget for budget in sorted(budgets) if budget > safe]
    if not above:
        return []
    failing = [row for row in battery if row["budget"] == above[0] and row["verdict"] == "fails"]
    return sorted(failing, key=lambda row: -row["severity"])


def certify(
    mechanism: str,
    params: dict[str, Any] | None = None,
    n: int = 200,
    budgets: list[int] | None = None,
    attacks: list[str | AttackSpec] | None = None,
    replications: int = 100,
    seed: int = 0,
    tau: float = 0.05,
    epsilon: float = 0.05,
    jobs: int = 1,
    run_dir: str | Path | None = None,
    default_battery: bool = True,
    isolation: str = "none",
    secret_seed: int | None = None,
    progress: bool | None = False,
) -> dict[str, Any]:
    """Run the battery and return the certificate (a JSON-ready dict).

    ``attacks`` are added to the battery of every registered attack (or, with
    ``default_battery=False``, replace it); each is an id, ``file.py:Class``, or
    either with pinned parameters (see :func:`parse_attack`). ``isolation``,
    ``secret_seed`` and ``progress`` (a bar over the battery's cells) as in
    :func:`ladderlab.runner.run`.
    """
    params = params or {}
    budgets = sorted(set(budgets or [100, 300, 1000, 2000]))
    if tau <= 0 or epsilon <= 0:
        raise ValueError(f"tau and epsilon must be positive, got {tau} and {epsilon}")
    specs = [a if isinstance(a, AttackSpec) else parse_attack(a) for a in (attacks or [])]
    if default_battery:
        specs = [AttackSpec(a) for a in ATTACKS.ids() if not ATTACKS.get(a).honest] + [
            spec for spec in specs if spec.pinned is not None or spec.id not in ATTACKS.ids()]
    if not specs:
        raise ValueError("no attack to certify against: name one with --attack, or keep the default battery")
    specs = _unique(specs)
    scenario = battery_scenario(mechanism, params, n, budgets, specs, replications, seed)
    if run_dir is not None and Path(run_dir).exists() and not Path(run_dir).is_dir():
        raise ValueError(f"--run-dir {run_dir} exists and is not a directory")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(run_dir) if run_dir else Path(scratch) / "battery"
        runner.run(scenario, out, jobs=jobs, progress=progress, isolation=isolation, secret_seed=secret_seed)
        run = report.load_run(out)
    wall_time = time.perf_counter() - start
    table = report.summary(run.results)
    certified = MECHANISMS.make(mechanism, **params)
    battery = _battery_rows(table, run.results, specs, mechanism, certified, n, budgets, tau, epsilon)
    safe = safe_budget(battery, budgets)
    honest = {name: _honest_agreement(run.results, name) for name in (mechanism, REFERENCE)}
    honest_rows = table[table.attack == "honest"].set_index("mechanism")
    result = {
        "mechanism": mechanism,
        "params": certified.get_params(),
        "n": n,
        "budgets": budgets,
        "replications": replications,
        "seed": seed,
        "tau": tau,
        "epsilon": epsilon,
        "attacks": [{"attack": spec.id, "pinned": spec.pinned} for spec in specs],
        "safe_budget": safe,
        "broken_by": [{"attack": row["attack_label"], "budget": row["budget"], "worst_params": row["worst_params"],
                       "worst_task": row["worst_task"], "delta_median": row["delta_median"], "lberr_median": row["lberr_median"]}
                      for row in _broken_by(battery, safe, budgets)],
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
    if run_dir is not None:
        text = json.dumps(finite_or_null(result), indent=2, ensure_ascii=False, allow_nan=False)
        write_atomically(Path(run_dir) / CERTIFICATE_FILE, text.encode())
    return result


def _unique(specs: list[AttackSpec]) -> list[AttackSpec]:
    seen, unique = set(), []
    for spec in specs:
        key = (spec.id, json.dumps(spec.pinned, sort_keys=True))
        if key not in seen:
            seen.add(key)
            unique.append(spec)
    return unique


def _number(table: pd.DataFrame, index: str, column: str) -> float | None:
    if index not in table.index:
        return None
    value = float(table.loc[index, column])
    return None if math.isnan(value) else value


def check_output(path: str | Path) -> Path:
    """Make sure the certificate can be written to ``path`` (JSON) and beside it (``.md``)
    before any work starts: create the directory, or raise ``ValueError`` saying why not."""
    out = Path(path)
    if out.suffix == ".md":
        raise ValueError(f"--out {out}: name the JSON file (the Markdown certificate is written beside it as .md)")
    for target in (out, out.with_suffix(".md")):
        if target.is_dir():
            raise ValueError(f"--out {out}: {target} is a directory; give a file name such as {target / 'certificate.json'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out {out}: cannot create directory {out.parent}: {error.strerror or error}") from None
    if not os.access(out.parent, os.W_OK):
        raise ValueError(f"--out {out}: directory {out.parent} is not writable")
    for target in (out, out.with_suffix(".md")):
        if target.exists() and not os.access(target, os.W_OK):
            raise ValueError(f"--out {out}: {target} exists and is not writable")
    return out


def write_certificate(certificate: dict[str, Any], out: str | Path, text_for_people: str | None = None) -> list[Path]:
    """Write the certificate as JSON to ``out`` and as Markdown beside it (``text_for_people``,
    by default :func:`markdown` of the certificate); return the paths.

    If writing fails (the disk filled up, the directory vanished), the certificate
    is written to a new file in the system's temporary directory instead, and the
    ``OSError`` raised names where it went: the work is never lost.
    """
    out = Path(out)
    text = json.dumps(finite_or_null(certificate), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        out.write_text(text, encoding="utf-8")
        out.with_suffix(".md").write_text(text_for_people or markdown(certificate), encoding="utf-8")
    except OSError as error:
        handle, rescue = tempfile.mkstemp(prefix="ladderlab-certificate-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as rescue_file:
            rescue_file.write(text)
        raise OSError(f"could not write the certificate to {out} ({error}); it was saved to {rescue}") from error
    return [out, out.with_suffix(".md")]


def markdown(certificate: dict[str, Any]) -> str:
    """The certificate for people."""
    c = certificate
    safe = c["safe_budget"]
    broken = "; ".join(
        f"{row['attack']} with {_params_text(row['worst_params'])} on {row['worst_task']} (Δ median {_float(row['delta_median'])}, "
        f"lb error median {_float(row['lberr_median'])})"
        for row in c.get("broken_by", [])
    )
    headline = f"**Safe submission budget: {safe if safe else 'none of the budgets tested'}**"
    lines = [
        f"# Certificate: {plugin_label(c['mechanism'], c['params'])} on n = {c['n']} holdout points",
        "",
        (
            f"{headline} (largest budget up to which every attack that plays keeps median Δ > −{c['tau']:g} "
            f"and median leaderboard error < {c['epsilon']:g}, each at its worst parameters; budgets tested: "
            f"{', '.join(map(str, c['budgets']))}; {c['replications']} replications, seed {c['seed']})."
        ),
    ]
    if broken:
        first_unsafe = c["broken_by"][0]["budget"]
        lines += ["", f"Broken at budget {first_unsafe} by: {broken}."]
    lines += [
        "",
        "| attack | budget | submissions used | worst parameters | Δ median [95%] | full disclosure Δ "
        "| lb error median [95%] | bound | verdict |",
        "| --- | ---: | ---: | --- | --- | ---: | --- | --- | --- |",
    ]
    not_played = []
    for row in c["battery"]:
        bound = row["theoretical_bound"]
        bound_text = "–" if bound is None else f"{bound['kind']} {bound['value']:.3g}"
        played = row["verdict"] != DID_NOT_PLAY
        worst = f"{_params_text(row['worst_params'])} on {row['worst_task']}" if played else "–"
        verdict = {"passes": "passes", "fails": "**fails**"}.get(row["verdict"], "did not play")
        lines.append(
            f"| {row['attack_label']} | {row['budget']} | {_count(row['submissions_used'])} | {worst} | "
            f"{_interval(row, 'delta') if played else '–'} | {_float(row['reference_delta_median']) if played else '–'} | "
            f"{_interval(row, 'lberr') if played else '–'} | {bound_text} | {verdict} |"
        )
        if not played:
            not_played.append(f"- {row['did_not_play']}")
    if not_played:
        lines += ["", "## Did not play", "", "An attack that did not play is no evidence of safety; "
                  "it is left out of the verdict at that budget.", "", *not_played]
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
    if _missing(honest["rank_correlation"]) or _missing(honest["rank_correlation_full_disclosure"]):
        lines += ["", "A dash: no replication had honest released and final scores that both varied "
                  "(a mechanism that holds its release gives no ranking), or no honest replication finished."]
    bounds = {row["theoretical_bound"]["reference"]: row["theoretical_bound"] for row in c["battery"] if row["theoretical_bound"]}
    if bounds:
        lines += ["", "## Theory", ""]
        lines += [f"- {reference}: {bound['statement']} (at the largest budget)" for reference, bound in bounds.items()]
    lines += ["", "## Run", "", *[f"- {line}" for line in c["status"]],
              f"- wall time {c['wall_time_seconds']:.0f} s; versions: {json.dumps(c['versions'])}"]
    return "\n".join(lines) + "\n"


def _params_text(params: dict[str, Any] | None) -> str:
    if not params:
        return "–"
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _count(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _float(value: float | None) -> str:
    return "–" if _missing(value) else f"{value:.4f}"


def _interval(row: dict[str, Any], measure: str) -> str:
    return report.interval_text(row[f"{measure}_median"], row[f"{measure}_lo"], row[f"{measure}_hi"])
