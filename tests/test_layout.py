"""One address layout (ladderlab.isolation.layout): a ``ladderlab`` command with ``--isolation process``
restarts itself without layout randomisation, and its attack processes map libpython and
NumPy's code at the organiser's addresses; ``LADDERLAB_SAME_LAYOUT=0`` leaves every process
its own randomised layout."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ladderlab.isolation import layout
from ladderlab.runs.runner import load_results

DATA = Path(__file__).parent / "data"
PROBE = f"{DATA / 'layout_probe.py'}:LayoutProbe"
SCENARIO = f"""
schema_version = 1
name = "layout"
replications = 1
seed = 1

[[matrix]]
tasks = [{{ id = "random-labels", params = {{ n_public = 50, n_holdout = 150 }} }}]
mechanisms = [{{ id = "kaggle" }}]
attacks = [{{ id = "{PROBE}" }}]
"""
REFERENCE = f"""{layout.FIRST_IMPORT}; import json, sys; sys.path[:0] = [{str(DATA)!r}]
from layout_probe import code_addresses; print(json.dumps(code_addresses()))"""
"""A program that starts as a restarted organiser does and prints where its code lies."""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="attack processes start anew only as root (separate-user mode)")


def organisers_addresses() -> dict[str, list[int]]:
    """Where an interpreter started without randomisation, NumPy first, maps its code: where
    every restarted ``ladderlab`` command maps it."""
    started = subprocess.run([sys.executable, "-c", REFERENCE], capture_output=True, text=True, check=True,
                             preexec_fn=layout.fix_for_new_programs)
    return json.loads(started.stdout)


def probes_addresses(tmp_path: Path, environment: dict[str, str]) -> dict[str, list[int]]:
    """Where the probe's attack process mapped its code in ``ladderlab run --isolation process``."""
    scenario, out = tmp_path / "layout.toml", tmp_path / f"out-{len(environment)}"
    scenario.write_text(SCENARIO)
    subprocess.run([sys.executable, "-m", "ladderlab.cli.commands", "--quiet", "run", str(scenario), "--out", str(out),
                    "--isolation", "process"], check=True, capture_output=True, env={**os.environ, **environment})
    return json.loads(load_results(out).marks[0])


@pytest.mark.slow
@needs_root
def test_an_isolated_commands_attack_process_maps_its_code_where_the_organiser_does(tmp_path):
    expected = organisers_addresses()
    assert all(expected.values()), expected
    assert probes_addresses(tmp_path, {}) == expected
    assert probes_addresses(tmp_path, {layout.SWITCH: "0"}) != expected


def test_the_restart_runs_the_same_command_with_the_same_interpreter_options():
    module = layout.restart_command(["/x/ladderlab/cli.py", "run", "a b.toml"],
                                    ["/venv/bin/python", "-X", "dev", "-m", "ladderlab.cli.commands", "run", "a b.toml"],
                                    "/venv/bin/python")
    script = layout.restart_command(["/venv/bin/ladderlab", "run", "a b.toml"],
                                    ["/venv/bin/python3", "/venv/bin/ladderlab", "run", "a b.toml"], "/venv/bin/python3")
    assert module[:4] == ["/venv/bin/python", "-X", "dev", "-c"] and script[:2] == ["/venv/bin/python3", "-c"]
    for command, argv0 in ((module, "/x/ladderlab/cli.py"), (script, "/venv/bin/ladderlab")):
        assert command[-1].startswith("import sys; " + layout.FIRST_IMPORT + ";")
        assert f"sys.argv = {[argv0, 'run', 'a b.toml']!r}" in command[-1]
    kept = layout.restart_command(["/venv/bin/ladderlab", "run"], ["/venv/bin/python3", "/venv/bin/ladderlab", "run"],
                                  "/venv/bin/python3", first_path="/venv/bin")
    assert kept[-1].startswith(f"import sys; sys.path[0] = '/venv/bin'; {layout.FIRST_IMPORT};")


def test_a_process_started_without_randomisation_knows_it_and_one_started_normally_does_not():
    program = "from ladderlab.isolation import layout; print(layout.fixed())"
    fixed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                           preexec_fn=layout.fix_for_new_programs)
    normal = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert (fixed.stdout.strip(), normal.stdout.strip()) == ("True", "False" if not layout.fixed() else "True")



@pytest.mark.parametrize(("euid", "switch", "already_fixed", "restarts"), [
    (0, "1", False, True), (1000, "1", False, False), (0, "0", False, False), (0, "1", True, False)])
def test_a_command_restarts_only_as_root_with_the_switch_on_and_a_randomised_layout(
        monkeypatch, euid, switch, already_fixed, restarts):
    commands = []
    monkeypatch.setattr(layout.os, "execv", lambda executable, command: commands.append(command))
    monkeypatch.setattr(layout.os, "geteuid", lambda: euid)
    monkeypatch.setattr(layout, "fixed", lambda: already_fixed)
    monkeypatch.setattr(layout, "fix_for_new_programs", lambda: True)  # not this test process's own personality
    monkeypatch.setenv(layout.SWITCH, switch)
    layout.restart_with_fixed_layout()
    assert len(commands) == restarts


@pytest.mark.parametrize(("arguments", "isolating"), [
    (["run", "a.toml", "--isolation", "process"], True), (["certify", "kaggle", "--isolation=process"], True),
    (["run", "a.toml", "--isolation", "none"], False), (["run", "process", "--isolation"], False),
    (["run", "a.toml"], False)])
def test_the_entry_point_reads_isolation_from_the_raw_arguments(arguments, isolating):
    assert layout.isolating(arguments) is isolating


EARLY = """import sys
from ladderlab.cli import entry
from ladderlab.isolation import layout
def restart():
    print("numpy" in sys.modules, "ladderlab.cli.commands" in sys.modules)
    raise SystemExit(0)
layout.restart_with_fixed_layout = restart
sys.argv = ["ladderlab", "run", "scenario.toml", "--isolation", "process"]
entry.main()
"""


def test_the_command_restarts_before_it_imports_numpy_or_the_command_line():
    """The restarted process imports them anyway: doing it first as well costs a third of a second."""
    started = subprocess.run([sys.executable, "-c", EARLY], capture_output=True, text=True, check=True)
    assert started.stdout.split() == ["False", "False"]


SERVER_MAPS = """import pathlib
from ladderlab.isolation.protocol import AttackRef
from ladderlab.isolation.sandbox import sandbox_for
sandbox = sandbox_for(AttackRef.from_spec("hill-climbing", {}).view())
sandbox.start_attack_process("hill_climbing")
def descendants(pid):
    children = [int(c) for c in pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return children + [d for c in children for d in descendants(c)]
maps = [pathlib.Path(f"/proc/{p}/maps").read_text() for p in descendants(sandbox._process.pid)]
print(sandbox.same_layout, any("sklearn" in m for m in maps))
"""
"""Whether the sandbox's processes (server and a fresh hill-climbing attack process) map scikit-learn,
which only the server's preloading of the attack module's imports brings in before a duel starts."""


@pytest.mark.slow
@needs_root
def test_a_sandbox_whose_attack_processes_start_anew_preloads_nothing_for_them():
    def preloaded(environment: dict[str, str]) -> list[str]:
        started = subprocess.run([sys.executable, "-c", SERVER_MAPS], capture_output=True, text=True, check=True,
                                 preexec_fn=layout.fix_for_new_programs, env={**os.environ, **environment})
        return started.stdout.split()

    assert preloaded({}) == ["True", "False"]
    assert preloaded({layout.SWITCH: "0"}) == ["False", "True"]  # forked attack processes get the head start
