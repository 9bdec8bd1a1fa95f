from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ladderlab.engines.bayesboot import MAX_ODDS
from ladderlab.engines.bootstrap import BINOMIAL_COST, MAX_REPLICATES, ResampleSums, bootstrap_counts
from ladderlab.mechanism import FloatArray, Mechanism
from ladderlab.params import Interval, Options
from ladderlab.scoring import LossScorer, PredictionKind, Scorer

RESAMPLE_CHUNK_ELEMENTS = 1 << 15
"""Resampled counts scored at once: the rank and moment temporaries of a chunk stay in cache
(chunks of 8 MiB made a submission about 3 times slower)."""


@dataclass(frozen=True)
class BootLadderBootDecision:
    """One call of bootLadderBoot with a lead: the Bayes factor K, whether the new submission met
    the cutoff, and the released score."""

    bayes: float
    met: bool
    score: float


def _divide(x: float, y: float) -> float:
    return np.inf if y == 0 else x / y


def bootladderboot_decision(
    new_scores: FloatArray,
    lead_scores: FloatArray,
    greater_is_better: bool,
    variant: str = "2019",
    bayes_threshold: float = 3.0,
    report_n: int = 10,
) -> BootLadderBootDecision:
    """Sage Bionetworks' ``computeBayesFactor`` and release on paired bootstrap scores.

    With d_b = new_b − lead_b over the resamples, a = #{d_b ≥ 0}, b = #{d_b < 0}
    (:func:`bayes_factor`). The release is the mean of the first ``report_n`` resampled
    scores of the new submission if it met the cutoff, else of the lead.
    """
    d = new_scores - lead_scores
    at_least = int(np.count_nonzero(d >= 0))
    mean_difference = float(np.mean(new_scores)) - float(np.mean(lead_scores))
    bayes, met = bayes_factor(at_least, d.size - at_least, mean_difference, greater_is_better, variant, bayes_threshold)
    score = float(np.mean((new_scores if met else lead_scores)[:report_n]))
    return BootLadderBootDecision(bayes, met, score)


def bayes_factor(at_least: int, below: int, mean_difference: float, greater_is_better: bool,
                 variant: str = "2019", bayes_threshold: float = 3.0) -> tuple[float, bool]:
    """Sage Bionetworks' ``computeBayesFactor``: the Bayes factor K and whether it meets the cutoff.

    From a = ``at_least`` = #{d_b ≥ 0} and b = ``below`` = #{d_b < 0} of the paired differences
    and the sign of ``mean_difference`` = mean(new) − mean(lead): K_raw = a/b (``"2019"``, as
    deployed) or max(a/b, b/a) (``"head"``, the package since July 2020); K = 1/K_raw when
    mean(new) ≤ mean(lead), whatever the orientation, with x/0 = ∞ and 1/∞ = 0. The new
    submission meets the cutoff when K > ``bayes_threshold`` and its mean is better in the
    metric's orientation. Under ``"head"`` a smaller-is-better metric can never meet the
    cutoff: a better mean inverts K to 1/max(a/b, b/a) ≤ 1.
    """
    a, b = at_least, below
    k_raw = _divide(a, b) if (variant == "2019" or a > b) else _divide(b, a)
    if mean_difference <= 0:
        k = 0.0 if np.isinf(k_raw) else _divide(1.0, k_raw)
    else:
        k = k_raw
    better = mean_difference > 0 if greater_is_better else mean_difference < 0
    return float(k), bool(k > bayes_threshold and better)


class SageBootLadderBoot(Mechanism):
    """Sage Bionetworks' bootLadderBoot as DREAM challenges ran it: paired ordinary bootstrap, Bayes factor K > 3.

    ``challengescoring::bootLadderBoot`` (R/bootstrap.R), deployed in the IDG-DREAM
    Drug-Kinase Binding challenge, round 1b (2019); a simplified form of Chaibub
    Neto et al. 2016 that uses the ordinary, not the Bayesian, bootstrap. Each
    submission draws ``bootstrap_n`` fresh paired resamples of the public rows and
    scores itself and the lead (the most recent accepted submission: the deployment
    compares with the team's last submission that met the cutoff, not with the best
    raw score) on each; :func:`bootladderboot_decision` decides and releases. The
    first submission has no lead: it is accepted and releases the mean of its first
    ``report_n`` resampled scores. The resamples are fresh on every call (the R
    function takes a seed and never uses it), so a rejected submission re-releases a
    new estimate of the lead: an averaging channel. ``variant="2019"`` is the
    deployed code, ``"head"`` the package today. Any scorer; resampled scores are
    computed from count matrices (``Scorer.on_resamples``), never a loop over resamples.
    Version 2 draws each resample's counts from n uniform indices (``bootstrap_counts``)
    in cache-sized chunks instead of a multinomial: the same distribution, another random
    stream, about 3 times faster per submission. Version 3 draws those indices as 16-bit
    integers: the same distribution again, another stream. Version 4, for a per-sample loss,
    draws only what the decision depends on (docs/decisions.md#sage-sufficient-draws): the
    first ``report_n`` resamples in full (they are released), the others as the sums c_b·d of
    the loss difference d = l_new − l_lead (:class:`ladderlab.engines.bootstrap.ResampleSums`), since
    new_b − lead_b = c_b·d / n and mean(new) − mean(lead) = Σ_b c_b·d / (B·n): the same
    distribution of the decision and the release, another stream.
    """

    id = "sage-bootladderboot"
    reference = "Sage Bionetworks challengescoring::bootLadderBoot (IDG-DREAM round 1b, 2019)"
    releases_best = True
    version = "4"
    _parameter_constraints = {
        "variant": [Options({"2019", "head"})],
        "bootstrap_n": [Interval(int, 1, MAX_REPLICATES)],
        "report_n": [Interval(int, 1, MAX_REPLICATES)],
        "bayes_threshold": [Interval(float, 0, MAX_ODDS)],
    }
    _search_space = {"bayes_threshold": [1.0, 3.0, 10.0]}

    def __init__(self, variant: str = "2019", bootstrap_n: int = 10_000, report_n: int = 10, bayes_threshold: float = 3.0):
        self.variant = variant
        self.bootstrap_n = bootstrap_n
        self.report_n = report_n
        self.bayes_threshold = bayes_threshold

    def _check_params(self) -> None:
        if self.report_n > self.bootstrap_n:
            raise ValueError(f"{self.id}: report_n ({self.report_n}) must not exceed bootstrap_n ({self.bootstrap_n})")

    def resampled_values(self, n_public: int, scorer: Scorer | None = None) -> int:
        """``bootstrap_n`` paired resamples of the n public rows, each scoring two predictions; for
        a per-sample loss, ``report_n`` of them in full and the others' sums over the samples whose
        loss changed (at most n indices each; for a loss of labels, whose difference takes the
        values ±1, two binomials, each worth ``BINOMIAL_COST`` indices)."""
        if not isinstance(scorer, LossScorer):
            return 2 * self.bootstrap_n * n_public
        others = 2 * BINOMIAL_COST if scorer.prediction_kind == PredictionKind.LABEL else n_public
        return int(2 * self.report_n * n_public + (self.bootstrap_n - self.report_n) * others)

    def _start(self) -> None:
        self.lead_: FloatArray | None = None
        self.bayes_factors_: list[float] = []

    def _release(self, P: FloatArray) -> FloatArray:
        self._scores(P)  # raises for a non-finite score before any state changes
        released = np.empty(P.shape[0])
        for row, prediction in enumerate(P):
            if self.lead_ is None:
                released[row] = float(np.mean(self._resampled_scores(prediction[None, :], self.report_n)[:, 0]))
                self.bayes_factors_.append(np.nan)
                met = True
            else:
                decision = self._decide(prediction)
                released[row] = decision.score
                self.bayes_factors_.append(decision.bayes)
                met = decision.met
            if met:
                self.lead_ = prediction.copy()
                self.acceptances_.append(len(self.released_) + row)
        return released

    def _decide(self, prediction: FloatArray) -> BootLadderBootDecision:
        """:func:`bootladderboot_decision` of ``prediction`` against the lead on fresh resamples."""
        pair = np.stack([prediction, self.lead_])
        if not isinstance(self.scorer_, LossScorer):
            scores = self._resampled_scores(pair, self.bootstrap_n)
            return bootladderboot_decision(scores[:, 0], scores[:, 1], self.scorer_.greater_is_better,
                                           self.variant, self.bayes_threshold, self.report_n)
        losses = self.scorer_.loss(self.labels_, pair)
        difference = losses[0] - losses[1]
        counts = self._counts(self.report_n)
        released = self.scorer_.on_resamples(self.labels_, pair, counts)
        sums = np.concatenate([counts @ difference,
                               ResampleSums(difference).draw(self.rng_, self.bootstrap_n - self.report_n)])
        at_least = int(np.count_nonzero(sums >= 0))
        bayes, met = bayes_factor(at_least, sums.size - at_least, float(np.sum(sums)),
                                  self.scorer_.greater_is_better, self.variant, self.bayes_threshold)
        return BootLadderBootDecision(bayes, met, float(np.mean(released[:, 0 if met else 1])))

    def _resampled_scores(self, predictions: FloatArray, resamples: int) -> FloatArray:
        """resamples × m scores of ``predictions`` on fresh paired ordinary-bootstrap resamples."""
        out = np.empty((resamples, predictions.shape[0]))
        start = 0
        for counts in bootstrap_counts(self.rng_, resamples, self.n_, RESAMPLE_CHUNK_ELEMENTS):
            out[start : start + counts.shape[0]] = self.scorer_.on_resamples(self.labels_, predictions, counts)
            start += counts.shape[0]
        return out

    def _counts(self, resamples: int) -> FloatArray:
        """resamples × n counts of fresh ordinary-bootstrap resamples."""
        return np.concatenate(list(bootstrap_counts(self.rng_, resamples, self.n_, RESAMPLE_CHUNK_ELEMENTS)))
