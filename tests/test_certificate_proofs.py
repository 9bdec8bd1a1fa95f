"""A certificate's proven side: budgets the theorem alone keeps safe, the public size from which it would,
and its place in the headline."""

from __future__ import annotations

import pytest

from ladderlab.certification import certify
from ladderlab.certification.proofs import proof_public_size, proven_side, proves, zero_one_families
from ladderlab.registry import MECHANISMS
from ladderlab.stats.bounds import ProvenBound


def test_a_budget_is_proven_safe_only_when_the_bound_covers_every_submission_within_the_tolerance():
    assert proves(ProvenBound(0.04, 0.05, "", ""), 0.05, 0.05)
    assert not proves(ProvenBound(0.06, 0.05, "", ""), 0.05, 0.05)  # too loose
    assert not proves(ProvenBound(0.04, 0.1, "", ""), 0.05, 0.05)  # at a lower confidence
    assert not proves(ProvenBound(0.04, 0.05, "", "", holds="every submission answered before …"), 0.05, 0.05)
    assert not proves(ProvenBound(float("inf"), 0.05, "", ""), 0.05, 1e9)  # vacuous
    assert not proves(None, 0.05, 1.0)


def test_the_proven_budget_is_the_largest_below_which_every_budget_is_proven():
    # at n = 20,000 the Ladder's bound is 0.073, 0.088, 0.112 and 0.129 at these budgets (+ 1 release)
    side = proven_side(MECHANISMS.make("ladder", eta=0.05), 20_000, [10, 100, 10_000, 10**6], 0.05, False, 0.1)
    assert [row["proven_safe"] for row in side["budgets"]] == [True, True, False, False]
    assert side["proven_budget"] == 100 and side["tail"] == "hoeffding" and side["delta"] == pytest.approx(0.05)
    assert side["budgets"][2]["public_size_for_proof"] > 20_000


@pytest.mark.parametrize("mechanism, params", [("ladder", {"eta": 0.02}), ("kaggle", {"alpha": 0.01}),
                                               ("noisy", {"scale": 0.005})])
def test_the_public_size_for_the_proof_is_where_the_bound_crosses_the_tolerance(mechanism, params):
    plugin = MECHANISMS.make(mechanism, **params)
    size = proof_public_size(plugin, 200, 0.1, 0.05)
    assert plugin.proven_bound(size, 201, 0.05).epsilon <= 0.1 < plugin.proven_bound(int(size * 0.99), 201, 0.05).epsilon


def test_a_mechanism_whose_proof_never_suffices_has_no_public_size():
    assert proof_public_size(MECHANISMS.make("sparse-vector-ladder"), 100, 0.05, 0.05) is None


def test_only_zero_one_families_get_binomial_tails():
    assert zero_one_families(["zero-one", "accuracy"]) and not zero_one_families(["zero-one", "squared"])
    assert not zero_one_families([])


@pytest.mark.parametrize("mechanism, params, proven", [("ladder", {"eta": 0.25}, 5), ("ladder-boot", {}, None)])
def test_the_certificate_states_its_proven_side_in_the_headline_and_at_each_budget(mechanism, params, proven):
    """τ = ε = 0.9 of the constant prediction's loss (about ½ on random labels): about 0.4·B, above the Ladder's 0.34·B."""
    certificate = certify.certify(mechanism, params=params, n=400, budgets=[5], attacks=["boosting(k=5)"],
                                  default_battery=False, replications=2, tau=0.9, epsilon=0.9, scorer="zero-one")
    assert certificate["proven"]["proven_budget"] == proven
    assert certificate["proven"]["delta"] == certificate["beta"]
    family = certificate["families"]["classification"]
    assert certificate["proven"]["tolerance"] == pytest.approx(min(family["tau_bound"], family["epsilon_bound"]))
    text = certify.markdown(certificate)
    headline = text.splitlines()[2]
    assert (f"proven safe up to {proven} by the theorem alone" if proven else "proven safe at no budget") in headline
    assert "**Proven side**" in text
    (statement,) = certificate["budget_verdicts"][0]["statements"]
    assert statement["proven_safe"] is (proven is not None)
    assert ("no theorem" in statement["text"]) is (proven is None)
