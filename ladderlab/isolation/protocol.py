"""Isolated attacks, the organiser's side: the attack plays in a sandboxed process and reaches the
leaderboard by messages.

With ``isolation="process"`` an attack is built, checked and run in a process of the
sandbox (:mod:`ladderlab.isolation.sandbox`: another user or a user namespace, its own PID, mount
and network namespaces, a read-only view of the Python installation and of the attack's
own source files), never in the process that holds the labels. That process receives
only the attack's locator and parameters, the task's :class:`~ladderlab.tasks.PublicData`,
the state of the attack's own random stream (not the seed it was derived from) and a
:class:`~ladderlab.isolation.attack_process.BoardClient` (the attack's side:
:mod:`ladderlab.isolation.attack_process`). The labels, the split, the mechanism, the leaderboard, the seeds,
the run directory and the scenario stay with the organiser.

The protocol is the leaderboard's message set, the same as a remote client's: submit a
batch of predictions with a number of repeats (the reply holds the released scores, the
submissions made and the submissions left), and, on boards created with ``oracle=True``,
ask for the oracle's jump count. A message (:class:`~ladderlab.isolation.wire.Channel`) is a JSON header and the raw
bytes of numeric arrays, in both directions, so neither side ever unpickles what the other
sends; a submission and its reply, the messages of the hot path, have a fixed binary header
instead of JSON. One batch is one round trip, whatever its size. Each time the organiser
lends an attack process it first sends a one-way ``affinity`` message, the CPUs to run on
(:mod:`ladderlab.isolation.colocation`). Between duels the organiser may also ask an attack process
about its class (``describe``, ``validate``, ``strength_grid``, ``budget_params``,
``incompatibility``, ``max_submissions``): :mod:`ladderlab.isolation.untrusted` asks, so that it
never imports untrusted attack code itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from ladderlab.attack import Attack
from ladderlab.board import Board
from ladderlab.isolation import multiplexing
from ladderlab.isolation.colocation import colocated
from ladderlab.isolation.multiplexing import joined
from ladderlab.isolation.sandbox import Sandbox, SourceFile, View, require, sandbox_for
from ladderlab.isolation.wire import AttackProcessError, Channel, data_message, error_message, relayed
from ladderlab.tasks import PublicData
from ladderlab.utils.sources import LOCAL_MODULE_PREFIX, plugin_file_sources

T = TypeVar("T")
Isolation = Literal["none", "process"]
ISOLATION_MODES: tuple[str, ...] = ("none", "process")


class AttackIncompatible(Exception):
    """The attack declared, in its own process, that it cannot play on this task."""


def check_isolation(isolation: str) -> str:
    """``isolation``, once it is a known mode that this machine can provide (else a
    ``ValueError`` saying what is missing: :class:`ladderlab.isolation.sandbox.IsolationUnavailable`)."""
    if isolation not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(map(repr, ISOLATION_MODES))}, got {isolation!r}")
    if isolation == "process":
        require()
    return isolation


@dataclass(frozen=True)
class AttackRef:
    """An attack named by where its class lives (a registry id, ``file.py:Class`` with an
    absolute path, or ``module:Class``) and its parameters: all the attack process needs."""

    locator: str
    params: dict[str, Any]
    identity: tuple[str, dict[str, Any]] | None = None
    """The attack's id and all its parameters (``duel.spec``), which name its random stream;
    without it, the locator and the given parameters do."""

    @classmethod
    def of(cls, attack: Attack) -> AttackRef:
        """The reference of an attack instance (its class must live in a file or a module)."""
        klass = type(attack)
        stand_in_locator = getattr(klass, "sandbox_locator", None)
        if isinstance(stand_in_locator, str):  # a stand-in of ladderlab.isolation.untrusted: its code was never loaded here
            locator = stand_in_locator
        elif klass.__module__.startswith(LOCAL_MODULE_PREFIX):
            locator = f"{inspect.getsourcefile(klass)}:{klass.__qualname__}"
        else:
            locator = f"{klass.__module__}:{klass.__qualname__}"
        return cls(locator, attack.get_params(deep=False), attack.identity())

    @classmethod
    def from_spec(cls, spec: str, params: dict[str, Any],
                  identity: tuple[str, dict[str, Any]] | None = None) -> AttackRef:
        """From a scenario's attack id; a relative ``file.py`` path is made absolute here,
        because the attack process may start in another directory."""
        location, separator, name = spec.rpartition(":")
        if separator and location.endswith(".py"):
            spec = f"{Path(location).resolve()}:{name}"
        return cls(spec, dict(params), identity)

    def make(self) -> Attack:
        from ladderlab.registry import ATTACKS

        return ATTACKS.make(self.locator, **self.params)

    def importable(self) -> str:
        """The locator, a built-in attack's id as ``module:Class``: the attack process then
        imports that one module rather than every built-in attack to list them."""
        from ladderlab.registry import ATTACKS

        cls = ATTACKS.builtins().get(self.locator)
        return self.locator if cls is None else f"{cls.__module__}:{cls.__qualname__}"

    def view(self) -> View:
        """What the sandbox must show of the attack's code: a plugin file and its local
        modules, or the folder of an importable plugin's top-level package; nothing for
        ladderlab's own attacks (found without importing the attack)."""
        from ladderlab.registry import ATTACKS

        location, separator, _ = self.locator.rpartition(":")
        if separator and location.endswith(".py"):
            return _file_view(Path(location).resolve())
        module = location
        if not separator:
            if self.locator in ATTACKS.builtins():  # before the entry points, which take milliseconds to list
                return View()
            entry_point = ATTACKS.third_party().get(self.locator)
            if entry_point is None:
                return View()
            module = entry_point.module
        top = module.split(".")[0]
        spec = importlib.util.find_spec(top) if top != "ladderlab" else None
        if spec is None:
            return View()
        if spec.submodule_search_locations:
            return View(folders=tuple(Path(folder).resolve() for folder in spec.submodule_search_locations))
        return _file_view(Path(str(spec.origin)).resolve())


def _file_view(path: Path) -> View:
    return View(files=tuple(SourceFile.of(file) for file in plugin_file_sources(path)))


@dataclass(frozen=True)
class AttackOutcome:
    """What the attack process hands back: its final prediction, its marks and the
    fingerprint of the code that ran."""

    prediction: NDArray[np.float64]
    marks: dict[str, list[int]]
    fingerprint: dict[str, Any]


def run_attack(ref: AttackRef, board: Board, data: PublicData, rng: np.random.Generator) -> AttackOutcome:
    """Play the attack ``ref`` in a sandboxed process against ``board``; return what it hands back.

    Raises :class:`AttackIncompatible` if the attack declines the task, the attack's own
    exception type (for common built-in and ladderlab types) if it raised one, and
    :class:`AttackProcessError` otherwise.
    """
    view = ref.view()
    sandbox = sandbox_for(view)
    locator = ref.importable()
    module = locator.rpartition(":")[0]
    data_fields, data_arrays = data_message(data)
    request = {
        "kind": "start", "locator": locator, "params": ref.params, "data": data_fields,
        "rng_state": rng.bit_generator.state, "holdout_size": board.holdout_size, "budget": board.budget,
        "remaining": board.remaining, "oracle": board._oracle, "prediction_ndim": board.prediction_ndim,
    }
    preload = module.removeprefix("ladderlab.attacks.") if module.startswith("ladderlab.attacks.") else ""
    arrays = {**data_arrays, "board.classes": np.asarray(board.classes)}
    shared = joined((sandbox, preload), request, arrays)
    if shared is not None:
        return _serve(shared, board, view)
    with lent_attack_process(sandbox, preload) as channel:
        channel.send(request, arrays)
        return _serve(channel, board, view)


def play_together(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The results of ``calls`` (duels), in order: those that play an isolated attack of the
    same code share an attack process and its round trips (:mod:`ladderlab.isolation.multiplexing`)."""
    return multiplexing.play_together(calls, lambda process: lent_attack_process(*process), AttackProcessError)


@contextlib.contextmanager
def lent_attack_process(sandbox: Sandbox, preload: str = "") -> Iterator[Channel]:
    """The channel to an idle attack process of ``sandbox`` (or a new one, which imports the
    built-in attack module ``preload`` first), kept for the next duel or question if the body
    ends cleanly (or with :class:`AttackIncompatible`), ended otherwise; a channel that closes
    or fails is an :class:`AttackProcessError` that says how the process ended. Meanwhile the
    calling thread and the attack process share one CPU (:mod:`ladderlab.isolation.colocation`)."""
    kept = sandbox.take_idle()
    if kept is None:
        connection, pid = sandbox.start_attack_process(preload)
        kept = Channel(connection), pid
    channel, pid = kept
    clean = ended = False
    try:
        with colocated() as cpus:
            try:
                channel.send({"kind": "affinity", "cpus": sorted(cpus)})
                yield channel
            except AttackIncompatible:
                clean = True
                raise
            clean = True
    except (EOFError, OSError):
        status, ended = sandbox.end_attack_process(pid), True
        raise AttackProcessError(f"the attack process ended without an answer ({_describe(status)})") from None
    finally:
        if clean:
            sandbox.tidy_attack_process(pid)
        if not ended and not (clean and sandbox.keep_idle(kept)):
            channel.close()
            sandbox.end_attack_process(pid)


def _describe(status: int | None) -> str:
    if status is None or status < 0:
        return "its exit status is unknown"
    code = os.waitstatus_to_exitcode(status)
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _serve(channel: Channel, board: Board, view: View) -> AttackOutcome:
    while True:
        header, arrays = channel.receive()
        kind = header["kind"]
        if kind == "submit_many" and "predictions" in arrays:
            try:
                released = board.submit_many(arrays["predictions"], header.get("repeats", 1), arrays.get("guesses"))
            except Exception as error:
                channel.send(error_message(error))
            else:
                channel.send_released(released, board.submissions, board.remaining)
        elif kind == "oracle_jumps":
            try:
                channel.send({"kind": "jumps", "jumps": board.oracle_jumps(int(header["since"]))})
            except Exception as error:
                channel.send(error_message(error))
        elif kind == "done" and "prediction" in arrays:
            return AttackOutcome(arrays["prediction"], _checked_marks(header.get("marks")),
                                 snapshot_fingerprint(view, header.get("fingerprint")))
        elif kind == "incompatible":
            raise AttackIncompatible(str(header.get("reason")))
        elif kind == "error":
            raise relayed(header, AttackProcessError)
        else:
            raise AttackProcessError(f"the attack process broke the protocol: unexpected message {kind!r}")


def _checked_marks(marks: Any) -> dict[str, list[int]]:
    try:
        return {str(name): [int(index) for index in indices] for name, indices in (marks or {}).items()}
    except (AttributeError, TypeError, ValueError):
        raise AttackProcessError("the attack process sent marks that are not lists of submission indices") from None


def snapshot_fingerprint(view: View, reported: Any) -> dict[str, Any]:
    """The fingerprint (:func:`ladderlab.plugin.fingerprint`) of attack code that ran in a
    sandbox showing ``view``, hashed here: the snapshot of the plugin file and its local
    modules as the sandbox showed them, then the further files the attack process names
    (``reported["source_files"]``, untrusted: its ancestors' modules) that lie in ladderlab's
    packages or in the attack's package folder, read here. For an honest attack it equals the
    fingerprint of the class loaded without isolation; a hostile one can name fewer of its
    package's files, but never change the hash of the snapshot it ran."""
    try:
        version, named = str(reported["version"]), [Path(str(path)) for path in reported["source_files"]]
    except (KeyError, TypeError):
        raise AttackProcessError("the attack process sent a fingerprint without version and source_files") from None
    snapshot = {source.path: source.content for source in view.files}
    readable = (*_library_folders(), *view.folders)
    files = list(snapshot)
    for path in named[:_MOST_SOURCE_FILES]:
        path = path.resolve() if path.is_absolute() else path
        if path not in files and path.suffix == ".py" and any(path.is_relative_to(folder) for folder in readable) \
                and path.is_file():
            files.append(path)
    digest = hashlib.sha256()
    for path in files:
        digest.update(snapshot[path] if path in snapshot else path.read_bytes())
    return {"version": version, "source_sha256": digest.hexdigest(), "source_files": [str(path) for path in files]}


_MOST_SOURCE_FILES = 10_000
"""Files of a fingerprint that an attack process may name, at most."""


def _library_folders() -> tuple[Path, ...]:
    """ladderlab's own package folders, its built-in attacks' and mechanisms' included (trusted
    code, read by the organiser)."""
    import ladderlab.attacks
    import ladderlab.mechanisms

    packages = (ladderlab, ladderlab.attacks, ladderlab.mechanisms)
    return tuple(Path(folder).resolve() for package in packages for folder in package.__path__)
