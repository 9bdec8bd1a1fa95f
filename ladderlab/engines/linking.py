"""Linking a Sybil's accounts: near-identical submissions share one mechanism state (issue 28, item 6).

A leaderboard's guarantee holds per mechanism state, so an attacker who registers A accounts gets A
states. The organiser sees every account's submissions; the typical Sybil runs one model (or one
hill climb) on many accounts, so its accounts submit the same or near-identical predictions. A
:class:`LinkRule` links two accounts when one submission of one and the latest submission of the
other differ on fewer than ⌈p₀N⌉ of the N holdout rows; linked accounts are answered by one mechanism
state and share one budget from that submission on (:func:`ladderlab.competition.play_competition`'s
``link``: a group's submissions beyond one account's cap, or beyond one account's daily quota in a
round, are refused, answered with the state's last release; :meth:`Linker.charge`).

**The statistic.** For two submissions a and b (predictions on every holdout row), D is the number
of holdout rows where they differ (``|a − b| > tolerance`` in any column); the rule links when
D ≤ t = ⌈p₀N⌉ − 1, p₀ = ``min_disagreement`` (:meth:`LinkRule.threshold`). D is a function of the two
prediction vectors, N, p₀ and the tolerance: neither the labels nor which rows are public enter it.
Whatever a participant submits, the link decision is the same under every public/final split (under
any permutation of which rows are public), so observing it teaches nothing about the split. The
rule this replaces counted d, the differing *public* rows, and linked when d was at most a
hypergeometric quantile: a probe that changed t known-public rows and one row r was linked exactly
when r was final (docs/decisions.md#serve-link-probe).

**Honest pairs are never linked.** The assumption that defines an honest pair is that two different
teams' submissions differ on at least a share p₀ of the holdout rows, D ≥ ⌈p₀N⌉ > t, for every pair
of their submissions that the rule compares. Under it the rule links no honest pair, with certainty:
for every split, every number of comparisons and adaptive teams too (the rule it replaces needed
the predictions not to depend on the split, and split a level α over the comparisons). There is
nothing left for a level to bound, so the rule has no ``alpha``: a rule, rules table or
certificate that gives one is refused (:meth:`LinkRule.from_record`). Where the assumption fails,
honest teams are linked: the tests measure how often for the independently trained ``improving``
teams and for the natural analysts, whose models can coincide (``tests/test_linking.py``). The
labels play no part: agreement in *errors* is not independent between honest teams (both find the
hard rows hard); agreement in *predictions* beyond 1 − p₀ is what one model on two accounts gives.

**Sybils are caught at least as often, up to the old rule's α.** Compare, for the same two
submissions, the old decision (d ≤ c, c the largest count with HypergeomCDF(c; N, ⌈p₀N⌉, n) ≤ α/K,
K comparisons per pair) and the new one (D ≤ t). When D ≤ t the new rule links whatever d is. So
the old rule links where the new one does not only when d ≤ c and D ≥ ⌈p₀N⌉, which is the old rule's
own false-link event: for submissions made without knowing the split, d is hypergeometric
(n draws from N rows of which D differ), its CDF at c falls as D grows, and the event has
probability at most α/K per comparison, at most α over a pair's K comparisons (Bonferroni). A
Sybil does not know the split, so a small d came from a small D; and every comparison with D ≤ t,
which the old rule caught only when d ≤ c, now links with certainty.

**What it does not catch.** A Sybil whose accounts submit unrelated predictions (boosting's random
probes differ from each other on half the rows), or that keeps its accounts at least ⌈p₀N⌉ rows
apart, is never linked: only a budget per person (identity checks) bounds it.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

_COMPARISON_ELEMENTS = 1 << 22
"""Elements of one block of :meth:`Linker.cannot_link`'s comparison (submissions × accounts × holdout rows)."""


RULE_NAME = "differing-holdout-rows"
"""What identifies the rule in a certificate's ``link_rule`` and a service log's record
(:meth:`LinkRule.record`): records without it were written by the rule on public rows, whose
decision depended on the split; they are refused, never read as this rule."""


@dataclass(frozen=True)
class LinkRule:
    """When two accounts are linked (module docstring): when two submissions differ on fewer than
    ``min_disagreement`` = p₀ of the holdout rows, rows differing when their predictions differ by
    more than ``tolerance`` (0: exactly). An honest pair (every two of its submissions differ on at
    least p₀ of the holdout rows) is never linked; ``alpha``, the old rule's level, is refused."""

    min_disagreement: float = 0.05
    tolerance: float = 0.0
    alpha: InitVar[object] = None

    def __post_init__(self, alpha: object) -> None:
        if alpha is not None:
            raise ValueError(f"link rule: alpha = {alpha!r} is no longer a parameter: the rule counts the differing "
                             "holdout rows, not the public ones, and links no pair that differs on at least "
                             "min_disagreement of them, so there is no false-link rate to set "
                             "(docs/decisions.md#serve-link-probe)")
        value = self.min_disagreement
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise ValueError(f"link rule: min_disagreement must lie in (0, 1), got {value!r}")
        if isinstance(self.tolerance, bool) or not isinstance(self.tolerance, (int, float)) or not self.tolerance >= 0:
            raise ValueError(f"link rule: tolerance must be a number ≥ 0, got {self.tolerance!r}")

    def threshold(self, holdout: int) -> int:
        """The most differing rows, of ``holdout`` holdout rows, that link: ⌈p₀N⌉ − 1."""
        if holdout < 1:
            raise ValueError(f"threshold: need holdout ≥ 1 rows, got {holdout}")
        return math.ceil(self.min_disagreement * holdout) - 1

    def record(self) -> dict[str, object]:
        """The rule as certificates and service logs keep it (:data:`RULE_NAME` names it)."""
        return {"rule": RULE_NAME, "min_disagreement": self.min_disagreement, "tolerance": self.tolerance}

    @classmethod
    def from_record(cls, record: object) -> LinkRule:
        """The rule a :meth:`record` describes; ValueError, one line naming the difference, for a
        record of another rule, such as the old one on public rows (with ``alpha``)."""
        if not isinstance(record, dict):
            raise ValueError(f"a link rule is a JSON object, got {record!r}")
        if record.get("rule") != RULE_NAME:
            old = {key: record[key] for key in ("alpha", "min_disagreement") if key in record}
            raise ValueError(f"the link rule {old or record} is the old rule on differing public rows (its decision "
                             f"depended on the split), not {RULE_NAME!r} (docs/decisions.md#serve-link-probe)")
        unknown = sorted(set(record) - {"rule", "min_disagreement", "tolerance"})
        if unknown:
            raise ValueError(f"the link rule has no parameter {unknown[0]!r}")
        return cls(**{key: value for key, value in record.items() if key != "rule"})


def differing_rows(latest: FloatArray, row: FloatArray, tolerance: float) -> NDArray[np.int64]:
    """For each row of ``latest`` (accounts × holdout rows [× classes]), the rows where it differs
    from ``row`` by more than ``tolerance`` (:func:`differing_counts` of one submission)."""
    return differing_counts(latest, row[None], tolerance)[0]


def differing_counts(latest: FloatArray, rows: FloatArray, tolerance: float) -> NDArray[np.int64]:
    """For each submission of ``rows`` (submissions × holdout rows [× classes]) and each row of
    ``latest`` (accounts × holdout rows [× classes]), the rows where they differ by more than
    ``tolerance``: submissions × accounts. At tolerance 0 that is ``!=`` (for finite floats, a − b = 0
    only when a = b, subnormals included), without the difference's temporaries: a tenth of the time."""
    far = rows[:, None] != latest[None] if tolerance == 0 else np.abs(rows[:, None] - latest[None]) > tolerance
    if far.ndim == 4:
        far = far.any(axis=3)
    return np.count_nonzero(far, axis=2)


@dataclass
class Link:
    """A link made: ``account``'s submission number ``submission`` (its own count, from 0) differed
    from ``other``'s latest on ``differing`` holdout rows, in ``round``."""

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
    the state its probes wore out, not by a fresh one. Submissions are predictions on every one
    of the ``holdout`` rows, in one order: which of them are public plays no part."""

    rule: LinkRule
    accounts: int
    holdout: int
    threshold: int = field(init=False)
    """The most differing holdout rows that link (:meth:`LinkRule.threshold`)."""
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
        self.threshold = self.rule.threshold(self.holdout)
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

    def observe(self, account: int, row: FloatArray, round_: int = 0) -> int:
        """Compare ``account``'s new submission (``row``) with the latest of every account
        outside its group, link where they differ on at most ``threshold`` rows, and return the keeper
        whose state answers the submission."""
        if self.seen is not None and self.seen.any():
            candidates = np.flatnonzero(self.seen)
            own = self.keeper(account)
            candidates = candidates[[self.keeper(int(other)) != own for other in candidates]]
            if candidates.size:  # every account's count at once: cheaper than gathering the candidates' rows
                counts = differing_rows(self.latest, row, self.rule.tolerance)[candidates]
                for other, count in zip(candidates[counts <= self.threshold].tolist(),
                                        counts[counts <= self.threshold].tolist()):
                    if self.keeper(other) != self.keeper(account):
                        self.links.append(Link(account, other, self.made[account], round_, int(count)))
                        self._merge(account, other)
        return self.observe_unlinked(account, row[None])

    def cannot_link(self, account: int, rows: FloatArray) -> NDArray[np.bool_]:
        """For each of ``account``'s next submissions (rows of ``rows``, in order), whether
        :meth:`observe` would link it to nothing: no account outside its group has a latest
        submission within the threshold of it. Links only grow the group, and no other account
        submits in between, so one comparison of every row with every other account's latest,
        made now, holds for the whole sequence."""
        quiet = np.ones(rows.shape[0], dtype=bool)
        if self.latest is None or self.seen is None or not self.seen.any():
            return quiet
        own = self.keeper(account)
        outside = np.flatnonzero(self.seen & (np.array(self.groups()) != own))
        if not outside.size:
            return quiet
        latest = self.latest[outside]
        step = max(1, _COMPARISON_ELEMENTS // latest.size)
        for start in range(0, rows.shape[0], step):
            counts = differing_counts(latest, rows[start : start + step], self.rule.tolerance)
            quiet[start : start + step] = (counts > self.threshold).all(axis=1)
        return quiet

    def observe_unlinked(self, account: int, rows: FloatArray) -> int:
        """:meth:`observe` for each row of ``rows`` in order, given that none links
        (:meth:`cannot_link`): the bookkeeping of them all at once; the keeper that answers them."""
        if self.latest is None:
            self.latest = np.zeros((self.accounts, *rows.shape[1:]))
            self.seen = np.zeros(self.accounts, dtype=bool)
        assert self.seen is not None
        self.latest[account] = rows[-1]
        self.seen[account] = True
        self.made[account] += rows.shape[0]
        keeper = self.keeper(account)
        self.answered[keeper] += rows.shape[0]
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
