"""``ladderlab rank-certificate``: its command-line parser and handler (the certificate is
:mod:`ladderlab.final_rankings.certificate`, the input :mod:`ladderlab.final_rankings.private_samples`, imported when
the command runs)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab rank-certificate``: the parser and its handler."""
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
    parser.add_argument("--force", action="store_true", help="run even when the estimated memory does not fit")
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
