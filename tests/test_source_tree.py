"""Python started in the checkout finds every ladderlab package, whichever install was used (issue 32, item 7)."""

import subprocess
import sys
import sysconfig
from pathlib import Path

from ladderlab.utils import source_tree

ROOT = Path(__file__).resolve().parent.parent


def test_the_checkout_imports_its_plugin_packages_without_an_editable_install() -> None:
    """``python -S`` skips site-packages' .pth files, so setuptools' editable finder never runs:
    the source folder ``ladderlab/`` is found first, as after a non-editable ``pip install .``."""
    probe = ("import ladderlab.mechanisms, ladderlab.attacks;"
             "from ladderlab.registry import make_mechanism;"
             "from ladderlab.scenarios import builtin_scenarios;"
             "print(ladderlab.mechanisms.__file__, type(make_mechanism('ladder')).__name__, 'quickstart' in builtin_scenarios())")
    env = {"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": ""}
    result = subprocess.run([sys.executable, "-S", "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(ROOT / "mechanisms" / "__init__.py"), "FixedLadder", "True"]


def test_an_installed_copy_needs_no_finder(tmp_path: Path) -> None:
    package = tmp_path / "ladderlab"
    (package / "mechanisms").mkdir(parents=True)
    assert source_tree.find_plugin_folders(package) == {}


def test_the_checkout_maps_exactly_the_folders_beside_the_package() -> None:
    assert source_tree.find_plugin_folders(ROOT / "ladderlab") == {
        "ladderlab.mechanisms": ROOT / "mechanisms",
        "ladderlab.attacks": ROOT / "attacks",
        "ladderlab.scenarios": ROOT / "scenarios",
    }


def test_a_plain_install_ships_every_package_of_the_core() -> None:
    """``pip install .`` installs the packages pyproject.toml lists, no more: a package of the
    core left out of the list is missing from every non-editable install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    core = {".".join(("ladderlab", *init.parent.relative_to(ROOT / "ladderlab").parts))
            for init in (ROOT / "ladderlab").rglob("__init__.py")}
    assert core <= listed, sorted(core - listed)


def test_a_new_interpreter_given_the_prologue_imports_this_processs_ladderlab_whatever_its_path_finds_first(tmp_path):
    """What the sandbox of isolated attacks runs first: a ``ladderlab`` earlier on its ``sys.path`` (a
    checkout's, without plugin packages) must not replace the one the organiser imported."""
    (tmp_path / "ladderlab").mkdir()
    (tmp_path / "ladderlab" / "__init__.py").write_text("raise ImportError('shadowed')\n")
    folders = source_tree.package_folders()
    probe = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); {source_tree.import_prologue(folders)}; "
             "import ladderlab, ladderlab.attacks.boosting, ladderlab.mechanisms, ladderlab.scenarios; "
             "print(ladderlab.__path__[0]); print(ladderlab.attacks.__path__[0])")
    result = subprocess.run([sys.executable, "-I", "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [folders["ladderlab"][0], folders["ladderlab.attacks"][0]]
