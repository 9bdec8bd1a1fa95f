"""``ladderlab bench-certify``: how long ``ladderlab certify`` takes for every built-in mechanism
family, serial and on two workers, and where the time goes (docs/certify-speed.md).

Each certificate runs from an empty battery directory (:func:`ladderlab.benchmark.time_certify`):
its CPU time counts the workers, reaped before it is read; the time by attack is the seconds
spent inside the duels the certificate used, against the certified mechanism and against full
disclosure (the reference at each worst point, and the honest participant).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ladderlab import arguments

if TYPE_CHECKING:
    from ladderlab.benchmark import CertifyTiming

FAMILIES = ("kaggle", "ladder", "ladder-free", "ladder-t", "ladder-boot", "bayesboot-ladder", "bayesboot-ladderboot",
            "sage-bootladderboot", "sparse-vector-ladder", "thresholdout", "noisy")
"""Every built-in mechanism but full disclosure, the reference (named here, not
read from the registry, so that the parser does not import every mechanism; a test holds them equal)."""


@dataclass(frozen=True)
class Setting:
    """A certify command's size: n public points and the budgets."""

    name: str
    n: int
    budgets: tuple[int, ...]

    def flags(self) -> str:
        return f"--n {self.n} --budgets {' '.join(map(str, self.budgets))}"


SETTINGS = {"default": Setting("default", 200, (100, 300, 1000, 2000)), "n4000": Setting("n4000", 4000, (200,))}
BEGIN, END = "<!-- certify-speed -->", "<!-- /certify-speed -->"


def measure(mechanisms: list[str], settings: list[Setting], jobs: list[int], replications: int, seed: int,
            say: Callable[[str], None] = lambda line: None,
            measured: Callable[[list[tuple[str, Setting, CertifyTiming]]], None] = lambda timings: None,
            ) -> list[tuple[str, Setting, CertifyTiming]]:
    """Every (mechanism, setting, jobs) certificate at its default parameters, timed; ``measured``
    receives the timings so far after each."""
    from ladderlab.benchmark import time_certify

    timings: list[tuple[str, Setting, CertifyTiming]] = []
    for setting in settings:
        for mechanism in mechanisms:
            for workers in jobs:
                say(f"{mechanism} {setting.flags()} --jobs {workers} …")
                timing = time_certify(workers, mechanism=mechanism, params={}, n=setting.n,
                                      budgets=list(setting.budgets), replications=replications, seed=seed)
                timings.append((mechanism, setting, timing))
                measured(timings)
    return timings


def table(timings: list[tuple[str, Setting, CertifyTiming]], replications: int, seed: int) -> str:
    """The measurements as a Markdown section between the page's markers."""
    load = os.getloadavg()[0]
    lines = [
        BEGIN,
        f"Measured by `ladderlab bench-certify --replications {replications} --seed {seed}` on "
        f"{time.strftime('%Y-%m-%d')}: Linux {platform.release()}, {os.cpu_count()} processors, load average "
        f"{load:.1f} at the end, Python {platform.python_version()}, on a machine shared with other work (the wall "
        "times are inflated by its load; CPU is user + system seconds of the command and its workers). Every "
        f"certificate: `ladderlab certify MECHANISM` at its default parameters, `--replications {replications} "
        f"--seed {seed}`, from an empty battery directory.",
        "",
        "| mechanism | setting | jobs | CPU s | wall s | replications used | safe budget | where the time goes "
        "(seconds in duels: attack against the mechanism / against full disclosure) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for mechanism, setting, timing in timings:
        lines.append(f"| {mechanism} | `{setting.flags()}` | {timing.jobs} | {timing.cpu_seconds:.1f} | "
                     f"{timing.wall_seconds:.1f} | {timing.replications} | {timing.safe_budget} | "
                     f"{_where(timing.duel_seconds, mechanism)} |")
    return "\n".join([*lines, END])


def _where(duel_seconds: dict[str, dict[str, float]], mechanism: str, shown: int = 4) -> str:
    """The attacks that took the most time, largest first."""
    from ladderlab.certify import REFERENCE

    totals = sorted(duel_seconds.items(), key=lambda item: -sum(item[1].values()))
    return ", ".join(f"{attack} {seconds.get(mechanism, 0.0):.1f} / {seconds.get(REFERENCE, 0.0):.1f}"
                     for attack, seconds in totals[:shown])


def write_section(page: Path, section: str) -> None:
    """Replace the section of ``page`` between the markers with ``section``."""
    from ladderlab.markdown import write_marked_section

    write_marked_section(page, BEGIN, END, section)


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab bench-certify``: parser and handler."""
    parser = commands.add_parser("bench-certify", help="CPU and wall time of 'ladderlab certify' for every built-in "
                                 "mechanism family, and where the time goes")
    parser.add_argument("--mechanism", action="append", choices=FAMILIES,
                        help="time only this mechanism (repeatable; default: every family)")
    parser.add_argument("--setting", action="append", choices=sorted(SETTINGS),
                        help="'default' (n = 200, budgets 100 300 1000 2000) or 'n4000' (n = 4000, budget 200); "
                        "repeatable, default both")
    parser.add_argument("--jobs", type=arguments.count(1), action="append", help="workers (repeatable; default 1 and 2)")
    parser.add_argument("--replications", type=arguments.count(1), default=100,
                        help="the most replications of a grid point (default 100, certify's)")
    parser.add_argument("--seed", type=arguments.count(0), default=0, help="root seed of every battery (default 0)")
    parser.add_argument("--write", metavar="PAGE", help="put the table into PAGE between the certify-speed markers "
                        "(docs/certify-speed.md), again after each certificate")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    page = Path(args.write) if args.write else None
    if page is not None and (not page.is_file() or BEGIN not in page.read_text()):
        raise ValueError(f"--write {page}: the page does not exist or has no {BEGIN} marker")
    mechanisms = args.mechanism or list(FAMILIES)

    def written(timings: list[tuple[str, Setting, CertifyTiming]]) -> None:
        if page is not None:
            write_section(page, table(timings, args.replications, args.seed))

    timings = measure(mechanisms, [SETTINGS[name] for name in args.setting or SETTINGS], args.jobs or [1, 2],
                      args.replications, args.seed, say=lambda line: print(line, file=sys.stderr), measured=written)
    print(table(timings, args.replications, args.seed))
    return 0
