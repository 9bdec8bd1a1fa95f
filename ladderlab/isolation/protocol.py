"""Isolated attacks: the attack plays in a sandboxed process and reaches the leaderboard by messages.

With ``isolation="process"`` an attack is built, checked and run in a process of the
sandbox (:mod:`ladderlab.isolation.sandbox`: another user or a user namespace, its own PID, mount
and network namespaces, a read-only view of the Python installation and of the attack's
own source files), never in the process that holds the labels. That process receives
only the attack's locator and parameters, the task's :class:`~ladderlab.tasks.PublicData`,
the state of the attack's own random stream (not the seed it was derived from) and a
:class:`BoardClient`. The labels, the split, the mechanism, the leaderboard, the seeds,
the run directory and the scenario stay with the organiser.

The protocol is the leaderboard's message set, the same as a remote client's: submit a
batch of predictions with a number of repeats (the reply holds the released scores, the
submissions made and the submissions left), and, on boards created with ``oracle=True``,
ask for the oracle's jump count. A message (:class:`Channel`) is a JSON header and the raw
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
import dataclasses
import hashlib
import importlib.util
import inspect
import json
import math
import os
import socket
import struct
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.attack import Attack
from ladderlab.board import Board, BudgetExceeded
from ladderlab.isolation import multiplexing
from ladderlab.isolation.colocation import adopt, colocated
from ladderlab.isolation.multiplexing import Part, Posted, attack_side, joined, unpack
from ladderlab.isolation.sandbox import Sandbox, SourceFile, View, require, sandbox_for
from ladderlab.mechanism import check_repeats
from ladderlab.params import ParameterError
from ladderlab.tasks import PublicData
from ladderlab.utils.sources import LOCAL_MODULE_PREFIX, plugin_file_sources

T = TypeVar("T")
Isolation = Literal["none", "process"]
ISOLATION_MODES: tuple[str, ...] = ("none", "process")


class AttackProcessError(RuntimeError):
    """The attack process failed, died, or broke the protocol; the message says how."""


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


# --- wire format: a JSON header, then raw arrays; submissions and releases in a fixed header ----

HEADER_LIMIT = 1 << 20
"""Largest header read from the other side, in bytes."""
ARRAY_KINDS = frozenset("biufc")
"""The dtype kinds an array may have on the wire: booleans and numbers, never objects."""
_PREFIX = struct.Struct("<IQ")
_READ_AHEAD = 1 << 16
_LEAN = struct.Struct("<4sB3xqqqqq")
"""The rest of a fixed-header message after its prefix: the array's dtype and number of
dimensions, its shape (three sizes, unused ones 0) and two integers (a submission's repeats;
a release's submissions made and left, -1 for no limit)."""
_HEAD = struct.Struct(_PREFIX.format + _LEAN.format[1:])
"""A whole fixed header: prefix, then the rest."""
_PART = struct.Struct("<I" + _HEAD.format[1:])
"""A part of a message of several duels' parts: the duel's slot, then a fixed header."""
_COUNT = struct.Struct("<I")
"""The number of parts, first in a message of parts."""
SUBMIT_TAG, RELEASED_TAG, PARTS_TAG = 0xFFFF_FFFF, 0xFFFF_FFFE, 0xFFFF_FFFD
"""Prefix values (beyond :data:`HEADER_LIMIT`) of the fixed-header messages: a batch of
predictions (``submit_many``), the released scores that answer it (``released``), and
several duels' submissions or releases in one message (:mod:`ladderlab.isolation.multiplexing`)."""
_LEAN_CODES = {np.dtype(code): np.dtype(code).str.encode().ljust(4, b"\0")
               for code in ("?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16")}
"""The dtypes a fixed-header message may name (native numbers), and how; others take the JSON header."""
_LEAN_DTYPES = {code: dtype for dtype, code in _LEAN_CODES.items()}
_FLOAT64 = _LEAN_CODES[np.dtype(np.float64)]

Fields = tuple[Any, ...]
"""A fixed header's fields after the prefix's tag: bytes, dtype code, dimensions, three sizes, two integers."""


class Channel:
    """One end of a message stream over a socket. A message is the lengths of its header and
    body, a JSON header that names its arrays (dtype and shape), and the arrays' bytes (one
    write when small; large arrays are sent and received without copies). The two messages
    of every submission, a batch of predictions and its released scores, have a fixed binary
    header instead (:meth:`send_submission`, :meth:`send_released`), read without building
    or parsing text, and so do several duels' submissions or releases sent as one message
    (:meth:`send_parts`). Arrays are rebuilt from numeric dtypes only: nothing that crosses is
    ever unpickled or evaluated."""

    __slots__ = ("_buffer", "_end", "_socket", "_start")

    def __init__(self, channel: socket.socket):
        self._socket = channel
        self._buffer = bytearray(_READ_AHEAD)
        self._start = self._end = 0
        """The read-ahead buffer's unread bytes are ``_buffer[_start:_end]``."""

    def send(self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
        contiguous = {name: np.ascontiguousarray(array) for name, array in (arrays or {}).items()}
        described = [[name, array.dtype.str, list(array.shape)] for name, array in contiguous.items()]
        head = json.dumps({**header, "arrays": described}).encode()
        size = sum(array.nbytes for array in contiguous.values())
        self._send_parts([_PREFIX.pack(len(head), size) + head, *contiguous.values()], len(head) + size)

    def send_submission(self, predictions: np.ndarray, repeats: int) -> None:
        """The message ``{"kind": "submit_many", "repeats": repeats}`` with the array ``predictions``."""
        self._send_lean({"kind": "submit_many", "repeats": repeats}, {"predictions": predictions})

    def send_released(self, released: np.ndarray, submissions: int, remaining: int | None) -> None:
        """The message ``{"kind": "released", "submissions": …, "remaining": …}`` with the array ``released``."""
        self._send_lean({"kind": "released", "submissions": submissions, "remaining": remaining},
                        {"released": released})

    def _send_lean(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        lean = _lean(header, arrays)
        if lean is None:
            self.send(header, arrays)
        else:
            fields, array = lean
            head = _HEAD.pack(*fields)
            self._send_parts([head, array], len(head) + array.nbytes)

    def send_parts(self, parts: Sequence[Posted]) -> None:
        """The parts of several duels, ``(slot, header, arrays)``, as one message: when every
        part is a submission or a release, the number of parts, then each part's slot and
        fixed header and its array; else the JSON message of :func:`ladderlab.isolation.multiplexing.pack`.
        :meth:`receive_parts` reads either."""
        pieces: list[Any] = [b""]
        size = _COUNT.size
        for slot, header, arrays in parts:
            lean = _lean(header, arrays)
            if lean is None:
                self.send(*multiplexing.pack("parts", parts))
                return
            fields, array = lean
            pieces += [_PART.pack(slot, *fields), array]
            size += _PART.size + array.nbytes
        pieces[0] = _PREFIX.pack(PARTS_TAG, size) + _COUNT.pack(len(parts))
        self._send_parts(pieces, _PREFIX.size + size)

    def _send_parts(self, parts: list[Any], size: int) -> None:
        """Write ``parts`` (``size`` bytes in all; bytes and C-contiguous arrays) in order, in
        one gathering system call when the socket takes them all, else in as few as it takes,
        never copying them into one buffer."""
        sent = self._socket.sendmsg(parts)
        if sent == size:
            return
        views = [memoryview(part.reshape(-1).view(np.uint8)) if isinstance(part, np.ndarray) else memoryview(part)
                 for part in parts]
        while views:
            while views and sent >= views[0].nbytes:
                sent -= views.pop(0).nbytes
            if views:
                views[0] = views[0][sent:]
                sent = self._socket.sendmsg(views)

    def receive(self) -> Part:
        """One message; :class:`AttackProcessError` if it is not one, ``EOFError`` if the other end closed."""
        head_size, body_size = _PREFIX.unpack(self._read(_PREFIX.size))
        try:
            if head_size in (SUBMIT_TAG, RELEASED_TAG):
                fields = (head_size, body_size, *_LEAN.unpack(self._read(_LEAN.size)))
                layout = _lean_layout(fields)
                return _built(fields, layout, self._read(body_size), 0)
            return self._receive_json(head_size, body_size)
        except (ValueError, TypeError, EOFError, MemoryError, OverflowError) as error:
            raise _broken(error) from None

    def receive_parts(self) -> list[tuple[int, Part]]:
        """The parts of a message that :meth:`send_parts` sent, by slot: :class:`AttackProcessError`
        if it is not one or names a slot twice, ``EOFError`` if the other end closed."""
        head_size, body_size = _PREFIX.unpack(self._read(_PREFIX.size))
        try:
            if head_size == PARTS_TAG:
                parts = _parts(self._part_reader(body_size), body_size)
            else:
                parts = multiplexing.unpack(*self._receive_json(head_size, body_size))
            if not parts:
                raise ValueError("a message of no parts")
            if len({slot for slot, _ in parts}) != len(parts):
                raise ValueError("a message with two parts for one duel")
            return parts
        except (ValueError, TypeError, EOFError, MemoryError, OverflowError, struct.error) as error:
            raise _broken(error) from None

    def _part_reader(self, body_size: int) -> Callable[[int], Any]:
        """What reads a message of parts of ``body_size`` bytes, a piece at a time: a small one
        is read whole and handed out in slices, a large one piece by piece (each large array into
        a buffer of its own, as a single message's)."""
        if body_size > _READ_AHEAD:
            return self._read
        body, taken = memoryview(self._read(body_size)), 0

        def take(size: int) -> memoryview:
            nonlocal taken
            taken += size
            return body[taken - size : taken]

        return take

    def _receive_json(self, head_size: int, body_size: int) -> Part:
        """A message with a JSON header (after its prefix)."""
        if head_size > HEADER_LIMIT:
            raise ValueError(f"a header of {head_size} bytes (at most {HEADER_LIMIT})")
        header = json.loads(self._read(head_size))
        if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
            raise ValueError("a message must be a JSON object with a 'kind'")
        layout = [_array_layout(entry) for entry in header.pop("arrays", [])]
        if sum(nbytes for *_, nbytes in layout) != body_size:
            raise ValueError("the arrays do not fill the message")
        body, offset, arrays = self._read(body_size), 0, {}
        for name, dtype, shape, nbytes in layout:
            arrays[name] = np.frombuffer(body, dtype, nbytes // dtype.itemsize, offset).reshape(shape)
            offset += nbytes
        return header, arrays

    def _read(self, size: int) -> bytearray:
        """``size`` bytes: small reads through the read-ahead buffer (a whole small message is
        one system call), large ones straight into their own buffer."""
        if size > _READ_AHEAD:
            data = bytearray(size)
            self._read_into(memoryview(data))
            return data
        if self._end - self._start < size:
            self._fill(size)
        start = self._start
        self._start += size
        return self._buffer[start : self._start]

    def _fill(self, size: int) -> None:
        """Read until the read-ahead buffer holds ``size`` ≤ its length unread bytes."""
        if self._start == self._end:
            self._start = self._end = 0
        elif self._start:  # move the unread bytes to the front
            unread = self._end - self._start
            self._buffer[:unread] = self._buffer[self._start : self._end]
            self._start, self._end = 0, unread
        with memoryview(self._buffer) as buffer:
            while self._end < size:
                got = self._socket.recv_into(buffer[self._end :])
                if not got:
                    raise EOFError("the channel closed" + (" in the middle of a message" if self._end else ""))
                self._end += got

    def _read_into(self, view: memoryview) -> None:
        """Fill ``view``: first from the read-ahead buffer, the rest straight from the socket."""
        filled = min(self._end - self._start, view.nbytes)
        if filled:
            view[:filled] = memoryview(self._buffer)[self._start : self._start + filled]
            self._start += filled
        while filled < view.nbytes:
            got = self._socket.recv_into(view[filled:])
            if not got:
                raise EOFError("the channel closed in the middle of a message")
            filled += got

    def close(self) -> None:
        self._socket.close()


def _broken(error: BaseException) -> AttackProcessError:
    return AttackProcessError(f"the attack process broke the protocol: {error or type(error).__name__}")


def _lean(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[Fields, np.ndarray] | None:
    """A submission's or a release's fixed header (its fields, for :data:`_HEAD`) and its
    array, or None if the message is not one or cannot have one."""
    kind = header["kind"]
    if kind == "submit_many":
        if set(arrays) != {"predictions"}:  # a submission with guesses goes as a described message
            return None
        array, repeats = np.ascontiguousarray(arrays["predictions"]), header["repeats"]
        code = _LEAN_CODES.get(array.dtype)
        if code is None or not 1 <= array.ndim <= 3 or type(repeats) is not int or not 0 < repeats < 1 << 63:
            return None
        return (SUBMIT_TAG, array.nbytes, code, array.ndim, *(*array.shape, 0, 0)[:3], repeats, 0), array
    if kind == "released":
        scores, remaining = np.ascontiguousarray(arrays["released"], dtype=np.float64).reshape(-1), header["remaining"]
        return (RELEASED_TAG, scores.nbytes, _FLOAT64, 1, scores.size, 0, 0, header["submissions"],
                -1 if remaining is None else remaining), scores
    return None


def _lean_layout(fields: Fields) -> tuple[np.dtype, tuple[int, ...]]:
    """The dtype and shape of the array of a fixed header's ``fields``; ``ValueError`` unless
    the header is one that :func:`_lean` makes."""
    tag, nbytes, code, ndim, size_0, size_1, size_2, first, second = fields
    dtype, sizes = _LEAN_DTYPES.get(code), (size_0, size_1, size_2)
    if dtype is None or not 1 <= ndim <= 3 or min(sizes) < 0 or any(sizes[ndim:]):
        raise ValueError(f"a fixed header with dtype {code!r}, {ndim} dimensions and sizes {sizes}")
    shape = sizes[:ndim]
    if math.prod(shape) * dtype.itemsize != nbytes:
        raise ValueError("the array does not fill the message")
    if tag == RELEASED_TAG and (code != _FLOAT64 or ndim != 1 or first < 0 or second < -1):
        raise ValueError("a release must be a vector of float64 scores and two counts")
    return dtype, shape


def _built(fields: Fields, layout: tuple[np.dtype, tuple[int, ...]], buffer: bytearray, offset: int) -> Part:
    """The message of a fixed header's ``fields`` (of ``layout``) whose array lies in ``buffer``
    at ``offset``; the array shares the buffer, which must be the message's own."""
    tag, nbytes, *_, first, second = fields
    dtype, shape = layout
    array = np.frombuffer(buffer, dtype, nbytes // dtype.itemsize, offset).reshape(shape)
    if tag == SUBMIT_TAG:
        return {"kind": "submit_many", "repeats": first}, {"predictions": array}
    return {"kind": "released", "submissions": first, "remaining": None if second == -1 else second}, {"released": array}


def _parts(take: Callable[[int], Any], body_size: int) -> list[tuple[int, Part]]:
    """The parts of a fixed-header message of parts of ``body_size`` bytes (after its prefix),
    each piece read with ``take(size)``, which is never asked past the message."""
    if body_size < _COUNT.size:
        raise ValueError(f"a message of parts of {body_size} bytes")
    (count,) = _COUNT.unpack(take(_COUNT.size))
    parts, read = [], _COUNT.size
    for index in range(count):
        if read + _PART.size > body_size:
            raise ValueError(f"{count} parts do not fit in a message of {body_size} bytes")
        record = _PART.unpack(take(_PART.size))
        read += _PART.size
        slot, fields = record[0], record[1:]
        if fields[0] not in (SUBMIT_TAG, RELEASED_TAG) or read + fields[1] > body_size:
            raise ValueError(f"part {index} is not a submission or a release within the message")
        layout = _lean_layout(fields)
        parts.append((slot, _built(fields, layout, take(fields[1]), 0)))
        read += fields[1]
    if read != body_size:
        raise ValueError("the parts do not fill the message")
    return parts


def _array_layout(entry: Any) -> tuple[str, np.dtype, tuple[int, ...], int]:
    """(name, dtype, shape, bytes) of an array named in a header; ``ValueError`` unless numeric."""
    name, dtype_text, shape = entry
    dtype = np.dtype(str(dtype_text))
    if dtype.kind not in ARRAY_KINDS or not isinstance(name, str):
        raise ValueError(f"array {name!r} has dtype {dtype_text!r}; only booleans and numbers cross")
    if not all(isinstance(size, int) and size >= 0 for size in shape):
        raise ValueError(f"array {name!r} has shape {shape!r}")
    return name, dtype, tuple(shape), math.prod(shape) * dtype.itemsize


_RELAYED_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (ValueError, TypeError, RuntimeError, PermissionError, KeyError, IndexError, ZeroDivisionError,
                ArithmeticError, FloatingPointError, NotImplementedError, AssertionError, MemoryError,
                BudgetExceeded, ParameterError, np.linalg.LinAlgError)
}
"""Exception types re-raised as themselves on the other side (by name, never unpickled)."""


def _error_message(error: BaseException) -> dict[str, Any]:
    return {"kind": "error", "type": type(error).__name__, "message": str(error)}


def _relayed(header: dict[str, Any], unknown: type[Exception]) -> Exception:
    name, message = str(header.get("type")), str(header.get("message"))
    error_type = _RELAYED_ERRORS.get(name)
    return unknown(f"{name}: {message}") if error_type is None else error_type(message)


_DATA_ARRAYS = ("X_train", "y_train", "X_holdout", "classes", "public_rows")


def _data_message(data: PublicData) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    fields = {field.name: getattr(data, field.name) for field in dataclasses.fields(data)}
    arrays = {f"data.{name}": np.asarray(fields.pop(name)) for name in _DATA_ARRAYS if fields[name] is not None}
    for name in _DATA_ARRAYS:
        fields.pop(name, None)
    return fields, arrays


def _data_from(fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> PublicData:
    present = {name: arrays.get(f"data.{name}") for name in _DATA_ARRAYS}
    if fields.get("prediction_range") is not None:
        fields = {**fields, "prediction_range": tuple(fields["prediction_range"])}
    return PublicData(**fields, **present)


# --- the attack's side -----------------------------------------------------------------------

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
            raise _relayed(reply, RuntimeError)
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

    try:
        attack = AttackRef(request["locator"], request["params"]).make()
        data = _data_from(request["data"], arrays)
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
        channel.send({**_error_message(error), "traceback": traceback.format_exc()})


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
        channel.send({**_error_message(error), **parameter})


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
        return {"value": attack.incompatibility(_data_from(request["data"], arrays))}
    if kind == "max_submissions":
        return {"value": attack.max_submissions(_data_from(request["data"], arrays))}
    raise ValueError(f"unknown question {kind!r}")


def _plain(value: Any) -> Any:
    """JSON for NumPy's numbers and arrays, tuples and sets (as lists); else a ``TypeError``."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} {value!r} is not plain data (numbers, strings, lists, tables)")


# --- the organiser's side --------------------------------------------------------------------

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
    data_fields, data_arrays = _data_message(data)
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
                channel.send(_error_message(error))
            else:
                channel.send_released(released, board.submissions, board.remaining)
        elif kind == "oracle_jumps":
            try:
                channel.send({"kind": "jumps", "jumps": board.oracle_jumps(int(header["since"]))})
            except Exception as error:
                channel.send(_error_message(error))
        elif kind == "done" and "prediction" in arrays:
            return AttackOutcome(arrays["prediction"], _checked_marks(header.get("marks")),
                                 snapshot_fingerprint(view, header.get("fingerprint")))
        elif kind == "incompatible":
            raise AttackIncompatible(str(header.get("reason")))
        elif kind == "error":
            raise _relayed(header, AttackProcessError)
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
