"""``ladderlab bench-certify``: certificates timed from an empty battery, written between the page's markers."""

from ladderlab import certify_speed
from ladderlab.cli import main

TINY = certify_speed.Setting("tiny", 20, (5,))


def test_a_page_without_the_markers_is_refused_before_any_certificate_runs(tmp_path, capsys):
    page = tmp_path / "speed.md"
    page.write_text("# no markers\n")
    assert main(["bench-certify", "--mechanism", "kaggle", "--write", str(page)]) == 2
    assert "has no <!-- certify-speed --> marker" in capsys.readouterr().err
    assert page.read_text() == "# no markers\n"


def test_a_timed_certificate_says_where_its_time_went_and_lands_between_the_markers(tmp_path):
    timings = certify_speed.measure(["kaggle"], [TINY], [1], replications=1, seed=0)
    ((mechanism, setting, timing),) = timings
    assert (mechanism, setting, timing.jobs) == ("kaggle", TINY, 1)
    assert timing.cpu_seconds > 0 and timing.replications >= 1
    assert all(set(seconds) <= {"kaggle", "full-disclosure"} for seconds in timing.duel_seconds.values())
    assert "improving" in timing.duel_seconds and "boosting" in timing.duel_seconds
    page = tmp_path / "speed.md"
    page.write_text(f"before\n{certify_speed.BEGIN}\nold\n{certify_speed.END}\nafter\n")
    certify_speed.write_section(page, certify_speed.table(timings, 1, 0))
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "\nold\n" not in text
    assert "| kaggle | `--n 20 --budgets 5` | 1 |" in text


def test_an_unknown_setting_is_refused(capsys):
    assert main(["bench-certify", "--setting", "huge"]) == 2
    assert "--setting: invalid choice: 'huge'" in capsys.readouterr().err


def test_the_families_are_every_built_in_mechanism_but_the_reference():
    from ladderlab.certify import REFERENCE
    from ladderlab.registry import MECHANISMS

    assert sorted(certify_speed.FAMILIES) == sorted(set(MECHANISMS.builtins()) - {REFERENCE})
