"""The base of every model of a file ladderlab reads (scenarios, challenges), and its errors
as one line per problem."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    ValidationError,
)

from ladderlab.naming import unknown_name_error
from ladderlab.params import Interval


def _normal(value: float) -> float:
    """``value``, or ``ValueError`` for a subnormal number (:class:`ladderlab.params.Interval`'s rule)."""
    hint = Interval(float, None, None).hint(value)
    if hint:
        raise ValueError(f"{value!r} is {hint}")
    return value


FiniteFloat = Annotated[StrictFloat, Field(allow_inf_nan=False), AfterValidator(_normal)]
"""A real number in a file: an integer or a float, never a bool, NaN, infinite or subnormal."""


class StrictModel(BaseModel):
    """A table of a scenario or challenge file; unknown keys are refused, naming them."""

    model_config = ConfigDict(extra="forbid")


def problem_lines(error: ValidationError, source: str, known_keys: Iterable[str]) -> str:
    """One line per problem of ``error``, each naming ``source``, the location, the problem and
    the value given; an unknown key comes with the near misses among ``known_keys``."""
    problems = []
    for problem in error.errors():
        where = ".".join(f"[{part}]" if isinstance(part, int) else str(part) for part in problem["loc"]).replace(".[", "[")
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            key = str(problem["loc"][-1])
            message = (f"unknown key {key!r} here: it belongs in another table" if key in known_keys
                       else str(unknown_name_error("key", key, known_keys)))
        elif problem["type"] not in ("value_error", "missing") and "input" in problem:
            message = f"{message}, got {problem['input']!r}"
        location = where or ("" if problem["type"] == "value_error" else "top level")
        problems.append(f"{source}: {location}: {message}" if location else f"{source}: {message}")
    return "\n".join(problems)
