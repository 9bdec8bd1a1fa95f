"""A task at another public-set size: ``public-size(task = "challenge", task_params = {…}, n_public = 120)``.

``ladderlab plan`` asks how large the public leaderboard must be. The organiser's holdout is
fixed (a challenge's labels, a task's holdout rows); what they choose is how many of its rows
the public leaderboard scores. This task plays another task's holdout with ``n_public`` of its
rows public and the rest final, the public rows drawn uniformly at random in every replication
(an organiser who has not yet split the holdout draws the split once, at random: the plan is
about that draw). Everything else is the inner task's: its labels, training data, features,
scorer, prediction range and population scores; the participants never learn which rows are
public unless the inner task discloses them (a two-stage competition), in which case the
drawn ones are disclosed.

The inner task's data are drawn first, from the replication's stream; the public rows come from
a stream of their own inside it (:func:`ladderlab.seeding.substream`), so a task whose data are
fixed (a challenge) draws only the split.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ladderlab.params import Interval, InstanceOf
from ladderlab.seeding import substream
from ladderlab.tasks import Split, Task, TaskType


class PublicSize(Task):
    """Another task's holdout with ``n_public`` of its rows public, drawn at random in every replication.

    ``task`` and ``task_params`` name the inner task (any registered task, the organiser's
    ``challenge`` included); its public and final rows together are the holdout, of which
    ``n_public`` (at least 2, at most all but one) are public.
    """

    id = "public-size"
    reference = "ladderlab plan (docs/certification.md#planning-a-challenge): the organiser's holdout, split at another size"
    _parameter_constraints = {"task": [InstanceOf(str)], "task_params": [InstanceOf(dict), None],
                              "n_public": [Interval(int, 2, None)]}

    def __init__(self, task: str = "random-labels", task_params: dict[str, Any] | None = None, n_public: int = 200):
        self.task = task
        self.task_params = task_params
        self.n_public = n_public

    def inner(self) -> Task:
        """The task whose holdout this one splits."""
        from ladderlab.registry import TASKS  # the registry lists this module: imported when first used

        return TASKS.make(self.task, **(self.task_params or {}))

    @property
    def task_type(self) -> TaskType:  # type: ignore[override]
        return self.inner().task_type

    @property
    def default_scorer(self) -> str:  # type: ignore[override]
        return self.inner().default_scorer

    def _check_params(self) -> None:
        if self.task == self.id:
            raise ValueError(f"{self.id}: parameter 'task': a {self.id} task splits another task, not itself")
        inner = self.inner()
        inner.validate_params()
        shape = inner.data_shape()
        if shape is not None and self.n_public >= shape[0]:
            raise ValueError(f"{self.id}: parameter 'n_public' = {self.n_public}: the task {self.task!r} has at most "
                             f"{shape[0]} rows in all, so at least one holdout row could not be final")

    def identity_params(self) -> dict[str, Any]:
        """The inner task's identity (a challenge's data hash, not its path) and the public size."""
        inner = self.inner()
        return {"task": inner.id, "task_params": inner.identity_params(), "n_public": self.n_public}

    def data_fingerprint(self) -> str | None:
        return self.inner().data_fingerprint()

    def data_shape(self) -> tuple[int, int] | None:
        return self.inner().data_shape()

    def split(self, rng: np.random.Generator) -> Split:
        return resplit(self.inner().split(rng), self.n_public, substream(rng, "public rows"))


def holdout_rows(split: Split) -> np.ndarray:
    """The rows a split scores, public and final, in order."""
    return np.sort(np.concatenate([split.public_rows, split.final_rows]))


def resplit(split: Split, n_public: int, rng: np.random.Generator) -> Split:
    """``split`` with ``n_public`` of its holdout rows, drawn uniformly by ``rng``, public and the
    others final; ``ValueError`` unless at least one row stays final."""
    rows = holdout_rows(split)
    if not 2 <= n_public < rows.size:
        raise ValueError(f"{PublicSize.id}: n_public = {n_public}, but the holdout has {rows.size} rows: between 2 "
                         f"and {rows.size - 1} can be public")
    order = rng.permutation(rows.size)
    public_rows, final_rows = np.sort(rows[order[:n_public]]), np.sort(rows[order[n_public:]])
    public = split.public
    if public.public_rows is not None:
        public = replace(public, public_rows=public_rows.copy())
    return replace(split, public=public, public_rows=public_rows, final_rows=final_rows)
