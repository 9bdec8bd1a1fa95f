"""Process isolation of attack code: the attack plays in its own process and reaches the leaderboard through a pipe.

With ``isolation="process"`` an attack is built, checked and run in a fresh process
started from a clean server (``multiprocessing``'s ``forkserver``, or ``spawn`` where
there is none), never in the process that holds the labels. That process receives
only the attack's locator and parameters, the task's :class:`~ladderlab.tasks.PublicData`,
the state of the attack's own random stream (not the seed it was derived from) and a
:class:`BoardClient`. The labels, the split, the mechanism, the leaderboard and the
task's seeds stay in the organiser's process, so nothing an attack can find by
walking objects (private attributes, ``gc``, frames, ``sys.modules``) leads to them.

The organiser never unpickles what the attack process sends: its messages are JSON
headers and NumPy arrays read with ``allow_pickle=False``, so a hostile attack cannot
run code in the organiser's process through the pipe. One message is one
``submit_many`` batch, so a batch costs one round trip whatever its size.

Not covered (see ``docs/isolation.md``): the file system and ``/proc`` (the attack
runs as the same user), and simulated data that anyone can regenerate from a public
seed (use a secret seed, :func:`ladderlab.seeding.read_secret_seed`).
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import multiprocessing
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.attack import Attack
from ladderlab.board import Board, BudgetExceeded
from ladderlab.mechanism import check_repeats
from ladderlab.params import ParameterError
from ladderlab.sharing import attack_identity
from ladderlab.tasks import PublicData

Isolation = Literal["none", "process"]
ISOLATION_MODES: tuple[str, ...] = ("none", "process")


class AttackProcessError(RuntimeError):
    """The attack process failed, died, or broke the protocol; the message says how."""


class AttackIncompatible(Exception):
    """The attack declared, in its own process, that it cannot play on this task."""


def check_isolation(isolation: str) -> str:
    if isolation not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(map(repr, ISOLATION_MODES))}, got {isolation!r}")
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
        if klass.__module__.startswith("ladderlab_local_"):
            locator = f"{inspect.getsourcefile(klass)}:{klass.__qualname__}"
        else:
            locator = f"{klass.__module__}:{klass.__qualname__}"
        return cls(locator, attack.get_params(deep=False), attack_identity(attack))

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


@dataclass(frozen=True)
class AttackOutcome:
    """What the attack process hands back: its final prediction, its marks and the
    fingerprint of the code that ran."""

    prediction: NDArray[np.float64]
    marks: dict[str, list[int]]
    fingerprint: dict[str, Any]


# --- wire format: JSON headers, arrays without pickle ----------------------------------------

def _array_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _read_array(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)


def _send_from_attack(connection: Connection, header: dict[str, Any], array: np.ndarray | None = None) -> None:
    connection.send_bytes(json.dumps({**header, "array": array is not None}).encode())
    if array is not None:
        connection.send_bytes(_array_bytes(array))


def _receive_from_attack(connection: Connection) -> tuple[dict[str, Any], np.ndarray | None]:
    try:
        header = json.loads(connection.recv_bytes(1 << 20))
        if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
            raise ValueError("a message must be a JSON object with a 'kind'")
        array = _read_array(connection.recv_bytes()) if header.get("array") else None
    except (EOFError, ConnectionError):
        raise
    except Exception as error:
        raise AttackProcessError(f"the attack process broke the protocol: {error}") from None
    return header, array


# --- the attack's side -----------------------------------------------------------------------

class BoardClient:
    """The :class:`~ladderlab.board.Board` API inside the attack process: every call that
    needs the leaderboard is one message over the pipe; the transcript, the count and the
    budget are kept here."""

    __slots__ = ("_connection", "_oracle", "_transcript", "budget", "classes", "holdout_size", "prediction_ndim")

    def __init__(self, connection: Connection, holdout_size: int, budget: int | None, classes: np.ndarray,
                 oracle: bool, prediction_ndim: int):
        self._connection = connection
        self._oracle = oracle
        self._transcript: list[float] = []
        self.budget = budget
        self.holdout_size = holdout_size
        self.classes = classes
        self.prediction_ndim = prediction_ndim

    submissions = Board.submissions
    remaining = Board.remaining
    transcript = Board.transcript
    submit = Board.submit

    def _ask(self, header: dict[str, Any], array: np.ndarray | None = None) -> Any:
        _send_from_attack(self._connection, header, array)
        status, value = self._connection.recv()
        if status == "error":
            raise value
        return value

    def submit_many(self, predictions: ArrayLike, repeats: int = 1) -> NDArray[np.float64]:
        """Submit the rows of a matrix in order (one message); same as ``Board.submit_many``."""
        array = np.asarray(predictions)
        if array.dtype.hasobject:
            raise ValueError(f"predictions must be numeric, got an array of dtype {array.dtype}")
        released = self._ask({"kind": "submit_many", "repeats": check_repeats(repeats)}, array)
        self._transcript.extend(released.tolist())
        return released.copy()

    def oracle_jumps(self, since: int) -> int:
        """As :meth:`ladderlab.board.Board.oracle_jumps`."""
        if not self._oracle:
            raise PermissionError("this board was not created with oracle=True")
        return self._ask({"kind": "oracle_jumps", "since": int(since)})


def _rng_from_state(state: dict[str, Any]) -> np.random.Generator:
    """A Generator in exactly ``state``; its SeedSequence (used only by ``spawn``) is derived
    from the state, so the seed the stream came from never reaches the attack."""
    derived = int.from_bytes(hashlib.blake2b(json.dumps(state, sort_keys=True, default=str).encode(),
                                             digest_size=16).digest(), "little")
    bit_generator = getattr(np.random, state["bit_generator"])(np.random.SeedSequence(derived))
    bit_generator.state = state
    return np.random.Generator(bit_generator)


def _attack_process(connection: Connection, request: dict[str, Any]) -> None:
    """The body of the attack process."""
    from ladderlab.rundir import fingerprint

    try:
        attack = AttackRef(request["locator"], request["params"]).make()
        data: PublicData = request["data"]
        reason = attack.incompatibility(data)
        if reason:
            _send_from_attack(connection, {"kind": "incompatible", "reason": reason})
            return
        attack.validate_params()
        board = BoardClient(connection, request["holdout_size"], request["budget"], request["classes"],
                            request["oracle"], request["prediction_ndim"])
        prediction = np.asarray(attack.run(board, data, _rng_from_state(request["rng_state"])))
        if prediction.dtype.hasobject:
            raise ValueError(f"the final prediction must be numeric, got an array of dtype {prediction.dtype}")
        _send_from_attack(connection, {"kind": "done", "marks": attack.marks(),
                                       "fingerprint": fingerprint(type(attack))}, prediction)
    except BaseException as error:  # everything goes back to the organiser, who decides
        _send_from_attack(connection, {"kind": "error", "type": type(error).__name__, "message": str(error),
                                       "traceback": traceback.format_exc()})
    finally:
        connection.close()


# --- the organiser's side --------------------------------------------------------------------

_RELAYED_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (ValueError, TypeError, RuntimeError, PermissionError, KeyError, IndexError, ZeroDivisionError,
                ArithmeticError, FloatingPointError, NotImplementedError, AssertionError, MemoryError,
                BudgetExceeded, ParameterError, np.linalg.LinAlgError)
}
"""Exception types re-raised as themselves (by name, never unpickled); others become
:class:`AttackProcessError`."""


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["ladderlab.isolation", "ladderlab.registry", "ladderlab.rundir"])
        return context
    return multiprocessing.get_context("spawn")


def run_attack(ref: AttackRef, board: Board, data: PublicData, rng: np.random.Generator) -> AttackOutcome:
    """Play the attack ``ref`` in its own process against ``board``; return what it hands back.

    Raises :class:`AttackIncompatible` if the attack declines the task, the attack's own
    exception type (for common built-in and ladderlab types) if it raised one, and
    :class:`AttackProcessError` otherwise.
    """
    context = _context()
    organiser_end, attack_end = context.Pipe(duplex=True)
    request = {
        "locator": ref.locator, "params": ref.params, "data": data, "rng_state": rng.bit_generator.state,
        "holdout_size": board.holdout_size, "budget": board.budget, "classes": board.classes,
        "oracle": board._oracle, "prediction_ndim": board.prediction_ndim,
    }
    process = context.Process(target=_attack_process, args=(attack_end, request), name="ladderlab-attack",
                              daemon=True)
    try:
        process.start()
    except AssertionError as error:  # multiprocessing refuses children of daemonic processes
        raise AttackProcessError(
            f"cannot start the attack process here ({error}); on Dask, set the configuration "
            "'distributed.worker.daemon: false'"
        ) from None
    attack_end.close()
    try:
        return _serve(organiser_end, board)
    except EOFError:
        process.join(5)
        raise AttackProcessError(
            f"the attack process ended without an answer (exit code {process.exitcode})"
        ) from None
    finally:
        organiser_end.close()
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()


def _serve(connection: Connection, board: Board) -> AttackOutcome:
    while True:
        header, array = _receive_from_attack(connection)
        kind = header["kind"]
        if kind == "submit_many" and array is not None:
            try:
                connection.send(("ok", board.submit_many(array, header.get("repeats", 1))))
            except Exception as error:
                connection.send(("error", error))
        elif kind == "oracle_jumps":
            try:
                connection.send(("ok", board.oracle_jumps(int(header["since"]))))
            except Exception as error:
                connection.send(("error", error))
        elif kind == "done" and array is not None:
            return AttackOutcome(array, _checked_marks(header.get("marks")), dict(header.get("fingerprint") or {}))
        elif kind == "incompatible":
            raise AttackIncompatible(str(header.get("reason")))
        elif kind == "error":
            name, message = str(header.get("type")), str(header.get("message"))
            error_type = _RELAYED_ERRORS.get(name)
            if error_type is None:
                raise AttackProcessError(f"{name}: {message}")
            raise error_type(message)
        else:
            raise AttackProcessError(f"the attack process broke the protocol: unexpected message {kind!r}")


def _checked_marks(marks: Any) -> dict[str, list[int]]:
    try:
        return {str(name): [int(index) for index in indices] for name, indices in (marks or {}).items()}
    except (AttributeError, TypeError, ValueError):
        raise AttackProcessError("the attack process sent marks that are not lists of submission indices") from None
