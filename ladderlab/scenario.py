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

Errors name the file, the table and the key; unknown keys, plugin ids and
parameters are errors with "did you mean" suggestions.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ladderlab.competition_scenario import KEYS as COMPETITION_KEYS
from ladderlab.competition_scenario import CompetitionCell, CompetitionMatrix, competition_cells
from ladderlab.naming import unknown_name_error
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry

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


class Matrix(_Strict):
    tasks: list[PluginEntry] = Field(min_length=1)
    mechanisms: list[PluginEntry] = Field(min_length=1)
    attacks: list[AttackEntry] = Field(min_length=1)


class Scenario(_Strict):
    schema_version: Literal[1]
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    source: str = ""
    replications: int = Field(ge=1)
    seed: int = Field(default=0, ge=0)
    matrix: list[Matrix] = Field(default_factory=list)
    competition: list[CompetitionMatrix] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_plugins(self) -> Scenario:
        if not self.matrix and not self.competition:
            raise ValueError("a scenario needs at least one [[matrix]] or [[competition]] table")
        for i, matrix in enumerate(self.matrix):
            for key, registry in (("tasks", TASKS), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
                for j, entry in enumerate(getattr(matrix, key)):
                    _check_entry(entry, registry, f"matrix[{i}].{key}[{j}]")
        return self

    def identity(self) -> str:
        """A hash of everything that determines the results."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_KEYS = {name for model in (Scenario, Matrix, AttackEntry) for name in model.model_fields} | COMPETITION_KEYS


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
    directory: ClassVar[str] = "cells"
    """The run directory's folder for the cell's results."""

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


def cells(scenario: Scenario) -> list[Cell | CompetitionCell]:
    """Every cell of every matrix, in file order, without duplicates; competition cells last."""
    found: dict[str, Cell | CompetitionCell] = {}
    for matrix in scenario.matrix:
        for task, mechanism, attack in itertools.product(matrix.tasks, matrix.mechanisms, matrix.attacks):
            for tp, mp, ap in itertools.product(expand(task.params), expand(mechanism.params), expand(attack.params)):
                cell = Cell((task.id, tp), (mechanism.id, mp), (attack.id, ap), attack.budget, attack.oracle)
                found.setdefault(cell.key, cell)
    return list(found.values()) + competition_cells(scenario.competition)


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
