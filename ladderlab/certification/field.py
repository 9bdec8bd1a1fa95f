"""The field: what a whole population of teams sees at a certificate's safe point.

A certificate says what one adaptive participant can do against the mechanism. A leaderboard
shows its maximum over every team, so the organiser also asks what the *field* looks like: with
the challenge's number of teams (its ``[[teams]]``, or ``--teams``), honest teams calibrated as in
the built-in ``kaggle-realistic`` scenario (docs/kaggle-realistic.md: natural analysts of two
views, arriving, staying and submitting as Kaggle teams do) and A adaptive teams playing the
battery's worst attack at the safe budget (its worst parameters, on as many accounts as the
certificate's attacker), the competition engine (:mod:`ladderlab.competition.engine`) plays the
challenge under the certified mechanism and, on the same random numbers, under full disclosure.

Per replication:

- whether the public leaderboard's #1 is an adaptive team, and whether it is one that
  *overfitted*: its public score better than its private one by more than τ (the certificate's
  tolerance, in the certificate's unit, on the field's task);
- the private rank of the public #1 (1: the public leader also wins privately);
- Spearman's ρ between every team's public and private score.

Intervals at the certificate's confidence: the probabilities exact (Clopper–Pearson), the private
rank's median distribution-free (order statistics, the sign test's interval), ρ's mean by the
bootstrap (percentile) over replications. Ties on the public leaderboard go to the adaptive teams
(they are enrolled first): a tie at the top counts against the mechanism.

The task is the worst attack's family (the challenge itself for ``certify --challenge``) when the
honest teams and the attack can both play it, else the certificate's honest task, else the
``kaggle-realistic`` task (a latent logistic classification with 20 features) at the certificate's
n, scored like the worst attack's family. Honest teams that cannot play it (a regression) are the
certificate's honest participant instead, with the same activity profile.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS
from ladderlab.scoring import PredictionKind, get_scorer

CALIBRATION = "kaggle-realistic"
"""The built-in scenario whose honest mix (``[[competition.mixes]]`` named ``honest``) the field's honest teams follow."""
ADAPTIVE = "adaptive"
"""The adaptive teams' group label in the field's results."""
REFERENCE = "full-disclosure"
DEFAULT_DAYS = 30
"""The field's days where neither the challenge nor ``--days`` gives them."""
DEFAULT_SELECTION = 2
"""Kaggle's rule (``kaggle-realistic``): two selected submissions, the better private score counting."""
REPLICATIONS = 100
CALIBRATION_TEAMS = 1000
"""The calibration's number of honest teams: every policy of its mix has some at this size."""
BOOTSTRAP_RESAMPLES = 2000
SECTION_START, SECTION_END = "<!-- --8<-- [start:field] -->", "<!-- --8<-- [end:field] -->"
"""Around the field's section of a certificate's Markdown: a page includes it alone (``--8<-- "FILE.md:field"``)."""


class NoField(ValueError):
    """The certificate gives the field nothing to play: no attack played at its budget, or no task suits it."""


@dataclass(frozen=True)
class FieldRules:
    """The field's schedule: ``days`` of at most ``per_day`` submissions, ``selection`` as the engine's rules."""

    days: int
    per_day: int | None
    selection: str | int = DEFAULT_SELECTION


def honest_mix(total: int, features: int) -> list[dict[str, Any]]:
    """``total`` honest team entries in the proportions of :data:`CALIBRATION`'s honest mix (largest
    remainders), each with its activity and parameters; a natural analyst's ``view`` (features it sees)
    scaled from the calibration task's number of features to ``features``."""
    from ladderlab.scenarios import builtin_scenarios

    raw = tomllib.loads(builtin_scenarios()[CALIBRATION].read_text())
    table = raw["competition"][0]
    entries = next(mix for mix in table["mixes"] if mix["name"] == "honest")["teams"]
    reference_features = table["tasks"][0]["params"]["n_features"]
    weights = np.array([entry["count"] for entry in entries], dtype=float)
    counts = _apportion(total, weights)
    mix = []
    for entry, count in zip(entries, counts):
        if count == 0:
            continue
        params = dict(entry.get("params", {}))
        if "view" in params:
            params["view"] = max(1, min(features, round(params["view"] * features / reference_features)))
        mix.append({"policy": entry["policy"], "params": params, "count": int(count), "activity": entry.get("activity"),
                    "label": plugin_label(entry["policy"], {k: params[k] for k in ("lam", "p", "view") if k in params})})
    return mix


def _apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """``total`` split in proportion to ``weights`` by largest remainders (ties: the earlier entry)."""
    exact = total * weights / weights.sum()
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: total - counts.sum()]] += 1
    return counts


def worst_row(certificate: dict[str, Any], budget: int) -> dict[str, Any] | None:
    """The battery row that played at ``budget`` and came closest to breaking the mechanism (the worst attack there):
    a failing one before an inconclusive one before a passing one, by severity within each, as a certificate names
    an attack's worst grid point (:data:`ladderlab.certification.certify.VERDICT_ORDER`)."""
    from ladderlab.certification.certify import VERDICT_ORDER

    played = [row for row in certificate["battery"]
              if row["budget"] == budget and row.get("worst_params") is not None and row.get("severity") is not None]
    return max(played, key=lambda row: (VERDICT_ORDER.get(row["verdict"], 0), row["severity"]), default=None)


def field_budget(certificate: dict[str, Any]) -> tuple[int, bool]:
    """The budget the field plays at: the safe budget, or (none safe) the smallest budget tested; and whether it is safe."""
    safe = certificate["safe_budget"]
    return (safe, True) if safe else (min(certificate["budgets"]), False)


def _public(entry: dict[str, Any], force: bool = False) -> Any:
    from ladderlab.runs import workload

    return workload.task_data(entry["id"], entry["params"], force)[1]


def _plays(policy: str, params: dict[str, Any], public: Any) -> str | None:
    """Why the policy cannot play on ``public`` (None: it can)."""
    return ATTACKS.make(policy, **params).incompatibility(public)


def field_task(certificate: dict[str, Any], attack: tuple[str, dict[str, Any]], family: str,
               force: bool = False) -> tuple[dict[str, Any], dict[str, Any] | None, list[str]]:
    """The field's task (the first of the module docstring's on which the attack and honest teams play:
    its entry, where it came from and its number of features), the honest participant that stands for
    the calibrated analysts where they cannot play it (None: they can), and why the tasks before it were
    passed over."""
    families = certificate["families"]
    candidates = [(family, families[family])]
    if "honest" in families:
        candidates.append(("honest", families["honest"]))
    scorer = families[family].get("scorer") or "zero-one"
    if get_scorer(scorer).prediction_kind is not PredictionKind.REAL:
        n = certificate["n"]
        candidates.append((CALIBRATION, {"task": "latent-classification", "params": {
            "n_train": 2000, "n_public": n, "n_holdout": 5 * n, "n_features": 20, "scorer": scorer}}))
    passed: list[str] = []
    for name, entry in candidates:
        public = _public({"id": entry["task"], "params": entry["params"]}, force).public
        task = {"name": name, "task": entry["task"], "params": entry["params"], "features": int(public.X_holdout.shape[1])}
        reason = _plays(attack[0], attack[1], public)
        if reason is not None:
            passed.append(f"{name} ({entry['task']}): the attack cannot play it: {reason}")
            continue
        analysts = honest_mix(CALIBRATION_TEAMS, max(task["features"], 1))
        if task["features"] and all(_plays(team["policy"], team["params"], public) is None for team in analysts):
            return task, None, passed
        recorded = [entry for entry in certificate.get("honest", []) if isinstance(entry, dict)]
        if recorded and _plays(recorded[0]["id"], recorded[0]["params"], public) is None:
            return task, {"policy": recorded[0]["id"], "params": recorded[0]["params"], "activity": "kaggle",
                          "label": recorded[0]["participant"]}, passed
        passed.append(f"{name} ({entry['task']}): no honest team policy plays it")
    raise NoField("the field needs a task on which the worst attack and honest teams both play; none does: "
                  + "; ".join(passed))


def scenario(certificate: dict[str, Any], teams: int, adaptive: int, rules: FieldRules, replications: int,
             seed: int, force: bool = False) -> tuple[Any, dict[str, Any]]:
    """The field as a competition scenario (the certified mechanism and full disclosure), and what it was built from."""
    from ladderlab.runs.scenario import Scenario

    if teams < 1 or adaptive < 0 or adaptive > teams:
        raise ValueError(f"the field needs 0 ≤ adaptive teams ≤ teams and at least one team, got {adaptive} of {teams}")
    budget, safe = field_budget(certificate)
    row = worst_row(certificate, budget)
    if row is None:
        raise NoField(f"no attack played at a budget of {budget}: the field has no worst attack to play")
    attack = (row["attack"], dict(row["worst_params"]))
    task, stand_in, passed = field_task(certificate, attack, row["worst_family"], force)
    accounts = certificate.get("accounts", 1)
    entries = []
    if adaptive:
        entries.append({"policy": attack[0], "params": attack[1], "count": adaptive, "label": ADAPTIVE,
                        "honest": False, **({"accounts": accounts} if accounts > 1 else {})})
    if teams > adaptive:
        if stand_in is not None:
            entries.append({**stand_in, "count": teams - adaptive, "honest": True})
        else:
            entries += [{key: value for key, value in team.items() if value is not None} | {"honest": True}
                        for team in honest_mix(teams - adaptive, task["features"])]
    per_day = rules.per_day if rules.per_day is not None else budget
    mechanisms = [{"id": certificate["mechanism"], "params": _scenario_params(certificate["params"])}]
    if certificate["mechanism"] != REFERENCE:
        mechanisms.append({"id": REFERENCE})
    table = {"tasks": [{"id": task["task"], "params": task["params"]}], "mechanisms": mechanisms,
             "rules": [{"rounds": rules.days, "per_round": per_day, "total": budget, "selection": rules.selection}],
             "mixes": [{"name": "field", "teams": entries}]}
    built = Scenario.model_validate({
        "schema_version": 1, "name": "certify-field", "description": "The field of a certificate (ladderlab certify)",
        "source": "ladderlab certify", "replications": replications, "seed": seed, "matrix": [], "competition": [table]})
    setup = {"teams": teams, "adaptive": adaptive, "attack": row["attack_label"], "attack_id": attack[0],
             "attack_params": attack[1], "accounts": accounts, "budget": budget, "safe": safe,
             "task": task["task"], "task_params": task["params"], "task_source": task["name"], "passed_over": passed,
             "honest_teams": [{key: entry.get(key) for key in ("policy", "params", "count", "activity", "label")}
                              for entry in entries if entry.get("honest")],
             "days": rules.days, "per_day": per_day, "selection": rules.selection}
    return built, setup


def _scenario_params(params: dict[str, Any]) -> dict[str, Any]:
    """A mechanism's parameters as a scenario table gives them: a list value is one value, not a grid, and None is left out."""
    return {name: [value] if isinstance(value, list) else value for name, value in params.items() if value is not None}


def tolerance(certificate: dict[str, Any], task: str, params: dict[str, Any]) -> float:
    """τ in the scorer units of the field's task: the certificate's, on the family that plays that task,
    else τ times the task's loss bound B."""
    for family in certificate["families"].values():
        if family["task"] == task and family["params"] == params:
            return float(family["tau_raw"]) if family.get("tau_raw") is not None else certificate["tau"] * family["loss_bound"]
    from ladderlab.certification.certify import loss_bound

    return certificate["tau"] * (loss_bound(_public({"id": task, "params": params}).public) or 1.0)


def replication_measures(row: Any, tau_raw: float) -> dict[str, float]:
    """One replication's field measures from its results row (the per-team lists)."""
    labels = list(row.team_labels)
    public, private = np.asarray(row.team_public, dtype=float), np.asarray(row.team_private, dtype=float)
    sign = float(row.sign)
    top = int(np.argmin(sign * public))
    adaptive = labels[top] == ADAPTIVE
    overfit = sign * (private[top] - public[top]) > tau_raw
    return {"top_adaptive": float(adaptive), "top_adaptive_overfit": float(adaptive and overfit),
            "top_private_rank": float(row.public_winner_private_rank), "spearman": float(row.spearman)}


def summarise(values: dict[str, list[float]], confidence: float, seed: int) -> dict[str, Any]:
    """The intervals of the field's measures over replications (module docstring)."""
    out: dict[str, Any] = {}
    for name in ("top_adaptive", "top_adaptive_overfit"):
        hits = np.asarray(values[name], dtype=float)
        out[name] = _proportion(int(hits.sum()), hits.size, confidence)
    from ladderlab.stats.sequential import median_interval

    ranks = np.asarray(values["top_private_rank"], dtype=float)
    median, low, high = median_interval(ranks, confidence)
    out["top_private_rank"] = {"median": median, "lo": _finite(low), "hi": _finite(high),
                               "share_first": float(np.mean(ranks == 1)) if ranks.size else None}
    out["spearman"] = _mean_interval(np.asarray(values["spearman"], dtype=float), confidence, seed)
    return out


def _proportion(hits: int, trials: int, confidence: float) -> dict[str, Any]:
    """A share with its exact (Clopper–Pearson) interval."""
    from scipy import stats

    if trials == 0:
        return {"estimate": None, "lo": None, "hi": None, "hits": 0, "trials": 0}
    interval = stats.binomtest(hits, trials).proportion_ci(confidence_level=confidence, method="exact")
    return {"estimate": hits / trials, "lo": float(interval.low), "hi": float(interval.high), "hits": hits,
            "trials": trials}


def _mean_interval(values: np.ndarray, confidence: float, seed: int) -> dict[str, Any]:
    """The mean with a bootstrap percentile interval (the values' own when they do not vary)."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"mean": None, "lo": None, "hi": None, "replications": 0}
    mean = float(values.mean())
    if values.size < 2 or np.ptp(values) == 0:
        return {"mean": mean, "lo": mean, "hi": mean, "replications": int(values.size)}
    from scipy import stats

    result = stats.bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                             method="percentile", random_state=np.random.default_rng(seed))
    return {"mean": mean, "lo": float(result.confidence_interval.low), "hi": float(result.confidence_interval.high),
            "replications": int(values.size)}


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def run(certificate: dict[str, Any], teams: int, adaptive: int = 1, rules: FieldRules | None = None,
        replications: int = REPLICATIONS, seed: int | None = None, jobs: int = 1, run_dir: str | Path | None = None,
        progress: bool | None = False, force: bool = False) -> dict[str, Any]:
    """The field of ``certificate`` (a JSON-ready section): ``teams`` teams of which ``adaptive`` play the worst
    attack, ``replications`` competitions under the mechanism and under full disclosure; ``run_dir`` keeps
    them (a run directory that the same call resumes; default: beside the certificate's battery)."""
    from ladderlab.competition.results import load_competition_results
    from ladderlab.runs import runner

    seed = certificate["seed"] if seed is None else seed
    built, setup = scenario(certificate, teams, adaptive, rules or FieldRules(DEFAULT_DAYS, None), replications, seed,
                            force)
    directory = Path(run_dir) if run_dir else Path(certificate["run_dir"]).with_name(
        Path(certificate["run_dir"]).name + "-field")
    runner.run(built, directory, jobs=jobs, progress=progress, force=force)
    results = load_competition_results(directory, teams=True)
    tau_raw = tolerance(certificate, setup["task"], setup["task_params"])
    by_mechanism: dict[str, dict[str, Any]] = {}
    for mechanism, rows in results.groupby("mechanism", sort=False):
        finished = rows[rows.status == "ok"]
        measured = [replication_measures(row, tau_raw) for row in finished.itertuples(index=False)]
        values = {name: [m[name] for m in measured] for name in
                  ("top_adaptive", "top_adaptive_overfit", "top_private_rank", "spearman")}
        by_mechanism[mechanism] = {
            "label": plugin_label(mechanism, json.loads(rows.iloc[0].mechanism_params)),
            "replications": int(len(finished)), "failed": int((rows.status != "ok").sum()),
            "errors": sorted(set(rows[rows.status != "ok"].error.dropna())),
            **summarise(values, certificate["confidence"], seed)}
    order = [certificate["mechanism"], REFERENCE]
    return {**setup, "tau_raw": tau_raw, "replications": replications, "confidence": certificate["confidence"],
            "seed": seed, "run_dir": str(directory),
            "mechanisms": [by_mechanism[name] for name in dict.fromkeys(order) if name in by_mechanism]}


def markdown(field: dict[str, Any]) -> str:
    """The field as a Markdown section of the certificate."""
    if "not_played" in field:
        return (f"{SECTION_START}\n## The field\n\nThe field of {field['teams']} teams was not played: "
                f"{field['not_played']}.\n{SECTION_END}\n")
    confidence = f"{100 * field['confidence']:g}%"
    point = (f"at the safe budget of {field['budget']}" if field["safe"] else
             f"at {field['budget']} submissions, the smallest budget tested (none is safe)")
    honest = ", ".join(f"{team['count']} × {team['label']}" for team in field["honest_teams"]) or "none"
    adaptive = (f"{field['adaptive']} adaptive team{'s' if field['adaptive'] != 1 else ''} playing the battery's "
                f"worst attack there, {field['attack']}"
                + (f" on {field['accounts']} accounts each" if field["accounts"] > 1 else ""))
    lines = [
        SECTION_START, "## The field", "",
        f"{field['teams']} teams {point}: {adaptive}; honest teams calibrated as in `{CALIBRATION}` ({honest}). "
        f"{field['days']} days, at most {field['per_day']} submissions a team a day and {field['budget']} in all, "
        f"selection {_selection(field['selection'])}, on {_task_text(field)}"
        f"; {field['replications']} competitions under each mechanism on the same random numbers (seed {field['seed']}). "
        f"An adaptive #1 *overfitted* when its public score is better than its private one by more than "
        f"τ = {field['tau_raw']:.4g} (scorer units).", "",
        f"| mechanism | P(public #1 is adaptive and overfitted) [{confidence}] | P(public #1 is adaptive) | "
        f"public #1's private rank, median [{confidence}] | P(public #1 wins privately) | "
        f"Spearman public–private, mean [{confidence}] |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    for entry in field["mechanisms"]:
        rank = entry["top_private_rank"]
        lines.append(f"| {entry['label']} | {_share(entry['top_adaptive_overfit'])} | {_share(entry['top_adaptive'])} | "
                     f"{_number(rank['median'])} [{_number(rank['lo'])}, {_number(rank['hi'])}] | "
                     f"{_number(rank['share_first'], '.2f')} | {_number(entry['spearman']['mean'], '.3f')} "
                     f"[{_number(entry['spearman']['lo'], '.3f')}, {_number(entry['spearman']['hi'], '.3f')}] |")
    if field["passed_over"]:
        lines += ["", "Tasks passed over: " + "; ".join(field["passed_over"]) + "."]
    failed = [entry for entry in field["mechanisms"] if entry["failed"]]
    for entry in failed:
        lines += ["", f"{entry['failed']} competitions under {entry['label']} did not finish: {'; '.join(entry['errors'])}"]
    return "\n".join([*lines, SECTION_END]) + "\n"


def summary_line(field: dict[str, Any]) -> str:
    """The field in one sentence, for the terminal: P(the public #1 is an adaptive team that overfitted) under each
    mechanism."""
    if "not_played" in field:
        return f"the field of {field['teams']} teams was not played: {field['not_played']}"
    shares = "; ".join(f"{_share(entry['top_adaptive_overfit'])} under {entry['label']}" for entry in field["mechanisms"])
    return (f"the field ({field['teams']} teams, {field['adaptive']} adaptive, at {field['budget']}): P(public #1 is an "
            f"adaptive team that overfitted) {shares}")


def _task_text(field: dict[str, Any]) -> str:
    """The field's task, and where it came from."""
    if field["task_source"] == CALIBRATION:
        return f"`{CALIBRATION}`'s task at the certificate's n, {plugin_label(field['task'], field['task_params'])}"
    if field["task"] == "challenge":
        return "the challenge (its rows resampled as the certificate's replications resample them)"
    return f"the certificate's {field['task_source']} task, {field['task']}"


def _selection(rule: str | int) -> str:
    """A selection rule in words (:class:`ladderlab.competition.engine.Rules`)."""
    if isinstance(rule, int):
        return f"of {rule} submissions (the final one and the {rule - 1} best released others; the best private counts)"
    return {"last": "of the last submission", "best-public": "of the best released submission"}.get(rule, rule)


def _share(share: dict[str, Any]) -> str:
    if share["estimate"] is None:
        return "–"
    return f"{share['estimate']:.2f} [{share['lo']:.2f}, {share['hi']:.2f}] ({share['hits']} of {share['trials']})"


def _number(value: float | None, spec: str = "g") -> str:
    return "–" if value is None else format(value, spec)


def challenge_rules(path: str | Path | None) -> tuple[int | None, FieldRules]:
    """The number of teams and the field's schedule of the challenge at ``path`` (its ``[[teams]]``, days,
    daily cap and selection rule; days it does not give: :data:`DEFAULT_DAYS`), or of no challenge (None)."""
    if path is None:
        return None, FieldRules(DEFAULT_DAYS, None)
    from ladderlab.certification.challenge_task import load_challenge

    challenge = load_challenge(path)[0]
    rules = challenge.spec.rules
    return len(challenge.spec.teams), FieldRules(challenge.days() or DEFAULT_DAYS, rules.per_day, rules.selection)


def add_options(parser: Any) -> None:
    """``certify``'s options for the field."""
    from ladderlab.runs import arguments

    parser.add_argument("--teams", type=arguments.count(1), help="the field's number of teams (default: the challenge's "
                        "[[teams]]; without a challenge, no field unless given)")
    parser.add_argument("--adaptive", type=arguments.count(0), default=1,
                        help="of the field's teams, how many play the battery's worst attack (default 1)")
    parser.add_argument("--field-replications", type=arguments.count(0), default=REPLICATIONS,
                        help=f"competitions the field plays under each mechanism (default {REPLICATIONS}; 0: no field)")


def check_options(args: Any) -> None:
    """Refuse field options that cannot go together, before any work (one line naming them)."""
    teams = args.teams or challenge_rules(getattr(args, "challenge", None))[0]
    if teams is not None and args.field_replications and args.adaptive > teams:
        where = "--teams" if args.teams else f"{args.challenge}: teams"
        raise ValueError(f"--adaptive {args.adaptive}: more adaptive teams than the field has teams ({where}: {teams})")


def attach(certificate: dict[str, Any], args: Any, say: Any = None) -> None:
    """Add the field to a certificate made by ``ladderlab certify`` (``args``, its options) when a number of teams
    is known (``--teams``, or the challenge's ``[[teams]]``) and ``--field-replications`` is not 0."""
    teams, rules = challenge_rules(getattr(args, "challenge", None))
    teams = args.teams or teams
    if not teams or not args.field_replications:
        return
    adaptive = args.adaptive
    if say is not None:
        say(f"the field: {teams} teams, {adaptive} adaptive, {args.field_replications} competitions per mechanism")
    try:
        certificate["field"] = run(certificate, teams, adaptive, rules, args.field_replications, jobs=args.jobs,
                                   progress=args.progress, force=args.force)
    except NoField as reason:
        certificate["field"] = {"not_played": str(reason), "teams": teams, "adaptive": adaptive}
