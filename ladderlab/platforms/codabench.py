"""``ladderlab export codabench``: a Codabench (v2) competition bundle whose scoring program is the relay.

Codabench's compute worker (``compute_worker/compute_worker.py``) lays a results submission out
in ``/app/input/res``, the task's reference data in ``/app/input/ref``, runs the scoring
program's ``metadata.yaml`` ``command:`` in ``/app/program`` and reads ``/app/output/scores.json``
(``{column key: value}``). The container is given no user and no submission id, so the team is
named by its token, which the participant puts in the archive (``ladderlab_token.txt``) beside
the prediction; the service checks it. The token lets its holder submit as the team, here or to
the service directly, under the same caps and mechanism state: a participant sees nothing more
than the leaderboard would show them, and a team that shares its token shares its budget.

The bundle: ``competition.yaml`` (one phase with the challenge's caps, one leaderboard column of
the released value at the release step's precision, outputs and detailed results hidden),
``scoring_program/`` (``metadata.yaml`` and ``score.py``, the relay), ``reference_data/ladderlab.json``
(the relay's settings with the scorer credential: reference data is never shown to participants),
``starting_kit/`` (a sample submission and what the archive holds), the pages and a logo.
"""

from __future__ import annotations

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

PREDICTION_FILE = "predictions.csv"
TOKEN_FILE = "ladderlab_token.txt"
DOCKER_IMAGE = "codalab/codalab-legacy:py39"
"""The image the scoring program runs in: any with Python 3.8 or later (the relay needs nothing else)."""
COMMAND = "python3 /app/program/score.py /app/input /app/output"


def export(challenge: Challenge, out: Path, url: str, token: str, uncertified: bool = False) -> Written:
    written = Written(out)
    column = column_key(challenge)
    rules = challenge.spec.rules
    budget = challenge.per_team_budget()
    phase = {"index": 0, "name": "Public phase", "description": f"Released values only ({rules_text(challenge)})",
             "start": platform_time(rules.start), "tasks": [0], "starting_kit": "starting_kit",
             "execution_time_limit": 600, "hide_output": True, "hide_score_output": True}
    if rules.end is not None:
        phase["end"] = platform_time(rules.end)
    if rules.per_day is not None:
        phase["max_submissions_per_day"] = rules.per_day
    if budget is not None:
        phase["max_submissions"] = budget
    releases_best = type(challenge.mechanism()).releases_best
    competition = {
        "version": 2, "title": challenge.spec.title or challenge.name,
        "description": f"Scored by a certified {challenge.spec.mechanism.id} leaderboard (ladderlab serve)",
        "image": "logo.png", "terms": "pages/terms.md", "docker_image": DOCKER_IMAGE,
        "enable_detailed_results": False, "show_detailed_results_in_submission_panel": False,
        "show_detailed_results_in_leaderboard": False, "make_programs_available": False,
        "can_participants_make_submissions_public": False,
        "pages": [{"title": "Overview", "file": "pages/overview.md"}],
        "phases": [phase],
        "tasks": [{"index": 0, "name": f"{challenge.name} (public rows)", "scoring_program": "scoring_program/",
                   "reference_data": "reference_data/"}],
        "leaderboards": [{"title": "Released values", "key": "main",
                          "submission_rule": "Force_Last" if releases_best else "Force_Best",
                          "columns": [{"title": f"{challenge.split.public.scorer} (released)", "key": column,
                                       "index": 0, "sorting": "desc" if greater_is_better(challenge) else "asc",
                                       "precision": display_decimals(challenge), "hidden": False}]}],
    }
    written.write("competition.yaml", yaml.safe_dump(competition, sort_keys=False), "the bundle's definition")
    written.write("scoring_program/metadata.yaml", yaml.safe_dump({"command": COMMAND}), "the scoring command")
    written.write("scoring_program/score.py", relay_source(), "the relay (ladderlab's scoring program)")
    written.write("reference_data/ladderlab.json",
                  relay_config(challenge, url, token, uncertified, prediction_file=PREDICTION_FILE, token_file=TOKEN_FILE),
                  "the relay's settings and the scorer credential (secret)", mode=0o600)
    written.write("starting_kit/sample_submission.csv", sample_submission(challenge), "a valid prediction")
    written.write("starting_kit/README.md", _participant_text(challenge), "what a submission archive holds")
    written.write("pages/overview.md", _participant_text(challenge), "the competition's page")
    written.write("pages/terms.md", "Scores on the leaderboard are released by a certified mechanism; the final "
                                    "ranking is published by the organiser after the close.\n", "the terms page")
    written.write("logo.png", logo_png(), "a placeholder logo")
    return written


def _participant_text(challenge: Challenge) -> str:
    return (f"# Submitting to {challenge.spec.title or challenge.name}\n\n"
            f"Zip two files, nothing else: `{PREDICTION_FILE}` (every holdout id, as in `sample_submission.csv`) "
            f"and `{TOKEN_FILE}`, your team's token from the organiser. The leaderboard shows the value a certified "
            f"mechanism releases ({challenge.spec.mechanism.id}), never the exact score; {rules_text(challenge)}. "
            "Your token lets anyone who holds it submit as your team: keep it to your team.\n")
