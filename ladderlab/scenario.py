"""Scenario files: TOML matrices of tasks × mechanisms × attacks, validated with pydantic.

A scenario holds one or more ``[[matrix]]`` tables; each crosses its tasks,
mechanisms and attacks. A parameter whose value is a list expands into a grid
(asv-style); to pass one list as a value, wrap it: ``models = [["ridge", "knn"]]``.

```toml
schema_version = 1
name = "example"
replications = 20
seed = 0

[[matrix]]
tasks = [{ id = "gaussian-regression", params = { preset = "ad-challenge" } }]
mechanisms = [{ id = "ladder-t", params = { alpha = [0.01, 0.15, 0.5] } }]
attacks = [{ id = "step-forward", params = { iterations = [2, 3, 4, 5] }, budget = 2000 }]
```

An attack entry with ``strength_grid = true`` (and a budget) expands into the
attack's own strength grid (``Attack.strength_grid(budget, n)``, n the task's
public size), its ``params`` added to every grid point; a matrix with
``playable_only = true`` leaves out the combinations that cannot play (a
regression attack on a classification task) instead of recording them as
skipped. The ``zoo`` scenario uses both.

Errors name the file, the table and the key; unknown keys, plugin ids and
parameters are errors with "did you mean" suggestions.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ladderlab.duel import incompatibility
from ladderlab.naming import unknown_name_error
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry
from ladderlab.tasks import Split

SCHEMA_VERSION = 1


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file, table and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PluginEntry(_Strict):
    id: str
    params: dict[str, Any] = Field(default_factory=dict)


class AttackEntry(PluginEntry):
    budget: int | None = Field(default=None, ge=0, description="submissions allowed (None: unlimited)")
    oracle: bool = Field(default=False, description="give the attack the paper's jump-count oracle")
    strength_grid: bool = Field(
        default=False,
        description="expand into the attack's strength grid at this budget and each task's public size "
        "(Attack.strength_grid); params given here are added to every grid point",
    )

    @model_validator(mode="after")
    def _grid_needs_budget(self) -> AttackEntry:
        if self.strength_grid and self.budget is None:
            raise ValueError(f"attack {self.id!r}: strength_grid = true needs a budget")
        return self


class Matrix(_Strict):
    tasks: list[PluginEntry] = Field(min_length=1)
    mechanisms: list[PluginEntry] = Field(min_length=1)
    attacks: list[AttackEntry] = Field(min_length=1)
    playable_only: bool = Field(
        default=False,
        description="leave out the task × mechanism × attack combinations that cannot play "
        "(checked on one split of each task) instead of recording them as skipped",
    )


class Scenario(_Strict):
    schema_version: Literal[1]
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    source: str = ""
    replications: int = Field(ge=1)
    seed: int = Field(default=0, ge=0)
    matrix: list[Matrix] = Field(min_length=1)

    @model_validator(mode="after")
    def _known_plugins(self) -> Scenario:
        for i, matrix in enumerate(self.matrix):
            for key, registry in (("tasks", TASKS), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
                for j, entry in enumerate(getattr(matrix, key)):
                    _check_entry(entry, registry, f"matrix[{i}].{key}[{j}]")
        return self

    def identity(self) -> str:
        """A hash of everything that determines the results. The options added after the first
        release (``strength_grid``, ``playable_only``) count only when set, so a scenario
        without them keeps the hash of its existing run directories."""
        dump = self.model_dump(mode="json")
        for matrix in dump["matrix"]:
            if not matrix["playable_only"]:
                del matrix["playable_only"]
            for attack in matrix["attacks"]:
                if not attack["strength_grid"]:
                    del attack["strength_grid"]
        text = json.dumps(dump, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_KEYS = {name for model in (Scenario, Matrix, AttackEntry) for name in model.model_fields}


def _check_entry(entry: PluginEntry, registry: Registry, where: str) -> None:
    try:
        cls = registry.get(entry.id)
    except ValueError as error:
        raise ValueError(f"{where}.id: {error}") from None
    known = cls.parameter_defaults()
    for name in entry.params:
        if name not in known:
            raise ValueError(f"{where}.params: {unknown_name_error(f'parameter of {entry.id!r}', name, known)}")


@dataclass(frozen=True)
class Cell:
    """One task × mechanism × attack combination with scalar parameters."""

    task: tuple[str, dict[str, Any]]
    mechanism: tuple[str, dict[str, Any]]
    attack: tuple[str, dict[str, Any]]
    budget: int | None
    oracle: bool

    @property
    def key(self) -> str:
        """A stable file name for the cell's results."""
        text = json.dumps([self.task, self.mechanism, self.attack, self.budget, self.oracle], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def expand(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The grid of a parameter table: one dict per combination of list values."""
    names = list(params)
    values = [v if isinstance(v, list) else [v] for v in params.values()]
    return [dict(zip(names, combination)) for combination in itertools.product(*values)]


def cells(scenario: Scenario) -> list[Cell]:
    """Every cell of every matrix, in file order, without duplicates."""
    found: dict[str, Cell] = {}
    for matrix in scenario.matrix:
        for task, mechanism, attack in itertools.product(matrix.tasks, matrix.mechanisms, matrix.attacks):
            for tp, mp in itertools.product(expand(task.params), expand(mechanism.params)):
                for ap in _attack_settings(attack, task.id, tp):
                    cell = Cell((task.id, tp), (mechanism.id, mp), (attack.id, ap), attack.budget, attack.oracle)
                    if matrix.playable_only and not _playable(cell):
                        continue
                    found.setdefault(cell.key, cell)
    return list(found.values())


def _attack_settings(attack: AttackEntry, task_id: str, task_params: dict[str, Any]) -> list[dict[str, Any]]:
    """The attack entry's parameter grid, or its strength grid at the task's public size."""
    if not attack.strength_grid:
        return expand(attack.params)
    assert attack.budget is not None
    n = _public_split(task_id, json.dumps(task_params, sort_keys=True)).public_rows.size
    grid = ATTACKS.get(attack.id).strength_grid(attack.budget, n)
    return [{**setting, **extra} for setting in grid for extra in expand(attack.params)]


@functools.lru_cache(maxsize=64)
def _public_split(task_id: str, task_params: str) -> Split:
    """One split of a task, drawn with a fixed seed: its public size and what it lets play."""
    return TASKS.make(task_id, **json.loads(task_params)).split(np.random.default_rng(0))


def _playable(cell: Cell) -> bool:
    split = _public_split(cell.task[0], json.dumps(cell.task[1], sort_keys=True))
    mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
    attack = ATTACKS.make(cell.attack[0], **cell.attack[1])
    return incompatibility(split, mechanism, attack) is None


def builtin_scenarios() -> dict[str, Path]:
    """Scenario files shipped in ``ladderlab.scenarios``, by name."""
    folder = resources.files("ladderlab.scenarios")
    return {Path(entry.name).stem: Path(str(entry)) for entry in folder.iterdir() if entry.name.endswith(".toml")}


def load(source: str | Path, replications: int | None = None) -> Scenario:
    """Read and validate a scenario from a path or a built-in name; ``replications`` overrides."""
    path = Path(source)
    if not path.exists():
        builtin = builtin_scenarios()
        if str(source) not in builtin:
            raise ScenarioError(str(unknown_name_error("scenario (not a file, not a built-in name)", str(source), builtin)))
        path = builtin[str(source)]
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{path}: not valid TOML: {error}") from None
    if replications is not None:
        raw["replications"] = replications
    try:
        return Scenario.model_validate(raw)
    except ValidationError as error:
        problems = []
        for problem in error.errors():
            where = ".".join(f"[{part}]" if isinstance(part, int) else str(part) for part in problem["loc"]).replace(".[", "[")
            message = problem["msg"].removeprefix("Value error, ")
            if problem["type"] == "extra_forbidden":
                message = str(unknown_name_error("key", str(problem["loc"][-1]), _KEYS))
            problems.append(f"{path}: {where or 'top level'}: {message}")
        raise ScenarioError("\n".join(problems)) from None
