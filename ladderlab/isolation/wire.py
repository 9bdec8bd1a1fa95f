"""The wire between the organiser and an attack process: messages of a JSON header and raw arrays.

A message (:class:`Channel`) is a JSON header and the raw bytes of numeric arrays, in both
directions, so neither side ever unpickles what the other sends; a submission and its reply, the
messages of the hot path, have a fixed binary header instead of JSON, and several duels' parts
travel in one message (:mod:`ladderlab.isolation.multiplexing`). Errors cross by name
(:func:`relayed`), public data as fields and arrays (:func:`data_message`). Both sides speak it:
the organiser (:mod:`ladderlab.isolation.protocol`) and the attack process
(:mod:`ladderlab.isolation.attack_process`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ladderlab.board import BudgetExceeded
from ladderlab.isolation import multiplexing
from ladderlab.isolation.multiplexing import Part, Posted
from ladderlab.params import ParameterError
from ladderlab.tasks import PublicData


class AttackProcessError(RuntimeError):
    """The attack process failed, died, or broke the protocol; the message says how."""


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


def error_message(error: BaseException) -> dict[str, Any]:
    return {"kind": "error", "type": type(error).__name__, "message": str(error)}


def relayed(header: dict[str, Any], unknown: type[Exception]) -> Exception:
    name, message = str(header.get("type")), str(header.get("message"))
    error_type = _RELAYED_ERRORS.get(name)
    return unknown(f"{name}: {message}") if error_type is None else error_type(message)


_DATA_ARRAYS = ("X_train", "y_train", "X_holdout", "classes", "public_rows")


def data_message(data: PublicData) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    fields = {field.name: getattr(data, field.name) for field in dataclasses.fields(data)}
    arrays = {f"data.{name}": np.asarray(fields.pop(name)) for name in _DATA_ARRAYS if fields[name] is not None}
    for name in _DATA_ARRAYS:
        fields.pop(name, None)
    return fields, arrays


def data_from(fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> PublicData:
    present = {name: arrays.get(f"data.{name}") for name in _DATA_ARRAYS}
    if fields.get("prediction_range") is not None:
        fields = {**fields, "prediction_range": tuple(fields["prediction_range"])}
    return PublicData(**fields, **present)
