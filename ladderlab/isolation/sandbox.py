"""The operating-system boundary around attack code: a sandbox server, and its attack processes.

An isolated attack runs in a process that Linux keeps away from the organiser:

- **separate user** (ladderlab runs as root, as in CI and containers): Debian's
  ``bubblewrap`` starts a server in new PID, mount, IPC, UTS, network and cgroup
  namespaces, with a read-only view of the Python installation, ladderlab's packages and
  the attack's own source files, and nothing else (no run directory, manifest, scenario,
  secret-seed file, home or shared ``/tmp``); the server keeps only the capabilities to
  change its user and to kill its attacks' processes. Each attack process drops to a user
  and group of its own (a different uid per process, no supplementary groups, no
  capabilities) before it reads anything.
- **user namespace** (an ordinary user): the same, in a new user namespace as well; the
  attack keeps the organiser's uid outside the sandbox but has no capabilities, cannot see
  the organiser's processes or files, and every process of the sandbox is non-dumpable.

In both modes the organiser's process makes itself non-dumpable
(``prctl(PR_SET_DUMPABLE, 0)``) before it starts a sandbox, so that ``/proc/<pid>/mem``
and ``ptrace`` fail even for a process of the same user outside the sandbox. Without
``bwrap``, or where it cannot create its namespaces, :func:`require` refuses and says what
is missing: isolation never runs with less than it promises.

The server is the sandbox's PID 1 (no process of the sandbox can signal it) and a fork
server: it imports NumPy and the attack's side of the protocol (:mod:`ladderlab.isolation.attack_process`)
at start, and a built-in attack with every module it imports before it forks the first process for that
attack (once: its processes then share those pages and start warm); it holds one BLAS thread,
never holds a label, and forks an attack process when the organiser asks. An attack
process gets one socket, the end of a socket pair whose other end the organiser keeps
(:mod:`ladderlab.isolation.attack_process` speaks the leaderboard protocol over it with the organiser's
:mod:`ladderlab.isolation.protocol`); every other
descriptor is closed, and its standard streams are ``/dev/null``. The organiser keeps an
attack process that finished a duel cleanly for the next duel of code from the same
source, after the server killed whatever it started; it has the server end one that failed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import hashlib
import importlib
import inspect
import itertools
import os
import pkgutil
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ladderlab.isolation import layout
from ladderlab.isolation.attack_process import attack_process
from ladderlab.isolation.colocation import unpinned
from ladderlab.utils import source_tree
from ladderlab.utils.determinism import single_threaded
from ladderlab.utils.sources import imported_names

SandboxMode = Literal["separate-user", "user-namespace"]

SANDBOX_UID_BASE = 0x7E000000
"""Attack processes of the separate-user mode run as uid (and gid) ``SANDBOX_UID_BASE + k``,
a new k < ``SANDBOX_UIDS`` for each (from a random start per server): users no account on
the machine has (above systemd's ranges)."""
SANDBOX_UIDS = 1 << 16

PR_SET_DUMPABLE = 4
READY = b"ready"


class IsolationUnavailable(ValueError):
    """This machine cannot isolate attacks as asked; the message says what is missing and how to get it."""


class SandboxError(RuntimeError):
    """The sandbox server failed or died; the message says how."""


# --- which mode, or a refusal ------------------------------------------------------------

def choose_mode(platform: str, euid: int, bwrap: str | None, probe: Callable[[SandboxMode], str | None]) -> SandboxMode:
    """The mode for these facts: root drops attacks to users of their own, an ordinary user
    gets a user namespace; raise :class:`IsolationUnavailable` naming what is missing.

    ``probe(mode)`` starts ``bwrap`` in that mode once and returns its error, or None.
    """
    if platform != "linux":
        raise IsolationUnavailable(
            f"isolation 'process' needs Linux (namespaces, bubblewrap); this is {platform!r}: "
            "run isolated duels on a Linux machine, or use --isolation none for attacks you trust"
        )
    if bwrap is None:
        raise IsolationUnavailable(
            "isolation 'process' needs bubblewrap, and 'bwrap' is not on PATH: install it "
            "(Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), "
            "or use --isolation none for attacks you trust"
        )
    mode: SandboxMode = "separate-user" if euid == 0 else "user-namespace"
    failure = probe(mode)
    if failure is None:
        return mode
    if mode == "separate-user":
        raise IsolationUnavailable(
            f"isolation 'process': bubblewrap cannot create its namespaces here ({failure}); in a container, "
            "allow mount and PID namespaces (e.g. docker run --cap-add SYS_ADMIN --security-opt "
            "seccomp=unconfined), or run on the host"
        )
    raise IsolationUnavailable(
        f"isolation 'process': bubblewrap cannot create a user namespace for user {euid} ({failure}); "
        "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
        "and later also kernel.apparmor_restrict_unprivileged_userns=0), or run ladderlab as root, which "
        "drops every attack to a user of its own"
    )


def _probe(mode: SandboxMode) -> str | None:
    """Start ``bwrap`` in ``mode`` around ``true``; its error, or None if it worked."""
    command = [_bwrap(), *_namespace_options(mode), "--ro-bind", "/", "/", "--proc", "/proc", "true"]
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if finished.returncode == 0:
        return None
    return (finished.stderr.strip().splitlines() or [f"exit code {finished.returncode}"])[-1]


def _bwrap() -> str:
    return shutil.which("bwrap") or "bwrap"


@cache
def require() -> SandboxMode:
    """The sandbox mode of this machine (checked once per process), or
    :class:`IsolationUnavailable`; the calling process becomes non-dumpable."""
    mode = choose_mode(sys.platform, _effective_user(), shutil.which("bwrap"), _probe)
    make_non_dumpable()
    return mode


def _effective_user() -> int:
    return os.geteuid()


def make_non_dumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: no core dumps, and ``/proc/<pid>/mem``, ``environ``
    and ``ptrace`` of this process need ``CAP_SYS_PTRACE``, even for its own user."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_DUMPABLE, 0) failed: {os.strerror(error)}")


# --- what the sandbox shows ---------------------------------------------------------------

@dataclass(frozen=True)
class SourceFile:
    """A file shown read-only in the sandbox at its own path: a snapshot of its contents,
    read once by the organiser before any of the attack's code ran, and shown exactly so
    (readable by the sandbox's users whatever its permissions); ``sha256`` is the snapshot's."""

    path: Path
    sha256: str
    content: bytes = field(default=b"", compare=False, repr=False)

    @classmethod
    def of(cls, path: Path) -> SourceFile:
        path = Path(path).resolve()
        content = path.read_bytes()
        return cls(path, hashlib.sha256(content).hexdigest(), content)


@dataclass(frozen=True)
class View:
    """The attack-specific part of a sandbox's file system: source files (a plugin file and
    its local modules) and package folders (an importable plugin's top-level package)."""

    files: tuple[SourceFile, ...] = ()
    folders: tuple[Path, ...] = ()


def _system_folders() -> list[Path]:
    """The Python installation (base and virtual environment) and ladderlab's packages."""
    folders = [Path(sys.base_prefix), Path(sys.prefix), Path(sys.exec_prefix)]
    folders += [Path(location) for locations in source_tree.package_folders().values() for location in locations]
    found: list[Path] = []
    for folder in (folder.resolve() for folder in folders):
        if folder not in found and not any(folder.is_relative_to(other) for other in found):
            found = [other for other in found if not other.is_relative_to(folder)] + [folder]
    return found


def _namespace_options(mode: SandboxMode) -> list[str]:
    options = ["--die-with-parent", "--new-session", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-uts",
               "--unshare-net", "--unshare-cgroup-try"]
    if mode == "separate-user":
        return [*options, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add",
                "CAP_KILL"]
    return [*options, "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]


def _parents(path: Path, made: set[Path]) -> list[str]:
    """Options that create the folders above ``path`` readable by everyone (bwrap's own are 0700)."""
    options = []
    for parent in reversed(path.parents):
        if parent != Path("/") and parent not in made:
            made.add(parent)
            options += ["--perms", "0755", "--dir", str(parent)]
    return options


def sandbox_command(mode: SandboxMode, view: View, control_fd: int, file_fds: list[int],
                    same_layout: bool = False) -> list[str]:
    """The ``bwrap`` command line of a sandbox server (``file_fds``: one open descriptor per
    file of ``view``, in order; ``same_layout``: start attack processes in the organiser's
    address layout, :mod:`ladderlab.isolation.layout`). Nothing secret is on it: folders, the mode, a
    descriptor number."""
    options = [_bwrap(), *_namespace_options(mode), "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs",
               "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm", "--ro-bind", "/usr", "/usr"]
    made: set[Path] = set()
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            options += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            options += ["--ro-bind", str(path), str(path)]
    options += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for folder in (*_system_folders(), *view.folders):
        if not folder.is_relative_to("/usr"):
            options += [*_parents(folder, made), "--ro-bind", str(folder), str(folder)]
    for source, fd in zip(view.files, file_fds):
        options += [*_parents(source.path, made), "--perms", "0444", "--ro-bind-data", str(fd), str(source.path)]
    options += ["--chdir", "/tmp", "--clearenv"]
    for name, value in {**_numeric_settings(), **_ENVIRONMENT}.items():
        options += ["--setenv", name, value]
    bootstrap = (f"{_imports_as_here()}; from ladderlab.isolation.sandbox import serve; "
                 f"serve({control_fd}, {mode!r}, {same_layout!r})")
    return [*options, sys.executable, "-I", "-B", "-c", bootstrap]


def _imports_as_here() -> str:
    """Statements that make a new interpreter import what this one does: its ``sys.path``, and ladderlab's
    packages from the folders this one imported them from (a checkout's ``ladderlab/`` on the path, which
    has no plugin packages, would otherwise shadow the installed ladderlab: :mod:`ladderlab.utils.source_tree`)."""
    paths = [entry for entry in (os.path.abspath(entry) for entry in sys.path if entry) if os.path.isdir(entry)]
    return f"import sys; sys.path[:0] = {paths!r}; {source_tree.import_prologue(source_tree.package_folders())}"


_ENVIRONMENT = {
    "PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
    # one thread everywhere, as every cell runs (ladderlab.utils.determinism), and no threads to fork
    **{name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")},
}

NUMERIC_SETTINGS = ("OPENBLAS_", "MKL_", "NPY_", "GOTO_")
"""Prefixes of the environment variables that choose numerical kernels (OpenBLAS's ``OPENBLAS_CORETYPE``
and cache sizes, MKL's ``MKL_CBWR``, NumPy's ``NPY_DISABLE_CPU_FEATURES``): the attack process gets the
organiser's, so that its BLAS computes the same bits. With a cleared environment OpenBLAS chose the
machine's own core type (SkylakeX) where the organiser had been told Haswell, and an isolated ridge
regression's predictions differed in the last bit from the same attack's in process."""


def _numeric_settings() -> dict[str, str]:
    """The organiser's :data:`NUMERIC_SETTINGS` (thread counts are :data:`_ENVIRONMENT`'s, which wins)."""
    return {name: value for name, value in os.environ.items() if name.startswith(NUMERIC_SETTINGS)}


# --- the organiser's side -----------------------------------------------------------------

def _snapshot_descriptor(source: SourceFile) -> int:
    """A descriptor of an in-memory file holding ``source``'s snapshot, read from its start
    (``bwrap --ro-bind-data`` shows it): the sandbox sees the bytes the organiser hashed."""
    fd = os.memfd_create(f"ladderlab-source-{source.path.name}")
    os.write(fd, source.content)  # a single write: memfd writes are never short
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class Sandbox:
    """A running sandbox server for one :class:`View` (use :func:`sandbox_for`)."""

    def __init__(self, view: View):
        self.view = view
        self.mode = require()
        self.same_layout = self.mode == "separate-user" and layout.enabled() and layout.fixed()
        """Whether attack processes start anew in the organiser's address layout (see :func:`serve`)."""
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self.in_use = 0
        """Attack processes out of the server for a duel (started or taken, not yet kept or ended)."""
        control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fds = [_snapshot_descriptor(source) for source in view.files]
        self._errors = tempfile.TemporaryFile()
        try:
            command = sandbox_command(self.mode, view, server_end.fileno(), fds, self.same_layout)
            with unpinned():  # the server outlives the duel that started it
                self._process = subprocess.Popen(command, pass_fds=[server_end.fileno(), *fds],
                                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                 stderr=self._errors, env=_ENVIRONMENT)
        finally:
            server_end.close()
            for fd in fds:
                os.close(fd)
        self._control = control
        if self._receive() != READY:
            raise SandboxError(f"the sandbox server did not start: {self._failure()}")

    def _receive(self) -> bytes:
        try:
            return self._control.recv(1 << 16)
        except OSError:
            return b""

    def _failure(self) -> str:
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        self._errors.seek(0)
        lines = self._errors.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self._process.returncode}"

    def start_attack_process(self, preload: str = "") -> tuple[socket.socket, int]:
        """A new attack process: the organiser's end of its socket, and its pid in the sandbox.
        ``preload``: a built-in attack module (``boosting``) that the server imports, with
        every module it imports, before it forks (once; other names are ignored; not when
        attack processes start anew in the organiser's layout, which would import it again)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                socket.send_fds(self._control, [b"fork " + preload.encode()], [theirs.fileno()])
                answer = self._receive()
        except OSError:
            answer = b""
        finally:
            theirs.close()
        if not answer.isdigit():
            ours.close()
            raise SandboxError(f"the sandbox server is gone: {self._failure()}")
        with self._lock:
            self.in_use += 1
        return ours, int(answer)

    def end_attack_process(self, pid: int) -> int | None:
        """Kill the attack process ``pid`` and whatever it started; its wait status."""
        try:
            with self._lock:
                self.in_use -= 1
                self._control.send(b"end %d" % pid)
                answer = self._receive()
        except OSError:
            return None
        return int(answer) if answer.lstrip(b"-").isdigit() else None

    def tidy_attack_process(self, pid: int) -> None:
        """Kill whatever the attack process ``pid`` started, and keep it."""
        with contextlib.suppress(OSError), self._lock:
            self._control.send(b"tidy %d" % pid)
            self._receive()

    def take_idle(self) -> Any:
        """An attack process kept for another duel (as :meth:`keep_idle` got it), or None."""
        with self._lock:
            if not self._idle:
                return None
            self.in_use += 1
            return self._idle.pop()

    def keep_idle(self, process: Any) -> bool:
        """Keep an attack process that finished a duel cleanly for the next one; False if
        enough are kept already (then end it)."""
        with self._lock:
            if len(self._idle) >= MAX_IDLE:
                return False
            self._idle.append(process)
            self.in_use -= 1
            return True

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        self._control.close()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._errors.close()


MAX_IDLE = 8
"""Attack processes a sandbox keeps for later duels (more run at once in a competition)."""
_sandboxes: dict[tuple[int, View], Sandbox] = {}
_sandboxes_lock = threading.Lock()
MAX_SANDBOXES = 4
"""Servers kept per process (one per distinct attack view); beyond this the oldest whose attack
processes are all back (kept or ended) is closed: one whose attacks still play is never closed."""


def sandbox_for(view: View) -> Sandbox:
    """This process's running sandbox server for ``view``, started on first use."""
    key = (os.getpid(), view)
    with _sandboxes_lock:
        sandbox = _sandboxes.get(key)
        if sandbox is not None and sandbox.alive:
            return sandbox
        for other in [other for other in _sandboxes if other[0] != os.getpid()]:
            del _sandboxes[other]  # inherited through a fork: the parent's servers
        idle = [other for other, running in _sandboxes.items() if running.in_use == 0]
        if len(_sandboxes) >= MAX_SANDBOXES and idle:  # never one whose attacks still play (a competition's)
            _sandboxes.pop(idle[0]).close()
        sandbox = _sandboxes[key] = Sandbox(view)
        return sandbox


@atexit.register
def close_sandboxes() -> None:
    """Stop this process's sandbox servers."""
    with _sandboxes_lock:
        for key in [key for key in _sandboxes if key[0] == os.getpid()]:
            _sandboxes.pop(key).close()


# --- the server, inside the sandbox -------------------------------------------------------

def serve(control_fd: int, mode: SandboxMode, same_layout: bool = False) -> None:
    """The sandbox server's main loop: fork an attack process per request, end it on request.
    With ``same_layout`` (only as root: each attack process has a user of its own, so no other
    process can trace it while it starts) every attack process starts a new interpreter in the
    organiser's address layout (:mod:`ladderlab.isolation.layout`) once it has dropped its privileges,
    rather than playing in the server's forked image."""
    os.closerange(3, control_fd)
    os.closerange(control_fd + 1, 1 << 16)
    control = socket.socket(fileno=control_fd)
    try:
        make_non_dumpable()
    except BaseException as error:
        sys.stderr.write(f"{type(error).__name__}: {error}\n")
        raise SystemExit(1) from None
    gc.freeze()  # forked children then share the preloaded objects' pages instead of copying them
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    control.send(READY)
    with single_threaded():  # for every attack process, as for every cell (ladderlab.utils.determinism)
        _serve_requests(control, mode, same_layout)


def _serve_requests(control: socket.socket, mode: SandboxMode, same_layout: bool) -> None:
    first = secrets.randbelow(SANDBOX_UIDS)  # servers rarely share a uid (they never share a PID namespace)
    users = ((first + k) % SANDBOX_UIDS for k in itertools.count())
    owners: dict[int, int] = {}
    exited: dict[int, int] = {}
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 1)
        except OSError:
            message, fds = b"", []
        if not message:
            break
        if message.startswith(b"fork") and fds:
            if not same_layout:  # a new interpreter would not inherit the head start
                _preload(message[5:].decode(errors="replace"))
            user = SANDBOX_UID_BASE + next(users) if mode == "separate-user" else None
            pid = os.fork()
            if pid == 0:
                _become_attack_process(fds[0], control, user, same_layout)
            os.close(fds[0])
            owners[pid] = user if user is not None else pid
            control.send(str(pid).encode())
        elif message.startswith(b"end "):
            pid = int(message.split()[1])
            owner = owners.pop(pid, None)
            status = _end(pid, owner, mode, exited) if owner is not None else -1
            control.send(str(status).encode())
        elif message.startswith(b"tidy "):
            pid = int(message.split()[1])
            if pid in owners:
                _kill_started(pid, owners[pid], mode, spare=True)
            control.send(b"ok")
        else:
            for fd in fds:
                os.close(fd)
            control.send(b"?")
        _reap(exited, owners)
    for pid, owner in owners.items():  # the organiser is gone: end the attack processes it kept
        _end(pid, owner, mode, exited)


def _preload(name: str) -> None:
    """Prepare, once, what the attack processes of the built-in attack module ``name`` need
    before the next fork: the module, every module it imports (also those it imports when
    played, such as scikit-learn's estimators) and its attacks' fingerprints. Only
    ladderlab's own modules are imported here (the server never runs attack code of others)."""
    if name in _preloaded or name not in _builtin_attack_modules():
        return
    _preloaded.add(name)
    from ladderlab.attack import Attack
    from ladderlab.plugin import fingerprint

    try:
        module = importlib.import_module(f"ladderlab.attacks.{name}")
        for imported in imported_names(Path(inspect.getfile(module)), "ladderlab.attacks"):
            with contextlib.suppress(ImportError):
                importlib.import_module(imported)
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == module.__name__ and issubclass(cls, Attack):
                fingerprint(cls)
    except Exception:  # only a head start: the attack process meets the same error and reports it
        return
    gc.freeze()  # forked children then share the preloaded objects' pages instead of copying them


_preloaded: set[str] = set()


@cache
def _builtin_attack_modules() -> frozenset[str]:
    import ladderlab.attacks

    return frozenset(info.name for info in pkgutil.iter_modules(ladderlab.attacks.__path__))


def _become_attack_process(fd: int, control: socket.socket, user: int | None, same_layout: bool) -> None:
    """In the forked child: keep only the attack's socket, drop privileges, play the attack
    (with ``same_layout``, in a new interpreter in the organiser's address layout)."""
    code = 1
    try:
        control.close()
        devnull = os.open(os.devnull, os.O_RDWR)
        for standard in (0, 1, 2):
            os.dup2(devnull, standard)
        keep = sorted({0, 1, 2, fd})
        for low, high in zip(keep, [*keep[1:], 1 << 16]):
            os.closerange(low + 1, high)
        os.setsid()
        if user is not None:
            os.setgroups([])
            os.setresgid(user, user, user)
            os.setresuid(user, user, user)
        make_non_dumpable()
        if same_layout and layout.fix_for_new_programs():
            os.set_inheritable(fd, True)
            os.execv(sys.executable, [sys.executable, "-I", "-B", "-c", layout.attack_bootstrap(_imports_as_here(), fd)])
        attack_process(socket.socket(fileno=fd))
        code = 0
    finally:
        os._exit(code)


def restarted_attack_process(fd: int) -> None:
    """The body of an attack process that started anew in the organiser's address layout
    (:func:`serve` with ``same_layout``): non-dumpable first, then one BLAS thread and joblib's
    sequential backend, as in the server's forked children, and the protocol on ``fd``."""
    make_non_dumpable()
    with single_threaded():
        attack_process(socket.socket(fileno=fd))


def _end(pid: int, owner: int, mode: SandboxMode, exited: dict[int, int]) -> int:
    """Kill an attack process and everything it started, reap it; its wait status."""
    _kill_started(pid, owner, mode, spare=False)
    if pid in exited:
        return exited.pop(pid)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return -1


def _kill_started(pid: int, owner: int, mode: SandboxMode, spare: bool) -> None:
    """Kill every process the attack process ``pid`` started (and ``pid`` itself unless
    ``spare``): as root, every process of its user; otherwise every process of its session."""
    for process in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError, StopIteration):
            if not process.name.isdigit() or (spare and int(process.name) == pid):
                continue
            if mode == "separate-user":
                status = (process / "status").read_text().splitlines()
                ours = int(next(line for line in status if line.startswith("Uid:")).split()[1]) == owner
            else:
                ours = int((process / "stat").read_text().rsplit(")", 1)[1].split()[3]) == owner
            if ours:
                os.kill(int(process.name), signal.SIGKILL)


def _reap(exited: dict[int, int], owners: dict[int, int]) -> None:
    """As the sandbox's PID 1, reap the processes that attacks left behind; keep the status of
    an attack process that ended before the organiser asked to end it."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in owners:
            exited[pid] = status
