"""``ladderlab run`` and ``ladderlab report``: a scenario run into a run directory
(:mod:`ladderlab.runs.runner`), and the report of a run directory (:mod:`ladderlab.reports.report`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ladderlab.runs import arguments
from ladderlab.runs.arguments import ArgumentError
from ladderlab.runs.workload import add_force_option
from ladderlab.seeding import read_secret_seed
from ladderlab.utils.atomic import write_atomically
from ladderlab.utils.progress import progress_bar


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab run`` and ``ladderlab report``."""
    run = commands.add_parser("run", help="run (or resume) a scenario: a file or a built-in name")
    run.add_argument("scenario", help="path to a TOML scenario, or a built-in name (see 'ladderlab list scenarios')")
    run.add_argument("--out", help="run directory (default: runs/<scenario name>)")
    run.add_argument("--jobs", type=arguments.count(1, every_core=True), default=1, help="parallel cells (loky backend; -1: every core)")
    run.add_argument("--backend", choices=["loky", "dask"], default="loky",
                     help="how cells run in parallel: loky processes on this machine, or a Dask cluster (default loky)")
    run.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    run.add_argument("--replications", type=arguments.count(1), help="override the scenario's replication count")
    arguments.add_trust_options(run)
    run.add_argument("--rerun-stale", action="store_true",
                     help="compute again the finished cells whose plugin's version or source changed since")
    add_force_option(run)
    run.set_defaults(handler=_run, resumable=True)

    report_parser = commands.add_parser("report", help="summary table, plots and HTML page of a run directory")
    report_parser.add_argument("run_dir", help="a run directory written by 'ladderlab run' (finished or not)")
    report_parser.add_argument("--format", choices=["text", "markdown", "csv", "json"],
                               help="every table of the run at full width: the duels' and competitions' summaries, "
                                    "each competition replication, team groups, a certificate's rows, the papers' "
                                    "values, the accuracy extrapolations (json and csv: each duel replication too); "
                                    "default: the main measures in a table that fits a 120-column terminal")
    report_parser.add_argument("--out", help="write the report to this file instead of the terminal")
    report_parser.add_argument("--html", help="write a self-contained HTML report to this file")
    report_parser.add_argument("--plots", help="write the plots as PNG files into this folder")
    report_parser.set_defaults(handler=_report)


def _run(args: argparse.Namespace) -> int:
    if args.scheduler and args.backend != "dask":
        raise ArgumentError(f"--scheduler {args.scheduler} needs --backend dask (the loky backend runs locally)")
    arguments.output_folder("--out", args.out)
    from ladderlab.reports import formats as report_formats
    from ladderlab.reports import report
    from ladderlab.runs import runner, scenario, workload

    loaded = scenario.load(args.scenario, args.replications)
    out = args.out or f"runs/{loaded.name}"
    arguments.output_folder("--out", out)
    try:
        runner.check_backend(args.backend, args.scheduler, args.jobs)
    except runner.BackendError as error:
        raise ArgumentError(f"--scheduler {args.scheduler}: {error}" if args.scheduler else str(error)) from None
    all_cells = scenario.cells(loaded)
    workload.refuse_if_too_large(runner.estimate(loaded, Path(out), args.jobs, args.force), args.force,
                                 hint=runner.SMALLER_SCENARIO)
    skipped = scenario.preflight(loaded)
    print(f"scenario {loaded.name}: {len(all_cells)} cells × {loaded.replications} replications → {out}", flush=True)
    for cell in all_cells:
        if cell.key in skipped:
            print(f"skipped (cannot play): {cell.label}: {skipped[cell.key]}", file=sys.stderr)
    results = runner.run(loaded, out, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler,
                         progress=args.progress, isolation=args.isolation,
                         rerun_stale=args.rerun_stale, force=args.force,
                         secret_seed=read_secret_seed(args.secret_seed) if args.secret_seed else None)
    run = report.load_run(out)
    print(report_formats.compact_text(run), end="")
    print(f"\nfull report with plots: ladderlab report {out} --html {out}/report.html")
    failures = report.failure_lines(results)
    if not run.competitions.empty and (run.competitions.status == "failed").any():
        failed = run.competitions[run.competitions.status == "failed"]
        failures.append(f"{len(failed)} of {len(run.competitions)} competition replications failed; first error: "
                        f"{failed.iloc[0].error}")
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


def _report(args: argparse.Namespace) -> int:
    arguments.output_file("--out", args.out)
    arguments.output_file("--html", args.html)
    arguments.output_folder("--plots", args.plots)
    from ladderlab.reports import competition as competition_report
    from ladderlab.reports import extrapolation as extrapolation_report
    from ladderlab.reports import formats as report_formats
    from ladderlab.reports import plots, report

    run = report.load_run(args.run_dir)
    for line in report.status_lines(run):
        print(line, file=sys.stderr)
    figures = (plots.report_figures(run.results) + competition_report.report_figures(run.competitions)
               + extrapolation_report.report_figures(run.extrapolations)) if args.plots else []
    files = [Path(args.plots) / f"{number:02d}-{figure.slug}.png" for number, figure in enumerate(figures, start=1)]
    base = Path(args.out).resolve().parent if args.out else Path.cwd()
    links = [(figure.title, os.path.relpath(path.resolve(), base)) for figure, path in zip(figures, files)]
    text = report_formats.write(run, args.format, args.out, links)
    if not args.out:
        print(text, end="")
    if args.html:
        from ladderlab.reports import html as report_html

        write_atomically(args.html, report_html.html_page(run))
        print(f"HTML report written to {args.html}", file=sys.stderr)
    if args.plots:
        Path(args.plots).mkdir(parents=True, exist_ok=True)
        for figure, path in zip(progress_bar(figures, progress=args.progress, desc="plots", unit="plot"), files):
            write_atomically(path, figure.png())
    return 0
