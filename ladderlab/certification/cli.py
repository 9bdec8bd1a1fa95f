"""``ladderlab certify``: a mechanism's certificate (:mod:`ladderlab.certification.certify`), for a
challenge file (:mod:`ladderlab.certification.challenge_certify`), with a parameter search
(:mod:`ladderlab.certification.tune`) or a competition view (:mod:`ladderlab.certification.competition`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ladderlab.certification import field, plan_cli
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
from ladderlab.seeding import read_secret_seed
from ladderlab.tasks import TRAINING_RANGE


@dataclass(frozen=True)
class CertifySubject:
    """Something besides a mechanism that ``ladderlab certify`` certifies, handed in by a higher area
    (the arena's policies: :mod:`ladderlab.arena.cli`): whether the command's first argument ``names``
    one, its handler, its own options, and how the first argument's help names it."""

    names: Callable[[str], bool]
    certify: Callable[[argparse.Namespace], int]
    add_options: Callable[[argparse.ArgumentParser], None]
    described_as: str


def register(commands: argparse._SubParsersAction, subjects: Sequence[CertifySubject] = ()) -> None:
    """``ladderlab certify`` (of a mechanism, or of one of the ``subjects``) and ``ladderlab plan``."""
    cert = commands.add_parser("certify", help="attack battery, safe submission budget and honest cost of a mechanism")
    cert.add_argument("mechanism", help="; or ".join(["a mechanism id, or file.py:Class",
                                                       *(subject.described_as for subject in subjects)]))
    cert.add_argument("--param", action="append", default=[], help="mechanism parameter KEY=VALUE (repeatable)")
    cert.add_argument("--n", type=arguments.count(10), help="public holdout size (default 200)")
    cert.add_argument("--budgets", type=arguments.count(1), nargs="+",
                      help="submission budgets (default 100 300 1000 2000; with --challenge, its per-team budget)")
    cert.add_argument("--challenge", help="certify for this challenge file (docs/own-challenge.md): its labels, split, "
                      "scorer and prediction range, at its public holdout size and per-team budget")
    cert.add_argument("--attack", action="append", default=[],
                      help="an extra attack (repeatable): an id or file.py:Class, optionally with parameters run "
                           "exactly as given, e.g. 'hill-climbing(block=10, repeats=1)' (values are TOML literals)")
    cert.add_argument("--honest", action="append", default=[],
                      help="an honest participant whose cost the certificate measures (repeatable), e.g. "
                           "'improving(days=60)' (default: improving for 30 days; with --challenge its [certify] "
                           "honest, else a submission a day over its schedule)")
    cert.add_argument("--only", action="store_true",
                      help="run only the attacks given with --attack, not the default battery of every attack")
    cert.add_argument("--replications", type=arguments.count(1),
                      help="the most replications a grid point uses; each stops once its verdict is decided "
                           f"(default {DEFAULT_REPLICATIONS}; for an arena policy, seasons, default 1000)")
    cert.add_argument("--confidence", type=float, default=0.95,
                      help="confidence of the whole certificate: all its verdicts hold together (default 0.95)")
    cert.add_argument("--beta", type=float, default=DEFAULT_BETA,
                      help="the tail: a point passes when at most this share of contests overfits past τ or "
                           f"overstates past ε (an arena policy: inflates past τ) (default {DEFAULT_BETA:g})")
    cert.add_argument("--unit", choices=list(UNITS), default=DEFAULT_UNIT,
                      help="the unit of --tau and --epsilon: 'constant', the loss of the best constant prediction on the "
                           "public labels (default); 'bound', the loss bound B; 'score', the scorer's own units")
    cert.add_argument("--useful", type=float, default=USEFUL,
                      help="the honest participants' Spearman correlation below which a safe mechanism is 'safe only "
                           f"because it releases nothing' (default {USEFUL:g})")
    cert.add_argument("--tune", action="store_true", help="search the mechanism's declared parameters (and the "
                      "prediction range) at the largest budget and --scorer (default zero-one); recommend the certified "
                      "setting with the best honest utility; --out gets a table and a plot beside it")
    cert.add_argument("--accounts", type=arguments.count(1), default=1, help="certify against attackers with this many "
                      "accounts of each budget, each with its own mechanism state (default 1)")
    cert.add_argument("--link", action="store_true", help="with --accounts: play the attacker's accounts under the "
                      "linking wrapper (near-identical accounts share one mechanism state; docs/certification.md)")
    cert.add_argument("--complete", action="store_true", help="decide every grid point, also above a budget that "
                      "already fails (by default they stop undecided)")
    cert.add_argument("--scorer", help="certify for this scorer only (default: the 0/1, squared and log losses)")
    cert.add_argument("--prediction-range", nargs="+", metavar="LOW HIGH",
                      help="the range real-valued predictions are clipped into, bounding the loss: LOW HIGH, or "
                           "'training' for the training labels' range (default)")
    cert.add_argument("--seed", type=arguments.count(0), default=0, help="root seed of the battery (default 0)")
    cert.add_argument("--tau", type=arguments.positive,
                      help=f"the overfitting -Δ tolerated in all but a share β of contests, in --unit (default "
                           f"{DEFAULT_TOLERANCE:g}: a tenth of the best constant prediction's loss); for an arena policy, "
                           "the inflation of a published rating tolerated, Elo points (default 20)")
    cert.add_argument("--epsilon", type=arguments.positive,
                      help="the leaderboard's optimism (released better than true) tolerated in all but a share β of "
                           f"contests, in --unit (default {DEFAULT_TOLERANCE:g})")
    cert.add_argument("--jobs", type=arguments.count(1, every_core=True), default=1, help="parallel cells (-1: every core)")
    cert.add_argument("--run-dir", help="keep the battery here instead of the user's cache (resumable; "
                      "'ladderlab report' reads it when it finished)")
    cert.add_argument("--out", help="write the certificate as JSON here, and as Markdown beside it (.md)")
    arguments.add_trust_options(cert)
    cert.add_argument("--competition", help="a scenario file with [[competition]] tables: add the competition view "
                      "(shake-up, best team wins, winner's delta, honest utility) under its rules and team mix")
    field.add_options(cert)
    for subject in subjects:
        subject.add_options(cert)
    add_force_option(cert)
    cert.set_defaults(handler=_certify, resumable=True, subjects=tuple(subjects))
    plan_cli.add_subcommand(commands)


def _certify(args: argparse.Namespace) -> int:
    for subject in args.subjects:
        if subject.names(args.mechanism):
            return subject.certify(args)
    from ladderlab.certification import certify
    from ladderlab.registry import MECHANISMS

    args.tau = DEFAULT_TOLERANCE if args.tau is None else args.tau
    args.epsilon = DEFAULT_TOLERANCE if args.epsilon is None else args.epsilon
    args.replications = args.replications or DEFAULT_REPLICATIONS
    arguments.output_folder("--run-dir", args.run_dir)
    MECHANISMS.checked(args.mechanism, arguments.parse_params(args.param),
                       " ".join(f"--param {pair}" for pair in args.param) or None)
    attacks = [certify.parse_attack(text) for text in args.attack]
    out = certify.check_output(args.out) if args.out else None
    options = dict(replications=args.replications, seed=args.seed, tau=args.tau, epsilon=args.epsilon, jobs=args.jobs,
                   beta=args.beta, unit=args.unit, useful=args.useful,
                   run_dir=args.run_dir, default_battery=not args.only, isolation=args.isolation,
                   secret_seed=read_secret_seed(args.secret_seed) if args.secret_seed else None,
                   progress=args.progress, force=args.force, confidence=args.confidence, complete=args.complete,
                   announce=None if args.progress is False else lambda line: print(line, file=sys.stderr, flush=True),
                   accounts=args.accounts, **({"link": True} if args.link else {}))
    if args.link and args.accounts < 2:
        raise ValueError("--link links an attacker's accounts: give --accounts A with A ≥ 2")
    if args.tune and args.honest:
        raise ValueError(f"--honest {args.honest[0]}: --tune ranks its settings by the default honest participant; "
                         "certify the setting it recommends with --honest")
    if args.tune and args.accounts > 1:
        raise ValueError("--tune certifies every setting against one account; certify the setting it recommends "
                         f"with --accounts {args.accounts}")
    if args.challenge:
        from ladderlab.certification import challenge_certify

        if args.tune:
            from ladderlab.certification import tune

            challenge_certify.refuse_decided_options(args)
            return tune.run_command(args, attacks, out)
        field.check_options(args)
        result = challenge_certify.run_command(args, attacks, out, arguments.parse_params(args.param), **options)
        field.attach(result, args, options["announce"])
        return _write_certificate(result, out, certify.markdown, args.command_line)
    args.n, args.budgets = args.n or 200, args.budgets or [100, 300, 1000, 2000]
    args.prediction_range = args.prediction_range or [TRAINING_RANGE]
    if args.tune:
        from ladderlab.certification import tune

        if args.competition:
            raise ValueError("--tune certifies every setting of the search; add --competition to the certificate of "
                             "the setting it recommends")
        return tune.run_command(args, attacks, out)
    if args.competition:
        from ladderlab.certification import competition as competition_certificate

        try:
            competitions = competition_certificate.competition_scenario(args.mechanism, arguments.parse_params(args.param),
                                                                        args.competition)
        except ValueError as error:
            raise ValueError(f"--competition: {error}") from None
    field.check_options(args)
    result = certify.certify(
        args.mechanism, arguments.parse_params(args.param), n=args.n, budgets=args.budgets, attacks=attacks,
        honest=[certify.parse_honest(text) for text in args.honest], scorer=args.scorer,
        prediction_range=certify.parse_prediction_range(args.prediction_range), **options)
    _note_tolerance_params(result)
    field.attach(result, args, options["announce"])
    text = certify.markdown(result)
    if args.competition:
        result["competition"] = competition_certificate.competition_view(
            args.mechanism, arguments.parse_params(args.param), args.competition, jobs=args.jobs, scenario=competitions,
            progress=args.progress, force=args.force)
        text += "\n" + competition_certificate.markdown(result["competition"])
    return _write_certificate(result, out, lambda _: text, args.command_line)


def _write_certificate(result: dict[str, object], out: Path | None, render: Callable[[dict], str], command: str) -> int:
    """Print the certificate, and write it to ``out`` (JSON, and Markdown beside it, stamped with
    ``command``) if given."""
    from ladderlab.certification import certify
    from ladderlab.certification.certificate_text import summary

    text = render(result)
    print(summary(result), end="")
    if out:
        try:
            written = certify.write_certificate(result, out, text, command)
        except OSError as error:
            print(f"ladderlab: error: {error}", file=sys.stderr)
            return 1
        print(f"certificate written to {written[0]} and {written[1]} (the full Markdown)", file=sys.stderr)
    else:
        print("(--out FILE.json writes the certificate in full: JSON, and Markdown beside it)", file=sys.stderr)
    return 0


def _note_tolerance_params(result: dict[str, object]) -> None:
    """Say which mechanism parameters the certificate set from its tolerance (they are part of what it certifies)."""
    from ladderlab.naming import plugin_label

    chosen = result.get("tolerance_params")
    if chosen:
        print(f"ladderlab: note: the certificate sets {plugin_label('', chosen).strip('()')} (in units of B) so that an "
              f"honest improvement of τ is released; deploy {plugin_label(str(result['mechanism']), result['params'])}",
              file=sys.stderr)
