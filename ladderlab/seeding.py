"""Random streams derived from the identity of what they serve.

``stream(root_seed, "attack", attack_spec, replication)`` is a Generator whose
SeedSequence spawn key is a hash of the identity, never of a position in a run:
adding a mechanism to a scenario changes no other stream, and the same task data
and attacker coin flips meet every mechanism (common random numbers).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from ladderlab.utils.atomic import create_exclusively


def identity_key(*identity: Any) -> tuple[int, ...]:
    """Four 32-bit words hashed from the canonical JSON of ``identity``."""
    text = json.dumps(identity, sort_keys=True, default=str, separators=(",", ":"))
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def stream(root_seed: int, *identity: Any) -> np.random.Generator:
    """The Generator serving ``identity`` under ``root_seed``."""
    return np.random.default_rng(np.random.SeedSequence(root_seed, spawn_key=identity_key(*identity)))


def substream(rng: np.random.Generator, *identity: Any) -> np.random.Generator:
    """The Generator serving ``identity`` inside ``rng``'s: the child of its SeedSequence whose spawn
    key appends the hash of ``identity`` (a function of the SeedSequence, not of how far ``rng``
    has drawn; ``SeedSequence.spawn`` keys children by a counter instead)."""
    seed_sequence = rng.bit_generator.seed_seq
    if not isinstance(seed_sequence, np.random.SeedSequence):
        raise TypeError(f"rng must be seeded from a numpy SeedSequence to derive {identity!r} from it, got {seed_sequence!r}")
    return np.random.default_rng(np.random.SeedSequence(
        seed_sequence.entropy, spawn_key=(*seed_sequence.spawn_key, *identity_key(*identity)), pool_size=seed_sequence.pool_size))


class _SealedSeed(ISeedSequence):
    """A seed that gives a Generator its state and nothing else: no children, no entropy to derive from."""

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        return np.random.SeedSequence(0).generate_state(n_words, dtype)


def sealed_stream() -> np.random.Generator:
    """A Generator that shows whether code drew from it: every draw changes its
    ``bit_generator.state``, and spawning a child (``rng.spawn``) or deriving one
    (:func:`substream`) raises ``TypeError``. Same state each call."""
    return np.random.Generator(np.random.PCG64(_SealedSeed()))


def secret_identity(secret_seed: int | None) -> tuple[Any, ...]:
    """What a secret seed adds to the identity of the task's and the mechanism's streams:
    nothing without one, so that runs without a secret keep their results."""
    if secret_seed is None:
        return ()
    if isinstance(secret_seed, bool) or not isinstance(secret_seed, int) or secret_seed < 0:
        raise ValueError(f"the secret seed must be a whole number ≥ 0, got {secret_seed!r}")
    return ("secret", secret_seed)


def secret_fingerprint(secret_seed: int | None) -> str | None:
    """A hash that tells secrets apart without revealing them (for the run's manifest)."""
    if secret_seed is None:
        return None
    return hashlib.sha256(f"ladderlab secret seed {secret_seed}".encode()).hexdigest()[:16]


def read_secret_seed(path: str | Path) -> int:
    """The secret seed kept in ``path`` (a whole number in decimal), created with 128 random
    bits, readable by its owner only, if the file does not exist yet."""
    path = Path(path)
    if not path.exists():
        if not path.parent.is_dir():
            raise ValueError(f"{path}: cannot create the secret seed file: the folder {path.parent} does not exist "
                             "(create it, or name a file in an existing folder)")
        try:
            create_exclusively(path, f"{secrets.randbits(128)}\n", 0o600)
        except OSError as error:
            raise ValueError(f"{path}: cannot create the secret seed file: {error.strerror or error}") from None
    try:
        text = path.read_bytes().strip()
        mode = path.stat().st_mode & 0o777
    except OSError as error:
        raise ValueError(f"{path}: cannot read the secret seed file: {error.strerror}") from None
    if not re.fullmatch(rb"[0-9]+", text):
        raise ValueError(f"{path}: a secret seed file holds one whole number in decimal, got {text[:20]!r}")
    if mode & 0o077:
        print(f"ladderlab: warning: {path}: the secret seed file can be read by other users (mode {mode:04o}), who "
              f"could then regenerate what it hides: chmod 600 {shlex.quote(str(path))}", file=sys.stderr)
    return int(text)
