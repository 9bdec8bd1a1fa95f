"""Scenario files: TOML matrices of tasks × mechanisms × attacks, validated with pydantic.

A scenario holds one or more ``[[matrix]]`` tables; each crosses its tasks,
mechanisms and attacks. A parameter whose value is a list expands into a grid
(asv-style), except a parameter the plugin declares list-valued
(:class:`ladderlab.params.ListOf`, e.g. honest's ``models = ["ridge", "knn"]``),
which is one value; a list of such lists is a grid of them.

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

Loading validates everything that can be known without data, before anything
runs: types are strict (no string, bool or float for an integer), every cell's
plugins are built and their parameters checked against their declarations
(:mod:`ladderlab.params`) and relations, an empty grid and a cell listed twice (the
same plugins and parameters, defaults included) are errors. :func:`preflight`
then draws each task's first replication and binds every cell's mechanism to it,
and says which cells cannot play (recorded as skipped, with the reason). Errors
name the file, the matrix, the table, the key and the value; unknown keys, plugin
ids, parameters and option values come with "did you mean" suggestions.

An attack entry with ``strength_grid = true`` (and a budget) expands into the
attack's own strength grid (``Attack.strength_grid(budget, n)``, n the task's
public size), its ``params`` added to every grid point; a matrix with
``playable_only = true`` leaves out the combinations that cannot play (a
regression attack on a classification task) instead of recording them as
skipped. The ``zoo`` scenario uses both.

Other tables belong to the kinds of cells that other packages register
(:mod:`ladderlab.runs.cell_kinds`): ``[[competition]]`` (:mod:`ladderlab.competition.scenario`) and
``[[extrapolation]]`` (:mod:`ladderlab.extrapolation.scenario`: Zheng et al.'s Figure 3 experiment)
have cells of their own, listed after the duels'. :data:`Scenario` is the model of a scenario file
with every registered kind's table key; it is built the first time it is used.

"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import (
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    create_model,
    model_validator,
)

from ladderlab.attack import shared_identity
from ladderlab.engines.linking import LinkRule
from ladderlab.naming import plugin_label, unknown_name_error
from ladderlab.params import INT64_LIMIT, ParameterError
from ladderlab.plugin import Plugin
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry
from ladderlab.runs.cell_kinds import kind_of, table_kinds
from ladderlab.runs.duel import incompatibility, spec
from ladderlab.runs.grid import expand, grid_values
from ladderlab.runs.paper_values import PaperValue, locate
from ladderlab.runs.schema import StrictModel, problem_lines
from ladderlab.scenarios import builtin_scenarios
from ladderlab.seeding import stream
from ladderlab.tasks import Split
from ladderlab.utils.locations import anchored, location_free, plugin_reference

SCHEMA_VERSION = 1
CHALLENGE_TASK = "challenge"
"""The task that reads an organiser's challenge file; its ``path`` is relative to the scenario file."""


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file, table and key."""


class PluginEntry(StrictModel):
    id: StrictStr
    params: dict[str, Any] = Field(default_factory=dict)


class AttackEntry(PluginEntry):
    budget: StrictInt | None = Field(
        default=None, ge=1, lt=INT64_LIMIT,
        description="submissions allowed (None: unlimited); at least 1, since the duel scores a submitted prediction",
    )
    oracle: StrictBool = Field(default=False, description="give the attack the paper's jump-count oracle")
    strength_grid: StrictBool = Field(
        default=False,
        description="expand into the attack's strength grid at this budget and each task's public size "
        "(Attack.strength_grid); params given here are added to every grid point",
    )
    accounts: StrictInt = Field(
        default=1, ge=1, le=100_000,
        description="accounts the attacker holds (Sybil, ladderlab.competition.accounts): it probes on accounts − 1 accounts, "
        "each with its own mechanism state and the budget, and submits its final prediction on a fresh one",
    )
    link: StrictBool = Field(
        default=False,
        description="play the attacker's accounts under the linking wrapper (ladderlab.engines.linking, its default rule): "
        "accounts whose submissions are near-identical share one mechanism state from the submission that links them",
    )

    @model_validator(mode="after")
    def _grid_needs_budget(self) -> AttackEntry:
        if self.strength_grid and self.budget is None:
            raise ValueError(f"attack {self.id!r}: strength_grid = true needs a budget")
        if self.accounts > 1 and (self.budget is None or self.oracle):
            raise ValueError(f"attack {self.id!r}: accounts = {self.accounts} needs a budget (each account's) and no oracle")
        if self.link and self.accounts < 2:
            raise ValueError(f"attack {self.id!r}: link = true needs accounts ≥ 2")
        return self


class Matrix(StrictModel):
    tasks: list[PluginEntry] = Field(min_length=1)
    mechanisms: list[PluginEntry] = Field(min_length=1)
    attacks: list[AttackEntry] = Field(min_length=1)
    playable_only: bool = Field(
        default=False,
        description="leave out the task × mechanism × attack combinations that cannot play "
        "(checked on one split of each task) instead of recording them as skipped",
    )


class BaseScenario(StrictModel):
    """A scenario file: `[[matrix]]` tables of duels, and the tables of every other registered kind of
    cell (:data:`Scenario` adds them), replicated with one seed."""

    schema_version: Literal[1] = Field(description="the file format's version")
    name: StrictStr = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="the run directory's default name")
    description: StrictStr = Field(default="", description="what the scenario runs")
    source: StrictStr = Field(default="", description="the paper, figure or table it reproduces")
    replications: StrictInt = Field(ge=1, lt=INT64_LIMIT, description="replications of every cell")
    seed: StrictInt = Field(default=0, ge=0, lt=INT64_LIMIT, description="the root of every random stream (results store it as a 64-bit integer)")
    matrix: list[Matrix] = Field(default_factory=list, description="`[[matrix]]` tables of duels")
    paper_values: list[PaperValue] = Field(default_factory=list, description="`[[paper_values]]`: the papers' "
                                           "values for cells of this scenario, shown beside ours in its reports")
    _source: str = PrivateAttr(default="scenario")

    @model_validator(mode="after")
    def _valid_cells(self) -> BaseScenario:
        kinds = table_kinds()
        if not any(tables(self, kind) for kind in kinds):
            keys = [f"[[{kind.table_key}]]" for kind in kinds]
            raise ValueError(f"a scenario needs at least one {', '.join(keys[:-1])} or {keys[-1]} table")
        for kind in kinds:
            kind.check_entries(tables(self, kind))
        for kind in kinds:
            kind.check_cells(tables(self, kind))
        expanded = cells(self) if self.paper_values else []
        records = [dataclasses.asdict(cell) for cell in expanded]
        labels = {id(record): cell.label for record, cell in zip(records, expanded)}
        for i, value in enumerate(self.paper_values):
            try:
                locate(value, records, label=lambda record: labels[id(record)])
            except ValueError as error:
                raise ValueError(f"paper_values[{i}]: {error}") from None
        return self

    def identity(self) -> str:
        """A hash of everything that determines the results (:func:`identity_of` its data, wherever
        the scenario's local files lie: :mod:`ladderlab.utils.locations`)."""
        return identity_of(location_free(self.model_dump(mode="json")))


def tables(scenario: BaseScenario, kind: Any) -> list[Any]:
    """The scenario's tables of a kind of cell."""
    return getattr(scenario, kind.table_key)


@functools.cache
def scenario_model() -> type[BaseScenario]:
    """The model of a scenario file: :class:`BaseScenario` with a list of tables for every registered
    kind of cell (:func:`ladderlab.runs.cell_kinds.table_kinds`) under its table key."""
    fields: dict[str, Any] = {kind.table_key: (list[kind.table], Field(default_factory=list, description=kind.description))
                              for kind in table_kinds() if kind.table_key not in BaseScenario.model_fields}
    return create_model("Scenario", __base__=BaseScenario, __module__=__name__, __doc__=BaseScenario.__doc__, **fields)


def __getattr__(name: str) -> Any:
    """:data:`Scenario`, built when first used (PEP 562): the kinds of cells register after this module loads."""
    if name == "Scenario":
        return scenario_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Scenario: type[BaseScenario]
"""The model of a scenario file (:func:`scenario_model`): ``Scenario.model_validate(data)``, or :func:`load`."""


def identity_of(dump: dict[str, Any]) -> str:
    """The hash of a scenario's data. The options added after the first release (``strength_grid``,
    ``playable_only``, ``accounts``, the tables of kinds of cells such as ``extrapolation``) count
    only when set, so a scenario without them keeps the hash of its existing run directories; the
    papers' values do not count."""
    dump = json.loads(json.dumps(dump))
    for kind in table_kinds():
        if not kind.hashed_when_empty and not dump.get(kind.table_key):
            dump.pop(kind.table_key, None)
    for matrix in dump["matrix"]:
        if not matrix["playable_only"]:
            del matrix["playable_only"]
        for attack in matrix["attacks"]:
            if not attack["strength_grid"]:
                del attack["strength_grid"]
            if attack["accounts"] == 1:
                del attack["accounts"]
            if not attack["link"]:
                del attack["link"]
    del dump["paper_values"]
    text = json.dumps(dump, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.cache
def known_keys() -> set[str]:
    """Every key a scenario file may hold, in any table, for "did you mean" suggestions."""
    return {name for model in (BaseScenario, PaperValue) for name in model.model_fields} | {
        kind.table_key for kind in table_kinds()} | {key for kind in table_kinds() for key in kind.keys()}


def _check_entry(entry: Any, registry: Registry, where: str, id_key: str = "id") -> None:
    """The plugin exists, every parameter is known, and every combination of the entry's
    grid builds a plugin whose parameters pass its declared and relational checks.
    ``entry`` has the plugin id in ``id_key`` (a competition team's ``policy``) and ``params``."""
    plugin_id = getattr(entry, id_key)
    try:
        cls = registry.get(plugin_id)
    except ValueError as error:
        raise ValueError(f"{where}.{id_key}: {error}") from None
    known = cls.parameter_defaults()
    for name in entry.params:
        if name not in known:
            raise ValueError(f"{where}.params.{name}: {unknown_name_error(f'parameter of {plugin_id!r}', name, known)}")
    for name, value in entry.params.items():
        if not grid_values(cls, name, value):
            raise ValueError(
                f"{where}.params.{name}: an empty list is an empty grid (no cells); give at least one value"
            )
    for params in expand(entry.params, cls):
        try:
            cls(**params).validate_params()
        except ParameterError as error:
            raise ValueError(f"{where}.params.{error.parameter}: {error}") from None
        except ValueError as error:
            raise ValueError(f"{where}.params: {error}") from None


def _identity(cell: Cell) -> str:
    """What a cell computes: its plugins with every parameter, defaults included."""
    parts = [
        spec(registry.make(plugin_id, **params))
        for registry, (plugin_id, params) in ((TASKS, cell.task), (MECHANISMS, cell.mechanism), (ATTACKS, cell.attack))
    ]
    return json.dumps([parts, cell.budget, cell.oracle, cell.accounts, cell.link], sort_keys=True, default=repr)


def check_matrices(matrices: list[Matrix]) -> None:
    """Every entry of every ``[[matrix]]`` table can be used (:func:`_check_entry`)."""
    for i, matrix in enumerate(matrices):
        for key, registry in (("tasks", TASKS), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
            for j, entry in enumerate(getattr(matrix, key)):
                _check_entry(entry, registry, f"matrix[{i}].{key}[{j}]")


def check_duplicates(matrices: list[Matrix]) -> None:
    """No duel is listed twice in ``[[matrix]]`` tables (the same plugins and parameters, defaults included)."""
    first_seen: dict[str, str] = {}
    for where, cell in located_duels(matrices):
        identity = _identity(cell)
        if identity in first_seen:
            raise ValueError(
                f"{where}: the cell {cell.label} is listed twice (also in {first_seen[identity]}; the same "
                "plugins and parameters, defaults included): remove one"
            )
        first_seen[identity] = where


@dataclass(frozen=True)
class Cell:
    """One task × mechanism × attack combination with scalar parameters."""

    task: tuple[str, dict[str, Any]]
    mechanism: tuple[str, dict[str, Any]]
    attack: tuple[str, dict[str, Any]]
    budget: int | None
    oracle: bool
    accounts: int = 1
    """The attacker's accounts (:mod:`ladderlab.competition.accounts`); ``budget`` is each account's."""
    link: bool = False
    """The accounts play under the linking wrapper (:mod:`ladderlab.engines.linking`, its default rule)."""
    directory: ClassVar[str] = "cells"
    """The run directory's folder for the cell's results."""

    @property
    def kind(self) -> str:
        """The kind of cell that plays it (:mod:`ladderlab.runs.cell_kinds`): a duel, or, for an attacker
        with several accounts, a duel the competition engine plays (:mod:`ladderlab.competition.accounts`)."""
        return "duel" if self.accounts == 1 else "sybil-duel"

    def plugin_ids(self) -> list[tuple[Registry, str]]:
        """(registry, id) of every plugin the cell uses."""
        return [(TASKS, self.task[0]), (MECHANISMS, self.mechanism[0]), (ATTACKS, self.attack[0])]

    @property
    def label(self) -> str:
        """``task × mechanism × attack`` with parameters (and the budget, and the accounts beyond one)."""
        text = " × ".join(plugin_label(plugin_id, params) for plugin_id, params in (self.task, self.mechanism, self.attack))
        text = text if self.budget is None else f"{text}, budget {self.budget}"
        text = text if self.accounts == 1 else f"{text}, {self.accounts} accounts"
        return f"{text}, linked by the wrapper" if self.link else text

    @functools.cached_property
    def key(self) -> str:
        """A stable file name for the cell's results (computed once: the runner asks for it every replication),
        whatever folder its local files lie in; one account leaves it as it was before accounts existed."""
        parts: list[Any] = location_free([self.task, self.mechanism, self.attack, self.budget, self.oracle])
        if self.accounts != 1:
            parts.append({"accounts": self.accounts})
        if self.link:  # the rule's record: a result of another link rule (the old one on public rows) is another file
            parts.append({"link": LinkRule().record()})
        text = json.dumps(parts, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def located_duels(matrices: list[Matrix]) -> list[tuple[str, Cell]]:
    """Every cell of every ``[[matrix]]`` table in file order, with the table it comes from."""
    located = []
    for i, matrix in enumerate(matrices):
        for task, mechanism, attack in itertools.product(matrix.tasks, matrix.mechanisms, matrix.attacks):
            for tp, mp in itertools.product(expand(task.params, TASKS.get(task.id)),
                                            expand(mechanism.params, MECHANISMS.get(mechanism.id))):
                for ap in _attack_settings(attack, task.id, tp):
                    cell = Cell((task.id, tp), (mechanism.id, mp), (attack.id, ap), attack.budget, attack.oracle,
                                attack.accounts, attack.link)
                    if matrix.playable_only and not _playable(cell):
                        continue
                    located.append((f"matrix[{i}]", cell))
    return located


def duels(matrices: list[Matrix]) -> list[Cell]:
    """Every cell of every ``[[matrix]]`` table, in file order (a valid scenario lists each cell once)."""
    found: dict[str, Cell] = {}
    for _, cell in located_duels(matrices):
        found.setdefault(cell.key, cell)
    return list(found.values())


def cells(scenario: BaseScenario) -> list[Any]:
    """Every cell of the scenario in file order: the duels of its ``[[matrix]]`` tables, then the cells
    of the other kinds' tables (:func:`ladderlab.runs.cell_kinds.table_kinds`: competitions, extrapolations)."""
    return [cell for kind in table_kinds() for cell in kind.cells(tables(scenario, kind))]


def preflight(scenario: BaseScenario) -> dict[str, str]:
    """Check every cell against data before any replication runs; return the cells that
    cannot play, by key, with the reason (the runner records them as skipped).

    Each task draws its first replication (the same draw the run makes); every cell's
    mechanism is bound to its public labels, which checks the parameters that relate
    to the data (e.g. the length of an initial prediction): its kind's
    :meth:`~ladderlab.runs.cell_kinds.CellKind.preflight`. A failure raises
    :class:`ScenarioError` naming the file, the table and the cell.
    """
    splits: dict[str, Any] = {}
    skipped: dict[str, str] = {}

    def first_split(task: Plugin) -> Split:
        task_key = json.dumps(spec(task), sort_keys=True, default=repr)
        if task_key not in splits:
            splits[task_key] = task.split(stream(scenario.seed, "task", spec(task), 0))
        return splits[task_key]

    for where, cell in [located for kind in table_kinds() for located in kind.located(tables(scenario, kind))]:
        try:
            reason = kind_of(cell).preflight(cell, first_split)
        except ValueError as error:
            raise ScenarioError(f"{scenario._source}: {where}: cell {cell.label}: {error}") from None
        if reason:
            skipped[cell.key] = reason
    return skipped


def playable(split: Split, mechanism: Any, attacks: list[Any]) -> str | None:
    """Why ``attacks`` cannot play against ``mechanism`` on ``split`` (the first reason), or None once the
    mechanism is bound to the split's public labels (``ValueError`` for parameters the data refuse)."""
    reason = next(filter(None, (incompatibility(split, mechanism, attack) for attack in attacks)), None)
    if reason is None:
        mechanism.bind_to(split.public, split.y_public, np.random.default_rng(0))
    return reason


def _attack_settings(attack: AttackEntry, task_id: str, task_params: dict[str, Any]) -> list[dict[str, Any]]:
    """The attack entry's parameter grid, or its strength grid at the task's public size."""
    if not attack.strength_grid:
        return expand(attack.params, ATTACKS.get(attack.id))
    assert attack.budget is not None
    n = drawn_split(task_id, json.dumps(task_params, sort_keys=True)).public_rows.size
    grid = ATTACKS.get(attack.id).checked_strength_grid(attack.budget, n)
    return [{**setting, **extra} for setting in grid for extra in expand(attack.params, ATTACKS.get(attack.id))]


@functools.lru_cache(maxsize=64)
def drawn_split(task_id: str, task_params: str) -> Split:
    """One split of a task (parameters as sorted JSON), drawn with a fixed seed: its sizes and
    what it lets play (the strength grid's public size, ``playable_only``, the workload)."""
    return TASKS.make(task_id, **json.loads(task_params)).split(np.random.default_rng(0))


def _playable(cell: Cell) -> bool:
    split = drawn_split(cell.task[0], json.dumps(cell.task[1], sort_keys=True))
    mechanism = MECHANISMS.make(cell.mechanism[0], **cell.mechanism[1])
    attack = ATTACKS.make(cell.attack[0], **cell.attack[1])
    return incompatibility(split, mechanism, attack) is None


def raw_entries(tables: Any, keys: tuple[str, ...]) -> list[Any]:
    """The entries under ``keys`` of raw tables (as read from TOML, not yet validated), in order;
    whatever is not a list of tables is skipped (validation names it)."""
    found = []
    for table in tables if isinstance(tables, list) else []:
        for key in keys:
            if isinstance(table, dict) and isinstance(table.get(key), list):
                found += table[key]
    return found


def matrix_plugin_entries(matrices: Any) -> list[tuple[Any, str]]:
    """The raw ``[[matrix]]`` entries that name a plugin (tasks, mechanisms, attacks), with the key naming it."""
    return [(entry, "id") for entry in raw_entries(matrices, ("tasks", "mechanisms", "attacks"))]


def _resolve_local_plugins(raw: dict[str, Any], folder: Path) -> None:
    """Anchor every ``file.py:Class`` plugin id at the scenario's folder (in every table, as each kind
    of cell names its entries: :meth:`~ladderlab.runs.cell_kinds.CellKind.plugin_entries`), and the
    ``path`` of every ``challenge`` task (:mod:`ladderlab.certification.challenge_task`): absolute where
    they are opened, as written where they identify results (:mod:`ladderlab.utils.locations`)."""
    located = [located for kind in table_kinds() for located in kind.plugin_entries(raw.get(kind.table_key))]
    for entry, key in located:
        plugin_id = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(plugin_id, str) and plugin_reference(plugin_id):
            entry[key] = anchored(folder, plugin_id)
    for entry, _ in located:
        if isinstance(entry, dict) and entry.get("id") == CHALLENGE_TASK and isinstance(entry.get("params"), dict):
            paths = entry["params"].get("path")
            if isinstance(paths, str):
                entry["params"]["path"] = anchored(folder, paths)
            elif isinstance(paths, list):
                entry["params"]["path"] = [anchored(folder, p) if isinstance(p, str) else p for p in paths]


def load(source: str | Path, replications: int | None = None) -> BaseScenario:
    """Read and validate a scenario from a path or a built-in name; ``replications`` overrides."""
    path = Path(source)
    if not path.is_file():  # a directory of that name (a run directory, say) does not hide a built-in
        builtin = builtin_scenarios()
        if str(source) in builtin:
            path = builtin[str(source)]
        elif path.is_dir():
            raise ScenarioError(f"{source}: a directory, not a scenario file (built-in names: {', '.join(sorted(builtin))})")
        elif path.suffix == ".toml" or len(path.parts) > 1:
            raise ScenarioError(f"{source}: no such scenario file")
        else:
            raise ScenarioError(str(unknown_name_error("scenario (not a file, not a built-in name)", str(source), builtin)))
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{path}: not valid TOML: {error}") from None
    if replications is not None:
        raw["replications"] = replications
    _resolve_local_plugins(raw, path.parent)
    loaded = validate(raw, str(path))
    loaded._source = str(path)
    return loaded


def validate(raw: dict[str, Any], source: str = "scenario") -> BaseScenario:
    """A :data:`Scenario` from plain data, or :class:`ScenarioError` with one line per problem,
    each naming ``source``, the location, the problem and the value given."""
    try:
        scenario = scenario_model().model_validate(raw)
    except ValidationError as error:
        raise ScenarioError(problem_lines(error, source, known_keys())) from None
    scenario._source = source
    return scenario


def transcript_groups(todo: list[Any]) -> list[list[Any]]:
    """The cells grouped by shared transcript (equal but for the attack's ``final_only_params``), in order;
    a competition, an extrapolation or a Sybil duel (which plays as a competition) is a group of its own."""
    groups: dict[str, list[Cell]] = {}
    for cell in todo:
        if not isinstance(cell, Cell) or cell.accounts > 1:
            groups[cell.key] = [cell]
            continue
        final_only = ATTACKS.get(cell.attack[0]).final_only_params
        identity = shared_identity(*cell.attack, final_only)
        key = json.dumps([cell.task, cell.mechanism, identity, cell.budget, cell.oracle], sort_keys=True, default=str)
        groups.setdefault(key, []).append(cell)
    return list(groups.values())
