"""``ladderlab dev bench-certify``: certificates timed from an empty battery, written between the page's markers."""

import pytest

from ladderlab.cli.commands import main
from ladderlab.dev import certify_speed

TINY = certify_speed.Setting("tiny", 20, (5,))


def test_a_page_without_the_markers_is_refused_before_any_certificate_runs(tmp_path, capsys):
    page = tmp_path / "speed.md"
    page.write_text("# no markers\n")
    assert main(["dev", "bench-certify", "--mechanism", "kaggle", "--write", str(page)]) == 2
    assert "has no <!-- certify-speed --> marker" in capsys.readouterr().err
    assert page.read_text() == "# no markers\n"


@pytest.mark.slow
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
    assert main(["dev", "bench-certify", "--setting", "huge"]) == 2
    assert "--setting: invalid choice: 'huge'" in capsys.readouterr().err


def test_the_families_are_every_built_in_mechanism_but_the_reference():
    from ladderlab.certification.certify import REFERENCE
    from ladderlab.registry import MECHANISMS

    assert sorted(certify_speed.FAMILIES) == sorted(set(MECHANISMS.builtins()) - {REFERENCE})


OLD_SECTION = f"""{certify_speed.BEGIN}
Measured by `ladderlab dev bench-certify --replications 100 --seed 0` on 2026-11-20: Linux x, 2 processors, load average 1.5 at the end, Python 3.11.7.

| mechanism | setting | jobs | CPU s | wall s | replications used | safe budget | where the time goes |
| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |
| kaggle | `--n 20 --budgets 5` | 1 | 9.0 | 9.0 | 3 | 0 | boosting 1.0 / 0.1 |
| ladder | `--n 20 --budgets 5` | 1 | 8.0 | 8.0 | 3 | 0 | boosting 2.0 / 0.1 |
{certify_speed.END}"""


def test_a_run_of_some_families_replaces_their_rows_and_keeps_the_others_dated(tmp_path):
    from ladderlab.dev.benchmark import CertifyTiming

    page = tmp_path / "speed.md"
    page.write_text(f"before\n{OLD_SECTION}\nafter\n")
    kept = certify_speed.kept_rows(OLD_SECTION)
    measured = CertifyTiming(1, 2.5, 2.25, 7, 0, {"boosting": {"kaggle": 1.5, "full-disclosure": 0.5}})
    fresh = CertifyTiming(1, 3.5, 3.25, 9, 0, {"staircase": {"thresholdout": 2.5}})
    certify_speed.write_section(page, certify_speed.table([("thresholdout", TINY, fresh), ("kaggle", TINY, measured)],
                                                          100, 0, kept))
    rows = [line for line in page.read_text().splitlines() if line.startswith("| ") and "`--n 20" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| kaggle", "| ladder", "| thresholdout"]
    assert "| 2.2 | 2.5 | 7 | 0 | boosting 1.5 / 0.5 |" in rows[0] and "| 9.0 |" not in rows[0]
    assert rows[1].endswith("| boosting 2.0 / 0.1 | 2026-11-20, load 1.5 |")
    assert certify_speed.kept_rows(page.read_text()) == {key: row for key, row in zip(
        [("kaggle", "`--n 20 --budgets 5`", "1"), ("ladder", "`--n 20 --budgets 5`", "1"),
         ("thresholdout", "`--n 20 --budgets 5`", "1")], rows)}


def test_a_page_measured_with_other_replications_is_refused_before_any_certificate_runs(tmp_path, capsys):
    page = tmp_path / "speed.md"
    page.write_text(OLD_SECTION)
    assert main(["dev", "bench-certify", "--mechanism", "kaggle", "--replications", "5", "--write", str(page)]) == 2
    err = capsys.readouterr().err
    assert "its table was measured with --replications 100 --seed 0, not --replications 5 --seed 0" in err
    assert len(err.strip().splitlines()) == 1 and page.read_text() == OLD_SECTION
