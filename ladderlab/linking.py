"""Linking a Sybil's accounts: near-identical submissions share one mechanism state (issue 28, item 6).

A leaderboard's guarantee holds per mechanism state, so an attacker who registers A accounts gets A
states. The organiser sees every account's submissions; the typical Sybil runs one model (or one
hill climb) on many accounts, so its accounts submit the same or near-identical predictions. A
:class:`LinkRule` links two accounts when one submission of one and the latest submission of the
other differ on at most ``threshold`` public rows; linked accounts are answered by one mechanism
state and share one budget from that submission on (:func:`ladderlab.competition.play_competition`'s
``link``: a group's submissions beyond one account's cap, or beyond one account's daily quota in a
round, are refused, answered with the state's last release; :meth:`Linker.charge`).

**The statistic and its null.** For two submissions a and b (predictions on every holdout row), let
D be the number of holdout rows, of N, where they differ (``|a − b| > tolerance`` in any column) and
d the number of those among the n public rows. If the submissions were made without knowing which
holdout rows are public, d is hypergeometric: n draws without replacement from N rows of which D
differ. The assumption that defines an honest pair is that two different teams' predictions differ
on at least a share ``min_disagreement`` = p₀ of the holdout rows (D ≥ ⌈p₀N⌉); the hypergeometric CDF
at any c falls as D grows, so under it P(d ≤ c) ≤ H(c) = HypergeomCDF(c; N, ⌈p₀N⌉, n), exactly.
The labels play no part: agreement in *errors* is not independent between honest teams (both find
the hard rows hard), agreement in *predictions* beyond 1 − p₀ is what one model on two accounts gives.

**The false-link rate.** An account's submission is compared with the latest submission of every
account not already in its group, so a pair of accounts is compared at most ``comparisons`` times
(each of their submissions once: 2 · (the rules' cap + 1) in a competition). The per-comparison
threshold is the largest c with H(c) ≤ α / comparisons (Bonferroni), so an honest pair is ever
linked with probability at most α (``alpha``, per pair of accounts), whatever the dependence
between the comparisons. With fewer public rows than that level allows (H(0) > α / comparisons)
the threshold is −1 and nothing is linked. The guarantee needs the assumption on p₀, a uniformly random public split (every
task's, and the rules' ``public_fraction``; not a challenge's ``split.column``) and predictions that
do not depend on which rows are public; adaptive honest teams (the natural analysts, who learn from
released scores) are covered by the tests' measured rates (``tests/test_linking.py``), not by
the theorem.

**What it does not catch.** A Sybil whose accounts submit unrelated predictions (boosting's random
probes differ from each other on half the rows) agrees with nothing beyond chance and is never
linked: only a budget per person (identity checks) bounds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

_COMPARISON_ELEMENTS = 1 << 22
"""Elements of one block of :meth:`Linker.cannot_link`'s comparison (submissions × accounts × public rows)."""


@dataclass(frozen=True)
class LinkRule:
    """When two accounts are linked (module docstring): ``alpha`` is the chance that an honest pair
    of accounts (differing on at least ``min_disagreement`` of the holdout rows) is ever linked;
    rows differ when their predictions differ by more than ``tolerance`` (0: exactly)."""

    alpha: float = 0.01
    min_disagreement: float = 0.05
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        for name in ("alpha", "min_disagreement"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                raise ValueError(f"link rule: {name} must lie in (0, 1), got {value!r}")
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, (int, float)) or not self.tolerance >= 0:
            raise ValueError(f"link rule: tolerance must be a number ≥ 0, got {self.tolerance!r}")

    def threshold(self, holdout: int, public: int, comparisons: int) -> int:
        """The largest number of differing public rows that links, at ``comparisons`` comparisons per
        pair of accounts, with ``public`` of ``holdout`` rows public (−1: nothing links)."""
        from scipy.stats import hypergeom  # imported when a competition links: it is slow to import

        if not 1 <= public <= holdout or comparisons < 1:
            raise ValueError(f"threshold: need 1 ≤ public ≤ holdout and comparisons ≥ 1, got {public}, {holdout}, "
                             f"{comparisons}")
        level = self.alpha / comparisons
        differing = math.ceil(self.min_disagreement * holdout)
        cdf = hypergeom.cdf(np.arange(public + 1), holdout, differing, public)
        below = np.flatnonzero(cdf <= level)
        return int(below[-1]) if below.size else -1


def pair_comparisons(cap: int) -> int:
    """How many times two accounts of ``cap`` submissions each can be compared: once for each
    submission of either, the final one (outside the caps) included."""
    return 2 * (cap + 1)


def differing_rows(latest: FloatArray, row: FloatArray, tolerance: float) -> NDArray[np.int64]:
    """For each row of ``latest`` (accounts × public rows [× classes]), the public rows where it
    differs from ``row`` by more than ``tolerance`` (:func:`differing_counts` of one submission)."""
    return differing_counts(latest, row[None], tolerance)[0]


def differing_counts(latest: FloatArray, rows: FloatArray, tolerance: float) -> NDArray[np.int64]:
    """For each submission of ``rows`` (submissions × public rows [× classes]) and each row of
    ``latest`` (accounts × public rows [× classes]), the public rows where they differ by more than
    ``tolerance``: submissions × accounts. At tolerance 0 that is ``!=`` (for finite floats, a − b = 0
    only when a = b, subnormals included), without the difference's temporaries: a tenth of the time."""
    far = rows[:, None] != latest[None] if tolerance == 0 else np.abs(rows[:, None] - latest[None]) > tolerance
    if far.ndim == 4:
        far = far.any(axis=3)
    return np.count_nonzero(far, axis=2)


@dataclass
class Link:
    """A link made: ``account``'s submission number ``submission`` (its own count, from 0) differed
    from ``other``'s latest on ``differing`` public rows, in ``round``."""

    account: int
    other: int
    submission: int
    round: int
    differing: int


@dataclass
class Linker:
    """The groups of ``accounts`` accounts as submissions arrive (:meth:`observe`), in order.

    A group is answered by the mechanism state of its *keeper*: when groups merge, the keeper of
    the group that has made the most submissions (``answered``; on ties, the lowest account), so a
    Sybil that probes on throwaway accounts and then submits on a fresh main one is answered by
    the state its probes wore out, not by a fresh one."""

    rule: LinkRule
    accounts: int
    threshold: int
    parent: list[int] = field(init=False)
    answered: list[int] = field(init=False)
    made: list[int] = field(init=False)
    spent: list[int] = field(init=False)
    """Each group's accepted submissions within the caps, kept at its keeper."""
    spent_today: list[int] = field(init=False)
    """The same in round ``today``: one account's daily quota serves the whole group."""
    today: int = 0
    links: list[Link] = field(default_factory=list)
    latest: FloatArray | None = None
    seen: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        self.parent = list(range(self.accounts))
        self.answered = [0] * self.accounts
        self.made = [0] * self.accounts
        self.spent = [0] * self.accounts
        self.spent_today = [0] * self.accounts

    def keeper(self, account: int) -> int:
        """The account whose mechanism state answers ``account``'s group."""
        root = account
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[account] != root:  # path compression
            self.parent[account], account = root, self.parent[account]
        return root

    def groups(self) -> list[int]:
        """Every account's keeper."""
        return [self.keeper(account) for account in range(self.accounts)]

    def observe(self, account: int, public_row: FloatArray, round_: int = 0) -> int:
        """Compare ``account``'s new submission (its public columns) with the latest of every account
        outside its group, link where they differ on at most ``threshold`` rows, and return the keeper
        whose state answers the submission."""
        if self.threshold >= 0 and self.seen is not None and self.seen.any():
            candidates = np.flatnonzero(self.seen)
            own = self.keeper(account)
            candidates = candidates[[self.keeper(int(other)) != own for other in candidates]]
            if candidates.size:  # every account's count at once: cheaper than gathering the candidates' rows
                counts = differing_rows(self.latest, public_row, self.rule.tolerance)[candidates]
                for other, count in zip(candidates[counts <= self.threshold].tolist(),
                                        counts[counts <= self.threshold].tolist()):
                    if self.keeper(other) != self.keeper(account):
                        self.links.append(Link(account, other, self.made[account], round_, int(count)))
                        self._merge(account, other)
        return self.observe_unlinked(account, public_row[None])

    def cannot_link(self, account: int, public_rows: FloatArray) -> NDArray[np.bool_]:
        """For each of ``account``'s next submissions (rows of ``public_rows``, in order), whether
        :meth:`observe` would link it to nothing: no account outside its group has a latest
        submission within the threshold of it. Links only grow the group, and no other account
        submits in between, so one comparison of every row with every other account's latest,
        made now, holds for the whole sequence."""
        quiet = np.ones(public_rows.shape[0], dtype=bool)
        if self.threshold < 0 or self.latest is None or self.seen is None or not self.seen.any():
            return quiet
        own = self.keeper(account)
        outside = np.flatnonzero(self.seen & (np.array(self.groups()) != own))
        if not outside.size:
            return quiet
        latest = self.latest[outside]
        step = max(1, _COMPARISON_ELEMENTS // latest.size)
        for start in range(0, public_rows.shape[0], step):
            counts = differing_counts(latest, public_rows[start : start + step], self.rule.tolerance)
            quiet[start : start + step] = (counts > self.threshold).all(axis=1)
        return quiet

    def observe_unlinked(self, account: int, public_rows: FloatArray) -> int:
        """:meth:`observe` for each row of ``public_rows`` in order, given that none links
        (:meth:`cannot_link`): the bookkeeping of them all at once; the keeper that answers them."""
        if self.latest is None:
            self.latest = np.zeros((self.accounts, *public_rows.shape[1:]))
            self.seen = np.zeros(self.accounts, dtype=bool)
        assert self.seen is not None
        self.latest[account] = public_rows[-1]
        self.seen[account] = True
        self.made[account] += public_rows.shape[0]
        keeper = self.keeper(account)
        self.answered[keeper] += public_rows.shape[0]
        return keeper

    def charge(self, keeper: int, round_: int, cap: int, per_round: int, count: int = 1) -> int:
        """How many of ``count`` more submissions of the group of ``keeper`` in ``round_`` fit one
        account's caps (``cap`` over the competition, ``per_round`` a round), the first ones;
        counts those: a refused submission spends nothing (0 or 1 for one submission)."""
        if round_ != self.today:
            self.today, self.spent_today = round_, [0] * self.accounts
        allowed = max(0, min(count, cap - self.spent[keeper], per_round - self.spent_today[keeper]))
        self.spent[keeper] += allowed
        self.spent_today[keeper] += allowed
        return allowed

    def _merge(self, a: int, b: int) -> None:
        ka, kb = self.keeper(a), self.keeper(b)
        keep, drop = sorted((ka, kb), key=lambda k: (-self.answered[k], k))
        self.parent[drop] = keep
        for counts in (self.answered, self.spent, self.spent_today):
            counts[keep] += counts[drop]
