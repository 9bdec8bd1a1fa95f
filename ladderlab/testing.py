"""Conformance checks for mechanism, attack and task plugins, in the manner of scikit-learn's ``check_estimator``.

``plugin_checks(plugin)`` yields the ``(name, check)``
pairs; ``check_mechanism`` / ``check_attack`` / ``check_task`` run them all, raise the first
failure, and on success print and return a :class:`ConformanceReport` of what passed. In a
test suite, one test per check::

    from ladderlab.testing import parametrize_checks

    @parametrize_checks(MyMechanism(), MyAttack())
    def test_conforms(plugin, check):
        check(plugin)

A plugin that is expected to fail a check says so, with the reason, in its class
attribute ``expected_check_failures = {"check name": "why"}``; the check is then
reported as an expected failure (``xfail``) instead of run.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)
from scipy import stats
from sklearn.base import clone

from ladderlab.attack import Attack
from ladderlab.board import Board, BudgetExceeded, Leaderboard
from ladderlab.mechanism import Mechanism
from ladderlab.params import describe
from ladderlab.plugin import Plugin
from ladderlab.registry import MECHANISMS, TASKS
from ladderlab.runs.duel import play
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import PublicData, Split, Task

Check = Callable[[Any], None]
CHECK_SIZE = 60
"""Holdout size of the conformance checks: small, so that every check takes milliseconds."""


class ConformanceError(AssertionError):
    """A plugin broke a conformance check; the message names the check and what went wrong."""


def _labels(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=CHECK_SIZE)


def _bound(mechanism: Mechanism, seed: int = 1) -> Mechanism:
    return clone(mechanism).bind(_labels(), "squared", np.random.default_rng(seed))


def _submissions(seed: int = 2, m: int = 25) -> np.ndarray:
    """Predictions of varying quality: a random share of each is the truth plus noise."""
    rng = np.random.default_rng(seed)
    labels = _labels()
    quality = rng.uniform(0, 1, (m, 1))
    return quality * labels + (1 - quality) * rng.normal(size=(m, CHECK_SIZE))


def check_get_params_round_trip(plugin: Mechanism | Attack | Task) -> None:
    """Parameters live in ``__init__`` only: ``get_params`` rebuilds an equal plugin."""
    params = plugin.get_params()
    rebuilt = type(plugin)(**params)
    if rebuilt.get_params() != params or clone(plugin).get_params() != params:
        raise ConformanceError(f"{plugin.id}: get_params() does not round-trip: {params} vs {rebuilt.get_params()}")


def check_parameters_declared(plugin: Plugin) -> None:
    """Every ``__init__`` parameter has an entry in ``_parameter_constraints`` (and nothing
    else does), every default satisfies its entry, and so do the current values."""
    cls = type(plugin)
    declared = getattr(cls, "_parameter_constraints", {})
    defaults = cls.parameter_defaults()
    if set(declared) != set(defaults):
        undeclared, unknown = sorted(set(defaults) - set(declared)), sorted(set(declared) - set(defaults))
        raise ConformanceError(
            f"{plugin.id}: _parameter_constraints must declare exactly the __init__ parameters"
            + (f"; undeclared: {', '.join(undeclared)}" if undeclared else "")
            + (f"; declared but not parameters: {', '.join(unknown)}" if unknown else "")
        )
    for name, default in defaults.items():
        if not any(default is None if c is None else c.accepts(default) for c in declared[name]):
            raise ConformanceError(
                f"{plugin.id}: the default {name}={default!r} is not {describe(declared[name])}"
            )
    try:
        plugin.validate_params()
    except ValueError as error:
        raise ConformanceError(f"{plugin.id}: its parameters fail their own checks: {error}") from error


def check_same_seed_same_transcript(mechanism: Mechanism) -> None:
    """Bound with equal seeds, the mechanism releases bit-identical scores, batched or one by one."""
    predictions = _submissions()
    first = _bound(mechanism).submit_many(predictions)
    second = _bound(mechanism).submit_many(predictions)
    if not np.array_equal(first, second):
        raise ConformanceError(
            f"{mechanism.id}: rule 'same seed, same transcript' broken: two mechanisms bound with "
            "the same seed released different scores"
        )


def _run_plugin(plugin: Mechanism | Attack | Task) -> np.ndarray:
    """One standard run: the mechanism's releases for the standard submissions, or the
    transcript of the attack played against ``kaggle``."""
    if isinstance(plugin, Mechanism):
        return _bound(plugin).submit_many(_submissions())
    if isinstance(plugin, Task):
        split = plugin.split(np.random.default_rng(4))
        return np.concatenate([split.y_holdout, split.public_rows, split.public.X_holdout.ravel()])
    return _play_attack(plugin)[0]


GLOBAL_SEEDS = (20150204, 20160712)
"""Two arbitrary seeds for numpy's and Python's global generators, set before each run of the
global-RNG check, so that its outcome does not depend on what earlier checks left behind."""


def check_leaves_global_rng_alone(plugin: Mechanism | Attack | Task) -> None:
    """Neither numpy's nor Python's global random state is read or changed.

    The plugin runs twice, from two different global states that this check sets (and
    restores afterwards): each global state must be untouched after the run, and the two
    runs must give the same releases. A plugin that reseeds the global generator, draws
    from it, or depends on it is caught whatever ran before this check. A first, unchecked run
    lets the plugin import what it imports lazily: importing scikit-learn draws from Python's
    global generator, which is the library's doing, not the plugin's.
    """
    saved_numpy, saved_python = np.random.get_state(), random.getstate()
    try:
        _run_plugin(plugin)
        runs = []
        for seed in GLOBAL_SEEDS:
            np.random.seed(seed)
            random.seed(seed)
            numpy_state, python_state = np.random.get_state(), random.getstate()
            runs.append(_run_plugin(plugin))
            after = np.random.get_state()
            changed = any(
                not np.array_equal(a, b) if isinstance(a, np.ndarray) else a != b
                for a, b in zip(numpy_state, after)
            )
            if changed or random.getstate() != python_state:
                raise ConformanceError(
                    f"{plugin.id}: rule 'leave the global random state alone' broken: numpy's or "
                    "Python's global generator was seeded or drawn from; draw from the Generator "
                    "you are given"
                )
        if not np.array_equal(runs[0], runs[1]):
            raise ConformanceError(
                f"{plugin.id}: rule 'leave the global random state alone' broken: its results depend "
                "on the global random state"
            )
    finally:
        np.random.set_state(saved_numpy)
        random.setstate(saved_python)


REPEATS = 3
"""Copies of each row in the ``repeats`` part of ``check_batch_equals_loop``."""


def check_batch_equals_loop(mechanism: Mechanism) -> None:
    """``submit_many`` on a batch releases exactly what ``submit`` releases row by row, on the
    same seed (random streams included); so does ``submit_many(P, repeats=3)`` against
    ``submit`` called three times on each row."""
    predictions = _submissions()
    one_by_one = _bound(mechanism)
    looped = np.array([one_by_one.submit(row) for row in predictions])
    _same_releases(mechanism, "submit_many equals a loop of submit", _bound(mechanism).submit_many(predictions),
                   looped, "in a batch")
    one_by_one = _bound(mechanism)
    looped = np.array([one_by_one.submit(row) for row in predictions for _ in range(REPEATS)])
    _same_releases(mechanism, f"submit_many(P, repeats={REPEATS}) equals submitting each row {REPEATS} times",
                   _bound(mechanism).submit_many(predictions, repeats=REPEATS), looped, "as a repeated row")


def _same_releases(mechanism: Mechanism, rule: str, batched: np.ndarray, looped: np.ndarray, how: str) -> None:
    if not np.array_equal(batched, looped, equal_nan=True):
        first = int(np.flatnonzero(~((batched == looped) | (np.isnan(batched) & np.isnan(looped))))[0])
        raise ConformanceError(
            f"{mechanism.id}: rule '{rule}' broken: submission {first} "
            f"released {batched[first]!r} {how} but {looped[first]!r} on its own"
        )


def check_picklable(mechanism: Mechanism) -> None:
    """A bound mechanism pickles mid-stream and its copy continues exactly as the original."""
    predictions = _submissions()
    original = _bound(mechanism)
    original.submit_many(predictions[:10])
    try:
        restored = pickle.loads(pickle.dumps(original))
    except Exception as error:
        raise ConformanceError(f"{mechanism.id}: cannot be pickled: {error}") from error
    if not np.array_equal(original.submit_many(predictions[10:]), restored.submit_many(predictions[10:])):
        raise ConformanceError(f"{mechanism.id}: the unpickled copy releases different scores")


def check_releases_from_scores(mechanism: Mechanism) -> None:
    """A mechanism that declares ``scores_only`` releases from the exact scores alone, bound to
    stand-in labels (zeros), exactly what it releases for the predictions on the true labels."""
    predictions = _submissions()
    scores = get_scorer("squared").score_many(_labels(), predictions)
    rule = "scores_only: releases from exact scores equal releases from predictions"
    stand_in = clone(mechanism).bind(np.zeros(CHECK_SIZE), "squared", np.random.default_rng(1))
    try:
        replayed = stand_in.release_scores(scores)
    except Exception as error:
        raise ConformanceError(f"{mechanism.id}: rule '{rule}' broken: release_scores raised {error!r}") from error
    _same_releases(mechanism, rule, replayed, _bound(mechanism).submit_many(predictions), "from its score")


def check_stateless(mechanism: Mechanism) -> None:
    """A mechanism that declares ``stateless`` releases the same value for a prediction whatever
    came before it (the standard submissions, then again in reverse order after them), and that
    value is its :meth:`~ladderlab.mechanism.Mechanism.release_recipe` applied to the exact score
    (:func:`ladderlab.engines.stateless.release`): what an export to a scorer without memory computes."""
    from ladderlab.engines.stateless import release

    predictions = _submissions()
    bound = _bound(mechanism)
    first = bound.submit_many(predictions)
    again = bound.submit_many(predictions[::-1])[::-1]
    _same_releases(mechanism, "stateless: a prediction gets the same release whatever came before", again, first,
                   "after the others")
    recipe = bound.release_recipe()
    scores = get_scorer("squared").score_many(_labels(), predictions)
    _same_releases(mechanism, "stateless: the release is the release recipe's", release(scores, predictions, recipe),
                   first, "by its recipe")


BAD_SUBMISSIONS = {
    "wrong length": np.zeros((1, CHECK_SIZE + 1)),
    "not finite": np.full((1, CHECK_SIZE), np.nan),
    "three dimensions": np.zeros((1, 1, CHECK_SIZE)),
}


def check_bad_input_changes_nothing(mechanism: Mechanism) -> None:
    """A bad submission raises ValueError and leaves the mechanism as it was."""
    predictions = _submissions()
    clean, probed = _bound(mechanism), _bound(mechanism)
    clean.submit_many(predictions[:10])
    probed.submit_many(predictions[:10])
    for what, bad in BAD_SUBMISSIONS.items():
        try:
            probed.submit_many(bad)
        except ValueError:
            continue
        raise ConformanceError(f"{mechanism.id}: a submission with {what} was accepted")
    if not np.array_equal(clean.submit_many(predictions[10:]), probed.submit_many(predictions[10:])):
        raise ConformanceError(f"{mechanism.id}: rejected submissions changed later releases")


class AdaptiveAnalyst(RuleBasedStateMachine):
    """An analyst who picks each next submission from the released scores (Blum & Hardt §2):
    it perturbs its best-looking prediction, keeps what looks better, and sometimes
    resubmits or submits fresh noise. The mechanism under test is a class attribute."""

    mechanism: Mechanism

    def __init__(self) -> None:
        super().__init__()
        self.bound = _bound(self.mechanism)
        self.sign = self.bound.scorer_.sign
        self.best = np.zeros(CHECK_SIZE)
        self.best_released = np.inf
        self.releases: list[float] = []

    def _submit(self, prediction: np.ndarray) -> None:
        released = float(self.bound.submit(prediction))
        self.releases.append(released)
        if self.sign * released < self.best_released:
            self.best, self.best_released = prediction, self.sign * released

    @rule(seed=st.integers(0, 2**32 - 1), scale=st.floats(0.01, 2.0))
    def perturb_the_best(self, seed: int, scale: float) -> None:
        self._submit(self.best + scale * np.random.default_rng(seed).normal(size=CHECK_SIZE))

    @rule()
    def resubmit_the_best(self) -> None:
        self._submit(self.best.copy())

    @rule(seed=st.integers(0, 2**32 - 1))
    def fresh_noise(self, seed: int) -> None:
        self._submit(np.random.default_rng(seed).normal(size=CHECK_SIZE))

    @invariant()
    def releases_are_finite(self) -> None:
        if not np.isfinite(self.releases).all():
            raise ConformanceError(f"{self.mechanism.id}: released a non-finite score")

    @invariant()
    def declared_monotone_releases_never_get_worse(self) -> None:
        if self.mechanism.monotone and len(self.releases) > 1:
            oriented = self.sign * np.asarray(self.releases)
            if np.any(np.diff(oriented) > 1e-12):
                raise ConformanceError(f"{self.mechanism.id}: declares monotone releases, but a release got worse")


def check_against_an_adaptive_analyst(mechanism: Mechanism) -> None:
    """Hypothesis-driven adaptive analysts: releases stay finite, and never get worse when
    the mechanism declares ``monotone = True``."""
    machine = type("AnalystOf" + type(mechanism).__name__, (AdaptiveAnalyst,), {"mechanism": mechanism})
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=15, stateful_step_count=20, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )


def _split(attack: Attack) -> Split:
    """A small task the attack can play: a null Gaussian regression for regression attacks,
    otherwise the first of random labels (0/1 loss) and random labels scored by log loss."""
    if attack.check_task is not None:
        splits = [TASKS.make(attack.check_task[0], **attack.check_task[1]).split(np.random.default_rng(0))]
    elif "regression" in attack.task_types:
        splits = [TASKS.make("gaussian-regression", n_samples=3 * CHECK_SIZE, n_features=40).split(np.random.default_rng(0))]
    else:
        splits = _random_label_splits()
    return next((split for split in splits if attack.incompatibility(split.public) is None), splits[0])


def _random_label_splits() -> list[Split]:
    """Random labels scored by the 0/1 loss, and by the log loss."""
    candidates = [
        TASKS.make("random-labels", n_public=CHECK_SIZE, n_holdout=3 * CHECK_SIZE),
        TASKS.make("random-labels-log-loss", preset=None, n_public=CHECK_SIZE, n_holdout=3 * CHECK_SIZE, n_classes=2),
    ]
    return [task.split(np.random.default_rng(0)) for task in candidates]


def _play_attack(attack: Attack, budget: int | None = None, seed: int = 3) -> tuple[np.ndarray, Split, list[Any]]:
    split = _split(attack)
    received: list[Any] = []
    spy = copy.deepcopy(attack)
    original_run = spy.run

    def run(board: Board, data: Any, rng: np.random.Generator) -> np.ndarray:
        received.extend([board, data, rng])
        return original_run(board, data, rng)

    spy.run = run  # type: ignore[method-assign]
    result = play(split, MECHANISMS.make("kaggle"), spy, np.random.default_rng(seed), np.random.default_rng(seed + 1),
                  budget=budget)
    received.append(spy)
    return result.released, split, received


def check_attack_same_seed_same_transcript(attack: Attack) -> None:
    """Played with equal seeds, the attack submits exactly the same transcript."""
    first, _, _ = _play_attack(attack)
    second, _, _ = _play_attack(attack)
    if not np.array_equal(first, second):
        raise ConformanceError(f"{attack.id}: the same seed gave a different transcript")


def check_attack_respects_the_budget(attack: Attack) -> None:
    """With a budget of 7 submissions the attack stops in time instead of overrunning it."""
    try:
        released, _, _ = _play_attack(attack, budget=7)
    except BudgetExceeded as error:
        raise ConformanceError(f"{attack.id}: exceeded its budget: {error}") from error
    if released.size > 8:  # the budget plus the organiser's scoring of the final prediction
        raise ConformanceError(f"{attack.id}: made {released.size - 1} submissions on a budget of 7")


STRENGTH_GRID_CALLS = tuple((budget, n) for budget in (1, 10, 100, 1000) for n in (20, 200, 4000))
"""The budgets and public sizes at which :func:`check_attack_strength_grid` asks for the strength grid."""


def check_attack_strength_grid(attack: Attack) -> None:
    """At every budget and size of :data:`STRENGTH_GRID_CALLS`, ``strength_grid`` gives a non-empty list of
    parameter dicts, each a valid setting of the attack, none twice (``Attack.checked_strength_grid``)."""
    for budget, n in STRENGTH_GRID_CALLS:
        try:
            type(attack).checked_strength_grid(budget, n)
        except ValueError as error:
            raise ConformanceError(str(error)) from None


def check_attack_never_holds_labels(attack: Attack) -> None:
    """No array reachable from the attack, or from anything it was given, is or equals the
    holdout labels."""
    _, split, received = _play_attack(attack)
    labels = [split.y_holdout, split.y_public, split.y_final]
    for array in (a for obj in received for a in reachable_arrays(obj, private=True)):
        for y in labels:
            if np.shares_memory(array, y) or (array.shape == y.shape and np.array_equal(array, y)):
                raise ConformanceError(f"{attack.id}: an array it can reach holds the holdout labels")


def watched_board(board: Board, reads: list[str]) -> Any:
    """A stand-in for ``board`` with only its public API; every attempt to read a private
    attribute (``_leaderboard``, ``_transcript``, ...) is recorded in ``reads`` and fails.

    The real board lives in the closure, not in an attribute, so ``vars``, ``__slots__``
    and ``object.__getattribute__`` lead nowhere either.
    """

    class WatchedBoard:
        __slots__ = ()

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                reads.append(name)
                raise AttributeError(f"the board has no public attribute {name!r}")
            if name.startswith("__"):
                raise AttributeError(name)
            return getattr(board, name)

        def __setattr__(self, name: str, value: Any) -> None:
            reads.append(name)
            raise AttributeError(f"the board's attributes cannot be set ({name!r})")

    WatchedBoard.__name__ = WatchedBoard.__qualname__ = "Board"
    return WatchedBoard()


def check_attack_keeps_to_the_public_board(attack: Attack) -> None:
    """The attack uses only the board's public API: it never reads a private attribute
    (``board._leaderboard`` leads to the mechanism and the labels in the same process)."""
    split = _split(attack)
    attack = copy.deepcopy(attack)
    attack.validate_params()
    mechanism = MECHANISMS.make("kaggle").bind(split.y_public, split.public.scorer, np.random.default_rng(3),
                                               classes=split.public.classes)
    board = Board(Leaderboard(mechanism, split.public_rows, split.final_rows, split.y_final))
    reads: list[str] = []
    try:
        attack.run(watched_board(board, reads), split.public, np.random.default_rng(4))
    except AttributeError:
        if not reads:
            raise
    if reads:
        raise ConformanceError(f"{attack.id}: reads the board's private attributes {sorted(set(reads))}; in the "
                               "organiser's process they lead to the labels (only isolation='process' is a boundary)")


CHANCE_FAILURE = 1e-9
"""Probability that ``private_score_at_chance`` fails an attack that holds no label (exact binomial)."""


def check_attack_private_score_at_chance(attack: Attack) -> None:
    """On random labels, the attack's final prediction is at chance on the private (final) set.

    An attack that holds only the board and the public data cannot know the final labels:
    they are independent of all it sees, so its final prediction errs on Binomial(n, 1/2) of
    the n final rows, exactly, whatever it submitted. An attack that found the labels in its
    process (through ``object.__getattribute__``, ``gc``, frames, ``sys.modules`` or the
    process's memory) errs on almost none and fails, with a false alarm probability below
    ``CHANCE_FAILURE``. Attacks that play no classification task are not checked (no exact
    bound). A hostile attack
    can behave while it is checked: only ``isolation="process"`` is a boundary.
    """
    split = next((split for split in _random_label_splits() if attack.incompatibility(split.public) is None), None)
    if split is None:
        return
    kind = get_scorer(split.public.scorer).prediction_kind
    attack = copy.deepcopy(attack)
    attack.validate_params()
    mechanism = MECHANISMS.make("kaggle").bind(split.y_public, split.public.scorer, np.random.default_rng(3),
                                               classes=split.public.classes)
    board = Board(Leaderboard(mechanism, split.public_rows, split.final_rows, split.y_final))
    prediction = np.asarray(attack.run(board, split.public, np.random.default_rng(4)))
    final = prediction[split.final_rows]
    if kind is PredictionKind.PROBABILITIES:  # the likeliest class
        guesses = board.classes[np.argmax(final, axis=1)]
    elif kind is PredictionKind.PROBABILITY:  # P(y = the larger class)
        guesses = board.classes[(final > 0.5).astype(int)]
    else:
        guesses = final
    errors, n = int(np.sum(guesses != split.y_final)), split.final_rows.size
    low = int(stats.binom.ppf(CHANCE_FAILURE / 2, n, 0.5))
    if not low <= errors <= n - low:
        raise ConformanceError(
            f"{attack.id}: its final prediction errs on {errors} of {n} random private labels, where an attack "
            f"without labels errs on {low} to {n - low} (all but a {CHANCE_FAILURE:g} chance): it reached the "
            "labels inside its process. Passing this check proves nothing about hostile code; only "
            "isolation='process' is a boundary"
        )


def safe_getattr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name)
    except Exception:  # properties that need optional packages (e.g. Generator.cffi)
        return None


def reachable_arrays(root: Any, depth: int = 4, private: bool = False) -> list[np.ndarray]:
    """Every numpy array reachable from ``root`` through attributes (public ones only, unless
    ``private``) and containers, up to ``depth`` steps."""
    seen, stack, found = set(), [(root, 0)], []
    while stack:
        obj, level = stack.pop()
        if id(obj) in seen or level > depth:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            found.append(obj)
            continue
        if isinstance(obj, (str, bytes, int, float, type(None), np.random.Generator)):
            continue
        if isinstance(obj, dict):
            children = list(obj.values())
        elif isinstance(obj, (list, tuple, set)):
            children = list(obj)
        else:
            names = set(vars(obj)) if private and hasattr(obj, "__dict__") else set()
            names |= {name for name in dir(obj) if not name.startswith("_")}
            children = [safe_getattr(obj, name) for name in names]
        stack.extend((child, level + 1) for child in children if not callable(child))
    return found


def _splits(task: Task, seed: int = 5) -> tuple[Split, Split]:
    return task.split(np.random.default_rng(seed)), task.split(np.random.default_rng(seed))


def check_task_same_seed_same_split(task: Task) -> None:
    """Two draws with equal Generators give bit-identical splits: labels, rows and public data."""
    first, second = _splits(task)
    pairs = [(first.y_holdout, second.y_holdout), (first.public_rows, second.public_rows),
             (first.final_rows, second.final_rows)]
    pairs += [(getattr(first.public, name), getattr(second.public, name)) for name in ("X_train", "y_train", "X_holdout")]
    if not all(np.array_equal(a, b) for a, b in pairs):
        raise ConformanceError(f"{task.id}: rule 'same seed, same transcript' broken: two splits drawn with the same "
                               "seed differ")


def check_task_split_is_consistent(task: Task) -> None:
    """The public and final rows are disjoint, non-empty rows of the holdout; the holdout inputs
    have a row per label; the scorer suits the task type; labels lie in the label set; a
    declared prediction range is [low, high] with low < high."""
    split = task.split(np.random.default_rng(6))
    public, n = split.public, split.y_holdout.size
    rows = np.concatenate([split.public_rows, split.final_rows])
    problems = []
    if split.public_rows.size == 0 or split.final_rows.size == 0:
        problems.append("the public or the final set is empty")
    if np.unique(rows).size != rows.size or rows.min(initial=0) < 0 or rows.max(initial=0) >= n:
        problems.append("the public and final rows overlap or lie outside the holdout")
    if public.X_holdout.shape[0] != n or public.X_train.shape[0] != public.y_train.size:
        problems.append(f"the holdout inputs have {public.X_holdout.shape[0]} rows for {n} labels, or the training "
                        f"inputs {public.X_train.shape[0]} for {public.y_train.size} labels")
    if public.task_type == "regression" and public.classes is not None:
        problems.append("a regression task declares a label set")
    if public.task_type == "classification" and (public.classes is None or not np.isin(split.y_holdout, public.classes).all()):
        problems.append("a holdout label is not in the label set")
    try:
        get_scorer(public.scorer)
    except ValueError as error:
        problems.append(str(error))
    if public.prediction_range is not None and not public.prediction_range[0] < public.prediction_range[1]:
        problems.append(f"prediction_range {public.prediction_range} is not [low, high] with low < high")
    if problems:
        raise ConformanceError(f"{task.id}: inconsistent split: {'; '.join(problems)}")


def check_task_public_data_hold_no_labels(task: Task) -> None:
    """What an attack receives (:class:`~ladderlab.tasks.PublicData`) holds no holdout label:
    no array reachable from it is, shares memory with, or equals the holdout labels or their
    public or final part, and the public rows are disclosed only as the task says (None, or
    exactly the split's public rows)."""
    split = task.split(np.random.default_rng(7))
    secrets = [split.y_holdout, split.y_public, split.y_final]
    for array in reachable_arrays(split.public, private=True):
        if any(np.shares_memory(array, secret) or (array.shape == secret.shape and np.array_equal(array, secret))
               for secret in secrets):
            raise ConformanceError(f"{task.id}: the public data hold the holdout labels (an array of shape {array.shape})")
    disclosed = split.public.public_rows
    if disclosed is not None and not np.array_equal(disclosed, split.public_rows):
        raise ConformanceError(f"{task.id}: the public data disclose rows that are not the public rows")
    unexpected = {field.name for field in dataclasses.fields(PublicData)} - PUBLIC_FIELDS
    if unexpected:
        raise ConformanceError(f"PublicData has fields this check does not know: {sorted(unexpected)}; say here "
                               "why they cannot carry holdout labels")


PUBLIC_FIELDS = frozenset({"X_train", "y_train", "X_holdout", "task_type", "scorer", "classes", "public_rows",
                           "prediction_range"})
"""The fields of :class:`~ladderlab.tasks.PublicData` that :func:`check_task_public_data_hold_no_labels` knows:
training data, holdout inputs, the metric, the label set, the disclosed public rows and the prediction range."""


MECHANISM_CHECKS: dict[str, Check] = {
    "parameters_declared": check_parameters_declared,
    "get_params_round_trip": check_get_params_round_trip,
    "leaves_global_rng_alone": check_leaves_global_rng_alone,
    "same_seed_same_transcript": check_same_seed_same_transcript,
    "batch_equals_loop": check_batch_equals_loop,
    "picklable": check_picklable,
    "bad_input_changes_nothing": check_bad_input_changes_nothing,
    "adaptive_analyst": check_against_an_adaptive_analyst,
}
TASK_CHECKS: dict[str, Check] = {
    "parameters_declared": check_parameters_declared,
    "get_params_round_trip": check_get_params_round_trip,
    "leaves_global_rng_alone": check_leaves_global_rng_alone,
    "same_seed_same_split": check_task_same_seed_same_split,
    "split_is_consistent": check_task_split_is_consistent,
    "public_data_hold_no_labels": check_task_public_data_hold_no_labels,
}
ATTACK_CHECKS: dict[str, Check] = {
    "parameters_declared": check_parameters_declared,
    "get_params_round_trip": check_get_params_round_trip,
    "leaves_global_rng_alone": check_leaves_global_rng_alone,
    "same_seed_same_transcript": check_attack_same_seed_same_transcript,
    "respects_the_budget": check_attack_respects_the_budget,
    "strength_grid": check_attack_strength_grid,
    "keeps_to_the_public_board": check_attack_keeps_to_the_public_board,
    "never_holds_labels": check_attack_never_holds_labels,
    "private_score_at_chance": check_attack_private_score_at_chance,
}


def plugin_checks(plugin: Mechanism | Attack | Task) -> Iterator[tuple[str, Check]]:
    """The checks that apply to ``plugin``, as (name, check) pairs."""
    if not isinstance(plugin, (Mechanism, Attack, Task)):
        raise TypeError(f"expected a Mechanism, an Attack or a Task, got {type(plugin).__name__}")
    yield from (MECHANISM_CHECKS if isinstance(plugin, Mechanism) else
                TASK_CHECKS if isinstance(plugin, Task) else ATTACK_CHECKS).items()
    if isinstance(plugin, Mechanism) and plugin.scores_only:
        yield "releases_from_scores", check_releases_from_scores
    if isinstance(plugin, Mechanism) and plugin.stateless:
        yield "stateless", check_stateless


def expected_failure(plugin: Mechanism | Attack | Task, name: str) -> str | None:
    """Why ``plugin`` declares that it fails check ``name`` (None: it should pass)."""
    return getattr(plugin, "expected_check_failures", {}).get(name)


@dataclass(frozen=True)
class ConformanceReport:
    """What :func:`check_mechanism` or :func:`check_attack` ran: the checks that passed, and the
    checks the plugin declares it fails (``expected_check_failures``), with their reasons."""

    plugin: str
    passed: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        lines = [f"{self.plugin} passed {len(self.passed)} conformance checks: {', '.join(self.passed)}"]
        lines += [f"  not run, declared as failing: {name} ({reason})" for name, reason in self.skipped]
        return "\n".join(lines)


def _check_all(plugin: Mechanism | Attack | Task, kind: type, quiet: bool) -> ConformanceReport:
    if not isinstance(plugin, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(plugin).__name__}")
    return run_checks(plugin, plugin_checks(plugin), lambda name: expected_failure(plugin, name), quiet)


def run_checks(plugin: Any, checks: Iterable[tuple[str, Callable[[Any], None]]],
               expected_failure: Callable[[str], str | None], quiet: bool) -> ConformanceReport:
    """Run each named check on ``plugin`` but those ``expected_failure`` gives a reason for (skipped, with it);
    raise the first failure; print (unless ``quiet``) and return what passed."""
    passed, skipped = [], []
    for name, check in checks:
        reason = expected_failure(name)
        if reason is None:
            check(plugin)
            passed.append(name)
        else:
            skipped.append((name, reason))
    report = ConformanceReport(repr(plugin), tuple(passed), tuple(skipped))
    if not quiet:
        print(report)
    return report


def check_mechanism(mechanism: Mechanism, quiet: bool = False) -> ConformanceReport:
    """Run every mechanism check (except those the plugin declares it fails); raise the first failure.

    On success, print (unless ``quiet``) and return what passed."""
    return _check_all(mechanism, Mechanism, quiet)


def check_attack(attack: Attack, quiet: bool = False) -> ConformanceReport:
    """Run every attack check (except those the plugin declares it fails); raise the first failure.

    On success, print (unless ``quiet``) and return what passed. The checks catch honest
    mistakes and the usual in-process routes to the labels (private attributes, and through
    ``private_score_at_chance`` any route that yields them). They are no defence against hostile
    code, which can behave while it is checked: run attacks you did not write with
    ``isolation="process"`` (docs/isolation.md).
    """
    return _check_all(attack, Attack, quiet)


def check_task(task: Task, quiet: bool = False) -> ConformanceReport:
    """Run every task check (except those the plugin declares it fails); raise the first failure.

    On success, print (unless ``quiet``) and return what passed."""
    return _check_all(task, Task, quiet)


def parametrize_checks(*plugins: Mechanism | Attack | Task) -> Callable[[Callable[..., Any]], Any]:
    """A pytest decorator: one test per plugin × check, with arguments ``plugin`` and ``check``;
    declared failures are marked ``xfail`` with their reason."""
    import pytest

    cases = []
    for plugin in plugins:
        for name, check in plugin_checks(plugin):
            reason = expected_failure(plugin, name)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            cases.append(pytest.param(plugin, check, id=f"{plugin.id}-{name}", marks=marks))
    return pytest.mark.parametrize(("plugin", "check"), cases)


__all__ = [
    "ConformanceError",
    "check_attack",
    "check_mechanism",
    "check_task",
    "check_parameters_declared",
    "parametrize_checks",
    "plugin_checks",
    "reachable_arrays",
]
