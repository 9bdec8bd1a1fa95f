"""Plugins by id, by entry point and by file, with "did you mean"."""

from importlib.metadata import EntryPoint

import pytest

from ladderlab import registry
from ladderlab.cli.commands import main
from ladderlab.registry import MECHANISMS

LOCAL_PLUGIN = '''
from ladderlab.mechanism import Mechanism

class Constant(Mechanism):
    """Always releases the same value."""
    id = "constant"
    reference = "a test"

    def __init__(self, value=0.5):
        self.value = value

    def _release(self, P):
        return P[:, 0] * 0 + self.value
'''


def test_unknown_id_suggests_the_nearest_ids():
    with pytest.raises(ValueError, match="unknown mechanism 'ladder_t'; did you mean 'ladder-t'"):
        MECHANISMS.get("ladder_t")


def test_unknown_parameter_is_named_with_a_suggestion():
    with pytest.raises(ValueError, match="unknown parameter of mechanism 'ladder-t' 'alpah'; did you mean 'alpha'"):
        MECHANISMS.make("ladder-t", alpah=0.1)


def test_local_file_plugin(tmp_path):
    path = tmp_path / "my_mechanism.py"
    path.write_text(LOCAL_PLUGIN)
    mechanism = MECHANISMS.make(f"{path}:Constant", value=0.25)
    assert mechanism.get_params() == {"value": 0.25}
    with pytest.raises(ValueError, match="did you mean 'Constant'"):
        MECHANISMS.get(f"{path}:Constnt")
    with pytest.raises(ValueError, match="plugin file not found"):
        MECHANISMS.get(f"{tmp_path / 'missing.py'}:Constant")


HELPED_PLUGIN = """
from ladderlab.mechanisms.kaggle import Kaggle

import helper


class Helped(Kaggle):
    id = "helped"
    shift = helper.SHIFT
"""


def test_plugins_in_two_folders_each_import_their_own_helper_module_of_the_same_name(tmp_path):
    for folder, shift in (("first", "0.25"), ("second", "0.5")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helped.py").write_text(HELPED_PLUGIN)
        (tmp_path / folder / "helper.py").write_text(f"SHIFT = {shift}\n")
    assert MECHANISMS.get(f"{tmp_path / 'first' / 'helped.py'}:Helped").shift == 0.25
    assert MECHANISMS.get(f"{tmp_path / 'second' / 'helped.py'}:Helped").shift == 0.5
    assert MECHANISMS.get(f"{tmp_path / 'first' / 'helped.py'}:Helped").shift == 0.25


def test_a_class_of_the_wrong_family_is_refused():
    with pytest.raises(ValueError, match="is not a mechanism"):
        MECHANISMS.get("ladderlab.board:Board")


def test_entry_point_plugins_are_listed_and_loaded(monkeypatch):
    advertised = EntryPoint("third-party-kaggle", "ladderlab.mechanisms.kaggle:Kaggle", "ladderlab.mechanisms")
    monkeypatch.setattr(registry, "entry_points", lambda group: [advertised] if group == "ladderlab.mechanisms" else [])
    assert "third-party-kaggle" in MECHANISMS.ids()
    assert MECHANISMS.make("third-party-kaggle", alpha=0.1).alpha == 0.1


def test_cli_lists_every_mechanism_with_parameters_and_reference(capsys):
    assert main(["list", "mechanisms"]) == 0
    out = capsys.readouterr().out
    for mechanism_id in MECHANISMS.ids():
        assert f"  {mechanism_id} " in out
    assert "parameters: alpha=0.15, b=1000, critical_value=None" in out
    assert "reference: Chaibub Neto et al. 2016, Alg. 4" in out


def test_cli_lists_scenarios_in_aligned_columns_with_their_replications(capsys):
    assert main(["list", "scenarios"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    source_rows = [row for row in rows if row.lstrip().startswith("source:")]
    name_rows = [row for row in rows if not row.startswith(" " * 4)]  # a wrapped source goes on further in
    second_column = {row.index(row.split()[1], 2 + len(row.split()[0])) for row in name_rows}
    assert second_column == {row.index("source:") for row in source_rows}
    assert len(second_column) == 1
    assert any(row.split()[:3] == ["kaggle-scale", "1", "replication;"] for row in name_rows)


def test_cli_lists_a_family_named_in_the_singular_as_in_the_plural(capsys):
    assert main(["list", "mechanisms"]) == 0
    plural = capsys.readouterr().out
    assert main(["list", "mechanism"]) == 0
    assert capsys.readouterr().out == plural


def test_cli_lists_a_plugin_of_ones_own_by_its_path_with_its_family_and_parameters(capsys, monkeypatch):
    """A researcher checks what a plugin file declares before putting it in a scenario."""
    from tests.docs_helpers import ROOT

    monkeypatch.chdir(ROOT)
    assert main(["list", "examples/resubmission_average.py:ResubmissionAverage", "examples/best_rounded.py:BestRounded"]) == 0
    out = capsys.readouterr().out
    attack, mechanism = out.split("mechanism:\n")
    assert attack.startswith("attack:\n  resubmission_average.py:ResubmissionAverage")  # shortened as a built-in's
    assert "parameters: repeats=10" in attack and "repeats: a whole number in [1, inf]" in attack
    assert "parameters: alpha=0.001" in mechanism and "reference: documentation example" in mechanism
    assert main(["list", "examples/best_rounded.py:Best"]) == 2
    assert "unknown class in 'examples/best_rounded.py' 'Best'; did you mean 'BestRounded'?" in capsys.readouterr().err


def test_local_plugins_in_a_scenario_resolve_against_the_scenario_file_and_import_their_siblings(tmp_path, monkeypatch):
    from ladderlab.runs.scenario import cells, load
    from ladderlab.utils.locations import location_free

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "shared_rule.py").write_text("ALPHA = 0.25\n")
    (folder / "my_kaggle.py").write_text(
        "from shared_rule import ALPHA\n"
        "from ladderlab.mechanisms.kaggle import Kaggle\n\n"
        "class CoarseKaggle(Kaggle):\n"
        "    id = 'coarse-kaggle'\n\n"
        "    def __init__(self, alpha: float = ALPHA):\n"
        "        super().__init__(alpha)\n"
    )
    (folder / "study.toml").write_text(
        'schema_version = 1\nname = "local"\nreplications = 1\n[[matrix]]\n'
        'tasks = [{ id = "random-labels", params = { n_public = 20, n_holdout = 60 } }]\n'
        'mechanisms = [{ id = "my_kaggle.py:CoarseKaggle" }]\n'
        'attacks = [{ id = "boosting", params = { k = 5 } }]\n'
    )
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    (cell,) = cells(load(folder / "study.toml"))
    mechanism_id = cell.mechanism[0]
    assert mechanism_id == f"{folder.resolve()}/./my_kaggle.py:CoarseKaggle"  # opens from anywhere
    assert location_free(mechanism_id) == "my_kaggle.py:CoarseKaggle"  # identifies results as the scenario wrote it
    assert MECHANISMS.make(mechanism_id).alpha == 0.25


def test_a_misspelled_plugin_file_gets_a_suggestion_and_a_missing_class_lists_only_the_files_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sparse_release.py").write_text(
        "from ladderlab.mechanisms.kaggle import Kaggle\n\nclass Mine(Kaggle):\n    id = 'mine'\n")
    with pytest.raises(ValueError, match="did you mean 'sparse_release.py'"):
        MECHANISMS.make("sparse_relase.py:Mine")
    with pytest.raises(ValueError, match=r"did you mean 'Mine'\? Known: Mine$"):
        MECHANISMS.make("sparse_release.py:Mne")
