"""The common base of every plugin family, following scikit-learn's estimator conventions.

Parameters are keyword arguments of ``__init__`` stored unchanged under their own
names; ``get_params`` and ``set_params`` behave as scikit-learn's ``BaseEstimator``'s
(nested ``name__param`` keys included), so ``sklearn.base.clone`` works on every
plugin, and the repr shows the parameters that differ from their defaults. The base
is written here rather than inherited so that ``import ladderlab`` does not import
scikit-learn (most of the time of ``ladderlab --help``). Each class declares the admissible values of its
parameters in ``_parameter_constraints`` (:mod:`ladderlab.params`); they are checked in
one place, :meth:`Plugin.validate_params`, when the plugin is put to work, never in
``__init__``. State created by work carries a trailing underscore.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Self

from ladderlab.params import Constraint, validate_params
from ladderlab.utils.sources import module_source_files


class Plugin:
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

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The ``__init__`` parameter names, sorted (scikit-learn's convention)."""
        return sorted(cls.parameter_defaults())

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name; with ``deep``, also ``name__param`` for parameters that have parameters."""
        params: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", inner) for key, inner in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> Self:
        """Set parameters by name (``name__param`` sets a nested one); return ``self``."""
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, delimiter, inner = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"Invalid parameter {name!r} for {type(self).__name__}. "
                    f"Valid parameters are: {self._get_param_names()!r}."
                )
            if delimiter:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, inner_params in nested.items():
            valid[name].set_params(**inner_params)
        return self

    def __repr__(self) -> str:
        defaults = self.parameter_defaults()
        changed = [
            f"{name}={value!r}"
            for name, value in ((name, getattr(self, name)) for name in defaults)
            if value is not defaults[name] and repr(value) != repr(defaults[name])
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def validate_params(self) -> None:
        """Raise :class:`ladderlab.params.ParameterError` for a parameter value outside its
        declaration, or ``ValueError`` from :meth:`_check_params` for values that do not go together."""
        validate_params(self)
        self._check_params()

    def _check_params(self) -> None:
        """Raise ``ValueError`` for relations between parameters that the declaration cannot
        express (e.g. "n_public < n_holdout"); single values are declared in
        ``_parameter_constraints``. Runs after the declared checks, with no data at hand."""

    @classmethod
    def summary(cls) -> str:
        """The first line of the class docstring."""
        return (inspect.getdoc(cls) or "").splitlines()[0]

    @classmethod
    def parameter_defaults(cls) -> dict[str, Any]:
        """Every ``__init__`` parameter with its default value."""
        return dict(_init_defaults(cls.__init__))


@functools.cache
def _init_defaults(init: Any) -> tuple[tuple[str, Any], ...]:
    """An ``__init__``'s keyword parameters and defaults, read once per function: reading a
    signature costs more than a whole submission, and sequential duels ask for it often."""
    return tuple(
        (name, p.default)
        for name, p in inspect.signature(init).parameters.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )


# --- fingerprints: what code a plugin's results come from ---------------------------------

def plugin_source_files(cls: type) -> list[Path]:
    """The source files of ``cls`` and of its ancestors that are plugins of the same family
    (not the family's base class, a direct subclass of :class:`Plugin`), each followed by the local modules it imports, in
    method-resolution order, without repeats."""
    files: list[Path] = []
    for ancestor in cls.__mro__:
        if not (isinstance(ancestor, type) and issubclass(ancestor, Plugin)) or ancestor is Plugin or Plugin in ancestor.__bases__:
            continue
        try:
            source = inspect.getsourcefile(ancestor)
        except TypeError:  # defined in C or interactively: no file to hash
            source = None
        if source:
            files += [path for path in module_source_files(ancestor.__module__, Path(source)) if path not in files]
    return files


@cache
def fingerprint(cls: type) -> dict[str, Any]:
    """The plugin's ``version``, its source files, and one SHA-256 over their contents (the
    file names are left out, so a copied run directory stays comparable on another machine).

    Cached per class: a process fingerprints the code it loaded, read right after loading. A
    stand-in for code that runs only in a sandbox (:mod:`ladderlab.isolation.untrusted`) carries the
    fingerprint of the snapshot that the sandbox shows.
    """
    snapshot = getattr(cls, "sandbox_fingerprint", None)
    if snapshot:
        return dict(snapshot)
    files = plugin_source_files(cls)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return {
        "version": str(getattr(cls, "version", "")),
        "source_sha256": digest.hexdigest(),
        "source_files": [str(path) for path in files],
    }


def fingerprint_token(print_: dict[str, Any]) -> str:
    """What decides staleness: version and source hash."""
    return f"v{print_['version']}:{print_['source_sha256'][:16]}"
