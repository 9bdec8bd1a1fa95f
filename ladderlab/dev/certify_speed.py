"""``ladderlab dev bench-certify``: how long ``ladderlab certify`` takes for every built-in mechanism
family, serial and on two workers, and where the time goes (docs/certify-speed.md).

Each certificate runs from an empty battery directory (:func:`ladderlab.dev.benchmark.time_certify`):
its CPU time counts the workers, reaped before it is read; the time by attack is the seconds
spent inside the duels the certificate used, against the certified mechanism and against full
disclosure (the reference at each worst point, and the honest participant).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ladderlab.runs import arguments
from ladderlab.utils.terminal import wrapped_markdown

if TYPE_CHECKING:
    from ladderlab.dev.benchmark import CertifyTiming

FAMILIES = ("kaggle", "ladder", "ladder-free", "ladder-t", "ladder-boot", "bayesboot-ladder", "bayesboot-ladderboot",
            "sage-bootladderboot", "sparse-vector-ladder", "thresholdout", "noisy", "keyed-noisy", "subsample",
            "guess-and-check")
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
    from ladderlab.dev.benchmark import time_certify

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


def table(timings: list[tuple[str, Setting, CertifyTiming]], replications: int, seed: int,
          kept: dict[tuple[str, str, str], str] | None = None, kept_marks: dict[str, str] | None = None) -> str:
    """The measurements as a Markdown section between the page's markers, merged with ``kept`` rows
    (:func:`kept_rows` of the page) and their stamps (:func:`kept_stamps`) that this run did not
    measure again; rows in family, setting and jobs order, each dated with the load average before
    and after it, each stamped with the command that measures it again and the code it timed
    (:mod:`ladderlab.runs.page_stamps`)."""
    from ladderlab.runs.page_stamps import stamp

    rows = dict(kept or {})
    stamps = dict(kept_marks or {})
    for mechanism, setting, timing in timings:
        load = "load not recorded" if timing.load is None else f"load {timing.load[0]:.1f} → {timing.load[1]:.1f}"
        cells = [mechanism, f"`{setting.flags()}`", str(timing.jobs), f"{timing.cpu_seconds:.1f}",
                 f"{timing.wall_seconds:.1f}", str(timing.replications), str(timing.safe_budget),
                 _where(timing.duel_seconds, mechanism), f"{time.strftime('%Y-%m-%d')}, {load}"]
        key = (cells[0], cells[1], cells[2])
        rows[key] = "| " + " | ".join(cells) + " |"
        if timing.code:
            stamps[row_part(key)] = stamp(row_command(key, replications=replications, seed=seed), timing.code,
                                          row_part(key))
    lines = [
        BEGIN,
        f"Measured by `ladderlab dev bench-certify --replications {replications} --seed {seed}`, each row on the "
        f"day and at the load average (one minute, before → after) it gives (rows of several runs, merged by "
        f"`--write`; the last on {time.strftime('%Y-%m-%d')}: Linux {platform.release()}, {os.cpu_count()} "
        f"processors, Python {platform.python_version()}), on a machine shared with other work (the wall times "
        "are inflated by its load; CPU is user + system seconds of the command and its workers). Every "
        f"certificate: `ladderlab certify MECHANISM` at its default parameters, `--replications {replications} "
        f"--seed {seed}`, from an empty battery directory.",
        "",
        "| mechanism | setting | jobs | CPU s | wall s | replications used | safe budget | where the time goes "
        "(seconds in duels: attack against the mechanism / against full disclosure) | measured |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    ordered = sorted(rows, key=_row_order)
    marks = [stamps[row_part(key)] for key in ordered if row_part(key) in stamps]
    return "\n".join([*lines, *(rows[key] for key in ordered), *([""] + marks if marks else []), END])


def row_part(key: tuple[str, str, str]) -> str:
    """How a row's stamp names it: ``ladder-boot --n 4000 --budgets 200 --jobs 1``."""
    mechanism, flags, jobs = key
    return f"{mechanism} {flags.strip('`')} --jobs {jobs}"


def row_command(key: tuple[str, str, str], page: str = "docs/certify-speed.md", replications: int = 100,
                seed: int = 0) -> str:
    """The command that measures one row again and writes it into ``page``."""
    mechanism, flags, jobs = key
    setting = next((name for name, setting in SETTINGS.items() if f"`{setting.flags()}`" == flags), None)
    chosen = f"--setting {setting}" if setting else f"(setting {flags.strip('`')})"
    options = "" if (replications, seed) == (100, 0) else f" --replications {replications} --seed {seed}"
    return f"ladderlab dev bench-certify --mechanism {mechanism} {chosen} --jobs {jobs}{options} --write {page}"


def expected_rows(jobs: tuple[int, ...] = (1, 2)) -> list[tuple[str, str, str]]:
    """Every row the page should have: each family, setting and number of workers."""
    return [(mechanism, f"`{setting.flags()}`", str(workers))
            for mechanism in FAMILIES for setting in SETTINGS.values() for workers in jobs]


def kept_stamps(section: str) -> dict[str, str]:
    """The rows' stamps of a table :func:`table` wrote, by the part they name."""
    from ladderlab.runs.page_stamps import STAMP, stamps_in

    return {record["part"]: match[0] for match, record in zip(STAMP.finditer(section), stamps_in(section))
            if "part" in record}


def kept_rows(section: str) -> dict[tuple[str, str, str], str]:
    """The rows of a table :func:`table` wrote, by (mechanism, setting, jobs); a row of a table from
    before rows were dated gets the date and load its header gave."""
    dated = re.search(r"on (\d{4}-\d{2}-\d{2}):.*?load average ([\d.]+) at the end", section)
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 8 or cells[0] in ("mechanism", "---"):
            continue
        if len(cells) == 8 and dated:
            line = f"{line.rstrip()} {dated[1]}, load {dated[2]} |"
        rows[tuple(cells[:3])] = line
    return rows


def measured_with(section: str) -> tuple[int, int] | None:
    """The ``--replications`` and ``--seed`` of the table in ``section`` (None: it names none)."""
    match = re.search(r"`ladderlab dev bench-certify --replications (\d+) --seed (\d+)`", section)
    return None if match is None else (int(match[1]), int(match[2]))


def _row_order(key: tuple[str, str, str]) -> tuple[int, int, int]:
    mechanism, flags, jobs = key
    settings = [f"`{setting.flags()}`" for setting in SETTINGS.values()]
    return (FAMILIES.index(mechanism) if mechanism in FAMILIES else len(FAMILIES),
            settings.index(flags) if flags in settings else len(settings), int(jobs) if jobs.isdigit() else 0)


def _where(duel_seconds: dict[str, dict[str, float]], mechanism: str, shown: int = 4) -> str:
    """The attacks that took the most time, largest first."""
    from ladderlab.certification.certify import REFERENCE

    totals = sorted(duel_seconds.items(), key=lambda item: -sum(item[1].values()))
    return ", ".join(f"{attack} {seconds.get(mechanism, 0.0):.1f} / {seconds.get(REFERENCE, 0.0):.1f}"
                     for attack, seconds in totals[:shown])


def write_section(page: Path, section: str) -> None:
    """Replace the section of ``page`` between the markers with ``section``."""
    from ladderlab.utils.markdown import write_marked_section

    write_marked_section(page, BEGIN, END, section)


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev bench-certify``: parser and handler."""
    parser = commands.add_parser("bench-certify", help="CPU and wall time of 'ladderlab certify' for every built-in "
                                 "mechanism family, and where the time goes")
    parser.add_argument("--mechanism", action="append", choices=FAMILIES, metavar="MECHANISM",
                        help=f"time only this mechanism (repeatable; default: every family: {', '.join(FAMILIES)})")
    parser.add_argument("--setting", action="append", choices=sorted(SETTINGS),
                        help="'default' (n = 200, budgets 100 300 1000 2000) or 'n4000' (n = 4000, budget 200); "
                        "repeatable, default both")
    parser.add_argument("--jobs", type=arguments.count(1), action="append", help="workers (repeatable; default 1 and 2)")
    parser.add_argument("--replications", type=arguments.count(1), default=100,
                        help="the most replications of a grid point (default 100, certify's)")
    parser.add_argument("--seed", type=arguments.count(0), default=0, help="root seed of every battery (default 0)")
    parser.add_argument("--write", metavar="PAGE", help="put the table into PAGE between the certify-speed markers "
                        "(docs/certify-speed.md), again after each certificate: the rows measured replace those "
                        "of the same mechanism, setting and jobs, the page's other rows stay")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.utils.markdown import marked_section

    page = Path(args.write) if args.write else None
    kept: dict[tuple[str, str, str], str] = {}
    stamps: dict[str, str] = {}
    if page is not None:
        section = marked_section(page.read_text(), BEGIN, END) if page.is_file() else None
        if section is None:
            raise ValueError(f"--write {page}: the page does not exist or has no {BEGIN} marker")
        earlier = measured_with(section)
        if earlier is not None and earlier != (args.replications, args.seed):
            raise ValueError(f"--write {page}: its table was measured with --replications {earlier[0]} --seed "
                             f"{earlier[1]}, not --replications {args.replications} --seed {args.seed}; "
                             "rows of both would not compare (give the same or write another page)")
        kept = kept_rows(section)
        stamps = kept_stamps(section)
    mechanisms = args.mechanism or list(FAMILIES)

    def written(timings: list[tuple[str, Setting, CertifyTiming]]) -> None:
        if page is not None:
            write_section(page, table(timings, args.replications, args.seed, kept, stamps))

    timings = measure(mechanisms, [SETTINGS[name] for name in args.setting or SETTINGS], args.jobs or [1, 2],
                      args.replications, args.seed, say=lambda line: print(line, file=sys.stderr), measured=written)
    print(wrapped_markdown(table(timings, args.replications, args.seed)))
    return 0
