"""Simulated competitions against real ones: ``ladderlab dev realism shakeup|roelofs``.

Each runs its scenario into a run directory (resumable, like ``ladderlab run``) and writes a
Markdown page from the results, so the numbers on the page are those of the run that wrote it:

- ``shakeup`` (``kaggle-realistic``, docs/kaggle-realistic.md): the calibration (the simulated
  teams' submissions, improvements and arrival against the real distributions of
  :mod:`ladderlab.competition.kaggle_calibration`) and the shake-up of the final leaderboards under every
  mechanism beside the real competitions' (:data:`~ladderlab.competition.kaggle_calibration.REAL_LEADERBOARDS`,
  computed the same way, :func:`~ladderlab.competition.kaggle_calibration.leaderboard_shakeup`);
- ``roelofs`` (``roelofs-2019``, docs/roelofs-2019.md): Roelofs et al.'s comparison of the
  top teams' public–private gaps with sampling noise
  (:func:`~ladderlab.competition.measures.sampling_noise_gaps`), for the honest population and with
  each attacker family of the zoo among it.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ladderlab.competition.kaggle_calibration import (
    ARRIVAL,
    ENTRIES,
    IMPROVEMENTS,
    LEVELS,
    REAL_LEADERBOARDS,
    leaderboard_shakeup,
)
from ladderlab.naming import plugin_label

if TYPE_CHECKING:
    import pandas as pd

PAGES = {"shakeup": "kaggle-realistic", "roelofs": "roelofs-2019"}
"""Each page and the built-in scenario it runs."""
QUARTILES = (0.25, 0.5, 0.75, 0.9)
SHAKEUP_COLUMNS = ("spearman", "kendall", "top10_overlap", "public_winner_private_rank", "winner_gap_in_sd", "top10_spread_in_sd")


def run(page: str, run_dir: str | Path | None = None, jobs: int = 1, replications: int | None = None) -> pd.DataFrame:
    """Run (or resume) the page's scenario; every competition replication with its per-team lists,
    in the scenario's order of cells (so the pages list mechanisms and mixes as the scenario does)."""
    from ladderlab.competition.results import load_competition_results
    from ladderlab.runs import runner
    from ladderlab.runs import scenario as scenarios

    name = PAGES[page]
    out = Path(run_dir) if run_dir is not None else Path("runs") / name
    runner.run(name, out=out, jobs=jobs, replications=replications, progress=False)
    results = load_competition_results(out, teams=True)
    failed = results[results.status != "ok"]
    if not failed.empty:
        raise RuntimeError(f"{len(failed)} replications of {name} did not finish: {failed.error.iloc[0]}")
    order = {cell.key: place for place, cell in enumerate(scenarios.cells(scenarios.load(name)))}
    return results.sort_values(["cell", "replication"], key=lambda column: column.map(order) if column.name == "cell"
                               else column, ignore_index=True)


def _interval(values: pd.Series, digits: int = 3) -> str:
    values = values.dropna()
    if values.empty:
        return "–"
    low, median, high = np.quantile(values, [0.025, 0.5, 0.975])
    return f"{median:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _mechanism(row: pd.Series) -> str:
    return plugin_label(row.mechanism, row.mechanism_params)


def shakeup_statistics(results: pd.DataFrame) -> pd.DataFrame:
    """Per replication, the statistics of the real leaderboards (:func:`leaderboard_shakeup`)."""
    import pandas as pd

    rows = [{"mechanism": _mechanism(row), "replication": row.replication,
             **leaderboard_shakeup(np.asarray(row.team_public), np.asarray(row.team_private), row.sign)}
            for _, row in results.iterrows()]
    return pd.DataFrame(rows)


def _quartiles(values: np.ndarray) -> str:
    return " / ".join(f"{q:.3g}" for q in np.quantile(values, QUARTILES))


def _real_quartiles(table: tuple[float, ...]) -> str:
    return " / ".join(f"{np.interp(q, LEVELS, table):.3g}" for q in QUARTILES)


def shakeup_page(results: pd.DataFrame, command: str) -> str:
    """docs/kaggle-realistic.md: calibration and shake-up beside real competitions."""
    disclosure = results[results.mechanism == "full-disclosure"]
    rounds = json.loads(disclosure.rules.iloc[0])["rounds"]
    submissions = np.concatenate(disclosure.team_submissions.to_list())
    improvements = np.concatenate(disclosure.team_improvements.to_list())
    arrival = np.concatenate(disclosure.team_first_round.to_list()) / rounds
    statistics = shakeup_statistics(results)
    spread = statistics[statistics.mechanism == "full-disclosure"].top10_spread_in_sd
    real_single = [real for real in REAL_LEADERBOARDS if real.stage == "single"]
    calibration = "\n".join([
        "| quantity | real | source | simulated (full disclosure) |",
        "| --- | --- | --- | --- |",
        f"| submissions per team, quartiles and 90th percentile | {_real_quartiles(ENTRIES)} | final leaderboards of three "
        f"single-stage Kaggle competitions, 3,237 teams (`ENTRIES`) | {_quartiles(submissions)} |",
        f"| improvements of a team's public best, quartiles and 90th percentile | {_real_quartiles(IMPROVEMENTS)} | CHAMPS "
        f"public-leaderboard history, 2,736 teams (`IMPROVEMENTS`) | {_quartiles(improvements)} |",
        f"| arrival, share of the competition, quartiles and 90th percentile | {_real_quartiles(ARRIVAL)} | CHAMPS (`ARRIVAL`) "
        f"| {_quartiles(arrival)} |",
        f"| private spread of the top 10, in sds of the top tenth's public–private gaps | "
        f"{min(r.top10_spread_in_sd for r in real_single):g} to {max(r.top10_spread_in_sd for r in real_single):g} | "
        f"the four single-stage leaderboards below | {_interval(spread, 2)} |",
    ])
    shake_rows = ["| leaderboard | teams | Spearman ρ | Kendall τ | top-10 overlap | public winner's private rank "
                  "| winner's gap (sd) | top-10 spread (sd) |",
                  "| --- | ---: | --- | --- | --- | --- | --- | --- |"]
    for real in REAL_LEADERBOARDS:
        shake_rows.append(f"| {real.title} ({real.year}, {real.metric}, {real.stage}) | {real.teams} | {real.spearman:.3f} | "
                          f"{real.kendall:.3f} | {real.top10_overlap:.1f} | {real.public_winner_private_rank} | "
                          f"{real.winner_gap / real.top_gap_sd:+.2f} | {real.top10_spread_in_sd:.2f} |")
    teams = len(results.team_public.iloc[0])
    for mechanism, group in statistics.groupby("mechanism", sort=False):
        shake_rows.append(f"| kaggle-realistic, {mechanism} ({len(group)} replications) | {teams} | "
                          + " | ".join(_interval(group[name], 0 if name == "public_winner_private_rank" else 2)
                                       for name in SHAKEUP_COLUMNS) + " |")
    return f"""# A realistic Kaggle population

Written by `{command}` on {time.strftime('%Y-%m-%d')} from {results.replication.nunique()} replications of the
built-in `kaggle-realistic` scenario. Simulated values are medians with the 2.5% and 97.5% quantiles over
replications in brackets.

The `kaggle-like` scenario's honest teams all submit their whole quota from the first day and differ
widely in skill, so its final leaderboards barely shake up. Real teams arrive over the competition,
most make a handful of submissions, a few make hundreds, and the best of them are within sampling
noise of each other. `kaggle-realistic` draws each team's arrival, stay and number of submissions from
real data (the team entry's `activity = "kaggle"`, `ladderlab.competition.kaggle_calibration.kaggle_schedule`): it
arrives at a share of the competition drawn from CHAMPS's arrivals; one uniform draw, its effort, sets
both how many submissions it makes (from the final leaderboards' entries) and how long it stays (from
CHAMPS, as a share of the time left), so the teams that submit more stay longer, as they do there; it
spreads its submissions evenly over the days it stays. The teams are natural analysts: half see 16 of
the task's 20 features and half 8, and each adds a feature every two submissions, so effort turns into
skill and the strongest teams end close to each other. The rules are Kaggle's: 5 submissions a day, two
selected submissions of which the best private score counts; 20% of the test set is public (the split
of Ultrasound Nerve Segmentation, whose organisers kept 80% private).

## Calibration

{calibration}

{_calibration_remark(submissions, improvements, float(spread.median()), real_single)}

## Shake-up

The shake-up of the final leaderboards, for each real competition over the teams on both of its
leaderboards and for the simulation over its teams: rank correlations of public and private scores,
the share of the public top 10 that stays in the private top 10, where the public leaderboard's leader
finishes, the private winner's public − private score (signed so that positive means the public score
looked better) and the private spread of the top 10 teams, both in standard deviations of the
public − private gaps of the private top tenth (the sampling noise where the top teams did not
overfit), which makes scores of different metrics comparable. Single-stage competitions split one
test set into a public and a private part, as the simulation does; in a two-stage competition the
private leaderboard scores a second test set released at the end, so its shake-up is larger.

{chr(10).join(shake_rows)}

Sources: `ladderlab.competition.kaggle_calibration` (CHAMPS public-leaderboard history from
github.com/larsbratholm/champs_kaggle, MIT licence; the final public and private leaderboards saved by
Varoquaux & Cheplygina in github.com/GaelVaroquaux/ml_med_imaging_failures, numbers only). Every
number in the real rows was computed from those files with `leaderboard_shakeup`, the function that
computes the simulated rows.
"""


def _calibration_remark(submissions: np.ndarray, improvements: np.ndarray, spread: float, real: list[Any]) -> str:
    """What the calibration table says about the quantities that are not inputs."""
    low, high = min(r.top10_spread_in_sd for r in real), max(r.top10_spread_in_sd for r in real)
    real_90 = float(np.interp(0.9, LEVELS, IMPROVEMENTS))
    simulated = float(np.quantile(improvements, 0.9))
    closeness = "close to" if abs(simulated - real_90) <= 0.25 * real_90 else ("below" if simulated < real_90 else "above")
    return (f"Submissions and arrival are inputs (drawn from the real distributions); the improvements of a team's "
            f"public best are not, and they come out {closeness} CHAMPS's at the top: the 90th percentile is "
            f"{simulated:.3g} against {real_90:.3g}. The median private spread of the top 10, also an outcome, "
            f"is {spread:.2f} sd, {'within' if low <= spread <= high else 'outside'} the single-stage "
            f"leaderboards' range ({low:.2f} to {high:.2f}).")


def roelofs_page(results: pd.DataFrame, command: str) -> str:
    """docs/roelofs-2019.md: the top teams' gaps against sampling noise, honest and with cheaters."""
    import pandas as pd

    honest_mix = _honest_mix(results)
    rows = ["| population | top tenth's gap (accuracy points) | top tenth's mean z | top tenth within ±1.96 "
            "| all teams' mean z | cheaters' mean z | cheaters' mean public rank | top-10 overlap |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    pooled: dict[str, np.ndarray] = {}
    for mix, group in results.groupby("mix", sort=False):
        cheaters = _cheaters(group.groups.iloc[0])
        per_group = [json.loads(text) for text in group.groups]
        cheat_z = pd.Series([g[label]["gap_z_mean"] for g in per_group for label in cheaters])
        cheat_rank = pd.Series([g[label]["public_rank_mean"] for g in per_group for label in cheaters])
        rows.append(f"| {mix} | {_interval(100 * group.gap_top_mean, 2)} | {_interval(group.gap_top_z_mean, 2)} | "
                    f"{_interval(group.gap_top_within_noise, 2)} | {_interval(group.gap_all_z_mean, 2)} | "
                    f"{_interval(cheat_z, 2) if cheaters else '–'} | {_interval(cheat_rank, 0) if cheaters else '–'} | "
                    f"{_interval(group.top10_overlap, 1)} |")
        pooled[mix] = np.concatenate([_top_tenth(row) for _, row in group.iterrows()])
    honest = pooled[honest_mix]
    levels = (0.025, 0.25, 0.5, 0.75, 0.975)
    normal = [-1.96, -0.674, 0.0, 0.674, 1.96]
    quantile_rows = ["| | " + " | ".join(f"{q:.1%}" for q in levels) + " |", "| --- |" + " ---: |" * len(levels),
                     "| standard normal (sampling noise alone) | " + " | ".join(f"{v:+.2f}" for v in normal) + " |"]
    for mix, z in pooled.items():
        quantile_rows.append(f"| {mix} | " + " | ".join(f"{v:+.2f}" for v in np.quantile(z, levels)) + " |")
    noise = results.noise_sd.median()
    return f"""# Roelofs et al. (NeurIPS 2019), reproduced

Written by `{command}` on {time.strftime('%Y-%m-%d')} from {results.replication.nunique()} replications of the
built-in `roelofs-2019` scenario: `kaggle-realistic`'s calibrated population of 1,000 honest teams
(docs/kaggle-realistic.md) under full disclosure, alone and with 10 cheaters (1% of the teams) of one
family of the zoo among them, on the 0/1 loss (accuracy, as in the paper's main analysis). Values are
medians with the 2.5% and 97.5% quantiles over replications in brackets.

Roelofs, Shankar, Recht, Fridovich-Keil, Hardt, Miller and Schmidt compared the public and private
scores of the submissions of over a hundred Kaggle competitions with the sampling noise of the holdout
method and found little evidence of substantial overfitting: the public–private gaps of the top teams
are mostly what sampling noise alone would give. The simulation knows what the paper had to estimate:
every test point's P(y = 1 | x). For the submission each team is ranked by, its public − private
accuracy would, had the submission been fixed in advance, be normal with a known mean (its expected
accuracy on the public rows minus on the private rows) and a known standard deviation, the same for
every submission: here {100 * noise:.2f} accuracy points (median over replications). Its z-score is
then standard normal: 95% within ±1.96, mean 0, whatever the other teams submitted
(`ladderlab.competition.measures.sampling_noise_gaps`). The top teams are the tenth with the best
expected accuracy, which the simulation knows; choosing them by public score would add the winner's
curse of the public noise itself.

| | |
| --- | --- |
| honest teams' top tenth within ±1.96 (95% under sampling noise alone) | {_interval(results[results.mix == honest_mix].gap_top_within_noise, 2)} |
| honest teams' top tenth, mean z (0 under sampling noise alone) | {_interval(results[results.mix == honest_mix].gap_top_z_mean, 2)} |

## Every population

{chr(10).join(rows)}

The top tenth's gap is in accuracy points (public − private); the cheaters' columns are the mean over
the 10 cheaters of their z and of their public rank.

## The top tenth's z, pooled over replications

{chr(10).join(quantile_rows)}

{_verdict(results, honest)}
"""


def _cheaters(groups_json: str) -> list[str]:
    """The labels of a replication's team groups that are not natural analysts."""
    return [label for label in json.loads(groups_json) if "analyst" not in label]


def _honest_mix(results: pd.DataFrame) -> str:
    """The mix whose teams are all natural analysts."""
    honest = [mix for mix, group in results.groupby("mix", sort=False) if not _cheaters(group.groups.iloc[0])]
    if len(honest) != 1:
        raise ValueError(f"roelofs-2019 needs exactly one mix of natural analysts alone, found {len(honest)}")
    return honest[0]


def _verdict(results: pd.DataFrame, honest: np.ndarray) -> str:
    """What the tables say, in words chosen by the numbers."""
    shift = float(np.median(honest))
    within = float(np.mean(np.abs(honest) <= 1.96))
    size = "a little" if abs(shift) < 1 else "clearly"
    lines = [f"Honest teams that tune on the public leaderboard (the natural analysts' probes) and pick their best "
             f"public submission overfit it {size}: the pooled z of the top tenth is shifted by {shift:+.2f} at the "
             f"median, and {within:.0%} of it lies within ±1.96, where sampling noise alone puts 95%."]
    teams = len(results.team_public.iloc[0])
    for mix, group in results.groupby("mix", sort=False):
        per_group = [json.loads(text) for text in group.groups]
        for label in _cheaters(group.groups.iloc[0]):
            z = float(np.median([g[label]["gap_z_mean"] for g in per_group]))
            rank = float(np.median([g[label]["public_rank_mean"] for g in per_group]))
            place = "in the top tenth of the public leaderboard" if rank <= teams / 10 else "below its top tenth"
            lines.append(f"With {label} among them, the cheaters' own gaps have a mean z of {z:+.1f} (median over "
                         f"replications), and they stand {place} (mean public rank {rank:.0f} of {teams}).")
    return "\n\n".join(lines)


def _top_tenth(row: pd.Series) -> np.ndarray:
    """The z of the truly best tenth of one replication's teams (as ``sampling_noise_gaps`` chooses them)."""
    z, population = np.asarray(row.team_gap_z), np.asarray(row.team_population)
    count = min(z.size, max(10, math.ceil(0.1 * z.size)))
    return z[np.argsort(row.sign * population, kind="stable")[:count]]


def add_subcommand(commands: Any) -> None:
    """``ladderlab dev realism shakeup|roelofs``."""
    realism = commands.add_parser(
        "realism", help="run kaggle-realistic or roelofs-2019 and write its page (shake-up beside real competitions, "
                        "or Roelofs et al.'s gaps against sampling noise)",
        description="Runs the page's scenario into --run-dir (resumable) and writes the page from its results: "
                    "'shakeup' runs kaggle-realistic (docs/kaggle-realistic.md), 'roelofs' runs roelofs-2019 "
                    "(docs/roelofs-2019.md).")
    realism.add_argument("page", choices=sorted(PAGES), help="which page")
    realism.add_argument("--out", required=True, help="the Markdown page to write")
    realism.add_argument("--run-dir", help="where the scenario runs (default runs/<scenario>)")
    realism.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1)")
    realism.add_argument("--replications", type=int, help="override the scenario's replication count")
    realism.set_defaults(handler=_handle, resumable=True)


def _handle(args: argparse.Namespace) -> int:
    from ladderlab.runs.rundir import write_atomically

    out = Path(args.out)
    if not out.parent.exists():
        raise ValueError(f"{args.out}: the folder {out.parent} does not exist")
    if args.jobs < 1 and args.jobs != -1:
        raise ValueError(f"--jobs must be at least 1 (or -1, every core), got {args.jobs}")
    results = run(args.page, args.run_dir, args.jobs, args.replications)
    command = f"ladderlab dev realism {args.page} --out {args.out}" + (
        f" --replications {args.replications}" if args.replications else "")
    text = shakeup_page(results, command) if args.page == "shakeup" else roelofs_page(results, command)
    write_atomically(out, text.encode())
    print(f"wrote {out}")
    return 0
