"""Declarative parameter constraints, checked in one place (after scikit-learn's ``_parameter_constraints``).

Every plugin class declares, for each ``__init__`` parameter, the list of
constraints its value may satisfy (any one suffices)::

    _parameter_constraints = {
        "alpha": [Interval(float, 0, None, closed="neither")],
        "variant": [Options({"kaggle", "ladder"})],
        "models": [ListOf(Options({"ridge", "knn"}), min_length=1)],
        "n_samples": [Interval(int, 9, None), None],   # None: the value None is allowed
    }

:func:`validate_params` checks a plugin's current parameters against the
declaration and raises :class:`ParameterError` naming the plugin, the parameter
and the value. Types are strict: a bool is not an integer, a float or a string is
not an integer, and a real parameter must be finite unless a bound is infinite.
The same declaration serves ``ladderlab list``, the documentation and the scenario
grid (a :class:`ListOf` parameter is one value, never expanded into a grid).
"""

from __future__ import annotations

import difflib
import math
import numbers
import sys
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np


class ParameterError(ValueError):
    """A plugin parameter with a value the plugin cannot use; the message names both."""

    def __init__(self, message: str, parameter: str):
        super().__init__(message)
        self.parameter = parameter

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (str(self), self.parameter)


class Constraint:
    """One admissible form of a parameter value."""

    single_value_list: bool = False
    """True when a list satisfying this constraint is one value (a scenario grid must not expand it)."""

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def hint(self, value: Any) -> str:
        """Extra help for a rejected value ("did you mean"), or ""."""
        return ""


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


INT64_LIMIT = 2**63
"""Whole-number parameters lie in [−2⁶³, 2⁶³): results store them as 64-bit integers."""


def _subnormal(value: float) -> bool:
    return value != 0.0 and abs(value) < sys.float_info.min


@dataclass(frozen=True)
class Interval(Constraint):
    """A number of type ``int`` or ``float`` between ``low`` and ``high`` (None: unbounded).

    ``closed`` says which ends belong to the interval: ``"both"``, ``"left"``,
    ``"right"`` or ``"neither"``. ``int`` admits only integers (not bools, not 2.0)
    that fit a 64-bit integer, as results store them; ``float`` admits integers and
    floats, finite unless the matching bound is None and ``allow_infinite`` is set, and
    never a subnormal number (below 2.2e-308 in size but not 0: dividing by it
    overflows, so no rounding step, scale or rate can be one).
    """

    type: type
    low: float | None
    high: float | None
    closed: Literal["both", "left", "right", "neither"] = "both"
    allow_infinite: bool = False

    def accepts(self, value: Any) -> bool:
        if self.type is int and not (_is_integer(value) and -INT64_LIMIT <= value < INT64_LIMIT):
            return False
        if self.type is float and not _is_real(value):
            return False
        value = float(value)
        if math.isnan(value) or _subnormal(value):
            return False
        if math.isinf(value) and not self.allow_infinite:
            return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def describe(self) -> str:
        kind = "a whole number" if self.type is int else "a finite real number"
        if self.type is float and self.allow_infinite:
            kind = "a real number"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        if self.low is None and self.high is None:
            return kind
        return f"{kind} in {left}{low}, {high}{right}"

    def hint(self, value: Any) -> str:
        if self.type is int and _is_integer(value) and not -INT64_LIMIT <= value < INT64_LIMIT:
            return "larger than a 64-bit integer"
        if _is_real(value) and _subnormal(float(value)):
            return f"a subnormal number, below the smallest normal {sys.float_info.min:.3g}: dividing by it overflows"
        return ""


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values (usually strings)."""

    values: frozenset

    def __init__(self, values: set | frozenset | list | tuple):
        object.__setattr__(self, "values", frozenset(values))

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) and not any(isinstance(v, bool) for v in self.values):
            return False
        try:
            return value in self.values
        except TypeError:
            return False

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in sorted(self.values, key=str))

    def hint(self, value: Any) -> str:
        if isinstance(value, str) and all(isinstance(v, str) for v in self.values):
            close = difflib.get_close_matches(value, sorted(self.values), n=3, cutoff=0.5)
            return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return ""


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (not 0, 1 or a string)."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class ListOf(Constraint):
    """A list (or tuple) whose every item satisfies ``item``, of at least ``min_length`` items.

    A parameter declared this way is a single value: a scenario grid never expands it.
    """

    item: Constraint
    min_length: int = 0
    single_value_list = True

    def accepts(self, value: Any) -> bool:
        return (
            isinstance(value, (list, tuple))
            and len(value) >= self.min_length
            and all(self.item.accepts(v) for v in value)
        )

    def describe(self) -> str:
        at_least = f"at least {self.min_length} " if self.min_length else ""
        return f"a list of {at_least}items, each {self.item.describe()}"


@dataclass(frozen=True)
class Vector(Constraint):
    """A one-dimensional sequence of finite real numbers (a list, tuple or numpy vector).

    Its length is a relation with the data (checked when the plugin is bound); a
    parameter declared this way is a single value, never expanded into a grid.
    """

    single_value_list = True

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, (list, tuple, np.ndarray)):
            return False
        array = np.asarray(value)
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
            return False
        return array.ndim == 1 and array.size > 0 and bool(np.isfinite(array).all())

    def describe(self) -> str:
        return "a vector of finite numbers"


@dataclass(frozen=True)
class Range(Constraint):
    """A range ``[low, high]`` of finite real numbers with low < high (a list or tuple of two),
    within [``low``, ``high``] of the constraint where they are given: a declared prediction
    range. One value, never expanded into a grid."""

    low: float | None = None
    high: float | None = None
    single_value_list = True

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(_is_real(v) for v in value):
            return False
        low, high = (float(v) for v in value)
        return (math.isfinite(low) and math.isfinite(high) and low < high
                and (self.low is None or low >= self.low) and (self.high is None or high <= self.high))

    def describe(self) -> str:
        within = "" if self.low is None and self.high is None else f" within [{self.low:g}, {self.high:g}]"
        return f"a range [low, high] of finite numbers with low < high{within}"


@dataclass(frozen=True)
class InstanceOf(Constraint):
    """An instance of a type (e.g. ``str`` for a free-form name)."""

    type: type

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.type) and not (isinstance(value, bool) and self.type is not bool)

    def describe(self) -> str:
        return f"a {self.type.__name__}"


def _admits(constraints: list[Constraint | None], value: Any) -> bool:
    return any(value is None if c is None else c.accepts(value) for c in constraints)


def describe(constraints: list[Constraint | None]) -> str:
    """The declaration in words: ``"a whole number in [1, inf) or None"``."""
    return " or ".join("None" if c is None else c.describe() for c in constraints)


def list_valued(cls: type, name: str) -> bool:
    """True when ``cls`` declares parameter ``name`` as a list (a scenario grid must not expand it);
    a class known only by description (:mod:`ladderlab.isolation.untrusted`) names them in ``list_valued_parameters``."""
    described = getattr(cls, "list_valued_parameters", None)
    if described is not None:
        return name in described
    constraints = getattr(cls, "_parameter_constraints", {}).get(name, [])
    return any(c is not None and c.single_value_list for c in constraints)


def check_value(owner: str, name: str, value: Any, constraints: list[Constraint | None]) -> None:
    """Raise :class:`ParameterError` unless ``value`` satisfies one of ``constraints``."""
    if _admits(constraints, value):
        return
    hints = [c.hint(value) for c in constraints if c is not None]
    hint = next((h for h in hints if h), "")
    message = f"{owner}: parameter {name!r} = {value!r} is invalid; it must be {describe(constraints)}"
    raise ParameterError(f"{message} ({hint})" if hint else message, name)


def validate_params(plugin: Any) -> None:
    """Check every parameter of ``plugin`` against its class's ``_parameter_constraints``.

    A parameter without a declaration is a programming error of the plugin and is
    reported as such. A class that declares nothing at all (a third-party plugin
    written before declarations existed) is not checked here; its own code checks.
    """
    cls = type(plugin)
    declared: dict[str, list[Constraint | None]] = getattr(cls, "_parameter_constraints", {})
    if not declared:
        return
    owner = getattr(cls, "id", cls.__name__)
    for name, value in plugin.get_params(deep=False).items():
        if name not in declared:
            raise ParameterError(
                f"{owner}: parameter {name!r} has no entry in {cls.__name__}._parameter_constraints", name
            )
        check_value(owner, name, value, declared[name])
