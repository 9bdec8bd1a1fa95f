"""Every example of the README and the documentation runs, so that none can rot; the site builds strictly.

Fenced blocks are collected from ``README.md`` and ``docs/*.md``:

- ``python`` blocks run in a fresh interpreter (blocks of one page in order, in one
  process) in a temporary folder that holds a link to ``examples/``;
- ``bash`` blocks run line by line in the same kind of folder; ``pip install`` and
  ``pytest`` lines are the Quickstart's, which CI runs as such, and are left out;
- ``toml`` blocks that are scenarios load as scenarios.

A block preceded by ``<!-- example: slow -->`` runs only with ``-m slow``; snippet
includes (``--8<--``) are the example files themselves, which the other blocks use.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ladderlab.scenario import load

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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
    joined = script.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")
            and not any(line.strip().startswith(c) for c in SKIPPED_COMMANDS)]


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
