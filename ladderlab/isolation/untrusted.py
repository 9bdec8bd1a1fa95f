"""Attack classes from untrusted sources, known to the organiser only through a sandbox.

Under ``isolation="process"`` the organiser never imports an attack that is not one of
ladderlab's own built-in attacks (a ``file.py:Class`` plugin, a ``module:Class``, a
third-party entry point): importing runs the module's top-level code, with the organiser's
rights. Inside :func:`sandboxed_attacks`, ``ATTACKS.get`` returns an
:class:`UntrustedAttack` for such a name instead: a stand-in class that asks a process of
the attack's sandbox (:mod:`ladderlab.isolation.sandbox`) for whatever the organiser needs of the real
class (its id, parameters and defaults, the honest flag, task types, its strength grid,
parameter validation, whether it can play a task), so that scenario checks, certificates
and competitions work unchanged, with the same one-line errors. Replies are JSON, checked
here as untrusted data; nothing is unpickled or evaluated.

The sandbox shows a snapshot of the plugin file and its local modules, read by the
organiser when the stand-in is made (before any of the attack's code ran anywhere), and
the stand-in's fingerprint hashes that snapshot here
(:func:`ladderlab.isolation.protocol.snapshot_fingerprint`).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, ClassVar, TypeVar

import numpy as np

from ladderlab.attack import Attack
from ladderlab.isolation.protocol import AttackRef, lent_attack_process, snapshot_fingerprint
from ladderlab.isolation.sandbox import View, sandbox_for
from ladderlab.isolation.wire import AttackProcessError, data_message, relayed
from ladderlab.params import ParameterError
from ladderlab.tasks import PublicData


class UntrustedAttack(Attack):
    """The organiser's stand-in for an attack class whose code runs only in its sandbox
    (made by :func:`stand_in`; see the module docstring). Its parameters are plain data."""

    id = "untrusted"
    reference = "the attack's own class, in its sandbox"
    sandbox_locator: ClassVar[str] = ""
    """Where the real class lives (what the sandbox imports)."""
    sandbox_view: ClassVar[View] = View()
    """The snapshot of its source that the sandbox shows."""
    sandbox_fingerprint: ClassVar[dict[str, Any]] = {}
    """The fingerprint of that snapshot (:func:`ladderlab.plugin.fingerprint` returns it)."""
    list_valued_parameters: ClassVar[frozenset[str]] = frozenset()
    """The parameters the real class declares list-valued (:func:`ladderlab.params.list_valued`)."""
    _defaults: ClassVar[dict[str, Any]] = {}
    _summary: ClassVar[str] = ""

    def __init__(self, **params: Any):
        defaults = self.parameter_defaults()
        for name in params:
            if name not in defaults:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument {name!r}")
        for name, default in defaults.items():
            setattr(self, name, params.get(name, default))

    @classmethod
    def parameter_defaults(cls) -> dict[str, Any]:
        return copy.deepcopy(cls._defaults)

    @classmethod
    def summary(cls) -> str:
        return cls._summary

    @classmethod
    def budget_params(cls, budget: int) -> dict[str, Any]:
        return _parameters(_ask(cls, {"kind": "budget_params", "budget": int(budget)})["value"], "budget_params")

    @classmethod
    def strength_grid(cls, budget: int, n: int) -> list[dict[str, Any]]:
        grid = _ask(cls, {"kind": "strength_grid", "budget": int(budget), "n": int(n)})["value"]
        if not isinstance(grid, list):
            raise AttackProcessError("the attack process sent a strength grid that is not a list")
        return [_parameters(point, "strength_grid") for point in grid]

    def validate_params(self) -> None:
        _ask(type(self), {"kind": "validate", "params": self.get_params(deep=False)})

    def incompatibility(self, data: PublicData) -> str | None:
        reason = self._ask_about(data, "incompatibility")
        if reason is not None and not isinstance(reason, str):
            raise AttackProcessError("the attack process sent a reason that is not a string")
        return reason

    def max_submissions(self, data: PublicData) -> int | None:
        most = self._ask_about(data, "max_submissions")
        if most is not None and (not isinstance(most, int) or isinstance(most, bool)):
            raise AttackProcessError("the attack process sent a number of submissions that is not a whole number")
        return most

    def _ask_about(self, data: PublicData, kind: str) -> Any:
        fields, arrays = data_message(data)
        return _ask(type(self), {"kind": kind, "params": self.get_params(deep=False), "data": fields}, arrays)["value"]

    def run(self, board: Any, data: PublicData, rng: np.random.Generator) -> Any:
        raise RuntimeError(f"{self.sandbox_locator}: untrusted attack code plays only in its sandbox "
                           "(isolation='process')")


def is_trusted(spec: str) -> bool:
    """True for ladderlab's own built-in attacks, the only code loaded in the organiser's process."""
    from ladderlab.registry import ATTACKS

    return spec in ATTACKS.builtins()


def stand_in(spec: str) -> type[UntrustedAttack]:
    """The stand-in class of the untrusted attack ``spec`` (``file.py:Class``, ``module:Class``
    or a third-party id), described by its sandbox; the same class while its source is unchanged."""
    ref = AttackRef.from_spec(spec, {})
    return _described(ref.locator, ref.view())


@cache
def _described(locator: str, view: View) -> type[UntrustedAttack]:
    bare = type("Untrusted", (UntrustedAttack,), {"sandbox_locator": locator, "sandbox_view": view})
    reply = _ask(bare, {"kind": "describe"})
    try:
        described = _description(reply)
    except (KeyError, TypeError, ValueError) as error:
        raise AttackProcessError(f"the attack process described its class wrongly: {error}") from None
    namespace = {
        "id": described["id"], "version": described["version"], "reference": described["reference"],
        "_summary": described["summary"], "honest": described["honest"],
        "task_types": frozenset(described["task_types"]), "_defaults": described["defaults"],
        "_added_parameters": frozenset(described["added_parameters"]),
        "list_valued_parameters": frozenset(described["list_valued"]),
        "sandbox_locator": locator, "sandbox_view": view,
        "sandbox_fingerprint": snapshot_fingerprint(view, described),
        "__doc__": described["summary"],
    }
    klass = type(described["name"], (UntrustedAttack,), namespace)
    klass.final_only_params = frozenset(described["final_only_params"])  # after the class exists: see Attack.__init_subclass__
    return klass


def _description(reply: dict[str, Any]) -> dict[str, Any]:
    """The class description in a reply, every field of the type it must have."""
    texts = ("id", "name", "version", "reference", "summary")
    lists = ("task_types", "final_only_params", "added_parameters", "list_valued", "source_files")
    described = {name: reply[name] for name in (*texts, *lists, "honest", "defaults")}
    for name in texts:
        if not isinstance(described[name], str):
            raise TypeError(f"{name} is not a string")
    for name in lists:
        if not isinstance(described[name], list) or not all(isinstance(item, str) for item in described[name]):
            raise TypeError(f"{name} is not a list of strings")
    if not isinstance(described["honest"], bool):
        raise TypeError("honest is not true or false")
    if not described["name"].isidentifier():
        raise ValueError(f"class name {described['name']!r} is not a name")
    described["defaults"] = _parameters(described["defaults"], "defaults")
    return described


def _parameters(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AttackProcessError(f"the attack process sent {what} that are not a table of parameters")
    return value


_asking = threading.Lock()


def _ask(klass: type[UntrustedAttack], header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
         ) -> dict[str, Any]:
    """One question to a process of ``klass``'s sandbox; its answer, or the error it raised
    (a :class:`ParameterError` with its parameter, other types as :mod:`ladderlab.isolation.protocol` relays them)."""
    with _asking, lent_attack_process(sandbox_for(klass.sandbox_view)) as channel:
        channel.send({**header, "locator": klass.sandbox_locator}, arrays)
        reply, _ = channel.receive()
    if reply["kind"] == "error":
        if reply.get("type") == "ParameterError":
            raise ParameterError(str(reply.get("message")), str(reply.get("parameter")))
        raise relayed(reply, AttackProcessError)
    if reply["kind"] != "answer":
        raise AttackProcessError(f"the attack process broke the protocol: unexpected message {reply['kind']!r}")
    return reply


@contextlib.contextmanager
def sandboxed_attacks() -> Iterator[None]:
    """Within: ``ATTACKS`` names an untrusted attack by its :func:`stand_in`, never by its code."""
    from ladderlab.registry import ATTACKS

    previous, ATTACKS.stand_in = ATTACKS.stand_in, stand_in
    try:
        yield
    finally:
        ATTACKS.stand_in = previous


def sandboxed_if(isolation: str) -> contextlib.AbstractContextManager[None]:
    """:func:`sandboxed_attacks` under ``isolation="process"``, else nothing."""
    return sandboxed_attacks() if isolation == "process" else contextlib.nullcontext()


F = TypeVar("F", bound=Callable[..., Any])


def sandboxed_when_isolated(function: F) -> F:
    """``function``, run within :func:`sandboxed_attacks` when called with ``isolation="process"``."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with sandboxed_if(signature.bind(*args, **kwargs).arguments.get("isolation", "none")):
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
