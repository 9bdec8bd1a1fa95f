"""What the pages state about the tool matches the tool now: the built-in tables against the
registry and the scenarios, the numbers a page quotes from a command against that command's
output, the defaults and option lists against the plugins and the parser, the code map against
the package.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_POLICIES
from ladderlab.cli.commands import build_parser
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry
from ladderlab.runs.scenario import load
from tests.docs_helpers import PAGES, ROOT, environment, output, subcommands, workdir  # noqa: F401 (a fixture)


def _table_rows(page: str, heading: str) -> list[list[str]]:
    """The cells of the rows that start with a backticked name, in the section under the
    ``## heading`` line (its start; ``heading`` is a regular expression) of a page."""
    section = re.split(rf"\n## {heading}[^\n]*\n", (ROOT / "docs" / page).read_text())[1].split("\n## ", 1)[0]
    return [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| `")]


def _table_ids(page: str, heading: str) -> set[str]:
    """The backticked ids in the first column of a section's table."""
    return {name for row in _table_rows(page, heading) for name in re.findall(r"`([^`]+)`", row[0])}


@pytest.mark.parametrize(("heading", "registry"), [("Mechanisms", MECHANISMS), ("Attacks", ATTACKS), ("Tasks", TASKS),
                                                   ("Arena policies", ARENA_POLICIES), ("Arena attacks", ARENA_ATTACKS)])
def test_built_in_plugins_page_lists_the_registry(heading: str, registry: Registry) -> None:
    assert _table_ids("built-ins.md", heading) == set(registry.builtins())


def test_built_in_scenarios_table_gives_each_scenarios_cells_and_replications() -> None:
    from ladderlab.scenarios import builtin_scenarios

    from ladderlab.runs.scenario import cells

    documented = {}
    for row in _table_rows("scenarios.md", "Built-in scenarios"):
        names, sizes = re.findall(r"`([^`]+)`", row[0]), row[2].split(",")
        documented |= {name: size.strip() for name, size in zip(names, sizes, strict=True)}
    assert set(documented) == set(builtin_scenarios())
    for name, size in documented.items():
        scenario = load(name)
        assert size == f"{len(cells(scenario))} × {scenario.replications}", name


def test_statistics_page_quotes_what_sota_prints(workdir: Path) -> None:
    page = (ROOT / "docs" / "statistics.md").read_text()
    quoted = re.search(r"the first command gives mean\s+(\S+), sd (\S+) and upper limit (\S+) \(Table 1\)", page)
    printed = dict(line.split(maxsplit=1) for line in output("ladderlab stats sota --m 1000 --n 3000 --theta 0.9", workdir).splitlines())
    for key, shown in zip(("mean", "sd", "upper"), quoted.groups(), strict=True):
        assert f"{float(printed[key]):#.4g}" == shown, (key, printed[key], shown)


@pytest.mark.slow
def test_extrapolation_page_quotes_the_spread_extrapolate_prints(workdir: Path) -> None:
    page = (ROOT / "docs" / "extrapolation.md").read_text()
    quoted = re.search(r"the methods predict between about (\S+)\s+\(CONS\) and (\S+) \(EXP\) at K = 200", page)
    printed = dict(line.split()[:2] for line in output(
        "ladderlab stats extrapolate examples/extrapolation/ranks.txt --from 20 --to 200", workdir).splitlines()[3:8])
    assert (f"{float(printed['cons']):.2f}", f"{float(printed['exp']):.2f}") == quoted.groups()


def _predictions(command: str, folder: Path) -> dict[str, str]:
    """Each method's prediction at K as ``extrapolate`` prints it (the table's rows)."""
    return dict(line.split()[:2] for line in output(command, folder).splitlines()[3:8])


@pytest.mark.slow
def test_extrapolation_page_quotes_cons_and_mple_and_the_authors_convention(workdir: Path) -> None:
    page = " ".join((ROOT / "docs" / "extrapolation.md").read_text().split())
    quoted = re.search(r"yet predict (\S+) and (\S+)\. .*? \(`--convention authors`, point masses on a 51-point grid\) "
                       r"moves it to about (\S+)\.", page)
    command = "ladderlab stats extrapolate examples/extrapolation/ranks.txt --from 20 --to 200"
    ours, authors = _predictions(command, workdir), _predictions(command + " --convention authors", workdir)
    assert quoted.groups() == (f"{float(ours['cons']):.2f}", f"{float(ours['mple']):.2f}", f"{float(authors['cons']):.2f}")


def test_extrapolation_page_quotes_the_truth_the_example_script_prints_and_ships_its_files(tmp_path: Path) -> None:
    import shutil

    script = shutil.copy(ROOT / "examples" / "extrapolation" / "make_examples.py", tmp_path)
    printed = output(f"python {script}", tmp_path)
    truth = re.search(r"accuracy on all 200 classes: (\S+)", printed)[1]
    page = " ".join((ROOT / "docs" / "extrapolation.md").read_text().split())
    shown = re.findall(r"reaches (\d\.\d+) on all 200 classes|where the truth is (\d\.\d+)", page)
    assert [f"{float(truth):.3f}"] * 2 == ["".join(pair) for pair in shown]
    for name in ("ranks.txt", "scores.csv"):
        assert (tmp_path / name).read_text() == (ROOT / "examples" / "extrapolation" / name).read_text(), name


def _commands_with_option(option: str) -> set[str]:
    """Every (sub)command of the real parser that has ``option``: ``{"run", "serve verify", …}``."""
    found = set()
    pending = [([], build_parser())]
    while pending:
        path, parser = pending.pop()
        if option in parser._option_string_actions and path:
            found.add(" ".join(path))
        pending += [([*path, name], sub) for name, sub in subcommands(parser).items()]
    return found


def test_sizes_page_names_every_command_with_force() -> None:
    page = (ROOT / "docs" / "sizes.md").read_text()
    sentence = re.search(r"`--force` \(on (.*?);", page, re.S)[1]
    assert set(re.findall(r"`([a-z -]+)`", sentence)) == _commands_with_option("--force")


def test_sizes_page_shows_the_estimate_run_prints() -> None:
    from ladderlab.runs.workload import scenario_work

    page = (ROOT / "docs" / "sizes.md").read_text()
    shown = re.search(r"`ladderlab run quickstart --jobs 2` prints:\n\n```text\nladderlab: estimated (.*)\n```", page)
    assert shown[1] == str(scenario_work(load("quickstart"), jobs=2))


@pytest.mark.parametrize(("scenario", "quoted"), [("kaggle-scale", r"`kaggle-scale` is estimated at ([\d.]+ GiB)"),
                                                ("kaggle-realistic", r"`kaggle-realistic`\s+is estimated at ([\d.]+ M) submissions")])
def test_sizes_page_quotes_the_estimate_of_a_competition_scenario(scenario: str, quoted: str) -> None:
    from ladderlab.runs.workload import scenario_work

    page = (ROOT / "docs" / "sizes.md").read_text()
    assert re.search(quoted, page)[1] in str(scenario_work(load(scenario), jobs=1))


def test_performance_page_quotes_the_poissonized_sampler_at_n_1200_b_100() -> None:
    import numpy as np
    from scipy import stats

    from ladderlab.engines import poissonized

    page = " ".join((ROOT / "docs" / "performance.md").read_text().split())
    quoted = re.search(r"c = ([\d.]+) at n = 1,200, b = 100: (\d+)% of attempts redrawn, ~(\d+) completion indices", page)
    n, b = 1200, 100
    total = b * n
    c = poissonized.completion_margin(n, b)
    attempt = stats.poisson(total - c * np.sqrt(total))
    missing = np.arange(total + 1)
    completion = np.sum((total - missing) * attempt.pmf(missing)) / attempt.cdf(total)
    assert quoted.groups() == (f"{c:g}", f"{100 * attempt.sf(total):.0f}", f"{round(completion, -1):.0f}")
    guide_share = re.search(r"NaN in the ~([\d.]+)% of\s+cells", page)[1]
    assert guide_share == f"{100 * np.isnan(poissonized.poisson_words(n, b).guide).mean():.2f}"


def test_code_map_names_every_core_module() -> None:
    page = (ROOT / "docs" / "concepts.md").read_text()
    code_map = page.split("## Where the code lives", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    named = set(re.findall(r"[a-z_]+", code_map))
    modules = {path.stem for path in (ROOT / "ladderlab").glob("*.py")} - {"__init__", "__main__"}
    assert {module for module in modules if module not in named and not module.startswith("extrapolation_")} == set()


MISTAKES = {  # each error line parameters.md shows, and the scenario mistake that makes it
    "matrix[0].mechanisms[0].params.alpha": ('replications = 3', '{ id = "kaggle", params = { alpha = -0.1 } }', '{ id = "boosting" }'),
    "matrix[0].attacks[0].params.variant": ('replications = 3', '{ id = "kaggle" }', '{ id = "boosting", params = { variant = "kagle" } }'),
    "replications": ('replications = "10"', '{ id = "kaggle" }', '{ id = "boosting" }'),
}


@pytest.mark.parametrize("where", MISTAKES)
def test_parameters_page_shows_the_errors_run_prints(where: str, workdir: Path) -> None:
    page = (ROOT / "docs" / "parameters.md").read_text()
    shown = re.search(rf"^ladderlab: error: my\.toml: {re.escape(where)}: .*$", page, re.M)[0]
    replications, mechanism, attack = MISTAKES[where]
    (workdir / "my.toml").write_text(f'schema_version = 1\nname = "my"\n{replications}\n[[matrix]]\n'
                                     f'tasks = [{{ id = "random-labels" }}]\nmechanisms = [{mechanism}]\nattacks = [{attack}]\n')
    completed = subprocess.run([sys.executable, "-m", "ladderlab", "run", "my.toml"], cwd=workdir, env=environment(),
                               capture_output=True, text=True, timeout=600)
    assert (completed.returncode, completed.stderr.strip()) == (2, shown)


def _documented_default(text: str) -> object:
    """A default as mechanisms.md writes it: ``"laplace"``, ``10,000``, ``None (unlimited)``, ``False``;
    a formula (``1/√n``) stands for a default the plugin computes, which its signature gives as None."""
    literal = text.split(" (")[0].strip().strip("`").replace(",", "")
    if literal in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[literal]
    if literal.startswith('"'):
        return literal.strip('"')
    try:
        return float(literal)
    except ValueError:
        return None


@pytest.mark.parametrize("mechanism", ["noisy", "sparse-vector-ladder", "thresholdout", "sage-bootladderboot"])
def test_mechanisms_page_gives_each_parameter_and_its_default(mechanism: str) -> None:
    defaults = MECHANISMS.get(mechanism).parameter_defaults()
    documented = {}
    for row in _table_rows("mechanisms.md", f"`{re.escape(mechanism)}`"):
        names = re.findall(r"`([^`]+)`", row[0])
        values = row[1].split(", ") if len(names) > 1 else [row[1]]
        documented |= {name: _documented_default(value) for name, value in zip(names, values, strict=True)}
    assert set(documented) == set(defaults)
    for name, value in documented.items():
        assert value == defaults[name] or (isinstance(value, float) and value == float(defaults[name])), name


def test_every_extra_the_pages_install_exists() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = {extra for page in PAGES for group in re.findall(r"\.\[([a-z,-]+)\]", page.read_text()) for extra in group.split(",")}
    assert named and named <= extras, named - extras
