"""What to deploy: ``ladderlab certify MECHANISM --tune`` searches a mechanism's declared parameters.

For the organiser's holdout size n, budget and scorer, every setting of the mechanism's
search space (``Mechanism._search_space``: every combination of its values, the other
parameters as given) and, for a real-valued scorer, of the declared prediction range
(``PREDICTION_RANGES``) is certified (:func:`ladderlab.certification.certify.certify`, one family: the
scorer's). The parameters that set how fine the releases are (:meth:`ladderlab.mechanism.Mechanism.releasing`:
the Ladder's η, a noise scale, Kaggle's rounding) are searched in the certificate's units, not in
units of B: at the coarsest values that still release an honest improvement of τ, and at
``TOLERANCE_FRACTIONS`` of that improvement, so that every setting tried can release what the
tolerance calls an improvement, on any scorer. A setting is *certified* when the budget is safe
and the certificate's verdict is *safe* (not *safe only because it releases nothing*); its
*honest utility* is how well the released scores rank an honest participant's real progress (the
median Spearman correlation of :mod:`ladderlab.certification.certify`'s honest section; 1 is perfect,
0 a frozen leaderboard). The recommendation is the certified setting with the best utility (the
first in the search order among equals); none when no setting is certified. The trade-off is
written beside the result as a table and a plot.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ladderlab.certification import certify as certification
from ladderlab.certification.certificate_text import DID_NOT_PLAY, SAFE, USELESS, WIDTH, interval_text
from ladderlab.naming import plugin_label
from ladderlab.registry import MECHANISMS
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.tasks import TRAINING_RANGE

PREDICTION_RANGES: list[str | tuple[float, float]] = [TRAINING_RANGE, (-2.0, 2.0), (-1.0, 1.0)]
"""Declared ranges tried for a real-valued scorer, on the battery's standardised labels: the training
labels' range, and two narrower ones (a smaller B, a coarser clip of honest predictions)."""
TOLERANCE_FRACTIONS = (0.125, 0.25, 0.5, 1.0)
"""The improvements a searched setting releases, as fractions of τ (finest first): 1 is the coarsest
setting that releases an honest improvement of τ."""


def settings(mechanism: str, params: dict[str, Any], scorer: str, search_ranges: bool = True,
             improvement: Callable[[Any], float] | None = None) -> list[tuple[dict[str, Any], Any]]:
    """Every (parameters, prediction range) of the search, in order; ``ValueError`` for a mechanism
    that declares no search space. ``search_ranges=False`` (a challenge, whose file declares its
    range): the range is None, not searched. ``improvement``: τ in units of B under a prediction range
    (:func:`ladderlab.certification.certify.releasing_improvement`); the parameters the mechanism's
    ``releasing`` sets are then searched at :data:`TOLERANCE_FRACTIONS` of it instead of their values in B."""
    cls = MECHANISMS.get(mechanism)
    space = cls._search_space
    releasing = set(MECHANISMS.make(mechanism, **params).releasing(1.0)) if improvement is not None else set()
    for name in sorted(set(space) | releasing):
        if name in params:
            values = (f"at {', '.join(map(str, TOLERANCE_FRACTIONS))} of the improvement τ" if name in releasing
                      else ", ".join(map(str, space[name])))
            raise ValueError(f"--param {name}={params[name]}: the search sets {name} ({values}); leave it out, or "
                             "certify one setting without --tune")
    names = sorted(name for name in space if name not in releasing)
    grid = [{**params, **dict(zip(names, values))} for values in itertools.product(*(space[name] for name in names))]
    real = get_scorer(scorer).prediction_kind is PredictionKind.REAL
    ranges = (PREDICTION_RANGES if real else [TRAINING_RANGE]) if search_ranges else [None]
    found = []
    for prediction_range in ranges:
        steps = ([MECHANISMS.make(mechanism, **params).releasing(fraction * improvement(prediction_range))
                  for fraction in TOLERANCE_FRACTIONS] if releasing else [{}])
        for point in grid:
            for step in steps:
                setting = ({**point, **step}, prediction_range)
                if setting not in found:
                    found.append(setting)
    if len(found) < 2:
        raise ValueError(f"mechanism {mechanism!r} declares no parameter to tune (_search_space is empty) and "
                         f"{scorer!r} has no prediction range to choose: there is nothing to search")
    for point, _ in found:
        MECHANISMS.checked(mechanism, point, f"search setting {plugin_label(mechanism, point)}")
    return found


def tune(mechanism: str, params: dict[str, Any] | None = None, n: int = 200, budget: int | None = 1000,
         scorer: str = "zero-one", announce: Callable[[str], None] | None = None, challenge: str | Path | None = None,
         **options: Any) -> dict[str, Any]:
    """Certify every setting of the search at (n, budget, scorer); the table and the recommendation.
    ``options`` go to :func:`ladderlab.certification.certify.certify` (seed, replications, confidence, jobs …).
    Full disclosure's replications, the same for every setting, are played once and shared
    (``reference_store``, a temporary directory for this search). With ``challenge`` (a challenge
    file) every setting is certified on the challenge (:func:`ladderlab.certification.challenge_certify.certify_challenge`):
    its n, scorer and prediction range, and its per-team budget unless ``budget`` is given."""
    say = announce or (lambda line: None)
    if challenge is not None:
        from ladderlab.certification.challenge_certify import (
            certify_challenge,
            challenge_budgets,
            challenge_families,
        )
        from ladderlab.certification.challenge_task import load_challenge

        loaded = load_challenge(challenge)[0]
        n, scorer = int(loaded.split.public_rows.size), loaded.split.public.scorer
        budget = max(challenge_budgets(loaded, None if budget is None else [budget]))
    if budget is None:
        raise ValueError("tune: give a budget, or a challenge whose rules bound a team's submissions")
    tolerance = {key: options[key] for key in ("tau", "unit", "force") if key in options}

    def improvement(prediction_range: Any) -> float:
        if challenge is not None:
            return certification.tolerance_improvement(challenge_families(challenge, budgets=[budget]), **tolerance)
        return certification.tolerance_improvement(certification.families(n, scorer, prediction_range), **tolerance)

    candidates = settings(mechanism, params or {}, scorer, search_ranges=challenge is None, improvement=improvement)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ladderlab-tune-") as full_disclosure:  # what no setting changes
        certificates = []
        for index, (point, prediction_range) in enumerate(candidates, 1):
            say(f"setting {index} of {len(candidates)}: {_setting_label(mechanism, point, prediction_range, scorer)}")
            if challenge is not None:
                certificates.append(certify_challenge(challenge, mechanism, point, [budget], announce=announce,
                                                      reference_store=full_disclosure, **options))
                continue
            certificates.append(certification.certify(mechanism, point, n=n, budgets=[budget], scorer=scorer,
                                                       prediction_range=prediction_range, announce=announce,
                                                       reference_store=full_disclosure, **options))
    for (point, prediction_range), certificate in zip(candidates, certificates):
        label = _setting_label(mechanism, point, prediction_range, scorer)
        rows.append({
            "params": certificate["params"], "prediction_range": _jsonable(prediction_range), "label": label,
            "short": _short_label(point, MECHANISMS.get(mechanism)._search_space, prediction_range, scorer),
            "certified": certificate["safe_budget"] >= budget and certificate["verdict"] == SAFE,
            "verdict": certificate["verdict"],
            "verdicts": {verdict: sum(row["verdict"] == verdict for row in certificate["battery"])
                         for verdict in ("passes", "fails", "inconclusive", DID_NOT_PLAY)},
            "utility": certificate["honest"][0]["rank_correlation"],
            "utility_full_disclosure": certificate["honest"][0]["rank_correlation_full_disclosure"],
            "certificate": certificate,
        })
    certified = [row for row in rows if row["certified"]]
    best = max(certified, key=lambda row: row["utility"]["median"] if row["utility"]["median"] is not None else -2.0,
               default=None)
    return {"mechanism": mechanism, "n": n, "budget": budget, "scorer": scorer,
            "challenge": None if challenge is None else str(challenge), "settings": rows,
            "recommended": None if best is None else rows.index(best)}


def _setting_label(mechanism: str, point: dict[str, Any], prediction_range: Any, scorer: str) -> str:
    label = plugin_label(mechanism, {key: value for key, value in point.items() if value is not None})
    if prediction_range is None or get_scorer(scorer).prediction_kind is not PredictionKind.REAL:
        return label
    where = "training range" if prediction_range == TRAINING_RANGE else f"[{prediction_range[0]:g}, {prediction_range[1]:g}]"
    return f"{label}, {where}"


def _short_label(point: dict[str, Any], space: dict[str, list[Any]], prediction_range: Any, scorer: str) -> str:
    """The searched values only, for the plot's axis."""
    parts = [f"{name}={point[name]:g}" if isinstance(point[name], float) else f"{name}={point[name]}" for name in sorted(space)]
    if prediction_range is not None and get_scorer(scorer).prediction_kind is PredictionKind.REAL:
        parts.append("training" if prediction_range == TRAINING_RANGE else f"[{prediction_range[0]:g}, {prediction_range[1]:g}]")
    return ", ".join(parts)


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def markdown(result: dict[str, Any]) -> str:
    """The trade-off table and the recommendation, for people."""
    confidence = result["settings"][0]["certificate"]["confidence"]
    on = f" on the challenge {result['challenge']}" if result.get("challenge") else ""
    lines = [f"# What to deploy: {result['mechanism']}{on} for n = {result['n']}, a budget of {result['budget']}, "
             f"scored by {result['scorer']}", ""]
    recommended = result["recommended"]
    if recommended is None:
        lines.append(f"**No setting of the search is certified** at this budget ({100 * confidence:g}% confidence for "
                     "each setting's certificate; a setting safe only because it releases nothing is not certified): "
                     "choose a smaller budget, a larger holdout or another mechanism.")
    else:
        row = result["settings"][recommended]
        lines.append(f"**Recommended: {row['label']}**, the certified setting whose released scores rank an honest "
                     f"participant's progress best (median Spearman {_median(row['utility'])}; full disclosure "
                     f"{_median(row['utility_full_disclosure'])}).")
    lines += ["", f"| setting | certified at {result['budget']} | attacks passing / failing / inconclusive / did not "
              "play | honest utility: median Spearman [CI] |", "| --- | --- | --- | --- |"]
    for index, row in enumerate(result["settings"]):
        verdicts = row["verdicts"]
        mark = " (recommended)" if index == recommended else ""
        certified = "yes" if row["certified"] else f"no ({row['verdict']})" if row.get("verdict") == USELESS else "no"
        lines.append(f"| {row['label']}{mark} | {certified} | {verdicts['passes']} / "
                     f"{verdicts['fails']} / {verdicts['inconclusive']} / {verdicts[DID_NOT_PLAY]} | "
                     f"{interval_text(row['utility'])} |")
    return "\n".join(lines) + "\n"


def summary(result: dict[str, Any], width: int = WIDTH) -> str:
    """What ``certify --tune`` prints: the recommendation and a line per setting, at most ``width`` columns."""
    text = markdown(result).split("\n")
    lines = [*textwrap.wrap(text[0].lstrip("# "), width), *textwrap.wrap(text[2].replace("**", ""), width), "",
             f"{'setting':<48} {'certified':<12} {'pass/fail/inc./none':<20} honest Spearman [CI]"]
    for index, row in enumerate(result["settings"]):
        verdicts = row["verdicts"]
        counts = "/".join(str(verdicts[key]) for key in ("passes", "fails", "inconclusive", DID_NOT_PLAY))
        label = row["label"] + (" *" if index == result["recommended"] else "")
        label = label if len(label) <= 48 else label[:47] + "…"
        certified = "yes" if row["certified"] else "no, useless" if row.get("verdict") == USELESS else "no"
        lines.append(f"{label:<48} {certified:<12} {counts:<20} {interval_text(row['utility'], 3)}")
    return "\n".join(lines) + "\n"


def _median(interval: dict[str, float | None]) -> str:
    return "–" if interval["median"] is None else f"{interval['median']:.3f}"


def plot(result: dict[str, Any], path: str | Path) -> Path:
    """The trade-off: each setting's honest utility with its interval, certified settings filled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["settings"]
    figure, axes = plt.subplots(figsize=(max(6.0, 0.45 * len(rows) + 2.0), 4.5))
    for index, row in enumerate(rows):
        interval = row["utility"]
        if interval["median"] is None:
            continue
        low = interval["median"] if interval["lo"] is None else interval["lo"]
        high = interval["median"] if interval["hi"] is None else interval["hi"]
        color = "tab:green" if row["certified"] else "tab:red"
        axes.errorbar(index, interval["median"], yerr=[[interval["median"] - low], [high - interval["median"]]],
                      fmt="o", color=color, mfc=color if row["certified"] else "white", capsize=3)
    if result["recommended"] is not None:
        axes.axvline(result["recommended"], color="tab:green", alpha=0.3, linewidth=6)
    reference = rows[0]["utility_full_disclosure"]["median"]
    if reference is not None:
        axes.axhline(reference, color="grey", linestyle="--", linewidth=1, label="full disclosure")
        axes.legend(loc="lower left", fontsize=8)
    axes.set_xticks(range(len(rows)), [row["short"] for row in rows], rotation=60, ha="right", fontsize=7)
    axes.set_ylabel("honest utility: Spearman(released, final)")
    axes.set_title(f"{result['mechanism']}, n = {result['n']}, budget {result['budget']}, {result['scorer']}: "
                   "filled = certified", fontsize=9)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def write(result: dict[str, Any], out: str | Path, command: str | None = None) -> list[Path]:
    """The result as JSON at ``out``, the table and the recommended certificate as Markdown and the
    plot as PNG beside it; on a challenge, the recommended certificate also as a certificate file of
    its own (``<out>-recommended.json``), which ``ladderlab serve`` reads. Given the ``command``
    that made it, the Markdown ends with its stamp: the code of every setting's certificate
    (:mod:`ladderlab.runs.page_stamps`)."""
    out = Path(out)
    recommended = result["recommended"]
    text = markdown(result)
    if recommended is not None:
        text += "\n" + certification.markdown(result["settings"][recommended]["certificate"])
    code = {key: token for setting in result["settings"] for key, token in setting["certificate"]["code"].items()}
    written = certification.write_certificate({**result, "code": code}, out, text, command)
    if recommended is not None and result.get("challenge"):
        certificate = result["settings"][recommended]["certificate"]
        written += certification.write_certificate(certificate, recommended_path(out), certification.markdown(certificate))
    return [*written, plot(result, out.with_suffix(".png"))]


def recommended_path(out: str | Path) -> Path:
    """Where :func:`write` puts the recommended certificate of a challenge's search written to ``out``."""
    out = Path(out)
    return out.with_name(f"{out.stem}-recommended.json")


def run_command(args: Any, attacks: list[Any], out: Path | None) -> int:
    """``ladderlab certify MECHANISM --tune``: tune, print the table, write the result beside ``--out``."""
    import sys

    from ladderlab.runs.arguments import parse_params
    from ladderlab.seeding import read_secret_seed

    announce = None if args.progress is False else (lambda line: print(line, file=sys.stderr, flush=True))
    challenge = getattr(args, "challenge", None)
    budget = max(args.budgets) if args.budgets else None
    result = tune(args.mechanism, parse_params(args.param), n=args.n, budget=budget, challenge=challenge,
                  scorer=args.scorer or "zero-one", announce=announce, attacks=attacks, replications=args.replications,
                  seed=args.seed, tau=args.tau, epsilon=args.epsilon, confidence=args.confidence, jobs=args.jobs,
                  beta=args.beta, unit=args.unit, useful=args.useful,
                  default_battery=not args.only, isolation=args.isolation, complete=args.complete,
                  secret_seed=read_secret_seed(args.secret_seed) if args.secret_seed else None,
                  progress=args.progress, force=args.force)
    print(summary(result), end="")
    if out:
        written = write(result, out, args.command_line)
        print(f"tuning written to {', '.join(map(str, written))}", file=sys.stderr)
        if challenge and result["recommended"] is not None:
            recommended = result["settings"][result["recommended"]]
            certificate = os.path.relpath(recommended_path(out).resolve(), Path(challenge).resolve().parent)
            allowed = recommended["certificate"]["challenge"]["per_team_budget"]
            rules = (f", and [rules] total = {result['budget']} (the budget certified; the file allows {allowed})"
                     if allowed is None or allowed > result["budget"] else "")
            print(f"to serve the recommendation, set in {challenge}: [mechanism] id = \"{args.mechanism}\", "
                  f"params = {_toml_table(recommended['params'])}, "
                  f"certificate = \"{Path(certificate).as_posix()}\"{rules}", file=sys.stderr)
    return 0


def _toml_table(params: dict[str, Any]) -> str:
    """``params`` as a TOML inline table (a None parameter is left out: TOML has no null)."""
    import json

    return "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in params.items() if value is not None) + " }"

