"""``ladderlab plan``: its options and handler (the planner is :mod:`ladderlab.certification.plan`).

Every option is checked before any certificate runs; a bad one is one line naming it: a
missing challenge file, a budget of 0, a tolerance larger than the best constant prediction's
loss on the organiser's public labels, a public set that leaves no final row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from ladderlab.certification.units import (
    DEFAULT_BETA,
    DEFAULT_REPLICATIONS,
    DEFAULT_TOLERANCE,
    DEFAULT_UNIT,
    UNITS,
    USEFUL,
)
from ladderlab.runs import arguments
from ladderlab.runs.workload import add_force_option

PLAN_REPLICATIONS = 200
"""The most replications of a grid point in a plan's certificates: half of certify's. A pass needs about 100 without a
contest beyond the tolerances and 130 to 190 with one to three (the tail criterion at β = 0.1 with a certificate's
family-wise error), and a decided verdict is the same with a larger maximum (it stops where it is decided); a point
still undecided here, on the edge, is not certified, and the plan errs towards a larger public set rather than spend
certify's 400 replications on every edge."""


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab plan``: parser and handler."""
    parser = commands.add_parser(
        "plan", help="the smallest public set, the largest budget and the mechanism to deploy for a challenge",
        description="For each candidate mechanism, tuned: the smallest public set at which it is certified at your "
                    "budget, the largest budget certified at your public set, and the recommendation; a table and "
                    "the budget × public-size frontier (docs/certification.md#planning-a-challenge).")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--challenge", help="plan for this challenge file: its labels, scorer, split and rules")
    where.add_argument("--task", help="plan for a task's holdout, e.g. 'random-labels(n_public=2000, n_holdout=10000)'")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--n", type=arguments.count(10), help="your public set, in rows (default: the split's)")
    size.add_argument("--public-fraction", type=_fraction, help="your public set as a share of the holdout")
    parser.add_argument("--budget", type=arguments.count(1), help="submissions a team may make in all "
                        "(default: --days × --per-day, or the challenge's rules)")
    parser.add_argument("--days", type=arguments.count(1), help="days the challenge runs")
    parser.add_argument("--per-day", type=arguments.count(1), help="submissions a team may make a day")
    parser.add_argument("--teams", type=arguments.count(1), help="teams expected (default: the challenge's [[teams]]); "
                        "the field at the recommendation plays them")
    parser.add_argument("--adaptive", type=arguments.count(0), default=1, help="of the teams, how many play the worst "
                        "attack in the field (default 1)")
    parser.add_argument("--field-replications", type=arguments.count(0), default=50,
                        help="competitions of the field under each mechanism (default 50; 0: no field)")
    parser.add_argument("--mechanism", action="append", default=[], help="a candidate (repeatable): an id, its "
                        "declared settings searched, or an id with parameters, kept (default: full-disclosure kaggle "
                        "ladder ladder-free ladder-t)")
    parser.add_argument("--tau", type=arguments.positive, default=DEFAULT_TOLERANCE,
                        help=f"the overfitting -Δ tolerated in all but a share β of contests, in --unit (default "
                             f"{DEFAULT_TOLERANCE:g}, as certify's)")
    parser.add_argument("--epsilon", type=arguments.positive, default=DEFAULT_TOLERANCE,
                        help=f"the leaderboard's optimism tolerated in all but a share β of contests (default "
                             f"{DEFAULT_TOLERANCE:g})")
    parser.add_argument("--beta", type=float, default=DEFAULT_BETA, help=f"the tail β (default {DEFAULT_BETA:g})")
    parser.add_argument("--unit", choices=list(UNITS), default=DEFAULT_UNIT, help="the unit of --tau and --epsilon "
                        f"(default {DEFAULT_UNIT!r}: the loss of the best constant prediction on the public labels)")
    parser.add_argument("--min-utility", type=_utility, default=USEFUL, help="the least honest utility accepted: the "
                        "median Spearman correlation of an honest participant's released and final scores (default "
                        f"{USEFUL:g})")
    parser.add_argument("--resolution", type=_fraction, default=0.1,
                        help="the smallest public set to within this share (default 0.1)")
    parser.add_argument("--max-fraction", type=_fraction, default=0.5,
                        help="the largest share of the holdout the public set may take (default 0.5)")
    parser.add_argument("--replications", type=arguments.count(1), default=PLAN_REPLICATIONS,
                        help=f"the most replications of a grid point (default {PLAN_REPLICATIONS}; certify's is "
                             f"{DEFAULT_REPLICATIONS}: an undecided point counts as not certified)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence of each certificate (default 0.95)")
    parser.add_argument("--seed", type=arguments.count(0), default=0, help="root seed (default 0)")
    parser.add_argument("--jobs", type=arguments.count(1, every_core=True), default=1, help="workers (-1: every core)")
    parser.add_argument("--run-dir", help="keep the plan's batteries here (default: the user's cache); the same plan "
                        "again reads them back")
    parser.add_argument("--out", help="write the plan as JSON here, as Markdown (.md) and its frontier (.png) beside it, "
                        "and the recommended certificate as <out>-recommended.json")
    add_force_option(parser)
    parser.set_defaults(handler=run_command)


def _fraction(text: str) -> float:
    value = arguments.positive(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text!r}")
    return value


def _utility(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between -1 and 1, got {text!r}") from None
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number between -1 and 1 (a Spearman correlation), got {text!r}")
    return value


def budget_of(args: argparse.Namespace) -> int:
    """The budget a team gets: ``--budget``, else ``--days`` × ``--per-day``, else the challenge's rules."""
    if args.budget is not None:
        if args.days is not None and args.per_day is not None and args.budget > args.days * args.per_day:
            raise ValueError(f"--budget {args.budget}: more than --days {args.days} × --per-day {args.per_day} allow")
        return args.budget
    if (args.days is None) != (args.per_day is None):
        given = "--days" if args.days is not None else "--per-day"
        raise ValueError(f"{given}: give --days and --per-day together (or --budget)")
    if args.days is not None:
        return args.days * args.per_day
    if args.challenge:
        from ladderlab.certification.challenge_certify import challenge_budgets
        from ladderlab.certification.challenge_task import load_challenge

        return challenge_budgets(load_challenge(args.challenge)[0], None)[0]
    raise ValueError("give the budget: --budget, or --days and --per-day")


def default_directory(target: Any, seed: int) -> Path:
    """The user's cache for a plan's batteries, by what they depend on: the holdout and the seed."""
    from ladderlab.utils.locations import location_free

    key = hashlib.sha256(json.dumps([target.task, location_free(target.task_params), target.holdout, seed],
                                    sort_keys=True, default=str).encode()).hexdigest()[:20]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "ladderlab" / "plan" / key


def run_command(args: argparse.Namespace) -> int:
    """Check every option, plan, print the table; write the plan beside ``--out``."""
    from ladderlab.certification import certify, field, plan

    arguments.output_folder("--run-dir", args.run_dir)
    out = certify.check_output(args.out) if args.out else None
    if not 0.5 < args.confidence < 1:
        raise ValueError(f"--confidence {args.confidence}: must lie in (0.5, 1)")
    if not 0 < args.beta < 1:
        raise ValueError(f"--beta {args.beta:g}: must lie in (0, 1)")
    budget = budget_of(args)
    target = (plan.challenge_target(args.challenge, budget, args.n, args.public_fraction) if args.challenge else
              plan.task_target(args.task, budget, args.n, args.public_fraction))
    mechanisms = [_candidate(text) for text in args.mechanism]
    teams, rules = field.challenge_rules(args.challenge)
    teams = args.teams or teams
    if teams is not None and args.field_replications and args.adaptive > teams:
        raise ValueError(f"--adaptive {args.adaptive}: more adaptive teams than the {teams} teams expected")
    plan.check_target(target, args.tau, args.epsilon, args.unit, args.force)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    directory = Path(args.run_dir) if args.run_dir else default_directory(target, args.seed)
    say(f"plan kept in {directory} (interrupt and run the same command again to resume)")
    result = plan.plan(target, budget, mechanisms or None, directory, args.min_utility, args.resolution,
                       args.max_fraction, say, tau=args.tau, epsilon=args.epsilon, beta=args.beta, unit=args.unit,
                       confidence=args.confidence, replications=args.replications, seed=args.seed, jobs=args.jobs,
                       force=args.force)
    certificate = result["recommendation"]["certificate"]
    if teams and args.field_replications and certificate is not None:
        if args.days is not None and args.per_day is not None:
            rules = field.FieldRules(args.days, args.per_day, rules.selection)
        try:
            result["field"] = field.run(certificate, teams, args.adaptive, rules, args.field_replications,
                                        jobs=args.jobs, force=args.force)
        except field.NoField as reason:
            result["field"] = {"not_played": str(reason), "teams": teams, "adaptive": args.adaptive}
    print(plan.text(result), end="")
    if out:
        written = plan.write(result, out, args.command_line)
        say(f"plan written to {', '.join(map(str, written))}")
    return 0


def main(argv: list[str]) -> int:
    """``ladderlab plan`` with the arguments ``argv`` (``["plan", …]``), as the command line runs it, for the benchmark
    (:mod:`ladderlab.dev.plan_speed`): the exit code."""
    import shlex

    parser = argparse.ArgumentParser(prog="ladderlab")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    args.command_line = shlex.join(["ladderlab", *argv])
    return args.handler(args)


def _candidate(text: str) -> Any:
    """A candidate mechanism: an id (its settings searched) or an id with parameters (kept)."""
    from ladderlab.certification.certify import AttackSpec
    from ladderlab.registry import MECHANISMS

    try:
        mechanism, pinned = MECHANISMS.parse(text)
    except ValueError as error:
        raise ValueError(f"--mechanism {text}: {error}") from None
    return AttackSpec(mechanism, pinned)
