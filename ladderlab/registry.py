"""Registries of plugins by id, after Gymnasium's ``make(id)``.

A plugin is named by one of:

- a built-in id (``"ladder-t"``): a module of ``ladderlab.mechanisms`` or
  ``ladderlab.attacks`` defining a subclass with that ``id``;
- a third-party id, advertised under the entry-point group ``ladderlab.mechanisms``,
  ``ladderlab.attacks`` or ``ladderlab.tasks`` (``my-mech = my_package.module:MyMechanism``);
- a local file, ``path/to/file.py:ClassName`` (relative to the working directory, or,
  in a scenario file, to the scenario file; the file's folder is importable while it
  loads, so sibling plugin files can import each other), or an importable
  ``module:ClassName``.

An unknown id raises ``ValueError`` with "did you mean" suggestions.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
import tomllib
from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from ladderlab.attack import Attack
from ladderlab.mechanism import Mechanism
from ladderlab.naming import unknown_name_error
from ladderlab.params import describe
from ladderlab.plugin import Plugin
from ladderlab.tasks import Task
from ladderlab.utils.sources import LOCAL_MODULE_PREFIX, plugin_file_sources

P = TypeVar("P", bound=Plugin)

FAMILIES: dict[str, Registry[Any]] = {}
"""Every plugin family by its kind (``"mechanism"``, ``"arena policy"``, …): each registry registers
itself when it is made, so that an area above this one (the arena's) adds its families here."""


class Registry(Generic[P]):
    """One plugin family: its base class, built-in package and entry-point group."""

    def __init__(self, kind: str, base: type[P], package: str, group: str, modules: tuple[str, ...] = ()):
        self.kind = kind
        self.base = base
        self.package = package
        self.group = group
        self.modules = modules
        """Further built-in modules, beside ``package`` (imported when the built-ins are first listed)."""
        FAMILIES[kind] = self
        self.stand_in: Callable[[str], type[P]] | None = None
        """When set (:func:`ladderlab.isolation.untrusted.sandboxed_attacks`), ``get`` returns ``stand_in(spec)``
        for every plugin that is not built in, and never loads its code."""

    @cache
    def builtins(self) -> dict[str, type[P]]:
        """The built-in plugins, by id."""
        package = importlib.import_module(self.package)
        modules = [package]
        if hasattr(package, "__path__"):
            modules = [
                importlib.import_module(f"{self.package}.{info.name}")
                for info in pkgutil.iter_modules(package.__path__)
            ]
        modules += [importlib.import_module(name) for name in self.modules]
        return {cls.id: cls for module in modules for cls in self._plugin_classes(module)}

    def _plugin_classes(self, module: object) -> list[type[P]]:
        return [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, self.base)
            and not inspect.isabstract(cls)
            and "id" in vars(cls)
            and cls.__module__ == getattr(module, "__name__", None)
        ]

    def third_party(self) -> dict[str, Any]:
        """Entry points advertised by installed distributions, by id (not yet loaded)."""
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def ids(self) -> list[str]:
        """Every id that ``get`` accepts without a path: built-in and third-party."""
        return sorted({*self.builtins(), *self.third_party()})

    def describe(self, plugin_ids: list[str] | None = None) -> str:
        """The family's plugins (or those named) with their parameters, declarations and references,
        as ``ladderlab list`` prints them."""
        lines = []
        for plugin_id in self.ids() if plugin_ids is None else plugin_ids:
            cls = self.get(plugin_id)
            defaults = cls.parameter_defaults()
            params = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "no parameters"
            declared = getattr(cls, "_parameter_constraints", {})
            lines.append(f"  {plugin_id:<22} {cls.summary()}")
            lines.append(f"  {'':<22} parameters: {params}")
            for name in defaults:
                constraint = describe(declared[name]) if name in declared else "not declared"
                lines.append(f"  {'':<22}   {name}: {constraint}")
            lines.append(f"  {'':<22} reference: {cls.reference}")
        return "\n".join(lines)

    def get(self, spec: str) -> type[P]:
        """The plugin class named by ``spec`` (an id, ``file.py:Class`` or ``module:Class``)."""
        if ":" in spec:
            if self.stand_in is not None:
                plugin_file(spec)
                return self.stand_in(spec)
            return self._check_class(_load_class(spec), spec)
        if spec in self.builtins():
            return self.builtins()[spec]
        third_party = self.third_party()
        if spec in third_party:
            return self.stand_in(spec) if self.stand_in is not None else self._check_class(third_party[spec].load(), spec)
        raise unknown_name_error(self.kind, spec, self.ids())

    def make(self, spec: str, **params: Any) -> P:
        """An instance of the plugin named by ``spec`` with the given parameters."""
        cls = self.get(spec)
        known = cls.parameter_defaults()
        for name in params:
            if name not in known:
                raise unknown_name_error(f"parameter of {self.kind} {spec!r}", name, known)
        return cls(**params)

    def checked(self, plugin_id: str, params: dict[str, Any], where: str | None = None) -> P:
        """The plugin ``plugin_id`` with ``params``, checked as a scenario checks its entries (a known
        plugin, known parameters, each value within its ``_parameter_constraints``, the relational
        ``_check_params``), before any work; the ``ValueError`` begins with ``where`` when given (the
        command-line argument or file key the values came from)."""
        try:
            plugin = self.make(plugin_id, **params)
            plugin.validate_params()
        except ValueError as error:
            if where is None:
                raise
            raise ValueError(f"{where}: {error}") from None
        return plugin

    def parse(self, text: str) -> tuple[str, dict[str, Any] | None]:
        """The id and parameters of ``id``, ``file.py:Class``, or either with parameters in one
        pair of parentheses: ``ladder(eta=0.01)``, ``hill-climbing(block=10, repeats=1)``
        (None without parentheses).

        Parameter values are TOML literals (``10``, ``0.5``, ``"ladder"``, ``true``,
        ``[1, 2]``); an unknown key or a value the plugin does not admit is an error
        naming the key, raised before any work starts.
        """
        match = _SPEC.match(text.strip())
        if not match:
            if "(" in text or ")" in text:
                raise ValueError(f"{self.kind} {text!r}: parameters go in one pair of parentheses, e.g. 'boosting(k=100)'")
            self.get(text.strip())
            return text.strip(), None
        plugin_id = match["id"].strip()
        known = self.get(plugin_id).parameter_defaults()
        pinned: dict[str, Any] = {}
        for argument in _split_arguments(match["arguments"]):
            key, separator, value = argument.partition("=")
            key = key.strip()
            if not separator or not key:
                raise ValueError(f"{self.kind} {plugin_id!r}: expected key=value, got {argument.strip()!r}")
            if key not in known:
                raise unknown_name_error(f"parameter of {self.kind} {plugin_id!r}", key, known)
            if key in pinned:
                raise ValueError(f"{self.kind} {plugin_id!r}: parameter {key!r} is given twice ({key}={pinned[key]!r} "
                                 f"and {argument.strip()}): give it once")
            try:
                pinned[key] = tomllib.loads(f"value = {value.strip()}")["value"]
            except tomllib.TOMLDecodeError:
                raise ValueError(
                    f"{self.kind} {plugin_id!r}: parameter {key!r} = {value.strip()!r} is not a TOML literal "
                    f"(write strings in double quotes: {key}=\"{value.strip()}\")"
                ) from None
        self.checked(plugin_id, pinned)
        return plugin_id, pinned

    def _check_class(self, obj: object, spec: str) -> type[P]:
        if not (inspect.isclass(obj) and issubclass(obj, self.base)):
            raise ValueError(f"{spec!r} is not a {self.kind}: expected a subclass of {self.base.__name__}")
        return obj


_SPEC = re.compile(r"^(?P<id>[^()]+?)\s*\((?P<arguments>.*)\)\s*$", re.DOTALL)


def _split_arguments(text: str) -> list[str]:
    """Split ``a=1, b=[1, 2], c="x,y"`` at the commas outside brackets and strings."""
    parts, current, depth, quote = [], [], 0, None
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def _load_class(spec: str) -> type:
    """The class named by ``path/to/file.py:ClassName`` or ``package.module:ClassName``."""
    location, _, class_name = spec.rpartition(":")
    path = plugin_file(spec)
    if path is not None:
        # the name includes the contents of the file and of its local modules, so that an
        # edited plugin or helper is loaded afresh (the edited helpers with it)
        sources = plugin_file_sources(path)
        digest = hashlib.sha1()
        for source in sources:
            digest.update(str(source).encode() + source.read_bytes())
        module_name = LOCAL_MODULE_PREFIX + digest.hexdigest()[:12]
        if module_name not in sys.modules:
            _forget_changed_modules(sources[1:], path.parent)
            spec_ = importlib.util.spec_from_file_location(module_name, path)
            assert spec_ is not None and spec_.loader is not None
            module = importlib.util.module_from_spec(spec_)
            sys.modules[module_name] = module
            sys.path.insert(0, str(path.parent))  # sibling local plugin files can import each other
            try:
                spec_.loader.exec_module(module)
            except SyntaxError as error:
                del sys.modules[module_name]
                raise ValueError(f"plugin file {location}: syntax error at line {error.lineno}: {error.msg}") from None
            except Exception as error:
                del sys.modules[module_name]
                raise ValueError(
                    f"plugin file {location} failed while being imported: {type(error).__name__}: {error}"
                ) from error
            finally:
                sys.path.remove(str(path.parent))
        module = sys.modules[module_name]
    else:
        if not all(part.isidentifier() for part in location.split(".")):
            raise ValueError(f"{spec!r}: {location!r} is neither a plugin file (a path ending in .py) nor a module "
                             "name (dotted identifiers, e.g. mypackage.attacks): write file.py:Class or module:Class")
        try:
            module = importlib.import_module(location)
        except ImportError as error:
            raise ValueError(f"cannot import module {location!r} (from {spec!r}): {error}") from error
        except SyntaxError as error:
            raise ValueError(f"module {location!r}: syntax error in {error.filename} at line {error.lineno}: {error.msg}") from None
        except Exception as error:  # noqa: BLE001 - the module's own code failed while it was imported
            raise ValueError(f"module {location!r} (from {spec!r}) failed while being imported: "
                             f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}") from None
    if not hasattr(module, class_name):
        classes = [name for name, member in inspect.getmembers(module, inspect.isclass)
                   if member.__module__ == module.__name__]  # defined there, not imported
        raise unknown_name_error(f"class in {location!r}", class_name, classes)
    return getattr(module, class_name)


def plugin_file(spec: str) -> Path | None:
    """The absolute path of the plugin file of ``path/to/file.py:ClassName`` (``ValueError`` if
    there is no such file, with the names of similar ones), or None for ``module:ClassName``."""
    location = spec.rpartition(":")[0]
    if not location.endswith(".py"):
        return None
    path = Path(location).resolve()
    if not path.is_file():
        nearby = [p.name for p in path.parent.glob("*.py")] if path.parent.is_dir() else []
        close = difflib.get_close_matches(path.name, nearby, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(str(Path(location).with_name(c))) for c in close)}?" if close else ""
        raise ValueError(f"plugin file not found: {location!r} (from {spec!r}){hint}")
    return path


_local_module_digests: dict[Path, str] = {}
"""The SHA-1 of each local module file when a plugin that imports it was last loaded."""


def _forget_changed_modules(files: list[Path], folder: Path) -> None:
    """Drop the loaded modules that the plugin in ``folder`` must not reuse: those whose files
    changed since a plugin imported them, and those loaded under the name of one of its local
    modules from another file (another folder's ``helper.py``), so that the plugin loaded now
    gets its own modules' current code; remember the current contents."""
    changed = set()
    for path in files:
        digest = hashlib.sha1(path.read_bytes()).hexdigest()
        if _local_module_digests.get(path, digest) != digest:
            changed.add(path)
        _local_module_digests[path] = digest
    own = {name: path for path in files if (name := _local_module_name(path, folder))}
    for name, module in list(sys.modules.items()):
        source = getattr(module, "__file__", None)
        if source and (Path(source) in changed or (name in own and Path(source).resolve() != own[name].resolve())):
            del sys.modules[name]


def _local_module_name(path: Path, folder: Path) -> str | None:
    """The name under which a plugin in ``folder`` imports the local module file ``path``."""
    try:
        parts = list(path.relative_to(folder).with_suffix("").parts)
    except ValueError:
        return None
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or None


MECHANISMS: Registry[Mechanism] = Registry(
    "mechanism", Mechanism, "ladderlab.mechanisms", "ladderlab.mechanisms"
)


ATTACKS: Registry[Attack] = Registry("attack", Attack, "ladderlab.attacks", "ladderlab.attacks")
TASKS: Registry[Task] = Registry("task", Task, "ladderlab.tasks", "ladderlab.tasks", modules=(
    "ladderlab.certification.challenge_task", "ladderlab.certification.public_size"))


def make_mechanism(spec: str, **params: Any) -> Mechanism:
    """``make`` for mechanisms: ``make_mechanism("ladder-t", alpha=0.01)``."""
    return MECHANISMS.make(spec, **params)


def parse_honest(text: str) -> tuple[str, dict[str, Any] | None]:
    """An honest participant's id and pinned parameters, read as :meth:`Registry.parse` reads
    ``improving(days=60)``; ``ValueError`` for an attack that is not an honest participant
    (``Attack.honest``), naming the ones that are."""
    attack_id, pinned = ATTACKS.parse(text)
    if not ATTACKS.get(attack_id).honest:
        honest = [known for known in ATTACKS.ids() if ATTACKS.get(known).honest]
        raise ValueError(f"{attack_id!r} is an attack, not an honest participant; the honest participants are "
                         f"{', '.join(honest)}")
    return attack_id, pinned
