"""Plan a challenge: ``ladderlab plan``, how large a public set, which mechanism and what budget.

Given the organiser's holdout (a challenge file, or any task: its holdout rows), the budget a
team gets (``--budget``, or ``--days`` × ``--per-day``, or the challenge's rules), the tolerances
and the least honest utility they accept, the plan answers, for each candidate mechanism:

- its **tuned setting**: every setting of the mechanism's declared search space (``Mechanism._search_space``,
  those that set how fine its releases are at fractions of τ as ``certify --tune`` searches them; a mechanism
  named with parameters keeps them) is screened at the organiser's n₀ and budget; those whose screens find no
  failure play the whole battery, best honest utility first, until one is certified; that one is kept, else the
  setting of enough utility that came closest to passing;
- the **largest budget certified** at n₀ by the tuned setting, of ¼ to 2 times the organiser's (above it where it
  is certified there, below it where not);
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

How it stays fast (docs/planning.md):

- *screens*: a certificate fails as soon as one attack fails, so each evaluation first runs only the
  attacks that broke or came closest to breaking this mechanism so far, each point on at most
  :data:`SCREEN_REPLICATIONS` replications (a screen looks for failures, which show early; a pass needs
  about 100); only when none fails does the whole battery run, and it reads the screen's replications
  back (the same battery directory: :mod:`ladderlab.certification.battery`). A failed screen is a failed
  certificate; a screen without a failure decides nothing until the battery has run;
- *sequential verdicts*: every grid point stops as soon as it is decided, and once a point fails at
  a budget the larger budgets stop (the certificate's own rules);
- *common random numbers*: at one public size every mechanism and setting plays the same splits and
  the same attackers' coins (a duel's streams do not depend on the mechanism), and full disclosure's
  replications and its honest participant are played once per size for all of them (certify's
  ``reference_store``); every battery is kept under the plan's directory, so the same plan again
  (or one with other tolerances) reads what it can back;
- *bisection*: the smallest public set is found to within ``--resolution`` (10 % by default) by a
  bisection on screens, confirmed by one whole battery (more where it fails: its culprits join the
  screen), on the assumption (stated in the plan) that a public set that certifies a budget keeps
  certifying it when it grows, up to the largest share allowed.
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

import numpy as np

from ladderlab.certification import certify
from ladderlab.certification.certificate_text import honest_entries
from ladderlab.certification.proofs import proves
from ladderlab.certification.public_size import PublicSize
from ladderlab.certification.units import DEFAULT_BETA, DEFAULT_TOLERANCE, DEFAULT_UNIT, UNITS, check_tolerances
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.stats.sequential import FAILS, INCONCLUSIVE

DEFAULT_MECHANISMS = ("full-disclosure", "kaggle", "ladder", "ladder-free", "ladder-t")
"""The candidates when the organiser names none: the reference and the mechanisms of the papers that
release a score for every submission (the Kaggle leaderboard, the Ladder, its parameter-free and t-test forms)."""
BUDGET_STEPS = (0.25, 0.5, 1.0, 2.0)
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
SCREEN_HONEST = 5
SCREEN_REPLICATIONS = 40
"""The most replications of a screen's point. A screen looks for failures, which show early (a point well past a
tolerance fails within a few replications); a point it leaves undecided goes on in the whole battery, which reads
these back. A pass needs about 100 (the tail criterion at β = 0.1 with the certificate's family-wise error)."""
"""The honest participant's replications in a screen: its utility only orders the settings; a whole battery
measures it with all of certify's (the screen's are read back)."""
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
        public = TASKS.make(self.task, **self.task_params).split(np.random.default_rng(0)).public
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


def challenge_target(path: str | Path, budget: int, n: int | None = None, fraction: float | None = None) -> Target:
    """The holdout of the challenge file at ``path`` (its labels, scorer, range and public data, resampled as a
    certificate of it resamples them: a bootstrap of its rows, :mod:`ladderlab.certification.challenge_task`), the
    organiser's public size its split's (or ``n`` rows, or ``fraction`` of the holdout), its honest participants held
    to ``budget``."""
    from ladderlab.certification.challenge_certify import honest_participants
    from ladderlab.certification.challenge_task import load_challenge
    from ladderlab.utils.locations import anchored

    challenge, identity = load_challenge(path)
    holdout = int(challenge.split.public_rows.size + challenge.split.final_rows.size)
    organiser = _organiser_n(int(challenge.split.public_rows.size), holdout, n, fraction)
    inner = {"path": anchored(Path.cwd(), str(path)), "sha256": identity, "resample": "bootstrap"}
    return Target(challenge.name, "challenge", inner, holdout, organiser, challenge.split.public.scorer,
                  honest_participants(challenge, [], [budget]), str(path))


def task_target(text: str, budget: int, n: int | None = None, fraction: float | None = None) -> Target:
    """The holdout of the task named by ``text`` (an id with parameters, ``random-labels(n_holdout=10000)``), the
    organiser's public size the task's own (or ``n`` rows, or ``fraction``), the default honest participant held to
    ``budget`` submissions."""
    task_id, params = TASKS.parse(text)
    params = params or {}
    task = TASKS.checked(task_id, params, f"--task {text}")
    split = task.split(np.random.default_rng(0))
    holdout = int(split.public_rows.size + split.final_rows.size)
    organiser = _organiser_n(int(split.public_rows.size), holdout, n, fraction)
    honest = [certify.AttackSpec("improving", {"days": min(certify.HONEST_DAYS, budget)})]
    return Target(plugin_label(task_id, params), task_id, params, holdout, organiser, split.public.scorer, honest)


def check_target(target: Target, tau: float, epsilon: float, unit: str = DEFAULT_UNIT, force: bool = False) -> None:
    """Refuse, before any certificate, a holdout whose loss is unbounded without a declared prediction range
    (:func:`ladderlab.certification.certify.check_bounded`), and tolerances larger than the best constant
    prediction's loss on the organiser's public labels (:func:`ladderlab.certification.units.check_tolerances`)."""
    units = certify.measured_families({"holdout": target.entry(target.n)}, unit, force)[1]
    check_tolerances(tau, epsilon, units["holdout"], f"holdout ({target.name})")


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
    screen: list[str] | None
    certificate: dict[str, Any] = field(repr=False)

    def certified(self, budget: int, min_utility: float) -> bool:
        """Certified at ``budget``: the whole battery found it safe there, with enough honest utility."""
        return self.whole and self.safe >= budget and self.useful(min_utility)

    def useful(self, min_utility: float) -> bool:
        median = self.utility.get("median")
        return median is not None and median >= min_utility

    @property
    def first_failure(self) -> int | None:
        """The smallest budget at which a point fails (None: none fails)."""
        return min((row["budget"] for row in self.certificate["battery"] if row["verdict"] == FAILS), default=None)

    @property
    def bound(self) -> int:
        """The largest budget this certificate leaves possible: its safe budget for a whole battery; for a screen,
        the largest budget below the first at which a point fails (a screen's undecided points decide nothing)."""
        if self.whole:
            return self.safe
        failing = self.first_failure
        return max((b for b in self.budgets if failing is None or b < failing), default=0)

    @property
    def worst(self) -> tuple[int, float]:
        """The worst verdict and severity of any attack at a budget up to the organiser's (how far from passing)."""
        return max(self.severities.values(), default=(0, 0.0))

    def same_setting(self, mechanism: str, params: dict[str, Any]) -> bool:
        return self.mechanism == mechanism and _normalised(mechanism, self.params) == _normalised(mechanism, params)

    def record(self) -> dict[str, Any]:
        return {"n": self.n, "params": self.params, "budgets": self.budgets, "battery": "whole" if self.whole else "screen",
                "safe_budget": self.safe, "bound": self.bound, "utility": self.utility, "culprits": self.culprits,
                "seconds": self.seconds}


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
        self.improvement = certify.tolerance_improvement(target.families(target.n), options.get("tau", DEFAULT_TOLERANCE),
                                                         options.get("unit", DEFAULT_UNIT), options.get("force", False))
        """τ in units of B on the organiser's families: the improvement a searched setting must release."""
        self.severity: dict[str, dict[str, tuple[int, float]]] = {}
        """By mechanism, each attack's worst verdict and greatest severity seen at a budget up to the organiser's."""
        self.evaluations: list[Evaluation] = []

    def budgets(self, side: str) -> list[int]:
        """The frontier's budgets (:data:`BUDGET_STEPS` times the organiser's, whole and distinct) on one ``side`` of
        the organiser's: ``below`` or ``above`` it, the organiser's included."""
        steps = [step for step in BUDGET_STEPS if (step <= 1 if side == "below" else step >= 1)]
        return sorted({max(1, round(step * self.budget)) for step in steps})

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

    def evaluate(self, mechanism: str, params: dict[str, Any], n: int, budgets: list[int] | None = None,
                 whole: bool = False, screened: bool = False) -> Evaluation:
        """The setting at public size ``n`` over ``budgets`` (default: the organiser's alone): its screen, and the
        whole battery when the screen finds every budget safe (or ``whole``; ``screened``: the screen alone where
        there is one). A whole battery at the same size over the same budgets is read back, not played again."""
        budgets = budgets or [self.budget]
        earlier = next((e for e in self.evaluations if e.whole and e.n == n and e.same_setting(mechanism, params)
                        and e.budgets == budgets), None)
        if earlier is not None:
            return earlier
        screen = self.screen(mechanism)
        if screen and not whole and (self.attacks is None or set(screen) < set(self.attacks)):
            first = next((e for e in self.evaluations if not e.whole and e.n == n and e.screen == screen
                          and e.same_setting(mechanism, params) and e.budgets == budgets), None)
            first = first or self._certificate(mechanism, params, n, budgets, screen)
            if screened or first.bound < max(budgets):
                return first
        return self._certificate(mechanism, params, n, budgets, None)

    def _certificate(self, mechanism: str, params: dict[str, Any], n: int, budgets: list[int],
                     screen: list[str] | None) -> Evaluation:
        label = plugin_label(mechanism, params)
        what = "the whole battery" if screen is None else f"screen {', '.join(screen)}"
        started = time.perf_counter()
        options = dict(self.options)
        if screen is not None:
            options["honest_replications"] = min(SCREEN_HONEST, options.get("honest_replications", SCREEN_HONEST))
            options["replications"] = min(SCREEN_REPLICATIONS, options.get("replications", SCREEN_REPLICATIONS))
        certificate = certify.certify(
            mechanism, params, n=n, budgets=budgets, task_families=self.target.families(n),
            honest=self.target.honest, attacks=screen or self.attacks or [],
            default_battery=screen is None and self.attacks is None,
            run_dir=self._directory(mechanism, params, n), reference_store=self.directory / "reference" / f"n{n}",
            useful=self.min_utility, **options)
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
                                screen, certificate)
        self.evaluations.append(evaluation)
        utility = evaluation.utility["median"]
        found = (f"safe budget {evaluation.safe}" if evaluation.whole else "no failure" if evaluation.first_failure is None
                 else f"fails at {evaluation.first_failure}")
        self.say(f"{label} at n = {n} ({what}): {found}, honest utility "
                 f"{'–' if utility is None else f'{utility:.2f}'} ({evaluation.seconds:.0f} s)")
        return evaluation

    def tune(self, mechanism: str, pinned: dict[str, Any] | None) -> tuple[Evaluation, list[Evaluation]]:
        """Every setting at the organiser's n₀ and budget (only ``pinned`` when given), and the tuned one: the certified
        setting of best honest utility (the settings whose screens pass run their whole battery in the order of their
        screens' utility, until one is certified), else the one of enough utility that came closest to passing (the
        least severity), else the one of best utility."""
        settings = [pinned] if pinned is not None else _settings(mechanism, self.target.scorer, self.improvement)
        evaluations = [self.evaluate(mechanism, setting, self.target.n, screened=True) for setting in settings]
        for candidate in sorted((e for e in evaluations if e.bound >= self.budget), key=_utility_order):
            whole = candidate if candidate.whole else self.evaluate(mechanism, candidate.params, self.target.n)
            if whole not in evaluations:
                evaluations.append(whole)
            if whole.certified(self.budget, self.min_utility):
                return whole, evaluations
        useful = [e for e in evaluations if e.useful(self.min_utility)]
        return min(useful or evaluations, key=lambda e: (-e.bound, e.worst, _utility_order(e))), evaluations

    def largest_budget(self, tuned: Evaluation) -> tuple[Evaluation, list[int]]:
        """The tuned setting at the organiser's n₀ over the budgets above the organiser's (where it is certified) or
        below it (where it is not): screened first, whose safe budget bounds the whole battery's from above, then the
        whole battery over the budgets the screen left (none where the screen found the smallest unsafe; where it
        found only the organiser's safe, the tuned setting's own whole battery answers); and the budgets tested."""
        certified = tuned.certified(self.budget, self.min_utility)
        budgets = self.budgets("above" if certified else "below")
        screen = self.evaluate(tuned.mechanism, tuned.params, tuned.n, budgets, screened=True)
        if screen.whole or (not certified and screen.bound == 0):
            return screen, budgets
        if certified and screen.bound <= self.budget:
            return tuned, budgets
        return self.evaluate(tuned.mechanism, tuned.params, tuned.n, [b for b in budgets if b <= screen.bound],
                             whole=True), budgets

    def smallest_n(self, tuned: Evaluation, resolution: float, max_fraction: float) -> tuple[int | None, list[Evaluation]]:
        """The smallest public size at which the tuned setting is certified at the organiser's budget (None: not
        up to ``max_fraction`` of the holdout), to within ``resolution``, and the certificates of the search.

        Bisection on screens, confirmed by whole batteries: a failed screen is a failed certificate, so the bisection
        between a size known not to be certified (``low``) and one known to be (``high``) looks at screens alone until
        the sizes close in; the whole battery then plays at the smallest size whose screen passed. Certified, that is
        the answer; not, the attacks that broke it join the screen and the search goes on above it."""
        ceiling = max(SMALLEST_N, min(self.target.holdout - 1, math.floor(max_fraction * self.target.holdout)))
        steps: list[Evaluation] = []

        def look(n: int, screened: bool) -> Evaluation:
            found = self.evaluate(tuned.mechanism, tuned.params, n, screened=screened)
            steps.append(found)
            return found

        if tuned.certified(self.budget, self.min_utility):
            low, high = SMALLEST_N - 1, tuned.n
        else:
            if tuned.n >= ceiling or not look(ceiling, False).certified(self.budget, self.min_utility):
                return None, steps
            low, high = tuned.n, ceiling
        while True:
            candidate = high
            while candidate - low > 1 and candidate > (1 + resolution) * max(low, 1):
                middle = min(candidate - 1, max(low + 1, round(math.sqrt(max(low, 1) * candidate))))
                if look(middle, True).bound >= self.budget:
                    candidate = middle
                else:
                    low = middle
            if candidate == high or look(candidate, False).certified(self.budget, self.min_utility):
                return candidate, steps
            low = candidate

def _utility_order(evaluation: Evaluation) -> float:
    """Best honest utility first."""
    median = evaluation.utility.get("median")
    return -median if median is not None else 2.0


def _settings(mechanism: str, scorer: str, improvement: float) -> list[dict[str, Any]]:
    """The settings of a mechanism's declared search space, those that set how fine its releases are at fractions of
    ``improvement`` (τ in units of B: :func:`ladderlab.certification.tune.settings`), or its defaults where it
    declares none."""
    from ladderlab.certification.tune import settings

    try:
        return [point for point, _ in settings(mechanism, {}, scorer, search_ranges=False,
                                               improvement=lambda _: improvement)]
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
        widest, tested = planner.largest_budget(tuned)
        smallest, steps = planner.smallest_n(tuned, resolution, max_fraction)
        confidence = options.get("confidence", 0.95)
        epsilon_b = _epsilon_in_bound(tuned.certificate, options.get("epsilon", 0.05))
        rows.append({
            "mechanism": spec.id, "label": plugin_label(spec.id, tuned.params), "params": tuned.params,
            "tuned": spec.pinned is None and len(settings) > 1,
            "settings": [e.record() for e in settings],
            "at_organiser_n": next((e for e in reversed(planner.evaluations) if e.whole and e.n == target.n
                                    and e.same_setting(spec.id, tuned.params)), tuned).record(),
            "certified_at_organiser_n": tuned.certified(budget, min_utility),
            "largest_budget": {"budget": widest.safe, "budgets": tested, "useful": widest.useful(min_utility),
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
        "target": target.record(), "budget": budget,
        "budgets": sorted({*planner.budgets("below"), *planner.budgets("above")}), "min_utility": min_utility,
        "resolution": resolution, "max_fraction": max_fraction,
        **{name: options[name] for name in ("tau", "epsilon", "beta", "unit", "confidence", "replications", "seed") if name in options},
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
            points[e.n] = {"n": e.n, "safe_budget": e.bound, "whole": e.whole, "utility": e.utility["median"]}
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
    smaller = [row for row in rows if row["largest_budget"]["budget"] > 0 and row["largest_budget"]["useful"]]
    if smaller:
        best = max(smaller, key=lambda row: (row["largest_budget"]["budget"], row["largest_budget"]["utility"]["median"]))
        return {"kind": "shrink", "mechanism": best["mechanism"], "label": best["label"], "params": best["params"],
                "n": target.n, "budget": best["largest_budget"]["budget"], "utility": best["largest_budget"]["utility"],
                "certificate": certificate_at(best, target.n, best["params"])}
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
                     _budget_text(widest["budget"], widest["budgets"]) + ("" if widest["useful"] else " (useless)"),
                     _n_text(row, target),
                     "–" if row["proof_alone_n"] is None else str(row["proof_alone_n"])])
    return rows


def _searched(result: dict[str, Any]) -> str:
    """How many certificates the search made, and how many of them played the whole battery."""
    whole = result["whole_batteries"]
    return f"{result['certificates']} certificates ({whole} whole batter{'y' if whole == 1 else 'ies'})"


def _budget_text(budget: int, budgets: list[int]) -> str:
    """A safe budget; the largest tested marked ``+`` (a larger one may be safe too), none below the smallest ``<``."""
    if budget == max(budgets):
        return f"{budget}+"
    return f"< {min(budgets)}" if budget == 0 else str(budget)


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
    if result.get("field"):
        from ladderlab.certification.field import summary_line

        lines += ["", summary_line(result["field"])[:1].upper() + summary_line(result["field"])[1:] + "."]
    lines += ["", f"certified: at n₀ and the budget, with honest utility ≥ {result['min_utility']:g}; largest budget: the "
              f"tuned setting's, of {', '.join(map(str, result['budgets']))} (+: the largest tested); smallest public set "
              f"(rows, share of the holdout) at the budget, to within {result['resolution']:.0%}; "
              f"{_searched(result)}, "
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
        f"team; τ = {result.get('tau', DEFAULT_TOLERANCE):g} and ε = {result.get('epsilon', DEFAULT_TOLERANCE):g} "
        f"({UNITS[result.get('unit', DEFAULT_UNIT)]}) in all but a share β = {result.get('beta', DEFAULT_BETA):g} of "
        f"contests, each certificate's verdicts together at {100 * confidence:g}% confidence, seed "
        f"{result.get('seed', 0)}; honest utility (the median Spearman "
        f"correlation between an honest participant's released and final scores, {', '.join(target['honest'])}) "
        f"at least {result['min_utility']:g}.", "",
        "| " + " | ".join(HEADER) + " |", "| --- | --- | ---: | --- | --- | ---: |",
        *("| " + " | ".join(row) + " |" for row in table_rows(result)), "",
        f"*Certified*: the whole battery certifies the budget at n₀ and the honest utility reaches the minimum. "
        f"*Largest budget at n₀*: the tuned setting's, of the budgets {', '.join(map(str, result['budgets']))} (+: the "
        f"largest tested; useless: its honest utility falls short). *Smallest public set*: rows (share of the holdout) at which the tuned setting is certified at the "
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
                         f"{record['battery']} | {_found_text(record)} | {interval} | "
                         f"{', '.join(record['culprits']) or '–'} | {record['seconds']:.0f} |")
    lines += ["", "A *screen* plays only the attacks that broke or came closest to breaking the mechanism so far: a "
              "screen that finds the budget unsafe decides, one that does not is followed by the whole battery. "
              "The bisection assumes that a public set that certifies a budget keeps certifying it as it grows "
              f"(up to {result['max_fraction']:.0%} of the holdout); each certificate's verdicts hold at its stated "
              "confidence, the plan's steps below its answer only say where the search went.", "",
              f"{_searched(result)}, wall time "
              f"{result['wall_time_seconds']:.0f} s, CPU time {result['cpu_time_seconds']:.0f} s."]
    if result.get("field"):
        from ladderlab.certification.field import markdown as field_markdown

        lines += ["", field_markdown(result["field"]).rstrip("\n").replace("## The field", "## The field at the "
                                                                                      "recommendation", 1)]
    return "\n".join(lines) + "\n"


def _found_text(record: dict[str, Any]) -> str:
    """A search step's finding: a whole battery's safe budget, or the most a screen leaves possible."""
    if record["battery"] == "whole":
        return str(record["safe_budget"])
    budgets = record["budgets"]
    return "no failure" if record["bound"] >= max(budgets) else f"< {min(b for b in budgets if b > record['bound'])}"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def plot(result: dict[str, Any], path: str | Path) -> Path:
    """The budget × public-size frontier: per mechanism, the largest budget certified at each public size searched
    (filled: the whole battery; open: a screen's bound, which a whole battery can only lower), the organiser's point,
    and the largest share of the holdout searched; the top axis gives the public set as a share of the holdout."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, NullLocator, PercentFormatter, ScalarFormatter

    from ladderlab.utils.atomic import save_figure

    target, budgets = result["target"], result["budgets"]
    zero = min(budgets) / 2
    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    axes = figure.subplots()
    rows = [row for row in result["mechanisms"] if row["frontier"]]
    for index, row in enumerate(rows):
        color = f"C{index % 10}"
        dodge = 1 + 0.012 * (index - (len(rows) - 1) / 2)
        ns = [point["n"] * dodge for point in row["frontier"]]
        values = [point["safe_budget"] or zero for point in row["frontier"]]
        axes.step(ns, values, where="post", color=color, alpha=0.5, linewidth=1.2)
        for point, n, value in zip(row["frontier"], ns, values):
            axes.plot(n, value, "o", color=color, mfc=color if point["whole"] else "white", markersize=6,
                      label=row["label"] if point is row["frontier"][0] else None)
    axes.plot(target["n"], result["budget"], "*", color="black", markersize=13, zorder=5, label="your n₀ and budget")
    axes.axhline(result["budget"], color="grey", linestyle=":", linewidth=1)
    ceiling = result["max_fraction"] * target["holdout"]
    axes.axvline(ceiling, color="grey", linestyle="--", linewidth=1, label=f"{result['max_fraction']:.0%} of the holdout")
    axes.set_xscale("log")
    axes.set_yscale("log", base=2)
    axes.yaxis.set_major_locator(FixedLocator([zero, *budgets]))
    axes.yaxis.set_minor_locator(NullLocator())
    axes.set_yticklabels(["0", *map(str, budgets)])
    axes.set_ylim(zero / 1.4, max(budgets) * 1.4)
    searched = [point["n"] for row in rows for point in row["frontier"]] or [target["n"]]
    axes.set_xlim(min(searched) / 1.3, max(ceiling, max(searched)) * 1.3)
    axes.xaxis.set_major_formatter(ScalarFormatter())
    axes.xaxis.set_minor_formatter(ScalarFormatter())
    axes.tick_params(axis="x", which="minor", labelsize=7)
    share = axes.secondary_xaxis("top", functions=(lambda n: n / target["holdout"], lambda f: f * target["holdout"]))
    share.xaxis.set_major_formatter(PercentFormatter(xmax=1, decimals=0))
    share.xaxis.set_minor_formatter(PercentFormatter(xmax=1, decimals=0))
    share.tick_params(axis="x", which="both", labelsize=7)
    share.set_xlabel("share of the holdout", fontsize=8)
    axes.set_xlabel("public rows")
    axes.set_ylabel("largest budget certified")
    axes.set_title(f"{target['name']}: filled, the whole battery; open, a screen's bound", fontsize=9)
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
                                             certify.markdown(certificate), command)
    return [*written, plot(result, out.with_suffix(".png"))]
