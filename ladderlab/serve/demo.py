"""The demo challenge: built-in data written as an ordinary challenge folder.

``ladderlab serve --demo`` writes (once) a challenge file, its labels, training data,
holdout inputs and a sample submission into a folder, from one replication of the
``latent-classification`` task (binary labels from a logistic model, learnable from the
features), and serves it. The folder is a template for an organiser's own challenge.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ladderlab.registry import TASKS
from ladderlab.runs.rundir import write_atomically
from ladderlab.seeding import stream

DEMO_TEAMS = ("team-a", "team-b", "team-c")
DEMO_SEED = 2015

CHALLENGE = """\
schema_version = 1
name = "demo"
title = "ladderlab demo challenge"
scorer = "zero-one"

[labels]
file = "labels.parquet"
id_column = "id"
label_column = "label"

[split]
column = "split"

[mechanism]
id = "ladder"
params = {{ eta = 0.01 }}

[rules]
per_day = 1000
total = 5000
selection = "best-public"

[limits]
uploads_per_second = 100
burst = 100

[data]
train = "train.parquet"
holdout = "holdout.parquet"

{teams}
"""


def write_demo(folder: Path, n_public: int = 2000, n_holdout: int = 4000) -> Path:
    """Write the demo challenge into ``folder`` unless it is there; return the challenge file."""
    path = folder / "challenge.toml"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    task = TASKS.make("latent-classification", n_train=2000, n_public=n_public, n_holdout=n_holdout, n_features=20)
    split = task.split(stream(DEMO_SEED, "demo"))
    data = split.public
    ids = np.arange(1, n_holdout + 1)
    which = np.full(n_holdout, "final", dtype=object)
    which[split.public_rows] = "public"
    features = [f"x{j}" for j in range(data.X_holdout.shape[1])]
    tables = {
        "labels.parquet": pd.DataFrame({"id": ids, "label": split.y_holdout.astype(int), "split": which}),
        "train.parquet": pd.DataFrame(data.X_train, columns=features).assign(label=data.y_train.astype(int)),
        "holdout.parquet": pd.DataFrame(data.X_holdout, columns=features).assign(id=ids),
    }
    for name, table in tables.items():
        write_atomically(folder / name, table.to_parquet(index=False))
    sample = pd.DataFrame({"id": ids, "prediction": 0})
    write_atomically(folder / "sample_submission.csv", sample.to_csv(index=False).encode())
    teams = "\n".join(f'[[teams]]\nname = "{team}"\n' for team in DEMO_TEAMS)
    write_atomically(path, CHALLENGE.format(teams=teams).encode())
    return path
