"""Built-in scenario files (installed as ``ladderlab.scenarios``)."""

from importlib import resources
from pathlib import Path


def builtin_scenarios() -> dict[str, Path]:
    """Scenario files shipped in ``ladderlab.scenarios``, by name."""
    folder = resources.files(__name__)
    return {Path(entry.name).stem: Path(str(entry)) for entry in folder.iterdir() if entry.name.endswith(".toml")}
