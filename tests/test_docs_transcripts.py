"""The console transcripts the pages show are what the tools print now.

Each test runs the command a page shows (fast and deterministic, or made so by normalising only
what must vary: tokens, ports, absolute paths, the memory this machine has) and compares its
output with the page's block, line for line, so a page fails as soon as the tool's output changes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_helpers import ROOT, environment, output, workdir  # noqa: F401 (a fixture)

DOCS = ROOT / "docs"


def console_block(page: str, first_line: str) -> list[str]:
    """The lines of the page's fenced block that starts with ``first_line`` (a ``$ command`` or an output line)."""
    for block in re.findall(r"^```[a-z]*\n(.*?)\n```", (DOCS / page).read_text(), re.S | re.M):
        if block.startswith(first_line):
            return block.splitlines()
    raise AssertionError(f"{page} has no block starting with {first_line!r}")


def test_own_challenge_page_shows_the_head_of_the_example_labels() -> None:
    block = console_block("own-challenge.md", "$ head -3 examples/breast-cancer/labels.csv")
    assert block[1:] == (ROOT / "examples" / "breast-cancer" / "labels.csv").read_text().splitlines()[:3]


@pytest.mark.slow
def test_sizes_page_shows_the_error_an_oversized_competition_gets(workdir: Path) -> None:  # noqa: F811
    shown = console_block("sizes.md", "ladderlab: error: scenario contest")
    scenario = re.search(r"^```toml\n(schema_version = 1\nname = \"contest\".*?)```", (DOCS / "sizes.md").read_text(), re.S | re.M)
    (workdir / "contest.toml").write_text(scenario[1])
    completed = subprocess.run([sys.executable, "-m", "ladderlab", "run", "contest.toml"], cwd=workdir,
                               env=environment(), capture_output=True, text=True, timeout=600)
    available = re.compile(r"more than the [\d.]+ [KMGT]iB available")
    page_available = available.search(shown[0])[0]
    assert completed.returncode == 2
    assert [available.sub(page_available, line) for line in completed.stderr.splitlines()] == shown


def _server_lines(lines: list[str]) -> list[str]:
    """What a server printed as it started, with what differs from run to run made the page's:
    tokens to ``ll_…``, the port to 8000, the log's absolute folder to ``…``."""
    normalised = []
    for line in lines:
        line = re.sub(r"ll_[\w-]+", "ll_…", line.rstrip("\n")).replace("ll_……", "ll_…")
        line = re.sub(r"http://127\.0\.0\.1:\d+/", "http://127.0.0.1:8000/", line)
        normalised.append(re.sub(r"sqlite:///\S*/([\w-]+/log\.sqlite)", r"sqlite:///…/\1", line))
    return normalised


def _started(server_output: list[str]) -> list[str]:
    """The lines a server printed up to its ``serving … at`` line."""
    end = next(i for i, line in enumerate(server_output) if line.startswith("serving "))
    return server_output[: end + 1]


@pytest.mark.slow
def test_serve_page_shows_what_the_demo_and_an_attack_on_it_print(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ladderlab.serve.launch import ServerProcess

    shown = console_block("serve.md", "$ ladderlab serve --demo")
    attack_shown = console_block("serve.md", "$ ladderlab serve attack")
    monkeypatch.chdir(tmp_path)
    with ServerProcess("--demo") as server:
        assert _server_lines(_started(server.output)) == _server_lines(shown[1:])
        command = attack_shown[0].removeprefix("$ ").replace("http://127.0.0.1:8000", server.url.rstrip("/"))
        command = re.sub(r"--token \S+", f"--token {server.tokens['team-a']}", command)
        printed = subprocess.run(["bash", "-c", command], env=environment(), capture_output=True, text=True, timeout=600)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert printed.stdout.splitlines() == attack_shown[1:]


def _commands_and_output(block: list[str]) -> tuple[str, list[str]]:
    """A console block's commands (``$`` lines and their continuations) as one script, and what they printed."""
    commands, printed, continued = [], [], False
    for line in block:
        if line.startswith("$ ") or continued:
            commands.append(line.removeprefix("$ "))
            continued = line.endswith("\\")
        else:
            printed.append(line)
    return "\n".join(commands), printed


@pytest.mark.slow
def test_the_served_example_prints_and_answers_an_upload_as_the_pages_show(tmp_path: Path) -> None:
    from ladderlab.serve.launch import ServerProcess

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (.ci/run installs it)")
    shown = console_block("own-challenge.md", "$ ladderlab serve examples/breast-cancer/challenge.toml")
    script, answer = _commands_and_output(console_block("serve.md", "$ curl -s http://127.0.0.1:8000/sample_submission.csv"))
    example = shutil.copytree(ROOT / "examples" / "breast-cancer", tmp_path / "breast-cancer")
    with ServerProcess(example / "challenge.toml") as server:
        assert _server_lines(_started(server.output)) == _server_lines(shown[1:])
        uploaded = subprocess.run(["bash", "-c", script.replace("http://127.0.0.1:8000/", server.url)], cwd=tmp_path,
                                  env={**environment(), "TOKEN": server.tokens["team-a"]},
                                  capture_output=True, text=True, timeout=600)
    assert uploaded.stdout.splitlines() == answer


def _options(text: str) -> dict[str, list[str]]:
    """Each ``--option`` of a synopsis with the choices it shows (``[--method un|exp|…]``)."""
    return {name: choices.split("|") if "|" in choices else []
            for name, choices in re.findall(r"(--[a-z-]+)(?: ([\w|.]+))?", text)}


def test_extrapolation_page_gives_the_synopsis_of_the_parser() -> None:
    from ladderlab.cli.commands import build_parser
    from tests.docs_helpers import subcommands

    synopsis = "\n".join(console_block("extrapolation.md", "ladderlab stats extrapolate FILE"))
    parser = subcommands(subcommands(build_parser())["stats"])["extrapolate"]
    real = {option: list(action.choices or []) for action in parser._actions for option in action.option_strings
            if option.startswith("--") and option != "--help"}
    assert _options(synopsis) == real
    positionals = [action.dest.upper() for action in parser._actions if not action.option_strings]
    assert synopsis.split()[3:3 + len(positionals)] == positionals


@pytest.mark.slow
def test_run_directories_page_shows_the_error_a_second_run_into_a_locked_directory_gets(workdir: Path) -> None:  # noqa: F811
    from ladderlab.runs.rundir import RunLock

    shown = console_block("run-directories.md", "ladderlab: error: runs/quickstart is in use")
    holder = re.compile(r"pid \d+ on host \S+, started \S+Z")
    with RunLock(workdir / "runs" / "quickstart"):
        completed = subprocess.run([sys.executable, "-m", "ladderlab", "run", "quickstart"], cwd=workdir,
                                   env=environment(), capture_output=True, text=True, timeout=600)
    assert completed.returncode == 2
    assert holder.sub("HOLDER", completed.stderr.splitlines()[-1]) == holder.sub("HOLDER", shown[0])


def _study(folder: Path, task: str, mechanism: str, attacks: str) -> list[str]:
    """Write ``study.toml`` (one matrix row, two replications) and return the command that runs it
    into ``runs/study``."""
    (folder / "study.toml").write_text(f'schema_version = 1\nname = "study"\nreplications = 2\nseed = 0\n\n[[matrix]]\n'
                                       f"tasks = [{task}]\nmechanisms = [{mechanism}]\nattacks = [{attacks}]\n")
    return [sys.executable, "-m", "ladderlab", "run", "study.toml", "--out", "runs/study"]


def _stderr(command: list[str], folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=folder, env=environment(), capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_run_directories_page_shows_the_warning_a_damaged_cell_file_gets(workdir: Path) -> None:  # noqa: F811
    shown = console_block("run-directories.md", "ladderlab: cell diabetes × kaggle × honest")
    command = _study(workdir, '{ id = "diabetes" }', '{ id = "kaggle" }', '{ id = "honest" }')
    assert _stderr(command, workdir).returncode == 0
    (cell,) = (workdir / "runs" / "study" / "cells").glob("*.parquet")
    cell.write_bytes(cell.read_bytes()[: cell.stat().st_size // 2])
    warned = [line for line in _stderr(command, workdir).stderr.splitlines() if "is damaged" in line]

    def varying(line: str) -> str:  # the cell's key, the quarantine's time and the file's size
        line = re.sub(r"\b([0-9a-f]{4})(?:[0-9a-f]{16}|…)", "KEY", line)
        return re.sub(r"\d+ bytes, the manifest recorded \d+", "SIZES", re.sub(r"\d{8}T\d{6}Z", "TIME", line))

    assert [varying(line) for line in warned] == [varying(line) for line in shown]


@pytest.mark.slow
def test_run_directories_page_shows_the_error_finished_cells_of_a_changed_plugin_get(workdir: Path) -> None:  # noqa: F811
    shown = console_block("run-directories.md", "ladderlab: error: runs/study: 2 finished cells")
    plugin = workdir / "my_mech.py"
    plugin.write_text('from ladderlab.registry import MECHANISMS\n\n\nclass Shifted(MECHANISMS.get("kaggle")):\n'
                      '    """Kaggle\'s rounding under another name."""\n')
    command = _study(workdir, '{ id = "random-labels", params = { n_public = 200, n_holdout = 600 } }',
                     '{ id = "my_mech.py:Shifted" }', '{ id = "boosting", params = { k = 50 } }, { id = "honest" }')
    assert _stderr(command, workdir).returncode == 0
    plugin.write_text(plugin.read_text() + "# edited\n")
    refused = _stderr(command, workdir)
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-len(shown):] == shown


def _sh_block(page: str, first_line: str) -> list[str]:
    """The commands of the page's ``sh`` block that starts with ``first_line``, one a line."""
    for block in re.findall(r"^ *```sh\n(.*?)\n *```", (DOCS / page).read_text(), re.S | re.M):
        if block.lstrip().startswith(first_line):
            return [line.strip() for line in block.splitlines() if line.strip()]
    raise AssertionError(f"{page} has no sh block starting with {first_line!r}")


@pytest.mark.slow
def test_the_deploying_pages_backup_and_close_commands_run_against_a_served_challenge(tmp_path: Path) -> None:
    from ladderlab.serve.launch import ServerProcess

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (.ci/run installs it)")
    backup = _sh_block("deploying.md", "python -c \"import sqlite3")
    after = _sh_block("deploying.md", "curl -s -X POST $URL/api/organiser/close")
    example = shutil.copytree(ROOT / "examples" / "breast-cancer", tmp_path / "breast-cancer")
    with ServerProcess(example / "challenge.toml") as server:
        env = {**environment(), "URL": server.url.rstrip("/"), "ORGANISER": server.tokens["organiser"]}
        for team in ("team-a", "team-b"):
            sample = output(f"curl -s {server.url}sample_submission.csv", example)
            uploaded = subprocess.run(["curl", "-s", "-X", "POST", f"{server.url}api/submissions", "-H",
                                       f"Authorization: Bearer {server.tokens[team]}", "-H", "Content-Type: text/csv",
                                       "--data-binary", sample], capture_output=True, text=True, timeout=600)
            assert '"submission_id"' in uploaded.stdout, uploaded.stdout
        printed = {}
        for command in backup + after:
            completed = subprocess.run(["bash", "-c", command], cwd=example, env=env, capture_output=True, text=True,
                                       timeout=600)
            assert completed.returncode == 0, f"{command}\n{completed.stderr[-2000:]}"
            printed[command] = completed.stdout
    verified = [text for command, text in printed.items() if command.startswith("ladderlab serve verify")]
    assert all("2 submissions" in text and "the chain is intact" in text for text in verified) and len(verified) == 2
    assert [row["team"] for row in json.loads((example / "final.json").read_text())["teams"]] != []
    assert "winner:" in printed["ladderlab stats rank-certificate losses.parquet --top 10"]


def test_the_honest_participants_own_challenge_shows_fit_the_examples_budget(tmp_path: Path) -> None:
    """An organiser who pastes the page's ``[certify]`` table into the example gets participants
    that certify accepts (each within a team's budget), not a refusal."""
    from ladderlab.certification import certify
    from ladderlab.certification.challenge_certify import (
        honest_participants,
        task_families,
    )
    from ladderlab.certification.challenge_task import load_challenge

    table = "\n".join(console_block("own-challenge.md", "[certify]"))
    example = shutil.copytree(ROOT / "examples" / "breast-cancer", tmp_path / "breast-cancer") / "challenge.toml"
    example.write_text(example.read_text() + "\n" + table + "\n")
    challenge, identity = load_challenge(example)
    specs = honest_participants(challenge, [], [challenge.per_team_budget()])
    plays = certify.honest_plays(specs, task_families(challenge, identity, example, specs)["honest"],
                                 challenge.per_team_budget())
    assert len(plays) == 2 and all(play["budget"] <= challenge.per_team_budget() for play in plays)
