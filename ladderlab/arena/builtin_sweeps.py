"""The arena sweeps shipped with ladderlab (``ladderlab arena sweep NAME``): TOML files beside this module, read
without the sweep's machinery so that the command line can name them cheaply."""

from __future__ import annotations

from pathlib import Path

BUILT_IN = Path(__file__).parent / "scenarios"


def builtin_sweeps() -> dict[str, Path]:
    """The built-in sweeps by name (their files' stems)."""
    return {path.stem: path for path in sorted(BUILT_IN.glob("*.toml"))}
