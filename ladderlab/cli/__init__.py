"""The ``ladderlab`` command line: :func:`main` (in :mod:`ladderlab.cli.commands`), started by the
script through :mod:`ladderlab.cli.entry`."""

from typing import Any


def __getattr__(name: str) -> Any:
    """``main``, imported on first use, so that importing the entry point stays cheap."""
    if name == "main":
        from ladderlab.cli.commands import main

        return main
    raise AttributeError(f"module 'ladderlab.cli' has no attribute {name!r}")
