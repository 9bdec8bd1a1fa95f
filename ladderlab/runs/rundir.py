"""Trust in a run directory: cell checksums, quarantine, a lock, and plugin fingerprints.

- Every completed cell file (a duel cell in ``cells/``, a competition in
  ``competitions/``) has its SHA-256 in the manifest (``completed``), recorded
  by the run after the file was written atomically. A file that is unreadable, does not
  match its checksum, or has no checksum (the run stopped between writing it and
  recording it) is never reused: ``run`` moves it into ``quarantine/`` and computes the
  cell again; ``report`` names it and reports the rest.
- ``lock`` holds an exclusive ``flock`` for as long as a run writes into the directory,
  and says who holds it (pid, host, start time). The kernel drops the lock when its
  process dies, so the lock of a killed run is recognised as stale and taken over.
- Each cell records a fingerprint of its plugins (task, mechanism, and the attack or
  each team's policy): the plugin's ``version`` and a hash of the source files that
  define it (the class and its plugin ancestors, and the local modules each of their
  files imports, :mod:`ladderlab.utils.sources`). A finished cell whose plugin changed since
  is stale: resume refuses it (naming it) unless asked to compute it again.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import platform
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ladderlab.runs.cell_kinds import kinds
from ladderlab.utils.atomic import write_atomically
from ladderlab.utils.checksums import sha256_file

log = logging.getLogger("ladderlab.run")

LOCK_NAME = "lock"
QUARANTINE = "quarantine"


def cell_folders() -> tuple[str, ...]:
    """Where cell files live: the folder of each kind of cell (:mod:`ladderlab.runs.cell_kinds`; duels'
    ``cells``, ``competitions``, ``extrapolations``)."""
    return tuple(dict.fromkeys(kind.directory for kind in kinds().values()))


class RunDirectoryError(ValueError):
    """The run directory holds another scenario's results, or cannot be used."""


class RunLockedError(ValueError):
    """Another live process is writing into this run directory (a usage error: choose
    another directory or wait)."""


class StaleCellsError(ValueError):
    """Finished cells were computed by plugins whose code or version has changed since."""


# --- the lock -----------------------------------------------------------------------------

@dataclass
class RunLock:
    """An exclusive lock on a run directory (use as a context manager)."""

    directory: Path
    command: str = "ladderlab run"
    _fd: int | None = None

    def __post_init__(self) -> None:
        self.directory = Path(self.directory)

    @property
    def path(self) -> Path:
        return self.directory / LOCK_NAME

    def acquire(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                os.close(fd)
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise RunLockedError(
                    f"{self.directory} is in use by another run ({describe_holder(read_holder(self.path))}); "
                    "wait for it to finish, or choose another --out"
                ) from None
            if os.path.exists(self.path) and os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                break
            os.close(fd)  # the file was replaced while we waited: lock the new one
        previous = read_holder(self.path)
        if previous:
            log.warning(
                "ladderlab: taking over the stale lock of %s: that run is gone (killed or crashed); "
                "its finished cells are verified before they are reused", describe_holder(previous),
            )
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": self.command}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)  # an empty lock file means: left cleanly
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_holder(path: Path) -> dict[str, Any] | None:
    """Who wrote the lock file (None if it is empty or unreadable)."""
    try:
        text = path.read_text()
        return json.loads(text) if text.strip() else None
    except (OSError, json.JSONDecodeError):
        return None


def describe_holder(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "holder unknown"
    return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
            f"started {holder.get('started', '?')} by {holder.get('command', '?')!r}")


# --- verifying finished cells --------------------------------------------------------------

def machine() -> dict[str, Any]:
    """The machine a run starts on, for its reports: processor, cores, memory, system, Python."""
    processor = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            processor = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                             processor)
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = None
    return {"processor": processor, "cpus": os.cpu_count(), "memory_gib": None if memory is None else round(memory, 1),
            "system": platform.platform(terse=True), "python": platform.python_version()}


def read_manifest(directory: Path) -> dict[str, Any]:
    """The run directory's manifest; a clear error if it is not valid JSON."""
    path = directory / "manifest.json"
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise RunDirectoryError(f"{path}: not valid JSON ({error}); the directory cannot be resumed") from None


def completed_cells(directory: Path) -> dict[str, dict[str, Any]]:
    """The manifest's records of finished cells, by key (none before the manifest exists)."""
    return read_manifest(directory).get("completed", {}) if (directory / "manifest.json").exists() else {}


def cell_files(directory: Path, folder: str) -> list[Path]:
    """The cell files in ``directory/folder`` (``cells`` for duels, ``competitions``), sorted."""
    return sorted((directory / folder).glob("*.parquet"))


def damage(path: Path, record: dict[str, Any] | None, recorder: str = "the manifest") -> str | None:
    """Why the cell file at ``path`` cannot be trusted, or None if it matches its checksum (``record``,
    in ``recorder``)."""
    if record is None:
        return f"no checksum in {recorder} (the run stopped before recording it)"
    try:
        size = path.stat().st_size
        actual = sha256_file(path)
    except OSError as error:
        return f"unreadable: {error.strerror or error}"
    if size != record.get("bytes"):
        return f"{size} bytes, {recorder} recorded {record.get('bytes')} (truncated or overwritten)"
    if actual != record.get("sha256"):
        return f"checksum {actual[:12]}… does not match {recorder}'s {str(record.get('sha256'))[:12]}…"
    return None


def damaged_cells(directory: Path, completed: dict[str, dict[str, Any]],
                  folders: tuple[str, ...] | None = None) -> dict[Path, str]:
    """Every cell file in ``folders`` (default: every kind's) that cannot be trusted, with the reason."""
    found = {}
    for folder in cell_folders() if folders is None else folders:
        for path in cell_files(directory, folder):
            reason = damage(path, completed.get(path.stem))
            if reason:
                found[path] = reason
    return found


def verified_files(directory: Path, folder: str) -> tuple[list[Path], dict[Path, str]]:
    """The cell files of ``directory/folder`` that match their checksums, and the others with the reason."""
    damaged = damaged_cells(directory, completed_cells(directory), (folder,))
    return [path for path in cell_files(directory, folder) if path not in damaged], damaged


def quarantine(directory: Path, path: Path, reason: str, name: str | None = None) -> Path:
    """Move the cell file at ``path`` aside into ``quarantine/`` (with a note of why), named after it
    (or ``name``) and the time; return its new path."""
    folder = directory / QUARANTINE
    folder.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = name or path.stem
    target = folder / f"{name}.{stamp}.parquet"
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{name}.{stamp}-{number}.parquet"
    os.replace(path, target)
    write_atomically(target.with_suffix(".reason.txt"), reason + "\n")
    return target


def remove_temporary_files(directory: Path) -> None:
    """Delete half-written files left by a killed run (only ever called under the lock)."""
    for folder in (directory, *(directory / name for name in cell_folders())):
        for path in folder.glob(".*.tmp"):
            path.unlink(missing_ok=True)
