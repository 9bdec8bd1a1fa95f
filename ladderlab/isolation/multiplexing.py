"""Isolated duels played together: one round trip carries the next request of each.

An isolated attack that submits one row at a time pays a round trip between two processes
per row, and on a machine where a process switch is dear that switch, and the caches each
process finds cold after it, cost more than the work (``docs/decisions.md#duels-together``).
Duels are independent, so the organiser plays a *window* of duels of the same attack code
at once (:func:`play_together`), each in a greenlet of its own, over one attack process,
which plays them in greenlets too (:func:`attack_side`). Each round the attack process
sends one message holding the next request (or the end) of every duel still playing, and
the organiser answers every request in one message. A duel's results are the same, bit for
bit: its split, board, mechanism and the two random streams are its own, and only the order
in which the two processes interleave independent duels changes.

The duels' code is unchanged: each talks to a :class:`SlotChannel`, whose ``send`` holds a
part for the round's message and whose ``receive`` waits, in the hub, for the part of the
next message addressed to it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import greenlet
import numpy as np

T = TypeVar("T")

WINDOW = 16
"""Most duels played together over one attack process."""

Part = tuple[dict[str, Any], dict[str, np.ndarray]]
"""One duel's share of a message: a header and its arrays."""
Posted = tuple[int, dict[str, Any], dict[str, np.ndarray]]
"""A part with the slot of the duel it is from or for."""


class SlotChannel:
    """One duel's end of a channel that several duels share (the interface of
    :class:`ladderlab.isolation.wire.Channel` that a duel uses)."""

    __slots__ = ("_hub", "slot")

    def __init__(self, hub: _Hub, slot: int):
        self._hub, self.slot = hub, slot

    def send(self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
        self._hub.post(self.slot, header, arrays or {})

    def send_submission(self, predictions: np.ndarray, repeats: int) -> None:
        self.send({"kind": "submit_many", "repeats": repeats}, {"predictions": predictions})

    def send_released(self, released: np.ndarray, submissions: int, remaining: int | None) -> None:
        self.send({"kind": "released", "submissions": submissions, "remaining": remaining}, {"released": released})

    def receive(self) -> Part:
        return self._hub.wait()


class _Hub:
    """The greenlet that owns the real channel: it collects the duels' parts into one message
    and hands each duel its part of the answer."""

    def __init__(self) -> None:
        self.greenlet = greenlet.getcurrent()
        self.outgoing: list[Posted] = []

    def post(self, slot: int, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.outgoing.append((slot, header, arrays))

    def wait(self) -> Part:
        return self.greenlet.switch()

    def take(self) -> list[Posted]:
        """The parts posted since the last call (slot, header, arrays), for one message."""
        parts, self.outgoing = self.outgoing, []
        return parts


def pack(kind: str, parts: Sequence[Posted]) -> Part:
    """One message of ``kind`` holding every part: their headers in order, their arrays named
    ``"<index>/<name>"`` by their place in the message."""
    arrays = {f"{index}/{name}": array for index, (_, _, named) in enumerate(parts) for name, array in named.items()}
    return {"kind": kind, "parts": [[slot, header] for slot, header, _ in parts]}, arrays


def unpack(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> list[tuple[int, Part]]:
    """The parts of a message made by :func:`pack`, by slot; ``ValueError`` if it is not one."""
    parts = header.get("parts")
    if not isinstance(parts, list):
        raise ValueError("a message of several duels without parts")
    unpacked: list[tuple[int, Part]] = []
    named: list[dict[str, np.ndarray]] = [{} for _ in parts]
    for name, array in arrays.items():
        index, _, field = name.partition("/")
        if not index.isdigit() or int(index) >= len(parts) or not field:
            raise ValueError(f"an array {name!r} of no part")
        named[int(index)][field] = array
    for entry, part_arrays in zip(parts, named):
        if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int and isinstance(entry[1], dict)
                and isinstance(entry[1].get("kind"), str)):
            raise ValueError(f"a part {entry!r} that is not [slot, header]")
        unpacked.append((entry[0], (entry[1], part_arrays)))
    return unpacked


def _greenlet_of(body: Callable[[], T]) -> greenlet.greenlet:
    """A greenlet running ``body`` in a copy of the caller's context."""
    child = greenlet.greenlet(body)
    child.gr_context = contextvars.copy_context()
    return child


# --- the attack's side -------------------------------------------------------------------------

def attack_side(channel: Any, duels: Sequence[Part], play: Callable[[Any, dict[str, Any], dict[str, np.ndarray]], None],
                ended: Callable[[], dict[str, Any]]) -> None:
    """Play ``duels`` (start requests and their arrays) together in the attack process:
    ``play(slot_channel, request, arrays)`` for each, round by round, until every duel ended.
    A duel whose greenlet ends without saying how gets ``ended()`` as its last part."""
    hub = _Hub()
    live = {slot: _greenlet_of(lambda slot=slot, request=request, arrays=arrays: play(SlotChannel(hub, slot), request, arrays))
            for slot, (request, arrays) in enumerate(duels)}
    answers: dict[int, Part] = {}
    while live:
        for slot, child in list(live.items()):
            before = len(hub.outgoing)
            child.switch(answers[slot]) if slot in answers else child.switch()
            if child.dead:
                del live[slot]
                if len(hub.outgoing) == before:
                    hub.post(slot, ended(), {})
        channel.send_parts(hub.take())
        if live:
            answers = dict(channel.receive_parts())


# --- the organiser's side ----------------------------------------------------------------------

class _Window:
    """The duels of one :func:`play_together` call: which joined the window, with their start
    requests, and the attack process they share."""

    def __init__(self) -> None:
        self.hub = _Hub()
        self.calls: set[greenlet.greenlet] = set()
        self.joined: dict[int, greenlet.greenlet] = {}
        self.starts: list[Posted] = []
        self.process: Any = None

    def join(self, process: Any, request: dict[str, Any], arrays: dict[str, np.ndarray]) -> SlotChannel | None:
        """The channel of a duel that starts ``request`` on an attack process named by
        ``process``, or None if it must play on its own: it is not one of the window's calls,
        or the window already plays other code."""
        current = greenlet.getcurrent()
        if current not in self.calls or (self.process is not None and process != self.process):
            return None
        self.process = process
        slot = len(self.joined)
        self.joined[slot] = current
        self.starts.append((slot, request, arrays))
        return SlotChannel(self.hub, slot)


_local = threading.local()


def joined(process: Any, request: dict[str, Any], arrays: dict[str, np.ndarray]) -> SlotChannel | None:
    """In a duel of :func:`play_together`: the channel to the window's attack process,
    which ``request`` will start on (see :meth:`_Window.join`); else None."""
    window: _Window | None = getattr(_local, "window", None)
    return None if window is None else window.join(process, request, arrays)


def play_together(calls: Sequence[Callable[[], T]], lend: Callable[[Any], contextlib.AbstractContextManager[Any]],
                  failed: Callable[[str], BaseException]) -> list[T]:
    """The results of ``calls``, in order, each called in a greenlet of its own: the duels
    among them that play an isolated attack (``run_attack`` asks :func:`joined`) of the same
    code share one attack process, ``lend(process)``, and a round trip per round.

    A call's exception is raised here once every call ended. If the attack process breaks
    the protocol or dies, every duel still playing gets ``failed(reason)`` raised where it
    waits for its answer."""
    window = _Window()
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def call(index: int) -> None:
        try:
            results[index] = calls[index]()
        except BaseException as error:  # raised in the caller's greenlet, below
            errors[index] = error

    outer, _local.window = getattr(_local, "window", None), window
    try:
        children = [_greenlet_of(lambda index=index: call(index)) for index in range(len(calls))]
        window.calls = set(children)
        for child in children:
            child.switch()
        if window.joined:
            _serve_window(window, lend, failed)
    finally:
        _local.window = outer
    for error in errors:
        if error is not None:
            raise error
    return results


def _serve_window(window: _Window, lend: Callable[[Any], contextlib.AbstractContextManager[Any]],
                  failed: Callable[[str], BaseException]) -> None:
    """Start the joined duels on one attack process and answer its rounds until all ended."""
    live = dict(window.joined)
    try:
        with lend(window.process) as channel:
            channel.send(*pack("start_many", window.starts))
            window.starts = []
            while live:
                for slot, part in channel.receive_parts():
                    child = live.get(slot)
                    if child is None:
                        raise failed(f"the attack process broke the protocol: a part for duel {slot}, which is not playing")
                    child.switch(part)
                    if child.dead:
                        del live[slot]
                if window.hub.outgoing:
                    channel.send_parts(window.hub.take())
    except BaseException as error:
        if not live or not isinstance(error, Exception):
            raise
        _fail(live, error)


def _fail(live: dict[int, greenlet.greenlet], error: BaseException) -> None:
    for child in live.values():
        child.throw(type(error)(*error.args))
