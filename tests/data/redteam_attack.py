"""A hostile attack for the isolation tests: it tries every route to the holdout labels it can
think of, submits the labels if it finds them, and writes a canary file wherever it can.

``marks()`` names the routes that worked (each mark holds the index 0):

- routes through Python objects of its own process: the board's private attributes, read
  directly or through ``object.__getattribute__``, ``gc.get_referrers(data)``,
  ``gc.get_objects()``, the frames up the stack, the globals of ``sys.modules``;
- routes through the operating system, against every process it can see of its family
  (itself, its ancestors, its siblings): their command lines, environments, working directories and open
  descriptors (read for seeds, secret-seed files, scenarios and run manifests), their
  memory through ``/proc/<pid>/mem`` (scanned for a vector of 0/1 labels), and ``ptrace``;
- re-deriving the labels from every seed it found (in arguments, environments, files it
  could read: a scenario, a manifest, a secret-seed file), from small guessed seeds, and
  from its own random generator's state;
- ``ptrace`` of those processes (``os_routes="all"``; ``"read"`` only reads, for runs whose
  ancestors are the test runner itself);
- writes: a canary file into the working directories of its family, the folders of the
  scenarios, manifests and secret-seed files it found, ``/tmp``, ``$HOME`` and its own
  source folder. ``reached_*`` marks say
  what it could read or write at all, labels or not.
"""

import contextlib
import ctypes
import gc
import inspect
import json
import os
import re
import stat
import sys
import tomllib
from pathlib import Path

import ladderlab.scenarios
import numpy as np

from ladderlab.attack import Attack
from ladderlab.params import InstanceOf, Interval, Options
from ladderlab.seeding import stream

PTRACE_ATTACH, PTRACE_DETACH = 16, 17
MEMORY_LIMIT = 1 << 28
"""Bytes of another process's memory the scan reads at most."""
FILES_LIMIT = 4000
"""Files the search of the file system looks at, at most."""


def labels_from(obj, holdout_size):
    """The whole-holdout labels, if ``obj`` is (or directly leads to) a split, a leaderboard
    or a board; else None."""
    try:
        if type(obj).__name__ == "Split" and hasattr(obj, "y_holdout"):
            return np.asarray(obj.y_holdout, dtype=float)
        if type(obj).__name__ == "Board":
            obj = object.__getattribute__(obj, "_leaderboard")
        if type(obj).__name__ == "Leaderboard":
            labels = np.empty(holdout_size)
            labels[obj.public_rows] = obj.mechanism.labels_
            labels[obj.final_rows] = obj.final_labels
            return labels
    except Exception:
        return None
    return None


class RedTeam(Attack):
    """Looks for the labels everywhere it can reach."""

    id = "red-team"
    reference = "ladderlab isolation tests"
    _parameter_constraints = {"guess_seeds": [Interval(int, 0, None)], "canary": [InstanceOf(str)],
                              "os_routes": [Options({"none", "read", "all"})]}

    def __init__(self, guess_seeds=8, canary="", os_routes="none"):
        self.guess_seeds = guess_seeds
        self.canary = canary
        self.os_routes = os_routes

    def run(self, board, data, rng):
        self.found_ = {}
        self.board_, self.data_, self.n_ = board, data, board.holdout_size
        routes = [
            ("private_attributes", lambda: labels_from(board._leaderboard, self.n_)),
            ("object_getattribute", lambda: labels_from(object.__getattribute__(board, "_leaderboard"), self.n_)),
            ("gc_referrers", lambda: self._first(gc.get_referrers(data))),
            ("gc_objects", lambda: self._first(gc.get_objects())),
            ("frames", self._frames),
            ("sys_modules", self._modules),
        ]
        if self.os_routes != "none":
            routes += [("operating_system", self._operating_system)]
        routes += [("regenerated_from_public_seed", lambda: self._guess(range(self.guess_seeds), [None])),
                   ("seed_from_own_generator", lambda: self._seed_from_generator(rng))]
        for route, attempt in routes:
            try:
                labels = attempt()
            except Exception:
                labels = None
            if labels is not None:
                self.found_.setdefault(route, labels)
        return next((labels for labels in self.found_.values() if labels is not None), np.zeros(self.n_))

    def marks(self):
        return {route: [0] for route in sorted(getattr(self, "found_", {}))}

    # --- Python objects ---------------------------------------------------------------------

    def _first(self, objects):
        for obj in objects:
            labels = labels_from(obj, self.n_)
            if labels is not None:
                return labels
            if isinstance(obj, dict):
                for value in list(obj.values()):
                    labels = labels_from(value, self.n_)
                    if labels is not None:
                        return labels
        return None

    def _frames(self):
        frame = inspect.currentframe().f_back
        while frame is not None:
            labels = self._first(list(frame.f_locals.values()))
            if labels is not None:
                return labels
            frame = frame.f_back
        return None

    def _modules(self):
        for module in list(sys.modules.values()):
            labels = self._first(list(getattr(module, "__dict__", {}).values()))
            if labels is not None:
                return labels
        return None

    # --- the operating system ---------------------------------------------------------------

    def _operating_system(self):
        """Its family of processes, and every file they point to: labels from
        memory or from the seeds it finds."""
        texts = [" ".join(sys.argv), json.dumps(dict(os.environ))]
        homes = [Path.cwd(), Path("/tmp"), Path.home(), Path(__file__).parent]
        labels = None
        for pid in self._processes():
            proc = Path("/proc") / str(pid)
            other = pid != os.getpid()
            with contextlib.suppress(OSError):
                texts.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            with contextlib.suppress(OSError):
                texts.append((proc / "environ").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
                if other:
                    self._reached(f"environment of {pid}")
            with contextlib.suppress(OSError):
                homes.append(Path(os.readlink(proc / "cwd")))
                if other:
                    self._reached(f"working directory of {pid}")
            with contextlib.suppress(OSError):
                for fd in os.listdir(proc / "fd"):
                    with contextlib.suppress(OSError):
                        texts.append(os.readlink(proc / "fd" / fd))
                        if other:
                            self._reached(f"descriptors of {pid}")
                        if stat.S_ISREG(os.stat(proc / "fd" / fd).st_mode):
                            texts.append((proc / "fd" / fd).read_bytes()[: 1 << 16].decode(errors="replace"))
            if labels is None:
                labels = self._memory(pid)
            if other and self.os_routes == "all":
                self._ptrace(pid)
        paths = {Path(token) for text in texts for token in re.findall(r"/[\w./-]+", text)}
        folders = homes + [path if path.is_dir() else path.parent for path in paths if path.exists()]
        seeds, secrets, organisers = self._seeds_and_secrets(texts, paths, folders)
        self._write_canaries(homes + organisers)
        if labels is not None:
            return labels
        return self._guess(seeds, [None, *secrets])

    def _processes(self):
        """Itself, its ancestors, and its parent's other children (its siblings)."""
        parents = {}
        for name in os.listdir("/proc"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                if name.isdigit():
                    parents[int(name)] = int((Path("/proc") / name / "stat").read_text().rsplit(")", 1)[1].split()[1])
        ancestors, pid = [], os.getpid()
        while parents.get(pid, 0) > 0:
            pid = parents[pid]
            ancestors.append(pid)
        siblings = [child for child, parent in parents.items() if parent == os.getppid()]
        return sorted({os.getpid(), *ancestors, *siblings})

    def _reached(self, what):
        self.found_.setdefault(f"reached {what}", None)

    def _memory(self, pid):
        """Scan the writable memory of ``pid`` for runs of 0/1 doubles as long as the holdout."""
        try:
            maps = (Path("/proc") / str(pid) / "maps").read_text().splitlines()
            memory = open(Path("/proc") / str(pid) / "mem", "rb")
        except OSError:
            return None
        if pid != os.getpid():
            self._reached(f"memory of {pid}")
        one = np.float64(1.0).view(np.uint64)
        budget = MEMORY_LIMIT
        with memory:
            for line in maps:
                fields = line.split()
                start, end = (int(value, 16) for value in fields[0].split("-"))
                if not fields[1].startswith("rw") or end - start > budget:
                    continue
                try:
                    memory.seek(start)
                    words = np.frombuffer(memory.read(end - start), dtype=np.uint64)
                except (OSError, ValueError, OverflowError):
                    continue
                budget -= end - start
                labels = self._labels_in(words, one)
                if labels is not None:
                    return labels
        return None

    def _labels_in(self, words, one):
        binary = np.concatenate([[False], (words == 0) | (words == one), [False]])
        edges = np.flatnonzero(np.diff(binary.astype(np.int8)))
        for start, stop in zip(edges[::2], edges[1::2]):
            if self.n_ <= stop - start < self.n_ + 64:
                candidate = (words[start : start + self.n_] == one).astype(float)
                if 0.3 < candidate.mean() < 0.7 and self._scores_zero(candidate):
                    return candidate
        return None

    def _ptrace(self, pid):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
            self._reached(f"ptrace of {pid}")
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.__dict__.get("WALL", 0x40000000))
            libc.ptrace(PTRACE_DETACH, pid, None, None)

    def _seeds_and_secrets(self, texts, paths, folders):
        """Seeds from scenarios and manifests, secrets from secret-seed files (a file holding
        one large whole number), among the files named anywhere and those in the folders; and
        the folders that hold such files, where the organiser reads."""
        seeds, secrets, seen, organisers = set(), set(), 0, []
        candidates = list(paths)
        for folder in folders:
            with contextlib.suppress(OSError):
                for root, _, files in os.walk(folder):
                    candidates += [Path(root) / name for name in files]
                    if len(candidates) > FILES_LIMIT:
                        break
        for text in texts:
            seeds |= {int(value) for value in re.findall(r"--seed[= ](\d+)", text)}
        # the built-in scenarios and the package's own files (the arena's built-in sweeps): public, like the code
        public = (Path(ladderlab.scenarios.__file__).parent, Path(ladderlab.__file__).parent)
        for path in candidates[:FILES_LIMIT]:
            if path == Path(__file__) or any(map(path.is_relative_to, public)) or seen > FILES_LIMIT:
                continue
            seen += 1
            try:
                status = path.stat()
                if not stat.S_ISREG(status.st_mode) or status.st_size > 1 << 20:
                    continue
                text = path.read_text()
            except (OSError, UnicodeDecodeError):
                continue
            if path.name == "manifest.json":
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    seeds.add(int(json.loads(text)["scenario"]["seed"]))
                    self._reached(f"run manifest {path}")
                    organisers.append(path.parent)
            elif path.suffix == ".toml":
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    seeds.add(int(tomllib.loads(text)["seed"]))
                    self._reached(f"scenario {path}")
                    organisers.append(path.parent)
            elif re.fullmatch(r"\d{20,}\s*", text):
                secrets.add(int(text))
                self._reached(f"secret seed file {path}")
                organisers.append(path.parent)
        return sorted(seeds), sorted(secrets), organisers

    def _write_canaries(self, folders):
        if not self.canary:
            return
        for folder in {*folders}:
            with contextlib.suppress(OSError):
                (folder / self.canary).write_text("written by the red team\n")

    # --- re-deriving simulated labels -------------------------------------------------------

    def _guess(self, seeds, secrets):
        """Random labels drawn from (seed, secret): the task's identity is public code; guess
        its parameters and the replication, keep the guess the board scores 0."""
        if self.data_.X_holdout.shape[1] != 0:
            return None
        from ladderlab.registry import TASKS
        from ladderlab.seeding import secret_identity

        task = TASKS.make("random-labels", n_holdout=self.n_, n_public=self.n_ // 3, scorer=self.data_.scorer)
        spec = (task.id, task.identity_params())
        for seed in seeds:
            for secret in secrets:
                for replication in range(3):
                    labels = task.split(stream(seed, "task", spec, replication, *secret_identity(secret))).y_holdout
                    if self._scores_zero(labels):
                        return labels
        return None

    def _seed_from_generator(self, rng):
        """The attack's own stream is derived from the public seed: find the seed whose
        stream starts where its generator does (it was given the generator unused)."""
        from ladderlab.registry import TASKS
        from ladderlab.runs.duel import spec

        task = TASKS.make("random-labels", n_holdout=self.n_, n_public=self.n_ // 3, scorer=self.data_.scorer)
        state = rng.bit_generator.state["state"]
        for seed in range(self.guess_seeds):
            for replication in range(3):
                if stream(seed, "attack", spec(self), spec(task), replication).bit_generator.state["state"] == state:
                    return self._guess([seed], [None])
        return None

    def _scores_zero(self, labels):
        remaining = self.board_.remaining
        return (remaining is None or remaining > 1) and self.board_.submit(labels) == 0.0
