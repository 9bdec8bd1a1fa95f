"""The ``ladderlab`` command: its early restart, then :func:`ladderlab.cli.commands.main`.

A command that will isolate attacks as root restarts itself once without address-layout
randomisation (:mod:`ladderlab.isolation.layout`). Deciding that here, from the raw arguments and before
the command line's imports (NumPy, pandas, every subcommand's module), spares the restarted
process's work being done twice; :func:`ladderlab.cli.commands.main` still restarts after parsing when
the arguments say ``--isolation process`` in a form this check does not read (an abbreviated
option).
"""

from __future__ import annotations

import sys

from ladderlab.isolation import layout


def main() -> int:
    if layout.isolating(sys.argv[1:]):
        layout.restart_with_fixed_layout()
    from ladderlab.cli.commands import main as run_command

    return run_command()
