"""A certificate for people: the Markdown ``ladderlab certify --out`` writes, and the summary it prints.

The Markdown opens with the headline, which states safety and utility together (the safe budget,
or that there is none, or that the mechanism is safe only because it releases nothing, and what
honest participants keep), then a line per budget (what the battery says there; ``statements``
carries what else is known at that budget), the units and what each family resampled, the battery's
table, the attacks that did not play, the inconclusive rows, the honest participants' cost, the
theory and the run. The summary (:func:`summary`) is its first lines, each at most 120 columns.
Certificates written before version 3 (τ and ε in units of B, the criterion on medians) are
rendered as they were written (:func:`markdown` reads every version).
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Callable
from typing import Any

from ladderlab.certification.proofs import proven_headline, proven_text
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, TASKS
from ladderlab.runs.scenario import CHALLENGE_TASK
from ladderlab.scoring import get_scorer
from ladderlab.stats.sequential import (
    FAILS,
    INCONCLUSIVE,
    MEDIAN,
    MOST_REPLICATIONS_ESTIMATED,
    PASSES,
    replications_to_decide,
)
from ladderlab.tasks import TRAINING_RANGE

DID_NOT_PLAY = "did not play"
SAFE, USELESS, NOT_SAFE = "safe", "safe only because it releases nothing", "not safe at any budget tested"
"""The certificate's verdicts (:func:`ladderlab.certification.certify.verdict`)."""
ONE_DUEL = ("every replication plays the same duel (the task's data are fixed and neither the attack nor the "
            "mechanism draws from its stream): one duel is no evidence about how often it overfits, so it is "
            "counted once and the point is inconclusive; resample the data (a challenge's certificate does)")
HONEST_MEASURES = ("rank_correlation", "rank_correlation_full_disclosure", "cost", "lberr", "lberr_full_disclosure")
WIDTH = 120
"""The widest line :func:`summary` prints."""


def honest_entries(certificate: dict[str, Any]) -> list[dict[str, Any]]:
    """A certificate's honest participants' entries, of any version (a version-1 certificate's one
    ``honest`` entry as a list of one)."""
    honest = certificate.get("honest")
    if isinstance(honest, dict):
        return [honest]
    if isinstance(honest, list) and all(isinstance(entry, dict) for entry in honest):
        return honest
    raise ValueError(f"the certificate's 'honest' is {type(honest).__name__}, not a list of honest participants' "
                     "entries: it was not written by 'ladderlab certify'")


def markdown(certificate: dict[str, Any]) -> str:
    """The certificate for people, of any version."""
    if certificate.get("certificate_version", 1) < 3:
        return _markdown_before_version_3(certificate)
    c = certificate
    confidence = f"{100 * c['confidence']:g}%"
    lines = [f"# Certificate: {plugin_label(c['mechanism'], c['params'])} on n = {c['n']} public holdout rows", "",
             f"**{headline(c)}**", ""]
    statements = any(entry["statements"] for entry in c["budget_verdicts"])
    lines += ["| budget | against the battery | worst attack |" + (" also |" if statements else ""),
              "| ---: | --- | --- |" + (" --- |" if statements else "")]
    for entry in c["budget_verdicts"]:
        also = f" {'; '.join(statement['text'] for statement in entry['statements']) or '–'} |" if statements else ""
        lines.append(f"| {entry['budget']} | {entry['battery']} | {entry['worst'] or '–'} |{also}")
    lines += ["", _criterion_text(c, confidence), "", _units_table(c)]
    if c.get("proven"):
        lines += ["", proven_text(c["proven"], c["n"])]
    if c.get("tolerance_params"):
        lines += ["", f"Parameters set from the tolerance: {_params_text(c['tolerance_params'])} (in units of B: the "
                  f"coarsest values that release an honest improvement of τ, {c['releasing_improvement']:.3g}·B, on every "
                  "family, where the mechanism's defaults would hide it; --param sets them otherwise)."]
    played_somewhere = {row["attack_label"] for row in c["battery"] if row["verdict"] != DID_NOT_PLAY}
    lines += _played_lines(c, played_somewhere)
    lines += _accounts_lines(c)
    crashed = _crash_lines(c)
    if crashed:
        lines += ["", "Crashes are counted, never dropped: a replication in which the attack raised counts with what it "
                  "submitted before (one that raised before its first submission overfitted nothing).", "", *crashed]
    lines += ["", "## The battery", "",
              f"Per attack and budget, its worst grid point. P(·) are the shares of contests beyond the tolerances with "
              f"their confidence sequences; *tail* is the value beyond which a share β = {c['beta']:g} of contests lies; "
              f"Δ, optimism and lag in the unit ({c['unit']}), medians with {confidence} sign-test intervals.", "",
              "| attack | budget | verdict | worst parameters | replications | P(Δ < −τ) | Δ tail | Δ median "
              "| P(optimism > ε) | optimism tail | lag median | crashed | full disclosure Δ | bound |",
              "| --- | ---: | --- | --- | ---: | --- | ---: | --- | --- | ---: | --- | ---: | ---: | --- |"]
    not_played = []
    for row in c["battery"]:
        if row["verdict"] == DID_NOT_PLAY:
            not_played.append(f"- {row['did_not_play']}")
            if row["attack_label"] in played_somewhere:
                lines.append(f"| {row['attack_label']} | {row['budget']} | did not play | – | {row['replications']} "
                             "| – | – | – | – | – | – | – | – | – |")
            continue
        bound = row["theoretical_bound"]
        reference = row.get("reference_delta")
        lines.append(
            f"| {row['attack_label']} | {row['budget']} | {_verdict_text(row)} | {_params_text(row['worst_params'])} on "
            f"{row['worst_task']} | {row['replications']} | {_probability_text(row['p_delta'])} | "
            f"{_float(row['delta_tail'])} | {interval_text(row['delta'])} | {_probability_text(row['p_optimism'])} | "
            f"{_float(row['optimism_tail'])} | {interval_text(row['lag'])} | {_share(row['crash_share'])} | "
            f"{_float(reference['median']) if reference else '–'} | "
            f"{_bound_text(bound)} |")
    lines += _not_played_lines(not_played)
    lines += _inconclusive_lines(c, f"a share of contests beyond a tolerance sits too close to β = {c['beta']:g} to tell",
                                 lambda row: _outlook_text(row, c))
    lines += ["", "## Cost to honest participants", ""]
    for honest in honest_entries(c):
        lines += [_honest_text(honest, _family_text(c["families"]["honest"], c.get("challenge")), confidence,
                               f" (in the unit, {c['unit']})"), ""]
    lines.pop()
    lines += _theory_lines(c)
    if c.get("field"):
        from ladderlab.certification.field import markdown as field_markdown

        lines += ["", field_markdown(c["field"]).rstrip("\n")]
    lines += ["", "## Run", "",
              f"- {c['replications_used']} replications of the {c['points']} grid points (each at most "
              f"{c['replications']}); battery kept in {c['run_dir']}",
              f"- wall time {c['wall_time_seconds']:.0f} s, CPU time {c.get('cpu_time_counts', 'of this process')} "
              f"{c['cpu_time_seconds']:.0f} s; versions: {json.dumps(c['versions'])}"]
    return "\n".join(lines) + "\n"


def headline(certificate: dict[str, Any]) -> str:
    """The first line: the verdict with the safe budget, and what honest participants keep."""
    c = certificate
    budgets = ", ".join(map(str, c["budgets"]))
    kept = _utility_text(c["utility"])
    if c["verdict"] == NOT_SAFE:
        return (f"Not safe at any budget tested ({budgets}){proven_headline(c.get('proven'))}; honest participants "
                f"keep {kept}")
    if c["verdict"] == USELESS:
        return (f"Safe at {c['safe_budget']} submissions only because it releases nothing: honest participants keep "
                f"{kept}, below a useful {c['utility']['useful']:g}")
    above = [budget for budget in c["budgets"] if budget > c["safe_budget"]]
    return (f"Safe at {c['safe_budget']} submissions per participant" + (f" (not at {above[0]})" if above else "")
            + proven_headline(c.get("proven")) + f"; honest participants keep {kept}")


def _utility_text(utility: dict[str, Any]) -> str:
    """Each honest participant's Spearman correlation under the mechanism [interval], full disclosure's beside."""
    parts = []
    for entry in utility["participants"]:
        who = f"{entry['participant']}: " if len(utility["participants"]) > 1 else ""
        parts.append(f"{who}Spearman {interval_text(entry['rank_correlation'], 2)} between released and final scores "
                     f"(full disclosure {interval_text(entry['rank_correlation_full_disclosure'], 2)})"
                     + ("" if entry["measured"] else ", which does not rank even under full disclosure"))
    return "; ".join(parts) or "nothing measured"


def _criterion_text(c: dict[str, Any], confidence: str) -> str:
    return (f"What it states: up to the safe budget, against every attack of the battery that plays (at every point of "
            f"its strength grid, on every family it can play), at most a share β = {c['beta']:g} of contests overfit "
            f"past τ (Δ < −τ: the leaderboard shows the reported submission better than its final score by more than τ) "
            f"or overstate past ε (the leaderboard error's optimism > ε); τ = {c['tau']:g} and ε = {c['epsilon']:g} "
            f"of {c['units']} (below). Each share is decided by an anytime-valid confidence sequence, every grid point "
            f"replicated until decided (at most {c['replications']} times); the {c['points']} points' verdicts hold "
            f"together at {confidence} confidence (each of the {2 * c['points']} sequences at δ = "
            f"{c['per_sequence_error']:.2g}). A leaderboard that shows an honest improvement late (its lag) costs "
            f"honest participants and is reported, never counted as overfitting. Seed {c['seed']}.")


def _units_table(c: dict[str, Any]) -> str:
    lines = ["| family | task and scorer | constant loss U | B | τ in the scorer's units | τ/B | resampled per replication |",
             "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for name, family in c["families"].items():
        lines.append(f"| {name} | {_family_text(family, c.get('challenge'))} | {family['constant_loss']:.4g} | "
                     f"{family['loss_bound']:.4g} | {family['tau_raw']:.4g} | {family['tau_bound']:.3g} | "
                     f"{family['resampled']} |")
    return "\n".join(lines)


def _accounts_lines(c: dict[str, Any]) -> list[str]:
    lines = []
    if c.get("accounts", 1) > 1:
        lines += ["", f"Every attacker holds {c['accounts']} accounts, each with the budget and its own mechanism state: "
                  f"it probes on {c['accounts'] - 1} of them and submits its final prediction on a fresh one, whose "
                  "release Δ measures."]
        if c.get("link"):
            lines += ["", f"The accounts play under the linking wrapper: {c['link']}"]
    if c.get("challenge"):
        lines += ["", _challenge_text(c["challenge"])]
    return lines


def _crash_lines(c: dict[str, Any]) -> list[str]:
    """A line per attack × budget in whose replications the attack raised, with how often and why."""
    lines = []
    for row in c["battery"]:
        if row.get("crash_share"):
            errors = "; ".join(row.get("crash_errors") or [])
            lines.append(f"- {row['attack_label']} at {row['budget']}: crashed in {_share(row['crash_share'])} of its "
                         f"replications" + (f" ({errors})" if errors else ""))
    return lines


def _inconclusive_lines(c: dict[str, Any], why: str, outlook: Callable[[dict[str, Any]], str]) -> list[str]:
    """The rows left undecided at the maximum (``why``, and each one's ``outlook``) and those stopped."""
    inconclusive = [row for row in c["battery"] if row["verdict"] == INCONCLUSIVE and not row["stopped"]]
    stopped = [row for row in c["battery"] if row["verdict"] == INCONCLUSIVE and row["stopped"]]
    if not inconclusive and not stopped:
        return []
    lines = ["", "## Inconclusive", ""]
    if inconclusive:
        lines += [f"{len(inconclusive)} attack × budget rows were not decided within {c['replications']} replications: "
                  f"{why}. Inconclusive is not a pass; more replications (--replications) may decide them. If the rates "
                  "observed so far held (an estimate: their own intervals are in the table):", "",
                  *map(outlook, inconclusive)]
    if stopped:
        lines += [("" if not inconclusive else "\n") + f"{len(stopped)} attack × budget rows were stopped undecided "
                  "(*stopped*) because an attack had already failed at their budget or a smaller one: the safe budget "
                  "lies below it whatever they show. --complete decides them too."]
    return lines


def _outlook_text(row: dict[str, Any], c: dict[str, Any]) -> str:
    """An inconclusive row's shares and how many replications would likely decide it."""
    rates = (f"P(Δ < −τ) {_probability_text(row['p_delta'])}, P(optimism > ε) {_probability_text(row['p_optimism'])} "
             f"after {row['replications']}")
    if row.get("one_duel"):
        return f"- {row['attack_label']} at {row['budget']}: {ONE_DUEL}"
    outlook = row.get("outlook") or {"verdict": None}
    if outlook["verdict"] is None:
        return (f"- {row['attack_label']} at {row['budget']} ({rates}): at these shares no number of replications "
                f"up to {MOST_REPLICATIONS_ESTIMATED:,} would decide it; a share lies on β")
    would = {PASSES: "pass", FAILS: "fail"}[outlook["verdict"]]
    return (f"- {row['attack_label']} at {row['budget']} ({rates}): would {would} after about "
            f"{outlook['replications']} replications (--replications {outlook['replications']})")


def _played_lines(c: dict[str, Any], played_somewhere: set[str]) -> list[str]:
    """How many of the battery's attacks played, where some never did."""
    attacks = list(dict.fromkeys(row["attack_label"] for row in c["battery"]))
    if len(played_somewhere) == len(attacks):
        return []
    played = [attack for attack in attacks if attack in played_somewhere]
    return ["", f"**{len(played)} of the battery's {len(attacks)} attacks played** ({', '.join(played) or 'none'}); the "
            f"others cannot play {'this task' if c.get('challenge') else 'any family'} (see *Did not play*). A safe "
            "budget says that the attacks that played did not overfit the leaderboard, nothing about the others."]


def _not_played_lines(not_played: list[str]) -> list[str]:
    if not not_played:
        return []
    return ["", "## Did not play", "", "An attack that did not play is no evidence of safety; it is left out of the "
            "verdict at that budget, and out of the table above where it played at no budget.", "",
            *dict.fromkeys(not_played)]


def _theory_lines(c: dict[str, Any]) -> list[str]:
    bounds = {row["theoretical_bound"]["reference"]: row["theoretical_bound"] for row in c["battery"] if row["theoretical_bound"]}
    if not bounds:
        return []
    return ["", "## Theory", "", *(
        f"- {reference}: {bound['statement']} (in units of B, at the largest budget"
        + ("; above 1, so it says nothing here: a leaderboard error never exceeds B)"
           if bound["kind"] == "upper" and bound["value"] >= 1 else ")")
        for reference, bound in bounds.items())]


def _bound_text(bound: dict[str, Any] | None) -> str:
    return "–" if bound is None else f"{bound['kind']} {bound['value']:.3g}·B"


def _verdict_text(row: dict[str, Any]) -> str:
    return {PASSES: "passes", FAILS: "**fails**"}.get(
        row["verdict"], "*inconclusive (stopped)*" if row["stopped"] else "*inconclusive*")


def summary(certificate: dict[str, Any], width: int = WIDTH) -> str:
    """What ``ladderlab certify`` prints: the headline, a line per budget with its worst attack's shares, the
    crashes, what did not play or stayed undecided, each line at most ``width`` columns."""
    c = certificate
    if c.get("certificate_version", 1) < 3:
        return "\n".join(line for paragraph in _markdown_before_version_3(c).split("\n\n")[:2]
                         for line in textwrap.wrap(paragraph.lstrip("# ").replace("**", ""), width)) + "\n"
    title = f"{plugin_label(c['mechanism'], c['params'])} on n = {c['n']} public rows: {headline(c)}."
    units = "; ".join(f"{name} U = {family['constant_loss']:.4g} (τ = {family['tau_raw']:.4g}, {family['tau_bound']:.2g}·B)"
                      for name, family in c["families"].items() if name != "honest")
    lines = [*textwrap.wrap(title, width, subsequent_indent="  "),
             *textwrap.wrap(f"τ = {c['tau']:g}, ε = {c['epsilon']:g} of {c['units']}, β = {c['beta']:g}, "
                            f"{100 * c['confidence']:g}% for the whole certificate: {units}.", width, subsequent_indent="  "),
             "", f"{'budget':>7}  {'battery':<13} {'worst attack':<40} {'P(Δ < −τ)':<18} P(optimism > ε)"]
    for entry in c["budget_verdicts"]:
        worst = next((row for row in c["battery"] if row["budget"] == entry["budget"]
                      and row["attack_label"] == entry["worst"]), None)
        shares = ("", "") if worst is None else (_probability_text(worst["p_delta"]), _probability_text(worst["p_optimism"]))
        label = _clipped(entry["worst"] or "–", 40)
        lines.append(f"{entry['budget']:>7}  {_clipped(entry['battery'], 13):<13} {label:<40} {shares[0]:<18} {shares[1]:<18}"
                     .rstrip())
        lines += [f"{'':9}{_clipped(statement['text'], width - 9)}" for statement in entry["statements"]]
    notes = [line.removeprefix("- ") for line in _crash_lines(c)]
    missing = sorted({row["attack_label"] for row in c["battery"] if row["verdict"] == DID_NOT_PLAY})
    if missing:
        notes.append(f"did not play at some budget: {', '.join(missing)}")
    undecided = [f"{row['attack_label']} at {row['budget']}" for row in c["battery"]
                 if row["verdict"] == INCONCLUSIVE and not row["stopped"]]
    if undecided:
        notes.append(f"inconclusive within {c['replications']} replications: {', '.join(undecided)}")
    if c.get("field"):
        from ladderlab.certification.field import summary_line

        notes.append(summary_line(c["field"]))
    if notes:
        lines.append("")
    for note in notes:
        lines += textwrap.wrap(note, width, subsequent_indent="  ")
    return "\n".join(lines) + "\n"


def _clipped(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _share(share: float | None) -> str:
    return "–" if not share else f"{100 * share:.0f} %"


def _markdown_before_version_3(certificate: dict[str, Any]) -> str:
    """A certificate of version 1 or 2 for people: medians of Δ/B and of the error/B against τ and ε in units of B."""
    c = certificate
    safe = c["safe_budget"]
    confidence = f"{100 * c['confidence']:g}%"
    headline = f"**Safe submission budget: {safe if safe else 'none of the budgets tested'}**"
    lines = [
        f"# Certificate: {plugin_label(c['mechanism'], c['params'])} on n = {c['n']} holdout points",
        "",
        (f"{headline} (the largest budget up to which every attack that plays keeps, at its worst parameters, "
         f"median Δ > −{c['tau']:g}·B and median leaderboard error < {c['epsilon']:g}·B, each verdict at "
         f"{confidence} confidence; budgets tested: {', '.join(map(str, c['budgets']))}; every grid point replicated "
         f"until decided, at most {c['replications']} times; seed {c['seed']})."),
        "",
        "B is the bound of the per-sample loss, the unit of Blum & Hardt's theorems: "
        + "; ".join(f"{name}: {_family_text(family, c.get('challenge'))}" for name, family in c["families"].items()
                    if name != "honest") + ".",
    ]
    played_somewhere = {row["attack_label"] for row in c["battery"] if row["verdict"] != DID_NOT_PLAY}
    lines += _played_lines(c, played_somewhere)
    lines += _accounts_lines(c)
    broken = "; ".join(
        f"{row['attack']} with {_params_text(row['worst_params'])} on {row['worst_task']} ({row['verdict']}: Δ/B median "
        f"{_float(row['delta_median'])}, lb error/B median {_float(row['lberr_median'])})" for row in c.get("broken_by", []))
    if broken:
        lines += ["", f"Not safe at budget {c['broken_by'][0]['budget']}: {broken}."]
    lines += [
        "",
        f"| attack | budget | verdict | worst parameters | replications | Δ/B median [{confidence} CI] | Δ raw median "
        f"| P(Δ/B < −τ) [{confidence} CS] | lb error/B median [{confidence} CI] | lb error raw "
        f"| P(lb error/B > ε) [{confidence} CS] | full disclosure Δ/B | bound |",
        "| --- | ---: | --- | --- | ---: | --- | ---: | --- | --- | ---: | --- | ---: | --- |",
    ]
    not_played = []
    for row in c["battery"]:
        played = row["verdict"] != DID_NOT_PLAY
        if not played:
            not_played.append(f"- {row['did_not_play']}")
            if row["attack_label"] not in played_somewhere:
                continue
            lines.append(f"| {row['attack_label']} | {row['budget']} | did not play | – | {row['replications']} "
                         "| – | – | – | – | – | – | – | – |")
            continue
        bound = row["theoretical_bound"]
        bound_text = "–" if bound is None else f"{bound['kind']} {bound['value']:.3g}"
        verdict = {PASSES: "passes", FAILS: "**fails**"}.get(
            row["verdict"], "*inconclusive (stopped)*" if row["stopped"] else "*inconclusive*")
        reference = row.get("reference_delta")
        lines.append(
            f"| {row['attack_label']} | {row['budget']} | {verdict} | {_params_text(row['worst_params'])} on "
            f"{row['worst_task']} | {row['replications']} | {interval_text(row['delta'])} | "
            f"{_float(row['delta_raw']['median'])} | {_probability_text(row['p_delta'])} | {interval_text(row['lberr'])} | "
            f"{_float(row['lberr_raw']['median'])} | {_probability_text(row['p_lberr'])} | "
            f"{_float(reference['median']) if reference else '–'} | "
            f"{bound_text} |")
    lines += _not_played_lines(not_played)
    lines += _inconclusive_lines(c, f"their median sits too close to a threshold to tell at {confidence} confidence",
                                 lambda row: _legacy_outlook_text(row, c["tau"], c["epsilon"], c["confidence"]))
    lines += ["", "## Cost to honest participants", ""]
    for honest in honest_entries(c):
        lines += [_honest_text(honest, c["families"]["honest"]["task"], confidence, "/B"), ""]
    lines.pop()
    lines += _theory_lines(c)
    lines += ["", "## Run", "",
              f"- {c['replications_used']} replications of the grid points (each at most {c['replications']}); "
              f"battery kept in {c['run_dir']}",
              f"- wall time {c['wall_time_seconds']:.0f} s, CPU time {c.get('cpu_time_counts', 'of this process')} "
              f"{c['cpu_time_seconds']:.0f} s; "
              f"versions: {json.dumps(c['versions'])}"]
    return "\n".join(lines) + "\n"


def _honest_text(honest: dict[str, Any], task: str, confidence: str, unit: str) -> str:
    """One honest participant's cost (an entry of :func:`honest_entries`): how well the released scores
    rank its submissions' final-set scores under the mechanism and under full disclosure."""
    participant = honest["participant"]
    attack_id = honest.get("id") or participant.partition("(")[0]
    summary = ATTACKS.get(attack_id).summary().rstrip(".") if attack_id in ATTACKS.ids() else ""
    described = f" ({summary[:1].lower()}{summary[1:]})" if summary else ""
    measured = ("measured once (every replication plays the same: see below)" if honest.get("deterministic")
                else f"median over {honest['replications']} replications [{confidence} CI]")
    text = (f"Honest participant **{participant}**{described}, on {task}. Spearman correlation between the released "
            f"and the final-set scores of its submissions, {measured}: "
            f"{interval_text(honest['rank_correlation'])} under the mechanism, "
            f"{interval_text(honest['rank_correlation_full_disclosure'])} under full disclosure (paired cost "
            f"{interval_text(honest['cost'])}); its leaderboard error{unit} {interval_text(honest['lberr'])} "
            f"(full disclosure {interval_text(honest['lberr_full_disclosure'])})"
            + (f", of which lag (improvements released late or never, the honest cost) {interval_text(honest['lag'])} "
               f"and optimism {interval_text(honest['optimism'])}" if "lag" in honest else "") + ".")
    if honest.get("deterministic"):
        text += (" Nothing in this play is random (the task's data are fixed, as a challenge's are, and neither the "
                 "participant nor the mechanisms drew from their streams), so every replication gives these values: "
                 "they were measured once.")
    elif honest["replications"] > 1 and all(honest[key]["lo"] == honest[key]["hi"] for key in HONEST_MEASURES):
        text += (f" All {honest['replications']} replications gave the same values: nothing in this play is "
                 "random (the task's data are fixed, as a challenge's are), so these are one measurement, "
                 "not intervals over replications.")
    return text


def _legacy_outlook_text(row: dict[str, Any], tau: float, epsilon: float, confidence: float) -> str:
    """An inconclusive row's rates (a version-2 certificate's) and how many replications would likely decide it."""
    rates = (f"P(Δ/B < −{tau:g}) {_probability_text(row['p_delta'])}, "
             f"P(lb error/B > {epsilon:g}) {_probability_text(row['p_lberr'])} after {row['replications']}")
    outlook = replications_to_decide(row["p_delta"]["estimate"], row["p_lberr"]["estimate"], row["n_ok"],
                                     (1.0 - confidence) / 2.0, MEDIAN)
    outlook = {"verdict": outlook.verdict, "replications": outlook.replications}
    if outlook["verdict"] is None:
        return (f"- {row['attack_label']} at {row['budget']} ({rates}): at these rates no number of replications "
                f"up to {MOST_REPLICATIONS_ESTIMATED:,} would decide it; its median lies on the threshold")
    would = {PASSES: "pass", FAILS: "fail"}[outlook["verdict"]]
    return (f"- {row['attack_label']} at {row['budget']} ({rates}): would {would} after about "
            f"{outlook['replications']} replications (--replications {outlook['replications']})")


def _challenge_text(challenge: dict[str, Any]) -> str:
    """The challenge a certificate was made for (``certify --challenge``)."""
    declared = challenge["prediction_range"]
    where = "" if declared is None else f", predictions clipped into [{declared[0]:g}, {declared[1]:g}]"
    names = challenge.get("class_names")
    classes = "" if names is None else " of the classes " + ", ".join(f"{name} ({index})" for index, name in enumerate(names))
    return (f"For the challenge **{challenge['name']}** ({challenge['file']}): {challenge['task_type']}{classes}, "
            f"scored by {challenge['scorer']}{where}, {challenge['n']} public and {challenge['n_final']} final holdout rows, "
            f"a per-team budget of {challenge['per_team_budget']}; data hash {challenge['task_identity'][:16]}… "
            "('ladderlab serve' accepts this certificate only for these data).")


def _family_text(family: dict[str, Any], challenge: dict[str, Any] | None = None) -> str:
    """The task of a family, by the challenge's name for ``certify --challenge``, with its scorer and B."""
    params = family["params"]
    scorer = family.get("scorer") or params.get("scorer") or get_scorer(TASKS.get(family["task"]).default_scorer).name
    declared = params.get("prediction_range")
    where = "" if declared is None else (" clipped into the training labels' range" if declared == TRAINING_RANGE
                                         else f" clipped into [{declared[0]:g}, {declared[1]:g}]")
    task = f"the challenge {challenge['name']}" if challenge and family["task"] == CHALLENGE_TASK else family["task"]
    return f"{task} scored by {scorer}{where}, B = {family['loss_bound']:.4g}"


def _params_text(params: dict[str, Any] | None) -> str:
    if not params:
        return "–"
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())


def _float(value: float | None, digits: int = 4) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def interval_text(interval: dict[str, float | None] | None, digits: int = 4) -> str:
    if not interval or interval.get("median") is None:
        return "–"
    return (f"{_float(interval['median'], digits)} [{_float(interval['lo'], digits)}, "
            f"{_float(interval['hi'], digits)}]")


def _probability_text(probability: dict[str, float]) -> str:
    return f"{probability['estimate']:.2f} [{probability['lo']:.2f}, {probability['hi']:.2f}]"


