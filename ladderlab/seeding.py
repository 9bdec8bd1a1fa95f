"""Random streams derived from the identity of what they serve.

``stream(root_seed, "attack", attack_spec, replication)`` is a Generator whose
SeedSequence spawn key is a hash of the identity, never of a position in a run:
adding a mechanism to a scenario changes no other stream, and the same task data
and attacker coin flips meet every mechanism (common random numbers).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np


def identity_key(*identity: Any) -> tuple[int, ...]:
    """Four 32-bit words hashed from the canonical JSON of ``identity``."""
    text = json.dumps(identity, sort_keys=True, default=str, separators=(",", ":"))
    digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def stream(root_seed: int, *identity: Any) -> np.random.Generator:
    """The Generator serving ``identity`` under ``root_seed``."""
    return np.random.default_rng(np.random.SeedSequence(root_seed, spawn_key=identity_key(*identity)))
