"""The command line of a leaderboard's statistics after its close, under ``ladderlab stats``:
``rank-certificate`` (the certificate is :mod:`ladderlab.final_rankings.certificate`, the input
:mod:`ladderlab.final_rankings.private_samples`), ``replay`` (:mod:`ladderlab.final_rankings.replay`)
and ``sota``, the state of the art of its accuracies (:mod:`ladderlab.stats.sota`); each imports
what it needs when it runs."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from ladderlab.final_rankings import replay
from ladderlab.runs import arguments
from ladderlab.runs.workload import add_force_option, check_work


def register(commands: argparse._SubParsersAction) -> None:
    """``rank-certificate``, ``replay`` and ``sota``."""
    add_subcommand(commands)
    replay.add_subcommand(commands)
    sota = commands.add_parser(
        "sota", help="distribution of the best of m accuracies, or a multiplicity-adjusted state of the art",
        description="Møllersen & Holsbø: the best observed accuracy among m classifiers on n test points "
                    "(--m --n --theta, or --thetas FILE; --rho for dependent classifiers), or the state of the "
                    "art estimated from a leaderboard's accuracies (--scores FILE --n N).",
    )
    sota.add_argument("--m", type=arguments.count(1), help="number of classifiers (with --theta)")
    sota.add_argument("--n", type=arguments.count(1), help="test set size")
    sota.add_argument("--theta", type=float, help="probability of a correct prediction, shared by all m")
    sota.add_argument("--thetas", help="file of one probability per classifier (white space or commas)")
    sota.add_argument("--scores", help="file of observed leaderboard accuracies, one per team")
    sota.add_argument("--alpha", type=float, default=0.05, help="1 - confidence of the interval (default 0.05)")
    sota.add_argument("--rho", type=float, help="correlation with the latent Y0 (dependent classifiers; 0.6 for --scores)")
    sota.add_argument("--y0", choices=["random", "fixed"], help="latent Y0 random (the default) or fixed (with --rho)")
    sota.add_argument("--target", choices=["expected", "upper"],
                      help="crop so that the expected (or upper-limit) maximum equals the observed one")
    sota.add_argument("--repetitions", type=arguments.count(1),
                      help="simulated test sets (default 10000 for --rho, 1000 per search step for --scores)")
    sota.add_argument("--bootstrap", type=arguments.count(1), help="bootstrap resamples of the teams (--scores; default 30)")
    sota.add_argument("--seed", type=arguments.count(0), default=0, help="root seed of the simulations (default 0)")
    sota.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    add_force_option(sota)
    sota.set_defaults(handler=_sota)


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab stats rank-certificate``: the parser and its handler."""
    from ladderlab.runs.arguments import count, positive

    parser = commands.add_parser(
        "rank-certificate", help="bootstrap intervals of a final ranking, P(winner is best), Arena ranks, fewest removals",
        description="How sure is a final ranking? From each team's counted submission on the private samples: "
                    "bootstrap intervals of every team's score and rank, the probability that the winner is best, "
                    "rank as Chatbot Arena reports it, and the fewest private samples whose removal changes the "
                    "winner (see docs/rank-certificate.md).")
    parser.add_argument("input", help="per-sample private data (CSV or Parquet: team, sample, and loss or prediction) "
                                      "or a competition run directory")
    parser.add_argument("--labels", help="with predictions: a file of the private labels (columns sample, label)")
    parser.add_argument("--scorer", help="with predictions: the scorer (a ladderlab scorer name)")
    parser.add_argument("--cell", help="a competition run: the cell (its key, or a prefix of it)")
    parser.add_argument("--replication", type=count(0), default=0, help="a competition run: the replication (default 0)")
    parser.add_argument("--replicates", type=count(1), default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--level", type=positive, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--challengers", type=count(1), default=5,
                        help="metrics that do not decompose: teams searched greedily for the fewest removals (default 5)")
    parser.add_argument("--seed", type=count(0), default=0, help="root seed of the bootstrap (default 0)")
    parser.add_argument("--top", type=count(1), help="teams listed in the text output (default: all)")
    parser.add_argument("--format", choices=["text", "json", "csv"], default="text",
                        help="output format (csv: one row per team)")
    add_force_option(parser)
    parser.add_argument("--out", help="write the certificate to this file instead of the terminal")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    import json

    from ladderlab.final_rankings.certificate import (
        certificate_records,
        certificate_stream,
        certify_ranking,
        text_certificate,
    )
    from ladderlab.final_rankings.private_samples import (
        from_competition_run,
        read_samples,
    )
    from ladderlab.final_rankings.replay_report import competition_row
    from ladderlab.runs.arguments import output_file
    from ladderlab.runs.rundir import write_atomically
    from ladderlab.runs.workload import check_work, ranking_certificate_work
    output_file("--out", args.out)
    if not 0 < args.level < 1:
        raise ValueError(f"--level must lie in (0, 1), got {args.level}")
    path = Path(args.input)
    if path.is_dir():
        for option in ("labels", "scorer"):
            if getattr(args, option) is not None:
                raise ValueError(f"--{option}: {path} is a competition run, which gives its own labels and scorer")
        samples = from_competition_run(competition_row(path, args.cell, args.replication))
    else:
        samples = read_samples(path, args.labels, args.scorer, args.force)
    check_work(ranking_certificate_work(len(samples.teams), samples.size, args.replicates), args.force,
                "fewer --replicates need less")
    rng = certificate_stream(args.seed, samples)
    certificate = certify_ranking(samples, rng, args.replicates, args.level, args.challengers, progress=None)
    if args.format == "json":
        text = json.dumps(certificate_records(certificate), indent=2, ensure_ascii=False) + "\n"
    elif args.format == "csv":
        text = certificate.table().to_csv(index=False)
    else:
        text = text_certificate(certificate_records(certificate), args.top)
    if args.out:
        write_atomically(Path(args.out), text.encode())
    else:
        print(text, end="")
    return 0


def _sota(args: argparse.Namespace) -> int:
    from ladderlab import stats
    from ladderlab.runs import workload

    _refuse_unused("not used with --scores FILE", args.scores is not None, theta=args.theta, thetas=args.thetas,
                   m=args.m, y0=args.y0)
    _refuse_unused("used only with --scores FILE", args.scores is None, bootstrap=args.bootstrap, target=args.target)
    _refuse_unused("not used with --thetas FILE, which gives one theta per classifier", args.thetas is not None, m=args.m)
    _refuse_unused("used only with --rho", args.rho is None, y0=args.y0)
    _refuse_unused("used only with --rho or --scores FILE", args.rho is None and args.scores is None,
                   repetitions=args.repetitions)
    if args.scores:
        if args.n is None:
            raise ValueError("--scores needs --n, the size of the test set the scores were measured on")
        rho = 0.6 if args.rho is None else args.rho
        scores = stats.read_numbers(args.scores, "scores")
        repetitions = 1_000 if args.repetitions is None else args.repetitions
        bootstrap = 30 if args.bootstrap is None else args.bootstrap
        searches = (bootstrap + 1) * (math.ceil(math.log2(max(scores.size, 2))) + 3)
        check_work(workload.simulation_work(scores.size, repetitions, searches), args.force,
                    "fewer --repetitions or --bootstrap resamples need less")
        estimate = stats.estimate_sota(
            scores, args.n, np.random.default_rng(args.seed), rho=rho, alpha=args.alpha,
            target=args.target or "expected", repetitions=repetitions, bootstrap=bootstrap, progress=args.progress,
        )
        result: dict[str, object] = {"model": "cropped observations, dependent through Y0 (v2, Sec. 5)",
                                     "n": args.n, "rho": rho, "alpha": args.alpha, **estimate.as_dict()}
    else:
        if args.n is None or (args.theta is None) == (args.thetas is None):
            raise ValueError("give --n and either --theta (with --m) or --thetas FILE; or --scores FILE --n N")
        thetas = stats.read_numbers(args.thetas, "thetas") if args.thetas else np.array([args.theta])
        m = args.m if args.theta is not None else None
        if args.theta is not None and m is None:
            raise ValueError("--theta needs --m, the number of classifiers")
        if args.rho is None:
            check_work(workload.best_of_m_work(m or thetas.size, args.n, np.unique(thetas).size, float(thetas.max())),
                        args.force, "fewer distinct thetas or a smaller --n need less")
            distribution = stats.best_of_m(thetas, args.n, m)
            model = "independent, identical (Eq. 2-3)" if thetas.size == 1 else "independent, non-identical (Eq. 8-9)"
            result = {"model": model, "m": distribution.m, "n": args.n, "alpha": args.alpha,
                      **distribution.summary(args.alpha)}
        else:
            repetitions = 10_000 if args.repetitions is None else args.repetitions
            check_work(workload.simulation_work(m or thetas.size, repetitions), args.force,
                        "fewer --repetitions or classifiers need less")
            y0 = args.y0 or "random"
            best = stats.simulate_best_of_m(thetas, args.n, args.rho, np.random.default_rng(args.seed), m=m,
                                            y0=y0, repetitions=repetitions)
            result = {"model": f"dependent through Y0 (Eq. 10-12), {y0} y0, simulated", "m": m or thetas.size,
                      "n": args.n, "rho": args.rho, "alpha": args.alpha, "repetitions": repetitions,
                      "seed": args.seed, "mean": float(best.mean()), "sd": float(best.std(ddof=1)),
                      "upper": float(np.quantile(best, 1 - args.alpha / 2)),
                      "lower": float(np.quantile(best, args.alpha / 2)), "median": float(np.median(best))}
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:<24} {value:.6g}" if isinstance(value, float) else f"{key:<24} {value}")
    return 0


def _refuse_unused(why: str, applies: bool, **given: object) -> None:
    """When ``applies``, refuse every option of ``given`` that was set, saying ``why`` it has no
    effect: ignoring it silently would answer another question than the one asked."""
    if not applies:
        return
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"--{name.replace('_', '-')} {value}: {why}; leave it out")
