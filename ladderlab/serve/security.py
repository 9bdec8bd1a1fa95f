"""Tokens and rate limits.

A token is 256 random bits (``secrets.token_urlsafe(32)``), shown once when it is
issued and stored only as its SHA-256. A presented token is hashed and compared with
every stored hash in constant time (``hmac.compare_digest``, no early exit), so the time
a request takes does not tell how close a guess came. Uploads are rate-limited per team
with a token bucket (a sustained rate and a burst), in each server process.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def holder(token: str, hashes: dict[str, str]) -> str | None:
    """The name whose stored hash is the token's, compared in constant time against all."""
    presented = token_hash(token).encode()
    found = None
    for name, stored in hashes.items():
        if hmac.compare_digest(presented, stored.encode()):
            found = name
    return found


class RateLimiter:
    """A token bucket per key: ``rate`` uploads per second on average, ``burst`` at once."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def wait_time(self, key: str) -> float:
        """0 and the upload is counted, or the seconds to wait before one would be allowed."""
        now = self.clock()
        with self._lock:
            level, then = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - then) * self.rate)
            if level >= 1:
                self._buckets[key] = (level - 1, now)
                return 0.0
            self._buckets[key] = (level, now)
            return (1 - level) / self.rate
