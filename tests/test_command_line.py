"""The command line a user sees (issue 48): at most twelve commands at the top, the maintainers' tools under
``ladderlab dev``, and each command registered by its area's ``cli`` module."""

import ast
import subprocess
import sys
from pathlib import Path

from ladderlab.cli.commands import build_parser
from tests.docs_helpers import subcommands

ROOT = Path(__file__).resolve().parent.parent
MAINTAINERS = {"bench", "bench-certify", "bench-isolation", "bench-competitions", "bench-serve", "bench-plan",
               "bench-proofs", "bench-arena", "realism", "results", "pages"}


def test_help_lists_at_most_twelve_commands():
    listed = subprocess.run([sys.executable, "-m", "ladderlab", "--help"], capture_output=True, text=True, timeout=120)
    commands = set(subcommands(build_parser()))
    assert listed.returncode == 0 and all(f"    {name} " in listed.stdout for name in commands)
    assert len(commands) <= 12, sorted(commands)


def test_the_maintainers_tools_are_under_dev_and_nowhere_else():
    top = subcommands(build_parser())
    assert set(subcommands(top["dev"])) == MAINTAINERS
    assert not MAINTAINERS & set(top)
    assert "bench" not in subcommands(top["serve"]) and "attack" in subcommands(top["serve"])


def test_commands_py_only_lists_the_areas_registrations():
    """Every command's parser and handler live in its area: cli/commands.py defines no subcommand parser of its
    own (no add_parser call but the ``stats`` group's) and no handler."""
    tree = ast.parse((ROOT / "ladderlab" / "cli" / "commands.py").read_text())
    added = [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", None) == "add_parser"]
    registered = [node.func.value.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and getattr(node.func, "attr", None) == "register"]
    assert added == ["stats"]
    assert {"runs_cli", "reports_cli", "certification_cli", "serve_cli", "dev_cli"} <= set(registered)
    handlers = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert set(handlers) == {"build_parser", "main", "_show_run_messages", "_error", "_closed_pipe"}
