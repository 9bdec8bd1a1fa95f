"""Write a synthetic challenge's submissions log and its per-sample private losses.

A binary classification challenge scored by the 0/1 loss: 1,000 public and 2,000 private
samples, 30 teams over 30 days. Each honest team has a true error rate that falls from
θ + 0.08 towards θ (θ uniform on [0.20, 0.30]) as it works; each of its submissions is a
fresh prediction, correct on each sample with probability one minus that rate. Two teams
overfit the public set: each day they submit variants of their best prediction, every variant
a copy with a few public-looking flips, and keep the one the leaderboard likes best (the
public samples move, the private ones are noise). Every team selects its last two submissions.

Outputs (in this folder): ``synthetic-log.csv`` in ladderlab's documented schema and
``synthetic-private-losses.parquet`` (team, sample, loss: each team's counted submission, the
better of its two selected ones on the private samples). Run it again to regenerate them:
``python examples/logs/make_synthetic_log.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

N_PUBLIC, N_PRIVATE, TEAMS, OVERFITTERS, DAYS = 1000, 2000, 30, 2, 30
FOLDER = Path(__file__).resolve().parent


def main(seed: int = 2024) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, N_PUBLIC + N_PRIVATE)
    public = slice(0, N_PUBLIC)
    rows, counted_losses = [], {}
    start = pd.Timestamp("2024-03-01", tz="UTC")
    for team in range(TEAMS):
        name = f"team-{team + 1:02d}"
        theta = rng.uniform(0.20, 0.30)
        overfits = team < OVERFITTERS
        days = np.sort(rng.choice(DAYS, size=rng.integers(4, 16), replace=False))
        best, best_public = None, np.inf
        submissions = []
        for number, day in enumerate(days):
            rate = theta + 0.08 * np.exp(-number / 4)
            prediction = np.where(rng.random(labels.size) < rate, 1 - labels, labels)
            if overfits and best is not None:
                variants = np.repeat(best[None, :], 20, axis=0)
                flips = rng.random(variants.shape) < 0.01
                variants[flips] = 1 - variants[flips]
                errors = (variants[:, public] != labels[public]).mean(axis=1)
                prediction = variants[int(np.argmin(errors))]
            losses = (prediction != labels).astype(float)
            public_score, private_score = losses[public].mean(), losses[N_PUBLIC:].mean()
            if public_score < best_public:
                best, best_public = prediction, public_score
            at = start + pd.Timedelta(days=int(day), hours=int(rng.integers(0, 24)), minutes=int(rng.integers(0, 60)))
            submissions.append((at, public_score, private_score, losses[N_PUBLIC:]))
        for sequence, (at, public_score, private_score, _) in enumerate(submissions, start=1):
            rows.append({"team": name, "team_sequence": sequence, "submitted_at": at.isoformat(),
                         "public_score": public_score, "private_score": private_score,
                         "selected": sequence > len(submissions) - 2})
        counted_losses[name] = min(submissions[-2:], key=lambda s: s[2])[3]
    log = pd.DataFrame(rows).sort_values("submitted_at", kind="stable", ignore_index=True)
    log.insert(1, "submission_id", np.arange(1, len(log) + 1))
    log.to_csv(FOLDER / "synthetic-log.csv", index=False)
    losses = pd.DataFrame([{"team": name, "sample": f"p{i + 1:04d}", "loss": loss}
                           for name, values in counted_losses.items() for i, loss in enumerate(values)])
    losses.to_parquet(FOLDER / "synthetic-private-losses.parquet", index=False)


if __name__ == "__main__":
    main()
