"""``ladderlab dev results``: the results pages of ``docs/results`` regenerated from their runs
(:mod:`ladderlab.dev.results_pages`). This module is the command line's part and imports the
rest when the command runs, so that ``ladderlab --help`` stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_FOLDER = "docs/results"


def _build(args: argparse.Namespace) -> int:
    from ladderlab.dev.results_pages import build

    build(Path(args.folder), args.names, args.note)
    return 0


def _check(args: argparse.Namespace) -> int:
    from ladderlab.dev.results_pages import check

    problems = check(Path(args.folder))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def add_subcommand(commands: Any) -> None:
    """``ladderlab dev results build|check``."""
    results = commands.add_parser("results", help="regenerate the results pages (docs/results) from their runs")
    actions = results.add_subparsers(dest="action", required=True, metavar="ACTION")
    build_parser = actions.add_parser("build", help="regenerate the pages whose run directory exists, and the index")
    build_parser.add_argument("names", nargs="*", metavar="NAME", help="pages to regenerate (default: all)")
    build_parser.add_argument("--note", default="", help="the conditions of the runs, written on their pages "
                              "(e.g. 'a shared machine, other jobs running')")
    check_parser = actions.add_parser("check", help="name every page that differs from what its data file gives")
    for parser, handler in ((build_parser, _build), (check_parser, _check)):
        parser.add_argument("--folder", default=str(DEFAULT_FOLDER),
                            help=f"the results folder, holding pages.toml (default: {DEFAULT_FOLDER})")
        parser.set_defaults(handler=handler)
