"""``ladderlab stats extrapolate``: a classifier's accuracy on K classes predicted from its results on k of
them (Zheng, Achanta & Benjamini; the estimators are :mod:`ladderlab.stats.extrapolation`)."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ladderlab.runs import arguments
from ladderlab.runs.workload import add_force_option
from ladderlab.utils.atomic import save_figure
from ladderlab.utils.progress import progress_bar


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab stats extrapolate``."""
    extrapolate = commands.add_parser(
        "extrapolate", help="predict the accuracy on K classes from a classifier's results on k of them",
        description="Zheng, Achanta & Benjamini (arXiv:1606.05228): extrapolate multi-class accuracy from k "
                    "observed classes to K "
                    "(UN Eq. 5, EXP Sec. 4.1, CONS and MPLE Sec. 4.2, HD Sec. 4.3). FILE holds correct-label ranks "
                    "(plain numbers, 1 = top; needs --from) or a CSV score matrix with a 'label' column; "
                    "see docs/extrapolation.md and examples/extrapolation/.",
    )
    extrapolate.add_argument("file", help="ranks file or CSV score matrix")
    extrapolate.add_argument("--from", dest="k", type=arguments.count(2), help="k, the number of classes observed (required for ranks)")
    extrapolate.add_argument("--to", dest="K", type=arguments.count(2), required=True, help="K, the number of classes to predict for")
    extrapolate.add_argument("--method", choices=["un", "exp", "cons", "mple", "hd", "all"], default="all")
    extrapolate.add_argument("--input", choices=["auto", "ranks", "scores"], default="auto",
                             help="file format (default: a first line with a non-number means a score matrix)")
    extrapolate.add_argument("--bins", type=arguments.count(2), help="grid of the pseudolikelihood density (CONS, MPLE; default "
                             "1000; not with --convention authors)")
    extrapolate.add_argument("--convention", choices=["ladderlab", "authors"], default="ladderlab",
                             help="'authors': exactly as the authors' R code computes every estimator (their grids, "
                                  "Binomial(k, u) in Eq. 6); see docs/extrapolation.md")
    extrapolate.add_argument("--bootstrap", type=arguments.count(1), metavar="B",
                             help="give each prediction a 95%% interval from B resamples of the test points")
    extrapolate.add_argument("--seed", type=arguments.count(0), default=0, help="seed of the bootstrap resamples")
    extrapolate.add_argument("--format", choices=["text", "json"], default="text")
    extrapolate.add_argument("--plot", help="write predicted accuracy against the number of classes to this image")
    add_force_option(extrapolate)
    extrapolate.set_defaults(handler=_extrapolate)


def _extrapolate(args: argparse.Namespace) -> int:
    from ladderlab.seeding import stream
    from ladderlab.stats import (
        class_scores,
        extrapolation,
        extrapolation_plot,
        extrapolation_spread,
        pseudolikelihood,
    )

    methods = list(extrapolation.METHODS) if args.method == "all" else [args.method]
    arguments.figure_file("--plot", args.plot)
    observed = class_scores.read_observed_classes(args.file, args.input, args.k)
    k, K = observed.k, args.K
    if K < k:
        raise ValueError(f"--to {K} is fewer classes than the {k} observed (--from): extrapolation goes upwards")
    if args.convention == "authors" and args.bins is not None:
        raise ValueError(f"--bins {args.bins}: the authors' convention has its own grid (51 points); drop --bins")
    if methods == ["un"] and K > k:
        raise ValueError(f"the unbiased estimate (un) exists only up to k = {k} classes; "
                         "choose --to ≤ k or another --method")
    solver_missing = pseudolikelihood.solver_missing() if set(methods) & set(pseudolikelihood.NEEDS_SOLVER) else None
    if solver_missing and len(methods) == 1:
        raise ValueError(f"--method {args.method}: {solver_missing}")
    from ladderlab import stats
    from ladderlab.runs import workload

    work = workload.extrapolation_work(k, K, methods, args.bins or pseudolikelihood.DEFAULT_BINS, observed.outscored.size,
                                       args.bootstrap or 0)
    workload.refuse_if_too_large(work, args.force, hint="a smaller --to, --bins or --bootstrap, or one --method, needs less")
    workload.announce(work)
    unbiased = stats.unbiased_accuracy(observed.outscored, k)
    predictions: dict[str, dict[str, object]] = {}
    for method in progress_bar(methods, progress=args.progress if work.cpu_seconds > 1 else False, desc="methods",
                               unit="method"):
        if solver_missing and method in pseudolikelihood.NEEDS_SOLVER:
            predictions[method] = {"accuracy": None, "error": solver_missing}
            continue
        try:
            curve = extrapolation.accuracy_curve(observed.outscored, k, K, method, bins=args.bins,
                                                 convention=args.convention, progress=args.progress)
        except ValueError as error:  # e.g. CONS infeasible, HD at accuracy 0 or 1
            if len(methods) == 1:
                raise
            predictions[method] = {"accuracy": None, "error": str(error)}
            continue
        predictions[method] = {"accuracy": None if np.isnan(curve[-1]) else float(curve[-1]),
                               "curve": [None if np.isnan(p) else float(p) for p in curve]}
        if args.bootstrap and not np.isnan(curve[-1]):
            resampled = extrapolation.bootstrap_accuracies(
                observed.outscored, k, K, method, stream(args.seed, "extrapolate-bootstrap", method), args.bootstrap,
                bins=args.bins, convention=args.convention)
            predictions[method]["bootstrap"] = extrapolation_spread.interval(resampled)
    result = {"file": observed.source, "input": observed.input_format, "convention": args.convention, "k": k, "K": K,
              "test_points": int(observed.outscored.size), "observed_accuracy": float(unbiased[-1]),
              "unbiased": [float(p) for p in unbiased], "predictions": predictions,
              "spread": extrapolation_spread.verdict(predictions, k, K, args.bootstrap)}
    if args.plot:
        save_figure(extrapolation_plot.curve_figure(result), args.plot, dpi=110, bbox_inches="tight")
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        print(f"{observed.source}: {observed.outscored.size} test points on k = {k} classes ({observed.input_format})")
        print(f"observed accuracy at k = {k}: {unbiased[-1]:.4f}")
        print(f"{'method':<8} predicted accuracy at K = {K}" + ("  (95% bootstrap interval)" if args.bootstrap else ""))
        for method, prediction in predictions.items():
            if "error" in prediction:
                shown = f"failed: {prediction['error']}"
            elif prediction["accuracy"] is None:
                shown = f"undefined beyond k = {k}"
            else:
                shown = f"{prediction['accuracy']:.4f}"
            interval = prediction.get("bootstrap")
            if interval and interval["interval"]:
                shown += f"  [{interval['interval'][0]:.4f}, {interval['interval'][1]:.4f}]"
            print(f"{method:<8} {shown}")
        for line in result["spread"]:
            print(line)
    if args.plot:
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0
