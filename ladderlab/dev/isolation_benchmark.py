"""What isolation costs: ``ladderlab dev bench-isolation`` times the same runs with and without it.

Each workload is a whole ``ladderlab`` command, run in turn without isolation, with
``--isolation process``, with ``--isolation process`` but ``LADDERLAB_PIN=0`` (the
organiser and its attack process not co-located on one CPU, :mod:`ladderlab.isolation.colocation`),
and with ``--isolation process`` but ``LADDERLAB_SAME_LAYOUT=0`` (each process in its own
randomised address layout, :mod:`ladderlab.isolation.layout`), A B C D A B C D …, so that all see the
same load, timed by the operating system: the CPU
seconds (user + system) of the command and of every process it waited for (workers, the
sandbox and its attack processes) and the wall time. The runs of a round must give the same
results, bit for bit, or the benchmark fails. The ratio of each isolated run is to the
unisolated run of its round; the page quotes medians.

``--write PAGE`` replaces the part of ``PAGE`` between ``<!-- isolation-benchmark -->``
and ``<!-- /isolation-benchmark -->`` with the table (docs/isolation.md keeps its
numbers there).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ladderlab.isolation import colocation, layout
from ladderlab.utils.terminal import wrapped_markdown

BEGIN, END = "<!-- isolation-benchmark -->", "<!-- /isolation-benchmark -->"


def _scenario(name: str, replications: int, n_public: int, mechanisms: list[str], attack: str, k: int) -> str:
    """A one-cell-per-mechanism scenario on random labels (holdout three times the public part)."""
    mechanism_list = ", ".join(f'{{ id = "{mechanism}" }}' for mechanism in mechanisms)
    return f"""
schema_version = 1
name = "isolation-bench-{name}"
replications = {replications}
seed = 1

[[matrix]]
tasks = [{{ id = "random-labels", params = {{ n_public = {n_public}, n_holdout = {3 * n_public} }} }}]
mechanisms = [{mechanism_list}]
attacks = [{{ id = "{attack}", params = {{ k = {k} }} }}]
"""


SEQUENTIAL = _scenario("sequential", 40, 1000, ["kaggle"], "hill-climbing", 1500)
SEQUENTIAL_SHORT = _scenario("sequential-short", 40, 1000, ["kaggle"], "hill-climbing", 300)
PER_SUBMISSION = ("sequential", "sequential-short", 40 * (1500 - 300))
"""The longer and the shorter hill-climbing workload, and the submissions by which they differ:
the difference of their times is what those one-row submissions cost, without start-up."""
BATCHED = _scenario("batched", 200, 1000, ["kaggle", "ladder"], "boosting", 500)
STARTUP = _scenario("startup", 1, 200, ["kaggle"], "boosting", 10)


@dataclass(frozen=True)
class Workload:
    name: str
    what: str
    arguments: tuple[str, ...]
    scenario: str | None = None
    """The scenario file's text, for ``run`` workloads (written to a temporary file)."""


WORKLOADS = (
    Workload("certify", "`ladderlab certify kaggle --replications 1`: the certification battery (every "
             "built-in attack at every strength and budget, once)", ("certify", "kaggle", "--replications", "1")),
    Workload("batched", "400 duels of boosting (k = 500 submissions in one batch) against kaggle and ladder at "
             "n = 1000", ("run",), BATCHED),
    Workload("sequential", "40 duels of hill-climbing (k = 1500 submissions, one at a time) at n = 1000",
             ("run",), SEQUENTIAL),
    Workload("sequential-short", "40 duels of hill-climbing (k = 300 submissions, one at a time) at n = 1000",
             ("run",), SEQUENTIAL_SHORT),
    Workload("startup", "1 duel of boosting (k = 10) at n = 200: starting the run's worker (and the sandbox)",
             ("run",), STARTUP),
)


@dataclass(frozen=True)
class Timing:
    cpu: float
    wall: float


def _timed(command: list[str], environment: dict[str, str]) -> Timing:
    """Run ``command``; its CPU seconds and those of every process it waited for, and its wall time."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=environment)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed: {errors.read().decode(errors='replace').strip()}")
    return Timing(usage.ru_utime + usage.ru_stime, wall)


def _results(folder: Path) -> object:
    from ladderlab.runs.runner import load_results

    return load_results(folder).drop(columns="wall_time")


CONFIGURATIONS = {"none": ("none", {}), "process": ("process", {}),
                  "not co-located": ("process", {colocation.SWITCH: "0"}),
                  "own layouts": ("process", {layout.SWITCH: "0"})}
"""Each configuration's ``--isolation`` and environment."""


def measure(workload: Workload, rounds: int, folder: Path) -> dict[str, list[Timing]]:
    """``rounds`` rounds of runs of ``workload``, one per configuration (unisolated first);
    raises if a round's results differ."""
    timings: dict[str, list[Timing]] = {name: [] for name in CONFIGURATIONS}
    arguments = list(workload.arguments)
    if workload.scenario is not None:
        scenario = folder / f"{workload.name}.toml"
        scenario.write_text(workload.scenario)
        arguments.append(str(scenario))
    for round_ in range(rounds):
        runs = {}
        for name, (isolation, environment) in CONFIGURATIONS.items():
            out = folder / f"{workload.name}-{name.replace(' ', '-')}-{round_}"
            where = ["--run-dir", str(out)] if workload.arguments[0] == "certify" else ["--out", str(out)]
            command = [sys.executable, "-m", "ladderlab", "--quiet", *arguments, *where, "--isolation", isolation]
            timings[name].append(_timed(command, {**os.environ, **environment}))
            runs[name] = _results(out)
        for name, results in runs.items():
            if not runs["none"].equals(results):
                raise RuntimeError(f"{workload.name}: the results with {name!r} differ from the unisolated run's")
    return timings


def table(measured: dict[str, dict[str, list[Timing]]], rounds: int, mode: str) -> str:
    """The Markdown section: what was run, on what (``mode``: the sandbox's), and the medians."""
    load = os.getloadavg()[0]
    lines = [
        BEGIN,
        f"Measured by `ladderlab dev bench-isolation --rounds {rounds}` on {time.strftime('%Y-%m-%d')}: Linux "
        f"{platform.release()}, {os.cpu_count()} processors, load average {load:.1f} at the end, Python "
        f"{platform.python_version()}, sandbox mode `{mode}`, a machine shared with other work. Each row: "
        f"{rounds} round{'s' if rounds != 1 else ''} of whole commands, unisolated, isolated, isolated "
        f"with `{colocation.SWITCH}=0` (not co-located) and isolated with `{layout.SWITCH}=0` (own "
        "layouts), with the same results bit for bit; CPU is user + system seconds "
        "of the command and of every process it started; a ratio is the median over rounds of the isolated "
        "run's figure over the unisolated run's.",
        "",
        "| workload | CPU s, none | CPU s, process | CPU ratio | CPU ratio, not co-located | CPU ratio, own layouts "
        "| wall s, none | wall s, process | wall ratio | wall ratio, not co-located | wall ratio, own layouts |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for workload in WORKLOADS:
        if workload.name not in measured:
            continue
        lines.append(_row(workload.what, measured[workload.name], ".1f"))
    longer, shorter, submissions = PER_SUBMISSION
    if longer in measured and shorter in measured:
        lines.append(_per_submission_row(measured[longer], measured[shorter], submissions))
    return "\n".join([*lines, END])


def _per_submission_row(longer: dict[str, list[Timing]], shorter: dict[str, list[Timing]], submissions: int) -> str:
    """The row of one one-row submission: the two hill-climbing workloads' difference, round by
    round, over the submissions by which they differ (µs), and the median ratios of those differences."""
    extra = {name: [Timing(1e6 * (a.cpu - b.cpu) / submissions, 1e6 * (a.wall - b.wall) / submissions)
                    for a, b in zip(longer[name], shorter[name])] for name in CONFIGURATIONS}
    return _row(f"one submission of one row, without start-up: the difference of the two hill-climbing rows over "
                f"the {submissions:,} submissions by which they differ (µs, not s)", extra, ".0f")


def _row(what: str, timings: dict[str, list[Timing]], figure_format: str) -> str:
    """A table row: the medians of the unisolated and isolated runs' figures (in ``figure_format``)
    and each isolated configuration's median ratio, for CPU and then wall time."""
    none, isolated = timings["none"], [timings[name] for name in CONFIGURATIONS if name != "none"]
    cells = [what]
    for figure in ("cpu", "wall"):
        cells += [f"{statistics.median(getattr(t, figure) for t in runs):{figure_format}}" for runs in (none, isolated[0])]
        cells += [f"{_median_ratio(none, runs, figure):.2f}" for runs in isolated]
    return f"| {' | '.join(cells)} |"


def _median_ratio(baseline: list[Timing], timings: list[Timing], figure: str) -> float:
    return statistics.median(getattr(b, figure) / getattr(a, figure) for a, b in zip(baseline, timings))


def _mode() -> str:
    from ladderlab.isolation.sandbox import require

    return require()


def write_section(page: Path, section: str) -> None:
    """Replace the benchmark section of ``page`` (between the markers) with ``section``."""
    from ladderlab.utils.markdown import write_marked_section

    write_marked_section(page, BEGIN, END, section)


def add_subcommand(commands: argparse._SubParsersAction, count: type) -> None:
    """``ladderlab dev bench-isolation``: parser and handler."""
    parser = commands.add_parser("bench-isolation", help="CPU and wall time of runs with and without --isolation process")
    parser.add_argument("--rounds", type=count, default=3, help="rounds of runs per workload (default 3)")
    parser.add_argument("--only", choices=[workload.name for workload in WORKLOADS], action="append",
                        help="run only this workload (repeatable)")
    parser.add_argument("--write", metavar="PAGE", help="put the table into PAGE between the benchmark markers "
                        "(docs/isolation.md)")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    page = Path(args.write) if args.write else None
    if page is not None and BEGIN not in page.read_text():
        raise ValueError(f"--write {page}: the page has no {BEGIN} marker")
    mode = _mode()  # refuse before any work when this machine cannot isolate
    measured = {}
    with tempfile.TemporaryDirectory() as folder:
        for workload in WORKLOADS:
            if args.only and workload.name not in args.only:
                continue
            print(f"{workload.name} …", file=sys.stderr)
            measured[workload.name] = measure(workload, args.rounds, Path(folder))
    section = table(measured, args.rounds, mode)
    if page is not None:
        write_section(page, section)
    print(wrapped_markdown(section))
    return 0
