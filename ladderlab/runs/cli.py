"""``ladderlab list``: the registered plugins with their parameters and references, and the built-in
scenarios (:mod:`ladderlab.registry`, :mod:`ladderlab.scenarios`)."""

from __future__ import annotations

import argparse

from ladderlab.params import describe
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry
from ladderlab.runs.arguments import ArgumentError


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab list``."""
    parser = commands.add_parser("list", help="list registered plugins with parameters and references")
    parser.add_argument("what", nargs="*", metavar="FAMILY",
                        help=f"which families to list: {', '.join(LIST_FAMILIES)} (or singular; default: all), "
                             "or a plugin of your own as file.py:Class")
    parser.set_defaults(handler=_list)


def _describe(registry: Registry, plugin_ids: list[str] | None = None) -> str:
    """The registry's plugins (or those named) with their parameters, declarations and references."""
    lines = []
    for plugin_id in registry.ids() if plugin_ids is None else plugin_ids:
        cls = registry.get(plugin_id)
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


def _describe_plugin(name: str) -> str:
    """A plugin named by path or module (``file.py:Class``), described as its family lists it."""
    reasons = []
    for registry in (MECHANISMS, ATTACKS, TASKS):
        try:
            registry.get(name)
        except ValueError as error:
            reasons.append(str(error))
            continue
        return f"{registry.kind}:\n{_describe(registry, [name])}"
    if all(reason.startswith(f"{name!r} is not a") for reason in reasons):
        raise ArgumentError(f"{name}: not a mechanism, an attack or a task")
    raise ArgumentError(reasons[0])


def _describe_scenarios() -> str:
    """Each built-in scenario's replications, tables and source, read from its TOML alone
    (``ladderlab run`` validates it and counts its cells; expanding every file here would
    cost seconds)."""
    import tomllib

    from ladderlab.scenarios import builtin_scenarios

    lines = []
    scenarios = sorted(builtin_scenarios().items())
    width = max(len(name) for name, _ in scenarios)
    for name, path in scenarios:
        raw = tomllib.loads(path.read_text())
        tables = [f"{len(raw[key])} {one if len(raw[key]) == 1 else many}"
                  for key, one, many in (("matrix", "duel matrix", "duel matrices"),
                                         ("competition", "competition table", "competition tables"),
                                         ("extrapolation", "extrapolation table", "extrapolation tables"))
                  if raw.get(key)]
        replications = f"{raw['replications']} replication{'' if raw['replications'] == 1 else 's'}"
        lines.append(f"  {name:<{width}}  {replications}; {', '.join(tables)}")
        lines.append(f"  {'':<{width}}  source: {raw['source']}")
    return "\n".join(lines)


LIST_FAMILIES = ("mechanisms", "attacks", "tasks", "scenarios")


def _list(args: argparse.Namespace) -> int:
    families = {"mechanisms": MECHANISMS, "attacks": ATTACKS, "tasks": TASKS, "scenarios": None}
    plugins = [name for name in args.what if ":" in name]
    plurals = [name if name in LIST_FAMILIES else f"{name}s" for name in args.what if ":" not in name]
    for name, plural in zip([name for name in args.what if ":" not in name], plurals):
        if plural not in LIST_FAMILIES:
            raise ArgumentError(f"argument FAMILY: cannot list {name!r}; choose from {', '.join(LIST_FAMILIES)}, "
                                "or name a plugin as file.py:Class")
    described = [_describe_plugin(name) for name in plugins]
    for name in plurals or ([] if plugins else LIST_FAMILIES):
        print(f"{name}:")
        print(_describe_scenarios() if name == "scenarios" else _describe(families[name]))
    for text in described:
        print(text)
    return 0
