"""``ladderlab export evalai``: an EvalAI challenge configuration whose ``evaluation_script`` is the relay.

EvalAI's submission worker (``scripts/workers/submission_worker.py``) imports the challenge's
``evaluation_script`` package and calls ``evaluate(test_annotation_file, user_submission_file,
phase_codename, submission_metadata=…)`` with the submission's serialised record (``id``,
``participant_team``, …); the result ``{"result": [{split: {metric: value}}]}`` fills the
leaderboard. The relay takes the team from ``participant_team`` and the idempotency key from
``id``; the phase's annotation file is the relay's settings, so the labels stay with the
organiser's service.

``remote=True`` writes the remote-evaluation variant (``remote_evaluation: True``): the host's own
machine runs EvalAI-Starters' ``remote_challenge_evaluation`` worker, whose ``evaluate`` is
:func:`~ladderlab.platforms.relay.evaluate_remote` talking to the service on that machine; EvalAI
then holds neither the labels nor the scorer credential (its annotation file says only that the
phase is scored remotely).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import yaml

from ladderlab.certification.challenge import Challenge
from ladderlab.platforms.export import (
    Written,
    column_key,
    display_decimals,
    greater_is_better,
    logo_png,
    platform_time,
    relay_config,
    relay_source,
    rules_text,
    sample_submission,
)

PHASE = "public"
SPLIT = "public"
PUBLIC_VISIBILITY = 3
"""EvalAI's ``visibility`` of a phase split everyone sees (1: the host only, 2: the host and the team)."""
EVALUATION_INIT = "from .main import evaluate  # noqa: F401\n"
REMOTE_EVALUATE = ("# EvalAI-Starters' remote_challenge_evaluation/main.py imports this; call it as\n"
                   "# evaluate(submission_file_path, challenge_phase['codename'], submission_metadata=submission)\n"
                   "from ladderlab_relay import evaluate_remote as evaluate  # noqa: F401\n")


def export(challenge: Challenge, out: Path, url: str, token: str, uncertified: bool = False,
           remote: bool = False) -> Written:
    written = Written(out)
    column = column_key(challenge)
    rules = challenge.spec.rules
    budget = challenge.per_team_budget()
    annotation = "annotations/ladderlab.json"
    settings = relay_config(challenge, url, token, uncertified, phases=[PHASE], split=SPLIT)
    if remote:
        written.write("remote_challenge_evaluation/ladderlab.json", settings,
                      "the relay's settings and the scorer credential (secret, on your machine)", mode=0o600)
        written.write("remote_challenge_evaluation/ladderlab_relay.py", relay_source(), "the relay")
        written.write("remote_challenge_evaluation/evaluate.py", REMOTE_EVALUATE, "the remote worker's evaluate")
        written.write(annotation, json.dumps({"scored_remotely": True}) + "\n", "the phase's annotation (no secret)")
    else:
        written.write(annotation, settings, "the relay's settings and the scorer credential (secret)", mode=0o600)
    script = io.BytesIO()
    with zipfile.ZipFile(script, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__init__.py", EVALUATION_INIT)
        archive.writestr("main.py", relay_source())
    written.write("evaluation_script/__init__.py", EVALUATION_INIT, "the evaluation package")
    written.write("evaluation_script/main.py", relay_source(), "the relay (evaluate)")
    written.write("evaluation_script.zip", script.getvalue(), "the evaluation package, zipped as EvalAI reads it")
    phase = {"id": 1, "name": "Public phase", "description": "templates/phase.html", "leaderboard_public": True,
             "is_public": True, "is_submission_public": False, "start_date": platform_time(rules.start),
             "end_date": platform_time(rules.end), "test_annotation_file": annotation, "codename": PHASE,
             "disable_logs": True, "max_submissions_per_day": rules.per_day or 100_000,
             "max_submissions_per_month": budget or 100_000, "max_submissions": budget or 100_000}
    config = {
        "title": challenge.spec.title or challenge.name,
        "short_description": f"Scored by a certified {challenge.spec.mechanism.id} leaderboard",
        "description": "templates/description.html", "evaluation_details": "templates/evaluation_details.html",
        "terms_and_conditions": "templates/terms_and_conditions.html", "image": "logo.png",
        "submission_guidelines": "templates/submission_guidelines.html", "evaluation_script": "evaluation_script.zip",
        "remote_evaluation": remote, "start_date": platform_time(rules.start), "end_date": platform_time(rules.end),
        "published": False,
        "leaderboard": [{"id": 1, "schema": {"labels": [column], "default_order_by": column}}],
        "challenge_phases": [phase],
        "dataset_splits": [{"id": 1, "name": "Public rows", "codename": SPLIT}],
        "challenge_phase_splits": [{"challenge_phase_id": 1, "leaderboard_id": 1, "dataset_split_id": 1,
                                    "visibility": PUBLIC_VISIBILITY,
                                    "leaderboard_decimal_precision": display_decimals(challenge),
                                    "is_leaderboard_order_descending": greater_is_better(challenge)}],
    }
    written.write("challenge_config.yaml", yaml.safe_dump(config, sort_keys=False), "the challenge configuration")
    page = (f"<p>Submit a CSV of every holdout id, as <code>sample_submission.csv</code>. The leaderboard shows the "
            f"value a certified mechanism releases ({challenge.spec.mechanism.id}), never the exact score; "
            f"{rules_text(challenge)}.</p>\n")
    for name in ("description", "evaluation_details", "terms_and_conditions", "submission_guidelines", "phase"):
        written.write(f"templates/{name}.html", page, "a page")
    written.write("sample_submission.csv", sample_submission(challenge), "a valid prediction")
    written.write("logo.png", logo_png(), "a placeholder logo")
    return written
