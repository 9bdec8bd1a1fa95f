"""``ladderlab stats replay``: its command-line parser and handler (the report is
:mod:`ladderlab.final_rankings.replay_report`, imported when the command runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ladderlab.runs.workload import add_force_option


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab stats replay``: the parser and its handler."""
    from ladderlab.runs.arguments import count

    parser = commands.add_parser(
        "replay", help="a real submissions log (or a competition run) through the competition measures",
        description="Shake-up, top-10 overlap, the winner's public-private gap, the public winner's private rank "
                    "and the state of the art of a challenge's final leaderboard, and what a mechanism that "
                    "needs only scores would have released (see docs/replay.md).")
    parser.add_argument("log", help="a submissions log (ladderlab CSV/Parquet, Meta Kaggle Submissions.csv, a "
                                    "Kaggle leaderboard download) or a competition run directory")
    parser.add_argument("--log-format", default="auto",
                        help="ladderlab, meta-kaggle or kaggle-leaderboard (default: auto, from its columns)")
    orientation = parser.add_mutually_exclusive_group()
    orientation.add_argument("--greater-is-better", dest="greater_is_better", action="store_true", default=None,
                             help="larger scores are better (AUC, accuracy)")
    orientation.add_argument("--smaller-is-better", dest="greater_is_better", action="store_false",
                             help="smaller scores are better (losses, errors)")
    parser.add_argument("--scorer", help="the log's scorer, if ladderlab knows it (sets the orientation)")
    parser.add_argument("--selection",
                        help="without a 'selected' column: 'last', 'best-public' or k, the k best public "
                             "(default 2, as Kaggle selects)")
    parser.add_argument("--mechanism", action="append", default=[], metavar="SPEC",
                        help="replay a mechanism that needs only scores, e.g. 'ladder(eta=0.01)' (repeatable)")
    parser.add_argument("--public-size", type=count(1), help="public holdout size (needed by mechanisms that depend on it; "
                                                                   "default: the log's metadata, which serve's export has)")
    parser.add_argument("--private-size", type=count(1), help="private holdout size (for the state of the art; default: the "
                                                                    "log's metadata)")
    parser.add_argument("--seed", type=count(0), default=0, help="root seed of mechanism noise and simulations (default 0)")
    parser.add_argument("--top", type=count(1), default=10, help="teams listed per leaderboard (default 10)")
    parser.add_argument("--samples", help="per-sample private data of the log's teams (see 'ladderlab stats rank-certificate'): "
                                          "adds the ranking certificate")
    parser.add_argument("--labels", help="with --samples of predictions: the private labels (columns sample, label)")
    parser.add_argument("--rank-certificate", action="store_true",
                        help="a competition run: add the ranking certificate (plays the replication again)")
    parser.add_argument("--cell", help="a competition run: the cell (its key, or a prefix of it)")
    parser.add_argument("--replication", type=count(0), default=0, help="a competition run: the replication (default 0)")
    parser.add_argument("--format", choices=["text", "json", "csv"], default="text", help="output format")
    add_force_option(parser, "read a log or samples file")
    parser.add_argument("--out", help="write the report to this file instead of the terminal")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.final_rankings.certificate import (
        certificate_records,
        certify_ranking,
    )
    from ladderlab.final_rankings.final_leaderboard import (
        KAGGLE_SELECTION,
        check_selection,
    )
    from ladderlab.final_rankings.private_samples import (
        from_competition_run,
        read_samples,
    )
    from ladderlab.final_rankings.replay_report import (
        competition_row,
        log_report,
        prepare_replay,
        replay_mechanism,
        run_report,
        write_report,
    )
    from ladderlab.final_rankings.submission_log import read_log
    from ladderlab.runs.arguments import output_file
    from ladderlab.seeding import stream

    output_file("--out", args.out)
    selection = check_selection(KAGGLE_SELECTION if args.selection is None else args.selection)
    for text in args.mechanism:
        replay_mechanism(text)
    path = Path(args.log)
    if path.is_dir():
        for option in ("mechanism", "samples", "labels"):
            if getattr(args, option):
                raise ValueError(f"--{option}: {path} is a competition run, which records final leaderboards, not "
                                 "submissions or samples; replaying a mechanism needs a submissions log, and "
                                 "--rank-certificate plays the run's replication again for its samples")
        row = competition_row(path, args.cell, args.replication)
        report = run_report(row, args.top)
        samples = from_competition_run(row) if args.rank_certificate else None
    else:
        if args.rank_certificate and not args.samples:
            raise ValueError("--rank-certificate: a log's ranking certificate needs its per-sample data: give --samples FILE")
        log = read_log(path, args.log_format, args.greater_is_better, args.scorer, args.force)
        samples = (read_samples(args.samples, args.labels, args.scorer if args.labels else None, args.force)
                   if args.samples else None)
        if samples is not None:
            unknown = sorted(set(samples.teams) - set(log.submissions.team))
            if unknown:
                raise ValueError(f"--samples {args.samples}: team {unknown[0]!r} is not in the log {path}")
        public_size = log.public_size if args.public_size is None else args.public_size
        private_size = log.private_size if args.private_size is None else args.private_size
        replays = [prepare_replay(text, log, public_size) for text in args.mechanism]
        report = log_report(log, selection, replays, args.seed, private_size, args.top, progress=None)
    if samples is not None:
        report["rank_certificate"] = certificate_records(
            certify_ranking(samples, stream(args.seed, "rank-certificate", samples.teams, samples.size), progress=None))
    text = write_report(report, args.format, args.top)
    if args.out:
        from ladderlab.runs.rundir import write_atomically

        write_atomically(Path(args.out), text.encode())
    else:
        print(text, end="")
    return 0
