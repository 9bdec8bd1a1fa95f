"""The ``ladderlab`` command line.

A user error (a bad argument, scenario, parameter or output path) is one line on
standard error, ``ladderlab: error: …`` naming the argument, and exit code 2,
found before any work starts; output paths are checked first. A closed pipe
(``ladderlab list | head``) ends quietly.

Subcommands import what they need when they run, so ``--help`` and ``list`` start fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ladderlab import __version__
from ladderlab.cli import demo
from ladderlab.dev import certify_speed, isolation_benchmark, results
from ladderlab.final_rankings import cli as rank_certificate
from ladderlab.final_rankings import replay
from ladderlab.isolation.layout import restart_with_fixed_layout
from ladderlab.isolation.protocol import ISOLATION_MODES
from ladderlab.isolation.untrusted import sandboxed_if
from ladderlab.params import describe
from ladderlab.platforms import cli as platforms_cli
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry
from ladderlab.runs import arguments
from ladderlab.runs.arguments import ArgumentError
from ladderlab.runs.workload import add_force_option as _add_force
from ladderlab.runs.workload import check_work as _check_work
from ladderlab.seeding import read_secret_seed
from ladderlab.serve import cli as serve_cli
from ladderlab.tasks import TRAINING_RANGE
from ladderlab.utils.atomic import save_figure, write_atomically
from ladderlab.utils.progress import progress_bar

DESCRIPTION = (
    "Pit leaderboard mechanisms against adaptive attacks: run scenario matrices, report them, "
    "certify a mechanism, and compute statistics of the winner."
)


def _describe(registry: Registry, plugin_ids: list[str] | None = None) -> str:
    """The registry's plugins (or those named) with their parameters, declarations and references."""
    lines = []
    for plugin_id in registry.ids() if plugin_ids is None else plugin_ids:
        cls = registry.get(plugin_id)
        defaults = cls.parameter_defaults()
        params = ", ".join(f"{k}={v!r}" for k, v in defaults.items()) or "no parameters"
        declared = getattr(cls, "_parameter_constraints", {})
        lines.append(f"  {plugin_id:<22} {cls.summary()}")
        lines.append(f"  {'':<22} parameters: {params}")
        for name in defaults:
            constraint = describe(declared[name]) if name in declared else "not declared"
            lines.append(f"  {'':<22}   {name}: {constraint}")
        lines.append(f"  {'':<22} reference: {cls.reference}")
    return "\n".join(lines)


def _describe_plugin(name: str) -> str:
    """A plugin named by path or module (``file.py:Class``), described as its family lists it."""
    reasons = []
    for registry in (MECHANISMS, ATTACKS, TASKS):
        try:
            registry.get(name)
        except ValueError as error:
            reasons.append(str(error))
            continue
        return f"{registry.kind}:\n{_describe(registry, [name])}"
    if all(reason.startswith(f"{name!r} is not a") for reason in reasons):
        raise ArgumentError(f"{name}: not a mechanism, an attack or a task")
    raise ArgumentError(reasons[0])


def _figure_file(option: str, value: str | None) -> None:
    """Refuse an image path that cannot be written or whose suffix names no format matplotlib writes."""
    if value is None:
        return
    arguments.output_file(option, value)
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(value).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise ArgumentError(f"{option} {value}: {'.' + suffix if suffix else 'no suffix'} is not an image format "
                            f"matplotlib writes; end the name with one of {', '.join('.' + f for f in sorted(formats))}")


def _describe_scenarios() -> str:
    """Each built-in scenario's replications, tables and source, read from its TOML alone
    (``ladderlab run`` validates it and counts its cells; expanding every file here would
    cost seconds)."""
    import tomllib

    from ladderlab.scenarios import builtin_scenarios

    lines = []
    scenarios = sorted(builtin_scenarios().items())
    width = max(len(name) for name, _ in scenarios)
    for name, path in scenarios:
        raw = tomllib.loads(path.read_text())
        tables = [f"{len(raw[key])} {one if len(raw[key]) == 1 else many}"
                  for key, one, many in (("matrix", "duel matrix", "duel matrices"),
                                         ("competition", "competition table", "competition tables"),
                                         ("extrapolation", "extrapolation table", "extrapolation tables"))
                  if raw.get(key)]
        replications = f"{raw['replications']} replication{'' if raw['replications'] == 1 else 's'}"
        lines.append(f"  {name:<{width}}  {replications}; {', '.join(tables)}")
        lines.append(f"  {'':<{width}}  source: {raw['source']}")
    return "\n".join(lines)


LIST_FAMILIES = ("mechanisms", "attacks", "tasks", "scenarios")


def _list(args: argparse.Namespace) -> int:
    families = {"mechanisms": MECHANISMS, "attacks": ATTACKS, "tasks": TASKS, "scenarios": None}
    plugins = [name for name in args.what if ":" in name]
    plurals = [name if name in LIST_FAMILIES else f"{name}s" for name in args.what if ":" not in name]
    for name, plural in zip([name for name in args.what if ":" not in name], plurals):
        if plural not in LIST_FAMILIES:
            raise ArgumentError(f"argument FAMILY: cannot list {name!r}; choose from {', '.join(LIST_FAMILIES)}, "
                                "or name a plugin as file.py:Class")
    described = [_describe_plugin(name) for name in plugins]
    for name in plurals or ([] if plugins else LIST_FAMILIES):
        print(f"{name}:")
        print(_describe_scenarios() if name == "scenarios" else _describe(families[name]))
    for text in described:
        print(text)
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.scheduler and args.backend != "dask":
        raise ArgumentError(f"--scheduler {args.scheduler} needs --backend dask (the loky backend runs locally)")
    arguments.output_folder("--out", args.out)
    from ladderlab.reports import formats as report_formats
    from ladderlab.reports import report
    from ladderlab.runs import runner, scenario, workload

    loaded = scenario.load(args.scenario, args.replications)
    out = args.out or f"runs/{loaded.name}"
    arguments.output_folder("--out", out)
    try:
        runner.check_backend(args.backend, args.scheduler, args.jobs)
    except runner.BackendError as error:
        raise ArgumentError(f"--scheduler {args.scheduler}: {error}" if args.scheduler else str(error)) from None
    all_cells = scenario.cells(loaded)
    workload.refuse_if_too_large(runner.estimate(loaded, Path(out), args.jobs, args.force), args.force,
                                 hint=runner.SMALLER_SCENARIO)
    skipped = scenario.preflight(loaded)
    print(f"scenario {loaded.name}: {len(all_cells)} cells × {loaded.replications} replications → {out}", flush=True)
    for cell in all_cells:
        if cell.key in skipped:
            print(f"skipped (cannot play): {cell.label}: {skipped[cell.key]}", file=sys.stderr)
    results = runner.run(loaded, out, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler,
                         progress=args.progress, isolation=args.isolation,
                         rerun_stale=args.rerun_stale, force=args.force,
                         secret_seed=read_secret_seed(args.secret_seed) if args.secret_seed else None)
    run = report.load_run(out)
    print(report_formats.compact_text(run), end="")
    print(f"\nfull report with plots: ladderlab report {out} --html {out}/report.html")
    failures = report.failure_lines(results)
    if not run.competitions.empty and (run.competitions.status == "failed").any():
        failed = run.competitions[run.competitions.status == "failed"]
        failures.append(f"{len(failed)} of {len(run.competitions)} competition replications failed; first error: "
                        f"{failed.iloc[0].error}")
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


def _report(args: argparse.Namespace) -> int:
    arguments.output_file("--out", args.out)
    arguments.output_file("--html", args.html)
    arguments.output_folder("--plots", args.plots)
    from ladderlab.reports import competition as competition_report
    from ladderlab.reports import extrapolation as extrapolation_report
    from ladderlab.reports import formats as report_formats
    from ladderlab.reports import plots, report

    run = report.load_run(args.run_dir)
    for line in report.status_lines(run):
        print(line, file=sys.stderr)
    figures = (plots.report_figures(run.results) + competition_report.report_figures(run.competitions)
               + extrapolation_report.report_figures(run.extrapolations)) if args.plots else []
    files = [Path(args.plots) / f"{number:02d}-{figure.slug}.png" for number, figure in enumerate(figures, start=1)]
    base = Path(args.out).resolve().parent if args.out else Path.cwd()
    links = [(figure.title, os.path.relpath(path.resolve(), base)) for figure, path in zip(figures, files)]
    text = report_formats.write(run, args.format, args.out, links)
    if not args.out:
        print(text, end="")
    if args.html:
        from ladderlab.reports import html as report_html

        write_atomically(args.html, report_html.html_page(run))
        print(f"HTML report written to {args.html}", file=sys.stderr)
    if args.plots:
        Path(args.plots).mkdir(parents=True, exist_ok=True)
        for figure, path in zip(progress_bar(figures, progress=args.progress, desc="plots", unit="plot"), files):
            write_atomically(path, figure.png())
    return 0


def _bench(args: argparse.Namespace) -> int:
    arguments.output_file("--out", args.out)
    from ladderlab.dev import benchmark
    from ladderlab.runs import workload

    if args.accounts:
        from ladderlab.competition import accounts

        return accounts.bench_command(args)
    if args.certify:
        timing = benchmark.time_certify(args.jobs)
        print(f"README certificate ({', '.join(f'{k}={v}' for k, v in benchmark.README_CERTIFICATE.items())}), "
              f"--jobs {timing.jobs}: wall {timing.wall_seconds:.1f} s, CPU {timing.cpu_seconds:.1f} s "
              f"(workers included), {timing.replications} replications of the grid points, safe budget {timing.safe_budget}")
        return 0

    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}×"

    print("submissions per second; ratios to a plain per-submission numpy loop and to the bare 0/1 loss, same process")
    parameters = "; ".join(f"{mechanism_id} {', '.join(f'{k}={v}' for k, v in params.items())}"
                           for mechanism_id, params in benchmark.BENCHMARK_PARAMS.items())
    print(f"parameters: {parameters}; others at their defaults; '-': no plain loop for that mechanism")
    print(
        f"{'mechanism':<22} {'n':>5} {'batched /s':>11} {'one at a time /s':>17} {'plain loop /s':>14} "
        f"{'batched ÷ loop':>15} {'single ÷ loop':>14} {'batched cost ÷ bare loss':>25}"
    )
    measurements = len(MECHANISMS.ids()) * len(args.n) + len(benchmark.DUELS)
    _check_work(workload.benchmark_work(args.n, measurements, args.seconds), args.force, "a smaller --n needs less")
    bar = progress_bar(progress=args.progress, total=measurements, desc="bench", unit="measurement")
    throughputs, duels = [], []
    for result in benchmark.run(tuple(args.n), args.seconds):
        throughputs.append(result)
        bar.update()
        bar.write(
            f"{result.mechanism:<22} {result.n:>5} {result.batched_per_second:>11,.0f} "
            f"{result.single_per_second:>17,.0f} "
            f"{'-' if result.loop_per_second is None else f'{result.loop_per_second:,.0f}':>14} "
            f"{ratio(result.batched_over_loop):>15} {ratio(result.single_over_loop):>14} "
            f"{ratio(result.batched_cost_over_bare_loss):>25}"
        )
    bar.write(f"\n{'duel (one replication)':<110} {'submissions':>11} {'wall s':>8}")
    for timing in benchmark.time_duels():
        duels.append(timing)
        bar.update()
        bar.write(f"{timing.description:<110} {timing.submissions:>11} {timing.seconds_per_replication:>8.3f}")
    bar.close()
    if args.out:
        from ladderlab.runs.rundir import write_atomically

        command = " ".join(["ladderlab bench", "--n", *map(str, args.n), "--seconds", f"{args.seconds:g}",
                            "--out", args.out])
        text = json.dumps(benchmark.document(throughputs, duels, command), indent=1) + "\n"
        write_atomically(Path(args.out), text.encode())
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
        _check_work(workload.simulation_work(scores.size, repetitions, searches), args.force,
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
            _check_work(workload.best_of_m_work(m or thetas.size, args.n, np.unique(thetas).size, float(thetas.max())),
                        args.force, "fewer distinct thetas or a smaller --n need less")
            distribution = stats.best_of_m(thetas, args.n, m)
            model = "independent, identical (Eq. 2-3)" if thetas.size == 1 else "independent, non-identical (Eq. 8-9)"
            result = {"model": model, "m": distribution.m, "n": args.n, "alpha": args.alpha,
                      **distribution.summary(args.alpha)}
        else:
            repetitions = 10_000 if args.repetitions is None else args.repetitions
            _check_work(workload.simulation_work(m or thetas.size, repetitions), args.force,
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


def _certify(args: argparse.Namespace) -> int:
    from ladderlab.certification import certify
    from ladderlab.registry import MECHANISMS

    arguments.output_folder("--run-dir", args.run_dir)
    MECHANISMS.checked(args.mechanism, arguments.parse_params(args.param),
                       " ".join(f"--param {pair}" for pair in args.param) or None)
    attacks = [certify.parse_attack(text) for text in args.attack]
    out = certify.check_output(args.out) if args.out else None
    options = dict(replications=args.replications, seed=args.seed, tau=args.tau, epsilon=args.epsilon, jobs=args.jobs,
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
        return _write_certificate(challenge_certify.run_command(args, attacks, out, arguments.parse_params(args.param), **options),
                                  out, certify.markdown, args.command_line)
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
    result = certify.certify(
        args.mechanism, arguments.parse_params(args.param), n=args.n, budgets=args.budgets, attacks=attacks,
        honest=[certify.parse_honest(text) for text in args.honest], scorer=args.scorer,
        prediction_range=certify.parse_prediction_range(args.prediction_range), **options)
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

    text = render(result)
    print(text)
    if out:
        try:
            written = certify.write_certificate(result, out, text, command)
        except OSError as error:
            print(f"ladderlab: error: {error}", file=sys.stderr)
            return 1
        print(f"certificate written to {written[0]} and {written[1]}", file=sys.stderr)
    return 0


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
    _figure_file("--plot", args.plot)
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


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``ladderlab: error: argument --jobs: …``, exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgumentError(f"{message} (see '{self.prog} --help')")


def _add_trust_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--isolation", type=arguments.isolation_mode, choices=ISOLATION_MODES, default="none",
                        help="'process': play each attack (and competition team) in a sandboxed process of its "
                             "own, another user or a user namespace, which sees no labels, seeds, secret or run "
                             "directory; needs Linux and bubblewrap (see docs/isolation.md)")
    parser.add_argument("--secret-seed", metavar="FILE",
                        help="derive simulated tasks' data and the mechanisms' coins also from the secret in FILE "
                             "(created with 128 random bits if missing), so the public seed cannot regenerate labels")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ladderlab", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"ladderlab {__version__}")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--quiet", dest="progress", action="store_false", default=None,
                       help="no progress bars (they are shown only on a terminal anyway)")
    shown.add_argument("--progress", dest="progress", action="store_true",
                       help="progress bars on standard error even when it is not a terminal (a log file)")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    list_parser = commands.add_parser("list", help="list registered plugins with parameters and references")
    list_parser.add_argument("what", nargs="*", metavar="FAMILY",
                             help=f"which families to list: {', '.join(LIST_FAMILIES)} (or singular; default: all), "
                                  "or a plugin of your own as file.py:Class")
    list_parser.set_defaults(handler=_list)

    run = commands.add_parser("run", help="run (or resume) a scenario: a file or a built-in name")
    run.add_argument("scenario", help="path to a TOML scenario, or a built-in name (see 'ladderlab list scenarios')")
    run.add_argument("--out", help="run directory (default: runs/<scenario name>)")
    run.add_argument("--jobs", type=arguments.count(1, every_core=True), default=1, help="parallel cells (loky backend; -1: every core)")
    run.add_argument("--backend", choices=["loky", "dask"], default="loky",
                     help="how cells run in parallel: loky processes on this machine, or a Dask cluster (default loky)")
    run.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    run.add_argument("--replications", type=arguments.count(1), help="override the scenario's replication count")
    _add_trust_options(run)
    run.add_argument("--rerun-stale", action="store_true",
                     help="compute again the finished cells whose plugin's version or source changed since")
    _add_force(run)
    run.set_defaults(handler=_run)

    report_parser = commands.add_parser("report", help="summary table, plots and HTML page of a run directory")
    report_parser.add_argument("run_dir", help="a run directory written by 'ladderlab run' (finished or not)")
    report_parser.add_argument("--format", choices=["text", "markdown", "csv", "json"],
                               help="every table of the run at full width: the duels' and competitions' summaries, "
                                    "each competition replication, team groups, a certificate's rows, the papers' "
                                    "values, the accuracy extrapolations (json and csv: each duel replication too); "
                                    "default: the main measures in a table that fits a 120-column terminal")
    report_parser.add_argument("--out", help="write the report to this file instead of the terminal")
    report_parser.add_argument("--html", help="write a self-contained HTML report to this file")
    report_parser.add_argument("--plots", help="write the plots as PNG files into this folder")
    report_parser.set_defaults(handler=_report)

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
    _add_force(sota)
    sota.set_defaults(handler=_sota)

    cert = commands.add_parser("certify", help="attack battery, safe submission budget and honest cost of a mechanism")
    cert.add_argument("mechanism", help="a mechanism id, or file.py:Class")
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
    cert.add_argument("--replications", type=arguments.count(1), default=100,
                      help="the most replications a grid point uses; each stops once its verdict is decided (default 100)")
    cert.add_argument("--confidence", type=float, default=0.95, help="confidence of every verdict (default 0.95)")
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
    cert.add_argument("--tau", type=arguments.positive, default=0.05,
                      help="largest tolerated median overfitting -Δ, in units of the loss bound B (default 0.05)")
    cert.add_argument("--epsilon", type=arguments.positive, default=0.05,
                      help="largest tolerated median leaderboard error, in units of B (default 0.05)")
    cert.add_argument("--jobs", type=arguments.count(1, every_core=True), default=1, help="parallel cells (-1: every core)")
    cert.add_argument("--run-dir", help="keep the battery here instead of the user's cache (resumable; "
                      "'ladderlab report' reads it when it finished)")
    cert.add_argument("--out", help="write the certificate as JSON here, and as Markdown beside it (.md)")
    _add_trust_options(cert)
    cert.add_argument("--competition", help="a scenario file with [[competition]] tables: add the competition view "
                      "(shake-up, best team wins, winner's delta, honest utility) under its rules and team mix")
    _add_force(cert)
    cert.set_defaults(handler=_certify)

    demo.add_subcommand(commands, arguments.count, ISOLATION_MODES)
    results.add_subcommand(commands)

    bench = commands.add_parser("bench", help="submissions per second of every mechanism")
    bench.add_argument("--n", type=arguments.count(2), nargs="+", default=[200, 4000], help="holdout sizes (default: 200 4000)")
    bench.add_argument("--certify", action="store_true",
                       help="instead: time the README's certify example from an empty battery directory")
    bench.add_argument("--jobs", type=arguments.count(1), default=2, help="workers of --certify (default 2)")
    bench.add_argument("--accounts", action="store_true", help="instead: what several accounts buy an attacker "
                       "against each built-in mechanism at n = 200 (--out writes the table)")
    bench.add_argument("--seconds", type=arguments.positive, default=1.0,
                       help="time per mechanism and n, its references included (default: 1)")
    bench.add_argument("--out", help="also write the measurements, machine and date as JSON to this file "
                                     "(the bench results page is built from it)")
    _add_force(bench)
    bench.set_defaults(handler=_bench)
    isolation_benchmark.add_subcommand(commands, arguments.count(1))
    certify_speed.add_subcommand(commands)
    from ladderlab.dev import page_survey

    page_survey.add_subcommand(commands)

    from ladderlab.dev import competition_benchmark, realism

    competition_benchmark.add_subcommand(commands)
    realism.add_subcommand(commands)

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
    _add_force(extrapolate)
    extrapolate.set_defaults(handler=_extrapolate)
    replay.add_subcommand(commands)
    rank_certificate.add_subcommand(commands)
    serve_cli.add_subcommands(commands)
    platforms_cli.add_subcommands(commands)
    return parser


RESUME_HINTS = dict.fromkeys(("run", "certify", "realism"),
                             "; run the same command again to resume: what finished is kept")


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
        return _error("interrupted" + RESUME_HINTS.get(getattr(args, "command", None), ""), code=130)


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
