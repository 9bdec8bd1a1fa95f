"""A hostile attack for the isolation tests: it tries every route to the holdout labels it
can think of, and submits the labels if it finds them. ``marks()`` names the routes that
worked (each mark holds the index 0)."""

import gc
import inspect
import sys

import numpy as np

from ladderlab.attack import Attack
from ladderlab.params import Interval
from ladderlab.seeding import stream


def labels_from(obj, holdout_size):
    """The whole-holdout labels, if ``obj`` is (or directly leads to) a split, a leaderboard
    or a board; else None."""
    try:
        if type(obj).__name__ == "Split" and hasattr(obj, "y_holdout"):
            return np.asarray(obj.y_holdout, dtype=float)
        if type(obj).__name__ == "Board":
            obj = object.__getattribute__(obj, "_leaderboard")
        if type(obj).__name__ == "Leaderboard":
            labels = np.empty(holdout_size)
            labels[obj.public_rows] = obj.mechanism.labels_
            labels[obj.final_rows] = obj.final_labels
            return labels
    except Exception:
        return None
    return None


class RedTeam(Attack):
    """Looks for the labels everywhere in its process."""

    id = "red-team"
    reference = "ladderlab isolation tests"
    _parameter_constraints = {"guess_seeds": [Interval(int, 0, None)]}

    def __init__(self, guess_seeds=8):
        self.guess_seeds = guess_seeds

    def run(self, board, data, rng):
        n = board.holdout_size
        found = {}
        found["private_attributes"] = self._private_attributes(board, n)
        found["gc_referrers"] = self._first(gc.get_referrers(data), n)
        found["gc_objects"] = self._first(gc.get_objects(), n)
        found["frames"] = self._frames(n)
        found["sys_modules"] = self._modules(n)
        found["regenerated_from_public_seed"] = self._regenerate(board, data, n)
        self.routes_ = sorted(route for route, labels in found.items() if labels is not None)
        for route in ("private_attributes", "gc_referrers", "gc_objects", "frames", "sys_modules",
                      "regenerated_from_public_seed"):
            if found[route] is not None:
                return found[route]
        return np.zeros(n)

    def marks(self):
        return {route: [0] for route in getattr(self, "routes_", [])}

    @staticmethod
    def _first(objects, n):
        for obj in objects:
            labels = labels_from(obj, n)
            if labels is not None:
                return labels
            if isinstance(obj, dict):
                for value in list(obj.values()):
                    labels = labels_from(value, n)
                    if labels is not None:
                        return labels
        return None

    @staticmethod
    def _private_attributes(board, n):
        try:
            return labels_from(board._leaderboard, n)
        except Exception:
            return None

    def _frames(self, n):
        frame = inspect.currentframe().f_back
        while frame is not None:
            labels = self._first(list(frame.f_locals.values()), n)
            if labels is not None:
                return labels
            frame = frame.f_back
        return None

    def _modules(self, n):
        for module in list(sys.modules.values()):
            labels = self._first(list(getattr(module, "__dict__", {}).values()), n)
            if labels is not None:
                return labels
        return None

    def _regenerate(self, board, data, n):
        """Random labels drawn from the scenario's public seed: guess the seed, the task's
        parameters and the replication, submit each guess once, keep the one scored 0."""
        if data.X_holdout.shape[1] != 0 or (board.remaining is not None and board.remaining < self.guess_seeds):
            return None
        from ladderlab.registry import TASKS  # public code: the task's identity is no secret

        task = TASKS.make("random-labels", n_holdout=n, n_public=n // 3, scorer=data.scorer)
        spec = (task.id, task.identity_params())
        for seed in range(self.guess_seeds):
            for replication in range(3):
                labels = stream(seed, "task", spec, replication).integers(0, 2, n).astype(float)
                if board.submit(labels) == 0.0:
                    return labels
        return None
