"""The ``ladderlab`` command line: the commands of every area, listed here.

Each area registers its own commands (``register(commands)`` in its ``cli`` module): the parser
and the handler live beside the feature. At most twelve commands stand at the top; the
maintainers' benchmarks and page tooling are under ``ladderlab dev``.

A user error (a bad argument, scenario, parameter or output path) is one line on
standard error, ``ladderlab: error: …`` naming the argument, and exit code 2,
found before any work starts; output paths are checked first. A closed pipe
(``ladderlab list | head``) ends quietly.

Subcommands import what they need when they run, so ``--help`` and ``list`` start fast.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
from collections.abc import Sequence

from ladderlab import __version__
from ladderlab.arena import cli as arena_cli
from ladderlab.certification import cli as certification_cli
from ladderlab.cli import demo
from ladderlab.dev import cli as dev_cli
from ladderlab.extrapolation import cli as extrapolation_cli
from ladderlab.final_rankings import cli as final_rankings_cli
from ladderlab.isolation.layout import restart_with_fixed_layout
from ladderlab.isolation.untrusted import sandboxed_if
from ladderlab.platforms import cli as platforms_cli
from ladderlab.reports import cli as reports_cli
from ladderlab.runs import cli as runs_cli
from ladderlab.runs.arguments import ArgumentError
from ladderlab.serve import cli as serve_cli

DESCRIPTION = (
    "Pit leaderboard mechanisms against adaptive attacks: run scenario matrices, report them, "
    "certify a mechanism, serve it, and compute statistics of the winner."
)
STATS = ("statistics of a leaderboard's scores: a final ranking's certificate, a challenge's log replayed, the "
         "state of the art, accuracy on more classes")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``ladderlab: error: argument --jobs: …``, exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgumentError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ladderlab", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"ladderlab {__version__}")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--quiet", dest="progress", action="store_false", default=None,
                       help="no progress bars (they are shown only on a terminal anyway)")
    shown.add_argument("--progress", dest="progress", action="store_true",
                       help="progress bars on standard error even when it is not a terminal (a log file)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    runs_cli.register(commands)  # list
    reports_cli.register(commands)  # run, report
    demo.register(commands)  # demo
    certification_cli.register(commands, subjects=[arena_cli.CERTIFY_SUBJECT])  # certify, plan
    serve_cli.register(commands)  # serve (verify, links, attack)
    platforms_cli.register(commands)  # export, audit
    arena_cli.register(commands)  # arena
    stats = commands.add_parser("stats", help=STATS, description=STATS[0].upper() + STATS[1:] + ".")
    statistics = stats.add_subparsers(dest="stats_command", required=True, metavar="COMMAND")
    final_rankings_cli.register(statistics)  # rank-certificate, replay, sota
    extrapolation_cli.register(statistics)  # extrapolate
    dev_cli.register(commands)  # dev: the maintainers' benchmarks and pages
    return parser


RESUME_HINT = "; run the same command again to resume: what finished is kept"
"""Said when a resumable command (its parser's ``resumable`` default) is interrupted."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 success, 1 some replications failed,
    2 a user error, reported as one line ``ladderlab: error: …``)."""
    _show_run_messages()
    args = None
    try:
        args = build_parser().parse_args(argv)
        args.command_line = shlex.join(["ladderlab", *(sys.argv[1:] if argv is None else argv)])
        if argv is None and getattr(args, "isolation", "none") == "process":
            restart_with_fixed_layout()  # once: attack processes then share its code addresses
        with sandboxed_if(getattr(args, "isolation", "none")):  # untrusted attacks: never imported here
            return args.handler(args)
    except ValueError as error:
        return _error(str(error))
    except OSError as error:
        if isinstance(error, BrokenPipeError):
            return _closed_pipe()
        where = f"{error.filename}: " if error.filename else ""
        return _error(f"{where}{error.strerror or error}")
    except KeyboardInterrupt:
        return _error("interrupted" + (RESUME_HINT if getattr(args, "resumable", False) else ""), code=130)


class _StandardError(logging.Handler):
    """Log records as plain lines on the standard error of the moment (a test may replace it)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr, flush=True)


def _show_run_messages() -> None:
    """Show the runner's messages from INFO up (the estimated work, quarantined cells, a stale lock)."""
    logger = logging.getLogger("ladderlab.run")
    if not any(isinstance(handler, _StandardError) for handler in logger.handlers):
        logger.addHandler(_StandardError())
    logger.setLevel(logging.INFO)


def _error(message: str, code: int = 2) -> int:
    print(f"ladderlab: error: {message}", file=sys.stderr)
    return code


def _closed_pipe() -> int:
    """The reader of standard output went away (``| head``): stop quietly. Python's documented
    recipe: point stdout at devnull so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 1


if __name__ == "__main__":
    sys.exit(main())
