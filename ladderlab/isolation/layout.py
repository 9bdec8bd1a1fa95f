"""One address layout for the organiser and its attack processes.

On this project's machines (AMD processors in a nested, para-virtualised guest) the work done
between the messages of an isolated duel ran about twice as slowly as the same work in one
process. Most of that went away when the two processes mapped the same code at the same
addresses: two Python processes that share their layout take turns at nearly the speed of
forked twins (docs/isolation.md, "One address layout"). The likely cause is that the
processor's branch predictors and micro-op cache are indexed by virtual address, so with
address-space layout randomisation each process finds the other's training after a switch.

So the command line, when it runs with ``--isolation process`` as root, restarts itself once
without layout randomisation (:func:`restart_with_fixed_layout`, Linux's ``ADDR_NO_RANDOMIZE``
personality; before its imports where it can, :mod:`ladderlab.cli.entry`), importing NumPy first;
and a sandbox server started by such an organiser starts each attack process as a new
interpreter with the same personality and the same first import (:func:`attack_bootstrap`;
the server then preloads nothing for it), so that libpython and NumPy's compiled code land at the
organiser's addresses. ``LADDERLAB_SAME_LAYOUT=0`` in the environment turns this off.

What it gives up: the organiser's own addresses are predictable (the same in every run), and
the attack's code runs at the organiser's code addresses, which shares branch-predictor
state between them. Both matter only to an attack on the processor's speculation, a timing
side channel, which the threat model leaves out (docs/isolation.md, "Threat model"); the
switch restores randomisation for organisers who want it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence

SWITCH = "LADDERLAB_SAME_LAYOUT"
"""The environment variable that turns the shared layout off when it is ``0``."""
ADDR_NO_RANDOMIZE = 0x0040000
"""Linux's personality flag that turns off address-space layout randomisation for new programs."""
_QUERY = 0xFFFFFFFF
FIRST_IMPORT = "import numpy"
"""The first statement of every interpreter that should share the layout: NumPy's libraries are
mapped where the same earlier mappings leave room, so both sides map them first."""


def enabled() -> bool:
    """Whether the shared layout is on (``LADDERLAB_SAME_LAYOUT`` is not ``0``)."""
    return os.environ.get(SWITCH, "1") != "0" and sys.platform == "linux"


def _personality(persona: int) -> int:
    return int(ctypes.CDLL(None, use_errno=True).personality(ctypes.c_ulong(persona)))


def fixed() -> bool:
    """Whether this process was started without layout randomisation."""
    return sys.platform == "linux" and _personality(_QUERY) & ADDR_NO_RANDOMIZE != 0


def fix_for_new_programs() -> bool:
    """Set ``ADDR_NO_RANDOMIZE`` for the programs this process starts from now on; False where
    the kernel refuses."""
    current = _personality(_QUERY)
    return current != -1 and _personality(current | ADDR_NO_RANDOMIZE) != -1 and fixed()


def restart_command(argv: Sequence[str], orig_argv: Sequence[str], executable: str,
                    first_path: str | None = None) -> list[str]:
    """The command that runs ``ladderlab.cli.commands`` with arguments ``argv[1:]`` in a new interpreter
    with the options of ``orig_argv`` (the interpreter's command line), NumPy imported first.

    ``first_path`` is the first entry of this interpreter's ``sys.path`` (the script's folder, or the
    current folder under ``-m``; None under ``-P`` or ``-I``, which put none there): it replaces the
    current folder that ``-c`` puts first, so that the new interpreter imports what this one does. A
    ``ladderlab`` command run in a source checkout would otherwise import the checkout's ``ladderlab/``
    instead of the installed package."""
    options = list(orig_argv[1 : len(orig_argv) - len(argv)])
    if options[-1:] == ["-m"]:
        options.pop()
    search = "" if first_path is None else f"sys.path[0] = {first_path!r}; "
    code = (f"import sys; {search}{FIRST_IMPORT}; sys.argv = {list(argv)!r}; "
            "from ladderlab.cli.commands import main; sys.exit(main())")
    return [executable, *options, "-c", code]


def isolating(arguments: Sequence[str]) -> bool:
    """Whether command-line ``arguments`` say ``--isolation process`` (as two words or one)."""
    return "--isolation=process" in arguments or any(
        argument == "--isolation" and value == "process" for argument, value in zip(arguments, arguments[1:]))


def restart_with_fixed_layout() -> None:
    """Replace this process (a ``ladderlab`` command) by the same command without layout
    randomisation, once; do nothing where it is off, already fixed or refused, and unless it
    runs as root: only then do attack processes start anew in its layout (the separate-user
    mode of :mod:`ladderlab.isolation.sandbox`)."""
    if not enabled() or os.geteuid() != 0 or fixed() or not fix_for_new_programs():
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    first_path = None if sys.flags.safe_path or not sys.path else sys.path[0]
    os.execv(sys.executable, restart_command(sys.argv, sys.orig_argv, sys.executable, first_path))


def attack_bootstrap(imports: str, fd: int) -> str:
    """The program of an attack process started anew in the organiser's layout: NumPy first, then
    ``imports`` (statements that make it import what the sandbox server does) and
    :func:`ladderlab.isolation.sandbox.restarted_attack_process` on descriptor ``fd``."""
    return (f"{FIRST_IMPORT}; {imports}; "
            f"from ladderlab.isolation.sandbox import restarted_attack_process; restarted_attack_process({fd})")
