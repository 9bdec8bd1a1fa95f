"""The Bradley–Terry fit, as FastChat computes it and exactly.

Model m has a rating r_m (base-10 units, FastChat's ``alpha = ln 10``); model i beats model j with
probability σ(α (r_i − r_j)), and a tie counts as half a win and half a loss. Over the unordered
pairs (:class:`ladderlab.arena.battles.PairCounts`) the negative log-likelihood is

    L(r) = − Σ_pairs [ s log σ(α d) + (n − s) log(1 − σ(α d)) ],   d = r_i − r_j,

FastChat's ``bt_loss_and_grad`` summed pair by pair instead of cell by cell. Two solvers:

- :func:`fit_fastchat`, FastChat's ``fit_bt``: SciPy's L-BFGS-B from zeros, at most 100
  iterations, ``gtol`` 1e-6, on the same loss and gradient; it gives FastChat's ratings (to about
  1e-4 Elo points) also where FastChat's optimizer stops short of the maximum (on sparse,
  time-windowed comparison graphs, L-BFGS-B's relative-reduction test stops it up to points away:
  docs/arena.md);
- :func:`fit_exact`: Newton's method with a backtracking line search, for a batch of count sets
  at once (replicates × pairs), to the maximum-likelihood ratings within 1e-10 (in r).

Both make many small BLAS calls, which a multi-threaded BLAS makes ten times slower (its threads
wait on each other): callers run them under ``threadpool_limits(1)``, once for a whole task.

Ratings are identified up to a constant in each connected part of the comparison graph; both
solvers start from zeros and keep each part's mean at zero (L-BFGS-B because the gradient sums to
zero over each part, Newton because its steps do), which is FastChat's level. :func:`elo` puts
ratings on the Elo scale as FastChat's ``scale_and_offset`` does: 400 r + 1000, shifted so that an
anchor model has its anchor rating where it is rated (FastChat anchors
``mixtral-8x7b-instruct-v0.1`` at 1114).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, sparse
from scipy.sparse import csgraph
from scipy.special import expit

from ladderlab.arena.battles import PairCounts

FloatArray = NDArray[np.float64]
ALPHA = math.log(10.0)
SCALE, BASE_RATING = 400.0, 1000.0
FASTCHAT_ANCHOR = ("mixtral-8x7b-instruct-v0.1", 1114.0)
"""FastChat's baseline model and its rating (``scale_and_offset``)."""
FASTCHAT_OPTIONS = {"maxiter": 100, "gtol": 1e-6}
"""FastChat's L-BFGS-B options (``fit_bt``); SciPy's defaults otherwise."""
NEWTON_TOLERANCE = 1e-10
NEWTON_STEPS = 200
HALVINGS = 40
ELO_PER_UNIT = SCALE / ALPHA
"""Elo points per natural-log unit of strength (400 / ln 10 ≈ 173.7)."""


class NotIdentified(ValueError):
    """The maximum-likelihood ratings do not exist: some models won (or lost) every battle against
    the rest of their part of the comparison graph, and their ratings grow without bound."""


def loss_and_gradient(ratings: FloatArray, pairs: PairCounts) -> tuple[float, FloatArray]:
    """FastChat's ``bt_loss_and_grad``, over pairs: the negative log-likelihood and its gradient."""
    probability = expit(ALPHA * (ratings[pairs.i] - ratings[pairs.j]))
    loss = -(np.log(probability) * pairs.s + np.log(1.0 - probability) * (pairs.n - pairs.s)).sum()
    per_pair = -ALPHA * (pairs.s - pairs.n * probability)
    size = pairs.n_models
    gradient = np.bincount(pairs.i, per_pair, size) - np.bincount(pairs.j, per_pair, size)
    return float(loss), gradient


@dataclass(frozen=True)
class LbfgsFit:
    """FastChat's fit of one count set: the ratings (r) and what L-BFGS-B reports."""

    ratings: FloatArray
    iterations: int
    message: str
    gradient_norm: float


def fit_fastchat(pairs: PairCounts, tolerance: float = FASTCHAT_OPTIONS["gtol"]) -> LbfgsFit:
    """FastChat's ``fit_bt``: L-BFGS-B from zeros, at most 100 iterations, ``gtol`` ``tolerance``."""
    result = optimize.minimize(loss_and_gradient, np.zeros(pairs.n_models), args=(pairs,), jac=True, method="L-BFGS-B",
                               options={**FASTCHAT_OPTIONS, "gtol": tolerance})
    return LbfgsFit(result.x, int(result.nit), str(result.message), float(np.abs(result.jac).max()))


def components(pairs: PairCounts, n: FloatArray | None = None) -> NDArray[np.int64]:
    """The connected part of the comparison graph each model belongs to (pairs with battles)."""
    counts = pairs.n if n is None else n
    played = (counts > 0) & (pairs.i != pairs.j)
    graph = sparse.coo_matrix((np.ones(int(played.sum())), (pairs.i[played], pairs.j[played])),
                              shape=(pairs.n_models, pairs.n_models))
    return csgraph.connected_components(graph, directed=False)[1]


def unidentified(pairs: PairCounts, n: FloatArray | None = None, s: FloatArray | None = None) -> list[int]:
    """Models whose maximum-likelihood rating does not exist: those in a part of the comparison
    graph that the "scored against" digraph (an edge i → j when i scored against j: a win or a
    tie) does not connect strongly within its part (Zermelo 1929; Ford 1957)."""
    n = pairs.n if n is None else n
    s = pairs.s if s is None else s
    off = pairs.i != pairs.j
    forward = off & (s > 0)
    backward = off & (n - s > 0)
    rows = np.concatenate([pairs.i[forward], pairs.j[backward]])
    cols = np.concatenate([pairs.j[forward], pairs.i[backward]])
    digraph = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(pairs.n_models, pairs.n_models))
    strong = csgraph.connected_components(digraph, directed=True, connection="strong")[1]
    weak = components(pairs, n)
    bad = []
    for part in np.unique(weak):
        members = np.flatnonzero(weak == part)
        if members.size > 1 and np.unique(strong[members]).size > 1:
            bad += members.tolist()
    return bad


def fit_exact(pairs: PairCounts, start: FloatArray | None = None) -> FloatArray:
    """The maximum-likelihood ratings (r) of each count set of ``pairs`` (``n``, ``s`` vectors, or
    replicates × pairs): Newton's method with a backtracking line search from ``start`` (zeros by
    default). The Newton system adds c 11ᵀ / m and ε I (c the mean curvature, ε = 1e-9 c): the gradient
    has no part along a connected part's constant vector, so neither has a step, and each part's mean
    stays where it starts. A count set that does not converge and whose ratings do not exist
    (:func:`unidentified`) raises :class:`NotIdentified`."""
    n, s = np.atleast_2d(pairs.n).astype(float), np.atleast_2d(pairs.s).astype(float)
    batch, size = n.shape[0], pairs.n_models
    keep = pairs.i != pairs.j
    i, j, n, s = pairs.i[keep], pairs.j[keep], n[:, keep], s[:, keep]
    ratings = np.zeros((batch, size)) if start is None else np.array(np.broadcast_to(np.atleast_2d(start), (batch, size)),
                                                                     dtype=float)
    loss = _losses(ratings, i, j, n, s)
    converged = False
    diagonal = (np.arange(size), np.arange(size))
    for _ in range(NEWTON_STEPS):
        gradient, hessian = _gradient_and_hessian(ratings, i, j, n, s)
        curvature = np.maximum(hessian[:, diagonal[0], diagonal[1]].mean(axis=1), 1e-12)[:, None, None]
        hessian += curvature / size  # c 11ᵀ / m: the step has no part along 1, the gradient has none
        hessian[:, diagonal[0], diagonal[1]] += 1e-9 * curvature[:, :, 0]  # ε I: several unconnected parts
        step = np.linalg.solve(hessian, -gradient[:, :, None])[:, :, 0]
        scale = np.ones(batch)
        for _ in range(HALVINGS):
            trial = _losses(ratings + scale[:, None] * step, i, j, n, s)
            worse = trial > loss + 1e-12 * np.abs(loss)
            if not worse.any():
                break
            scale[worse] /= 2.0
        ratings = ratings + scale[:, None] * step
        loss = trial
        if np.abs(scale[:, None] * step).max() < NEWTON_TOLERANCE:
            converged = True
            break
    if not converged:
        for replicate in range(batch):
            bad = unidentified(PairCounts(size, i, j, n[replicate], s[replicate]))
            if bad:
                raise NotIdentified(f"model number {bad[0]} (and {len(bad) - 1} others) won or lost every battle "
                                    "against the rest of its part of the comparison graph: its rating is not finite")
    return ratings if np.ndim(pairs.n) == 2 else ratings[0]


def _losses(ratings: FloatArray, i: NDArray, j: NDArray, n: FloatArray, s: FloatArray) -> FloatArray:
    """The negative log-likelihood of each count set (replicates × pairs), computed stably:
    s log σ(z) + (n − s) log σ(−z) = s z − n log(1 + eᶻ)."""
    z = ALPHA * (ratings[:, i] - ratings[:, j])
    return (n * np.logaddexp(0.0, z) - s * z).sum(axis=1)


def _gradient_and_hessian(ratings: FloatArray, i: NDArray, j: NDArray, n: FloatArray,
                          s: FloatArray) -> tuple[FloatArray, FloatArray]:
    batch, size = ratings.shape
    probability = expit(ALPHA * (ratings[:, i] - ratings[:, j]))
    per_pair = -ALPHA * (s - n * probability)
    weight = ALPHA**2 * n * probability * (1.0 - probability)
    gradient = np.empty((batch, size))
    diagonal = np.empty((batch, size))
    for replicate in range(batch):
        gradient[replicate] = np.bincount(i, per_pair[replicate], size) - np.bincount(j, per_pair[replicate], size)
        diagonal[replicate] = np.bincount(i, weight[replicate], size) + np.bincount(j, weight[replicate], size)
    hessian = np.zeros((batch, size * size))
    hessian[:, i * size + j] = -weight
    hessian = hessian.reshape(batch, size, size)
    hessian = hessian + hessian.transpose(0, 2, 1)
    hessian[:, np.arange(size), np.arange(size)] += diagonal
    return gradient, hessian


def information(pairs: PairCounts, ratings: FloatArray) -> FloatArray:
    """The Fisher information of the natural-log strengths u = α r at ``ratings`` (r): the Hessian
    Σ n σ(1 − σ) (e_i − e_j)(e_i − e_j)ᵀ of the negative log-likelihood in u (one count set)."""
    u = ALPHA * np.asarray(ratings, dtype=float)
    p = expit(u[pairs.i] - u[pairs.j])
    weight = np.where(pairs.i == pairs.j, 0.0, pairs.n * p * (1 - p))
    size = pairs.n_models
    out = np.zeros((size, size))
    np.add.at(out, (pairs.i, pairs.j), -weight)
    np.add.at(out, (pairs.j, pairs.i), -weight)
    np.add.at(out, (pairs.i, pairs.i), weight)
    np.add.at(out, (pairs.j, pairs.j), weight)
    return out


def elo(ratings: FloatArray, models: list[str], anchor: tuple[str, float] | None = FASTCHAT_ANCHOR) -> FloatArray:
    """FastChat's ``scale_and_offset``: 400 r + 1000, shifted so that the ``anchor`` model (a name
    and its rating) has its rating where it is among ``models`` (the last axis of ``ratings``)."""
    scaled = np.asarray(ratings, dtype=float) * SCALE + BASE_RATING
    if anchor is not None and anchor[0] in models:
        index = models.index(anchor[0])
        scaled = scaled + (anchor[1] - scaled[..., [index]])
    return scaled
