"""``ladderlab dev bench-isolation``: the table it writes and the page it writes it into."""

import pytest

from ladderlab.cli.commands import main
from ladderlab.dev.isolation_benchmark import BEGIN, END, Timing, table, write_section


def test_the_ratio_is_the_median_of_the_pairs_ratios_not_the_ratio_of_medians():
    unisolated = [Timing(cpu=1.0, wall=1.0), Timing(cpu=4.0, wall=4.0), Timing(cpu=10.0, wall=10.0)]
    isolated = [Timing(cpu=3.0, wall=3.0), Timing(cpu=4.0, wall=4.0), Timing(cpu=30.0, wall=30.0)]
    apart = [Timing(cpu=2.0, wall=1.0), Timing(cpu=20.0, wall=8.0), Timing(cpu=50.0, wall=10.0)]
    own_layouts = [Timing(cpu=2.0, wall=3.0), Timing(cpu=8.0, wall=12.0), Timing(cpu=70.0, wall=10.0)]
    section = table({"batched": {"none": unisolated, "process": isolated, "not co-located": apart,
                                 "own layouts": own_layouts}}, rounds=3, mode="user-namespace")
    row = next(line for line in section.splitlines() if line.startswith("| 400 duels of boosting"))
    assert row.split(" | ")[1:] == ["4.0", "4.0", "3.00", "5.00", "2.00", "4.0", "4.0", "3.00", "1.00", "3.00 |"]
    assert section.startswith(BEGIN) and section.endswith(END)
    assert "--rounds 3" in section and "certify" not in section


def test_the_table_replaces_only_the_section_between_the_markers(tmp_path):
    page = tmp_path / "isolation.md"
    page.write_text(f"# Before\n\n{BEGIN}\nold numbers\n{END}\n\n## After\n")
    write_section(page, f"{BEGIN}\nnew numbers\n{END}")
    assert page.read_text() == f"# Before\n\n{BEGIN}\nnew numbers\n{END}\n\n## After\n"


def test_a_page_without_markers_is_refused_before_any_run(tmp_path, capsys):
    page = tmp_path / "notes.md"
    page.write_text("# Notes\n")
    assert main(["dev", "bench-isolation", "--rounds", "1", "--write", str(page)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"--write {page}" in error and BEGIN in error
    assert page.read_text() == "# Notes\n"
    with pytest.raises(ValueError, match="no section"):
        write_section(page, f"{BEGIN}\n{END}")


def test_the_per_submission_row_divides_the_two_hill_climbing_rows_difference_round_by_round():
    def runs(*cpu):
        return [Timing(cpu=value, wall=value / 2) for value in cpu]

    longer = {"none": runs(10.0, 12.0, 11.0), "process": runs(25.0, 30.0, 27.0),
              "not co-located": runs(40.0, 40.0, 40.0), "own layouts": runs(30.0, 30.0, 30.0)}
    shorter = {"none": runs(5.2, 7.2, 6.2), "process": runs(10.6, 15.6, 12.6),
               "not co-located": runs(11.2, 11.2, 11.2), "own layouts": runs(10.8, 10.8, 10.8)}
    section = table({"sequential": longer, "sequential-short": shorter}, rounds=3, mode="separate-user")
    row = next(line for line in section.splitlines() if line.startswith("| one submission of one row"))
    # per round, none: 4.8 s over 48,000 submissions = 100 µs; process: 14.4 s = 300 µs (ratio 3.00)
    assert row.split(" | ")[1:] == ["100", "300", "3.00", "6.00", "4.00", "50", "150", "3.00", "6.00", "4.00 |"]
    assert table({"sequential": longer}, rounds=3, mode="separate-user").count("one submission of one row") == 0
