"""Plan a challenge: ``ladderlab plan``, how large a public set, which mechanism and what budget.

Given the organiser's holdout (a challenge file, or any task: its holdout rows), the budget a
team gets (``--budget``, or ``--days`` × ``--per-day``, or the challenge's rules), the tolerances
and the least honest utility they accept, the plan answers, for each candidate mechanism:

- its **tuned setting**: at the organiser's public size n₀, every setting of the mechanism's declared
  search space (``Mechanism._search_space``; a mechanism named with parameters keeps them) is
  certified over a grid of budgets around the organiser's; the setting kept is the certified one
  (at the organiser's budget, with the least honest utility) whose honest utility is best, else the
  one that certifies the largest budget with that utility;
- the **largest budget certified** at n₀ (over its settings of enough utility);
- the **smallest public set** (rows, and as a share of the holdout) at which its tuned setting is
  certified at the organiser's budget: a bisection of n on a geometric scale, down from n₀ when n₀
  is certified, else up to the largest public share allowed (``--max-fraction``, half the holdout
  by default: the private leaderboard needs the rest, and a final set of a few rows measures Δ
  with so much noise that no mechanism passes);
- where a mechanism states what its theorem guarantees (``proven_bound(n, k, delta)``, None where it
  has none), the public size at which **the proof alone** keeps the leaderboard error within ε.

"Certified" at (n, budget) means what a certificate says (:mod:`ladderlab.certification.certify`,
every attack of the battery on the organiser's own data, at this public size) and that the honest
participant's median Spearman correlation between released and final scores reaches
``--min-utility``. The recommendation is the mechanism certified at the organiser's n₀ and budget
with the best honest utility; else the one that needs the smallest public set; else the one that
certifies the largest budget at n₀; each with the tuned setting and its certificate.

How it stays fast (docs/certification.md#planning-a-challenge):

- *screens*: a certificate fails as soon as one attack fails, so each evaluation first runs only the
  attacks that broke or came closest to breaking this mechanism so far (its *dangerous* attacks);
  only when they all pass does the whole battery run, and it reads the screen's replications back
  (the same battery directory: :mod:`ladderlab.certification.battery`). A failed screen is a
  failed certificate; a passed one decides nothing until the battery has run;
- *sequential verdicts*: every grid point stops as soon as it is decided, and once a point fails at
  a budget the larger budgets stop (the certificate's own rules);
- *common random numbers*: at one public size every mechanism and setting plays the same splits and
  the same attackers' coins (a duel's streams do not depend on the mechanism), and full disclosure's
  replications and its honest participant are played once per size for all of them (certify's
  ``reference_store``); every battery is kept under the plan's directory, so the same plan again
  (or one with other tolerances) reads what it can back;
- *bisection*: the smallest public set is found to within ``--resolution`` (10 % by default) in a
  handful of certificates, on the assumption (stated in the plan) that a public set that certifies
  a budget keeps certifying it when it grows, up to the largest share allowed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ladderlab.certification import certify
from ladderlab.certification.certificate_text import honest_entries
from ladderlab.certification.proofs import proves
from ladderlab.certification.public_size import PublicSize
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.stats.sequential import FAILS, INCONCLUSIVE

DEFAULT_MECHANISMS = ("full-disclosure", "kaggle", "ladder", "ladder-free", "ladder-t")
"""The candidates when the organiser names none: the reference and the mechanisms of the papers that
release a score for every submission (the Kaggle leaderboard, the Ladder, its parameter-free and t-test forms)."""
BUDGET_STEPS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""The budgets certified at each public size, as multiples of the organiser's: the frontier's budgets."""
RESOLUTION = 0.1
"""The bisection stops when the smallest certified public size is known to within this share."""
MAX_FRACTION = 0.5
"""The largest share of the holdout the plan lets the public leaderboard score."""
MIN_UTILITY = 0.5
ZERO_ONE = frozenset({"zero-one", "error", "accuracy"})
"""Scorers whose per-sample loss is 0 or 1: a proven bound may use exact binomial tails for them."""
SMALLEST_N = 10
"""The smallest public set a certificate plays (:func:`ladderlab.certification.certify.battery_scenario`)."""
SCREEN = 3
"""The attacks a screen plays: those that came closest to breaking the mechanism so far (the greatest severity,
:func:`ladderlab.certification.certify.judge`, at a budget up to the organiser's)."""


@dataclass(frozen=True)
class Target:
    """What the plan is for: the organiser's holdout (an inner task whose holdout rows ``public-size``
    splits), their public size, scorer and honest participants."""

    name: str
    task: str
    task_params: dict[str, Any]
    holdout: int
    n: int
    scorer: str
    honest: list[certify.AttackSpec]
    challenge: str | None = None

    def entry(self, n: int) -> dict[str, Any]:
        """The holdout with ``n`` public rows, as a task family entry."""
        return {"id": PublicSize.id, "params": {"task": self.task, "task_params": self.task_params, "n_public": n}}

    @functools.cached_property
    def honest_play_holdout(self) -> bool:
        """Whether every honest participant can play the holdout (its public data: features, labels, scorer)."""
        public = TASKS.make(self.task, **self.task_params).split(_fixed_stream()).public
        return all(ATTACKS.make(spec.id, **(spec.pinned or {})).incompatibility(public) is None for spec in self.honest)

    def families(self, n: int) -> dict[str, dict[str, Any]]:
        """The battery's families at public size ``n``: the holdout, and the honest participants' task (the
        holdout where they can all play it, else certify's synthetic task for the scorer)."""
        entry = self.entry(n)
        if self.honest_play_holdout:
            return {"holdout": entry, "honest": entry}
        try:
            synthetic = certify.families(n, self.scorer)
        except ValueError:
            synthetic = certify.families(n)
        return {"holdout": entry, "honest": synthetic["honest"]}

    def fraction(self, n: int | None) -> float | None:
        return None if n is None else n / self.holdout

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task, "challenge": self.challenge, "holdout": self.holdout, "n": self.n,
                "scorer": self.scorer, "honest": [spec.label for spec in self.honest]}


def _fixed_stream() -> Any:
    import numpy as np

    return np.random.default_rng(0)


def challenge_target(path: str | Path, budget: int, n: int | None = None, fraction: float | None = None) -> Target:
    """The holdout of the challenge file at ``path`` (its labels, scorer, range and public data), the organiser's
    public size its split's (or ``n`` rows, or ``fraction`` of the holdout), its honest participants held to ``budget``."""
    from ladderlab.certification.challenge_certify import honest_participants
    from ladderlab.certification.challenge_task import load_challenge
    from ladderlab.utils.locations import anchored

    challenge, identity = load_challenge(path)
    holdout = int(challenge.split.public_rows.size + challenge.split.final_rows.size)
    organiser = _organiser_n(int(challenge.split.public_rows.size), holdout, n, fraction)
    return Target(challenge.name, "challenge", {"path": anchored(Path.cwd(), str(path)), "sha256": identity}, holdout,
                  organiser, challenge.split.public.scorer, honest_participants(challenge, [], [budget]), str(path))


def task_target(text: str, budget: int, n: int | None = None, fraction: float | None = None) -> Target:
    """The holdout of the task named by ``text`` (an id with parameters, ``random-labels(n_holdout=10000)``), the
    organiser's public size the task's own (or ``n`` rows, or ``fraction``), the default honest participant held to
    ``budget`` submissions."""
    task_id, params = TASKS.parse(text)
    params = params or {}
    task = TASKS.checked(task_id, params, f"--task {text}")
    split = task.split(_fixed_stream())
    holdout = int(split.public_rows.size + split.final_rows.size)
    organiser = _organiser_n(int(split.public_rows.size), holdout, n, fraction)
    honest = [certify.AttackSpec("improving", {"days": min(certify.HONEST_DAYS, budget)})]
    return Target(plugin_label(task_id, params), task_id, params, holdout, organiser, split.public.scorer, honest)


def check_target(target: Target, budget: int, tau: float, epsilon: float) -> None:
    """Refuse, before any certificate, a holdout whose loss is unbounded without a declared prediction range
    (:func:`ladderlab.certification.certify.check_bounded`)."""
    certify.check_bounded(target.name, target.entry(target.n))


def _organiser_n(own: int, holdout: int, n: int | None, fraction: float | None) -> int:
    if n is not None and fraction is not None:
        raise ValueError(f"--n {n} and --public-fraction {fraction:g}: give one of them")
    chosen = own if n is None and fraction is None else n if n is not None else round(fraction * holdout)
    if not SMALLEST_N <= chosen < holdout:
        where = f"--n {n}" if n is not None else f"--public-fraction {fraction:g}" if fraction is not None else "the split"
        raise ValueError(f"{where}: {chosen} public rows of a holdout of {holdout}; a plan needs between {SMALLEST_N} "
                         f"and {holdout - 1}")
    return chosen


@dataclass
class Evaluation:
    """One certificate of the plan: a mechanism setting at a public size over budgets, by its screen or its whole battery."""

    mechanism: str
    params: dict[str, Any]
    n: int
    budgets: list[int]
    whole: bool
    safe: int
    utility: dict[str, float | None]
    culprits: list[str]
    severities: dict[str, tuple[int, float]]
    seconds: float
    certificate: dict[str, Any] = field(repr=False)

    def certified(self, budget: int, min_utility: float) -> bool:
        """Certified at ``budget``: the whole battery found it safe there, with enough honest utility."""
        return self.whole and self.safe >= budget and self.useful(min_utility)

    def useful(self, min_utility: float) -> bool:
        median = self.utility.get("median")
        return median is not None and median >= min_utility

    def same_setting(self, mechanism: str, params: dict[str, Any]) -> bool:
        return self.mechanism == mechanism and _normalised(mechanism, self.params) == _normalised(mechanism, params)

    def record(self) -> dict[str, Any]:
        return {"n": self.n, "params": self.params, "budgets": self.budgets, "battery": "whole" if self.whole else "screen",
                "safe_budget": self.safe, "utility": self.utility, "culprits": self.culprits, "seconds": self.seconds}


def _normalised(mechanism: str, params: dict[str, Any]) -> dict[str, Any]:
    """A setting with every parameter, defaults included: two spellings of one setting compare equal."""
    return MECHANISMS.make(mechanism, **params).get_params()


def _honest_utility(certificate: dict[str, Any]) -> dict[str, float | None]:
    entries = honest_entries(certificate)
    return dict(entries[0]["rank_correlation"]) if entries else {"median": None, "lo": None, "hi": None}


class Planner:
    """The plan's certificates (module docstring): each mechanism setting at each public size, screened first."""

    def __init__(self, target: Target, budget: int, directory: Path, min_utility: float = MIN_UTILITY,
                 say: Callable[[str], None] | None = None, attacks: list[str] | None = None, **options: Any):
        self.target, self.budget, self.directory = target, budget, Path(directory)
        self.min_utility = min_utility
        self.attacks = attacks
        """The whole battery's attacks (None: certify's default battery, every registered attack)."""
        self.say = say or (lambda line: None)
        self.options = options
        self.severity: dict[str, dict[str, tuple[int, float]]] = {}
        """By mechanism, each attack's worst verdict and greatest severity seen at a budget up to the organiser's."""
        self.evaluations: list[Evaluation] = []

    def budgets(self, above: bool = True) -> list[int]:
        """The frontier's budgets: :data:`BUDGET_STEPS` times the organiser's, whole and distinct (``above``
        False: only those up to the organiser's, as the search of the smallest public set needs)."""
        return sorted({max(1, round(step * self.budget)) for step in BUDGET_STEPS if above or step <= 1})

    def screen(self, mechanism: str) -> list[str]:
        """The attacks a screen plays: the :data:`SCREEN` most severe against this mechanism so far, else against
        any mechanism (none before the first whole battery)."""
        seen = self.severity.get(mechanism)
        if not seen:
            seen = {}
            for severities in self.severity.values():
                for attack, value in severities.items():
                    seen[attack] = max(value, seen.get(attack, value))
        return sorted(sorted(seen, key=lambda attack: seen[attack], reverse=True)[:SCREEN])

    def _directory(self, mechanism: str, params: dict[str, Any], n: int) -> Path:
        """Where the batteries of a setting at public size ``n`` are kept (its screens' and its whole battery's)."""
        normalised = _normalised(mechanism, params)
        digest = hashlib.sha256(json.dumps([mechanism, normalised], sort_keys=True, default=str).encode()).hexdigest()[:10]
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in mechanism)[:40]
        return self.directory / f"{slug}-{digest}" / f"n{n}"

    def evaluate(self, mechanism: str, params: dict[str, Any], n: int, whole: bool = False,
                 above: bool = True) -> Evaluation:
        """The setting at public size ``n`` over :meth:`budgets` (``above``: also those above the organiser's): its
        screen, and the whole battery when the screen certifies the organiser's budget with enough utility (or
        ``whole``). A whole battery at the same size and budgets is read back, not played again."""
        budgets = self.budgets(above)
        earlier = next((e for e in self.evaluations if e.whole and e.n == n and e.same_setting(mechanism, params)
                        and set(budgets) <= set(e.budgets)), None)
        if earlier is not None:
            return earlier
        screen = self.screen(mechanism)
        if screen and not whole and (self.attacks is None or set(screen) < set(self.attacks)):
            first = self._certificate(mechanism, params, n, budgets, screen)
            if not first.safe >= self.budget or not first.useful(self.min_utility):
                return first
        return self._certificate(mechanism, params, n, budgets, None)

    def _certificate(self, mechanism: str, params: dict[str, Any], n: int, budgets: list[int],
                     screen: list[str] | None) -> Evaluation:
        label = plugin_label(mechanism, params)
        what = "the whole battery" if screen is None else f"screen {', '.join(screen)}"
        started = time.perf_counter()
        certificate = certify.certify(
            mechanism, params, n=n, budgets=budgets, task_families=self.target.families(n),
            honest=self.target.honest, attacks=screen or self.attacks or [],
            default_battery=screen is None and self.attacks is None,
            run_dir=self._directory(mechanism, params, n), reference_store=self.directory / "reference" / f"n{n}",
            **self.options)
        rows = certificate["battery"]
        culprits = sorted({row["attack"] for row in rows if row["verdict"] in (FAILS, INCONCLUSIVE)})
        severities: dict[str, tuple[int, float]] = {}
        for row in rows:
            if row["budget"] <= self.budget and row.get("severity") is not None:
                found = (certify.VERDICT_ORDER.get(row["verdict"], 0), row["severity"])
                severities[row["attack"]] = max(found, severities.get(row["attack"], found))
        seen = self.severity.setdefault(mechanism, {})
        for attack, value in severities.items():
            seen[attack] = max(value, seen.get(attack, value))
        evaluation = Evaluation(mechanism, dict(params), n, budgets, screen is None, certificate["safe_budget"],
                                _honest_utility(certificate), culprits, severities, time.perf_counter() - started,
                                certificate)
        self.evaluations.append(evaluation)
        utility = evaluation.utility["median"]
        self.say(f"{label} at n = {n} ({what}): safe budget {evaluation.safe}, honest utility "
                 f"{'–' if utility is None else f'{utility:.2f}'} ({evaluation.seconds:.0f} s)")
        return evaluation

    def tune(self, mechanism: str, pinned: dict[str, Any] | None) -> tuple[Evaluation, list[Evaluation]]:
        """Every setting at the organiser's n₀ (only ``pinned`` when given); the tuned one (module docstring)."""
        settings = [pinned] if pinned is not None else _settings(mechanism, self.target.scorer)
        evaluations = [self.evaluate(mechanism, setting, self.target.n, above=False) for setting in settings]
        useful = [e for e in evaluations if e.useful(self.min_utility)]
        certified = [e for e in useful if e.certified(self.budget, self.min_utility)]
        if certified:
            return max(certified, key=lambda e: e.utility["median"]), evaluations
        if useful:
            return max(useful, key=lambda e: (e.safe, e.utility["median"])), evaluations
        return max(evaluations, key=lambda e: (e.utility["median"] if e.utility["median"] is not None else -2.0,
                                               e.safe)), evaluations

    def largest_budget(self, settings: list[Evaluation]) -> Evaluation | None:
        """Of the settings at the organiser's n₀ with enough honest utility, the one whose whole battery certifies
        the largest budget; None when no setting has enough utility. Those certified at the organiser's budget play
        the budgets above it too (their whole battery reads the others back); otherwise the screens' safe budgets
        bound their batteries' from above, so the batteries run in the order of the screens' until none could do
        better."""
        useful = [e for e in settings if e.useful(self.min_utility)]
        certified = [e for e in useful if e.certified(self.budget, self.min_utility)]
        if certified:
            extended = [self.evaluate(e.mechanism, e.params, e.n, whole=True) for e in certified]
            return max((e for e in extended if e.useful(self.min_utility)), key=lambda e: e.safe, default=None)
        best: Evaluation | None = None
        for candidate in sorted(useful, key=lambda e: -e.safe):
            if best is not None and candidate.safe <= best.safe:
                break
            whole = candidate if candidate.whole else self.evaluate(candidate.mechanism, candidate.params, candidate.n,
                                                                     whole=True, above=False)
            if whole.useful(self.min_utility) and (best is None or whole.safe > best.safe):
                best = whole
        return best

    def smallest_n(self, tuned: Evaluation, resolution: float, max_fraction: float) -> tuple[int | None, list[Evaluation]]:
        """The smallest public size at which the tuned setting is certified at the organiser's budget (None: not
        up to ``max_fraction`` of the holdout), to within ``resolution``, and the certificates of the search."""
        ceiling = max(SMALLEST_N, min(self.target.holdout - 1, math.floor(max_fraction * self.target.holdout)))
        steps: list[Evaluation] = []

        def certified(n: int) -> bool:
            found = self.evaluate(tuned.mechanism, tuned.params, n, above=False)
            steps.append(found)
            return found.certified(self.budget, self.min_utility)

        if tuned.certified(self.budget, self.min_utility):
            low, high = SMALLEST_N - 1, tuned.n
        else:
            if tuned.n >= ceiling or not certified(ceiling):
                return None, steps
            low, high = tuned.n, ceiling
        while high - low > 1 and high > (1 + resolution) * max(low, 1):
            middle = min(high - 1, max(low + 1, round(math.sqrt(max(low, 1) * high))))
            if certified(middle):
                high = middle
            else:
                low = middle
        return high, steps


def _settings(mechanism: str, scorer: str) -> list[dict[str, Any]]:
    """The settings of a mechanism's declared search space (:func:`ladderlab.certification.tune.settings`),
    or its defaults where it declares none."""
    from ladderlab.certification.tune import settings

    try:
        return [point for point, _ in settings(mechanism, {}, scorer, search_ranges=False)]
    except ValueError:
        return [{}]


def proof_alone(mechanism: str, params: dict[str, Any], budget: int, epsilon: float, confidence: float,
                holdout: int, scorer: str = "zero-one") -> int | None:
    """The smallest public size (at most the holdout) at which the mechanism's proven bound
    (``proven_bound(n, k, delta)``, ε in units of B; for the 0/1 loss its exact binomial form where it has one)
    proves the budget safe (:func:`ladderlab.certification.proofs.proves`: at most ``epsilon`` with probability
    ``confidence``, not vacuous, for every submission); None where it proves no such bound there."""
    instance = MECHANISMS.make(mechanism, **params)
    delta = 1.0 - confidence

    def holds(n: int) -> bool:  # budget + 1 releases: the attack's submissions and its final prediction
        return proves(instance.proven_bound(n, budget + 1, delta, scorer in ZERO_ONE), delta, epsilon)

    if not holds(holdout):
        return None
    low, high = 1, holdout
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if holds(middle) else (middle, high)
    return high


def plan(target: Target, budget: int, mechanisms: list[certify.AttackSpec] | None = None, directory: str | Path = "plan",
         min_utility: float = MIN_UTILITY, resolution: float = RESOLUTION, max_fraction: float = MAX_FRACTION,
         say: Callable[[str], None] | None = None, attacks: list[str] | None = None, **options: Any) -> dict[str, Any]:
    """The plan (module docstring) as a JSON-ready dict. ``mechanisms``: the candidates, each an id (its settings
    searched) or an id with pinned parameters (default :data:`DEFAULT_MECHANISMS`); ``attacks``: the battery (default:
    every registered attack); ``options`` go to every certificate (:func:`ladderlab.certification.certify.certify`:
    tau, epsilon, confidence, replications, seed, jobs …)."""
    say = say or (lambda line: None)
    candidates = mechanisms or [certify.AttackSpec(name) for name in DEFAULT_MECHANISMS]
    started = time.perf_counter()
    from ladderlab.utils import cpu_time

    cpu_started = cpu_time.tree_seconds()
    planner = Planner(target, budget, Path(directory), min_utility, say, attacks, **options)
    rows = []
    for spec in candidates:
        tuned, settings = planner.tune(spec.id, spec.pinned)
        widest = planner.largest_budget(settings)
        smallest, steps = planner.smallest_n(tuned, resolution, max_fraction)
        confidence = options.get("confidence", 0.95)
        epsilon_b = _epsilon_in_bound(tuned.certificate, options.get("epsilon", 0.05))
        rows.append({
            "mechanism": spec.id, "label": plugin_label(spec.id, tuned.params), "params": tuned.params,
            "tuned": spec.pinned is None and len(settings) > 1,
            "settings": [e.record() for e in settings],
            "at_organiser_n": tuned.record(),
            "certified_at_organiser_n": tuned.certified(budget, min_utility),
            "largest_budget": None if widest is None else {"budget": widest.safe, "params": widest.params,
                                                          "label": plugin_label(spec.id, widest.params),
                                                          "utility": widest.utility},
            "smallest_n": smallest, "smallest_fraction": target.fraction(smallest),
            "steps": [e.record() for e in steps],
            "proof_alone_n": proof_alone(spec.id, tuned.params, budget, epsilon_b, confidence, target.holdout,
                                         target.scorer),
            "frontier": _frontier(planner.evaluations, spec.id, tuned.params),
        })
    recommendation = recommend(rows, target, budget, planner)
    from ladderlab.runs.page_stamps import code_record

    code = {key: token for e in planner.evaluations for key, token in e.certificate.get("code", {}).items()}
    return {
        "target": target.record(), "budget": budget, "budgets": planner.budgets(), "min_utility": min_utility,
        "resolution": resolution, "max_fraction": max_fraction,
        **{name: options[name] for name in ("tau", "epsilon", "confidence", "replications", "seed") if name in options},
        "mechanisms": rows, "recommendation": recommendation,
        "certificates": len(planner.evaluations),
        "whole_batteries": sum(e.whole for e in planner.evaluations),
        "wall_time_seconds": time.perf_counter() - started, "cpu_time_seconds": cpu_time.tree_seconds() - cpu_started,
        "code": {**code, **code_record({}, "plan")},
    }


def _epsilon_in_bound(certificate: dict[str, Any], epsilon: float) -> float:
    """ε in units of the loss bound B (the unit of the proven bounds) on the plan's holdout family."""
    family = certificate["families"]["holdout"]
    if family.get("epsilon_bound") is not None:
        return float(family["epsilon_bound"])
    return epsilon


def _frontier(evaluations: list[Evaluation], mechanism: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The setting's certificates by public size: the largest budget certified (whole battery) or a bound on it (screen)."""
    points: dict[int, dict[str, Any]] = {}
    for e in evaluations:
        if not e.same_setting(mechanism, params):
            continue
        if e.n not in points or e.whole:
            points[e.n] = {"n": e.n, "safe_budget": e.safe, "whole": e.whole, "utility": e.utility["median"]}
    return [points[n] for n in sorted(points)]


def recommend(rows: list[dict[str, Any]], target: Target, budget: int, planner: Planner) -> dict[str, Any]:
    """What to deploy: a mechanism certified at the organiser's n₀ and budget (the best honest utility), else the
    one certified on the smallest public set, else the one certifying the largest budget at n₀; with its certificate."""
    def certificate_at(row: dict[str, Any], n: int, params: dict[str, Any]) -> dict[str, Any] | None:
        found = [e for e in planner.evaluations if e.same_setting(row["mechanism"], params) and e.n == n and e.whole]
        return found[-1].certificate if found else None

    now = [row for row in rows if row["certified_at_organiser_n"]]
    if now:
        best = max(now, key=lambda row: (row["at_organiser_n"]["utility"]["median"], -(row["smallest_n"] or 0)))
        return {"kind": "deploy", "mechanism": best["mechanism"], "label": best["label"], "params": best["params"],
                "n": target.n, "budget": budget, "utility": best["at_organiser_n"]["utility"],
                "certificate": certificate_at(best, target.n, best["params"])}
    larger = [row for row in rows if row["smallest_n"] is not None]
    if larger:
        best = min(larger, key=lambda row: row["smallest_n"])
        step = next(e for e in reversed(best["steps"]) if e["n"] == best["smallest_n"])
        return {"kind": "grow", "mechanism": best["mechanism"], "label": best["label"], "params": best["params"],
                "n": best["smallest_n"], "budget": budget, "utility": step["utility"],
                "certificate": certificate_at(best, best["smallest_n"], best["params"])}
    smaller = [row for row in rows if row["largest_budget"] and row["largest_budget"]["budget"] > 0]
    if smaller:
        best = max(smaller, key=lambda row: (row["largest_budget"]["budget"], row["largest_budget"]["utility"]["median"]))
        widest = best["largest_budget"]
        return {"kind": "shrink", "mechanism": best["mechanism"], "label": widest["label"], "params": widest["params"],
                "n": target.n, "budget": widest["budget"], "utility": widest["utility"],
                "certificate": certificate_at(best, target.n, widest["params"])}
    return {"kind": "none", "mechanism": None, "label": None, "params": None, "n": None, "budget": None, "utility": None,
            "certificate": None}


KIND_TEXT = {
    "deploy": "deploy {label} with your public set of {n} rows and a budget of {budget}",
    "grow": "grow the public set to {n} rows ({fraction}) and deploy {label} with a budget of {budget}",
    "shrink": "keep your public set of {n} rows, deploy {label} and lower the budget to {budget}",
    "none": "no candidate is certified at any budget tested, up to {ceiling} public rows: collect more holdout rows, "
            "accept larger tolerances or a lower utility, or certify other mechanisms",
}


def headline(result: dict[str, Any]) -> str:
    """The recommendation in one sentence."""
    recommendation, target = result["recommendation"], result["target"]
    fraction = "–" if recommendation["n"] is None else f"{recommendation['n'] / target['holdout']:.0%} of the holdout"
    ceiling = max(SMALLEST_N, min(target["holdout"] - 1, math.floor(result["max_fraction"] * target["holdout"])))
    text = KIND_TEXT[recommendation["kind"]].format(label=recommendation["label"], n=recommendation["n"],
                                                    budget=recommendation["budget"], fraction=fraction, ceiling=ceiling)
    utility = recommendation["utility"]
    if utility and utility.get("median") is not None:
        text += f" (honest utility {utility['median']:.2f})"
    return text[:1].upper() + text[1:]


def _n_text(row: dict[str, Any], target: dict[str, Any]) -> str:
    if row["smallest_n"] is None:
        return "not within the largest share"
    return f"{row['smallest_n']} ({row['smallest_n'] / target['holdout']:.0%})"


def table_rows(result: dict[str, Any]) -> list[list[str]]:
    """One row per candidate: tuned setting, at the organiser's n (certified, safe budget, utility), the largest budget
    certified there, the smallest public set at the organiser's budget, and where the proof alone suffices."""
    target = result["target"]
    rows = []
    for row in result["mechanisms"]:
        at = row["at_organiser_n"]
        utility = at["utility"].get("median")
        widest = row["largest_budget"]
        rows.append([row["label"] + (" (tuned)" if row["tuned"] else ""),
                     "yes" if row["certified_at_organiser_n"] else "no",
                     "–" if utility is None else f"{utility:.2f}",
                     "–" if widest is None else _budget_text(widest["budget"], result["budgets"])
                     + ("" if widest["params"] == row["params"] else f" ({widest['label']})"),
                     _n_text(row, target),
                     "–" if row["proof_alone_n"] is None else str(row["proof_alone_n"])])
    return rows


def _budget_text(budget: int, budgets: list[int]) -> str:
    """A safe budget; the largest tested marked ``+`` (a larger one may be safe too)."""
    return f"{budget}+" if budget == max(budgets) else str(budget)


HEADER = ["mechanism", "certified", "utility", "largest budget at n₀", "smallest public set", "proof alone"]


def text(result: dict[str, Any], width: int = 120) -> str:
    """The plan for the terminal: the recommendation and the table, within ``width`` columns."""
    target = result["target"]
    lines = [f"Plan for {target['name']}: holdout of {target['holdout']} rows, your public set n₀ = {target['n']} "
             f"({target['n'] / target['holdout']:.0%}), a budget of {result['budget']} submissions a team",
             f"{headline(result)}.", ""]
    rows = [HEADER] + [[cell for cell in row] for row in table_rows(result)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    overflow = sum(widths) + 2 * (len(widths) - 1) - width
    if overflow > 0:
        widths[0] = max(12, widths[0] - overflow)
    for row in rows:
        cells = [row[0][: widths[0]].ljust(widths[0])] + [cell.rjust(w) if i else cell.ljust(w)
                                                          for i, (cell, w) in enumerate(zip(row[1:], widths[1:]), 1)]
        lines.append("  ".join(cells).rstrip())
    lines += ["", f"certified: at n₀ and the budget, with honest utility ≥ {result['min_utility']:g}; largest budget: of "
              f"{', '.join(map(str, result['budgets']))} (+: the largest tested); smallest public set "
              f"(rows, share of the holdout) at the budget, to within {result['resolution']:.0%}; "
              f"{result['certificates']} certificates ({result['whole_batteries']} whole batteries), "
              f"{result['wall_time_seconds']:.0f} s"]
    return "\n".join(_wrap(line, width) for line in lines) + "\n"


def _wrap(line: str, width: int) -> str:
    import textwrap

    return line if len(line) <= width else "\n".join(textwrap.wrap(line, width, subsequent_indent="  "))


def markdown(result: dict[str, Any]) -> str:
    """The plan for people: the recommendation, the table, each candidate's search, and what the plan assumes."""
    target = result["target"]
    confidence = result.get("confidence", 0.95)
    source = f"the challenge `{target['challenge']}`" if target["challenge"] else f"the task `{target['name']}`"
    lines = [
        f"# Plan for {target['name']}", "",
        f"**{headline(result)}.**", "",
        f"For {source}: a holdout of {target['holdout']} rows scored by {target['scorer']}, the organiser's public set "
        f"n₀ = {target['n']} rows ({target['n'] / target['holdout']:.0%}), a budget of {result['budget']} submissions a "
        f"team; τ = {result.get('tau', 0.05):g}, ε = {result.get('epsilon', 0.05):g}, each certificate's verdicts at "
        f"{100 * confidence:g}% confidence, seed {result.get('seed', 0)}; honest utility (the median Spearman "
        f"correlation between an honest participant's released and final scores, {', '.join(target['honest'])}) "
        f"at least {result['min_utility']:g}.", "",
        "| " + " | ".join(HEADER) + " |", "| --- | --- | ---: | --- | --- | ---: |",
        *("| " + " | ".join(row) + " |" for row in table_rows(result)), "",
        f"*Certified*: the whole battery certifies the budget at n₀ and the honest utility reaches the minimum. "
        f"*Largest budget at n₀*: of the budgets {', '.join(map(str, result['budgets']))}, over the settings with enough "
        f"utility (+: the largest tested). *Smallest public set*: rows (share of the holdout) at which the tuned setting is certified at the "
        f"budget, to within {result['resolution']:.0%}, searched up to {result['max_fraction']:.0%} of the holdout. "
        "*Proof alone*: the public rows at which the mechanism's proven bound keeps the leaderboard error within ε "
        "with the stated confidence, without any simulation (– : it proves none there).", "",
        "## The search", "",
        "| mechanism | setting | public rows | battery | safe budget | honest utility [CI] | broken by | seconds |",
        "| --- | --- | ---: | --- | ---: | --- | --- | ---: |",
    ]
    for row in result["mechanisms"]:
        for record in [*row["settings"], *row["steps"]]:
            utility = record["utility"]
            interval = ("–" if utility.get("median") is None else
                        f"{utility['median']:.2f} [{_number(utility.get('lo'))}, {_number(utility.get('hi'))}]")
            lines.append(f"| {row['mechanism']} | {plugin_label(row['mechanism'], record['params'])} | {record['n']} | "
                         f"{record['battery']} | {record['safe_budget']} | {interval} | "
                         f"{', '.join(record['culprits']) or '–'} | {record['seconds']:.0f} |")
    lines += ["", "A *screen* plays only the attacks that broke or came closest to breaking the mechanism so far: a "
              "screen that finds the budget unsafe decides, one that does not is followed by the whole battery. "
              "The bisection assumes that a public set that certifies a budget keeps certifying it as it grows "
              f"(up to {result['max_fraction']:.0%} of the holdout); each certificate's verdicts hold at its stated "
              "confidence, the plan's steps below its answer only say where the search went.", "",
              f"{result['certificates']} certificates ({result['whole_batteries']} whole batteries), wall time "
              f"{result['wall_time_seconds']:.0f} s, CPU time {result['cpu_time_seconds']:.0f} s."]
    if result.get("field"):
        from ladderlab.certification.field import markdown as field_markdown

        lines += ["", field_markdown(result["field"]).rstrip("\n").replace("## The field", "## The field at the "
                                                                                      "recommendation", 1)]
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def plot(result: dict[str, Any], path: str | Path) -> Path:
    """The budget × public-size frontier: per mechanism, the largest budget certified at each public size searched
    (filled: the whole battery; open: a screen's bound), the organiser's point and the holdout's largest share."""
    from matplotlib.figure import Figure

    from ladderlab.utils.atomic import save_figure

    target = result["target"]
    figure = Figure(figsize=(7.0, 4.5), layout="constrained")
    axes = figure.subplots()
    colors = [f"C{index}" for index in range(10)]
    floor = 0.5
    for index, row in enumerate(result["mechanisms"]):
        points = row["frontier"]
        if not points:
            continue
        color = colors[index % len(colors)]
        ns = [point["n"] for point in points]
        budgets = [max(point["safe_budget"], floor) for point in points]
        axes.step(ns, budgets, where="post", color=color, alpha=0.6, label=row["label"])
        for point, value in zip(points, budgets):
            axes.plot(point["n"], value, "o", color=color, mfc=color if point["whole"] else "white", markersize=5)
    axes.plot(target["n"], result["budget"], "*", color="black", markersize=12, label="your n₀ and budget", zorder=5)
    axes.axhline(result["budget"], color="grey", linestyle=":", linewidth=1)
    axes.axvline(result["max_fraction"] * target["holdout"], color="grey", linestyle="--", linewidth=1,
                 label=f"{result['max_fraction']:.0%} of the holdout")
    axes.set_xscale("log")
    axes.set_yscale("log", base=2)
    axes.set_xlabel("public rows")
    axes.set_ylabel("largest budget certified (0 drawn at ½)")
    axes.set_title(f"{target['name']}: budget × public-size frontier (filled: whole battery; open: a screen's bound)",
                   fontsize=9)
    axes.legend(fontsize=7, loc="best")
    path = Path(path)
    save_figure(figure, path, dpi=110)
    return path


def write(result: dict[str, Any], out: str | Path, command: str | None = None) -> list[Path]:
    """The plan as JSON at ``out`` (without the certificates, which stay in their battery directories), as Markdown
    beside it (stamped with ``command``) and its frontier as PNG; the recommended certificate beside them
    (``<out>-recommended.json`` and ``.md``), a certificate of its own."""
    out = Path(out)
    recommendation = result["recommendation"]
    kept = {**result, "recommendation": {key: value for key, value in recommendation.items() if key != "certificate"}}
    written = certify.write_certificate(kept, out, markdown(result), command)
    if recommendation["certificate"] is not None:
        certificate = recommendation["certificate"]
        written += certify.write_certificate(certificate, out.with_name(f"{out.stem}-recommended.json"),
                                             certify.markdown(certificate))
    return [*written, plot(result, out.with_suffix(".png"))]
