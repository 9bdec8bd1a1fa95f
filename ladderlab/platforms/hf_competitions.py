"""``ladderlab export hf-competitions``: a Hugging Face competition's custom ``metric.py``, the relay.

Hugging Face competitions (``competitions/compute_metrics.py``) downloads ``metric.py`` from the
private competition repository, imports it and calls ``compute(params)`` with the competition's
``EvalParams`` (``competition_id``, ``team_id``, ``submission_id``, the organiser's ``token``, …);
the returned ``public_score`` and ``private_score`` are stored in the repository and shown. The
relay downloads its settings (``ladderlab.json``, put beside ``metric.py`` in the private
repository) and the submission, and returns the released value as both scores: no exact score
is stored before the close, and the final ranking is the service's.
"""

from __future__ import annotations

import json
from pathlib import Path

from ladderlab.certification.challenge import Challenge
from ladderlab.platforms.export import (
    Written,
    column_key,
    greater_is_better,
    platform_time,
    relay_config,
    relay_source,
    sample_submission,
)


def export(challenge: Challenge, out: Path, url: str, token: str, uncertified: bool = False) -> Written:
    written = Written(out)
    rules = challenge.spec.rules
    selection = rules.selection if isinstance(rules.selection, int) else 1
    written.write("metric.py", relay_source(), "the relay (compute), for the private competition repository")
    written.write("ladderlab.json", relay_config(challenge, url, token, uncertified),
                  "the relay's settings and the scorer credential (secret: private repository only)", mode=0o600)
    conf = {"EVAL_METRIC": "custom", "SCORING_METRIC": column_key(challenge),
            "EVAL_HIGHER_IS_BETTER": int(greater_is_better(challenge)),
            "SUBMISSION_LIMIT": rules.per_day or challenge.per_team_budget() or 1000, "SELECTION_LIMIT": selection,
            "END_DATE": platform_time(rules.end)[:10], "SUBMISSION_ID_COLUMN": challenge.spec.labels.id_column,
            "SUBMISSION_COLUMNS": sample_submission(challenge).splitlines()[0],
            "SUBMISSION_ROWS": int(challenge.ids.size), "COMPETITION_TYPE": "generic"}
    written.write("conf.json", json.dumps(conf, indent=2) + "\n", "the keys of conf.json that the metric needs")
    written.write("sample_submission.csv", sample_submission(challenge), "a valid prediction")
    return written
