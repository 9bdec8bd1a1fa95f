"""``ladderlab dev``: the maintainers' commands, which measure this repository's code and regenerate its
pages; each command's parser and handler live in its module."""

from __future__ import annotations

import argparse

from ladderlab.dev import (
    arena_benchmark,
    benchmark,
    certify_speed,
    competition_benchmark,
    isolation_benchmark,
    page_survey,
    plan_speed,
    proofs_page,
    realism,
    results,
    serve_bench,
)
from ladderlab.runs.arguments import count


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev`` and its commands."""
    dev = commands.add_parser("dev", help="maintainers' commands: benchmarks, and the pages under docs/ they write",
                              description="Benchmarks of this repository's code and the generated pages of its docs "
                                          "(docs/generated-pages.md).")
    tools = dev.add_subparsers(dest="dev_command", required=True, metavar="COMMAND")
    benchmark.add_subcommand(tools)
    certify_speed.add_subcommand(tools)
    plan_speed.add_subcommand(tools)
    proofs_page.add_subcommand(tools)
    arena_benchmark.add_subcommand(tools)
    isolation_benchmark.add_subcommand(tools, count(1))
    competition_benchmark.add_subcommand(tools)
    serve_bench.add_subcommand(tools)
    realism.add_subcommand(tools)
    results.add_subcommand(tools)
    page_survey.add_subcommand(tools)
