"""``ladderlab bench-plan``: how long ``ladderlab plan`` takes on the shipped breast-cancer challenge and on a
10,000-row task, from an empty directory (docs/certify-speed.md#planning).

Each plan runs as the command does (:func:`ladderlab.cli.commands.main`), in this process with its workers,
into a fresh temporary directory; its CPU time counts the workers (:func:`ladderlab.utils.cpu_time.tree_seconds`),
and each row gives the one-minute load average before and after it, which inflates the wall time on a shared
machine. The target (issue 43): at most 5 minutes of wall time on 2 cores for each.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ladderlab.runs import arguments

PLANS = {
    "breast-cancer": ("--challenge", "examples/breast-cancer/challenge.toml"),
    "task-10000": ("--task", "latent-classification(n_train=2000, n_public=2000, n_holdout=10000)", "--days", "30",
                   "--per-day", "5", "--teams", "100"),
}
"""The plans timed, by name: the command's arguments (the breast-cancer challenge's budget, teams and schedule are its
file's; the task is a 10,000-row latent logistic classification, 30 days of 5 submissions and 100 teams)."""
BEGIN, END = "<!-- plan-speed -->", "<!-- /plan-speed -->"


@dataclass(frozen=True)
class PlanTiming:
    """One plan from an empty directory."""

    name: str
    command: str
    jobs: int
    wall_seconds: float
    cpu_seconds: float
    certificates: int
    whole_batteries: int
    recommendation: str
    load: tuple[float, float]
    code: dict[str, str]


def time_plan(name: str, jobs: int, root: Path = Path.cwd()) -> PlanTiming:
    """Run the plan ``name`` (:data:`PLANS`) from ``root`` with ``jobs`` workers into a fresh directory, timed."""
    from joblib.externals.loky import get_reusable_executor

    from ladderlab.certification import plan_cli
    from ladderlab.utils import cpu_time

    def main(argv: list[str]) -> int:  # the plan subcommand alone: dev may not import the command line
        parser = argparse.ArgumentParser(prog="ladderlab")
        plan_cli.add_subcommand(parser.add_subparsers())
        args = parser.parse_args(argv)
        return args.handler(args)

    command = ["plan", *PLANS[name], "--jobs", str(jobs)]
    get_reusable_executor().shutdown(wait=True)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as directory, contextlib.chdir(root):
        before, start = cpu_time.tree_seconds(), time.perf_counter()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main([*command, "--run-dir", f"{directory}/plan", "--out", f"{directory}/plan.json"])
        wall = time.perf_counter() - start
        get_reusable_executor().shutdown(wait=True)
        cpu = cpu_time.tree_seconds() - before
        if code != 0:
            raise RuntimeError(f"ladderlab {' '.join(command)} exited with {code}")
        result = json.loads(Path(f"{directory}/plan.json").read_text())
    headline = printed.getvalue().splitlines()[1]
    return PlanTiming(name, "ladderlab " + " ".join(_quoted(word) for word in command), jobs, wall, cpu,
                      result["certificates"], result["whole_batteries"], headline, (load_before, os.getloadavg()[0]),
                      result["code"])


def _quoted(word: str) -> str:
    return f"'{word}'" if any(character in word for character in " (),") else word


def table(timings: list[PlanTiming]) -> str:
    """The timings as a Markdown section between the page's markers, each row stamped with its command and code."""
    from ladderlab.runs.page_stamps import stamp

    lines = [
        BEGIN,
        f"Measured by `ladderlab bench-plan` on {time.strftime('%Y-%m-%d')} (Linux {platform.release()}, "
        f"{os.cpu_count()} processors, Python {platform.python_version()}), each plan from an empty directory; CPU is "
        "user + system seconds of the command and its workers, the load the one-minute average before → after.",
        "",
        "| plan | jobs | wall s | CPU s | certificates (whole batteries) | load | recommendation |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for timing in timings:
        lines.append(f"| `{timing.command}` | {timing.jobs} | {timing.wall_seconds:.0f} | {timing.cpu_seconds:.0f} | "
                     f"{timing.certificates} ({timing.whole_batteries}) | {timing.load[0]:.1f} → {timing.load[1]:.1f} | "
                     f"{timing.recommendation.rstrip('.')} |")
    marks = [stamp(f"ladderlab bench-plan --plan {timing.name} --jobs {timing.jobs} --write docs/certify-speed.md",
                   timing.code, f"{timing.name} --jobs {timing.jobs}") for timing in timings]
    return "\n".join([*lines, "", *marks, END])


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab bench-plan``: parser and handler."""
    parser = commands.add_parser("bench-plan", help="wall and CPU time of 'ladderlab plan' on the breast-cancer challenge "
                                 "and a 10,000-row task")
    parser.add_argument("--plan", action="append", choices=sorted(PLANS), help="time only this plan (repeatable; "
                        "default: both)")
    parser.add_argument("--jobs", type=arguments.count(1), default=2, help="workers (default 2)")
    parser.add_argument("--write", metavar="PAGE", help="put the table into PAGE between the plan-speed markers "
                        "(docs/certify-speed.md)")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.utils.markdown import page_to_write, write_marked_section

    page = page_to_write(args.write, BEGIN, END)
    timings = []
    for name in args.plan or sorted(PLANS):
        print(f"ladderlab {' '.join(PLANS[name])} --jobs {args.jobs} …", flush=True)
        timings.append(time_plan(name, args.jobs))
        if page is not None:
            write_marked_section(page, BEGIN, END, table(timings))
    print(table(timings))
    return 0
