"""``ladderlab arena``: rate a battles file, find the fewest votes that change its top model, draw battles,
list the arena's plugins, run an arena sweep; and ``ladderlab certify POLICY`` for an arena policy.

The command line registers ``arena`` with :func:`register`, and ``certify`` hands an arena policy to
:func:`certify_command` (:data:`CERTIFY_SUBJECT`: its first argument is one by :func:`is_policy`; the
options only arena certificates read come from :func:`add_certify_options`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ladderlab.arena.builtin_sweeps import builtin_sweeps
from ladderlab.certification.cli import CertifySubject
from ladderlab.certification.units import DEFAULT_UNIT, USEFUL
from ladderlab.runs.arguments import ArgumentError, count, output_file
from ladderlab.runs.workload import add_force_option

FORMATS = ("text", "json", "csv")


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab arena rate|robustness|simulate|list|sweep``."""
    arena = commands.add_parser("arena", help="pairwise leaderboards: rate battles as Chatbot Arena does, their "
                                              "robustness, simulated battles, arena policies and attacks",
                                description="Chatbot-Arena-style boards: Bradley–Terry ratings with bootstrap "
                                            "intervals equal to FastChat's, the fewest votes whose removal changes "
                                            "the top model, a pairwise task family, and the arena's policies and "
                                            "attacks (see docs/arena.md). Certify a policy with 'ladderlab certify'.")
    commands_ = arena.add_subparsers(dest="arena_command", required=True, parser_class=type(arena), metavar="COMMAND")

    rate = commands_.add_parser("rate", help="Bradley–Terry ratings, 95%% bootstrap intervals and Arena ranks",
                                description="Rates a battles file (CSV, JSON as FastChat writes it, JSON lines or "
                                            "Parquet; columns model_a, model_b, winner) as FastChat's compute_bt and "
                                            "compute_bootstrap_bt do, and ranks as Chatbot Arena does.")
    _battles_argument(rate)
    rate.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    rate.add_argument("--bootstrap", type=count(0), default=100, help="bootstrap rounds (default 100, FastChat's; 0: "
                                                                      "ratings only)")
    rate.add_argument("--seed", type=count(0), default=0, help="seed of the bootstrap (default 0, FastChat's)")
    rate.add_argument("--solver", choices=("fastchat", "exact"), default="fastchat",
                      help="'fastchat': FastChat's L-BFGS-B, stopped where it stops (default); 'exact': the "
                           "maximum-likelihood ratings")
    rate.add_argument("--anchor", metavar="MODEL=RATING",
                      help="shift the ratings so that MODEL has RATING (default FastChat's: "
                           "mixtral-8x7b-instruct-v0.1=1114, where it is rated)")
    rate.add_argument("--no-anchor", action="store_true", help="no anchor: the ratings' mean is 1000")
    rate.add_argument("--style-control", action="store_true",
                      help="FastChat's style control: the battles' style differences as covariates (needs the style "
                           "counts: columns sum_assistant_a_tokens … bold_count_b, or conv_metadata records)")
    rate.add_argument("--top", type=count(1), help="models listed in the text output (default all)")
    rate.add_argument("--jobs", type=count(1, every_core=True), default=1, help="parallel bootstrap fits (-1: every core)")
    rate.add_argument("--out", help="write the ratings to this file instead of the terminal")
    rate.set_defaults(handler=_rate)

    robust = commands_.add_parser("robustness", help="the fewest votes whose removal changes the top model",
                                  description="Huang et al. 2025: the fewest votes whose removal puts another model "
                                              "on top of the maximum-likelihood ratings; an attained upper bound with "
                                              "its votes, a certified lower bound, exact where the gap can be searched.")
    _battles_argument(robust)
    robust.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    robust.add_argument("--challengers", type=count(1), default=5, help="models closest to the top searched (default 5)")
    robust.add_argument("--exhaustive-limit", type=count(0), default=20000,
                        help="most refits to search the removals between the bounds exhaustively (default 20000)")
    robust.set_defaults(handler=_robustness)

    simulate = commands_.add_parser("simulate", help="battles drawn from the pairwise family, as a battles file",
                                    description="Draws battles (with their times) from the pairwise task family and "
                                                "writes them as a battles file; --truth writes each model's true "
                                                "strength.")
    simulate.add_argument("--out", required=True, help="the battles file to write (.csv, .json, .jsonl or .parquet)")
    simulate.add_argument("--family", default="pairwise", help="the family with parameters, e.g. 'pairwise(models=100, "
                                                               "battles=50000, lifetime=0.2)' (TOML values)")
    simulate.add_argument("--seed", type=count(0), default=0, help="seed (default 0)")
    simulate.add_argument("--truth", help="also write model, provider, true strength (Elo) and style to this CSV file")
    simulate.set_defaults(handler=_simulate)

    listing = commands_.add_parser("list", help="the arena policies and attacks, with parameters and references")
    listing.add_argument("what", nargs="*", metavar="FAMILY", help="policies, attacks or families (default all)")
    listing.set_defaults(handler=_list)

    sweep = commands_.add_parser("sweep", help="run an arena sweep (a built-in name or a TOML file) and print or write "
                                               "its page",
                                 description=f"Runs an arena sweep: policies against attack settings over many seasons "
                                             f"(built-in: {', '.join(builtin_sweeps())}). --write writes its page, stamped, "
                                             "with a figure beside it.")
    sweep.add_argument("sweep", help="a built-in sweep's name or a TOML sweep file")
    sweep.add_argument("--write", help="write the page (Markdown) here, and its figure beside it (.png)")
    sweep.add_argument("--replications", type=count(1), help="seasons per cell (default: the sweep's)")
    sweep.add_argument("--jobs", type=count(1, every_core=True), default=1, help="parallel workers (-1: every core)")
    sweep.add_argument("--format", choices=("markdown", "json"), default="markdown", help="what to print without --write")
    sweep.set_defaults(handler=_sweep)


def _sweep(args: argparse.Namespace) -> int:
    from ladderlab.arena import sweep

    return sweep.run_command(args)


def _battles_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("battles", help="a battles file: CSV, JSON, JSON lines or Parquet with model_a, model_b, winner")
    parser.add_argument("--anonymous-only", action="store_true",
                        help="rate only the battles whose 'anony' is true, as FastChat's leaderboard does")
    add_force_option(parser)


def _anchor(args: argparse.Namespace) -> tuple[str, float] | None:
    from ladderlab.arena.bradley_terry import FASTCHAT_ANCHOR

    if args.no_anchor:
        if args.anchor:
            raise ArgumentError("--anchor and --no-anchor: give one")
        return None
    if not args.anchor:
        return FASTCHAT_ANCHOR
    model, separator, value = args.anchor.rpartition("=")
    try:
        rating = float(value)
    except ValueError:
        rating = float("nan")
    if not separator or not model or not rating == rating or abs(rating) == float("inf"):
        raise ArgumentError(f"--anchor {args.anchor}: give MODEL=RATING, e.g. gpt-4-0613=1163")
    return model, rating


def _rate(args: argparse.Namespace) -> int:
    from ladderlab.arena.battles import read_battles
    from ladderlab.arena.rating import rate, text_table

    output_file("--out", args.out)
    anchor = _anchor(args)
    battles = read_battles(args.battles, args.anonymous_only, args.force)
    if anchor and args.anchor and anchor[0] not in battles.models:
        raise ArgumentError(f"--anchor {args.anchor}: {anchor[0]!r} fought no battle in {args.battles}")
    if args.style_control:
        if args.solver != "fastchat":
            raise ArgumentError("--style-control fits as FastChat does; leave out --solver")
        from ladderlab.arena.style import FEATURES, rate_style_controlled

        controlled = rate_style_controlled(battles, args.bootstrap, args.seed, anchor, args.jobs)
        ratings, records = controlled.ratings, controlled.records()
        extra = [f"style coefficient {name}: {controlled.coefficients[name]:+.4f}"
                 + (" [{:+.4f}, {:+.4f}]".format(*controlled.intervals[name]) if controlled.intervals else "")
                 for name in FEATURES]
    else:
        ratings = rate(battles, args.bootstrap, args.seed, args.solver, anchor, args.jobs, progress=args.progress)
        records, extra = ratings.records(), []
    if args.format == "json":
        text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    elif args.format == "csv":
        text = ratings.table().to_csv(index=False)
    else:
        text = text_table(ratings, args.top, extra)
    return _emit(text, args.out)


def _robustness(args: argparse.Namespace) -> int:
    from ladderlab.arena.battles import read_battles
    from ladderlab.arena.robustness import fewest_removals

    battles = read_battles(args.battles, args.anonymous_only, args.force)
    found = fewest_removals(battles, args.challengers, args.exhaustive_limit)
    print(json.dumps(found.records(), indent=2, ensure_ascii=False) if args.format == "json" else found.text(), end="")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from ladderlab.arena.battles import FORMATS as SUFFIXES
    from ladderlab.arena.battles import to_frame

    output_file("--out", args.out)
    output_file("--truth", args.truth)
    suffix = Path(args.out).suffix.lower()
    if suffix not in SUFFIXES:
        raise ArgumentError(f"--out {args.out}: name a battles file ending in {', '.join(sorted(SUFFIXES))}")
    family = _family(args.family, "--family")
    rng = np.random.default_rng(args.seed)
    pool = family.pool(rng)
    battles, times = family.battles_of(rng, pool)
    frame = to_frame(battles).assign(tstamp=times, anony=True)
    if battles.style is not None:
        from ladderlab.arena.battles import STYLE_ELEMENTS

        frame[list(STYLE_ELEMENTS)] = battles.style.astype(int)
    kind = SUFFIXES[suffix]
    if kind == "csv":
        frame.to_csv(args.out, index=False)
    elif kind == "parquet":
        frame.to_parquet(args.out, index=False)
    else:
        frame.to_json(args.out, orient="records", lines=kind == "jsonl")
    if args.truth:
        pd.DataFrame({"model": pool.names, "provider": pool.provider, "strength": pool.strength,
                      "style": pool.style}).to_csv(args.truth, index=False)
    print(f"{len(battles)} battles among {pool.size} models written to {args.out}", file=sys.stderr)
    return 0


def _family(text: str, option: str) -> Any:
    """The pairwise family named by ``pairwise`` or ``pairwise(key=value, …)`` (TOML values), checked."""
    from ladderlab.arena.registry import ARENA_FAMILIES

    try:
        family_id, params = ARENA_FAMILIES.parse(text)
        return ARENA_FAMILIES.checked(family_id, params or {})
    except ValueError as error:
        raise ArgumentError(f"{option} {text}: {error}") from None


def _list(args: argparse.Namespace) -> int:
    from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_FAMILIES, ARENA_POLICIES

    families = {"policies": ARENA_POLICIES, "attacks": ARENA_ATTACKS, "families": ARENA_FAMILIES}
    for name in args.what:
        if name not in families:
            raise ArgumentError(f"argument FAMILY: {name!r} is none of {', '.join(families)}")
    for name, registry in families.items():
        if not args.what or name in args.what:
            print(f"arena {name}:")
            print(registry.describe())
    return 0


def _emit(text: str, out: str | None) -> int:
    if out:
        from ladderlab.utils.atomic import write_atomically

        write_atomically(out, text.encode() if isinstance(text, str) else text)
        print(f"written to {out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


# --- ladderlab certify POLICY --------------------------------------------------------------------------

def add_certify_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``ladderlab certify`` that only an arena policy's certificate reads."""
    parser.add_argument("--arena", default="pairwise", metavar="FAMILY",
                        help="an arena policy: the pairwise family it is certified on, e.g. 'pairwise(models=100, "
                             "battles=50000)' (default: pairwise at its defaults)")
    parser.add_argument("--newcomer-gap", type=float, default=0.0, metavar="ELO",
                        help="an arena policy: the provider's model's true strength minus the pool's strongest, Elo "
                             "points (default 0)")


def is_policy(name: str) -> bool:
    """Whether ``name`` is an arena policy (a built-in or third-party id, or a file.py:Class that is one)."""
    from ladderlab.arena.registry import ARENA_POLICIES

    if ":" not in name:
        return name in ARENA_POLICIES.ids()
    try:
        ARENA_POLICIES.get(name)
    except ValueError:
        return False
    return True


HOLDOUT_ONLY = ("n", "challenge", "scorer", "prediction_range", "honest", "competition", "run_dir", "epsilon", "teams")
DISCARDED = {"tune": False, "link": False, "accounts": 1, "isolation": "none", "secret_seed": None,
             "unit": DEFAULT_UNIT, "useful": USEFUL}


def certify_command(args: argparse.Namespace) -> int:
    """``ladderlab certify POLICY`` for an arena policy: its certificate, printed, and written to ``--out``."""
    from ladderlab.arena import certificate
    from ladderlab.certification.certify import check_output, write_certificate
    from ladderlab.runs.arguments import parse_params

    for option in HOLDOUT_ONLY:
        if getattr(args, option, None) not in (None, [], False):
            raise ArgumentError(f"--{option.replace('_', '-')}: a holdout certificate's option; {args.mechanism} is an "
                                "arena policy (see 'ladderlab certify --help', the --arena options)")
    for option, default in DISCARDED.items():
        if getattr(args, option, default) != default:
            raise ArgumentError(f"--{option.replace('_', '-')}: not for an arena policy")
    out = check_output(args.out) if args.out else None
    params = parse_params(args.param)
    from ladderlab.arena.registry import ARENA_POLICIES

    ARENA_POLICIES.checked(args.mechanism, params, " ".join(f"--param {pair}" for pair in args.param) or None)
    attacks = [certificate.parse_attack(text) for text in args.attack] or None
    if args.only and not attacks:
        raise ArgumentError("--only runs the attacks given with --attack: give at least one")
    issued = certificate.certify_policy(
        args.mechanism, params, attacks=attacks, budgets=args.budgets, family=_family(args.arena, "--arena"),
        tau=args.tau if args.tau is not None else certificate.TAU, beta=args.beta,
        confidence=args.confidence, replications=args.replications or certificate.MOST_REPLICATIONS, seed=args.seed,
        jobs=args.jobs, newcomer_gap=args.newcomer_gap, complete=args.complete, progress=args.progress)
    print(certificate.summary(issued), end="")
    if out:
        written = write_certificate(issued, out, certificate.markdown(issued), args.command_line)
        print(f"certificate written to {written[0]} and {written[1]}", file=sys.stderr)
    return 0


CERTIFY_SUBJECT = CertifySubject(names=is_policy, certify=certify_command, add_options=add_certify_options,
                                 described_as="an arena policy (see 'ladderlab arena list')")
"""What ``ladderlab certify`` hands to this module (:class:`ladderlab.certification.cli.CertifySubject`)."""
