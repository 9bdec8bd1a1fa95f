"""Certify a mechanism for the organiser's own challenge: ``ladderlab certify MECHANISM --challenge FILE``.

The battery (:mod:`ladderlab.certification.certify`) plays on one task family, the challenge itself
(:class:`ladderlab.certification.challenge_task.ChallengeTask`, its data pinned by their hash): at the
challenge's n (its public holdout size), its per-team budget (its rules' ``total``, or
``per_day`` times the days from ``start`` to ``end``; ``--budgets`` overrides), its scorer
and its prediction range, with every attack that can play it (the others are listed as not
playing, with their reason). Its replications resample what is random in practice
(:func:`resampled_by`): the public/final split when the organiser draws it, and a bootstrap of the
public and of the final rows, besides the attacks' and the mechanism's randomness. The honest participants (``--honest``, else the challenge's
``[certify] honest``, else ``improving`` with one submission a day over the challenge's days, at
most a team's budget) play the challenge too when every one of them can (it publishes training
data with features), else certify's synthetic honest task for the challenge's scorer; one that
would make more submissions than a team's budget is refused before the battery.

The certificate records the challenge (``challenge``: name, data hash, scorer, prediction
range, task type, label set and class names, n, budget), and :func:`ladderlab.certification.challenge.certificate_problems` accepts a
certificate that records a challenge only for a challenge with the same data hash, so that
``ladderlab serve`` accepts it for these data and refuses it for other labels or another scorer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ladderlab.certification import certify
from ladderlab.certification.challenge import Challenge
from ladderlab.certification.challenge_task import ChallengeTask, load_challenge
from ladderlab.naming import plugin_label
from ladderlab.registry import ATTACKS, MECHANISMS
from ladderlab.runs.duel import incompatibility
from ladderlab.utils.locations import anchored

FAMILY = "challenge"


def honest_participants(challenge: Challenge, given: list[certify.AttackSpec], budgets: list[int]) -> list[certify.AttackSpec]:
    """The honest participants to measure: ``given`` (``--honest``), else the challenge's
    (:meth:`ladderlab.certification.challenge.Challenge.honest_participants`: its ``[certify] honest``, else
    ``improving`` a day at a time over its schedule, the largest of ``budgets`` standing in for a
    budget the rules do not set)."""
    if given:
        return given
    return [certify.AttackSpec(attack_id, params) for attack_id, params in challenge.honest_participants(max(budgets))]


def task_families(challenge: Challenge, identity: str, path: str | Path,
                  honest: list[certify.AttackSpec]) -> dict[str, dict[str, Any]]:
    """The battery's task families: the challenge (at ``path`` as the organiser named it, anchored at
    the working directory: :mod:`ladderlab.utils.locations`), and the honest participants' task (the
    challenge if every one of ``honest`` can play it, else certify's for the challenge's scorer)."""
    entry = {"id": ChallengeTask.id, "params": {"path": anchored(Path.cwd(), str(path)), "sha256": identity,
                                                "resample": resampled_by(challenge)}}
    if all(ATTACKS.make(spec.id, **(spec.pinned or {})).incompatibility(challenge.split.public) is None
           for spec in honest):
        return {FAMILY: entry, "honest": entry}
    n = int(challenge.split.public_rows.size)
    try:
        synthetic = certify.families(n, challenge.split.public.scorer)
    except ValueError:  # a scorer no synthetic family plays (class-probability rows): a 0/1 task
        synthetic = certify.families(n)
    return {FAMILY: entry, "honest": synthetic["honest"]}


def resampled_by(challenge: Challenge) -> str:
    """What a certificate's replications of the challenge resample (:data:`ladderlab.certification.challenge_task.RESAMPLING`):
    the split as well when the organiser draws it (``split.public_fraction``), else a bootstrap within the
    organiser's split; never nothing, or a deterministic attack would play one duel in every replication."""
    return "split" if challenge.spec.split.public_fraction is not None else "bootstrap"


def challenge_budgets(challenge: Challenge, budgets: list[int] | None) -> list[int]:
    """``budgets`` if given, else the most submissions one team can make under the rules."""
    if budgets:
        return budgets
    budget = challenge.per_team_budget()
    if budget is None:
        raise ValueError(f"{challenge.path}: rules: nothing bounds a team's submissions (set rules.total, or "
                         "rules.per_day with start and end), so there is no budget to certify; give --budgets")
    return [budget]


def check_certifiable(challenge: Challenge, mechanism: str, params: dict[str, Any]) -> None:
    """``ValueError`` naming the challenge key to set when its scorer is unbounded under its
    prediction range, or when the mechanism cannot use the scorer."""
    if certify.loss_bound(challenge.split.public) is None:
        raise ValueError(f"{challenge.path}: prediction_range: the scorer {challenge.split.public.scorer!r} is unbounded without a "
                         "declared prediction range, and a certificate needs a bounded loss (its B); set "
                         "prediction_range = [low, high] in the challenge file")
    reason = incompatibility(challenge.split, MECHANISMS.make(mechanism, **params), None)
    if reason:
        raise ValueError(f"{challenge.path}: scorer: {reason}")


def record(challenge: Challenge, identity: str, budgets: list[int], path: str | Path) -> dict[str, Any]:
    """What the certificate says about the challenge it was made for (``path`` as the organiser named it)."""
    public = challenge.split.public
    return {
        "name": challenge.name,
        "file": str(path),
        "task_identity": identity,
        "task_type": public.task_type,
        "scorer": public.scorer,
        "classes": None if public.classes is None else public.classes.tolist(),
        "class_names": None if challenge.class_names is None else list(challenge.class_names),
        "prediction_range": None if public.prediction_range is None else list(public.prediction_range),
        "n": int(challenge.split.public_rows.size),
        "n_final": int(challenge.split.final_rows.size),
        "per_team_budget": challenge.per_team_budget(),
        "budgets": budgets,
    }


def challenge_families(path: str | Path, honest: list[certify.AttackSpec] | None = None,
                       budgets: list[int] | None = None) -> dict[str, dict[str, Any]]:
    """The battery's task families for the challenge at ``path`` (:func:`task_families`), with its honest
    participants (:func:`honest_participants`)."""
    challenge, identity = load_challenge(path)
    specs = honest_participants(challenge, honest or [], challenge_budgets(challenge, budgets))
    return task_families(challenge, identity, path, specs)


def certify_challenge(path: str | Path, mechanism: str | None = None, params: dict[str, Any] | None = None,
                      budgets: list[int] | None = None, honest: list[str | certify.AttackSpec] | None = None,
                      **options: Any) -> dict[str, Any]:
    """The certificate of ``mechanism`` (default: the challenge's own, with its parameters) on the
    challenge at ``path``, measuring the cost to ``honest`` (default: the challenge's honest
    participants, :func:`honest_participants`), each held to a team's budget; ``options`` as
    :func:`ladderlab.certification.certify.certify` takes them (not ``n``, ``scorer`` or ``prediction_range``,
    which are the challenge's)."""
    if mechanism is not None:
        MECHANISMS.checked(mechanism, params or {})
    challenge, identity = load_challenge(path)
    if mechanism is None:
        mechanism, params = challenge.spec.mechanism.id, dict(challenge.spec.mechanism.params)
    params = params or {}
    budgets = challenge_budgets(challenge, budgets)
    check_certifiable(challenge, mechanism, params)
    specs = honest_participants(challenge, [spec if isinstance(spec, certify.AttackSpec) else certify.parse_honest(spec)
                                            for spec in honest or []], budgets)
    families = task_families(challenge, identity, path, specs)
    certify.honest_plays(specs, families["honest"], challenge.per_team_budget(),
                         source=("--honest" if honest else f"{path}: certify.honest" if challenge.spec.certify.honest
                                 else "the default honest participant"))

    def name_the_challenge(certificate: dict[str, Any]) -> None:
        certificate["challenge"] = record(challenge, identity, budgets, path)
        for family in certificate["families"].values():  # the challenge file as the organiser named it
            if family["task"] == ChallengeTask.id:
                family["params"]["path"] = str(path)

    return certify.certify(mechanism, params, n=int(challenge.split.public_rows.size), budgets=budgets,
                           task_families=families, amend=name_the_challenge, honest=specs, **options)


def refuse_decided_options(args: argparse.Namespace) -> None:
    """Refuse the options of ``ladderlab certify --challenge FILE`` that the challenge decides
    (n, scorer, prediction range) or that do not combine with it (``--competition``)."""
    for option, value in (("n", args.n), ("scorer", args.scorer), ("prediction-range", args.prediction_range)):
        if value is not None:
            shown = " ".join(value) if isinstance(value, list) else value
            raise ValueError(f"--{option} {shown}: with --challenge the challenge decides it; leave it out")
    if args.competition:
        raise ValueError("--competition does not combine with --challenge yet; certify the challenge without it")


def run_command(args: argparse.Namespace, attacks: list[certify.AttackSpec], out: Path | None,
                params: dict[str, Any], **options: Any) -> dict[str, Any]:
    """``ladderlab certify MECHANISM --challenge FILE``: refuse the options the challenge decides,
    say when the mechanism is not the challenge's, and certify."""
    refuse_decided_options(args)
    challenge = load_challenge(args.challenge)[0]
    own = challenge.spec.mechanism
    if args.mechanism == own.id and not params:
        params = dict(own.params)
    if args.mechanism != own.id or params != own.params:
        print(f"ladderlab: note: {args.challenge} runs {own.id} with {own.params}; 'ladderlab serve' accepts this "
              f"certificate of {args.mechanism} with {params} only once the challenge's [mechanism] is the same",
              file=sys.stderr)
    honest = [certify.parse_honest(text) for text in args.honest]
    own_honest = challenge.honest_participants(max(challenge_budgets(challenge, args.budgets)))
    if honest and [(spec.id, spec.pinned or {}) for spec in honest] != own_honest:
        print(f"ladderlab: note: {args.challenge} measures the cost to honest participants with "
              f"{', '.join(plugin_label(*participant) for participant in own_honest)}; 'ladderlab serve' accepts this "
              f"certificate of {', '.join(spec.label for spec in honest)} only once its [certify] honest is the same",
              file=sys.stderr)
    return certify_challenge(args.challenge, args.mechanism, params, args.budgets, honest, attacks=attacks, **options)
