"""The base class of attacks: adaptive participants who hold a Board and public data only.

``run(board, data, rng)`` plays against the leaderboard through ``board`` and returns
the attack's final whole-holdout prediction, which the organiser then scores on the
public leaderboard and on the final set. An attack never sees holdout labels.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ladderlab.board import Board
from ladderlab.naming import unknown_name_error
from ladderlab.plugin import Plugin
from ladderlab.scoring import PredictionKind
from ladderlab.tasks import PublicData, TaskType

SUBMISSION_CHUNK_ELEMENTS = 1 << 22
"""The most prediction values an attack builds for one ``submit_many`` call (32 MiB of
float64): a batch stays below the size at which freed memory goes back to the system
(:mod:`ladderlab.utils.memory`), and a board's result does not depend on how it is batched."""

FloatArray = NDArray[np.float64]


def random_predictions(kind: PredictionKind, classes: FloatArray, shape: int | tuple[int, ...],
                       rng: np.random.Generator) -> FloatArray:
    """Predictions drawn without reading anything: labels uniform over ``classes``, probabilities
    uniform on [0, 1], class-probability rows flat-Dirichlet, real values standard normal. ``shape``
    is the holdout size for one prediction vector, or (k, holdout size) for k of them."""
    if kind is PredictionKind.LABEL:
        return classes[rng.integers(0, classes.size, shape)]
    if kind is PredictionKind.PROBABILITY:
        return rng.uniform(0.0, 1.0, shape)
    if kind is PredictionKind.PROBABILITIES:
        return rng.dirichlet(np.ones(classes.size), shape)
    return rng.standard_normal(shape)


def shared_identity(attack_id: str, params: dict[str, Any], final_only: frozenset[str]) -> tuple[str, dict[str, Any]]:
    """An attack's identity for its random streams and its transcript: its id and its parameters
    without ``final_only`` ones, so duels that differ only in those share one transcript."""
    return attack_id, {name: value for name, value in params.items() if name not in final_only}


class Attack(Plugin):
    """An adaptive participant."""

    task_types: ClassVar[frozenset[TaskType]] = frozenset({"classification", "regression"})
    """The kinds of task the attack can play."""
    expected_check_failures: ClassVar[dict[str, str]] = {}
    """Conformance checks (``ladderlab.testing``) this attack is known to fail, with why."""
    final_only_params: ClassVar[frozenset[str]] = frozenset()
    """Parameters that change only the final prediction, never a submission (declared by a
    :class:`FinalChoiceAttack`): duels that differ only in them share one transcript
    (:mod:`ladderlab.runs.sharing`)."""
    honest: ClassVar[bool] = False
    """True for an honest participant, not an attack (``honest``, the natural analysts):
    competitions count it in the honest utility, and ``ladderlab certify`` leaves it out
    of its attack battery."""
    check_task: ClassVar[tuple[str, dict[str, Any]] | None] = None
    """A small task (id, parameters) for the conformance checks, when the default ones (random
    labels, null Gaussian regression) do not suit the attack."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.final_only_params and not issubclass(cls, FinalChoiceAttack):
            raise TypeError(f"{cls.__name__} declares final_only_params: derive it from FinalChoiceAttack "
                            "(play and final_prediction instead of run)")

    def identity(self) -> tuple[str, dict[str, Any]]:
        """What names the attack's random stream and its transcript: its id and parameters but its
        ``final_only_params`` (the same whether the attack plays in this process or its own)."""
        return shared_identity(self.id, self.get_params(), self.final_only_params)

    def incompatibility(self, data: PublicData) -> str | None:
        """Why the attack cannot play on ``data`` (None: it can). The runner records it as skipped."""
        if data.task_type not in self.task_types:
            return f"attack {self.id!r} plays {' or '.join(sorted(self.task_types))} tasks, not {data.task_type}"
        return None

    def check_params_for(self, data: PublicData) -> None:
        """Raise ``ValueError`` naming a parameter that cannot hold on ``data`` (a block of more rows
        than the holdout has): refused before any duel, never clamped and recorded as given."""

    def max_submissions(self, data: PublicData) -> int | None:
        """At most how many submissions ``run`` makes on ``data`` when the budget allows any
        number (None: it does not say). Sizes a run before it starts (:mod:`ladderlab.runs.workload`);
        a budget caps it further."""
        return None

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        """Parameters that let the attack use a budget of ``budget`` submissions (for
        ``ladderlab certify``); by default none, for attacks that read ``board.remaining``."""
        return {}

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """The parameter settings to try at a budget of ``budget`` submissions on ``n``
        public holdout points, from weaker to stronger; ``certify`` reports an attack's
        worst case over them. Each entry includes what ``budget_params`` gives. By
        default the one setting of ``budget_params``."""
        return [cls.budget_params(budget)]

    @classmethod
    def checked_strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        """:meth:`strength_grid` at ``budget`` and ``n``, checked: a non-empty list of parameter dicts, each
        naming parameters of the attack with values it admits (``_parameter_constraints`` and its own
        checks), no setting twice (defaults included); else a ``ValueError`` naming the attack, the call
        and the entry."""
        call = f"attack {cls.id!r}: strength_grid({budget}, {n})"
        grid = cls.strength_grid(budget, n)
        if not isinstance(grid, list) or not all(isinstance(point, dict) for point in grid):
            got = type(grid).__name__ if not isinstance(grid, list) else "a list holding " + ", ".join(
                sorted({type(point).__name__ for point in grid if not isinstance(point, dict)}))
            raise ValueError(f"{call} must return a list of parameter dicts, got {got}")
        if not grid:
            raise ValueError(f"{call} is empty: it must give at least one setting")
        known = cls.parameter_defaults()
        seen: dict[str, int] = {}
        for index, point in enumerate(grid):
            unknown = sorted(name for name in point if name not in known)
            if unknown:
                raise ValueError(f"{call}[{index}]: {unknown_name_error(f'parameter of attack {cls.id!r}', unknown[0], known)}")
            try:
                cls(**point).validate_params()
            except ValueError as error:
                raise ValueError(f"{call}[{index}]: {error}") from None
            setting = json.dumps({**known, **point}, sort_keys=True, default=repr)
            if setting in seen:
                raise ValueError(f"{call} lists one setting twice, entries {seen[setting]} and {index} ({point!r}, "
                                 "defaults included): list each setting once")
            seen[setting] = index
        return grid

    def cohort(self, data: PublicData, rngs: list[np.random.Generator]) -> Cohort | None:
        """Many teams playing this attack (with these parameters) in lockstep, member i with the
        stream ``rngs[i]`` (:class:`ladderlab.attack.Cohort`), for a competition to play them at once; None
        (the default): each team runs ``run`` on its own."""
        return None

    def marks(self) -> dict[str, list[int]]:
        """After ``run``: named lists of submission indices (0-based) that a trace plot should
        mark, such as the jumps the attack located. None by default."""
        return {}

    @abstractmethod
    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        """Play against ``board``; return the final whole-holdout prediction."""


class FinalChoiceAttack(Attack):
    """An attack whose ``final_only_params`` only choose its final prediction from what its
    submissions revealed (Freedman's k). Instead of ``run`` it implements ``play``, every
    submission, and ``final_prediction``; the duels that differ only in those parameters
    then play one transcript and compute only their own final prediction
    (:mod:`ladderlab.runs.sharing`). ``play`` must not read them."""

    @abstractmethod
    def play(self, board: Board, data: PublicData, rng: np.random.Generator) -> Any:
        """Make every submission; return what ``final_prediction`` needs (no holdout labels).
        The state is pickled and shared by the duels at every value of ``final_only_params``."""

    @abstractmethod
    def final_prediction(self, state: Any, data: PublicData) -> FloatArray:
        """The final whole-holdout prediction, from the state ``play`` returned."""

    def run(self, board: Board, data: PublicData, rng: np.random.Generator) -> FloatArray:
        return self.final_prediction(self.play(board, data, rng), data)


IntArray = NDArray[np.intp]


class Cohort(ABC):
    """Many teams of one policy, played in lockstep: the competition's way to run a big honest
    population.

    A competition may field thousands of teams of the same policy (the natural analysts of
    ``kaggle-like``). Run one by one, each team would pay Python's overhead for every batch and
    hold its own copy of everything. A policy that can play many teams at once implements
    :meth:`ladderlab.attack.Attack.cohort`, which returns a cohort: the members' states
    as arrays, one random stream per member, and the engine asks for every member's next batch
    and delivers its released scores (:mod:`ladderlab.competition`).

    The contract that keeps results exact: a member's predictions depend only on its own
    stream, its budget and its own released scores, never on which other members share a call,
    so a cohort of one and a cohort of thousands make the same submissions, bit for bit. The
    policy's ``run`` plays a cohort of one against a board (:func:`play_alone`), so a duel and a
    competition run the same code.
    """

    @abstractmethod
    def begin(self, member: int, budget: int | None) -> None:
        """The member starts playing with ``budget`` submissions left (None: unlimited)."""

    @abstractmethod
    def next_batches(self, members: IntArray) -> IntArray:
        """How many rows each of ``members`` submits next (0: it has finished); prepares them."""

    @abstractmethod
    def predictions(self, member: int) -> FloatArray:
        """The member's prepared batch: rows × holdout predictions."""

    @abstractmethod
    def deliver(self, members: IntArray, released: list[FloatArray]) -> None:
        """The released scores of the prepared batches of ``members``, in order."""

    @abstractmethod
    def final(self, member: int) -> FloatArray:
        """The member's final whole-holdout prediction."""


def play_alone(cohort: Cohort, board: Board) -> FloatArray:
    """Member 0 of ``cohort`` plays against ``board`` until it finishes; its final prediction."""
    member = np.zeros(1, dtype=np.intp)
    cohort.begin(0, board.remaining)
    while cohort.next_batches(member)[0]:
        cohort.deliver(member, [board.submit_many(cohort.predictions(0))])
    return cohort.final(0)
