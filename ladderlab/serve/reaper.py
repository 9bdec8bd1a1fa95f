"""Stop a throwaway PostgreSQL cluster when every process that held it has ended, even by SIGKILL.

``pg_ctl start`` leaves the postmaster a child of init: a test run killed with SIGKILL never
runs its clean-up, and PostgreSQL has no option to follow its starter (``PR_SET_PDEATHSIG`` is
lost across the switch to the postgres user). The reaper, started with the cluster in a session
of its own (so a Ctrl-C to the terminal's process group does not reach it), listens on a Unix
socket in the cluster's folder; every process that uses the cluster keeps a connection to it
(:meth:`ladderlab.serve.postgres.TemporaryPostgres.hold`). The kernel closes a connection when
its process ends, however it ends: when the last one has closed, the reaper stops the cluster
(``pg_ctl stop -m immediate``) and removes its folder. It also ends, doing nothing, when the
cluster was stopped the ordinary way.

``python -m ladderlab.serve.reaper FOLDER`` forks the reaper off (so that its starter need not
wait for it) and exits; the reaper prints ``ready`` once it listens.
"""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import sys
from pathlib import Path

from ladderlab.serve.postgres import REAPER_SOCKET, TemporaryPostgres

POLL_SECONDS = 0.5


def reap(folder: Path) -> None:
    """Serve holders' connections until the last one closes (then stop the cluster in ``folder``)
    or the cluster is gone."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / REAPER_SOCKET))
    listener.listen(64)
    print("ready", flush=True)
    os.close(sys.stdout.fileno())  # the starter reads until this closes
    watched = selectors.DefaultSelector()
    watched.register(listener, selectors.EVENT_READ)
    holders = 0
    held = False
    while (folder / "data" / "postmaster.pid").exists():
        for key, _ in watched.select(POLL_SECONDS):
            if key.fileobj is listener:
                connection, _ = listener.accept()
                watched.register(connection, selectors.EVENT_READ)
                holders, held = holders + 1, True
            elif not key.fileobj.recv(64):  # type: ignore[union-attr]
                watched.unregister(key.fileobj)
                key.fileobj.close()  # type: ignore[union-attr]
                holders -= 1
        if held and holders == 0:
            if (folder / "data" / "postmaster.pid").exists():
                try:
                    TemporaryPostgres(folder).stop()
                except subprocess.CalledProcessError:  # stopped the ordinary way meanwhile
                    pass
            return


if __name__ == "__main__":
    if os.fork():  # the starter waits for this process; the reaper itself outlives it, a child of init
        os._exit(0)
    reap(Path(sys.argv[1]))
