"""Every example of the README and the documentation runs, so that none can rot; the site builds strictly.

Fenced blocks are collected from ``README.md`` and ``docs/*.md``:

- ``python`` blocks run, each in a fresh interpreter, in a temporary folder that holds a
  link to ``examples/``;
- ``bash`` blocks run line by line (a ``for … done`` loop as one) in the same kind of folder,
  which also holds empty ``docs/figures`` and ``docs/results`` for the commands that
  regenerate pages; ``pip install`` and
  ``pytest`` lines are the Quickstart's, which CI runs as such, and are left out;
- ``toml`` blocks that are scenarios load as scenarios;
- every ``ladderlab …`` command, in a block of any kind or in inline code, is checked against
  the real parser: its subcommand, the exact spelling of each option, and each value that is
  not a placeholder (``FILE``, ``N``, ``…``) against the option's type and choices; a command
  with no placeholder is parsed whole, so a missing or extra argument fails too.

A block preceded by ``<!-- example: slow -->`` runs only with ``-m slow``; blocks of other
kinds (``console`` transcripts, ``sh`` commands that other tests run, ``text``) are not run,
but the commands in them are checked against the parser; snippet
includes (``--8<--``) are the example files themselves, which the other blocks use.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ladderlab.cli import LIST_FAMILIES, build_parser
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS, Registry
from ladderlab.scenario import load

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RESULTS_PAGES = sorted((ROOT / "docs" / "results").glob("*.md"))
FENCE = re.compile(r"(?P<marker><!-- example: slow -->\s*\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)\n```", re.S)
SKIPPED_COMMANDS = ("pip install", "python -m pytest", "pytest", "bash .ci/run")


def _blocks(lang: str) -> list:
    cases = []
    for page in PAGES:
        for number, match in enumerate(FENCE.finditer(page.read_text())):
            body = match["body"]
            if match["lang"] != lang or "--8<--" in body:
                continue
            marks = [pytest.mark.slow] if match["marker"] else []
            cases.append(pytest.param(body, id=f"{page.name}:{number}", marks=marks))
    return cases


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for generated in ("figures", "results"):
        (tmp_path / "docs" / generated).mkdir(parents=True)
    return tmp_path


def _environment() -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", NO_MKDOCS_2_WARNING="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("code", _blocks("python"))
def test_python_example_runs(code: str, workdir: Path) -> None:
    completed = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=_environment(),
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]


def _commands(script: str) -> list[str]:
    """The commands of a script, one a line; a ``for … done`` loop is one command."""
    commands: list[str] = []
    loop: list[str] = []
    for line in (line.strip() for line in script.replace("\\\n", " ").splitlines()):
        if loop or line.startswith(("for ", "while ")):
            loop.append(line)
            if line == "done":
                commands.append("\n".join(loop))
                loop = []
        elif line and not line.startswith("#") and not line.startswith(SKIPPED_COMMANDS):
            commands.append(line)
    assert not loop, f"a loop without its 'done': {loop[0]}"
    return commands


@pytest.mark.parametrize("script", _blocks("bash"))
def test_shell_example_runs(script: str, workdir: Path) -> None:
    for command in _commands(script):
        if "&&" in command and any(c in command for c in SKIPPED_COMMANDS):
            command = command.split("&&", 1)[1].strip()
        completed = subprocess.run(["bash", "-c", command], cwd=workdir, env=_environment(),
                                   capture_output=True, text=True, timeout=600)
        assert completed.returncode == 0, f"{command}\n{completed.stderr[-3000:]}"
        assert "Warning" not in completed.stderr, f"{command} printed a library warning:\n{completed.stderr[-3000:]}"


@pytest.mark.parametrize("text", _blocks("toml"))
def test_scenario_example_loads(text: str, workdir: Path) -> None:
    document = tomllib.loads(text)
    if "schema_version" not in document:
        return
    path = ROOT / "examples" / "scenario.toml"
    if path.exists() and path.read_text() == text:
        load(path)
    else:
        (workdir / "scenario.toml").write_text(text)
        load(workdir / "scenario.toml")


def test_documentation_site_builds_strictly(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                               cwd=ROOT,
                               env=_environment(), capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-5000:]


ANY_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)\n```", re.S | re.M)
INLINE_COMMAND = re.compile(r"`(?P<command>ladderlab [^`]+)`")
COMMAND_START = re.compile(r"(?:^|\s)(?P<command>ladderlab\s+(?!:).*)")
PLACEHOLDER = re.compile(r"^(?:[A-Za-z]|[A-Z][A-Z0-9_]*(?:\.[a-z]+)?|.*(?:…|\.\.\.|\$).*|'?[A-Z]+'?)$")


def _command_lines(page: Path) -> list[tuple[int, str, bool]]:
    """Every ``ladderlab …`` command of a page: (line, command, in a block); ``$ `` prompts of
    console blocks mark commands there, output lines are left out."""
    text = page.read_text()
    found = []
    for block in ANY_FENCE.finditer(text):
        if block["lang"] in ("python", "toml"):
            continue
        first_line = text.count("\n", 0, block.start("body")) + 1
        body = block["body"].replace("\\\n", " ")
        for offset, line in enumerate(body.splitlines()):
            if block["lang"] == "console" and not line.lstrip().startswith("$"):
                continue
            for segment in re.split(r"&&|;|\s\|\s", line):
                match = COMMAND_START.search(segment.lstrip("$ "))
                if match:
                    found.append((first_line + offset, match["command"], True))
    prose = ANY_FENCE.sub(lambda block: "\n" * block.group().count("\n"), text)
    for match in INLINE_COMMAND.finditer(prose):
        found.append((prose.count("\n", 0, match.start()) + 1, match["command"], False))
    return found


def _commands_of_pages() -> list:
    return [pytest.param(command, in_block, id=f"{page.name}:{line}")
            for page in PAGES + RESULTS_PAGES for line, command, in_block in _command_lines(page)]


def _is_placeholder(token: str) -> bool:
    return bool(PLACEHOLDER.match(token))


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of a parser: argparse's, or those ``serve`` dispatches itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return dict(parser._defaults.get("subcommands", {}))


def _builtin_scenario(name: str) -> None:
    from ladderlab.scenarios import builtin_scenarios

    if not name.endswith(".toml") and "/" not in name:
        assert name in builtin_scenarios(), f"no built-in scenario {name!r} (there are {sorted(builtin_scenarios())})"


def _listed_family(name: str) -> None:
    assert name in LIST_FAMILIES or f"{name}s" in LIST_FAMILIES, f"'ladderlab list' has no family {name!r}"


NAMED_VALUES = {("ladderlab run", "scenario"): _builtin_scenario,
                ("ladderlab list", "what"): _listed_family,
                ("ladderlab certify", "mechanism"): MECHANISMS.parse,
                ("ladderlab certify", "attack"): ATTACKS.parse,
                ("ladderlab attack", "attack"): ATTACKS.parse,
                ("ladderlab replay", "mechanism"): MECHANISMS.parse}
"""Values that name a plugin (with parameters) or a built-in scenario, and the check of each."""


def _check_value(action: argparse.Action, value: str, where: str) -> None:
    """A value that is not a placeholder converts with the option's type and is among its choices,
    and names a plugin or scenario that exists; ``a|b`` (a synopsis) checks each alternative."""
    for alternative in value.split("|") if "|" in value else [value]:
        if _is_placeholder(alternative):
            continue
        converted = alternative
        if action.type is not None:
            try:
                converted = action.type(alternative)
            except (ValueError, TypeError, argparse.ArgumentTypeError) as error:
                raise AssertionError(f"{where}: {alternative!r} is refused: {error}") from None
        if action.choices is not None:
            assert converted in action.choices, f"{where}: {alternative!r} is not one of {list(action.choices)}"
        check = NAMED_VALUES.get((where.rsplit(" ", 1)[0], action.dest))
        if check is not None and ":" not in alternative:
            try:
                check(alternative)
            except ValueError as error:
                raise AssertionError(f"{where}: {error}") from None


def _check_against_parser(tokens: list[str], mention: bool) -> None:
    """Walk the tokens through the real parsers; a ``mention`` in prose may name an option
    without its value (``ladderlab certify --out``)."""
    parser, path = build_parser(), ["ladderlab"]
    positionals: list[argparse.Action] = []
    index = 1
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.startswith("-") and len(token) > 1 and not token.lstrip("-").isdigit():
            name = token.split("=", 1)[0]
            action = parser._option_string_actions.get(name)
            assert action is not None, f"{' '.join(path)} has no option {name} (it has {sorted(parser._option_string_actions)})"
            if action.nargs == 0:
                continue
            values = [token.split("=", 1)[1]] if "=" in token else []
            while not values or (action.nargs in ("+", "*") or isinstance(action.nargs, int) and len(values) < action.nargs):
                if index >= len(tokens) or tokens[index].startswith("--"):
                    break
                values.append(tokens[index])
                index += 1
            assert values or action.nargs in ("?", "*") or mention, f"{' '.join(path)} {name} needs a value"
            for value in values:
                _check_value(action, value, f"{' '.join(path)} {name}")
            continue
        subcommands = _subcommands(parser)
        if subcommands and not positionals and (token in subcommands or not _positionals(parser)):
            assert token in subcommands or _is_placeholder(token), f"{' '.join(path)} has no subcommand {token!r} (it has {sorted(subcommands)})"
            if token not in subcommands:
                break
            parser, positionals = subcommands[token], []
            path.append(token)
            continue
        if not positionals:
            positionals = _positionals(parser)
            positionals.append(None)
        action = positionals[0]
        assert action is not None, f"{' '.join(path)}: unexpected argument {token!r}"
        if action.nargs == argparse.REMAINDER:
            break
        _check_value(action, token, f"{' '.join(path)} {action.dest}")
        if action.nargs not in ("*", "+"):
            positionals.pop(0)


def _positionals(parser: argparse.ArgumentParser) -> list:
    return [action for action in parser._actions
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]


@pytest.mark.parametrize(("command", "in_block"), _commands_of_pages())
def test_documented_command_matches_the_parser(command: str, in_block: bool) -> None:
    tokens = [token for token in shlex.split(command.split(" > ")[0], comments=True)]
    synopsis = any(token.startswith("[") or token.endswith("]") for token in tokens)
    tokens = [token.strip("[]") for token in tokens if token.strip("[]")]
    _check_against_parser(tokens, mention=not in_block)
    if in_block and not synopsis and not any(_is_placeholder(token) or "$" in token for token in tokens[1:]):
        try:
            build_parser().parse_args(tokens[1:])
        except SystemExit as exit:  # --help, --version
            assert exit.code == 0, command
        except ValueError as error:
            raise AssertionError(f"{command}: {error}") from None


def _table_ids(page: str, heading: str) -> set[str]:
    """The backticked ids in the first column of the table under ``## heading`` of a page."""
    section = (ROOT / "docs" / page).read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in rows for name in re.findall(r"`([^`]+)`", cell)}


@pytest.mark.parametrize(("heading", "registry"), [("Mechanisms", MECHANISMS), ("Attacks", ATTACKS), ("Tasks", TASKS)])
def test_built_in_plugins_page_lists_the_registry(heading: str, registry: Registry) -> None:
    assert _table_ids("built-ins.md", heading) == set(registry.builtins())


def test_built_in_scenarios_table_gives_each_scenarios_cells_and_replications() -> None:
    from ladderlab.scenario import cells
    from ladderlab.scenarios import builtin_scenarios

    section = (ROOT / "docs" / "scenarios.md").read_text().split("## Built-in scenarios\n", 1)[1].split("\n## ", 1)[0]
    documented = {}
    for row in (line for line in section.splitlines() if line.startswith("| `")):
        names, sizes = re.findall(r"`([^`]+)`", row.split("|")[1]), row.split("|")[3].split(",")
        documented |= {name: size.strip() for name, size in zip(names, sizes, strict=True)}
    assert set(documented) == set(builtin_scenarios())
    for name, size in documented.items():
        scenario = load(name)
        assert size == f"{len(cells(scenario))} × {scenario.replications}", name


def _output(command: str, workdir: Path) -> str:
    completed = subprocess.run(["bash", "-c", command], cwd=workdir, env=_environment(),
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def test_statistics_page_quotes_what_sota_prints(workdir: Path) -> None:
    page = (ROOT / "docs" / "statistics.md").read_text()
    quoted = re.search(r"the first command gives mean\s+(\S+), sd (\S+) and upper limit (\S+) \(Table 1\)", page)
    printed = dict(line.split(maxsplit=1) for line in _output("ladderlab sota --m 1000 --n 3000 --theta 0.9", workdir).splitlines())
    for key, shown in zip(("mean", "sd", "upper"), quoted.groups(), strict=True):
        assert f"{float(printed[key]):#.4g}" == shown, (key, printed[key], shown)


def test_extrapolation_page_quotes_the_spread_extrapolate_prints(workdir: Path) -> None:
    page = (ROOT / "docs" / "extrapolation.md").read_text()
    quoted = re.search(r"the methods predict between about (\S+)\s+\(CONS\) and (\S+) \(EXP\) at K = 200", page)
    printed = dict(line.split()[:2] for line in _output(
        "ladderlab extrapolate examples/extrapolation/ranks.txt --from 20 --to 200", workdir).splitlines()[3:8])
    assert (f"{float(printed['cons']):.2f}", f"{float(printed['exp']):.2f}") == quoted.groups()


def _commands_with_option(option: str) -> set[str]:
    """Every (sub)command of the real parser that has ``option``: ``{"run", "serve verify", …}``."""
    found = set()
    pending = [([], build_parser())]
    while pending:
        path, parser = pending.pop()
        if option in parser._option_string_actions and path:
            found.add(" ".join(path))
        pending += [([*path, name], sub) for name, sub in _subcommands(parser).items()]
    return found


def test_sizes_page_names_every_command_with_force() -> None:
    page = (ROOT / "docs" / "sizes.md").read_text()
    sentence = re.search(r"`--force` \(on (.*?);", page, re.S)[1]
    assert set(re.findall(r"`([a-z -]+)`", sentence)) == _commands_with_option("--force")


def test_sizes_page_shows_the_estimate_run_prints() -> None:
    from ladderlab.workload import scenario_work

    page = (ROOT / "docs" / "sizes.md").read_text()
    shown = re.search(r"`ladderlab run quickstart --jobs 2` prints:\n\n```text\nladderlab: estimated (.*)\n```", page)
    assert shown[1] == str(scenario_work(load("quickstart"), jobs=2))


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
    completed = subprocess.run([sys.executable, "-m", "ladderlab", "run", "my.toml"], cwd=workdir, env=_environment(),
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
    page = (ROOT / "docs" / "mechanisms.md").read_text()
    section = re.split(rf"\n## `{re.escape(mechanism)}`[^\n]*\n", page)[1].split("\n## ", 1)[0]
    defaults = MECHANISMS.get(mechanism).parameter_defaults()
    documented = {}
    for row in (line.split("|") for line in section.splitlines() if line.startswith("| `")):
        names = re.findall(r"`([^`]+)`", row[1])
        values = row[2].split(", ") if len(names) > 1 else [row[2]]
        documented |= {name: _documented_default(value) for name, value in zip(names, values, strict=True)}
    assert set(documented) == set(defaults)
    for name, value in documented.items():
        assert value == defaults[name] or (isinstance(value, float) and value == float(defaults[name])), name


def _anchors(page: Path) -> set[str]:
    """The anchors of a page as the site's ``toc`` extension makes them: ``{#id}`` or the slugged heading."""
    from markdown.extensions.toc import slugify

    text = ANY_FENCE.sub("", page.read_text())
    anchors = set(re.findall(r"\{#([^}]+)\}", text))
    return anchors | {slugify(re.sub(r"\s*\{#.*\}", "", heading), "-") for heading in re.findall(r"^#+ (.*)$", text, re.M)}


def test_readme_links_resolve() -> None:
    """The site build checks the links of docs/; the README, which GitHub shows, is checked here."""
    for target, anchor in re.findall(r"\]\((?!https?:)([^)#\s]+)(?:#([^)\s]+))?\)", (ROOT / "README.md").read_text()):
        assert (ROOT / target).exists(), target
        assert not anchor or anchor in _anchors(ROOT / target), f"{target}#{anchor}"
