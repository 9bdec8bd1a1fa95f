"""The README says what the tool does as it is: its Quickstart is what CI runs, its command table
is the parser's, its Python block is the quickstart page's, its certify example is what ``ladderlab
bench --certify`` times, and its benchmark figures are what the bench page's data give."""

from __future__ import annotations

import re
import shlex
import shutil

from ladderlab.cli.commands import build_parser
from ladderlab.dev import benchmark
from ladderlab.dev.results_pages import README_BEGIN, README_END, build, check
from ladderlab.utils.markdown import marked_section
from tests.docs_helpers import ANY_FENCE, ROOT, subcommands

README = ROOT / "README.md"
RESULTS = ROOT / "docs" / "results"


def _section(title: str) -> str:
    return README.read_text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_quickstart_is_two_commands_and_the_second_is_what_ci_runs():
    blocks = [block["body"] for block in ANY_FENCE.finditer(_section("Quickstart"))]
    assert blocks == ["pip install . && ladderlab run quickstart", 'pip install -e ".[test]" && python -m pytest']
    assert (ROOT / ".ci" / "run").read_text().rstrip().splitlines()[-1] == blocks[1]


def test_the_command_table_lists_every_subcommand_exactly_once():
    listed = re.findall(r"^\| `ladderlab ([^` ]+)` \|", _section("Commands"), re.M)
    assert sorted(listed) == sorted(subcommands(build_parser()))


def test_the_python_block_is_one_source_that_the_quickstart_page_includes():
    api = _section("Python API")
    start, end = "<!-- --8<-- [start:python-api] -->", "<!-- --8<-- [end:python-api] -->"
    included = marked_section(api, start, end)
    assert included is not None and re.findall(r"^```python$", api, re.M) == re.findall(r"^```python$", included, re.M) == ["```python"]
    quickstart = (ROOT / "docs" / "quickstart.md").read_text()
    assert '--8<-- "README.md:python-api"' in quickstart and "```python" not in quickstart


def test_the_certify_example_is_the_one_bench_times():
    line = next(line for line in _section("I run a challenge").splitlines() if line.startswith("ladderlab certify ladder-boot"))
    tokens = shlex.split(line)
    arguments = build_parser().parse_args(tokens[1:])
    timed = benchmark.README_CERTIFICATE
    assert (arguments.mechanism, arguments.n, arguments.budgets, arguments.replications) == (
        timed["mechanism"], timed["n"], timed["budgets"], timed["replications"])
    assert dict(param.split("=") for param in arguments.param) == {key: str(value) for key, value in timed["params"].items()}


def test_the_benchmark_figures_are_the_bench_pages():
    section = marked_section(README.read_text(), README_BEGIN, README_END)
    assert section is not None and "| ladder-boot |" in section
    assert check(RESULTS, nav=None, readme=README) == []


def test_a_figure_edited_in_the_readme_fails_the_check(tmp_path):
    results = tmp_path / "docs" / "results"
    shutil.copytree(RESULTS, results)
    readme = tmp_path / "README.md"
    text = README.read_text()
    readme.write_text(text)
    assert check(results, nav=None) == []
    row = next(line for line in marked_section(text, README_BEGIN, README_END).splitlines()
               if line.startswith("| ladder-boot |"))
    cells = row.split("|")
    cells[2] = " 0.1 " if cells[2] != " 0.1 " else " 0.2 "
    readme.write_text(text.replace(row, "|".join(cells)))
    assert check(results, nav=None) == [f"{readme}: its benchmark figures differ from what data/bench.json gives; "
                                        "run 'ladderlab dev results build bench', not an edit of the README"]


def test_building_the_pages_writes_the_readmes_figures(tmp_path):
    shutil.copytree(RESULTS, tmp_path / "docs" / "results")
    readme = tmp_path / "README.md"
    readme.write_text(f"# A project\n\n{README_BEGIN}\nold figures\n{README_END}\n\nthe rest\n")
    build(tmp_path / "docs" / "results", ["bench"], log=lambda line: None, readme=readme)
    shipped = marked_section(README.read_text(), README_BEGIN, README_END)
    assert readme.read_text() == f"# A project\n\n{shipped}\n\nthe rest\n"
