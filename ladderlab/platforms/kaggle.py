"""``ladderlab export kaggle``: a self-contained Kaggle custom metric for a stateless mechanism.

Kaggle calls ``score(solution, submission, row_id_column_name) -> float`` on the public rows for
the public leaderboard and on the private rows for the private one; every column of the host's
solution file reaches it except ``Usage``; only a ``ParticipantVisibleError``'s message is shown
to participants (Kaggle's metric notebook template). The scorer knows no team and keeps nothing
between submissions, so only a mechanism whose release is a function of the submission alone
(``Mechanism.stateless``: rounding, noise keyed by a hash of the prediction) can run there; a
stateful one (the Ladders, fresh noise) is refused with the reason.

The metric ships ladderlab's own scorer, validation and stateless release
(:mod:`ladderlab.scoring`, :mod:`ladderlab.validation`, :mod:`ladderlab.engines.stateless`, and
what they import) as their source, unchanged but for the package's name: it releases what
``ladderlab serve`` releases for the same prediction, bit for bit, with the key the service draws
from its secret (one key for all teams). The key is a column of the solution file, which Kaggle
never shows to participants, never a line of the metric. On the private rows the metric returns
the exact private score, which Kaggle shows only after the close, as the service does.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from ladderlab.certification.challenge import Challenge
from ladderlab.platforms.export import ExportError, Written, sample_submission
from ladderlab.scoring import get_scorer
from ladderlab.seeding import read_secret_seed

EMBEDDED = ("ladderlab.utils.locations", "ladderlab.naming", "ladderlab.scoring", "ladderlab.validation",
            "ladderlab.engines.noise", "ladderlab.engines.stateless")
"""ladderlab's modules the metric carries, in import order."""
EMBEDDED_ROOT = "_ladderlab_metric"
SPLIT_COLUMN, POSITION_COLUMN, KEY_COLUMN = "ladderlab_split", "ladderlab_position", "ladderlab_key"


def stateless_problem(challenge: Challenge) -> str | None:
    """Why the challenge's mechanism cannot run as a Kaggle metric (None: it can)."""
    mechanism = challenge.mechanism()
    if type(mechanism).stateless:
        return None
    from ladderlab.registry import MECHANISMS

    stateless = [name for name in MECHANISMS.ids() if MECHANISMS.get(name).stateless]
    return (f"mechanism {mechanism.id!r} is not stateless: its releases depend on the team's earlier submissions or on "
            "a random stream they advance, and a Kaggle metric gets neither the team nor any memory of earlier "
            f"submissions; stateless mechanisms: {', '.join(stateless)} (or deploy on a platform the service scores "
            "for: codabench, evalai, hf-competitions)")


def recipe(challenge: Challenge, secret_seed: int) -> dict[str, Any]:
    """The release recipe of the mechanism as ``ladderlab serve`` binds it under ``secret_seed``
    (:func:`ladderlab.serve.replay.fresh_state`, the shared state: one key for all teams)."""
    from ladderlab.serve.replay import SHARED, fresh_state

    return fresh_state(challenge, secret_seed, SHARED).leaderboard.mechanism.release_recipe()


def export(challenge: Challenge, out: Path, secret_path: Path) -> Written:
    problem = stateless_problem(challenge)
    if problem is not None:
        raise ExportError(f"{challenge.path}: {problem}")
    rule = recipe(challenge, read_secret_seed(secret_path))
    key = rule.pop("key", "")
    written = Written(out)
    written.write("metric.py", metric_source(challenge, rule), "the custom metric (a Kaggle metric notebook's code)")
    written.write("solution.csv", solution_csv(challenge, key),
                  "the solution file: labels, Usage and the noise key (secret: upload it as the host)", mode=0o600)
    written.write("sample_submission.csv", sample_submission(challenge), "a valid prediction")
    return written


def solution_csv(challenge: Challenge, key: str) -> str:
    """Every holdout row: the id, its label as the labels file names it, Kaggle's ``Usage``, and the
    metric's own columns (the split, the row's place in the published order, the key)."""
    import pandas as pd

    labels = challenge.split.y_holdout
    names = challenge.class_names
    shown = [names[int(label)] for label in labels] if names is not None else [f"{label:.17g}" for label in labels]
    public = np.zeros(challenge.ids.size, dtype=bool)
    public[challenge.split.public_rows] = True
    table = pd.DataFrame({challenge.spec.labels.id_column: challenge.ids, challenge.spec.labels.label_column: shown,
                          "Usage": np.where(public, "Public", "Private"),
                          SPLIT_COLUMN: np.where(public, "public", "final"),
                          POSITION_COLUMN: np.arange(challenge.ids.size), KEY_COLUMN: key})
    return table.to_csv(index=False)


def metric_source(challenge: Challenge, rule: dict[str, Any]) -> str:
    """The metric: the embedded modules, the challenge's settings and ``score``."""
    public = challenge.split.public
    classes = None if public.classes is None else public.classes.tolist()
    settings = {"challenge": challenge.name, "mechanism": challenge.spec.mechanism.id,
                "params": challenge.spec.mechanism.params, "scorer": public.scorer,
                "prediction_range": None if public.prediction_range is None else list(public.prediction_range),
                "classes": classes, "class_names": None if challenge.class_names is None else list(challenge.class_names),
                "label_column": challenge.spec.labels.label_column, "public_rows": int(challenge.split.public_rows.size),
                "recipe": rule}
    sources = "".join(f"SOURCES[{name!r}] = {_literal(_embedded(name))}\n\n" for name in EMBEDDED)
    return METRIC_TEMPLATE.format(challenge=challenge.name, mechanism=challenge.spec.mechanism.id,
                                  root=EMBEDDED_ROOT, sources=sources,
                                  settings=json.dumps(settings, indent=1), split=SPLIT_COLUMN,
                                  position=POSITION_COLUMN, key=KEY_COLUMN,
                                  kind=get_scorer(public.scorer).prediction_kind.name)


def _literal(source: str) -> str:
    """``source`` as a Python string literal that reads as the code it holds (a triple-quoted raw
    string where one can hold it, else its ``repr``)."""
    if "'''" in source or source.endswith("\\"):
        return repr(source)
    return "r'''" + source + "'''"


def _embedded(name: str) -> str:
    source = Path(importlib.import_module(name).__file__ or "").read_text()
    return re.sub(r"^(from|import) ladderlab\.", rf"\1 {EMBEDDED_ROOT}.", source, flags=re.MULTILINE)


METRIC_TEMPLATE = '''"""Kaggle custom metric for {challenge}: the {mechanism} mechanism, as ladderlab serve releases it.

Written by 'ladderlab export kaggle'. All columns of the solution and the submission reach score()
except Usage; the solution's {split}, {position} and {key} columns are this metric's own (the
key is secret: never publish the solution file). Public rows: the released value; private rows:
the exact private score (Kaggle shows it only after the close).
"""

import json
import sys
import types

import numpy as np
import pandas as pd

SOURCES = {{}}
"""ladderlab's modules this metric runs, as ladderlab ships them (the package renamed {root})."""

{sources}SETTINGS = json.loads(r\'\'\'{settings}\'\'\')


class ParticipantVisibleError(Exception):
    pass


def _ladderlab():
    if "{root}.engines.stateless" not in sys.modules:
        for package in ("{root}", "{root}.utils", "{root}.engines"):
            module = types.ModuleType(package)
            module.__path__ = []
            sys.modules[package] = module
        for name, source in SOURCES.items():
            module = types.ModuleType(name.replace("ladderlab.", "{root}.", 1))
            sys.modules[module.__name__] = module
            exec(compile(source, name, "exec"), module.__dict__)
    return sys.modules["{root}.scoring"], sys.modules["{root}.validation"], sys.modules["{root}.engines.stateless"]


def _classes(values, where):
    names = SETTINGS["class_names"]
    if names is None:
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
        if np.isnan(numbers).any():
            raise ParticipantVisibleError(where + ": every value must be a number")
        return numbers
    index = pd.Index(names).get_indexer(values.astype(str).str.strip())
    if (index < 0).any():
        raise ParticipantVisibleError(where + ": every value must be one of the classes " + ", ".join(names))
    return index.astype(float)


def score(solution: pd.DataFrame, submission: pd.DataFrame, row_id_column_name: str) -> float:
    scoring, validation, stateless = _ladderlab()
    splits = set(solution["{split}"].astype(str))
    if len(splits) != 1:
        raise ValueError("the rows passed mix public and final rows: score each set on its own")
    solution = solution.sort_values("{position}")
    ids = solution[row_id_column_name].astype(str).str.strip()
    submitted = submission.assign(**{{row_id_column_name: submission[row_id_column_name].astype(str).str.strip()}})
    if submitted[row_id_column_name].duplicated().any():
        raise ParticipantVisibleError("an id appears twice in the submission")
    submitted = submitted.set_index(row_id_column_name).reindex(ids)
    kind = scoring.PredictionKind.{kind}
    names = SETTINGS["class_names"] or [format(label, "g") for label in SETTINGS["classes"] or []]
    columns = names if kind is scoring.PredictionKind.PROBABILITIES else ["prediction"]
    missing = [column for column in columns if column not in submitted.columns]
    if missing:
        raise ParticipantVisibleError("the submission needs the column(s) " + ", ".join(missing))
    if submitted[columns].isna().to_numpy().any():
        raise ParticipantVisibleError("the submission misses a prediction for some ids")
    if kind is scoring.PredictionKind.PROBABILITIES:
        values = submitted[columns].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)[None]
    elif kind is scoring.PredictionKind.LABEL:
        values = _classes(submitted["prediction"], "prediction")[None]
    else:
        values = pd.to_numeric(submitted["prediction"], errors="coerce").to_numpy(dtype=float)[None]
    classes = None if SETTINGS["classes"] is None else np.asarray(SETTINGS["classes"], dtype=float)
    try:
        P = validation.check_prediction_matrix(values, len(ids), kind, classes)
    except ValueError as error:
        raise ParticipantVisibleError(str(error)) from None
    labels = solution[SETTINGS["label_column"]]
    y = _classes(labels, "label") if classes is not None else pd.to_numeric(labels).to_numpy(dtype=float)
    scorer = scoring.get_scorer(SETTINGS["scorer"]).within(SETTINGS["prediction_range"])
    exact = scorer.score_many(y, P)
    if splits == {{"final"}}:
        return float(exact[0])
    if len(ids) != SETTINGS["public_rows"]:
        raise ValueError("the public rows are not the exported challenge's: export the metric again")
    recipe = dict(SETTINGS["recipe"], key=str(solution["{key}"].iloc[0]))
    return float(stateless.release(exact, P, recipe)[0])
'''
