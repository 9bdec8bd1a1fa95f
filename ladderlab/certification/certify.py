"""Certify a mechanism: a sequential attack battery over submission budgets, a safe budget with a
stated confidence, and the cost to honest participants.

The battery (docs/certification.md):

- every registered attack that is not an honest participant (``Attack.honest``), plus any
  named by the organiser (a third-party id or ``file.py:Class``, optionally with
  parameters: ``hill-climbing(block=10)``), at every budget, at every point of its
  strength grid (``Attack.strength_grid``; an attack named with parameters runs at
  exactly those), on every task family it can play: random binary labels scored with the
  0/1 loss (B = 1); a null Gaussian regression with 300 features scored with the squared
  error, its predictions clipped into the training labels' range (B = that range's
  width squared); random labels scored with the log loss of probabilities clipped into
  [0.01, 0.99] (B ≈ 4.6). Each family has n public points. A loss that is unbounded
  without a declared range is refused, with how to declare one;
- the honest participants (``--honest``; by default ``improving``: a model fitted on more
  training data every day, never looking at the leaderboard) on a Gaussian regression with
  real signal, for the cost to honest participants: how well the released scores track each
  one's real progress;
- full disclosure, the reference, at each attack's worst point.

Units (:mod:`ladderlab.certification.units`). τ and ε are stated in a unit that means the same on
every scorer, by default the loss of the best constant prediction on each family's public labels
(U: the variance for the squared error, the minority rate for the 0/1 loss, the label entropy for
the log loss); B is printed beside. A tolerance larger than U is refused. Mechanism parameters stay
in units of B; those that set how fine the releases are (the Ladder's η, noise scales), where the
organiser leaves them and their default would hide an honest improvement of τ, are set to the
coarsest values that release it (:func:`tolerance_defaults`).

Measures (:mod:`ladderlab.runs.duel`): Δ = R_k − the final-set score of the submission the
leaderboard reports (Blum & Hardt Def. 2.1's R_k and the submission it stands for), and the
leaderboard error of Def. 2.1 split into its optimism (the leaderboard showed better than true:
overfitting) and its lag (it showed worse: an honest cost, reported, never counted against safety).

The tail criterion with a stated error (:mod:`ladderlab.stats.sequential`). Each grid point is
replicated sequentially, its replications looked at one by one, until anytime-valid confidence
sequences (Robbins 1970) decide whether P(Δ < −τ) and P(optimism > ε) both lie below β (it
*passes*) or either lies above (it *fails*); undecided at the maximum number of replications, it is
*inconclusive*, which is not a pass. The error 1 − confidence is split over every sequence of
every grid point (Bonferroni), so the certificate's verdicts hold together. A replication in
which the attack raised is counted with what it submitted before (:class:`ladderlab.runs.duel.AttackCrashed`),
never dropped. A point that made no submission (one step of the attack needs more than the
budget) or could not run *did not play*: no evidence either way. On fixed data (a task that draws
nothing) a point whose attack and mechanism draw nothing plays one duel however often it is
replicated: it counts once. An attack's verdict at a budget is its worst point's: fails if one
fails, else inconclusive if one is, else passes. The safe budget is the largest budget up to which,
at every budget, some attack played and every attack that played passes; the certificate's verdict
(:func:`verdict`) says besides whether honest participants keep anything useful.

The battery is kept in a directory (``--run-dir``, or a cache named by its identity)
that a run of the same battery resumes (:mod:`ladderlab.certification.battery`); when it finishes it
is a run directory that ``ladderlab report`` reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import ladderlab
from ladderlab.certification import battery
from ladderlab.certification.proofs import proven_side, proven_statements, zero_one_families
from ladderlab.certification.certificate_text import (
    DID_NOT_PLAY,
    NOT_SAFE,
    ONE_DUEL,
    SAFE,
    USELESS,
    markdown,
)
from ladderlab.certification.challenge_task import RESAMPLING
from ladderlab.certification.public_size import PublicSize
from ladderlab.certification.units import (
    DEFAULT_BETA,
    DEFAULT_REPLICATIONS,
    DEFAULT_TOLERANCE,
    DEFAULT_UNIT,
    UNITS,
    USEFUL,
    Unit,
    check_tolerances,
    unit_of,
)
from ladderlab.competition.accounts import probe_budget
from ladderlab.engines.linking import LinkRule
from ladderlab.isolation.protocol import check_isolation
from ladderlab.isolation.untrusted import sandboxed_when_isolated
from ladderlab.naming import plugin_label
from ladderlab.plugin import fingerprint, fingerprint_token
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.registry import parse_honest as parse_honest_participant
from ladderlab.runs import page_stamps, rundir, runner, workload
from ladderlab.runs.duel import leaderboard_deviations, play
from ladderlab.runs.scenario import Cell, Scenario, cells, preflight
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.seeding import sealed_stream, secret_fingerprint
from ladderlab.stats.sequential import (
    FAILS,
    INCONCLUSIVE,
    PASSES,
    Verdict,
    first_decision,
    median_interval,
    per_sequence_error,
    replications_to_decide,
    stopping_verdict,
)
from ladderlab.tasks import TRAINING_RANGE, PublicData
from ladderlab.utils import cpu_time
from ladderlab.utils.atomic import write_files_atomically
from ladderlab.utils.determinism import single_threaded
from ladderlab.utils.locations import location_free
from ladderlab.utils.strict_json import finite_or_null

REFERENCE = "full-disclosure"
REGRESSION_FEATURES = 300
PROBABILITY_RANGE = (0.01, 0.99)
"""The log-loss family's declared probability range: B = log(0.99/0.01) − … ≈ 4.6."""
CERTIFICATE_FILE = "certificate.json"
"""The certificate's copy in the battery's run directory, which ``ladderlab report`` reads."""
DID_NOT_PLAY_AFTER = 8
"""Replications after which a point that made no submission (or could not run) stops: it did not play."""
HONEST_REPLICATIONS = 20
DEFAULT_BUDGETS = [100, 300, 1000, 2000]
HONEST_DAYS = 30
"""The default honest participant's days on the synthetic families (``improving``: one submission
a day, on a growing share of the training data); a challenge's default follows its schedule
(:func:`ladderlab.certification.challenge_certify.default_honest`)."""
CERTIFICATE_VERSION = 3
"""3: τ and ε in the certificate's ``unit`` (by default the best constant prediction's loss; each family
records it with B and the raw tolerances), the tail criterion at ``beta`` on Δ and the leaderboard's
optimism (``p_optimism``; the error's ``lag`` apart) with verdicts that hold together at ``confidence``
(``per_sequence_error``), crashed replications counted (``n_crashed``), what each family resampled, the
``verdict`` with the honest ``utility`` and ``budget_verdicts``, and the parameters set from the tolerance
(``tolerance_params``). 2: ``honest`` is a list, one entry per honest participant (``--honest``); medians of
Δ/B and of the error/B against τ and ε in units of B. 1 (no ``certificate_version``): one honest participant,
``honest`` its entry (:func:`honest_entries`)."""
CPU_TIME_COUNTS = "of this process and of those it started (workers, sandboxed attack processes)"
"""What ``cpu_time_seconds`` counts (:func:`ladderlab.utils.cpu_time.tree_seconds`); a certificate
without it counted this process alone."""


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
        return [dict(point) for point in cls.checked_strength_grid(budget, n)]


def parse_attack(text: str, option: str = "--attack") -> AttackSpec:
    """``id``, ``file.py:Class``, or either with parameters: ``hill-climbing(block=10, repeats=1)``
    (:meth:`ladderlab.registry.Registry.parse`); without parentheses the attack plays its
    strength grid. An error names ``option`` and the text."""
    try:
        attack_id, pinned = ATTACKS.parse(text)
    except ValueError as error:
        raise ValueError(f"{option} {text}: {error}") from None
    return AttackSpec(attack_id, pinned)


def parse_honest(text: str, option: str = "--honest") -> AttackSpec:
    """An honest participant as :func:`parse_attack` reads it (``improving(days=60)``); an attack
    that is not an honest participant (``Attack.honest``) is refused, naming the honest ones."""
    try:
        return AttackSpec(*parse_honest_participant(text))
    except ValueError as error:
        raise ValueError(f"{option} {text}: {error}") from None


def default_honest(days: int = HONEST_DAYS) -> AttackSpec:
    """The honest participant of a certificate that names none: ``improving`` for ``days`` days."""
    return AttackSpec("improving", {"days": days})


def honest_plays(specs: list[AttackSpec], family: dict[str, Any], most: int | None = None,
                 force: bool = False, source: str = "--honest") -> list[dict[str, Any]]:
    """The honest participants' scenario entries on their task ``family``, each with the budget of
    the submissions it makes there (``most`` where it does not say how many), refused before any
    work when one is given twice, cannot play the task, or makes more submissions than ``most``,
    naming the ``source`` that gave it (an option, or a file and its key)."""
    if len(_unique(specs)) < len(specs):
        twice = next(spec for number, spec in enumerate(specs) if spec in specs[:number])
        raise ValueError(f"{source} {twice.label}: given twice; give each honest participant once")
    public = workload.task_data(family["id"], family["params"], force)[1].public
    plays = []
    for spec in specs:
        participant = ATTACKS.checked(spec.id, spec.pinned or {}, f"{source} {spec.label}")
        reason = participant.incompatibility(public)
        if reason:
            raise ValueError(f"{source} {spec.label}: cannot play the honest participants' task ({family['id']}): {reason}")
        submissions = participant.max_submissions(public)
        if submissions is not None and most is not None and submissions > most:
            raise ValueError(f"{source} {spec.label}: makes {submissions} submissions, more than a team's "
                             f"budget of {most}")
        budget = submissions if submissions is not None else most
        if budget is None:
            raise ValueError(f"{source} {spec.label}: says not how many submissions it makes; give it a budget "
                             "with --budgets")
        plays.append({"id": spec.id, **({"params": _as_scenario_params(spec.pinned)} if spec.pinned else {}),
                      "budget": budget})
    return plays


FAMILY_SCORERS = {"classification": "zero-one", "regression": "squared", "probability": "log-loss"}


def families(n: int, scorer: str | None = None, prediction_range: str | tuple[float, float] | None = TRAINING_RANGE,
             ) -> dict[str, dict[str, Any]]:
    """The task families of the battery, by name, and ``honest``, the honest participant's task: a
    regression with signal, or for a label or probability scorer alone a classification with signal.

    ``scorer`` None: all three families with their default scorers; a scorer: only the family
    that scores with it (0/1 loss or accuracy on random labels, a real-valued loss or metric on
    the null regression, log loss on random labels). ``prediction_range`` is the regression
    family's ("training": the training labels' range; None declares none, which an unbounded
    loss cannot be certified with).
    """
    real_range = list(prediction_range) if isinstance(prediction_range, (tuple, list)) else prediction_range
    regression_scorer = FAMILY_SCORERS["regression"]
    chosen = set(FAMILY_SCORERS)
    if scorer is not None:
        kind = get_scorer(scorer).prediction_kind
        name = {PredictionKind.LABEL: "classification", PredictionKind.REAL: "regression",
                PredictionKind.PROBABILITY: "probability"}.get(kind)
        if name is None:
            raise ValueError(f"scorer {scorer!r}: certify plays binary labels, real values and probabilities, "
                             "not class-probability rows")
        chosen = {name}
        if name == "regression":
            regression_scorer = scorer
    table = {
        "classification": {"id": "random-labels", "params": {
            "n_public": n, "n_holdout": 3 * n, "scorer": scorer if scorer and "classification" in chosen else "zero-one"}},
        "regression": {"id": "gaussian-regression", "params": {
            "n_samples": 3 * n, "n_features": REGRESSION_FEATURES, "mode": "permuted", "scorer": regression_scorer,
            "prediction_range": real_range}},
        "probability": {"id": "random-labels-log-loss", "params": {
            "preset": None, "n_public": n, "n_holdout": 3 * n, "n_classes": 2, "disclose_public_rows": False,
            "prediction_range": list(PROBABILITY_RANGE)}},
    }
    chosen_families = {name: _without_none(entry) for name, entry in table.items() if name in chosen}
    if chosen == {"classification"} or chosen == {"probability"}:
        (name,) = chosen
        chosen_families["honest"] = _without_none({"id": "latent-classification", "params": {
            "n_train": n, "n_public": n, "n_holdout": 3 * n, "scorer": table[name]["params"].get("scorer", "log-loss"),
            "prediction_range": list(PROBABILITY_RANGE) if name == "probability" else None}})
    else:
        chosen_families["honest"] = _without_none({"id": "gaussian-regression", "params": {
            "n_samples": 3 * n, "n_features": 20, "n_signal": 5, "snr": 1.0, "mode": "random-split",
            "scorer": regression_scorer, "prediction_range": real_range}})
    return chosen_families


def parse_prediction_range(words: list[str]) -> str | tuple[float, float]:
    """``--prediction-range``: ``training``, or LOW HIGH (``ValueError`` naming the words otherwise)."""
    if words == [TRAINING_RANGE]:
        return TRAINING_RANGE
    try:
        low, high = (float(word) for word in words)
    except ValueError:
        raise ValueError(f"--prediction-range takes LOW HIGH or 'training', got {' '.join(words)!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"--prediction-range needs finite LOW < HIGH, got {low:g} {high:g}")
    return low, high


def _without_none(entry: dict[str, Any]) -> dict[str, Any]:
    return {"id": entry["id"], "params": {key: value for key, value in entry["params"].items() if value is not None}}


def loss_bound(data: PublicData) -> float | None:
    """B of the data's scorer under its declared prediction range (None: unbounded)."""
    return get_scorer(data.scorer).within(data.prediction_range).bound(None if data.classes is None else data.classes.size)


def check_bounded(family: str, entry: dict[str, Any], force: bool = False) -> tuple[str, float]:
    """A family's scorer and its B under its declared range (on one split, drawn at a fixed seed,
    after :func:`ladderlab.runs.workload.task_data` checked that its data fit), or ``ValueError`` saying
    how to declare a range when the loss is unbounded without one."""
    data = workload.task_data(entry["id"], entry["params"], force)[1].public
    bound = loss_bound(data)
    if bound is None:
        raise ValueError(
            f"the {family} family's scorer {data.scorer!r} is unbounded without a declared prediction range, and "
            "a certificate needs a bounded loss (its B): declare one with --prediction-range LOW HIGH "
            "(or --prediction-range training, the training labels' range)")
    return get_scorer(data.scorer).name, bound


def family_unit(entry: dict[str, Any], unit: str, bound: float, force: bool = False) -> Unit:
    """The certificate's ``unit`` on a family (:func:`ladderlab.certification.units.unit_of`), measured on the
    public labels of its split at a fixed seed, as the task holds them before any resampling (a challenge's
    own labels and split, not a bootstrap of them; for ``public-size``, its public rows drawn from those labels)."""
    held = {name: value for name, value in entry["params"].items() if name != "resample"}
    if entry["id"] == PublicSize.id and held.get("task_params"):
        held["task_params"] = {name: value for name, value in held["task_params"].items() if name != "resample"}
    split = workload.task_data(entry["id"], held, force)[1]
    return unit_of(unit, split.public, split.y_public, bound)


def measured_families(task_families: dict[str, dict[str, Any]], unit: str = DEFAULT_UNIT, force: bool = False,
                      ) -> tuple[dict[str, tuple[str, float]], dict[str, Unit]]:
    """Each family's scorer and B (:func:`check_bounded`), and its :class:`~ladderlab.certification.units.Unit`."""
    scored = {name: check_bounded(name, entry, force) for name, entry in task_families.items()}
    return scored, {name: family_unit(entry, unit, scored[name][1], force) for name, entry in task_families.items()}


def releasing_improvement(family_units: dict[str, Unit], tau: float) -> float:
    """τ in units of B on the family where that is least (honest participants' included): the
    improvement a mechanism must release on every family for its releases to mean τ."""
    return min(family.raw(tau) / family.bound for family in family_units.values())


def tolerance_improvement(task_families: dict[str, dict[str, Any]], tau: float = DEFAULT_TOLERANCE,
                          unit: str = DEFAULT_UNIT, force: bool = False) -> float:
    """:func:`releasing_improvement` of the given families (as :func:`certify` measures them)."""
    return releasing_improvement(measured_families(task_families, unit, force)[1], tau)


def tolerance_defaults(mechanism: str, params: dict[str, Any], improvement: float) -> dict[str, Any]:
    """The parameters a certificate sets from its tolerance: those of the mechanism's
    :meth:`~ladderlab.mechanism.Mechanism.releasing` that ``params`` leaves out and whose default is
    coarser than the coarsest value that releases ``improvement`` (in units of B) or is None (derived
    from n). A default that already releases it is kept: ``kaggle``'s α = 10⁻⁵, the Ladder's η = 0.01
    on the 0/1 loss of balanced labels."""
    made = MECHANISMS.make(mechanism, **params)
    current = made.get_params()
    return {name: value for name, value in made.releasing(improvement).items()
            if name not in params and (current.get(name) is None or current[name] > value)}


def _task_draws(entry: dict[str, Any]) -> bool:
    """Whether a task draws its data from its random stream (a sealed stream shows any draw)."""
    rng = sealed_stream()
    before = rng.bit_generator.state
    try:
        TASKS.make(entry["id"], **entry["params"]).split(rng)
    except Exception:  # a task that fails here fails in the battery too, which reports it
        return True
    return rng.bit_generator.state != before


def resampling(entry: dict[str, Any]) -> str:
    """What a family's replications draw afresh, besides the attack's and the mechanism's streams."""
    if entry["id"] == PublicSize.id:
        inner = {"id": entry["params"]["task"], "params": entry["params"].get("task_params") or {}}
        return f"{resampling(inner)}; then which {entry['params']['n_public']} holdout rows are public, drawn afresh"
    resample = entry["params"].get("resample")
    if resample is not None:
        return RESAMPLING[resample]
    return "the task's data, drawn afresh" if _task_draws(entry) else "nothing: the task's data are fixed"


def _as_scenario_params(point: dict[str, Any]) -> dict[str, Any]:
    """A grid point as scenario parameters: a list value is one value, not a grid axis."""
    return {name: [value] if isinstance(value, list) else value for name, value in point.items()}


def _scenario(name: str, description: str, matrix: list[dict[str, Any]], replications: int, seed: int) -> Scenario:
    return Scenario.model_validate({
        "schema_version": 1, "name": name, "description": description, "source": "ladderlab certify",
        "replications": replications, "seed": seed, "matrix": matrix,
    })


def battery_scenario(mechanism: str, params: dict[str, Any], n: int, budgets: list[int],
                     attacks: list[str | AttackSpec], replications: int, seed: int,
                     task_families: dict[str, dict[str, Any]] | None = None, force: bool = False,
                     accounts: int = 1, link: bool = False, honest: list[dict[str, Any]] | None = None) -> Scenario:
    """The battery as a scenario: every attack at every point of its strength grid (or at its pinned
    parameters) at every budget, on each family it can play, against the mechanism and full
    disclosure; honest participants against both. ``replications`` is the maximum. A family
    whose data cannot fit in memory at this n is refused first (:class:`ladderlab.runs.workload.TooLarge`,
    unless ``force``). With ``accounts`` = A ≥ 2 every attack holds A accounts of each budget
    (:mod:`ladderlab.competition.accounts`) and its strength grid is that of the (A − 1) · budget it probes with;
    ``link``: its accounts play under the linking wrapper (:mod:`ladderlab.engines.linking`). ``honest``: the
    honest participants' entries (:func:`honest_plays`; default ``improving`` for :data:`HONEST_DAYS`)."""
    if link and accounts < 2:
        raise ValueError("link needs accounts ≥ 2: one account has nothing to link")
    if n < 10:
        raise ValueError(f"n must be at least 10 holdout points, got {n}")
    if not budgets or any(budget < 1 for budget in budgets):
        raise ValueError(f"budgets must be whole numbers ≥ 1, got {budgets}")
    task_families = task_families or families(n)
    for entry in task_families.values():
        workload.task_data(entry["id"], entry["params"], force)
    MECHANISMS.checked(mechanism, params)
    mechanisms = [{"id": mechanism, "params": _as_scenario_params(params)}]
    if mechanism != REFERENCE:
        mechanisms.append({"id": REFERENCE})
    matrix = []
    for attack in attacks:
        spec = attack if isinstance(attack, AttackSpec) else parse_attack(attack)
        task_types = ATTACKS.get(spec.id).task_types
        entries = [{"id": spec.id, "params": _as_scenario_params(point), "budget": budget,
                    **({"accounts": accounts} if accounts > 1 else {}), **({"link": True} if link else {})}
                   for budget in sorted(set(budgets)) for point in spec.points(probe_budget(budget, accounts), n)]
        matrix.extend({"tasks": [entry], "mechanisms": mechanisms, "attacks": entries, "playable_only": True}
                      for family, entry in task_families.items()
                      if family != "honest" and _task_type(entry, force) in task_types)
    honest = honest or honest_plays([default_honest()], task_families["honest"], force=force)
    matrix.append({"tasks": [task_families["honest"]], "mechanisms": mechanisms, "attacks": honest})
    return _scenario(f"certify-{mechanism.replace(':', '-').replace('/', '-')}",
                     f"Certification battery for {plugin_label(mechanism, params)} at n = {n}", matrix, replications, seed)


def _task_type(entry: dict[str, Any], force: bool = False) -> str:
    """A family's task type, read from its data (a challenge's depends on its file)."""
    return workload.task_data(entry["id"], entry["params"], force)[1].public.task_type


def safe_budget(battery_rows: list[dict[str, Any]], budgets: list[int]) -> int:
    """The largest budget up to which, at every budget, some row played and every row that
    played passes (0: not even the smallest). Rows that did not play count neither way."""
    safe = 0
    for budget in sorted(budgets):
        played = [row for row in battery_rows if row["budget"] == budget and row.get("verdict") != DID_NOT_PLAY]
        if not played or not all(row["passes"] for row in played):
            break
        safe = budget
    return safe


def honest_utility(honest: list[dict[str, Any]], useful: float = USEFUL) -> dict[str, Any]:
    """What honest participants keep: each one's Spearman correlation between its released and final
    scores under the mechanism and under full disclosure (their intervals), and whether it is *useless*
    (the mechanism's interval lies wholly below ``useful`` while full disclosure's reaches it: the
    releases lost what the leaderboard could tell) or *unmeasured* (full disclosure's interval lies below
    ``useful`` too: the participant's progress does not rank even when every score is shown).
    ``releases_nothing``: some participant's utility is measured and every measured one is useless."""
    participants = []
    for entry in honest:
        mine, full = entry["rank_correlation"], entry["rank_correlation_full_disclosure"]
        measured = full.get("hi") is not None and full["hi"] >= useful
        useless = measured and mine.get("hi") is not None and mine["hi"] < useful
        participants.append({"participant": entry["participant"], "rank_correlation": mine,
                             "rank_correlation_full_disclosure": full, "measured": measured, "useless": useless})
    measured = [entry for entry in participants if entry["measured"]]
    return {"useful": useful, "participants": participants,
            "releases_nothing": bool(measured) and all(entry["useless"] for entry in measured)}


def verdict(safe: int, utility: dict[str, Any]) -> str:
    """The certificate's verdict: *not safe* when no budget is safe; *safe only because it releases
    nothing* when a budget is safe and the honest participants keep nothing useful (:func:`honest_utility`);
    else *safe*."""
    if not safe:
        return NOT_SAFE
    return USELESS if utility["releases_nothing"] else SAFE


def budget_verdicts(battery_rows: list[dict[str, Any]], budgets: list[int]) -> list[dict[str, Any]]:
    """Per budget, what the battery says (``battery``: ``safe`` when every attack that played passes,
    else ``fails`` or ``inconclusive`` after its worst row, or ``no attack played``) and the worst row's
    attack; ``statements`` is the place for what else is known at that budget (a proven bound)."""
    found = []
    for budget in sorted(budgets):
        played = [row for row in battery_rows if row["budget"] == budget and row["verdict"] != DID_NOT_PLAY]
        worst = max(played, key=lambda row: (VERDICT_ORDER[row["verdict"]], row.get("severity") or 0.0), default=None)
        said = ("no attack played" if worst is None else "safe" if all(row["passes"] for row in played)
                else worst["verdict"])
        found.append({"budget": budget, "battery": said, "worst": None if worst is None else worst["attack_label"],
                      "statements": []})
    return found


def default_directory(key: str) -> Path:
    """Where a battery is kept unless ``--run-dir`` says: the user's cache, by the battery's identity."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "ladderlab" / "certify" / key


def battery_key(scenario: Scenario, secret_seed: int | None) -> str:
    """The battery's identity: its cells and seed (not its maximum of replications: the pieces of
    one maximum serve another), the secret, and the code of every plugin it runs; not where its local
    files lie (:mod:`ladderlab.utils.locations`)."""
    dump = location_free(scenario.model_dump(mode="json"))
    dump.pop("replications")
    plugins = sorted({(kind, plugin_id) for cell in cells(scenario)
                      for kind, plugin_id in (("task", cell.task[0]), ("mechanism", cell.mechanism[0]),
                                              ("attack", cell.attack[0]))})
    registries = {"task": TASKS, "mechanism": MECHANISMS, "attack": ATTACKS}
    prints = {f"{kind}:{location_free(plugin_id)}": fingerprint_token(fingerprint(registries[kind].get(plugin_id)))
              for kind, plugin_id in plugins}
    text = json.dumps([dump, prints, ladderlab.__version__, secret_fingerprint(secret_seed)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Decision:
    """A grid point's verdict (None while undecided) and the replications it uses, with the
    sequential test and its indicators (per counted replication) where the point played."""

    verdict: str | None
    replications: int | None
    test: Verdict | None = None
    beyond_tau: np.ndarray | None = None
    beyond_epsilon: np.ndarray | None = None


@dataclass(frozen=True)
class Criterion:
    """The tail criterion of a grid point, in the scorer's units: it **passes** once P(Δ < −``tau``) and
    P(optimism > ``epsilon``) are both shown to lie below ``level`` (β) by confidence sequences at error
    ``delta`` each, **fails** once either is shown above it, and is inconclusive if neither happened
    within ``maximum`` replications (:mod:`ladderlab.stats.sequential`).

    A replication counts when it finished, or when the attack raised (:class:`ladderlab.runs.duel.AttackCrashed`):
    then what it submitted before is its transcript, and one that raised before its first submission
    overfitted nothing. A replication that failed otherwise (the task or the mechanism raised) is no
    evidence and is shown, never counted.
    """

    tau: float
    epsilon: float
    delta: float
    level: float = DEFAULT_BETA
    maximum: int = DEFAULT_REPLICATIONS
    sign: float = 1.0
    """The scorer's orientation: +1 when smaller is better."""
    releases_best: bool = True
    """Whether the mechanism's release is its best so far (the leaderboard's value is the running best otherwise)."""
    cap: float = math.inf
    """The risk beyond which the leaderboard's error is not measured (:meth:`ladderlab.certification.units.Unit.cap`)."""

    def indicators(self, rows: list[dict[str, Any]]) -> tuple[list[int], np.ndarray, np.ndarray]:
        """The positions of the counted replications, and per counted replication 1{Δ < −τ} and 1{optimism > ε}."""
        counted = [i for i, row in enumerate(rows) if _counted(row)]
        delta, optimism, _ = self.sides(rows, counted)
        return counted, delta < -self.tau, optimism > self.epsilon

    def deviations(self, row: dict[str, Any]) -> tuple[float, float]:
        """A measured replication's leaderboard error, optimism and lag (:func:`ladderlab.runs.duel.leaderboard_deviations`),
        on scores capped at :attr:`cap`; a row without its submissions' scores gives its recorded sides."""
        released = row.get("released")
        if released is None or len(released) == 0:
            side, lag = row.get("leaderboard_optimism"), row.get("leaderboard_lag")
            optimism = row["leaderboard_error"] if side is None or not math.isfinite(side) else side
            return optimism, math.nan if lag is None else lag
        final, population = np.asarray(row["final"], dtype=float), row.get("population")
        true = final if population is None or not math.isfinite(population) else np.full(final.size, population)
        return leaderboard_deviations(np.asarray(released, dtype=float), true, self.sign, self.releases_best, self.cap)

    def overstatement(self, row: dict[str, Any]) -> float:
        """A measured replication's Δ oriented as a risk (negative: the leaderboard shows the reported submission
        better than its final score, whatever the scorer's orientation), on scores capped at :attr:`cap`; a
        row without its submissions' scores gives its recorded Δ, oriented."""
        released, reported = row.get("released"), row.get("reported")
        if released is None or len(released) == 0 or reported is None:
            return self.sign * row["delta"]
        shown = released[-1] if self.releases_best else released[reported]
        return float(min(self.sign * shown, self.cap) - min(self.sign * row["final"][reported], self.cap))

    def sides(self, rows: list[dict[str, Any]], positions: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Δ (:meth:`overstatement`), the leaderboard's optimism and its lag (:meth:`deviations`) of the given
        replications, in the scorer's units: 0, 0 and NaN for a crash before the first submission (nothing was
        released to overfit)."""
        delta, optimism, lag = np.zeros(len(positions)), np.zeros(len(positions)), np.full(len(positions), math.nan)
        for number, i in enumerate(positions):
            if _measured(rows[i]):
                delta[number] = self.overstatement(rows[i])
                optimism[number], lag[number] = self.deviations(rows[i])
        return delta, optimism, lag

    def needed(self, rows: list[dict[str, Any]]) -> int | None:
        """A grid point's stop rule: how many replications it uses, or None while undecided."""
        return self.decision(rows).replications

    def decision(self, rows: list[dict[str, Any]]) -> Decision:
        """A grid point's verdict and the replications it uses (None, None while undecided), and
        the sequential test on its counted replications where it played."""
        if not rows:
            return Decision(None, None)
        if all(row["status"] == "skipped" for row in rows):
            return Decision(DID_NOT_PLAY, 1)  # an incompatible pair is skipped in every replication
        if not _played(rows):  # one that raised may submit in a later replication: it goes on to the maximum
            crashed = any(row.get("crashed") for row in rows)
            return (Decision(DID_NOT_PLAY, len(rows)) if len(rows) >= (self.maximum if crashed else
                                                                         min(DID_NOT_PLAY_AFTER, self.maximum))
                    else Decision(None, None))
        counted, beyond_tau, beyond_epsilon = self.indicators(rows)
        final = len(rows) >= self.maximum
        test = stopping_verdict(beyond_tau, beyond_epsilon, self.delta, self.level, len(counted) if final else math.inf)
        if test.verdict in (PASSES, FAILS):
            return Decision(test.verdict, counted[test.replications - 1] + 1, test, beyond_tau, beyond_epsilon)
        if final:
            return Decision(INCONCLUSIVE, len(rows), test, beyond_tau, beyond_epsilon)
        return Decision(None, None, test, beyond_tau, beyond_epsilon)


def point_stop_rule(group: list[Cell], criterion_of: Callable[[Cell], Criterion]) -> battery.StopRule:
    """A group is done when all its cells are; it uses as many replications as the most demanding."""

    def needed(rows: battery.Rows) -> int | None:
        counts = [criterion_of(cell).needed(rows[cell.key]) for cell in group]
        return None if None in counts else max(counts)

    return needed


def pruner(budgets: dict[str, int], criterion_of: Callable[[Cell], Criterion], cells_of: dict[str, list[Cell]],
           ) -> Callable[[dict[str, battery.Rows], set[str]], set[str]]:
    """Between rounds: the undecided groups whose budget is at or above one where a point already
    fails. The safe budget lies below it whatever they show, so they stop (``--complete`` does not
    prune). ``budgets`` and ``cells_of``: each group's budget and cells, by group key."""

    def prune(rows: dict[str, battery.Rows], undecided: set[str]) -> set[str]:
        failing = [budgets[key] for key, group_rows in rows.items() if key not in undecided
                   and any(criterion_of(cell).decision(group_rows[cell.key]).verdict == FAILS for cell in cells_of[key])]
        lowest = min(failing, default=math.inf)
        return {key for key in undecided if budgets[key] >= lowest}

    return prune


def _counted(row: dict[str, Any]) -> bool:
    """A replication that is evidence: it finished, or the attack raised (a crash is counted as played)."""
    return row["status"] == "ok" or (row["status"] == "failed" and bool(row.get("crashed")))


def _measured(row: dict[str, Any]) -> bool:
    """A counted replication with a transcript to measure: at least one submission."""
    return _counted(row) and (row.get("submissions") or 0) > 0 and row.get("delta") is not None


def _played(rows: list[dict[str, Any]]) -> bool:
    return any(_measured(row) for row in rows)


def _interval(values: np.ndarray, confidence: float) -> dict[str, float | None]:
    values = np.asarray(values, dtype=float)
    median, low, high = median_interval(values[~np.isnan(values)], confidence)
    return {"median": _finite(median), "lo": _finite(low), "hi": _finite(high)}


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _tail(values: np.ndarray, level: float) -> float | None:
    """The ``level``-quantile of ``values`` (the smallest value at or above which a share 1 − ``level`` lies)."""
    return _finite(float(np.quantile(values, level, method="inverted_cdf"))) if len(values) else None


@dataclass
class _Point:
    """One grid point's outcome against the certified mechanism."""

    cell: Cell
    family: str
    verdict: str
    replications: int
    reason: str | None
    severity: float
    measures: dict[str, Any]
    stopped: bool = False
    """Stopped undecided because a point at this budget or a smaller one had failed."""

    @property
    def params(self) -> dict[str, Any]:
        return self.cell.attack[1]

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.cell.task[0], "family": self.family, "params": self.params, "verdict": self.verdict,
                "stopped": self.stopped, "replications": self.replications, "reason": self.reason,
                "severity": None if math.isnan(self.severity) else self.severity, **self.measures}


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A point's replications by what became of them: finished, crashed (the attack raised; of them,
    before its first submission), failed otherwise, skipped; and the crashes' distinct errors."""
    crashed = [row for row in rows if row["status"] == "failed" and row.get("crashed")]
    return {"n_ok": sum(row["status"] == "ok" for row in rows), "n_crashed": len(crashed),
            "n_crashed_unsubmitted": sum(not _measured(row) for row in crashed),
            "n_failed": sum(row["status"] == "failed" and not row.get("crashed") for row in rows),
            "n_skipped": sum(row["status"] == "skipped" for row in rows),
            "crash_errors": sorted({row.get("error") or "" for row in crashed})[:3]}


def judge(cell: Cell, family: str, rows: list[dict[str, Any]], criterion: Criterion, unit: float = 1.0,
          confidence: float = 0.95, stopped: bool = False) -> _Point:
    """A grid point's verdict and measures from the replications it used, under ``criterion``; its
    figures in ``unit`` (the certificate's unit of the family, in the scorer's units) with the raw
    ones beside, intervals at ``confidence`` (``stopped``: it was stopped undecided, see :func:`pruner`)."""
    label = f"{plugin_label(cell.attack[0], cell.attack[1])} on {cell.task[0]}"
    counted = [i for i, row in enumerate(rows) if _counted(row)]
    used = [rows[i]["submissions"] or 0 for i in counted]
    submissions = float(np.median(used)) if used else None
    measures: dict[str, Any] = {**_counts(rows), "submissions_used": int(submissions) if submissions is not None and
                                submissions.is_integer() else submissions}
    if not counted:
        errors = sorted({row["error"] for row in rows if row.get("error")})
        reason = f"{label} could not run at a budget of {cell.budget}: {'; '.join(errors) or 'no replication finished'}"
        return _Point(cell, family, DID_NOT_PLAY, len(rows), reason, math.nan, {**measures, "errors": errors})
    if not _played(rows):
        crashes = measures["n_crashed"]
        why = (f"it raised before its first submission in {crashes} of them ({'; '.join(measures['crash_errors'])})"
               if crashes else "one step of it needs more submissions than the budget allows, or it submits nothing here")
        reason = (f"{label} made no submission in any of its {len(counted)} replications at a budget of "
                  f"{cell.budget}: {why}")
        return _Point(cell, family, DID_NOT_PLAY, len(rows), reason, math.nan, measures)
    decision = criterion.decision(rows)
    assert decision.test is not None and decision.beyond_tau is not None and decision.beyond_epsilon is not None
    verdict = decision.verdict or INCONCLUSIVE  # undecided: stopped before its maximum (see ``stopped``)
    beyond_tau, beyond_epsilon, decided = decision.beyond_tau, decision.beyond_epsilon, decision.test
    delta, optimism, lag = criterion.sides(rows, counted)
    measured = [i for i in counted if _measured(rows[i])]
    error = np.array([rows[i]["leaderboard_error"] for i in measured], dtype=float)
    measures.update(
        unit_value=unit,
        delta=_interval(delta / unit, confidence), delta_raw=_interval(delta, confidence),
        delta_tail=_tail(delta / unit, criterion.level),
        optimism=_interval(optimism / unit, confidence), optimism_raw=_interval(optimism, confidence),
        optimism_tail=_tail(optimism / unit, 1 - criterion.level),
        lag=_interval(lag / unit, confidence),
        lberr=_interval(error / unit, confidence), lberr_raw=_interval(error, confidence),
        p_delta=dict(zip(("estimate", "lo", "hi"), (float(beyond_tau.mean()), *decided.p_delta))),
        p_optimism=dict(zip(("estimate", "lo", "hi"), (float(beyond_epsilon.mean()), *decided.p_error))),
        loss_bound=_interval(np.array([rows[i].get("loss_bound") or 1.0 for i in measured]), confidence)["median"],
    )
    if verdict == INCONCLUSIVE:
        measures["outlook"] = _outlook(measures, criterion)
    severity = max(-float(np.quantile(delta, criterion.level)) / criterion.tau,
                   float(np.quantile(optimism, 1 - criterion.level)) / criterion.epsilon)
    return _Point(cell, family, verdict, len(rows), None, severity, measures, stopped and verdict == INCONCLUSIVE)


VERDICT_ORDER = {FAILS: 2, INCONCLUSIVE: 1, PASSES: 0}


def _worst(points: list[_Point]) -> _Point | None:
    """The worst grid point that played: a failing one before an inconclusive one before a passing
    one, by severity within each (None: none played)."""
    played = [point for point in points if point.verdict != DID_NOT_PLAY]
    return max(played, key=lambda point: (VERDICT_ORDER[point.verdict], point.severity)) if played else None


def _row(spec: AttackSpec, budget: int, points: list[_Point], worst: _Point | None, bound: Any) -> dict[str, Any]:
    """An attack at a budget: its worst grid point (:func:`_worst`), or did not play."""
    played = [point for point in points if point.verdict != DID_NOT_PLAY]
    row: dict[str, Any] = {
        "attack": spec.id, "attack_label": spec.label, "pinned": spec.pinned is not None, "budget": budget,
        "verdict": worst.verdict if worst else DID_NOT_PLAY,
        "passes": worst is not None and all(point.verdict == PASSES for point in played),
        "did_not_play": None if worst else _not_played_reason(spec, budget, points),
        "worst_params": worst.params if worst else None,
        "worst_task": worst.cell.task[0] if worst else None,
        "worst_family": worst.family if worst else None,
        "stopped": worst is not None and worst.stopped,
        "severity": worst.severity if worst else None,
        "replications": worst.replications if worst else max((point.replications for point in points), default=0),
        "theoretical_bound": None if bound is None else {
            "kind": bound.kind, "value": bound.value, "statement": bound.statement, "reference": bound.reference},
        "grid": [point.as_dict() for point in points],
    }
    counts = {key: sum(point.measures.get(key, 0) for point in points) for key in ("n_ok", "n_crashed", "n_failed")}
    row["crash_share"] = counts["n_crashed"] / max(1, counts["n_ok"] + counts["n_crashed"])
    row["failed_share"] = counts["n_failed"] / max(1, sum(point.replications for point in points))
    row["one_duel"] = any(point.reason == ONE_DUEL for point in played)
    if worst:
        row.update({key: value for key, value in worst.measures.items()})
    else:
        row["submissions_used"] = 0 if all(point.reason and "no submission" in point.reason for point in points) else None
    return row


def _unplayable_row(spec: AttackSpec, budget: int, task_families: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The row of an attack that can play none of the families, with each family's reason."""
    reasons = []
    for name, entry in task_families.items():
        if name == "honest":
            continue
        split = workload.task_data(entry["id"], entry["params"])[1]
        attack = ATTACKS.make(spec.id, **spec.points(budget, split.public_rows.size)[0])
        reasons.append(f"{name}: {attack.incompatibility(split.public)}")
    row = _row(spec, budget, [], None, None)
    row["did_not_play"] = f"{spec.label} cannot play any family of the battery ({'; '.join(reasons)})"
    return row


def _not_played_reason(spec: AttackSpec, budget: int, points: list[_Point]) -> str:
    if len(points) > 1 and all(point.reason and "no submission" in point.reason for point in points):
        return (f"{spec.label} made no submission at a budget of {budget} at any of its {len(points)} parameter "
                "settings, in any replication: one step of it needs more submissions than the budget allows, "
                "or it submits nothing here")
    return "; ".join(dict.fromkeys(point.reason or "" for point in points))


def _broken_by(rows: list[dict[str, Any]], safe: int, budgets: list[int]) -> list[dict[str, Any]]:
    """The rows that fail or are inconclusive at the first budget above the safe one, failures and the worst first."""
    above = [budget for budget in sorted(budgets) if budget > safe]
    if not above:
        return []
    unsafe = [row for row in rows if row["budget"] == above[0] and row["verdict"] in (FAILS, INCONCLUSIVE)]
    return sorted(unsafe, key=lambda row: (-VERDICT_ORDER[row["verdict"]], -row["severity"]))


def _honest(participant: tuple[str, dict[str, Any]], rows_by_mechanism: dict[str, list[dict[str, Any]]], mechanism: str,
            confidence: float, fixed: bool = False, unit: float = 1.0,
            criteria: dict[str, Criterion] | None = None) -> dict[str, Any]:
    """How well the released scores of an honest participant's submissions (``participant``: its id and
    parameters as the scenario gives them) rank their final-set scores (Spearman's ρ per replication; 0
    where the releases do not vary: a frozen leaderboard tells an honest team nothing) under the
    mechanism and under full disclosure, the paired cost (full disclosure's ρ minus the mechanism's),
    and its leaderboard error with its two sides, in ``unit`` (the certificate's unit on the honest
    participant's task): the lag (its improvements released late, or never) is the honest cost, the
    optimism what the leaderboard overstated.
    ``fixed``: the play draws nothing (:func:`_draws_random`), so its one replication is every
    replication's value, an interval of zero width. ``criteria``: by mechanism, how its error's sides are
    measured (:meth:`Criterion.deviations`; the recorded sides without)."""
    def summary(values: Any) -> dict[str, float | None]:
        values = np.asarray(values, dtype=float)
        if fixed and values.size:
            value = _finite(values[0])
            return {"median": value, "lo": value, "hi": value}
        return _interval(values, confidence)

    def measured(rows: list[dict[str, Any]], column: str) -> np.ndarray:
        values = [row.get(column) for row in rows if row["status"] == "ok"]
        return np.array([math.nan if value is None else value for value in values], dtype=float) / unit

    def sides(name: str) -> np.ndarray:
        rows = [row for row in rows_by_mechanism.get(name, []) if row["status"] == "ok"]
        if criteria is None:
            return np.array([[row.get("leaderboard_optimism"), row.get("leaderboard_lag")] for row in rows],
                            dtype=float).reshape(-1, 2) / unit
        return np.array([criteria[name].deviations(row) for row in rows], dtype=float).reshape(-1, 2) / unit

    correlation = {name: _agreements(rows) for name, rows in rows_by_mechanism.items()}
    mine, reference = correlation.get(mechanism, []), correlation.get(REFERENCE, [])
    attack_id, params = participant
    own, full = rows_by_mechanism.get(mechanism, []), rows_by_mechanism.get(REFERENCE, [])
    return {
        "participant": plugin_label(attack_id, params),
        "id": attack_id,
        "params": ATTACKS.make(attack_id, **params).get_params(),
        "replications": max((len(rows) for rows in rows_by_mechanism.values()), default=0),
        "n_failed": sum(row["status"] != "ok" for rows in rows_by_mechanism.values() for row in rows),
        "deterministic": fixed,
        "rank_correlation": summary(mine),
        "rank_correlation_full_disclosure": summary(reference),
        "cost": summary([r - m for m, r in zip(mine, reference)]),
        "lberr": summary(measured(own, "leaderboard_error")),
        "lberr_full_disclosure": summary(measured(full, "leaderboard_error")),
        "lag": summary(sides(mechanism)[:, 1]),
        "optimism": summary(sides(mechanism)[:, 0]),
    }


def _draws_random(cell: Cell) -> bool:
    """Whether the play in ``cell`` draws from a random stream: it plays once on
    sealed streams (:func:`ladderlab.seeding.sealed_stream`), and any draw, spawn or derived stream
    (or any failure) counts. False: every replication plays the same duel, so one is all of them."""
    task_rng, mechanism_rng, attack_rng = streams = [sealed_stream() for _ in range(3)]
    before = [rng.bit_generator.state for rng in streams]
    try:
        with single_threaded():
            split = TASKS.make(cell.task[0], **cell.task[1]).split(task_rng)
            play(split, MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1]),
                 ATTACKS.make(cell.attack[0], **cell.attack[1]), mechanism_rng, attack_rng, budget=cell.budget,
                 oracle=cell.oracle)
    except Exception:  # a play that fails here fails in the battery too, which reports it
        return True
    return any(rng.bit_generator.state != state for rng, state in zip(streams, before))


def _agreements(rows: list[dict[str, Any]]) -> list[float]:
    """Per finished replication, Spearman's ρ of the honest submissions' released and final scores
    (0 where the releases do not vary)."""
    out = []
    for row in rows:
        if row["status"] != "ok":
            continue
        released, final = np.asarray(row["released"])[:-1], np.asarray(row["final"])[:-1]  # the last is the final scoring
        varies = released.size > 2 and np.ptp(released) > 0 and np.ptp(final) > 0
        out.append(float(stats.spearmanr(released, final).statistic) if varies else 0.0)
    return out


@dataclass(frozen=True)
class _Battery:
    """The battery's cells, sorted into what each phase runs."""

    scenario: Scenario
    points: dict[str, tuple[AttackSpec, int, str]]
    """Certified cells by key: their attack spec, budget and family."""
    reference: dict[str, Cell]
    """Full-disclosure cells by (task, attack, budget)."""
    honest: list[Cell]


def _sorted_battery(scenario: Scenario, mechanism: str, specs: list[AttackSpec], budgets: list[int], n: int,
                    task_families: dict[str, dict[str, Any]], accounts: int = 1) -> _Battery:
    family_of = {json.dumps([entry["id"], entry["params"]], sort_keys=True): name
                 for name, entry in task_families.items() if name != "honest"}
    spec_of = {(spec.id, json.dumps(point, sort_keys=True), budget): spec
               for spec in specs for budget in budgets for point in spec.points(probe_budget(budget, accounts), n)}
    points, reference, honest = {}, {}, []
    for cell in cells(scenario):
        if ATTACKS.get(cell.attack[0]).honest:
            honest.append(cell)
        else:
            family = family_of[json.dumps([cell.task[0], cell.task[1]], sort_keys=True)]
            if cell.mechanism[0] == mechanism:
                spec = spec_of[(cell.attack[0], json.dumps(cell.attack[1], sort_keys=True), cell.budget)]
                points[cell.key] = (spec, cell.budget, family)
            if cell.mechanism[0] == REFERENCE:
                reference[_duel_key(cell)] = cell
    return _Battery(scenario, points, reference, honest)


def _duel_key(cell: Cell) -> str:
    """A duel's identity without its mechanism: the certified point and its full-disclosure twin share it."""
    return json.dumps([cell.task, cell.attack, cell.budget, cell.accounts], sort_keys=True, default=str)


def _groups(group_cells: list[Cell], rule: Callable[[list[Cell]], battery.StopRule]) -> list[battery.Group]:
    return [battery.Group(group, rule(group)) for group in runner.transcript_groups(group_cells)]


@sandboxed_when_isolated
def certify(
    mechanism: str,
    params: dict[str, Any] | None = None,
    n: int = 200,
    budgets: list[int] | None = None,
    attacks: list[str | AttackSpec] | None = None,
    replications: int = DEFAULT_REPLICATIONS,
    seed: int = 0,
    tau: float = DEFAULT_TOLERANCE,
    epsilon: float = DEFAULT_TOLERANCE,
    confidence: float = 0.95,
    jobs: int = 1,
    run_dir: str | Path | None = None,
    default_battery: bool = True,
    isolation: str = "none",
    secret_seed: int | None = None,
    progress: bool | None = False,
    scorer: str | None = None,
    prediction_range: str | tuple[float, float] | None = TRAINING_RANGE,
    honest_replications: int = HONEST_REPLICATIONS,
    complete: bool = False,
    announce: Callable[[str], None] | None = None,
    force: bool = False,
    accounts: int = 1,
    task_families: dict[str, dict[str, Any]] | None = None,
    link: bool = False,
    amend: Callable[[dict[str, Any]], None] | None = None,
    reference_store: str | Path | None = None,
    honest: list[str | AttackSpec] | None = None,
    beta: float = DEFAULT_BETA,
    unit: str = DEFAULT_UNIT,
    useful: float = USEFUL,
) -> dict[str, Any]:
    """Run the battery and return the certificate (a JSON-ready dict).

    ``attacks`` are added to the battery of every registered attack that is not honest (or, with
    ``default_battery=False``, replace it); each is an id, ``file.py:Class``, or either with
    pinned parameters (see :func:`parse_attack`). ``replications`` is the most any grid point
    uses. A point passes when P(Δ < −τ) ≤ ``beta`` and P(optimism > ε) ≤ ``beta`` are shown, and the
    certificate's verdicts hold together at ``confidence`` (every point's two sequences at
    :func:`ladderlab.stats.sequential.per_sequence_error`). ``tau`` and ``epsilon`` are in ``unit``
    (:mod:`ladderlab.certification.units`: by default the loss of the best constant prediction on each
    family's public labels); one larger than that loss is refused. Mechanism parameters that set how
    fine its releases are and that ``params`` leaves out are set so that an honest improvement of τ is
    released on every family (:func:`tolerance_defaults`). ``useful``: the honest participants'
    Spearman correlation below which a safe mechanism is *safe only because it releases nothing*
    (:func:`verdict`). ``scorer`` and ``prediction_range`` choose the families (:func:`families`),
    unless ``task_families`` gives them (by name, each ``{"id", "params"}``, ``honest`` the honest
    participant's; :mod:`ladderlab.certification.challenge_certify`); ``amend`` completes the certificate
    before it is written (the challenge it was made for).
    ``run_dir`` keeps the battery (default: :func:`default_directory`); a run of the same
    battery resumes it. Once a point fails at a budget, the undecided points at that budget
    and above stop at the end of their round (the safe budget is below it whatever they
    show): their verdict is inconclusive, marked ``stopped``; ``complete`` decides them all.
    ``announce`` receives the lines a person watching should read (where the battery is kept,
    the estimate). ``isolation``, ``secret_seed`` and ``progress`` as in :func:`ladderlab.runs.runner.run`;
    a battery whose estimated memory cannot fit is refused before it runs
    (:class:`ladderlab.runs.workload.TooLarge`) unless ``force``. ``accounts`` = A ≥ 2 certifies against
    attackers with A accounts of each budget, each account with its own mechanism state
    (:mod:`ladderlab.competition.accounts`); the honest participant keeps one. ``link`` plays those accounts under
    the linking wrapper (:mod:`ladderlab.engines.linking`, its default rule). ``reference_store``: a directory
    that keeps full disclosure's replications (the reference and its honest participant), which
    depend on nothing of the certified mechanism, for the certificates of other settings at the same
    seed to read instead of playing them again (:mod:`ladderlab.certification.tune`). ``honest``: the honest
    participants whose cost the certificate measures (:func:`parse_honest`; default
    :func:`default_honest`), each on the ``honest`` family, with the budget of its own submissions.
    """
    explicit = dict(params or {})
    budgets = list(budgets or DEFAULT_BUDGETS)
    repeated = sorted({budget for budget in budgets if budgets.count(budget) > 1})
    if repeated:
        raise ValueError(f"budgets: {', '.join(map(str, repeated))} given twice; give each budget once")
    budgets = sorted(budgets)
    for name, value in (("tau", tau), ("epsilon", epsilon)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie in (0.5, 1), got {confidence}")
    if not (isinstance(beta, (int, float)) and 0 < beta < 1):
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    if not (isinstance(useful, (int, float)) and -1 <= useful <= 1):
        raise ValueError(f"useful must lie in [-1, 1] (a Spearman correlation), got {useful!r}")
    if replications < 1 or honest_replications < 1:
        raise ValueError(f"replications must be at least 1, got {replications} and {honest_replications}")
    if isinstance(accounts, bool) or not isinstance(accounts, int) or accounts < 1:
        raise ValueError(f"accounts must be a whole number ≥ 1, got {accounts!r}")
    specs = _unique(_battery_specs(attacks or [], default_battery))
    task_families = task_families or families(n, scorer, prediction_range)
    scored, family_units = measured_families(task_families, unit, force)
    for name, family in family_units.items():
        if name != "honest":
            check_tolerances(tau, epsilon, family, name)
    improvement = releasing_improvement(family_units, tau)
    defaults = tolerance_defaults(mechanism, explicit, improvement)
    params = {**defaults, **explicit}
    honest_specs = [spec if isinstance(spec, AttackSpec) else parse_honest(spec) for spec in honest or [default_honest()]]
    scenario = battery_scenario(mechanism, params, n, budgets, specs, replications, seed, task_families, force, accounts,
                                link, honest_plays(honest_specs, task_families["honest"], force=force))
    runner.check_accounts(scenario, check_isolation(isolation), secret_seed)
    workload.refuse_if_too_large(workload.scenario_work(scenario, jobs, force), force,
                                 hint="certify fewer budgets, a smaller n or fewer --replications")
    preflight(scenario)
    directory = Path(run_dir) if run_dir else default_directory(battery_key(scenario, secret_seed))
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"--run-dir {directory} exists and is not a directory")
    say = announce or (lambda line: None)
    layout = _sorted_battery(scenario, mechanism, specs, budgets, n, task_families, accounts)
    participants = _participants(layout.honest)
    honest_fixed = {participant: not any(map(_draws_random, group)) for participant, group in participants.items()}
    honest_counts = {participant: 1 if fixed else min(replications, honest_replications)
                     for participant, fixed in honest_fixed.items()}
    delta = per_sequence_error(confidence, max(1, len(layout.points)))
    criteria = {(name, mechanism_id): Criterion(family.raw(tau), family.raw(epsilon), delta, beta, replications,
                                                family.sign, MECHANISMS.get(mechanism_id).releases_best,
                                                family.cap(epsilon))
                for name, family in family_units.items() for mechanism_id in {mechanism, REFERENCE}}
    point_cells = [cell for cell in cells(scenario) if cell.key in layout.points]
    fixed_families = {name for name, entry in task_families.items() if not _task_draws(entry)}
    one_duel = {cell.key for cell in point_cells if layout.points[cell.key][2] in fixed_families and not _draws_random(cell)}

    def criterion_of(cell: Cell) -> Criterion:
        criterion = criteria[layout.points[cell.key][2], mechanism]
        return dataclasses.replace(criterion, maximum=1) if cell.key in one_duel else criterion

    start, cpu_start = time.perf_counter(), cpu_time.tree_seconds()
    with rundir.RunLock(directory, command="ladderlab certify"):
        store = battery.Store(directory, seed)
        say(f"battery kept in {directory} (interrupt and run the same command again to resume)")
        groups = _groups(point_cells, lambda group: point_stop_rule(group, criterion_of))
        rows, used, pruned = battery.replicate(
            groups, seed, replications, store, jobs, isolation, secret_seed, progress,
            announce=lambda estimate: say(estimate.text()), first_look=first_decision(delta, beta),
            prune=None if complete else pruner({group.key: group.cells[0].budget for group in groups}, criterion_of,
                                               {group.key: group.cells for group in groups}),
            desc="grid points")
        verdicts = {}
        for group in groups:
            for cell in group.cells:
                criterion, family = criterion_of(cell), layout.points[cell.key][2]
                cell_rows = rows[cell.key][: used[group.key]]
                cell_rows = cell_rows[: criterion.needed(cell_rows) or len(cell_rows)]
                verdicts[cell.key] = judge(cell, family, cell_rows, criterion, family_units[family].value, confidence,
                                           stopped=group.key in pruned)
                if cell.key in one_duel:
                    verdicts[cell.key].reason = ONE_DUEL
        certified = MECHANISMS.make(mechanism, **params)
        grids = [(spec, budget, [verdicts[key] for key, (s, b, _) in layout.points.items() if s == spec and b == budget])
                 for spec in specs for budget in budgets]
        worsts = [_worst(points) for _, _, points in grids]
        battery_rows = [_row(spec, budget, points, worst, certified.leaderboard_error_bound(n, budget))
                        if any(s == spec for s, _, _ in layout.points.values())
                        else _unplayable_row(spec, budget, task_families)
                        for (spec, budget, points), worst in zip(grids, worsts)]
        second = _second_phase(layout, worsts, {cell.key: honest_counts[participant]
                                                for participant, group in participants.items() for cell in group})
        shared = [reference_store is not None and all(cell.mechanism[0] == REFERENCE for cell in group.cells)
                  for group in second]
        rows.update(battery.replicate([group for group, kept in zip(second, shared) if not kept], seed, replications,
                                      store, jobs, isolation, secret_seed, progress, desc="reference and honest")[0])
        if any(shared):
            with rundir.RunLock(Path(reference_store), command="ladderlab certify"):
                rows.update(battery.replicate([group for group, kept in zip(second, shared) if kept], seed,
                                              replications, battery.Store(Path(reference_store), seed), jobs,
                                              isolation, secret_seed, progress, desc="full disclosure")[0])
        _attach_reference(battery_rows, worsts, layout, rows, confidence, criteria, tau)
        ran = _ran_scenario(scenario, worsts, mechanism, task_families, replications, seed)
        _write_run_directory(directory, ran, rows, verdicts, seed, secret_seed)
    safe = safe_budget(battery_rows, budgets)
    attacked = [name for name in task_families if name != "honest"]
    proven = proven_side(certified, n, budgets, beta, zero_one_families([scored[name][0] for name in attacked]),
                         min(min(family_units[name].raw(tau), family_units[name].raw(epsilon)) / family_units[name].bound
                             for name in attacked))
    honest = [_honest(json.loads(participant), {cell.mechanism[0]: rows[cell.key][:honest_counts[participant]]
                                                for cell in group}, mechanism, confidence, honest_fixed[participant],
                      family_units["honest"].value, {name: criteria["honest", name] for name in (mechanism, REFERENCE)})
              for participant, group in participants.items()]
    utility = honest_utility(honest, useful)
    issued = {
        "certificate_version": CERTIFICATE_VERSION,
        "mechanism": mechanism,
        "params": certified.get_params(),
        "tolerance_params": defaults,
        "releasing_improvement": improvement,
        "n": n,
        "budgets": budgets,
        "accounts": accounts,
        **({"link": _link_text(), "link_rule": LinkRule().record()} if link else {}),
        "replications": replications,
        "confidence": confidence,
        "points": len(layout.points),
        "per_sequence_error": delta,
        "seed": seed,
        "tau": tau,
        "epsilon": epsilon,
        "beta": beta,
        "unit": unit,
        "units": UNITS[unit],
        "useful": useful,
        "families": {name: {"task": entry["id"], "params": entry["params"], "scorer": scored[name][0],
                            "loss_bound": scored[name][1], **family_units[name].record(tau, epsilon),
                            "resampled": resampling(entry), **({"one_duel": True} if name in fixed_families else {})}
                     for name, entry in task_families.items()},
        "attacks": [{"attack": spec.id, "pinned": spec.pinned} for spec in specs],
        "safe_budget": safe,
        "proven": proven,
        "verdict": verdict(safe, utility),
        "budget_verdicts": proven_statements(budget_verdicts(battery_rows, budgets), proven),
        "utility": utility,
        "broken_by": [{"attack": row["attack_label"], "budget": row["budget"], "verdict": row["verdict"],
                       "worst_params": row["worst_params"], "worst_task": row["worst_task"],
                       "p_delta": row["p_delta"]["estimate"], "p_optimism": row["p_optimism"]["estimate"],
                       "delta_tail": row["delta_tail"], "optimism_tail": row["optimism_tail"]}
                      for row in _broken_by(battery_rows, safe, budgets)],
        "battery": battery_rows,
        "honest": honest,
        "replications_used": sum(point.replications for point in verdicts.values()),
        "run_dir": str(directory),
        "versions": rundir.read_manifest(directory)["versions"],
        "code": page_stamps.code_record(rundir.read_manifest(directory)["plugins"], "certificate"),
        "wall_time_seconds": time.perf_counter() - start,
        "cpu_time_seconds": cpu_time.tree_seconds() - cpu_start,
        "cpu_time_counts": CPU_TIME_COUNTS,
    }
    if amend is not None:
        amend(issued)
    text = json.dumps(finite_or_null(issued), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    rundir.write_atomically(directory / CERTIFICATE_FILE, text.encode())
    return issued


def _battery_specs(attacks: list[str | AttackSpec], default_battery: bool) -> list[AttackSpec]:
    specs = [a if isinstance(a, AttackSpec) else parse_attack(a) for a in attacks]
    for spec in specs:
        if ATTACKS.get(spec.id).honest:
            raise ValueError(f"attack {spec.label!r}: {spec.id!r} is an honest participant, not an attack; the "
                             "certificate measures honest participants' cost on its own (see 'Cost to honest participants')")
    if len(_unique(specs)) < len(specs):
        twice = next(spec for number, spec in enumerate(specs) if spec in specs[:number])
        raise ValueError(f"attack {twice.label!r} is given twice; give each attack once")
    if default_battery:
        specs = [AttackSpec(a) for a in ATTACKS.ids() if not ATTACKS.get(a).honest] + [
            spec for spec in specs if spec.pinned is not None or spec.id not in ATTACKS.ids()]
    if not specs:
        raise ValueError("no attack to certify against: name one with --attack, or keep the default battery")
    return specs


def _unique(specs: list[AttackSpec]) -> list[AttackSpec]:
    seen, unique = set(), []
    for spec in specs:
        key = (spec.id, json.dumps(spec.pinned, sort_keys=True))
        if key not in seen:
            seen.add(key)
            unique.append(spec)
    return unique


def _participants(honest_cells: list[Cell]) -> dict[str, list[Cell]]:
    """The honest cells by participant (its id and parameters as JSON), in the battery's order."""
    participants: dict[str, list[Cell]] = {}
    for cell in honest_cells:
        participants.setdefault(json.dumps(list(cell.attack), sort_keys=True), []).append(cell)
    return participants


def _second_phase(layout: _Battery, worsts: list[_Point | None], honest_replications: dict[str, int]) -> list[battery.Group]:
    """Full disclosure at each row's worst point, with as many replications, and the honest participants
    (``honest_replications``: by cell key)."""
    counts: dict[str, int] = dict(honest_replications)
    for worst in worsts:
        if worst is not None:
            cell = layout.reference[_duel_key(worst.cell)]
            counts[cell.key] = max(counts.get(cell.key, 0), worst.replications)
    reference_cells = [cell for cell in layout.reference.values() if cell.key in counts]

    def fixed(group: list[Cell]) -> battery.Group:
        needed = max(counts[cell.key] for cell in group)
        return battery.Group(group, lambda rows: needed, at_most=needed)

    return [fixed(group) for group in runner.transcript_groups(reference_cells + layout.honest)]


def _attach_reference(battery_rows: list[dict[str, Any]], worsts: list[_Point | None], layout: _Battery,
                      rows: battery.Rows, confidence: float, criteria: dict[tuple[str, str], Criterion],
                      tau_in_unit: float) -> None:
    """Full disclosure's Δ (:meth:`Criterion.overstatement`, in the certificate's unit: τ there is
    ``tau_in_unit``) at each row's worst point (``worsts``, row by row), over as many replications."""
    for row, worst in zip(battery_rows, worsts):
        if worst is None:
            row["reference_delta"] = None
            continue
        reference_rows = rows[layout.reference[_duel_key(worst.cell)].key][: worst.replications]
        counted = [i for i, r in enumerate(reference_rows) if _counted(r)]
        reference = criteria[worst.family, REFERENCE]
        row["reference_delta"] = (_interval(reference.sides(reference_rows, counted)[0] / reference.tau * tau_in_unit,
                                            confidence) if counted else None)


def _ran_scenario(scenario: Scenario, worsts: list[_Point | None], mechanism: str, task_families: dict[str, dict[str, Any]],
                  replications: int, seed: int) -> Scenario:
    """The scenario of what ran: every certified point, full disclosure at the worst points (``worsts``), the honest matrix."""
    dump = scenario.model_dump(mode="json")
    matrix = []
    for table in dump["matrix"][:-1]:
        table["mechanisms"] = [entry for entry in table["mechanisms"] if entry["id"] == mechanism]
        matrix.append(table)
    for worst in worsts:
        if worst is not None and mechanism != REFERENCE:
            matrix.append({"tasks": [task_families[worst.family]], "mechanisms": [{"id": REFERENCE}],
                           "attacks": [{"id": worst.cell.attack[0], "params": _as_scenario_params(worst.params),
                                        "budget": worst.cell.budget,
                                        **({"accounts": worst.cell.accounts} if worst.cell.accounts > 1 else {}),
                                        **({"link": True} if worst.cell.link else {})}]})
    matrix.append(dump["matrix"][-1])
    unique = []
    for table in matrix:
        if table not in unique:
            unique.append(table)
    return _scenario(dump["name"], dump["description"], unique, replications, seed)


def _write_run_directory(directory: Path, scenario: Scenario, rows: battery.Rows, verdicts: dict[str, _Point],
                         seed: int, secret_seed: int | None) -> None:
    """Make the battery directory a run directory of what ran (``ladderlab report`` reads it): the
    manifest, and each cell's file with the replications its verdict used."""
    manifest_path = directory / "manifest.json"
    manifest_path.unlink(missing_ok=True)
    runner.prepare(scenario, directory, secret_seed)
    manifest = rundir.read_manifest(directory)
    for cell in cells(scenario):
        used = verdicts[cell.key].replications if cell.key in verdicts else None
        cell_rows = rows[cell.key][:used] if used else rows[cell.key]
        for record in runner.write_cells([cell], seed, {cell.key: cell_rows}, str(directory)):
            manifest["completed"][record["key"]] = record
    rundir.write_atomically(manifest_path, json.dumps(manifest, indent=2).encode())

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


def write_certificate(certificate: dict[str, Any], out: str | Path, text_for_people: str | None = None,
                      command: str | None = None) -> list[Path]:
    """Write the certificate as JSON to ``out`` and as Markdown beside it (``text_for_people``,
    by default :func:`markdown` of the certificate); return the paths. Given the ``command`` that
    made it, the Markdown ends with its stamp (:mod:`ladderlab.runs.page_stamps`): that command and the
    fingerprints of the code the certificate depends on, so ``ladderlab dev pages`` can tell when a
    page that includes it is stale.

    The two files are written all or nothing (:mod:`ladderlab.utils.atomic`): if writing fails
    (the disk filled up, the directory vanished), the previous certificate, if any, is left
    as it was, the new one is saved to a new file in the system's temporary directory if
    that can be written, and the ``OSError`` raised says where it went.
    """
    out = Path(out)
    text = json.dumps(finite_or_null(certificate), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    for_people = text_for_people or markdown(certificate)
    if command is not None and "code" in certificate:
        for_people = for_people.rstrip("\n") + "\n\n" + page_stamps.stamp(command, certificate["code"]) + "\n"
    try:
        write_files_atomically({out: text, out.with_suffix(".md"): for_people})
    except OSError as error:
        try:
            handle, rescue = tempfile.mkstemp(prefix="ladderlab-certificate-", suffix=".json")
            with os.fdopen(handle, "w", encoding="utf-8") as rescue_file:
                rescue_file.write(text)
        except OSError as rescue_error:
            raise OSError(f"could not write the certificate to {out} ({error.strerror or error}), nor to the "
                          f"temporary directory ({rescue_error.strerror or rescue_error}); the files at {out} "
                          "were left as they were") from error
        raise OSError(f"could not write the certificate to {out} ({error.strerror or error}); the files there were "
                      f"left as they were, and the new certificate was saved to {rescue}") from error
    return [out, out.with_suffix(".md")]


def _outlook(measures: dict[str, Any], criterion: Criterion) -> dict[str, Any]:
    """An inconclusive point's outlook (:func:`replications_to_decide`) from its measures: the shares
    of its counted replications (finished or crashed) beyond τ and ε."""
    outlook = replications_to_decide(measures["p_delta"]["estimate"], measures["p_optimism"]["estimate"],
                                     measures["n_ok"] + measures["n_crashed"], criterion.delta, criterion.level)
    return {"verdict": outlook.verdict, "replications": outlook.replications}


def _link_text() -> str:
    """What the certificate says of the linking wrapper (:mod:`ladderlab.engines.linking`)."""
    rule = LinkRule()
    return (f"accounts whose submissions differ on fewer than {rule.min_disagreement:g} of the holdout rows share one "
            f"mechanism state and one budget from the submission that links them; the decision never depends on which "
            f"rows are public, and honest accounts whose submissions differ on at least that share are never linked")
