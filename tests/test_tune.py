"""What to deploy: declared search spaces, and the recommendation of ``certify --tune``."""

import json
from pathlib import Path

import pytest

from ladderlab.certification import battery, certify, challenge_certify, tune
from ladderlab.cli.commands import main
from ladderlab.registry import MECHANISMS
from ladderlab.runs import page_stamps
from ladderlab.runs.runner import play_replications

KNOWN_DELTA = str(Path(__file__).parent / "data" / "known_delta.py")


@pytest.mark.parametrize("mechanism_id", MECHANISMS.ids())
def test_every_search_space_holds_declared_parameters_and_admissible_values(mechanism_id):
    cls = MECHANISMS.get(mechanism_id)
    assert set(cls._search_space) <= set(cls._parameter_constraints)
    for name, values in cls._search_space.items():
        assert len(values) >= 2 and len(set(map(repr, values))) == len(values)
        for value in values:
            MECHANISMS.make(mechanism_id, **{name: value}).validate_params()


def test_a_real_valued_scorer_searches_the_prediction_range_too():
    found = tune.settings("ladder", {}, "squared")
    assert len(found) == len(MECHANISMS.get("ladder")._search_space["eta"]) * len(tune.PREDICTION_RANGES)
    assert {str(prediction_range) for _, prediction_range in found} == {str(r) for r in tune.PREDICTION_RANGES}


def test_the_releases_resolution_is_searched_in_fractions_of_the_tolerance_on_every_scorer():
    """The Ladder's η is searched where an honest improvement of τ·U is released, whatever B: on the squared
    error of labels clipped into [−3, 3] (B = 36) as on the 0/1 loss (B = 1), in the same fractions of τ;
    the B-unit values of its search space would release no improvement of τ = 0.1·U on the first."""
    for scorer, prediction_range, bound in (("squared", (-3.0, 3.0), 36.0), ("zero-one", "training", 1.0)):
        improvement = certify.tolerance_improvement(certify.families(200, scorer, prediction_range))
        etas = [point["eta"] for point, _ in tune.settings("ladder", {}, scorer, improvement=lambda r: improvement)
                if _ == "training" or scorer == "squared"]
        assert etas[:len(tune.TOLERANCE_FRACTIONS)] == [fraction * improvement / 2 for fraction in tune.TOLERANCE_FRACTIONS]
        assert 1.5 * max(etas) < improvement
    squared = certify.tolerance_improvement(certify.families(200, "squared", (-3.0, 3.0)))
    assert min(MECHANISMS.get("ladder")._search_space["eta"]) > squared


def test_a_mechanism_with_nothing_to_search_is_refused_by_name():
    with pytest.raises(ValueError, match="ladder-free.*nothing to search"):
        tune.settings("ladder-free", {}, "zero-one")


@pytest.mark.slow
def test_tune_recommends_the_certified_setting_with_the_best_honest_utility(tmp_path):
    """A release shifted by −0.1·B fails (Δ ≈ −0.1 < −τ); shifts 0 and −0.02 pass. A constant shift
    does not reorder the honest participant's releases, so their utilities tie and the first
    certified setting is recommended; the table, the plot and the certificate go beside --out."""
    out = tmp_path / "tuned.json"
    assert main(["--quiet", "certify", f"{KNOWN_DELTA}:Shifted", "--tune", "--n", "1000", "--budgets", "1", "--only",
                 "--attack", f"{KNOWN_DELTA}:Guess", "--replications", "150", "--epsilon", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    certified = [row["certified"] for row in result["settings"]]
    assert certified == [False, True, True]
    utilities = [row["utility"]["median"] for row in result["settings"]]
    assert utilities[1] == utilities[2] and result["recommended"] == 1
    assert "Recommended:" in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (stamp,) = page_stamps.stamps_in(out.with_suffix(".md").read_text())
    assert stamp["command"].startswith("ladderlab --quiet certify ") and stamp["command"].endswith(f"--out {out}")
    assert {f"mechanism:{KNOWN_DELTA}:Shifted", f"attack:{KNOWN_DELTA}:Guess"} <= set(stamp["code"])


def _without_run(certificate: dict) -> dict:
    return {key: value for key, value in certificate.items()
            if key not in ("run_dir", "wall_time_seconds", "cpu_time_seconds")}


@pytest.mark.slow
def test_full_disclosure_plays_once_for_the_whole_search_with_the_same_results(tmp_path, monkeypatch):
    """Full disclosure's duels (reference and honest participant) do not depend on the setting: the
    search plays them once, and every certificate (so the table, the figure and the recommendation)
    is that of its setting certified alone, playing its own."""
    played = []

    def counting(group, seed, replications, *args, **kwargs):
        played.extend((cell.mechanism[0], replication) for cell in group for replication in replications)
        return play_replications(group, seed, replications, *args, **kwargs)

    monkeypatch.setattr(battery, "play_replications", counting)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    options = dict(n=1000, budget=1, attacks=[f"{KNOWN_DELTA}:Guess"], default_battery=False, replications=150,
                   epsilon=1.0, seed=3)
    result = tune.tune(f"{KNOWN_DELTA}:Shifted", **options)
    shared = sum(mechanism == "full-disclosure" for mechanism, _ in played)
    alone = []
    for number, row in enumerate(result["settings"]):
        played.clear()
        certificate = certify.certify(f"{KNOWN_DELTA}:Shifted", row["params"], n=1000, budgets=[1], scorer="zero-one",
                                      attacks=options["attacks"], default_battery=False, replications=150, epsilon=1.0,
                                      seed=3, run_dir=tmp_path / f"alone-{number}")
        assert _without_run(certificate) == _without_run(row["certificate"])
        alone.append(sum(mechanism == "full-disclosure" for mechanism, _ in played))
    assert len(alone) == 3 and min(alone) > 0 and shared == max(alone) < sum(alone)
    assert result["recommended"] == 1  # the table and the figure are read from these certificates alone


@pytest.mark.slow
def test_tune_on_a_challenge_certifies_each_setting_on_its_data_and_serve_accepts_the_recommended_certificate(
        tmp_path, capsys):
    from ladderlab.certification import challenge as challenges
    from tests.serve_helpers import write_challenge

    path = write_challenge(tmp_path, n=400, rules="total = 20")
    out = tmp_path / "certs" / "tuned.json"
    assert main(["--quiet", "certify", "ladder", "--challenge", str(path), "--tune", "--only", "--attack",
                 "boosting(k=20)", "--replications", "80", "--tau", "1", "--epsilon", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["challenge"], result["n"], result["budget"]) == (str(path), 200, 20)
    improvement = certify.tolerance_improvement(challenge_certify.challenge_families(path, budgets=[20]), tau=1.0)
    searched = [fraction * improvement / 2 for fraction in tune.TOLERANCE_FRACTIONS]
    assert [row["params"]["eta"] for row in result["settings"]] == searched
    identities = {row["certificate"]["challenge"]["task_identity"] for row in result["settings"]}
    assert len(identities) == 1 and all(row["certified"] for row in result["settings"])
    recommended = result["settings"][result["recommended"]]["params"]
    advice = capsys.readouterr().err.splitlines()[-1]
    assert advice.endswith(f'params = {{ eta = {recommended["eta"]} }}, certificate = "certs/tuned-recommended.json"')
    text = path.read_text().replace("eta = 0.01", f"eta = {recommended['eta']}").replace(
        'id = "ladder"', 'id = "ladder"\ncertificate = "certs/tuned-recommended.json"')
    path.write_text(text)
    assert challenges.certificate_problems(challenges.load(path)) == []


@pytest.mark.slow
def test_tune_at_a_budget_below_the_files_says_to_lower_the_total_and_serve_then_accepts_its_certificate(tmp_path, capsys):
    from ladderlab.certification import challenge as challenges
    from tests.serve_helpers import write_challenge

    path = write_challenge(tmp_path, n=400, rules="total = 50")
    out = tmp_path / "certs" / "tuned.json"
    assert main(["--quiet", "certify", "ladder", "--challenge", str(path), "--tune", "--budgets", "20", "--only",
                 "--attack", "boosting(k=20)", "--replications", "80", "--tau", "1", "--epsilon", "1", "--out", str(out)]) == 0
    recommended = json.loads(out.read_text())["settings"][json.loads(out.read_text())["recommended"]]["params"]
    advice = capsys.readouterr().err.splitlines()[-1]
    assert advice.endswith('certificate = "certs/tuned-recommended.json", and [rules] total = 20 (the budget certified; '
                           'the file allows 50)')
    path.write_text(path.read_text().replace("eta = 0.01", f"eta = {recommended['eta']}").replace(
        'id = "ladder"', 'id = "ladder"\ncertificate = "certs/tuned-recommended.json"').replace("total = 50", "total = 20"))
    assert challenges.certificate_problems(challenges.load(path)) == []  # the honest participant played at most 20 too
