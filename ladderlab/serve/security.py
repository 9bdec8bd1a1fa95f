"""Tokens and rate limits.

A token is ``ll_`` and 256 random bits (``secrets.token_urlsafe(32)``), shown once when
it is issued and stored only as its SHA-256. The prefix names what the token is, and keeps
a token from starting with ``-``, which a command line would take for an option. A presented token is hashed and compared with
every stored hash in constant time (``hmac.compare_digest``, no early exit), so the time
a request takes does not tell how close a guess came. Uploads are rate-limited per team
with a token bucket (a sustained rate and a burst) whose level is kept in the log's
database, so that it holds across the server processes sharing one log.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

TOKEN_BYTES = 32


TOKEN_PREFIX = "ll_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


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


def token_bucket(level: float, elapsed: float, rate: float, burst: int) -> tuple[float, float]:
    """A token bucket ``elapsed`` seconds after it held ``level`` (``rate`` uploads per second on
    average, ``burst`` at once): the level after one upload is counted and 0, or the unchanged
    refilled level and the seconds to wait before one would be allowed."""
    level = min(float(burst), level + max(0.0, elapsed) * rate)
    if level >= 1:
        return level - 1, 0.0
    return level, (1 - level) / rate
