"""Every example of the README and the documentation runs, so that none can rot; the site builds
strictly and the README's links resolve.

Fenced blocks are collected from ``README.md`` and ``docs/*.md``:

- ``python`` blocks run, each in a fresh interpreter, in a temporary folder that holds a
  link to ``examples/``;
- ``bash`` blocks run line by line (a ``for … done`` loop as one) in the same kind of folder,
  which also holds empty ``docs/figures`` and ``docs/results`` for the commands that
  regenerate pages; ``pip install`` and
  ``pytest`` lines are the Quickstart's, which CI runs as such, and are left out;
- ``toml`` blocks that are scenarios load as scenarios.

A block preceded by ``<!-- example: slow -->`` runs only with ``-m slow``; blocks of other
kinds (``console`` transcripts, ``sh`` commands that other tests run, ``text``) are not run,
but the commands in them are checked against the parser (``test_docs_commands.py``); snippet
includes (``--8<--``) are the example files themselves, which the other blocks use.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

from ladderlab.runs.scenario import load
from tests.docs_helpers import ANY_FENCE, PAGES, ROOT, environment, workdir  # noqa: F401 (a fixture)

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


PRELOADED = ["numpy", "pandas", "scipy.stats", "sklearn.linear_model", "matplotlib.figure", "ladderlab.registry",
             "ladderlab.runs.runner", "ladderlab.reports.report", "ladderlab.testing"]
"""What the process that examples are forked from imports once: each example starts as a fresh
interpreter with these loaded would (an interpreter's start and these imports are a second of CPU)."""


def _example(code: str, folder: str, error_file: str) -> None:
    """Run an example as ``python -c`` would, in ``folder``, its standard error into ``error_file``."""
    import multiprocessing
    import os
    import traceback
    import types

    os.chdir(folder)
    os.environ.update(environment())
    sys.argv = ["-c"]
    with open(error_file, "w") as error, contextlib.redirect_stderr(error), contextlib.redirect_stdout(io.StringIO()):
        try:
            main = sys.modules["__main__"] = types.ModuleType("__main__")  # its classes pickle as a script's do
            exec(compile(code, "<example>", "exec"), main.__dict__)
        except SystemExit as stop:
            error.flush()
            os._exit(stop.code if isinstance(stop.code, int) else int(stop.code is not None))
        except BaseException:
            traceback.print_exc()
            error.flush()
            os._exit(1)
    # A returning multiprocessing child joins its children, and joblib's reusable workers idle for
    # 300 s before they leave; an interpreter running the example as a script stops them at exit.
    for child in multiprocessing.active_children():
        child.terminate()
    os._exit(0)


@pytest.fixture(scope="module")
def fresh_process():
    """A fork server that has imported :data:`PRELOADED`: each example runs in a new child of it."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOADED)
    return context


@pytest.mark.parametrize("code", _blocks("python"))
def test_python_example_runs(code: str, workdir: Path, fresh_process) -> None:
    error_file = workdir / "example-stderr.txt"
    process = fresh_process.Process(target=_example, args=(code, str(workdir), str(error_file)))
    process.start()
    process.join(600)
    assert process.exitcode == 0, error_file.read_text()[-3000:] if error_file.exists() else process.exitcode


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


SHELL = re.compile(r"[|<>;&$`*~(){}\\\n]")
"""Characters that make a command the shell's to run, not a plain ``ladderlab`` call."""


def _in_process(command: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """A plain ``ladderlab ARGS`` command run by the command line's ``main`` in this process (an
    interpreter's start is a second of CPU), with what it printed on standard error and the
    library warnings an interpreter would show by default (DeprecationWarning only from __main__)."""
    from ladderlab.cli.commands import main

    monkeypatch.setenv("MPLBACKEND", "Agg")
    error = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(error), \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        code = main(shlex.split(command)[1:])
    shown = "".join(f"{warning.category.__name__}: {warning.message}\n" for warning in caught)
    return code, error.getvalue() + shown


@pytest.mark.parametrize("script", _blocks("bash"))
def test_shell_example_runs(script: str, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    for command in _commands(script):
        if "&&" in command and any(c in command for c in SKIPPED_COMMANDS):
            command = command.split("&&", 1)[1].strip()
        if command.startswith("ladderlab ") and not SHELL.search(command):
            code, stderr = _in_process(command, monkeypatch)
        else:
            completed = subprocess.run(["bash", "-c", command], cwd=workdir, env=environment(),
                                       capture_output=True, text=True, timeout=600)
            code, stderr = completed.returncode, completed.stderr
        assert code == 0, f"{command}\n{stderr[-3000:]}"
        assert "Warning" not in stderr, f"{command} printed a library warning:\n{stderr[-3000:]}"


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
    """Deprecations shown (the ``mkdocs`` script shows them; ``python -m`` hides them by default)."""
    completed = subprocess.run([sys.executable, "-W", "default::DeprecationWarning", "-m", "mkdocs", "build", "--strict",
                                "--site-dir", str(tmp_path / "site")],
                               cwd=ROOT,
                               env=environment(), capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-5000:]
    assert "Deprecat" not in completed.stderr, f"the site build printed a deprecation:\n{completed.stderr[-3000:]}"


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


def test_the_scenarios_page_names_every_built_in_scenario_that_declares_the_papers_values() -> None:
    from ladderlab.scenarios import builtin_scenarios

    builtin = builtin_scenarios()
    declaring = {name for name in builtin if load(name).paper_values}
    paragraph = (ROOT / "docs" / "scenarios.md").read_text().split("Only numbers a source states", 1)[1].split("\n\n")[0]
    named = {name for name in re.findall(r"`([a-z0-9-]+)`", paragraph) if name in builtin}
    assert declaring and named == declaring
