"""Releases that depend on a submission alone: what a scorer with no identity and no memory can run.

A *stateless* mechanism (``Mechanism.stateless``) releases a function of the submission's exact
score, its prediction and a key fixed when it binds, never of earlier submissions: the same
prediction gets the same release whoever submits it and however often (a Kaggle custom metric,
``score(solution, submission, row_id_column_name)``, has nothing more). Its rule is a *recipe*
(:func:`release`): an optional noise keyed by a hash of the prediction, then an optional rounding.

The noise of a prediction is drawn from a generator seeded by HMAC-SHA256(key, SHA-256 of the
prediction's float64 bytes): a resubmitted file gets the same value, so averaging copies of one
file gains nothing; averaging *near*-duplicates does (``near-duplicate-boosting`` certifies
against it). This module imports numpy and the noise draws only, so that the Kaggle export can
ship it as it is (:mod:`ladderlab.platforms.kaggle`).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ladderlab.engines.noise import draw_noise

FloatArray = NDArray[np.float64]


def prediction_digest(row: NDArray[Any]) -> bytes:
    """SHA-256 of a prediction row's float64 bytes, in C order (the row the mechanism was given)."""
    return hashlib.sha256(np.ascontiguousarray(row, dtype=np.float64).tobytes()).digest()


def keyed_noise(key: bytes, digests: list[bytes], kind: str, scale: float) -> FloatArray:
    """One draw of ``kind`` noise of ``scale`` per prediction digest, from a generator seeded by
    HMAC-SHA256(``key``, digest): a function of the key and the prediction alone."""
    noise = np.empty(len(digests))
    for i, digest in enumerate(digests):
        seed = int.from_bytes(hmac.new(key, digest, hashlib.sha256).digest(), "little")
        noise[i] = draw_noise(np.random.default_rng(seed), kind, scale, 1)[0]
    return noise


def release(scores: FloatArray, rows: NDArray[Any], recipe: dict[str, Any]) -> FloatArray:
    """The releases of the prediction ``rows`` with exact ``scores`` under a stateless ``recipe``:
    ``noise`` (None, "gaussian" or "laplace") of ``scale`` keyed by ``key`` (hex), then rounding to
    a multiple of ``step`` (None: no rounding), ties to even as ``round_to_multiple`` rounds."""
    released = np.asarray(scores, dtype=float)
    if recipe.get("noise") is not None:
        digests = [prediction_digest(row) for row in rows]
        released = released + keyed_noise(bytes.fromhex(recipe["key"]), digests, recipe["noise"], recipe["scale"])
    step = recipe.get("step")
    return released if step is None else np.rint(released / step) * step
