"""The field of a certificate: honest teams calibrated as in kaggle-realistic, adaptive teams playing the worst
attack, and the probability that the public #1 is an adaptive team that overfitted, with exact intervals."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from ladderlab.certification import field
from ladderlab.scenarios import builtin_scenarios

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "breast-cancer"


def _calibration_counts() -> list[int]:
    raw = tomllib.loads(builtin_scenarios()[field.CALIBRATION].read_text())
    mix = next(mix for mix in raw["competition"][0]["mixes"] if mix["name"] == "honest")
    return [team["count"] for team in mix["teams"]]


def test_the_honest_mix_keeps_the_calibration_s_proportions():
    counts = _calibration_counts()
    assert [team["count"] for team in field.honest_mix(sum(counts), 20)] == counts
    seven = field.honest_mix(7, 20)
    assert sum(team["count"] for team in seven) == 7
    exact = 7 * np.array(counts) / sum(counts)
    assert all(abs(team["count"] - share) < 1 for team, share in zip(seven, exact))
    assert all(team["activity"] == "kaggle" for team in seven)


def test_an_analyst_s_view_scales_with_the_task_s_features():
    views = [team["params"]["view"] for team in field.honest_mix(1000, 30)]
    assert views == [24, 24, 12, 12]
    assert all(team["params"]["view"] <= 5 for team in field.honest_mix(1000, 5))


def _row(labels, public, private, sign=1.0):
    public, private = np.asarray(public, float), np.asarray(private, float)
    order = np.argsort(sign * private, kind="stable")
    ranks = np.empty(len(labels))
    ranks[order] = np.arange(1, len(labels) + 1)
    top = int(np.argmin(sign * public))
    return SimpleNamespace(team_labels=labels, team_public=public, team_private=private, sign=sign,
                           public_winner_private_rank=ranks[top],
                           spearman=stats.spearmanr(public, private).statistic)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_an_adaptive_public_leader_overfitted_only_when_its_public_score_beats_its_private_one_by_more_than_tau(sign):
    labels = [field.ADAPTIVE, "honest", "honest"]
    overfit = _row(labels, sign * np.array([0.10, 0.20, 0.30]), sign * np.array([0.40, 0.21, 0.31]), sign)
    measured = field.replication_measures(overfit, tau_raw=0.1)
    assert measured["top_adaptive"] == 1 and measured["top_adaptive_overfit"] == 1
    assert measured["top_private_rank"] == 3
    honest_gap = _row(labels, sign * np.array([0.10, 0.20, 0.30]), sign * np.array([0.15, 0.21, 0.31]), sign)
    assert field.replication_measures(honest_gap, tau_raw=0.1)["top_adaptive_overfit"] == 0
    honest_top = _row(["honest", field.ADAPTIVE, "honest"], sign * np.array([0.10, 0.20, 0.30]),
                      sign * np.array([0.40, 0.90, 0.31]), sign)
    assert field.replication_measures(honest_top, tau_raw=0.1) == pytest.approx(
        {"top_adaptive": 0, "top_adaptive_overfit": 0, "top_private_rank": 2, "spearman": -0.5})


def test_the_field_s_probability_intervals_cover_a_planted_rate_as_often_as_their_confidence_says():
    """Planted fields whose public #1 is an adaptive team that overfitted with probability 0.3 (in the others the
    adaptive team leads without overfitting, or an honest team leads): over 300 fields of 40 competitions, the 90 %
    Clopper–Pearson interval misses 0.3 no more often than an exact binomial bound on 10 % allows (one-sided 99.9 %).
    Counting every adaptive leader (rate 0.5), or an overfitted honest leader, misses in most fields."""
    rng = np.random.default_rng(0)
    labels = [field.ADAPTIVE, "honest", "honest"]
    kinds = [field.replication_measures(_row(labels, public, private), tau_raw=0.1) for public, private in (
        ([0.1, 0.2, 0.3], [0.5, 0.2, 0.3]), ([0.1, 0.2, 0.3], [0.12, 0.2, 0.3]), ([0.1, 0.05, 0.3], [0.5, 0.05, 0.3]))]
    misses = 0
    for _ in range(300):
        drawn = [kinds[kind] for kind in rng.choice(3, size=40, p=[0.3, 0.2, 0.5])]
        values = {name: [measured[name] for measured in drawn] for name in kinds[0]}
        interval = field.summarise(values, 0.9, seed=0)["top_adaptive_overfit"]
        misses += not interval["lo"] <= 0.3 <= interval["hi"]
    assert misses <= stats.binom.ppf(0.999, 300, 0.1)


def _certificate(tmp_path: Path) -> dict:
    certificate = json.loads((EXAMPLE / "ladder.json").read_text())
    certificate["run_dir"] = str(tmp_path / "battery")
    for family in certificate["families"].values():
        family["params"]["path"] = str(EXAMPLE / "challenge.toml")
    return certificate


def test_a_field_of_adaptive_teams_alone_is_led_by_one_and_a_field_without_any_never(tmp_path):
    """Planted: with every team adaptive, the public #1 is adaptive in every competition (the interval's lower end
    is the exact (α/2)^(1/R) bound of R hits of R); with none, in none."""
    certificate = _certificate(tmp_path)
    rules = field.FieldRules(10, 5, "best-public")
    alone = field.run(certificate, teams=2, adaptive=2, rules=rules, replications=6, run_dir=tmp_path / "a")
    mine = alone["mechanisms"][0]
    assert mine["replications"] == 6 and mine["top_adaptive"]["hits"] == 6
    assert mine["top_adaptive"]["lo"] == pytest.approx(0.025 ** (1 / 6))
    honest = field.run(certificate, teams=3, adaptive=0, rules=rules, replications=4, run_dir=tmp_path / "h")
    assert all(entry["top_adaptive"]["hits"] == 0 for entry in honest["mechanisms"])
    assert [entry["label"] for entry in honest["mechanisms"]] == ["ladder(eta=0.01)", "full-disclosure"]
    assert sum(team["count"] for team in honest["honest_teams"]) == 3


def test_the_field_plays_the_worst_attack_at_the_safe_budget_on_the_challenge(tmp_path):
    certificate = _certificate(tmp_path)
    built, setup = field.scenario(certificate, teams=10, adaptive=2, rules=field.FieldRules(30, 5), replications=3,
                                  seed=0)
    safe = certificate["safe_budget"]
    worst = max((row for row in certificate["battery"] if row["budget"] == safe and row["severity"] is not None),
                key=lambda row: row["severity"])  # every row that played passes at the safe budget
    assert (setup["attack_id"], setup["attack_params"], setup["budget"]) == (worst["attack"], worst["worst_params"], safe)
    table = built.competition[0]
    assert table.rules[0].total == safe and table.tasks[0].id == "challenge"
    teams = table.mixes[0].teams
    assert teams[0].label == field.ADAPTIVE and teams[0].count == 2
    assert sum(team.count for team in teams) == 10
    assert field.markdown({**setup, "tau_raw": 0.1, "replications": 3, "confidence": 0.95, "seed": 0,
                           "mechanisms": []}).splitlines()[1] == "## The field"
