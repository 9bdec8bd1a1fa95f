"""An arena policy's certificate: its tail verdicts hold their stated error, a policy that lets a provider
select among its variants fails where one that rates on fresh votes passes, and ``ladderlab certify``
issues it, with its stamp, as it issues a mechanism's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from ladderlab.arena.certificate import ArenaAttackSpec, certify_policy, parse_attack, tail_side
from ladderlab.arena.family import PairwiseArena
from ladderlab.cli.commands import main
from ladderlab.runs.page_stamps import stamps_in
from ladderlab.stats.sequential import first_decision

SMALL = PairwiseArena(models=16, providers=4, battles=4000)
BEST_OF = ArenaAttackSpec("best-of-n-variants", {"battles_per_variant": 400})


@pytest.mark.parametrize(("rate", "side"), [(0.02, -1), (0.3, 1)])
def test_a_tail_verdict_decides_a_rate_far_from_beta_on_its_side(rate, side):
    rng = np.random.default_rng(0)
    decided = [tail_side(rng.random(3000) < rate, 0.01, 0.1) for _ in range(40)]
    assert all(found == side for _, found in decided)


def test_a_tail_verdict_at_the_level_is_wrong_no_more_often_than_its_error():
    """At p = β every decision is wrong; Ville's inequality bounds their rate by δ (here 0.05) over any horizon.
    The count of wrong decisions in 400 runs is Binomial(400, ≤ δ): above the 1e-6 quantile it would be an error."""
    rng = np.random.default_rng(1)
    wrong = sum(tail_side(rng.random(1500) < 0.1, 0.05, 0.1)[1] != 0 for _ in range(400))
    assert wrong <= stats.binom.ppf(1 - 1e-6, 400, 0.05)


def test_the_fewest_seasons_to_pass_are_those_of_no_inflation_at_all():
    t = first_decision(0.01, 0.1)
    assert tail_side(np.zeros(t, dtype=bool), 0.01, 0.1) == (t, -1)
    assert tail_side(np.zeros(t - 1, dtype=bool), 0.01, 0.1) == (t - 1, 0)


@pytest.mark.slow
def test_the_plain_board_fails_at_many_variants_and_fresh_votes_pass_them():
    plain = certify_policy("plain-board", attacks=[BEST_OF], budgets=[1, 27], family=SMALL, tau=20.0, replications=400,
                           jobs=1)
    fresh = certify_policy("provisional", {"fresh_votes": 3000}, attacks=[BEST_OF], budgets=[1, 27], family=SMALL,
                           tau=20.0, replications=400, jobs=1)
    verdicts = {certificate["policy"]: [row["verdict"] for row in certificate["rows"]] for certificate in (plain, fresh)}
    assert verdicts["plain-board"][1] == "fails" and verdicts["provisional"] == ["passes", "passes"]
    assert fresh["safe"][0]["budget"] == 27 and plain["safe"][0]["budget"] in (0, 1)
    assert fresh["rows"][1]["reference_p_inflated"] > 0.5  # the plain board at the same point
    assert fresh["honest"]["votes_before_listing"] == 1000 + 3000  # its private test at the default size, then fresh votes


def test_an_attack_pinned_with_its_budget_is_refused():
    with pytest.raises(ValueError, match="--attack best-of-n-variants\\(n_variants=3\\): the certificate sets 'n_variants'"):
        parse_attack("best-of-n-variants(n_variants=3)")


@pytest.mark.slow
def test_ladderlab_certify_issues_an_arena_certificate_with_its_stamp(tmp_path, capsys):
    out = tmp_path / "arena.json"
    code = main(["certify", "variant-cap", "--param", "max_variants=2", "--attack", "best-of-n-variants(battles_per_variant=400)",
                 "--budgets", "1", "5", "--arena", "pairwise(models=16, providers=4, battles=4000)", "--replications", "200",
                 "--tau", "25", "--beta", "0.2", "--out", str(out)])
    assert code == 0
    certificate = json.loads(out.read_text())
    assert certificate["certificate_kind"] == "arena" and certificate["tau"] == 25 and certificate["beta"] == 0.2
    assert certificate["params"] == {"max_variants": 2, "retraction": True}
    assert certificate["rows"][1]["variants_tested_median"] == 2
    stamp = stamps_in(out.with_suffix(".md").read_text())[0]
    assert "arena policy:variant-cap" in stamp["code"] and stamp["command"].startswith("ladderlab certify variant-cap")
    assert "safe private variants" in capsys.readouterr().out


@pytest.mark.parametrize(("arguments", "message"), [
    (["--n", "100"], "--n: a holdout certificate's option; plain-board is an arena policy"),
    (["--accounts", "3"], "--accounts: not for an arena policy"),
    (["--arena", "pairwise(modles=3)"], "--arena pairwise(modles=3): unknown parameter"),
    (["--attack", "boosting"], "--attack boosting: unknown arena attack 'boosting'"),
])
def test_certify_refuses_what_an_arena_certificate_cannot_use(arguments, message, capsys):
    assert main(["certify", "plain-board", *arguments]) == 2
    assert message in capsys.readouterr().err
