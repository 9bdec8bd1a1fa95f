"""What the documentation tests share: the pages, their fenced blocks, and a folder to run examples in."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RESULTS_PAGES = sorted((ROOT / "docs" / "results").glob("*.md"))
ANY_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)\n```", re.S | re.M)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A folder to run examples in: ``examples/`` linked, empty ``docs/figures`` and ``docs/results``
    for the commands that regenerate pages."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for generated in ("figures", "results"):
        (tmp_path / "docs" / generated).mkdir(parents=True)
    return tmp_path


def environment() -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", NO_MKDOCS_2_WARNING="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def output(command: str, folder: Path) -> str:
    """What a shell command prints on standard output, run in ``folder``; it must succeed."""
    completed = subprocess.run(["bash", "-c", command], cwd=folder, env=environment(),
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of a parser: argparse's, or those ``serve`` dispatches itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return dict(parser._defaults.get("subcommands", {}))
