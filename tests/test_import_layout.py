"""The core's areas depend one way (issue 48): the import-linter contract in pyproject.toml holds,
and a contract broken on purpose is reported as broken, so the check can fail."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lint_imports(config: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's own command (``lint-imports --config CONFIG``), in a process of its own."""
    code = f"import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports({str(config)!r}, no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


def contract() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_the_areas_contract_is_kept():
    result = lint_imports(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_a_lower_area_importing_a_higher_one_breaks_the_contract(tmp_path):
    """The same contract with two layers swapped (the runs above the command line) is broken."""
    config = contract()
    layers = config["contracts"][0]["layers"]
    layers.insert(layers.index("cli"), layers.pop(layers.index("runs")))
    lines = [f'[importlinter]\nroot_package = {config["root_package"]}\n\n[importlinter:contract:areas]\n',
             'name = swapped\ntype = layers\ncontainers = ladderlab\n',
             "layers =\n" + "".join(f"    {layer}\n" for layer in layers)]
    (tmp_path / "swapped.ini").write_text("".join(lines))
    result = lint_imports(tmp_path / "swapped.ini")
    assert result.returncode != 0 and "BROKEN" in result.stdout


def test_every_area_of_the_core_is_a_layer_of_the_contract():
    """exhaustive: a new package or module in ladderlab/ that no layer names breaks the contract."""
    assert contract()["contracts"][0]["exhaustive"] is True


def test_the_sandbox_importing_the_organisers_side_breaks_the_isolation_contract(tmp_path):
    """Inside ladderlab.isolation the organiser's side (protocol) imports the sandbox, which imports only the
    attack's side and the wire: the same layers with protocol below the sandbox (the old circle's edge) break."""
    config = contract()
    isolation = next(c for c in config["contracts"] if c["containers"] == ["ladderlab.isolation"])
    assert isolation["exhaustive"] is True
    layers = isolation["layers"]
    layers.insert(layers.index("sandbox") + 1, layers.pop(layers.index("protocol")))
    lines = [f'[importlinter]\nroot_package = {config["root_package"]}\n\n[importlinter:contract:isolation]\n',
             'name = swapped\ntype = layers\ncontainers = ladderlab.isolation\n',
             "layers =\n" + "".join(f"    {layer}\n" for layer in layers)]
    (tmp_path / "swapped.ini").write_text("".join(lines))
    result = lint_imports(tmp_path / "swapped.ini")
    assert result.returncode != 0 and "ladderlab.isolation.protocol -> ladderlab.isolation.sandbox" in result.stdout
