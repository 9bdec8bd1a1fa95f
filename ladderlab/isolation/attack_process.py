"""The attack's side of the isolation protocol: the body of an attack process.

An attack process (forked by the sandbox server, :mod:`ladderlab.isolation.sandbox`) plays duel
after duel of the same attack code against a :class:`BoardClient`, whose every call that needs the
leaderboard is one message to the organiser (:mod:`ladderlab.isolation.protocol`), and answers the
organiser's questions about the attack class (:mod:`ladderlab.isolation.untrusted` asks them).
It holds only what the messages bring: the attack's locator and parameters, the public data and
the state of the attack's own random stream.
"""

from __future__ import annotations

import hashlib
import json
import socket
import traceback
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.board import Board
from ladderlab.isolation.colocation import adopt
from ladderlab.isolation.multiplexing import attack_side, unpack
from ladderlab.isolation.wire import Channel, data_from, error_message, relayed
from ladderlab.mechanism import check_repeats
from ladderlab.params import ParameterError


class BoardClient:
    """The :class:`~ladderlab.board.Board` API inside the attack process: every call that
    needs the leaderboard is one message; the transcript is kept here, and the submissions
    left are what the leaderboard last said."""

    __slots__ = ("_channel", "_oracle", "_remaining", "_transcript", "budget", "classes", "holdout_size",
                 "prediction_ndim")

    def __init__(self, channel: Channel, holdout_size: int, budget: int | None, remaining: int | None,
                 classes: np.ndarray, oracle: bool, prediction_ndim: int):
        self._channel = channel
        self._oracle = oracle
        self._remaining = remaining
        self._transcript: list[float] = []
        self.budget = budget
        self.holdout_size = holdout_size
        self.classes = classes
        self.prediction_ndim = prediction_ndim

    submissions = Board.submissions
    transcript = Board.transcript
    submit = Board.submit

    @property
    def remaining(self) -> int | None:
        """Submissions the leaderboard still allows (None: unlimited)."""
        return self._remaining

    def _ask(self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
             ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        self._channel.send(header, arrays)
        return self._reply()

    def _reply(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        reply, arrays = self._channel.receive()
        if reply["kind"] == "error":
            raise relayed(reply, RuntimeError)
        return reply, arrays

    def submit_many(self, predictions: ArrayLike, repeats: int = 1,
                    guesses: ArrayLike | None = None) -> NDArray[np.float64]:
        """Submit the rows of a matrix in order (one message); same as ``Board.submit_many``."""
        array = np.asarray(predictions)
        if array.dtype.hasobject:
            raise ValueError(f"predictions must be numeric, got an array of dtype {array.dtype}")
        if guesses is None:
            self._channel.send_submission(array, check_repeats(repeats))
        else:
            self._channel.send({"kind": "submit_many", "repeats": check_repeats(repeats)},
                               {"predictions": array, "guesses": np.asarray(guesses, dtype=float)})
        reply, arrays = self._reply()
        released = arrays["released"]  # a new array of this message's own
        self._transcript.extend(released.tolist())
        self._remaining = reply["remaining"]
        return released

    def oracle_jumps(self, since: int) -> int:
        """As :meth:`ladderlab.board.Board.oracle_jumps`."""
        if not self._oracle:
            raise PermissionError("this board was not created with oracle=True")
        return int(self._ask({"kind": "oracle_jumps", "since": int(since)})[0]["jumps"])


def _rng_from_state(state: dict[str, Any]) -> np.random.Generator:
    """A Generator in exactly ``state``; its SeedSequence (used only by ``spawn``) is derived
    from the state, so the seed the stream came from never reaches the attack."""
    derived = int.from_bytes(hashlib.blake2b(json.dumps(state, sort_keys=True, default=str).encode(),
                                             digest_size=16).digest(), "little")
    bit_generator = getattr(np.random, state["bit_generator"])(np.random.SeedSequence(derived))
    bit_generator.state = state
    return np.random.Generator(bit_generator)


def attack_process(connection: socket.socket) -> None:
    """The body of an attack process (run by :mod:`ladderlab.isolation.sandbox` in a forked, sandboxed child):
    duel after duel of the same code (see :func:`run_attack`), until the organiser closes the channel."""
    channel = Channel(connection)
    try:
        while True:
            try:
                request, arrays = channel.receive()
            except EOFError:
                return
            if request["kind"] == "affinity":  # no answer: the organiser's next message follows
                adopt(request["cpus"])
            elif request["kind"] == "start":
                _play(channel, request, arrays)
            elif request["kind"] == "start_many":
                attack_side(channel, [part for _, part in unpack(request, arrays)], _play, _ended_silently)
            else:
                _answer(channel, request, arrays)
    finally:
        channel.close()


def _play(channel: Channel, request: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """One duel (or one team's competition) in the attack process: everything goes back."""
    from ladderlab.plugin import fingerprint
    from ladderlab.registry import ATTACKS

    try:
        attack = ATTACKS.make(request["locator"], **request["params"])
        data = data_from(request["data"], arrays)
        reason = attack.incompatibility(data)
        if reason:
            channel.send({"kind": "incompatible", "reason": reason})
            return
        attack.validate_params()
        board = BoardClient(channel, request["holdout_size"], request["budget"], request["remaining"],
                            arrays["board.classes"], request["oracle"], request["prediction_ndim"])
        prediction = np.asarray(attack.run(board, data, _rng_from_state(request["rng_state"])))
        if prediction.dtype.hasobject:
            raise ValueError(f"the final prediction must be numeric, got an array of dtype {prediction.dtype}")
        channel.send({"kind": "done", "marks": attack.marks(), "fingerprint": fingerprint(type(attack))},
                     {"prediction": prediction})
    except BaseException as error:  # everything goes back to the organiser, who ends this process
        channel.send({**error_message(error), "traceback": traceback.format_exc()})


def _ended_silently() -> dict[str, Any]:
    return {"kind": "error", "type": "RuntimeError", "message": "the attack's duel ended without an answer"}


def _answer(channel: Channel, request: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Answer one question of the organiser about the attack class named in ``request``
    (:mod:`ladderlab.isolation.untrusted` asks them): plain JSON, or the error the class raised."""
    try:
        reply = _answer_of(request, arrays)
        channel.send({"kind": "answer", **json.loads(json.dumps(reply, default=_plain))})
    except BaseException as error:  # everything goes back to the organiser
        parameter = {"parameter": error.parameter} if isinstance(error, ParameterError) else {}
        channel.send({**error_message(error), **parameter})


def _answer_of(request: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """What the class (or an instance with ``request["params"]``) says, as a reply's fields."""
    from ladderlab.params import list_valued
    from ladderlab.plugin import plugin_source_files
    from ladderlab.registry import ATTACKS

    kind, locator = request["kind"], request["locator"]
    cls = ATTACKS.get(locator)
    if kind == "describe":
        defaults = cls.parameter_defaults()
        return {"id": cls.id, "name": cls.__name__, "version": str(cls.version),
                "reference": str(getattr(cls, "reference", "")), "summary": cls.summary(), "honest": bool(cls.honest),
                "task_types": sorted(cls.task_types), "final_only_params": sorted(cls.final_only_params),
                "added_parameters": sorted(cls._added_parameters), "defaults": defaults,
                "list_valued": [name for name in defaults if list_valued(cls, name)],
                "source_files": [str(path) for path in plugin_source_files(cls)]}
    if kind == "budget_params":
        return {"value": cls.budget_params(request["budget"])}
    if kind == "strength_grid":
        return {"value": cls.strength_grid(request["budget"], request["n"])}
    attack = ATTACKS.make(locator, **request["params"])
    if kind == "validate":
        attack.validate_params()
        return {}
    if kind == "incompatibility":
        return {"value": attack.incompatibility(data_from(request["data"], arrays))}
    if kind == "max_submissions":
        return {"value": attack.max_submissions(data_from(request["data"], arrays))}
    raise ValueError(f"unknown question {kind!r}")


def _plain(value: Any) -> Any:
    """JSON for NumPy's numbers and arrays, tuples and sets (as lists); else a ``TypeError``."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} {value!r} is not plain data (numbers, strings, lists, tables)")
