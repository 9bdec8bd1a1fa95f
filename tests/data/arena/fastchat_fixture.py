"""Regenerate fastchat-battles.csv and fastchat-ratings.json: battles of ladderlab's pairwise family,
rated by FastChat's own code (compute_bt, compute_bootstrap_bt and elo_analysis's rank rule).

    FASTCHAT_DIR=path/to/a/FastChat/checkout python tests/data/arena/fastchat_fixture.py

The battles are sparse in time (each model live for a tenth of the span, as Arena releases are), so
that FastChat's optimizer stops short of the maximum-likelihood ratings, and one model is named as
FastChat's anchor. Nothing of FastChat is kept in the repository but the numbers its code computed.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy

from ladderlab.arena.battles import to_frame
from ladderlab.arena.bradley_terry import FASTCHAT_ANCHOR
from ladderlab.arena.family import PairwiseArena

HERE = Path(__file__).parent
FAMILY = {"models": 40, "providers": 5, "battles": 5000, "lifetime": 0.1, "spread": 150.0}
SEED = 46
ROUNDS = 100
STYLE_FAMILY = {"models": 12, "providers": 4, "battles": 2500, "style_effect": 50.0}


def battles_frame():
    family = PairwiseArena(**FAMILY)
    rng = np.random.default_rng(SEED)
    pool = family.pool(rng)
    battles, _ = family.battles_of(rng, pool)
    frame = to_frame(battles)
    ties = frame.index[frame.winner == "tie"]
    frame.loc[ties[rng.random(ties.size) < 0.5], "winner"] = "tie (bothbad)"
    anchored = pool.names[int(np.argsort(pool.strength)[len(pool.names) // 2])]
    for column in ("model_a", "model_b"):
        frame.loc[frame[column] == anchored, column] = FASTCHAT_ANCHOR[0]
    return frame


def style_frame():
    """Battles whose votes reward each answer's style, with FastChat's conv_metadata records."""
    from ladderlab.arena.battles import STYLE_ELEMENTS

    family = PairwiseArena(**STYLE_FAMILY)
    rng = np.random.default_rng(SEED)
    battles, _ = family.battles_of(rng, family.pool(rng))
    frame = to_frame(battles)
    frame[list(STYLE_ELEMENTS)] = battles.style.astype(int)
    return frame


def with_metadata(frame):
    """FastChat's form: the style counts as a conv_metadata record per battle."""
    from ladderlab.arena.battles import STYLE_ELEMENTS

    records = frame[list(STYLE_ELEMENTS)].astype(int).to_dict(orient="records")
    return frame.drop(columns=list(STYLE_ELEMENTS)).assign(conv_metadata=records)


def main() -> None:
    checkout = Path(os.environ["FASTCHAT_DIR"])
    sys.path.insert(0, str(checkout))
    from fastchat.serve.monitor.rating_systems import compute_bootstrap_bt, compute_bt

    frame = battles_frame()
    frame.to_csv(HERE / "fastchat-battles.csv", index=False)
    rating = compute_bt(frame)
    bootstrap = compute_bootstrap_bt(frame, num_round=ROUNDS, num_cpu=2)
    low, high = bootstrap.quantile(0.025), bootstrap.quantile(0.975)
    rank = {m: 1 + sum(low[o] > high[m] for o in rating.index if o != m) for m in rating.index}  # elo_analysis's loop
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    record = {
        "fastchat_commit": commit or "0e6d3e4beaab66f4d3f93db72541a4abab8af28d",
        "computed_by": "fastchat/serve/monitor/rating_systems.py compute_bt and compute_bootstrap_bt(num_round=100); "
                       "rank by elo_analysis.report_elo_analysis_results' rule",
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__},
        "family": FAMILY, "seed": SEED, "rounds": ROUNDS,
        "models": {m: {"rating": float(rating[m]), "q025": float(low[m]), "q975": float(high[m]), "rank": int(rank[m]),
                       "bootstrap_sorted": sorted(float(v) for v in bootstrap[m])}
                   for m in rating.index},
    }
    (HERE / "fastchat-ratings.json").write_text(json.dumps(record, indent=1) + "\n")

    from fastchat.serve.monitor.rating_systems import compute_style_control

    styled = style_frame()
    styled.to_csv(HERE / "fastchat-style-battles.csv", index=False)
    ratings, params = compute_style_control(with_metadata(styled))
    (HERE / "fastchat-style-ratings.json").write_text(json.dumps({
        "fastchat_commit": record["fastchat_commit"], "computed_by": "rating_systems.py compute_style_control",
        "family": STYLE_FAMILY, "seed": SEED, "ratings": {m: float(v) for m, v in ratings.items()},
        "coefficients": [float(v) for v in params]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
