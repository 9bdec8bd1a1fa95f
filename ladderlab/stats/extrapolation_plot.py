"""The picture of an extrapolation: predicted accuracy against the number of classes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

METHOD_LABELS = {"un": "UN (Eq. 5)", "exp": "EXP (Sec. 4.1)", "cons": "CONS (Sec. 4.2)",
                 "mple": "MPLE (Sec. 4.2)", "hd": "HD (Sec. 4.3)"}
METHOD_COLORS = {"un": "0.5", "exp": "#1f77b4", "cons": "#d62728", "mple": "#ff7f0e", "hd": "#2ca02c"}


def curve_figure(result: Mapping[str, Any]) -> Figure:
    """Each method's p̂ᵗ for t = 2…K, the unbiased estimates p̂ᵗ_UN for t = 2…k as the observed
    points, and the observed accuracy at k marked; ``result`` is ``ladderlab stats extrapolate``'s JSON."""
    k, K = result["k"], result["K"]
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.subplots()
    for method, prediction in result["predictions"].items():
        if "curve" not in prediction or method == "un":
            continue
        curve = np.array(prediction["curve"], dtype=float)
        ax.plot(np.arange(2, K + 1), curve[1:], color=METHOD_COLORS[method], label=METHOD_LABELS[method])
    observed = np.array(result["unbiased"], dtype=float)
    ax.plot(np.arange(2, k + 1), observed[1:], "o", color="black", markersize=3,
            label="observed (p̂ᵗ_UN, t ≤ k)")
    ax.axvline(k, color="0.6", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("number of classes t")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Extrapolating from k = {k} to K = {K} classes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
