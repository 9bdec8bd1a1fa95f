"""The leaderboard states of every account of a competition under one mechanism.

A competition gives each account its own mechanism state (Ladder.jl's Kaggle replay keeps one
Ladder per team). A :class:`MechanismBank` answers the submissions of a wave (a round's
submissions of every team, :mod:`ladderlab.competition`) for all accounts at once:

- :class:`StatelessBank`: a mechanism whose release is a function of each submission's exact
  score alone (Full-disclosure, Kaggle's rounding) releases a whole wave in one vector
  operation (``Mechanism.release_scores``).
- :class:`LadderBank`: the fixed, parameter-free and t-test Ladders keep their state (the last
  release, the best's risk and, for the paired t-test, the best's loss row) as arrays indexed
  by account; a wave is decided in as many vector steps as one account submits rows in it,
  each step testing the next row of every account against its own reference with the
  Ladders' tie rule (:func:`ladderlab.engines.ladder.beats_each`), its margin from the account's own
  best (:meth:`ladderlab.holdout.HoldoutScores.paired_sd_each`). The decisions and releases are
  those of one bound mechanism per account, bit for bit (``tests/test_competition_waves.py``).
- :class:`LadderBootBank`: LadderBoot's decisions as the t-test Ladder's, and each row's
  bootstrap release drawn from its account's own Generator, in the account's order.
- :class:`PerAccountBank`: every other mechanism (noisy release, Thresholdout, the
  Bayesian-bootstrap Ladders, whose decisions themselves draw, third-party plugins) keeps one
  bound mechanism per account, or one for all when the class sets ``shared_state``, and gets
  each account's rows in order, lent the scores the organiser already computed.

A vector bank is used only for the exact classes it was written for, so a subclass that changes
the algorithm takes the per-account path.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ladderlab.engines.bootstrap import BootstrapMeanSampler
from ladderlab.engines.ladder import Ladder, PairedTTestLadder, beats_each
from ladderlab.holdout import BinaryErrorCounts
from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.scoring import LossScorer

IntArray = NDArray[np.intp]


@dataclass
class Wave:
    """Rows submitted together, in order: the account (state) each goes to and their exact scores.

    ``segments`` are runs of consecutive rows of one account, (start, stop, slot);
    ``public_columns(k)`` gives the public columns of the rows of segment k and
    ``loss_rows(indices)`` the public loss rows of the given rows (the predictions' public
    columns for the 0/1 loss on two labels, the per-sample losses otherwise)."""

    slots: IntArray
    segments: list[tuple[int, int, int]]
    public: FloatArray
    public_columns: Callable[[int], FloatArray]
    loss_rows: Callable[[IntArray], FloatArray]


class MechanismBank(ABC):
    """The states of ``slots`` accounts under one mechanism; ``bind(slot)`` binds one account's copy."""

    def __init__(self, bind: Callable[[int], Mechanism], slots: int):
        self.bind = bind
        self.slots = slots

    @abstractmethod
    def release(self, wave: Wave) -> tuple[FloatArray, NDArray[np.bool_]]:
        """The released score of every row of the wave, and whether it became its account's best."""


class PerAccountBank(MechanismBank):
    """One bound mechanism per account (one for all with ``shared``), each given its rows in order."""

    def __init__(self, bind: Callable[[int], Mechanism], slots: int, shared: bool = False):
        super().__init__(bind, slots)
        self.shared = shared
        self.mechanisms: dict[int, Mechanism] = {}

    def mechanism(self, slot: int) -> Mechanism:
        key = 0 if self.shared else slot
        if key not in self.mechanisms:
            self.mechanisms[key] = self.bind(key)
        return self.mechanisms[key]

    def release(self, wave: Wave) -> tuple[FloatArray, NDArray[np.bool_]]:
        released = np.empty(wave.public.size)
        accepted = np.zeros(wave.public.size, dtype=bool)
        for segment, (start, stop, slot) in enumerate(wave.segments):
            mechanism = self.mechanism(slot)
            first, known = len(mechanism.released_), len(mechanism.acceptances_)
            released[start:stop] = mechanism.submit_validated(wave.public_columns(segment), 1, wave.public[start:stop])
            for index in mechanism.acceptances_[known:]:
                accepted[start + index - first] = True
        return released, accepted


class StatelessBank(MechanismBank):
    """A release that is a function of the exact score alone, for every row at once."""

    def __init__(self, bind: Callable[[int], Mechanism], slots: int):
        super().__init__(bind, slots)
        self.prototype = bind(0)

    def release(self, wave: Wave) -> tuple[FloatArray, NDArray[np.bool_]]:
        return self.prototype.release_scores(wave.public), np.zeros(wave.public.size, dtype=bool)


class LadderBank(MechanismBank):
    """The deterministic Ladders' state as arrays indexed by account (module docstring)."""

    def __init__(self, bind: Callable[[int], Mechanism], slots: int):
        super().__init__(bind, slots)
        prototype = self.prototype = bind(0)
        assert isinstance(prototype, Ladder)
        self.sign = prototype.scorer_.sign
        self.current_release = np.full(slots, np.nan)
        self.best_risk = np.full(slots, np.inf)
        self.accepted_any = np.zeros(slots, dtype=bool)
        self.paired = isinstance(prototype, PairedTTestLadder)
        if self.paired:
            self.scale = prototype.critical_value_ / math.sqrt(prototype.n_)
            self.best_rows = np.tile(prototype.holdout_.perfect_loss_row(), (slots, 1))
            self.paired_sd = prototype.holdout_.paired_sd_each

    def release(self, wave: Wave) -> tuple[FloatArray, NDArray[np.bool_]]:
        count = wave.public.size
        released = np.empty(count)
        accepted = np.zeros(count, dtype=bool)
        risks = self.sign * wave.public
        for step in _steps(wave.slots):
            slots = wave.slots[step]
            references = np.where(self.accepted_any[slots], self._references(slots), np.inf)
            hits = step[self._hits(step, slots, risks[step], references, wave)]
            if self.paired and hits.size:
                self.best_rows[wave.slots[hits]] = wave.loss_rows(hits)
            for row in hits.tolist():  # acceptances are rare: one at a time, as the mechanism makes them
                slot = int(wave.slots[row])
                risk = float(risks[row])
                self.best_risk[slot] = risk
                self.current_release[slot] = self.sign * self._accepted_release(slot, risk)
                self.accepted_any[slot] = True
            accepted[hits] = True
            released[step] = self.current_release[slots]
        return released, accepted

    def _accepted_release(self, slot: int, risk: float) -> float:
        """The released risk of account ``slot`` whose best's risk (and loss row) just became ``risk``."""
        return self.prototype._accepted_release(risk)

    def _references(self, slots: IntArray) -> FloatArray:
        if self.prototype.compares_with_release:
            return self.sign * self.current_release[slots]
        return self.best_risk[slots]

    def _hits(self, step: IntArray, slots: IntArray, risks: FloatArray, references: FloatArray, wave: Wave) -> IntArray:
        """Positions (in ``step``) of the rows that beat their account's reference by their margin."""
        if not self.paired:
            return beats_each(risks, references, self.prototype._margins(None, risks.size)).nonzero()[0]
        below = beats_each(risks, references, 0.0).nonzero()[0]  # the t-test margin is never negative
        if below.size == 0:
            return below
        margins = self.scale * self.paired_sd(wave.loss_rows(step[below]), self.best_rows[slots[below]])
        return below[beats_each(risks[below], references[below], margins)]


class LadderBootBank(LadderBank):
    """LadderBoot (Chaibub Neto Alg. 4): the t-test Ladder's decisions as arrays indexed by account;
    then, account by account, each row's fresh bootstrap release drawn from the account's own
    Generators (its releases' and their completions') and sampler
    (:class:`ladderlab.engines.bootstrap.BootstrapMeanSampler` of its best loss vector, rebuilt at each
    acceptance), its rows in order, each run of held rows in one call, as
    one bound LadderBoot per account draws them (the sampler's values do not depend on how draws
    are grouped). The test compares with the best's unrounded risk, never with a release, so the
    draws cannot change a decision."""

    def __init__(self, bind: Callable[[int], Mechanism], slots: int):
        super().__init__(bind, slots)
        self.b = self.prototype.b  # a LadderBoot (VECTOR_BANKS)
        self.losses = self.prototype.holdout_.losses
        self.samplers = [self.prototype.release_sampler_] * slots
        self.rngs: dict[int, tuple[np.random.Generator, np.random.Generator]] = {}

    def release(self, wave: Wave) -> tuple[FloatArray, NDArray[np.bool_]]:
        _, accepted = super().release(wave)
        released = np.empty(wave.public.size)
        if released.size == 0:
            return released, accepted
        hits = np.flatnonzero(accepted)
        best_rows = {row: loss_row.copy() for row, loss_row in zip(hits.tolist(), wave.loss_rows(hits))} if hits.size else {}
        order = np.argsort(wave.slots, kind="stable")
        bounds = np.flatnonzero(np.r_[True, wave.slots[order][1:] != wave.slots[order][:-1], True])
        for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            rows = order[start:stop]
            slot = int(wave.slots[rows[0]])
            (rng, completion), sampler, held_from = self._rngs(slot), self.samplers[slot], 0
            for position in np.flatnonzero(accepted[rows]).tolist():
                if position > held_from:
                    released[rows[held_from:position]] = sampler.draw(rng, position - held_from, completion)
                row = int(rows[position])
                sampler = BootstrapMeanSampler(self.losses(best_rows[row]), self.b)
                released[row] = self.sign * float(sampler.draw(rng, 1, completion)[0])
                held_from = position + 1
            if held_from < rows.size:
                released[rows[held_from:]] = sampler.draw(rng, rows.size - held_from, completion)
            self.samplers[slot] = sampler
        return released, accepted

    def _accepted_release(self, slot: int, risk: float) -> float:
        return math.nan  # drawn after the decisions, in the account's order (``release``)

    def _rngs(self, slot: int) -> tuple[np.random.Generator, np.random.Generator]:
        """The account's Generators: the ones its bound mechanism draws from (releases, completions)."""
        if slot not in self.rngs:
            mechanism = self.bind(slot)
            self.rngs[slot] = mechanism.rng_, mechanism.completion_rng_
        return self.rngs[slot]


def _steps(slots: IntArray) -> list[IntArray]:
    """The rows of a wave by their place in their account's sequence: step j holds the j-th row of
    every account that has one, in wave order."""
    order = np.argsort(slots, kind="stable")
    sorted_slots = slots[order]
    starts = np.flatnonzero(np.r_[True, sorted_slots[1:] != sorted_slots[:-1]])
    place = np.arange(slots.size) - np.repeat(starts, np.diff(np.r_[starts, slots.size]))
    rank = np.empty(slots.size, dtype=np.intp)
    rank[order] = place
    return [np.flatnonzero(rank == j) for j in range(int(rank.max()) + 1)] if slots.size else []


VECTOR_BANKS: dict[str, type[MechanismBank]] = {
    "ladderlab.mechanisms.full_disclosure.FullDisclosure": StatelessBank,
    "ladderlab.mechanisms.kaggle.Kaggle": StatelessBank,
    "ladderlab.mechanisms.ladder.FixedLadder": LadderBank,
    "ladderlab.mechanisms.ladder_free.ParameterFreeLadder": LadderBank,
    "ladderlab.mechanisms.ladder_t.TTestLadder": LadderBank,
    "ladderlab.mechanisms.ladder_boot.LadderBoot": LadderBootBank,
}
"""The exact classes (module and name) whose states have a vector bank."""


def make_bank(mechanism: Mechanism, bind: Callable[[int], Mechanism], slots: int, vector: bool = True,
              shared: bool | None = None) -> MechanismBank:
    """The bank of ``slots`` accounts under ``mechanism``'s class: a vector bank where one exists for
    the exact class and its scorer (``vector=False`` forces one bound mechanism per account);
    ``shared``: one state for every account (None: as the class's ``shared_state`` says)."""
    cls = type(mechanism)
    if cls.shared_state if shared is None else shared:
        return PerAccountBank(bind, slots, shared=True)
    bank = VECTOR_BANKS.get(f"{cls.__module__}.{cls.__qualname__}") if vector else None
    if bank is not None and issubclass(bank, LadderBank) and issubclass(cls, PairedTTestLadder) and not _pairs_rows(bind):
        bank = None
    return (bank or PerAccountBank)(bind, slots)


def _pairs_rows(bind: Callable[[int], Mechanism]) -> bool:
    """True when the bound mechanism's holdout computes the paired sd of many rows against many
    bests (:meth:`~ladderlab.holdout.HoldoutScores.paired_sd_each`)."""
    holdout = bind(0).holdout_
    return isinstance(holdout, BinaryErrorCounts) or (
        isinstance(holdout.scorer, LossScorer) and type(holdout.scorer).paired_sd is LossScorer.paired_sd)
