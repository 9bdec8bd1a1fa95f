"""The organiser's own challenge as a task: the labels, split, scorer, prediction range and
public data of a challenge file (:mod:`ladderlab.certification.challenge`), played like any built-in task.

``challenge(path = "my-challenge.toml")`` reads the file with :func:`ladderlab.certification.challenge.load`,
the reader ``ladderlab serve`` uses, so an organiser writes the file once and every check
(one line naming the file, the key and the value) is the same. The data are the organiser's,
fixed: by default every replication plays the same labels and the same public/final split.
A certificate asks what is random in practice to vary between its replications, or a
deterministic attack would give the same duel in every one of them and identical copies
would count as evidence (``resample``, docs/decisions.md#challenge-resampling): ``bootstrap``
draws the public rows with replacement from the public rows and the final rows from the final
rows, at their positions, in every replication; ``split`` first draws the public/final split
afresh (as many public rows as the organiser's), for a challenge whose organiser draws it
(``split.public_fraction``). Each replication's data are a function of the task's random
stream alone, as a synthetic task's are.

Identity: the task's random streams and its fingerprint are derived from
:meth:`~ladderlab.certification.challenge.Challenge.task_identity`, a hash of the data the task gives a duel,
not from where the file lies: the same seed gives the same transcript in any clone, and an
edited labels file (or split, scorer, prediction range, features) changes the identity, so a
run directory's finished cells become stale instead of being reused silently.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ladderlab.params import InstanceOf, Options
from ladderlab.tasks import Split, Task, TaskType

if TYPE_CHECKING:  # the challenge module (pandas, the scenario tables) is imported when a challenge is read
    from ladderlab.certification.challenge import Challenge

RESAMPLING = {
    "none": "nothing: every replication plays the organiser's labels and split",
    "bootstrap": "a bootstrap of the public rows and of the final rows, within the organiser's split",
    "split": "the public/final split, drawn afresh as the organiser drew it, then a bootstrap within it",
}
"""What a challenge task's ``resample`` varies between replications."""

_LOADED: dict[tuple[Any, ...], tuple[Challenge, str]] = {}
_LOADED_LIMIT = 8


def load_challenge(path: str | Path) -> tuple[Challenge, str]:
    """:func:`ladderlab.certification.challenge.load` and the challenge's :meth:`~ladderlab.certification.challenge.Challenge.task_identity`,
    cached while the challenge file and the files it names are unchanged (their size and
    modification and change times): a run asks for the task's data every replication. The
    cached arrays are read-only."""
    path = Path(path).resolve()
    stamp = _stamp(path)
    key = (str(path), stamp, *(_stamp(file) for file in _named_files(path, stamp)))
    if key not in _LOADED:
        from ladderlab.certification.challenge import load

        challenge = load(path)
        split, public = challenge.split, challenge.split.public
        for array in (split.y_holdout, split.public_rows, split.final_rows, public.X_train, public.y_train,
                      public.X_holdout, *(() if public.classes is None else (public.classes,))):
            array.setflags(write=False)
        if len(_LOADED) >= _LOADED_LIMIT:
            del _LOADED[next(iter(_LOADED))]
        _LOADED[key] = challenge, challenge.task_identity()
    return _LOADED[key]


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


@functools.lru_cache(maxsize=64)
def _named_files(path: Path, stamp: tuple[int, int, int, int] | None) -> tuple[Path, ...]:
    """The data files a challenge file names (:func:`ladderlab.certification.challenge.data_files`, unvalidated:
    :func:`load` checks them), read once per version (``stamp``) of the challenge file."""
    from ladderlab.certification.challenge import data_files

    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ()
    return tuple(path.parent / name for name in data_files(raw).values())


class ChallengeTask(Task):
    """The organiser's challenge file as a task: its labels, split, scorer, prediction range and public data.

    ``sha256``, where given, pins the data (:meth:`~ladderlab.certification.challenge.Challenge.task_identity`):
    the task refuses files whose data hash differs, and cells named by it are never shared
    with other data (``ladderlab certify --challenge`` pins it). ``path`` names a challenge file (docs/serve.md#the-challenge-file; in a scenario file,
    relative to the scenario file). Binary, multiclass and regression labels; the public
    data are the challenge's: its training rows and holdout inputs if it declares them, the
    label set, the scorer and the prediction range, never the labels or which holdout rows
    are public. ``resample``: ``none`` (the data are fixed: the random draw of a replication
    is not used), ``bootstrap`` or ``split`` (see the module docstring).
    """

    id = "challenge"
    reference = "the organiser's challenge file (ladderlab.certification.challenge; docs/own-challenge.md)"
    _parameter_constraints = {"path": [InstanceOf(str)], "sha256": [InstanceOf(str), None],
                              "resample": [Options(set(RESAMPLING))]}

    def __init__(self, path: str = "challenge.toml", sha256: str | None = None, resample: str = "none"):
        self.path = path
        self.sha256 = sha256
        self.resample = resample

    @property
    def challenge(self) -> Challenge:
        """The loaded challenge (:class:`ChallengeError` naming the file and key if it cannot be used)."""
        return load_challenge(self.path)[0]

    def data_fingerprint(self) -> str:
        """The challenge's data hash (:meth:`~ladderlab.certification.challenge.Challenge.task_identity`); with
        ``sha256`` pinned, ``ValueError`` if the files now hold other data."""
        found = load_challenge(self.path)[1]
        if self.sha256 is not None and found != self.sha256:
            raise ValueError(f"{self.id}: parameter 'sha256' = {self.sha256!r}: the data of {self.path} have changed "
                             f"since (their hash is now {found!r})")
        return found

    @property
    def task_type(self) -> TaskType:  # type: ignore[override]
        return self.challenge.split.public.task_type

    @property
    def default_scorer(self) -> str:  # type: ignore[override]
        return self.challenge.split.public.scorer

    def _check_params(self) -> None:
        from ladderlab.certification.challenge import ChallengeError

        try:
            self.data_fingerprint()
        except ChallengeError as error:
            raise ValueError(f"{self.id}: parameter 'path': {error}") from None

    def identity_params(self) -> dict[str, Any]:
        """The challenge's data hash in place of its path (see the module docstring), and how it resamples."""
        return {"task_identity": self.data_fingerprint(), **({"resample": self.resample} if self.resample != "none" else {})}

    def data_shape(self) -> tuple[int, int]:
        public = self.challenge.split.public
        return public.y_train.size + public.X_holdout.shape[0], max(public.X_train.shape[1], public.X_holdout.shape[1]) + 1

    def split(self, rng: np.random.Generator) -> Split:
        self.data_fingerprint()
        return resampled(self.challenge.split, self.resample, rng)


def resampled(split: Split, resample: str, rng: np.random.Generator) -> Split:
    """``split`` as replication ``rng`` plays it under ``resample`` (:data:`RESAMPLING`): the holdout rows
    at the public (final) positions are drawn with replacement from the public (final) rows, after the
    positions are redrawn for ``split``; the training data, label set, scorer and range are the organiser's."""
    if resample == "none":
        return split
    public_rows, final_rows = split.public_rows, split.final_rows
    if resample == "split":
        order = rng.permutation(public_rows.size + final_rows.size)
        public_rows, final_rows = np.sort(order[: public_rows.size]), np.sort(order[public_rows.size:])
    source = np.empty(public_rows.size + final_rows.size, dtype=np.int64)
    source[public_rows] = rng.choice(public_rows, public_rows.size)
    source[final_rows] = rng.choice(final_rows, final_rows.size)
    public = dataclasses.replace(split.public, X_holdout=split.public.X_holdout[source])
    return Split(public, public_rows, final_rows, split.y_holdout[source], split.population_score)
