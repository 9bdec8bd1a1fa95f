"""Untrusted attack code never runs in the organiser's process: under ``--isolation process``
a plugin's module-level code runs only in its sandbox, so what it would steal with the
organiser's rights (the secret-seed file and the scenario named on the command line) and
what it would write (its own source, its folder, ladderlab's package, ``$HOME``, a folder
only the organiser can write) stay out of reach, in runs, certificates and competitions.
The organiser learns what it needs of the class from the sandbox, with the same errors."""

import shutil
import sys
from pathlib import Path

import pytest

import ladderlab
from ladderlab.isolation import sandbox
from ladderlab.isolation.untrusted import UntrustedAttack, sandboxed_attacks
from ladderlab.params import ParameterError
from ladderlab.plugin import fingerprint
from ladderlab.registry import ATTACKS
from ladderlab.runs import runner
from tests.helpers import SMALL
from tests.serve_helpers import write_challenge
from tests.test_isolation import (
    N_HOLDOUT,
    N_PUBLIC,
    assert_at_chance,
    assert_every_private_loss_at_chance,
    hostile_competition,
)
from tests.test_isolation import ladderlab as ladderlab_command

DATA = Path(__file__).parent / "data"


@pytest.fixture
def hostile(tmp_path):
    """The hostile plugin and its local module, copied into a folder of their own, beside a
    folder that only the organiser (this test's user, mode 0700) can write; cleaned up after,
    wherever its canaries landed."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    for name in ("hostile_import.py", "redteam_attack.py"):
        shutil.copy(DATA / name, folder / name)
    (folder / "organiser-only").mkdir(mode=0o700)
    canary = f"hostile-canary-{folder.name}"
    places = [folder, Path(ladderlab.__file__).parent, Path.home(), tmp_path, Path("/tmp")]
    yield folder
    for place in places:
        (place / canary).unlink(missing_ok=True)


def assert_module_level_code_never_ran_here(folder: Path) -> None:
    """No marker in the organiser-only folder, no canary anywhere, its source unchanged."""
    assert not (folder / "organiser-only" / "top-level-ran").exists(), "module-level code ran in an organiser process"
    canary = f"hostile-canary-{folder.name}"
    landed = [place / canary for place in (folder, Path(ladderlab.__file__).parent, Path.home(), folder.parent,
                                           Path("/tmp")) if (place / canary).exists()]
    assert not landed, f"the module-level code wrote {landed}"
    assert (folder / "hostile_import.py").read_bytes() == (DATA / "hostile_import.py").read_bytes()


def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret"
    path.write_text(f"{2**127 + 12345}\n")
    path.chmod(0o600)
    return path


def test_a_hostile_plugin_imported_by_an_isolated_run_steals_and_writes_nothing(hostile, tmp_path):
    """``ladderlab run --isolation process --secret-seed FILE``, the plugin in duels and as two
    teams of a competition: its module-level code never runs here, so it cannot copy the secret
    into its source, and every final prediction is at chance."""
    plugin = f"{hostile / 'hostile_import.py'}:HostileImport"
    scenario = tmp_path / "hostile.toml"
    scenario.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }').replace(
        'attacks = [{ id = "boosting", params = { k = [50, 100], variant = "kaggle" } }]',
        f'attacks = [{{ id = "{plugin}" }}]') + hostile_competition(plugin))
    finished = ladderlab_command("--quiet", "run", str(scenario), "--out", str(tmp_path / "run"), "--isolation",
                                 "process", "--secret-seed", str(secret_file(tmp_path)), cwd=tmp_path)
    assert_module_level_code_never_ran_here(hostile)
    assert finished.returncode == 0, finished.stderr
    assert_every_private_loss_at_chance(tmp_path / "run", ":HostileImport", duels=3)


@pytest.mark.slow
def test_a_hostile_plugin_certified_in_isolation_steals_and_writes_nothing(hostile, tmp_path):
    """``ladderlab certify --attack file.py:Class --isolation process --secret-seed FILE``."""
    run_dir = tmp_path / "certificate-run"
    finished = ladderlab_command("--quiet", "certify", "kaggle", "--only", "--attack",
                                 f"{hostile / 'hostile_import.py'}:HostileImport", "--n", str(N_PUBLIC), "--budgets",
                                 "60", "--replications", "2", "--run-dir", str(run_dir), "--isolation", "process",
                                 "--secret-seed", str(secret_file(tmp_path)), "--out", str(tmp_path / "cert.json"),
                                 cwd=tmp_path)
    assert_module_level_code_never_ran_here(hostile)
    assert finished.returncode in (0, 1), finished.stderr
    results = runner.load_results(run_dir)
    played = results[results.attack.str.endswith(":HostileImport") & (results.status == "ok")
                     & (results.task == "random-labels")]
    assert len(played) >= 2 and (played.marks == "{}").all()
    for loss in played.final_final:
        assert_at_chance(loss)


@pytest.mark.slow
def test_a_hostile_plugin_certified_for_a_challenge_in_isolation_never_reads_its_labels(hostile, tmp_path):
    """``ladderlab certify --challenge FILE --attack file.py:Class --isolation process``: the
    challenge file on the command line names the organiser's labels file."""
    challenge = write_challenge(tmp_path / "challenge", n=N_HOLDOUT, rules="total = 30")
    run_dir = tmp_path / "certificate-run"
    finished = ladderlab_command("--quiet", "certify", "kaggle", "--challenge", str(challenge), "--only", "--attack",
                                 f"{hostile / 'hostile_import.py'}:HostileImport", "--replications", "2",
                                 "--run-dir", str(run_dir), "--isolation", "process",
                                 "--out", str(tmp_path / "cert.json"), cwd=tmp_path)
    assert_module_level_code_never_ran_here(hostile)
    assert finished.returncode in (0, 1), finished.stderr
    results = runner.load_results(run_dir)
    played = results[results.attack.str.endswith(":HostileImport") & (results.status == "ok")]
    assert len(played) >= 2 and (played.marks == "{}").all()
    for loss in played.final_final:
        assert_at_chance(loss, N_HOLDOUT // 2)


def test_the_organiser_learns_a_plugin_from_its_sandbox_with_the_same_answers_and_errors(tmp_path):
    """Within ``sandboxed_attacks`` the class is a stand-in whose every answer (defaults,
    identity, fingerprint, errors) is what the class itself gives, and none of its code is loaded."""
    plugin = f"{DATA / 'redteam_attack.py'}:RedTeam"
    loaded = ATTACKS.get(plugin)
    with sandboxed_attacks():
        stand_in = ATTACKS.get(plugin)
        assert issubclass(stand_in, UntrustedAttack) and stand_in.id == loaded.id
        assert stand_in.parameter_defaults() == loaded.parameter_defaults()
        assert stand_in.strength_grid(100, 200) == loaded.strength_grid(100, 200)
        assert fingerprint(stand_in) == fingerprint(loaded)
        with pytest.raises(ParameterError) as sandboxed:
            ATTACKS.make(plugin, os_routes="every").validate_params()
        assert ATTACKS.get("boosting") is ATTACKS.get("boosting") and not issubclass(ATTACKS.get("boosting"),
                                                                                    UntrustedAttack)
    with pytest.raises(ParameterError) as in_process:
        ATTACKS.make(plugin, os_routes="every").validate_params()
    assert (str(sandboxed.value), sandboxed.value.parameter) == (str(in_process.value), in_process.value.parameter)
    assert ATTACKS.get(plugin) is loaded


@pytest.mark.slow
def test_a_bad_parameter_of_an_untrusted_plugin_is_the_same_one_line_error_before_any_work(hostile, tmp_path):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }').replace(
        'attacks = [{ id = "boosting", params = { k = [50, 100], variant = "kaggle" } }]',
        f'attacks = [{{ id = "{hostile / "hostile_import.py"}:HostileImport", params = {{ os_routes = "every" }} }}]'))
    finished = ladderlab_command("run", str(scenario), "--out", str(tmp_path / "run"), "--isolation", "process",
                                 cwd=tmp_path)
    assert_module_level_code_never_ran_here(hostile)
    assert finished.returncode == 2 and not (tmp_path / "run").exists()
    (line,) = finished.stderr.strip().splitlines()
    assert line.startswith(f"ladderlab: error: {scenario}") and "matrix[0].attacks[0].params.os_routes" in line
    assert "'every' is invalid" in line


def test_a_plugin_derived_from_a_built_in_attack_keeps_its_fingerprint_under_isolation(tmp_path):
    """The organiser hashes the snapshot and the built-in ancestor the attack process names:
    the same fingerprint as without isolation, so a run directory may switch modes."""
    plugin_file = tmp_path / "file_boosting.py"
    plugin_file.write_text("from ladderlab.attacks.boosting import Boosting\n\n\nclass FileBoosting(Boosting):\n"
                           "    id = 'file-boosting'\n")
    plugin = f"{plugin_file}:FileBoosting"
    with sandboxed_attacks():
        isolated = fingerprint(ATTACKS.get(plugin))
    assert isolated == fingerprint(ATTACKS.get(plugin))
    assert [Path(path).name for path in isolated["source_files"]] == ["file_boosting.py", "boosting.py"]


def test_the_sandbox_shows_the_snapshot_the_organiser_hashed(tmp_path):
    """A plugin file edited after its stand-in was made: the stand-in (and its sandbox) keep the
    snapshot; a new stand-in is made for the new contents, with another fingerprint."""
    plugin_file = tmp_path / "plugin.py"
    plugin_file.write_text((DATA / "redteam_attack.py").read_text())
    plugin = f"{plugin_file}:RedTeam"
    with sandboxed_attacks():
        before = ATTACKS.get(plugin)
        plugin_file.write_text(plugin_file.read_text().replace('id = "red-team"', 'id = "edited-red-team"'))
        assert before.sandbox_view.files[0].content != plugin_file.read_bytes()
        after = ATTACKS.get(plugin)
    assert (before.id, after.id) == ("red-team", "edited-red-team")
    assert fingerprint(before)["source_sha256"] != fingerprint(after)["source_sha256"]
    sandbox.close_sandboxes()


def test_without_isolation_a_plugin_is_imported_as_before(hostile):
    """Documented: without isolation the module-level code runs in this process (it is trusted)."""
    try:
        ATTACKS.get(f"{hostile / 'hostile_import.py'}:HostileImport")
        assert (hostile / "organiser-only" / "top-level-ran").exists()
    finally:
        for name in list(sys.modules):
            if name == "redteam_attack":
                del sys.modules[name]
