"""``ladderlab list``: the registered plugins with their parameters and references, and the built-in
scenarios (:mod:`ladderlab.registry`, :mod:`ladderlab.scenarios`)."""

from __future__ import annotations

import argparse

from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.arguments import ArgumentError
from ladderlab.utils.terminal import wrapped


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab list``."""
    parser = commands.add_parser("list", help="list registered plugins with parameters and references")
    parser.add_argument("what", nargs="*", metavar="FAMILY",
                        help=f"which families to list: {', '.join(LIST_FAMILIES)} (or singular; default: all), "
                             "or a plugin of your own as file.py:Class")
    parser.set_defaults(handler=_list)


def _describe_plugin(name: str) -> str:
    """A plugin named by path or module (``file.py:Class``), described as its family lists it."""
    reasons = []
    for registry in (MECHANISMS, ATTACKS, TASKS):
        try:
            registry.get(name)
        except ValueError as error:
            reasons.append(str(error))
            continue
        return f"{registry.kind}:\n{registry.describe([name])}"
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
        lines.append(wrapped(f"{name:<{width}}  {replications}; {', '.join(tables)}", indent="  ", hanging=" " * (width + 2)))
        lines.append(wrapped(f"source: {raw['source']}", indent=" " * (width + 4), hanging="  "))
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
        print(_describe_scenarios() if name == "scenarios" else families[name].describe())
    for text in described:
        print(text)
    return 0
