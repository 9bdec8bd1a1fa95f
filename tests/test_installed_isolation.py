"""Isolation from any directory (issue 45): after the Quickstart's non-editable ``pip install .``,
``ladderlab run examples/example.toml --isolation process`` run from the repository root plays the
built-in attacks in the sandbox, although the checkout's ``ladderlab/`` (which has no ``attacks/``)
lies on the way of every interpreter started there.

CI installs ladderlab editable, where the checkout and the installed package are one: only a
non-editable install into a venv of its own shows this. The venv is made once per session; its
dependencies are hard links to this interpreter's (a second copy of NumPy, SciPy and pandas would
cost more than the rest of the test), ladderlab itself is built and installed as ``pip install .``
builds it, from a copy of the sources, so that the checkout gets no ``build/`` folder.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ladderlab.isolation.layout import restart_command
from ladderlab.runs.runner import load_results

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "ladderlab", "mechanisms", "attacks", "scenarios")
NOT_DEPENDENCIES = ("ladderlab", "__editable__", "pip", "setuptools", "_distutils_hack", "distutils-precedence.pth")

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None or sys.platform != "linux",
                                 reason="isolation 'process' needs Linux and bubblewrap")


def _link_tree(source: Path, target: Path) -> None:
    """``source`` as hard links under ``target`` (copies where the file system cannot link)."""
    def link(from_path: str, to_path: str) -> None:
        try:
            os.link(from_path, to_path)
        except OSError:
            shutil.copy2(from_path, to_path)

    for entry in source.iterdir():
        if entry.name.startswith(NOT_DEPENDENCIES) or (target / entry.name).exists():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, copy_function=link, symlinks=True)
        else:
            link(str(entry), str(target / entry.name))


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with ladderlab installed from this checkout as ``pip install .`` installs it; its ``bin``."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the test links the dependencies of the virtual environment it runs in")
    base = tmp_path_factory.mktemp("installed")
    venv, source = base / "venv", base / "source"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for library in dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]):
        _link_tree(Path(library), site)
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                            "--no-deps", str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    return venv / "bin"


@pytest.mark.slow
@needs_bwrap
def test_an_installed_ladderlab_isolates_the_built_in_attacks_from_the_repository_root(installed, tmp_path):
    out = tmp_path / "run"
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    environment["PATH"] = f"{installed}:{environment.get('PATH', '')}"
    finished = subprocess.run(["ladderlab", "--quiet", "run", "examples/example.toml", "--isolation", "process",
                               "--out", str(out)], cwd=ROOT, env=environment, capture_output=True, text=True,
                              timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    results = load_results(out)
    assert set(results["attack"]) == {"boosting", "resubmission_average.py:ResubmissionAverage"}
    assert (results["status"] == "ok").all(), results.loc[results["status"] != "ok", ["attack", "error"]].to_string()


def test_a_restarted_command_imports_the_installed_ladderlab_not_the_current_folders(installed, tmp_path):
    """The restart without layout randomisation (:mod:`ladderlab.isolation.layout`) runs ``python -c``,
    which puts the current folder first: a checkout's ``ladderlab/`` there replaced the installed one."""
    (tmp_path / "ladderlab").mkdir()
    (tmp_path / "ladderlab" / "__init__.py").write_text("raise ImportError('the current folder shadowed ladderlab')\n")
    python = str(installed / "python")
    command = restart_command([str(installed / "ladderlab"), "--version"], [python, str(installed / "ladderlab"),
                              "--version"], python, first_path=str(installed))
    finished = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "ladderlab" in finished.stdout
