"""Challenge files: what they build, every refusal as one line naming the file, key and value,
and what a certificate covers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ladderlab.certification import challenge as challenges
from ladderlab.certification.challenge import ChallengeError, certificate_problems
from ladderlab.engines.linking import LinkRule
from tests.serve_helpers import write_challenge


def test_the_split_follows_the_labels_file_in_the_published_order_of_the_ids(tmp_path):
    path = write_challenge(tmp_path, n=101)
    loaded = challenges.load(path)
    table = pd.read_csv(tmp_path / "labels.csv")
    assert loaded.ids.tolist() == [str(i) for i in sorted(table.id)]
    by_id = table.set_index(table.id.astype(str))
    assert np.array_equal(loaded.split.y_holdout, by_id.loc[loaded.ids, "label"].to_numpy())
    public = set(loaded.ids[loaded.split.public_rows])
    assert public == set(table.id[table.split == "public"].astype(str))
    assert loaded.split.public.classes.tolist() == [0.0, 1.0]
    assert loaded.split.public.X_holdout.shape == (101, 0)


def test_a_public_fraction_with_a_seed_is_the_same_split_at_every_load(tmp_path):
    path = write_challenge(tmp_path, n=200)
    text = path.read_text().replace('column = "split"', "public_fraction = 0.3\nseed = 5")
    path.write_text(text)
    first, again = challenges.load(path), challenges.load(path)
    assert first.split.public_rows.size == 60
    assert np.array_equal(first.split.public_rows, again.split.public_rows)
    path.write_text(text.replace("seed = 5", "seed = 6"))
    assert not np.array_equal(first.split.public_rows, challenges.load(path).split.public_rows)


def test_the_identity_changes_with_what_determines_a_release_and_not_with_the_rules(tmp_path):
    path = write_challenge(tmp_path)
    identity = challenges.load(path).identity()
    path.write_text(path.read_text().replace("per_day = 1000", "per_day = 3"))
    assert challenges.load(path).identity() == identity
    path.write_text(path.read_text().replace("eta = 0.01", "eta = 0.02"))
    assert challenges.load(path).identity() != identity


def _replace(old: str, new: str):
    return lambda path: path.write_text(path.read_text().replace(old, new, 1))


def _labels(change):
    def apply(path: Path) -> None:
        table = pd.read_csv(path.parent / "labels.csv", dtype={"id": str})
        change(table)
        table.to_csv(path.parent / "labels.csv", index=False)
    return apply


def _set(column, row, value):
    def change(table):
        table[column] = table[column].astype(object)
        table.loc[row, column] = value
    return change


BAD = [
    (_replace('scorer = "zero-one"', 'scorrer = "zero-one"'), "unknown key 'scorrer'; did you mean 'scorer'"),
    (_replace('scorer = "zero-one"', 'scorer = "zero-two"'), "scorer: unknown scorer 'zero-two'"),
    (_replace('file = "labels.csv"', 'file = "nowhere.csv"'), "labels.file: no such file"),
    (_replace("[labels]", '[labels]\nlabel_column = "y"'), "has no column 'y'"),
    (_labels(_set("id", 1, None)), "has no id"),
    (_labels(lambda table: table.__setitem__("id", [table.id[1]] + list(table.id[1:]))), "appears 2 times"),
    (_labels(_set("label", 3, "cat")), "labels.csv: column 'label': row 4 (id '1005') has 'cat' among labels such as"),
    (_labels(lambda table: table.__setitem__("label", np.where(table.index == 5, "7", "dog"))),
     "row 6 (id '1004') has '7' among labels such as 'dog': give every label as a number or every label as a class name"),
    (lambda path: (_labels(lambda table: table.__setitem__("label", np.where(table.index == 2, "cow", "dog")))(path),
                   _replace('scorer = "zero-one"', 'scorer = "zero-one"\nclasses = ["dog", "cat"]')(path)),
     "row 3 (id '1014') has label 'cow', not one of classes ['cat', 'dog'] (challenge key 'classes')"),
    (lambda path: (_labels(lambda table: table.__setitem__("label", "dog"))(path),
                   _replace('scorer = "zero-one"', 'scorer = "zero-one"\nclasses = [0, 1]')(path)),
     "the labels are class names (e.g. 'dog'), the challenge key 'classes' lists numbers [0.0, 1.0]"),
    (_replace('scorer = "zero-one"', 'scorer = "zero-one"\nclasses = [0, "cat"]'),
     "classes: give every class as a number or every class as a name, not both"),
    (lambda path: (_labels(_set("label", 3, "cat"))(path), _replace('scorer = "zero-one"', 'scorer = "squared"')(path)),
     "id '1005' has 'cat', not a finite number"),
    (_labels(_set("label", 3, "nan")), "has 'nan', not a finite number"),
    (lambda path: (_labels(_set("label", 3, 2.0))(path), _replace('scorer = "zero-one"', 'scorer = "zero-one"\nclasses = [0, 1]')(path)),
     "has label 2, not one of classes [0.0, 1.0]"),
    (_labels(_set("split", 2, "private")), "has 'private'; the split column holds 'public' or 'final'"),
    (_replace('column = "split"', 'column = "split"\npublic_fraction = 0.5'), "give either column"),
    (_replace("eta = 0.01", "eta = 0.01, etta = 2"), "mechanism.params.etta: unknown parameter of 'ladder' 'etta'"),
    (_replace("eta = 0.01", "eta = -1.0"), "mechanism.params.eta"),
    (_replace("eta = 0.01", "eta = [0.01, 0.02]"), "a list makes a grid of mechanisms"),
    (_replace("per_day = 1000", "per_day = 0"), "rules.per_day: Input should be greater than or equal to 1, got 0"),
    (_replace("per_day = 1000", 'per_day = "none"'),
     "rules.per_day: give a whole number ≥ 1 of submissions per team and UTC day, or 'unlimited' for no daily cap, "
     "got 'none'"),
    (_replace("per_day = 1000", "per_day = 5\nstart = 2026-03-01T00:00:00Z\nend = 2026-01-01T00:00:00Z"),
     "end 2026-01-01T00:00:00+00:00 is not after start"),
    (_replace("per_day = 1000", "start = 2026-03-01T00:00:00"), "give a time zone"),
    (_replace('name = "beta"', 'name = "Alpha"'), "team 'Alpha' is listed twice"),
    (_replace('scorer = "zero-one"', 'scorer = "zero-one"\nprediction_range = [1.0, 0.0]'), "prediction_range must be"),
    (lambda path: path.write_text(path.read_text() + "\n[[["), "not valid TOML"),
    (_replace("per_day = 1000", "per_day = 1000\nlink = true\nlink_alpha = 0.01"),
     "test.toml: rules.link_alpha: link rule: alpha = 0.01 is no longer a parameter"),
    (_replace("per_day = 1000", "per_day = 1000\nlink_tolerance = 0.1"),
     "link_tolerance = 0.1 is a parameter of linking: set link = true"),
]


@pytest.mark.parametrize("mutate, expected", BAD)
def test_a_bad_challenge_is_refused_with_one_line_per_problem_naming_the_file_and_the_key(tmp_path, mutate, expected):
    path = write_challenge(tmp_path, n=20)
    mutate(path)
    with pytest.raises(ChallengeError) as refused:
        challenges.load(path)
    lines = str(refused.value).splitlines()
    assert any(expected in line for line in lines)
    assert all(line.startswith(str(tmp_path)) for line in lines)


def test_a_mechanism_that_cannot_use_the_scorer_is_refused_before_anything_runs(tmp_path):
    path = write_challenge(tmp_path, n=20, scorer="accuracy", mechanism="ladder-t", params="alpha = 0.15")
    with pytest.raises(ChallengeError, match=r"mechanism: mechanism 'ladder-t' needs a per-sample loss"):
        challenges.load(path)


@pytest.mark.parametrize("scorer, extra", [("log-loss", "prediction_range = [0.01, 0.99]"), ("roc-auc", "")])
def test_a_binary_scorer_on_labels_of_more_than_two_classes_is_refused_naming_the_column_and_the_scorers_to_use(
        tmp_path, scorer, extra):
    path = write_challenge(tmp_path, n=30, scorer=scorer, extra=extra)
    labels = pd.read_csv(tmp_path / "labels.csv")
    labels["label"] = np.arange(30) % 3
    labels.to_csv(tmp_path / "labels.csv", index=False)
    with pytest.raises(ChallengeError) as refused:
        challenges.load(path)
    assert str(refused.value) == (
        f"{path}: scorer: '{scorer}' scores binary labels 0 and 1, but {tmp_path / 'labels.csv'}: column 'label' holds "
        "3 distinct labels (0, 1, 2); for several classes 'multiclass-log-loss' scores class probabilities, 'zero-one' "
        "and 'accuracy' class labels")
    labels["label"] = np.arange(30) % 2
    labels.to_csv(tmp_path / "labels.csv", index=False)
    assert challenges.load(path).split.y_holdout.max() == 1.0


def test_renaming_a_challenge_whose_split_is_drawn_says_that_the_name_drew_another_split(tmp_path):
    path = write_challenge(tmp_path, n=400, rules="per_day = 10\ntotal = 300")
    path.write_text(path.read_text().replace('column = "split"', "public_fraction = 0.5\nseed = 3"))
    original = challenges.load(path)
    _certificate(tmp_path, challenge={"name": "test", "scorer": "zero-one", "task_identity": original.task_identity()},
                 honest={"participant": "improving(days=300)"})
    path.write_text(path.read_text().replace("params = { eta = 0.01 }", 'params = { eta = 0.01 }\ncertificate = "ladder.json"'))
    assert certificate_problems(challenges.load(path)) == []
    path.write_text(path.read_text().replace('name = "test"', 'name = "test-final"'))
    [problem] = certificate_problems(challenges.load(path))
    assert "differ (the split is drawn from split.seed and the challenge's name, so renaming 'test' to 'test-final' " \
           "drew another one)" in problem


def _certificate(folder: Path, **changes) -> Path:
    certificate = {"mechanism": "ladder", "params": {"eta": 0.01}, "n": 200, "safe_budget": 300,
                   "budgets": [100, 300, 1000], **changes}
    (folder / "ladder.json").write_text(json.dumps(certificate))
    return folder / "ladder.json"


def _certified(tmp_path: Path, rules: str = "per_day = 10\ntotal = 300", challenge_scorer: str = "zero-one",
               extra: str = "", **changes) -> challenges.Challenge:
    path = write_challenge(tmp_path, n=400, rules=rules, scorer=challenge_scorer, extra=extra)
    _certificate(tmp_path, **changes)
    path.write_text(path.read_text().replace("params = { eta = 0.01 }",
                                             'params = { eta = 0.01 }\ncertificate = "ladder.json"'))
    return challenges.load(path)


def test_a_certificate_covers_the_same_mechanism_on_a_holdout_as_large_at_a_budget_as_large(tmp_path):
    assert certificate_problems(_certified(tmp_path)) == []


@pytest.mark.parametrize("changes, rules, named", [
    ({"mechanism": "kaggle"}, "total = 300", "mechanism 'ladder' is not the certified mechanism 'kaggle'"),
    ({"params": {"eta": 0.02}}, "total = 300", "mechanism parameter eta = 0.01 is not the certified 0.02"),
    ({"n": 201}, "total = 300", "the public holdout has 200 rows, fewer than the certified n = 201"),
    ({"safe_budget": 299}, "total = 300", "a team may make 300 submissions, more than the certificate's safe budget of 299"),
    ({}, "per_day = 10", "nothing bounds a team's submissions"),
    ({}, 'per_day = "unlimited"\nstart = 2026-01-01T00:00:00Z\nend = 2026-02-01T00:00:00Z',
     "nothing bounds a team's submissions"),
    ({}, "per_day = 10\nstart = 2026-01-01T00:00:00Z\nend = 2026-02-01T00:00:00Z",
     "a team may make 310 submissions, more than the certificate's safe budget of 300"),
    ({}, "total = 300\naccounts = 2", "let a participant hold 2 accounts (rules.accounts), more than the certificate's 1"),
    ({"accounts": 3}, "total = 300\naccounts = 4", "hold 4 accounts (rules.accounts), more than the certificate's 3"),
    ({"accounts": 3, "link": "linked when …"}, "total = 300\naccounts = 2",
     "assumed a participant's accounts linked (certify --accounts 3 --link), the rules link none of the 2"),
    ({"accounts": 3, "link": "linked when …", "link_rule": LinkRule().record()},
     "total = 300\naccounts = 2\nlink = true\nlink_tolerance = 0.1",
     "rules.link_tolerance = 0.1 is not the certificate's link rule's 0.0"),
    ({"accounts": 3, "link": "linked when …", "link_rule": LinkRule(min_disagreement=0.1).record()},
     "total = 300\naccounts = 2\nlink = true\nlink_min_disagreement = 0.05",
     "rules.link_min_disagreement = 0.05 is not the certificate's link rule's 0.1"),
])
def test_what_a_certificate_does_not_cover_is_named(tmp_path, changes, rules, named):
    problems = certificate_problems(_certified(tmp_path, rules=rules, **changes))
    assert len(problems) == 1 and named in problems[0]


def test_an_unlimited_daily_cap_leaves_the_total_to_bound_a_team(tmp_path):
    challenge = _certified(tmp_path, rules='per_day = "unlimited"\ntotal = 300')
    assert challenge.spec.rules.per_day is None
    assert certificate_problems(challenge) == []


def _families(**scorers) -> dict:
    """A certificate's task families (as ``ladderlab certify`` records them), one per scorer and range."""
    families = {f"family-{i}": {"task": "some-task", "params": {"scorer": scorer.replace("_", "-"), "prediction_range": bounds}}
                for i, (scorer, bounds) in enumerate(scorers.items())}
    return {**families, "honest": {"task": "some-task", "params": {"scorer": "absolute"}}}


@pytest.mark.parametrize("scorer, extra, changes, named", [
    ("zero-one", "", {"families": _families(squared=None, log_loss=[0.01, 0.99])},
     "scorer 'zero-one' is not certified (the certificate covers 'log-loss', 'squared')"),
    ("zero-one", "", {"scorer": "accuracy"}, "scorer 'zero-one' is not certified (the certificate covers 'accuracy')"),
    ("squared", "", {"families": _families(squared=[0.0, 1.0])},
     "any prediction (prediction_range) is not within the certified prediction range [0.0, 1.0] for scorer 'squared'"),
    ("squared", "prediction_range = [-1, 1]", {"scorer": "squared", "prediction_range": [0, 1]},
     "predictions in [-1.0, 1.0] (prediction_range) is not within the certified prediction range [0, 1]"),
])
def test_a_certificate_for_another_scorer_or_a_narrower_prediction_range_does_not_cover(tmp_path, scorer, extra,
                                                                                       changes, named):
    problems = certificate_problems(_certified(tmp_path, challenge_scorer=scorer, extra=extra, **changes))
    assert len(problems) == 1 and named in problems[0]


@pytest.mark.parametrize("scorer, extra, changes", [
    ("zero-one", "", {"families": _families(zero_one=None, squared=[0.0, 1.0])}),
    ("squared", "prediction_range = [0.25, 0.75]", {"families": _families(squared=[0.0, 1.0])}),
    ("squared", "", {"families": _families(squared=None)}),
    ("squared", "", {"scorer": "squared"}),
])
def test_a_certificate_for_the_scorer_on_a_range_that_contains_the_challenges_covers_it(tmp_path, scorer, extra,
                                                                                         changes):
    assert certificate_problems(_certified(tmp_path, challenge_scorer=scorer, extra=extra, **changes)) == []


@pytest.mark.parametrize("changes, rules", [
    ({"accounts": 3}, "total = 300\naccounts = 3"),
    ({"accounts": 3}, "total = 300\naccounts = 2"),
    ({"accounts": 3, "link": "linked when …"}, "total = 300"),  # one account: nothing to link
    ({"accounts": 3, "link": "linked when …", "link_rule": LinkRule().record()}, "total = 300\naccounts = 3\nlink = true"),
    ({"accounts": 3, "link": "linked when …", "link_rule": LinkRule(min_disagreement=0.1).record()},
     "total = 300\naccounts = 2\nlink = true\nlink_min_disagreement = 0.1"),
])
def test_a_certificate_of_at_least_the_rules_accounts_covers_them(tmp_path, changes, rules):
    assert certificate_problems(_certified(tmp_path, rules=rules, **changes)) == []


def test_the_service_links_with_the_certificates_rule_where_the_rules_give_none(tmp_path):
    recorded = LinkRule(min_disagreement=0.1, tolerance=0.5).record()
    challenge = _certified(tmp_path, rules="total = 300\naccounts = 2\nlink = true\nlink_tolerance = 0.5",
                           accounts=2, link="linked when …", link_rule=recorded)
    assert challenge.link_rule() == LinkRule(min_disagreement=0.1, tolerance=0.5)
    assert challenge.link_threshold() == 39  # ⌈0.1 · 400 holdout rows⌉ − 1, whatever the caps


def test_linking_needs_no_bound_on_a_teams_submissions(tmp_path):
    challenge = challenges.load(write_challenge(tmp_path, rules="per_day = 10\naccounts = 2\nlink = true"))
    assert challenge.link_threshold() == 19


@pytest.mark.parametrize("recorded", [{"link_rule": {"alpha": 0.01, "min_disagreement": 0.05, "tolerance": 0.0}}, {}])
def test_a_certificate_of_the_old_link_rule_on_public_rows_is_refused_by_name(tmp_path, recorded):
    """Made before the rule counted holdout rows (its rule has alpha, or it records none): it speaks
    for a rule whose decision depended on the split, not for this one."""
    challenge = _certified(tmp_path, rules="total = 300\naccounts = 2\nlink = true", accounts=2,
                           link="linked when …", **recorded)
    for ask in (certificate_problems, challenges.Challenge.link_rule):
        with pytest.raises(challenges.ChallengeError) as refused:
            ask(challenge)
        message = str(refused.value)
        assert "\n" not in message and "ladder.json: the link rule" in message and "is the old rule on differing public rows" in message
        assert "certify again with --link" in message


def test_a_challenge_without_a_certificate_is_not_covered(tmp_path):
    assert "names no certificate" in certificate_problems(challenges.load(write_challenge(tmp_path)))[0]


def test_the_documented_example_challenge_loads_with_its_public_data():
    loaded = challenges.load(Path(__file__).resolve().parent.parent / "examples" / "challenge" / "challenge.toml")
    public = loaded.split.public
    assert (loaded.ids.size, loaded.split.public_rows.size, public.X_train.shape, public.X_holdout.shape) == (
        200, 100, (300, 3), (200, 3))
    assert loaded.ids[0] == "row-000" and loaded.per_team_budget() == 100


def _named_labels(path: Path, names: dict[float, str], train: bool = False) -> None:
    """Rename the numeric labels of ``path``'s labels file (and of a training file) to class names."""
    labels = pd.read_csv(path.parent / "labels.csv", dtype={"id": str})
    labels["label"] = labels.label.map(names)
    labels.to_csv(path.parent / "labels.csv", index=False)
    if train:
        pd.DataFrame({"x": np.arange(6.0), "label": [names[value % 2] for value in range(6)]}).to_csv(
            path.parent / "train.csv", index=False)
        path.write_text(path.read_text().replace("[labels]", '[data]\ntrain = "train.csv"\n\n[labels]'))


def test_class_names_are_the_indices_of_the_sorted_names_in_labels_training_rows_and_identity(tmp_path):
    numeric = write_challenge(tmp_path / "numbers", n=40)
    named = write_challenge(tmp_path / "names", n=40)
    _named_labels(named, {0.0: "malignant", 1.0: "benign"}, train=True)
    by_numbers, by_names = challenges.load(numeric), challenges.load(named)
    assert by_names.class_names == ("benign", "malignant") and by_numbers.class_names is None
    assert by_names.split.public.classes.tolist() == [0.0, 1.0]
    assert np.array_equal(by_names.split.y_holdout, 1 - by_numbers.split.y_holdout)  # benign (was 1) is class 0
    assert by_names.split.public.y_train.tolist() == [1, 0, 1, 0, 1, 0]
    renamed = write_challenge(tmp_path / "renamed", n=40)
    _named_labels(renamed, {0.0: "benign", 1.0: "malignant"})
    flipped = challenges.load(renamed)
    assert np.array_equal(flipped.split.y_holdout, by_numbers.split.y_holdout)
    assert flipped.task_identity() != by_numbers.task_identity()  # the names are part of the data
    assert flipped.identity() != by_numbers.identity()  # and so of what determines a release


def test_a_training_label_outside_the_class_names_is_refused_naming_its_row(tmp_path):
    path = write_challenge(tmp_path, n=20)
    _named_labels(path, {0.0: "cat", 1.0: "dog"}, train=True)
    train = pd.read_csv(tmp_path / "train.csv")
    train.loc[4, "label"] = "cow"
    train.to_csv(tmp_path / "train.csv", index=False)
    with pytest.raises(ChallengeError, match=r"train.csv: column 'label': row 5 has label 'cow', not one of classes "
                                             r"\['cat', 'dog'\]"):
        challenges.load(path)


@pytest.mark.parametrize("rules, days", [
    ("per_day = 5\nstart = 2026-01-01T00:00:00Z\nend = 2026-03-02T00:00:00Z", 60),  # 60 days, 300 submissions
    ("per_day = 5\ntotal = 30\nstart = 2026-01-01T00:00:00Z\nend = 2026-03-02T00:00:00Z", 30),  # the total binds
    ('per_day = "unlimited"\ntotal = 40', 40),  # no dates: a submission a day for the team's budget
])
def test_the_default_honest_participant_follows_the_challenges_schedule(tmp_path, rules, days):
    challenge = challenges.load(write_challenge(tmp_path, rules=rules))
    assert challenge.honest_participants() == [("improving", {"days": days})]


def test_the_default_honest_participant_submits_no_more_than_the_budget_certified(tmp_path):
    # certify --budgets 20 on a file of total = 50, then the file's total lowered to the safe 20: one certificate
    rules = "per_day = 5\ntotal = 50\nstart = 2026-01-01T00:00:00Z\nend = 2026-02-19T00:00:00Z"  # 49 days
    certified = challenges.load(write_challenge(tmp_path / "certified", rules=rules))
    served = challenges.load(write_challenge(tmp_path / "served", rules=rules.replace("total = 50", "total = 20")))
    assert certified.honest_participants(20) == served.honest_participants(20) == [("improving", {"days": 20})]
    assert certified.honest_participants() == [("improving", {"days": 49})]


def test_a_challenge_declares_its_honest_participants_with_the_spec_parser(tmp_path):
    extra = '[certify]\nhonest = ["improving(days=12, alpha=2.0)", "conservative-analyst"]\n'
    challenge = challenges.load(write_challenge(tmp_path, extra=extra))
    assert challenge.honest_participants() == [("improving", {"days": 12, "alpha": 2.0}), ("conservative-analyst", {})]


@pytest.mark.parametrize("honest, named", [
    ('["improvng(days=60)"]', "did you mean 'improving'"),
    ('["boosting"]', "'boosting' is an attack, not an honest participant; the honest participants are"),
    ('["improving(dayz=60)"]', "did you mean 'days'"),
    ('["improving(days=60)", "improving(days = 60)"]', "is listed twice"),
    ("[]", "certify.honest"),
])
def test_a_bad_honest_participant_in_a_challenge_file_is_refused_by_key(tmp_path, honest, named):
    with pytest.raises(ChallengeError) as refused:
        challenges.load(write_challenge(tmp_path, extra=f"[certify]\nhonest = {honest}\n"))
    assert "certify.honest" in str(refused.value) and named in str(refused.value)


def _for_the_challenge(tmp_path: Path, honest, rules: str = "per_day = 10\ntotal = 300", extra: str = ""):
    """A certificate made for the challenge (its data hash recorded) with ``honest`` as its record."""
    path = write_challenge(tmp_path, n=400, rules=rules, extra=extra)
    record = {"name": "test", "scorer": "zero-one", "task_identity": challenges.load(path).task_identity(),
              "budgets": [300]}
    return _certified(tmp_path, rules=rules, extra=extra, challenge=record, honest=honest)


@pytest.mark.parametrize("honest", [
    {"participant": "improving(days=300)"},  # version 1: one entry, its label
    [{"participant": "improving(days=300)", "id": "improving", "params": {"days": 300, "alpha": 1.0, "view": None}}],
])
def test_a_certificate_of_the_challenges_honest_participants_covers_it_in_either_version(tmp_path, honest):
    assert certificate_problems(_for_the_challenge(tmp_path, honest)) == []


def test_a_certificate_of_other_honest_participants_is_stale(tmp_path):
    [problem] = certificate_problems(_for_the_challenge(tmp_path, {"participant": "improving(days=30)"}))
    assert ("measured the cost to honest participants with improving(days=30); this challenge's are "
            "improving(days=300) (the default for its schedule): certify again with --challenge") in problem
    extra = '[certify]\nhonest = ["improving(days=300)", "progressive-analyst(lam=0.5)"]\n'
    [problem] = certificate_problems(_for_the_challenge(tmp_path / "declared", {"participant": "improving(days=300)"},
                                                        extra=extra))
    assert "this challenge's are improving(days=300), progressive-analyst(lam=0.5) ([certify] honest)" in problem


def test_a_certificate_whose_honest_record_names_no_participant_is_refused_in_one_line(tmp_path):
    with pytest.raises(ChallengeError) as refused:
        certificate_problems(_for_the_challenge(tmp_path, {"rank_correlation": 0.5}))
    assert "\n" not in str(refused.value) and "its 'honest' record does not name its honest participants" in str(refused.value)


def _crowd(tmp_path: Path, entries: str, **options) -> challenges.Challenge:
    """A challenge whose teams are the ``[[teams]]`` tables ``entries`` (TOML)."""
    path = write_challenge(tmp_path, teams=(), **options)
    path.write_text(path.read_text() + entries)
    return challenges.load(path)


def test_one_teams_entry_with_a_count_stands_for_that_many_numbered_teams(tmp_path):
    challenge = _crowd(tmp_path, '[[teams]]\nname = "crowd"\ncount = 300\n\n[[teams]]\nname = "baseline"\n')
    names = [team.name for team in challenge.spec.teams]
    assert names[:2] == ["crowd-001", "crowd-002"] and names[-2:] == ["crowd-300", "baseline"] and len(set(names)) == 301
    assert [team.name for team in _crowd(tmp_path / "big", '[[teams]]\nname = "t"\ncount = 1000\n').spec.teams][-2:] == [
        "t-999", "t-1000"]  # three digits until 999: the count's own digits never rename the teams before it


@pytest.mark.parametrize("entries, named", [
    ('[[teams]]\nname = "crowd"\ncount = 3\n\n[[teams]]\nname = "CROWD-002"\n', "team 'CROWD-002' is listed twice"),
    ('[[teams]]\nname = "crowd-002"\n\n[[teams]]\nname = "crowd"\ncount = 3\n',
     "team 'crowd-002' is listed twice (made by name = 'crowd' with count = 3)"),
    ('[[teams]]\nname = "crowd"\ncount = 0\n', "teams[0].count: Input should be greater than or equal to 1, got 0"),
    ('[[teams]]\nname = "crowd"\ncount = 1000000000000\n', "less than or equal to 100000"),
    ('[[teams]]\nname = "a"\ncount = 60000\n\n[[teams]]\nname = "b"\ncount = 60000\n',
     "120,000 teams (counts included); a challenge has at most 100,000"),
    (f'[[teams]]\nname = "{"x" * 61}"\ncount = 5\n', "longer than 64 characters"),
    ('[[teams]]\nname = "organiser"\ncount = 5\n', "is the organiser's name"),
])
def test_a_bad_team_count_is_refused_by_key_before_any_name_is_made(tmp_path, entries, named):
    with pytest.raises(ChallengeError) as refused:
        _crowd(tmp_path, entries)
    assert "teams" in str(refused.value) and named in str(refused.value)


def test_a_million_teams_are_refused_without_making_their_names(tmp_path, monkeypatch):
    monkeypatch.setattr(challenges.TeamTable, "names", lambda self: pytest.fail("names made before the bound"))
    with pytest.raises(ChallengeError, match="1,000,000 teams"):
        _crowd(tmp_path, "".join(f'[[teams]]\nname = "g{i}"\ncount = 100000\n\n' for i in range(10)))


def test_raising_a_count_changes_no_other_teams_transcript(tmp_path):
    """Each team's mechanism draws from a stream of its own name (serve), and a count adds names
    without renaming any: crowd-042's releases under noise are the same, bit for bit, in a challenge
    of 99 crowd teams and in one of 100 and another team, over HTTP to the running service."""
    from ladderlab.serve.storage import sqlite_url
    from tests.serve_helpers import ThreadServer, open_service, upload

    rows = np.random.default_rng(7).integers(0, 2, (6, 400)).astype(float)
    released = []
    for folder, entries in (("small", '[[teams]]\nname = "crowd"\ncount = 99\n'),
                            ("large", '[[teams]]\nname = "crowd"\ncount = 100\n\n[[teams]]\nname = "late"\n')):
        path = write_challenge(tmp_path / folder, teams=(), mechanism="noisy", params='noise = "gaussian", scale = 0.05')
        path.write_text(path.read_text() + entries)
        service, tokens = open_service(path, sqlite_url(tmp_path / folder / "log.sqlite"))
        with ThreadServer(service) as server:
            answers = [upload(server.url, tokens["crowd-042"], row[None]) for row in rows]
            other = upload(server.url, tokens["crowd-041"], rows[:1])[1]["submissions"][0]["released"]
        service.storage.close()
        assert all(status == 201 for status, _ in answers)
        released.append([answer["submissions"][0]["released"] for _, answer in answers])
    assert released[0] == released[1] and len(set(released[0])) == len(rows)
    assert other != released[1][0]  # another team's stream: the same row is released otherwise
