"""Kinds of cells: what the runner and the scenario loader know of a cell that is not theirs.

A scenario file holds tables; each table key belongs to one kind of cell (``[[matrix]]``: duels,
:mod:`ladderlab.runs.duels`; ``[[competition]]``: :mod:`ladderlab.competition.cell_kind`;
``[[extrapolation]]``: :mod:`ladderlab.extrapolation.cell_kind`). A :class:`CellKind` says how its
table is checked and expands into cells, how one replication of a cell is played, how the rows of
a cell's replications make its result table, which plugins computed it, and how much work a cell
is (:mod:`ladderlab.runs.workload`). The runner (:mod:`ladderlab.runs.runner`) and the scenario
(:mod:`ladderlab.runs.scenario`) ask a cell's kind (:func:`kind_of`, by the cell's ``kind``) and
import none of them, so the packages above the runs add kinds without the runs depending on them
(the areas contract in ``pyproject.toml``).

Registration: a kind is an instance of a :class:`CellKind` subclass advertised under the
entry-point group :data:`GROUP`, as the plugin registries' third-party plugins are
(``pyproject.toml``: ``competition = "ladderlab.competition.cell_kind:COMPETITIONS"``). The group is
read the first time any kind is asked for, in whichever process asks: a script calling
:func:`ladderlab.runs.runner.run`, the command line, a loky or Dask worker unpickling a cell, the
fresh worker processes of an isolated run. A third-party package adds a kind of cell to scenario
files the same way, under a table key of its own.

The cells themselves are frozen dataclasses with a ``kind``, a ``key`` (their result file's
name), a ``label`` and a class attribute ``directory`` (their folder in a run directory).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from ladderlab.naming import unknown_name_error
from ladderlab.plugin import fingerprint, fingerprint_token
from ladderlab.registry import TASKS

if TYPE_CHECKING:
    import pyarrow as pa
    from pydantic import BaseModel

    from ladderlab.runs.workload import Estimate
    from ladderlab.tasks import Split, Task

GROUP = "ladderlab.cell_kinds"
"""The entry-point group of the kinds of cells."""
DUEL_TABLE = "matrix"
"""The runner's own table (duels): its cells come first in a scenario, the other kinds' after them by table key."""


class CellKind:
    """A kind of cell (see the module docstring). Subclasses set the class attributes and
    implement :meth:`cells`, :meth:`play`, :meth:`result_table` and :meth:`estimate`; the other
    methods have the defaults of a kind whose cells use no plugins."""

    name: ClassVar[str]
    """The ``kind`` of its cells, and the entry point's name."""
    table_key: ClassVar[str | None] = None
    """The scenario's table key (``[[competition]]``: ``competition``); None for a kind whose
    cells come from another kind's tables (duels with several accounts: ``[[matrix]]``'s)."""
    table: ClassVar[type[BaseModel] | None] = None
    """The model of one table (a :class:`ladderlab.runs.schema.StrictModel`)."""
    description: ClassVar[str] = ""
    """The table key's meaning in the scenario reference."""
    directory: ClassVar[str]
    """Its cells' folder in a run directory."""
    hashed_when_empty: ClassVar[bool] = False
    """Whether a scenario without such tables hashes the empty list: only for the tables of the first
    release, so that a kind added since leaves the hashes (and run directories) of older scenarios alone."""
    plays_together: ClassVar[bool] = False
    """Whether isolated cells of one group play a window at a time (:func:`ladderlab.isolation.protocol.play_together`)."""

    def keys(self) -> set[str]:
        """Every key its tables may hold, for "did you mean" suggestions."""
        return set(self.table.model_fields) if self.table is not None else set()

    def check_entries(self, tables: list[Any]) -> None:
        """Refuse a table whose plugins or parameters cannot be used (``ValueError`` naming the
        table, the key and the value); the scenario checks every kind's entries before expanding any."""

    def cells(self, tables: list[Any]) -> list[Any]:
        """Every cell of ``tables`` in file order; ``ValueError`` naming the table for one that cannot expand."""
        raise NotImplementedError

    def check_cells(self, tables: list[Any]) -> None:
        """Refuse tables whose cells cannot be told apart (``ValueError`` naming the table)."""
        self.cells(tables)

    def located(self, tables: list[Any]) -> list[tuple[str, Any]]:
        """Every cell with the table it comes from (``competition[2]``), for messages."""
        return [(f"{self.table_key}[{i}]", cell) for i, table in enumerate(tables) for cell in self.cells([table])]

    def plugin_entries(self, tables: Any) -> list[tuple[dict[str, Any], str]]:
        """The entries of the raw tables (as read from TOML, not yet validated) that name a plugin,
        with the key that names it: a local plugin file is named relative to the scenario file."""
        return []

    def preflight(self, cell: Any, first_split: Callable[[Task], Split]) -> str | None:
        """Check a cell against the first replication's data (``first_split(task)``) before any runs:
        why it cannot play (recorded as skipped), None if it can, ``ValueError`` for a bad cell."""
        return None

    def plugin_roles(self, cell: Any) -> list[tuple[str, Any, str]]:
        """(role, registry, id) of every plugin that computes the cell (its results are stale when one changes)."""
        return []

    def isolated(self, cell: Any) -> Any:
        """What an isolated run computes of the cell's attack code in its own process (from the
        stand-ins that checked the scenario) and hands the process that plays the cell; None: nothing."""
        return None

    def play(self, cell: Any, seed: int, replication: int, isolation: str = "none", secret_seed: int | None = None,
             isolated: Any = None) -> Any:
        """One replication of the cell (its row, or rows: whatever :meth:`result_table` reads); a
        replication that fails is recorded in it, never raised. ``isolated``: :meth:`isolated`'s."""
        raise NotImplementedError

    def result_table(self, cell: Any, seed: int, rows: Sequence[Any]) -> pa.Table:
        """The cell's result table from the rows of its replications 0 … len(rows) − 1, in order."""
        raise NotImplementedError

    def stored_rows(self, table: pa.Table) -> list[Any]:
        """The rows of each replication a written result table holds, as :meth:`play` made them."""
        return table.to_pylist()

    def tokens(self, cell: Any, rows: Sequence[Any] = (), isolation: str = "none", isolated: Any = None,
               ) -> dict[str, str | None]:
        """The fingerprint tokens of the plugins that computed the cell, by role (the manifest's
        ``plugins``): :func:`plugin_tokens` of :meth:`plugin_roles`. ``rows``, ``isolation`` and
        ``isolated`` are the cell's run's, for a kind whose plugins' code an isolated run never loads here."""
        return plugin_tokens(cell, self.plugin_roles(cell))

    def estimate(self, group: list[Any], replications: int, force: bool = False) -> Estimate:
        """The work of a group of cells that play together (:func:`ladderlab.runs.scenario.transcript_groups`);
        a kind whose data cannot fit refuses it (:class:`ladderlab.runs.workload.TooLarge`) unless ``force``."""
        raise NotImplementedError


def plugin_tokens(cell: Any, roles: list[tuple[str, Any, str]], known: dict[str, str | None] | None = None,
                  ) -> dict[str, str | None]:
    """The fingerprint token of every plugin of ``roles`` (role, registry, id), computed here but for the
    roles ``known`` gives; a task's with the fingerprint of the data it reads."""
    known = known or {}
    tokens = {role: known[role] if role in known else fingerprint_token(fingerprint(registry.get(plugin_id)))
              for role, registry, plugin_id in roles}
    if "task" in tokens:
        data = TASKS.make(cell.task[0], **cell.task[1]).data_fingerprint()
        if data is not None:
            tokens["task"] = f"{tokens['task']}:data {data[:16]}"
    return tokens


class CellKindError(ValueError):
    """The kinds of cells cannot be loaded, or a cell's kind is not registered."""


@functools.cache
def kinds() -> dict[str, CellKind]:
    """Every registered kind of cell, by name, loaded from the entry-point group :data:`GROUP` (once
    per process); the kinds with a table first the duels', then by table key."""
    found: dict[str, CellKind] = {}
    own = False
    for point in entry_points(group=GROUP):
        kind = point.load()
        if not isinstance(kind, CellKind):
            raise CellKindError(f"entry point {point.name} = {point.value} ({GROUP}): not a ladderlab.runs.cell_kinds.CellKind")
        if kind.name != point.name or kind.name in found:
            raise CellKindError(f"entry point {point.name} = {point.value} ({GROUP}): a kind named {kind.name!r} "
                                f"{'is registered twice' if kind.name in found else 'under another name'}")
        found[kind.name] = kind
        own |= point.dist is not None and point.dist.name == "ladderlab"
    if not own:
        raise CellKindError(f"no kind of cell is registered (entry-point group {GROUP}): ladderlab's installed "
                            "metadata predates them; install it again (pip install -e .)")
    tables: dict[str, str] = {}
    for kind in found.values():
        if kind.table_key is not None and tables.setdefault(kind.table_key, kind.name) != kind.name:
            raise CellKindError(f"the kinds {tables[kind.table_key]!r} and {kind.name!r} both read [[{kind.table_key}]] tables")
    return dict(sorted(found.items(), key=lambda item: (item[1].table_key != DUEL_TABLE, item[1].table_key or "", item[0])))


def table_kinds() -> list[CellKind]:
    """The kinds that read a table of their own, the duels' first, then by table key."""
    return [kind for kind in kinds().values() if kind.table_key is not None]


def kind_of(cell: Any) -> CellKind:
    """The kind that plays ``cell``."""
    registered = kinds()
    if cell.kind not in registered:
        raise unknown_name_error(f"kind of cell (entry-point group {GROUP})", cell.kind, registered)
    return registered[cell.kind]
