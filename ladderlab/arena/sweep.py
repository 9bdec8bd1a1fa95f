"""Arena sweeps: tables of seasons over policies and attack settings, and the page a sweep writes.

A sweep file (TOML) names a family, a number of replications, a seed and τ (Elo points), then tables,
each a list of policies against one attack with a grid of parameters (every combination of the
lists given), and optionally the papers' numbers to print beside them:

    name = "leaderboard-illusion"
    source = "Singh et al. 2025, §3"
    replications = 400
    seed = 0
    tau = 20.0

    [family]
    id = "pairwise"
    params = { models = 50 }

    [[table]]
    title = "The best of N private variants"
    policies = [{ id = "plain-board" }]
    attack = { id = "best-of-n-variants", params = { n_variants = [1, 3, 10, 27] } }

    [[paper]]
    what = "private variants Meta tested before Llama 4"
    value = "27"
    where = "Singh et al. 2025, abstract"

Every cell replicates seasons (:mod:`ladderlab.arena.season`) with the same worlds (common random
numbers). Per cell: the mean inflation of the provider's published rating with a 95 % t-interval,
P(inflation > τ) with its exact (Clopper–Pearson) 95 % interval, the median rank gain, P(the top
model is inflated by more than τ), and for best-of-N the order-statistics prediction σ · E[max of N
standard normals], σ the spread of one provider's variants' private ratings within a season (their
shared noise, the pool's, does not select). A sweep may also measure the final boards' drop
robustness (a table's ``robustness`` seasons per cell: the fewest votes whose removal changes the top model).
``ladderlab arena sweep NAME --write PAGE`` writes the page with its stamp (:mod:`ladderlab.runs.page_stamps`)
and a figure beside it (PAGE with .png), which the page that includes PAGE shows.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from scipy import integrate, stats
from threadpoolctl import threadpool_limits

from ladderlab.arena.builtin_sweeps import builtin_sweeps
from ladderlab.arena.family import PairwiseArena
from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_FAMILIES, ARENA_POLICIES
from ladderlab.arena.robustness import fewest_removals
from ladderlab.arena.season import Season
from ladderlab.naming import plugin_label
from ladderlab.plugin import fingerprint
from ladderlab.runs import page_stamps
from ladderlab.runs.arguments import ArgumentError, output_file
from ladderlab.utils.progress import progress_bar
from ladderlab.utils.terminal import wrapped_markdown

KEYS = {"name", "source", "replications", "seed", "tau", "newcomer_gap", "family", "table", "paper"}
TABLE_KEYS = {"title", "policies", "attack", "robustness", "newcomer_gap"}


@dataclass(frozen=True)
class Table:
    title: str
    policies: list[tuple[str, dict[str, Any]]]
    attack: str
    grid: list[dict[str, Any]]
    robustness: int = 0
    """Seasons per cell whose final board's drop robustness is measured (0: none)."""
    newcomer_gap: float | None = None
    """The provider's model's strength against the pool's strongest in this table (None: the sweep's)."""


@dataclass(frozen=True)
class Sweep:
    name: str
    source: str
    replications: int
    seed: int
    tau: float
    newcomer_gap: float
    family: PairwiseArena
    tables: list[Table]
    paper: list[dict[str, str]] = field(default_factory=list)

    def cells(self) -> list[tuple[int, str, dict[str, Any], dict[str, Any]]]:
        return [(number, policy, params, point) for number, table in enumerate(self.tables)
                for policy, params in table.policies for point in table.grid]


def load(name_or_path: str) -> Sweep:
    """A sweep from a built-in name or a TOML file; ``ValueError`` naming the file and key for a mistake."""
    path = builtin_sweeps().get(name_or_path) or Path(name_or_path)
    if not path.is_file():
        raise ValueError(f"{name_or_path}: no such sweep file, and no built-in sweep of that name "
                         f"(built-in: {', '.join(builtin_sweeps())})")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a TOML file: {error}") from None
    where = path.name
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; a sweep has {', '.join(sorted(KEYS))}")
    for key in ("name", "replications", "table"):
        if key not in raw:
            raise ValueError(f"{where}: no {key!r}")
    replications = _whole(raw["replications"], f"{where}: replications", 1)
    family_entry = raw.get("family", {"id": "pairwise"})
    family = _checked(ARENA_FAMILIES, family_entry, f"{where}: family")
    tables = []
    for number, entry in enumerate(raw["table"]):
        place = f"{where}: table[{number}]"
        unknown = sorted(set(entry) - TABLE_KEYS)
        if unknown:
            raise ValueError(f"{place}: unknown key {unknown[0]!r}; a table has {', '.join(sorted(TABLE_KEYS))}")
        attack = entry.get("attack")
        if not isinstance(attack, dict) or "id" not in attack:
            raise ValueError(f"{place}.attack: give {{ id = …, params = {{ … }} }}")
        lists = {key: value if isinstance(value, list) else [value] for key, value in attack.get("params", {}).items()}
        grid = [dict(zip(lists, values)) for values in itertools.product(*lists.values())]
        for point in grid:
            _checked(ARENA_ATTACKS, {"id": attack["id"], "params": point}, f"{place}.attack")
        policies = []
        for slot, policy in enumerate(entry.get("policies", [])):
            _checked(ARENA_POLICIES, policy, f"{place}.policies[{slot}]")
            policies.append((policy["id"], policy.get("params", {})))
        if not policies:
            raise ValueError(f"{place}.policies: give at least one policy")
        gap = entry.get("newcomer_gap")
        if gap is not None and (isinstance(gap, bool) or not isinstance(gap, (int, float))):
            raise ValueError(f"{place}.newcomer_gap: a number of Elo points, got {gap!r}")
        tables.append(Table(str(entry.get("title", f"table {number + 1}")), policies, attack["id"], grid,
                            _whole(entry.get("robustness", 0), f"{place}.robustness", 0),
                            None if gap is None else float(gap)))
    tau = raw.get("tau", 20.0)
    if not isinstance(tau, (int, float)) or isinstance(tau, bool) or not tau > 0:
        raise ValueError(f"{where}: tau must be a number of Elo points > 0, got {tau!r}")
    return Sweep(str(raw["name"]), str(raw.get("source", "")), replications, _whole(raw.get("seed", 0), f"{where}: seed", 0),
                 float(tau), float(raw.get("newcomer_gap", 0.0)), family, tables, [dict(entry) for entry in raw.get("paper", [])])


def _whole(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{where}: a whole number ≥ {least}, got {value!r}")
    return value


def _checked(registry: Any, entry: Any, where: str) -> Any:
    if not isinstance(entry, dict) or "id" not in entry:
        raise ValueError(f"{where}: give {{ id = …, params = {{ … }} }}")
    return registry.checked(entry["id"], entry.get("params", {}), where)


def _seasons(sweep: Sweep, policy: tuple[str, dict[str, Any]], attack: tuple[str, dict[str, Any]],
             replications: range, robustness: bool, gap: float | None) -> list[dict[str, Any]]:
    records = []
    with threadpool_limits(limits=1, user_api="blas"):
        for replication in replications:
            season = Season(sweep.family, ARENA_POLICIES.make(policy[0], **policy[1]), ARENA_ATTACKS.make(attack[0], **attack[1]),
                            sweep.seed, replication, sweep.newcomer_gap if gap is None else gap)
            record = season.play().record()
            shown = [variant.private_rating for variant in season.variants]
            record["variant_variance"] = float(np.var(shown, ddof=1)) if len(shown) > 1 else None
            if robustness and record["played"]:
                found = fewest_removals(season.board_battles(), exhaustive_limit=0)
                record["robustness"] = (found.lower, found.upper)
            records.append(record)
    return records


def run(sweep: Sweep, jobs: int = 1, replications: int | None = None, progress: bool | None = False) -> list[dict[str, Any]]:
    """Every cell's summary (see the module docstring)."""
    most = replications or sweep.replications
    cells = sweep.cells()
    chunk = 50
    tasks = [(cell, range(start, min(start + chunk, most))) for cell in cells for start in range(0, most, chunk)]
    robust = [(cell, range(sweep.tables[cell[0]].robustness)) for cell in cells if sweep.tables[cell[0]].robustness]
    with Parallel(n_jobs=jobs) as parallel:
        done = parallel(delayed(_seasons)(sweep, (policy, params), (sweep.tables[table].attack, point), todo, False,
                                          sweep.tables[table].newcomer_gap)
                        for (table, policy, params, point), todo in progress_bar(tasks, progress=progress, desc="seasons",
                                                                                 unit=f"{chunk} seasons"))
        checked = parallel(delayed(_seasons)(sweep, (policy, params), (sweep.tables[table].attack, point), todo, True,
                                             sweep.tables[table].newcomer_gap)
                           for (table, policy, params, point), todo in robust)
    by_cell: dict[int, list[dict[str, Any]]] = {}
    for ((cell_tuple), _), records in zip(tasks, done):
        by_cell.setdefault(cells.index(cell_tuple), []).extend(records)
    robustness = {cells.index(cell): records for (cell, _), records in zip(robust, checked)}
    return [_summary(sweep, cell, by_cell[number], robustness.get(number)) for number, cell in enumerate(cells)]


@cache
def expected_maximum(n: int) -> float:
    """E[max of n independent standard normals] (numerical integration)."""
    if n == 1:
        return 0.0
    value, _ = integrate.quad(lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1), -12, 12)
    return float(value)


def _summary(sweep: Sweep, cell: tuple[int, str, dict[str, Any], dict[str, Any]], records: list[dict[str, Any]],
             robust: list[dict[str, Any]] | None) -> dict[str, Any]:
    table, policy, params, point = cell
    played = [record for record in records if record["played"]]
    inflation = np.array([record["inflation"] for record in played])
    size = inflation.size
    exceeded = int((inflation > sweep.tau).sum())
    interval = stats.binomtest(exceeded, size).proportion_ci(0.95, method="exact") if size else None
    half = stats.t.ppf(0.975, size - 1) * inflation.std(ddof=1) / math.sqrt(size) if size > 1 else math.nan
    variances = [record["variant_variance"] for record in played if record["variant_variance"] is not None]
    spread = math.sqrt(float(np.mean(variances))) if variances else None
    tested = float(np.median([record["variants_tested"] for record in played])) if played else None
    out = {
        "table": table, "policy": policy, "policy_params": params, "attack": sweep.tables[table].attack, "params": point,
        "seasons": len(records), "listed": size,
        "inflation_mean": float(inflation.mean()) if size else None, "inflation_half_width": float(half) if size > 1 else None,
        "p_inflated": exceeded / size if size else None,
        "p_inflated_interval": [float(interval.low), float(interval.high)] if interval else None,
        "rank_gain_median": float(np.median([record["rank_inflation"] for record in played])) if played else None,
        "p_top_inflated": float(np.mean([record["top_inflation"] > sweep.tau for record in played])) if played else None,
        "variants_tested_median": tested, "variant_spread": spread,
        "order_statistics": spread * expected_maximum(int(round(tested))) if spread is not None and tested else None,
    }
    if robust:
        bounds = np.array([record["robustness"] for record in robust if record["played"]], dtype=float)
        out["robustness"] = {"seasons": int(bounds.shape[0]), "lower_median": float(np.median(bounds[:, 0])),
                             "upper_median": float(np.nanmedian(bounds[:, 1]))}
    return out


def code(sweep: Sweep) -> dict[str, str]:
    """The stamp's code record: the sweep's plugins and the arena's core modules."""
    prints = {f"arena family:{sweep.family.id}": fingerprint(type(sweep.family))}
    for table in sweep.tables:
        prints[f"arena attack:{table.attack}"] = fingerprint(ARENA_ATTACKS.get(table.attack))
        for policy, _ in table.policies:
            prints[f"arena policy:{policy}"] = fingerprint(ARENA_POLICIES.get(policy))
    return page_stamps.code_record(prints, "arena")


def page(sweep: Sweep, results: list[dict[str, Any]], command: str) -> str:
    """The sweep's page: what it simulates, the papers' numbers beside, a table per table, the stamp (the figure,
    written beside it, is for the page that includes this one to show)."""
    lines = [f"# {sweep.name}", "", f"Written by `{command}`.", ""]
    if sweep.source:
        lines += [f"Source: {sweep.source}.", ""]
    lines += [f"Family: `{plugin_label(sweep.family.id, sweep.family.get_params())}`; the provider's model "
              f"{sweep.newcomer_gap:+g} Elo points from the pool's strongest; {sweep.replications} seasons per cell "
              f"(seed {sweep.seed}), the same worlds in every cell; τ = {sweep.tau:g} Elo points.", "",
              "Inflation: the provider's published rating minus its true strength, both relative to the pool's mean "
              "(Elo points), mean with a 95% t-interval; P(> τ) with its exact 95% interval; rank gain: true rank minus "
              "listed rank (median; models of equal strength share their ranks); P(top > τ): the listed top model inflated "
              "by more than τ; σ·E[max of N]: what publishing the best-rated of the N variants tested would add, σ the "
              "spread of the variants' private ratings within a season (the best-of-N prediction, beside every "
              "policy).", ""]
    if sweep.paper:
        lines += ["## The paper's numbers", "", "| what | value | where |", "| --- | --- | --- |",
                  *(f"| {entry.get('what', '')} | {entry.get('value', '')} | {entry.get('where', '')} |"
                    for entry in sweep.paper), ""]
    for number, table in enumerate(sweep.tables):
        rows = [result for result in results if result["table"] == number]
        where = ("" if table.newcomer_gap is None else
                 f"The provider's model is {table.newcomer_gap:+g} Elo points from the pool's strongest here.\n\n")
        lines += [f"## {table.title}", "", *([where.rstrip("\n"), ""] if where else []), "| policy | attack setting | seasons | inflation [95% CI] | P(> τ) [95% CI] | "
                  "σ·E[max of N] | rank gain | P(top > τ) | variants tested |" + (" votes to change the top |"
                                                                                   if any("robustness" in r for r in rows) else ""),
                  "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |" + (" --- |" if any("robustness" in r for r in rows) else "")]
        for row in rows:
            robust = row.get("robustness")
            lines.append(
                f"| {plugin_label(row['policy'], row['policy_params'])} | {_setting(row['params'])} | {row['seasons']} | "
                f"{_mean(row)} | {_share(row)} | {_number(row['order_statistics'])} | {_number(row['rank_gain_median'], 0)} "
                f"| {_number(row['p_top_inflated'], 3)} | {_number(row['variants_tested_median'], 0)} |"
                + (f" {robust['lower_median']:.0f}–{robust['upper_median']:.0f} ({robust['seasons']} seasons) |" if robust else
                   (" – |" if any("robustness" in r for r in rows) else "")))
        lines.append("")
    lines.append(page_stamps.stamp(command, code(sweep)))
    return "\n".join(lines) + "\n"


def _setting(params: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in params.items())


def _number(value: float | None, digits: int = 1) -> str:
    """``value`` at ``digits`` decimals, never "-0"."""
    if value is None:
        return "–"
    rounded = round(value, digits)
    return f"{rounded if rounded else 0.0:.{digits}f}"


def _mean(row: dict[str, Any]) -> str:
    if row["inflation_mean"] is None:
        return "–"
    half = row["inflation_half_width"]
    return f"{row['inflation_mean']:.1f}" + (f" ± {half:.1f}" if half is not None else "")


def _share(row: dict[str, Any]) -> str:
    if row["p_inflated"] is None:
        return "–"
    low, high = row["p_inflated_interval"]
    return f"{row['p_inflated']:.3f} [{low:.3f}, {high:.3f}]"


def figure(sweep: Sweep, results: list[dict[str, Any]], path: Path) -> None:
    """Inflation against the number of variants tested, one line per other setting of the first table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ladderlab.utils.atomic import save_figure

    rows = [row for row in results if row["table"] == 0 and row["variants_tested_median"]]
    fig, axis = plt.subplots(figsize=(6.4, 4.0))
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        rest = {key: value for key, value in row["params"].items() if key != "n_variants"}
        groups.setdefault(f"{plugin_label(row['policy'], row['policy_params'])} {_setting(rest)}", []).append(row)
    for label, group in groups.items():
        group.sort(key=lambda row: row["variants_tested_median"])
        n = [row["variants_tested_median"] for row in group]
        line, = axis.plot(n, [row["inflation_mean"] for row in group], marker="o", label=label)
        axis.plot(n, [row["order_statistics"] or 0.0 for row in group], linestyle=":", color=line.get_color())
    axis.set_xscale("log")
    axis.set_xlabel("private variants tested (N)")
    axis.set_ylabel("inflation of the published rating (Elo)")
    axis.set_title(f"{sweep.name}: simulated (lines), σ·E[max of N] (dotted)", fontsize=9)
    axis.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def run_command(args: argparse.Namespace) -> int:
    """``ladderlab arena sweep`` (its parser: :mod:`ladderlab.arena.cli`)."""
    import sys

    from ladderlab.utils.atomic import write_atomically

    output_file("--write", args.write)
    if args.write and not args.write.endswith(".md"):
        raise ArgumentError(f"--write {args.write}: name a Markdown page (.md)")
    sweep = load(args.sweep)
    results = run(sweep, args.jobs, args.replications, args.progress)
    if args.replications:
        sweep = Sweep(**{**sweep.__dict__, "replications": args.replications})
    command = args.command_line
    if args.write:
        image = Path(args.write).with_suffix(".png")
        figure(sweep, results, image)
        write_atomically(args.write, page(sweep, results, command).encode())
        print(f"wrote {args.write} and {image}", file=sys.stderr)
    elif args.format == "json":
        print(json.dumps(results, indent=2))
    else:
        print(wrapped_markdown(page(sweep, results, command)), end="")
    return 0
