"""``ladderlab dev bench-plan``: how long ``ladderlab plan`` takes on the shipped breast-cancer challenge and on a
10,000-row task, from an empty directory (docs/certify-speed.md#planning).

Each plan runs as the command does (its parser and handler, :func:`ladderlab.certification.plan_cli.main`), in this
process with its workers,
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
    "breast-cancer": ("--challenge", "examples/breast-cancer/challenge.toml", "--tau", "0.5", "--epsilon", "0.5"),
    "task-10000": ("--task", "latent-classification(n_train=2000, n_public=2000, n_holdout=10000)", "--days", "30",
                   "--per-day", "2", "--teams", "100"),
}
"""The plans timed, by name: the command's arguments (the breast-cancer challenge's budget, teams and schedule are its
file's, its tolerances those of its own certificate, half the best constant prediction's loss; the task is a
10,000-row latent logistic classification, 30 days of 2 submissions and 100 teams, at certify's tolerances; a duel's
cost grows with the submissions it makes, and so does a plan's)."""
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


def time_plan(name: str, jobs: int, root: Path = Path.cwd(), keep: Path | None = None) -> PlanTiming:
    """Run the plan ``name`` (:data:`PLANS`) from ``root`` with ``jobs`` workers into a fresh directory, timed; ``keep``:
    its batteries go there (it must not exist yet), for ``ladderlab plan --run-dir`` to read back, instead of a
    temporary directory."""
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
        batteries = keep if keep is not None else Path(directory) / "plan"
        before, start = cpu_time.tree_seconds(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = plan_cli.main([*command, "--run-dir", str(batteries), "--out", f"{directory}/plan.json"])
        wall = time.perf_counter() - start
        get_reusable_executor().shutdown(wait=True)
        cpu = cpu_time.tree_seconds() - before
        if code != 0:
            raise RuntimeError(f"ladderlab {' '.join(command)} exited with {code}")
        result = json.loads(Path(f"{directory}/plan.json").read_text())
    from ladderlab.certification.plan import headline
    return PlanTiming(name, "ladderlab " + " ".join(_quoted(word) for word in command), jobs, wall, cpu,
                      result["certificates"], result["whole_batteries"], headline(result),
                      (load_before, os.getloadavg()[0]), result["code"])


def _quoted(word: str) -> str:
    return f"'{word}'" if any(character in word for character in " (),") else word


def row_part(name: str, jobs: int) -> str:
    """How a row's stamp names it: ``breast-cancer --jobs 2``."""
    return f"{name} --jobs {jobs}"


def row_command(name: str, jobs: int, page: str = "docs/certify-speed.md") -> str:
    """The command that measures one row again and writes it into ``page``."""
    return f"ladderlab dev bench-plan --plan {name} --jobs {jobs} --write {page}"


def expected_parts(jobs: tuple[int, ...] = (2,)) -> list[tuple[str, int]]:
    """Every row the page should have: each plan on two workers (the target's cores)."""
    return [(name, workers) for name in PLANS for workers in jobs]


def kept(section: str) -> tuple[dict[str, str], dict[str, str]]:
    """The rows of a table :func:`table` wrote and their stamps, each by the part it is for (:func:`row_part`)."""
    from ladderlab.runs.page_stamps import STAMP, stamps_in

    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 8 and cells[0] in PLANS and cells[2].isdigit():
            rows[row_part(cells[0], int(cells[2]))] = line
    stamps = {record["part"]: match[0] for match, record in zip(STAMP.finditer(section), stamps_in(section))
              if "part" in record}
    return rows, stamps


def table(timings: list[PlanTiming], section: str = "") -> str:
    """The timings as a Markdown section between the page's markers, merged with the rows of ``section`` (the page's
    section as it was) that this run did not measure again; each row stamped with its command and code."""
    from ladderlab.runs.page_stamps import stamp

    rows, stamps = kept(section)
    for timing in timings:
        part = row_part(timing.name, timing.jobs)
        rows[part] = (f"| {timing.name} | `{timing.command}` | {timing.jobs} | {timing.wall_seconds:.0f} | "
                      f"{timing.cpu_seconds:.0f} | {timing.certificates} ({timing.whole_batteries}) | "
                      f"{time.strftime('%Y-%m-%d')}, load {timing.load[0]:.1f} → {timing.load[1]:.1f} | "
                      f"{timing.recommendation.rstrip('.')} |")
        stamps[part] = stamp(row_command(timing.name, timing.jobs), timing.code, part)
    lines = [
        BEGIN,
        f"Measured by `ladderlab dev bench-plan` (Linux {platform.release()}, {os.cpu_count()} processors, Python "
        f"{platform.python_version()}), each plan from an empty directory, in one process and its workers; CPU is user + "
        "system seconds of the command and its workers, the load the one-minute average before → after (the wall time "
        "grows with it).",
        "",
        "| plan | command | jobs | wall s | CPU s | certificates (whole batteries) | measured | recommendation |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
        *(rows[part] for part in sorted(rows)),
        "",
        *(stamps[part] for part in sorted(stamps)),
        END,
    ]
    return "\n".join(lines)


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev bench-plan``: parser and handler."""
    parser = commands.add_parser("bench-plan", help="wall and CPU time of 'ladderlab plan' on the breast-cancer challenge "
                                 "and a 10,000-row task")
    parser.add_argument("--plan", action="append", choices=sorted(PLANS), help="time only this plan (repeatable; "
                        "default: both)")
    parser.add_argument("--jobs", type=arguments.count(1), default=2, help="workers (default 2)")
    parser.add_argument("--write", metavar="PAGE", help="put the table into PAGE between the plan-speed markers "
                        "(docs/certify-speed.md)")
    parser.add_argument("--keep", metavar="FOLDER", help="keep each plan's batteries in FOLDER/plan-NAME (none may exist "
                        "yet), for 'ladderlab plan --run-dir' to read back (default: a temporary directory)")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.utils.markdown import marked_section, page_to_write, write_marked_section

    page = page_to_write(args.write, BEGIN, END)
    section = marked_section(page.read_text(), BEGIN, END) if page is not None else None
    names = args.plan or sorted(PLANS)
    keep = {name: Path(args.keep) / f"plan-{name}" for name in names} if args.keep else {}
    for folder in keep.values():
        if folder.exists():
            raise ValueError(f"--keep {args.keep}: {folder} exists; a timing starts from an empty directory")
    timings = []
    for name in names:
        print(f"ladderlab plan {' '.join(PLANS[name])} --jobs {args.jobs} …", flush=True)
        timings.append(time_plan(name, args.jobs, keep=keep.get(name)))
        if page is not None:
            write_marked_section(page, BEGIN, END, table(timings, section or ""))
    print(table(timings, section or ""))
    return 0
