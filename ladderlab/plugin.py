"""The common base of every plugin family, following scikit-learn's estimator conventions.

Parameters are keyword arguments of ``__init__`` stored unchanged under their own
names; ``get_params``, ``set_params``, ``sklearn.base.clone`` and the repr come from
:class:`sklearn.base.BaseEstimator`. Each class declares the admissible values of its
parameters in ``_parameter_constraints`` (:mod:`ladderlab.params`); they are checked in
one place, :meth:`Plugin.validate_params`, when the plugin is put to work, never in
``__init__``. State created by work carries a trailing underscore.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from sklearn.base import BaseEstimator

from ladderlab.params import Constraint, validate_params


class Plugin(BaseEstimator):
    """A mechanism or attack: an ``id``, a paper ``reference`` and parameters."""

    id: ClassVar[str]
    """The registry id, e.g. ``"ladder-t"``."""
    reference: ClassVar[str]
    """Where the algorithm is specified, e.g. ``"Chaibub Neto et al. 2016, Alg. 3"``."""
    version: ClassVar[str] = "1"
    """Bumped when the plugin's results change for the same parameters and seed."""
    _parameter_constraints: ClassVar[dict[str, list[Constraint | None]]] = {}
    """Admissible values of each ``__init__`` parameter (see :mod:`ladderlab.params`)."""
    _added_parameters: ClassVar[frozenset[str]] = frozenset()
    """Parameters added after results were recorded: at their default value they are left
    out of the plugin's identity (:meth:`identity_params`), so the random streams derived
    from it, and with them earlier results, stay bit-identical."""

    def identity_params(self) -> dict[str, Any]:
        """The parameters that identify this plugin for seeding: all of them, except added
        parameters (``_added_parameters``) at their default value."""
        defaults = self.parameter_defaults()
        return {
            name: value for name, value in self.get_params().items()
            if not (name in self._added_parameters and value == defaults.get(name))
        }

    def validate_params(self) -> None:
        """Raise :class:`ladderlab.params.ParameterError` for a parameter value outside its declaration."""
        validate_params(self)

    @classmethod
    def summary(cls) -> str:
        """The first line of the class docstring."""
        return (inspect.getdoc(cls) or "").splitlines()[0]

    @classmethod
    def parameter_defaults(cls) -> dict[str, Any]:
        """Every ``__init__`` parameter with its default value."""
        signature = inspect.signature(cls.__init__)
        return {
            name: p.default
            for name, p in signature.parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        }
