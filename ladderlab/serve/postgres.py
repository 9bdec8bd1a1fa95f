"""A throwaway PostgreSQL cluster in a temporary folder, on a Unix socket (tests and the benchmark).

Debian's server binaries (``/usr/lib/postgresql/<version>/bin``) run ``initdb`` and
``pg_ctl``; PostgreSQL refuses to run as root, so as root the cluster runs as the
``postgres`` user (``runuser``), in a folder it owns. Nothing listens on TCP. A cluster
started with ``reaped=True`` stops when every process that :meth:`~TemporaryPostgres.hold` s it
has ended, even by SIGKILL (:mod:`ladderlab.serve.reaper`).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

REAPER_SOCKET = "reaper.sock"
"""The Unix socket, in the cluster's folder, on which its reaper counts the holders."""


def server_binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (the newest Debian version, else the PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(Path(path).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def unavailable() -> str | None:
    """Why no cluster can be started here, or None."""
    if server_binaries() is None:
        return "PostgreSQL's server is not installed (apt-get install postgresql)"
    if os.geteuid() == 0 and (shutil.which("runuser") is None or _uid("postgres") is None):
        return "running as root needs the 'postgres' user and runuser to start PostgreSQL"
    return None


def _uid(user: str) -> int | None:
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


class TemporaryPostgres:
    """``with TemporaryPostgres() as cluster: url = cluster.database("name")``.

    ``folder``: a cluster another process started there (its :meth:`stop` ends it; the
    default is a new folder for a new cluster). ``durable=False`` turns off the disk
    flushes (``fsync``, ``synchronous_commit``, full-page writes): for tests, whose
    cluster never outlives a crash of the machine; the benchmark keeps them.
    """

    def __init__(self, folder: str | Path | None = None, durable: bool = True) -> None:
        reason = unavailable()
        if reason:
            raise RuntimeError(reason)
        self.binaries = server_binaries()
        self.folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="ladderlab-postgres-"))
        self.durable = durable
        self._as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self._hold: socket.socket | None = None

    def _run(self, *command: str) -> None:
        subprocess.run([*self._as_postgres, *command], check=True, capture_output=True, text=True, cwd="/")

    def start(self, reaped: bool = False) -> TemporaryPostgres:
        """Create and start the cluster; ``reaped``: with a reaper that stops it when the last
        process that holds it (:meth:`hold`; this one holds it from now on) has ended, however it ended."""
        if self._as_postgres:
            os.chown(self.folder, _uid("postgres"), -1)
        data = self.folder / "data"
        self._run(str(self.binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.resume()
        if reaped:
            reaper = subprocess.Popen([sys.executable, "-m", "ladderlab.serve.reaper", str(self.folder)],
                                      stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
            assert reaper.stdout is not None
            ready = reaper.stdout.read()
            reaper.stdout.close()
            reaper.wait()
            if ready.strip() != b"ready":
                self.stop()
                raise RuntimeError(f"the reaper of the PostgreSQL cluster in {self.folder} did not start")
            self.hold()  # from the start: a reaper that no holder ever reached would wait for ever
        return self

    def pause(self) -> None:
        """Stop the database server, keeping its data (a database restart, or one that is down)."""
        self._run(str(self.binaries / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start the database server on the cluster's data (after :meth:`pause`)."""
        options = f"-k {self.folder} -c listen_addresses='' -c max_connections=200"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(str(self.binaries / "pg_ctl"), "-D", str(self.folder / "data"), "-l", str(self.folder / "server.log"),
                  "-o", options, "-w", "start")

    def hold(self) -> None:
        """Keep the cluster running while this process lives (a reaped cluster: :meth:`start`)."""
        if self._hold is None:
            self._hold = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._hold.connect(str(self.folder / REAPER_SOCKET))

    @property
    def postmaster_pid(self) -> int | None:
        """The running postmaster's process id (None: not running)."""
        try:
            return int((self.folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def database(self, name: str) -> str:
        """A new, empty database; its SQLAlchemy URL."""
        import psycopg

        with psycopg.connect(host=str(self.folder), user="postgres", dbname="postgres", autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://postgres@/{name}?host={self.folder}"

    def stop(self) -> None:
        try:
            if self.postmaster_pid is not None:  # not paused
                self._run(str(self.binaries / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "-w",
                          "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            if self._hold is not None:  # after the stop: the reaper finds the cluster gone and ends
                self._hold.close()
                self._hold = None

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
