"""The ``ladderlab`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ladderlab import benchmark, certify, competition_certificate, competition_report, plots, report, runner, scenario, stats
from ladderlab.duel import duel
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry


def _describe(registry: Registry) -> str:
    lines = []
    for plugin_id in registry.ids():
        cls = registry.get(plugin_id)
        params = ", ".join(f"{k}={v!r}" for k, v in cls.parameter_defaults().items()) or "no parameters"
        lines.append(f"  {plugin_id:<22} {cls.summary()}")
        lines.append(f"  {'':<22} parameters: {params}")
        lines.append(f"  {'':<22} reference: {cls.reference}")
    return "\n".join(lines)


def _describe_scenarios() -> str:
    lines = []
    for name, path in sorted(scenario.builtin_scenarios().items()):
        loaded = scenario.load(path)
        lines.append(f"  {name:<22} {len(scenario.cells(loaded))} cells × {loaded.replications} replications")
        lines.append(f"  {'':<22} source: {loaded.source}")
    return "\n".join(lines)


def _list(args: argparse.Namespace) -> int:
    families = {"mechanisms": MECHANISMS, "attacks": ATTACKS, "tasks": TASKS, "scenarios": None}
    for name in args.what or families:
        if name not in families:
            raise ValueError(f"cannot list {name!r}; choose from {', '.join(families)}")
        print(f"{name}:")
        print(_describe_scenarios() if name == "scenarios" else _describe(families[name]))
    return 0


def _run(args: argparse.Namespace) -> int:
    loaded = scenario.load(args.scenario, args.replications)
    out = args.out or f"runs/{loaded.name}"
    total = len(scenario.cells(loaded))
    print(f"scenario {loaded.name}: {total} cells × {loaded.replications} replications → {out}", flush=True)
    results = runner.run(loaded, out, jobs=args.jobs, backend=args.backend, scheduler=args.scheduler)
    print(report.text_table(report.summary(results)))
    print(f"\nfull report with plots: ladderlab report {out} --html {out}/report.html")
    return 0


def _report(args: argparse.Namespace) -> int:
    run = report.load_run(args.run_dir)
    table = report.summary(run.results)
    for line in run.status.lines():
        print(line, file=sys.stderr)
    text = report.write_table(table, args.format)
    if args.out:
        Path(args.out).write_text(text if text.endswith("\n") else text + "\n")
    else:
        print(text)
    if not run.competitions.empty and args.format == "text":
        print("\ncompetitions:")
        print(competition_report.text_summary(competition_report.summary(run.competitions)))
    if args.html:
        Path(args.html).write_text(report.html_page(run), encoding="utf-8")
        print(f"HTML report written to {args.html}", file=sys.stderr)
    if args.plots:
        folder = Path(args.plots)
        folder.mkdir(parents=True, exist_ok=True)
        figures = plots.report_figures(run.results) + competition_report.report_figures(run.competitions)
        for number, figure in enumerate(figures, start=1):
            (folder / f"{number:02d}-{figure.slug}.png").write_bytes(figure.png())
    return 0


def _bench(args: argparse.Namespace) -> int:
    print(f"{'mechanism':<22} {'n':>6} {'batched /s':>12} {'one at a time /s':>17}")
    for result in benchmark.run(tuple(args.n), args.seconds):
        print(
            f"{result.mechanism:<22} {result.n:>6} {result.batched_per_second:>12,.0f} "
            f"{result.single_per_second:>17,.0f}",
            flush=True,
        )
    print(f"\n{'duel (one replication)':<90} {'submissions':>11} {'seconds':>8}")
    for timing in benchmark.time_duels():
        print(f"{timing.description:<90} {timing.submissions:>11} {timing.seconds_per_replication:>8.3f}", flush=True)
    return 0


def _sota(args: argparse.Namespace) -> int:
    if args.scores:
        if args.n is None:
            raise ValueError("--scores needs --n, the size of the test set the scores were measured on")
        rho = 0.6 if args.rho is None else args.rho
        estimate = stats.estimate_sota(
            stats.read_numbers(args.scores, "scores"), args.n, np.random.default_rng(args.seed), rho=rho,
            alpha=args.alpha, target=args.target, repetitions=args.repetitions or 1_000, bootstrap=args.bootstrap,
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
            distribution = stats.best_of_m(thetas, args.n, m)
            model = "independent, identical (Eq. 2-3)" if thetas.size == 1 else "independent, non-identical (Eq. 8-9)"
            result = {"model": model, "m": distribution.m, "n": args.n, "alpha": args.alpha,
                      **distribution.summary(args.alpha)}
        else:
            best = stats.simulate_best_of_m(thetas, args.n, args.rho, np.random.default_rng(args.seed), m=m,
                                            y0=args.y0, repetitions=args.repetitions or 10_000)
            result = {"model": f"dependent through Y0 (Eq. 10-12), {args.y0} y0, simulated", "m": m or thetas.size,
                      "n": args.n, "rho": args.rho, "alpha": args.alpha, "repetitions": args.repetitions or 10_000,
                      "seed": args.seed, "mean": float(best.mean()), "sd": float(best.std(ddof=1)),
                      "upper": float(np.quantile(best, 1 - args.alpha / 2)),
                      "lower": float(np.quantile(best, args.alpha / 2)), "median": float(np.median(best))}
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:<24} {value:.6g}" if isinstance(value, float) else f"{key:<24} {value}")
    return 0


def _parse_params(pairs: list[str]) -> dict[str, object]:
    params: dict[str, object] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"--param takes KEY=VALUE, got {pair!r}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def _certify(args: argparse.Namespace) -> int:
    result = certify.certify(
        args.mechanism, _parse_params(args.param), n=args.n, budgets=args.budgets, attacks=args.attack,
        replications=args.replications, seed=args.seed, tau=args.tau, epsilon=args.epsilon, jobs=args.jobs,
        run_dir=args.run_dir,
    )
    text = certify.markdown(result)
    if args.competition:
        result["competition"] = competition_certificate.competition_view(
            args.mechanism, _parse_params(args.param), args.competition, jobs=args.jobs)
        text += "\n" + competition_certificate.markdown(result["competition"])
    if args.out:
        out = Path(args.out)
        out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        out.with_suffix(".md").write_text(text)
        print(f"certificate written to {out} and {out.with_suffix('.md')}", file=sys.stderr)
    print(text)
    return 0


def _demo(args: argparse.Namespace) -> int:
    task = TASKS.make("random-labels", n_public=args.n, n_holdout=3 * args.n)
    print(f"Boosting attack (Blum & Hardt §5), k = {args.k} random label vectors, n = {args.n} public labels")
    print(f"{'mechanism':<14} {'public (released)':>18} {'final (private)':>16} {'leaderboard error':>18}")
    for mechanism_id, variant in [("kaggle", "kaggle"), ("ladder-free", "ladder")]:
        result = duel(task, MECHANISMS.make(mechanism_id), ATTACKS.make("boosting", k=args.k, variant=variant), seed=args.seed)
        print(
            f"{mechanism_id:<14} {result.final_released:>18.4f} {result.final_final:>16.4f} "
            f"{result.leaderboard_error:>18.4f}"
        )
    print("A 0/1 loss of 0.5 is chance: Kaggle's public score is overfitted, the Ladder's is not.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ladderlab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    list_parser = commands.add_parser("list", help="list registered plugins with parameters and references")
    list_parser.add_argument("what", nargs="*", help="which families (default: all)")
    list_parser.set_defaults(handler=_list)

    run = commands.add_parser("run", help="run (or resume) a scenario: a file or a built-in name")
    run.add_argument("scenario", help="path to a TOML scenario, or a built-in name (see 'ladderlab list scenarios')")
    run.add_argument("--out", help="run directory (default: runs/<scenario name>)")
    run.add_argument("--jobs", type=int, default=1, help="parallel cells (loky backend)")
    run.add_argument("--backend", choices=["loky", "dask"], default="loky")
    run.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786")
    run.add_argument("--replications", type=int, help="override the scenario's replication count")
    run.set_defaults(handler=_run)

    report_parser = commands.add_parser("report", help="summary table, plots and HTML page of a run directory")
    report_parser.add_argument("run_dir", help="a run directory written by 'ladderlab run' (finished or not)")
    report_parser.add_argument("--format", choices=["text", "csv", "json"], default="text", help="summary table format")
    report_parser.add_argument("--out", help="write the summary table to this file instead of the terminal")
    report_parser.add_argument("--html", help="write a self-contained HTML report to this file")
    report_parser.add_argument("--plots", help="write the plots as PNG files into this folder")
    report_parser.set_defaults(handler=_report)

    sota = commands.add_parser(
        "sota", help="distribution of the best of m accuracies, or a multiplicity-adjusted state of the art",
        description="Møllersen & Holsbø: the best observed accuracy among m classifiers on n test points "
                    "(--m --n --theta, or --thetas FILE; --rho for dependent classifiers), or the state of the "
                    "art estimated from a leaderboard's accuracies (--scores FILE --n N).",
    )
    sota.add_argument("--m", type=int, help="number of classifiers (with --theta)")
    sota.add_argument("--n", type=int, help="test set size")
    sota.add_argument("--theta", type=float, help="probability of a correct prediction, shared by all m")
    sota.add_argument("--thetas", help="file of one probability per classifier (white space or commas)")
    sota.add_argument("--scores", help="file of observed leaderboard accuracies, one per team")
    sota.add_argument("--alpha", type=float, default=0.05, help="1 - confidence of the interval (default 0.05)")
    sota.add_argument("--rho", type=float, help="correlation with the latent Y0 (dependent classifiers; 0.6 for --scores)")
    sota.add_argument("--y0", choices=["random", "fixed"], default="random", help="latent Y0 random or fixed")
    sota.add_argument("--target", choices=["expected", "upper"], default="expected",
                      help="crop so that the expected (or upper-limit) maximum equals the observed one")
    sota.add_argument("--repetitions", type=int,
                      help="simulated test sets (default 10000 for --rho, 1000 per search step for --scores)")
    sota.add_argument("--bootstrap", type=int, default=30, help="bootstrap resamples of the teams (--scores)")
    sota.add_argument("--seed", type=int, default=0)
    sota.add_argument("--format", choices=["text", "json"], default="text")
    sota.set_defaults(handler=_sota)

    cert = commands.add_parser("certify", help="attack battery, safe submission budget and honest cost of a mechanism")
    cert.add_argument("mechanism", help="a mechanism id, or file.py:Class")
    cert.add_argument("--param", action="append", default=[], help="mechanism parameter KEY=VALUE (repeatable)")
    cert.add_argument("--n", type=int, default=200, help="public holdout size (default 200)")
    cert.add_argument("--budgets", type=int, nargs="+", default=[100, 300, 1000, 2000], help="submission budgets")
    cert.add_argument("--attack", action="append", default=[], help="an extra attack: third-party id or file.py:Class")
    cert.add_argument("--replications", type=int, default=100)
    cert.add_argument("--seed", type=int, default=0)
    cert.add_argument("--tau", type=float, default=0.05, help="largest tolerated median overfitting -Δ (default 0.05)")
    cert.add_argument("--epsilon", type=float, default=0.05, help="largest tolerated median leaderboard error")
    cert.add_argument("--jobs", type=int, default=1, help="parallel cells")
    cert.add_argument("--run-dir", help="keep the battery's run directory here (resumable; 'ladderlab report' reads it)")
    cert.add_argument("--out", help="write the certificate as JSON here, and as Markdown beside it (.md)")
    cert.add_argument("--competition", help="a scenario file with [[competition]] tables: add the competition view "
                      "(shake-up, best team wins, winner's delta, honest utility) under its rules and team mix")
    cert.set_defaults(handler=_certify)

    demo = commands.add_parser("demo", help="the boosting attack against kaggle and ladder-free")
    demo.add_argument("--k", type=int, default=400, help="number of attack submissions")
    demo.add_argument("--n", type=int, default=4000, help="public holdout size")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(handler=_demo)

    bench = commands.add_parser("bench", help="submissions per second of every mechanism")
    bench.add_argument("--n", type=int, nargs="+", default=[200, 4000], help="holdout sizes")
    bench.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    bench.set_defaults(handler=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except ValueError as error:
        print(f"ladderlab: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
