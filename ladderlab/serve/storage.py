"""The submissions log: an append-only, hash-chained table in SQLite (WAL) or PostgreSQL.

SQLAlchemy Core, one schema for both databases:

- ``meta``: the challenge's identity, the secret's fingerprint, the organiser's token
  hash, the closing time;
- ``teams``: name and token hash (the token itself is never stored);
- ``submissions``: one row per scored submission, in the order the mechanism saw them
  (``submission_id``, gapless from 1): team, its sequence number, time (µs since the
  epoch, UTC), SHA-256 of the prediction's float64 bytes, exact public and final scores,
  the released value, the mechanism's decision, the idempotency key, and the hashes that
  chain every entry to the one before it (the first to the challenge's identity);
- ``links``: with ``[rules] link``, the links each submission made (the other team and the
  holdout rows where they differed, :mod:`ladderlab.serve.linked`); an entry's hash covers them;
- ``predictions``: the prediction bytes by SHA-256 (zlib), which replaying the log needs;
- ``events``: the organiser's and the teams' recorded actions between submissions: a team
  registered, a submission selected or unselected, the challenge closed
  (:mod:`ladderlab.serve.events`), each with the number of submissions logged before it;
- ``selections``: the submissions a team selected for the final ranking (rule k), as its
  ``select`` and ``unselect`` events leave them;
- ``rate_buckets``: each team's upload rate-limit bucket (level, last update), so that
  the limit holds across processes (not part of the chain: a refusal leaves no entry), and
  ``address_buckets``, the same for registration attempts by client address;
- ``sessions``: the page's signed-in browsers (the SHA-256 of their cookie, who, until when);
- ``chain``: one row, the head of the chain (the last submission id, and the hash of the
  last entry or event). Appending locks it, so ids are gapless and the chain is linear under
  any number of server processes.

The chain runs through submissions and events in the order they were logged: an entry's or an
event's ``previous_hash`` is the hash of whichever came just before it.

Locks: SQLite takes its one write lock with ``BEGIN IMMEDIATE``; PostgreSQL locks the
team's row (``SELECT … FOR UPDATE``) for the whole submission, so that caps and the
mechanism's state are exact across processes, and the chain's row only to append.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from numpy.typing import NDArray

from ladderlab.serve.security import token_bucket

SCHEMA_VERSION = "4"
MIGRATIONS = {"2": "3", "3": "4"}
"""Older schema versions this one opens by adding what it lacks (version 3 adds ``links``; the
hashes of entries without links are what version 2 wrote; version 4 adds ``events``, ``sessions``
and ``address_buckets``, and records a log's earlier selections and close as events when it
first opens it)."""
CHECKPOINT_SECONDS = 0.5
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
REFUSED = "refused"
"""The decision of a submission beyond its linked group's budget: logged (it counts in its team's
caps and links as in :func:`ladderlab.competition.play_competition`), never shown to the mechanism."""

metadata = sa.MetaData()
meta = sa.Table("meta", metadata, sa.Column("key", sa.String(64), primary_key=True), sa.Column("value", sa.Text, nullable=False))
teams = sa.Table(
    "teams", metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("token_hash", sa.String(64), nullable=False),
)
submissions = sa.Table(
    "submissions", metadata,
    sa.Column("submission_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("team", sa.String(64), sa.ForeignKey("teams.name"), nullable=False),
    sa.Column("team_sequence", sa.BigInteger, nullable=False),
    sa.Column("submitted_at_us", sa.BigInteger, nullable=False),
    sa.Column("utc_day", sa.String(10), nullable=False),
    sa.Column("prediction_sha256", sa.String(64), nullable=False),
    sa.Column("public_score", sa.Double, nullable=False),
    sa.Column("private_score", sa.Double, nullable=False),
    sa.Column("released", sa.Double, nullable=False),
    sa.Column("decision", sa.String(16), nullable=False),
    sa.Column("idempotency_key", sa.String(200)),
    sa.Column("previous_hash", sa.String(64), nullable=False),
    sa.Column("entry_hash", sa.String(64), nullable=False),
    sa.UniqueConstraint("team", "team_sequence"),
    sa.UniqueConstraint("team", "idempotency_key"),
    sa.Index("submissions_team_day", "team", "utc_day"),
)
links = sa.Table(
    "links", metadata,
    sa.Column("submission_id", sa.BigInteger, sa.ForeignKey("submissions.submission_id"), primary_key=True),
    sa.Column("position", sa.Integer, primary_key=True),
    sa.Column("other", sa.String(64), sa.ForeignKey("teams.name"), nullable=False),
    sa.Column("differing", sa.BigInteger, nullable=False),
)
predictions = sa.Table(
    "predictions", metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("layout", sa.String(64), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)
selections = sa.Table(
    "selections", metadata,
    sa.Column("team", sa.String(64), primary_key=True),
    sa.Column("submission_id", sa.BigInteger, sa.ForeignKey("submissions.submission_id"), primary_key=True),
)
events = sa.Table(
    "events", metadata,
    sa.Column("event_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("after_submission", sa.BigInteger, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("team", sa.String(64)),
    sa.Column("submission_id", sa.BigInteger),
    sa.Column("at_us", sa.BigInteger, nullable=False),
    sa.Column("previous_hash", sa.String(64), nullable=False),
    sa.Column("event_hash", sa.String(64), nullable=False),
)
rate_buckets = sa.Table(
    "rate_buckets", metadata,
    sa.Column("team", sa.String(64), sa.ForeignKey("teams.name"), primary_key=True),
    sa.Column("level", sa.Double, nullable=False),
    sa.Column("updated_us", sa.BigInteger, nullable=False),
)
address_buckets = sa.Table(
    "address_buckets", metadata,
    sa.Column("address", sa.String(64), primary_key=True),
    sa.Column("level", sa.Double, nullable=False),
    sa.Column("updated_us", sa.BigInteger, nullable=False),
)
sessions = sa.Table(
    "sessions", metadata,
    sa.Column("session_hash", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(64), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False),
    sa.Column("expires_us", sa.BigInteger, nullable=False),
)
chain = sa.Table(
    "chain", metadata,
    sa.Column("singleton", sa.Integer, primary_key=True),
    sa.Column("last_id", sa.BigInteger, nullable=False),
    sa.Column("last_hash", sa.String(64), nullable=False),
)


# The statements of a submission, built once: SQLAlchemy memoizes a statement's cache key, so
# executing a prebuilt statement skips building and hashing the expression on every request.
_team = sa.bindparam("team")
SUBMISSION_STATE = sa.select(
    sa.select(sa.func.coalesce(sa.func.max(submissions.c.team_sequence), 0))
    .where(submissions.c.team == _team).scalar_subquery(),
    sa.select(sa.func.count()).select_from(submissions)
    .where(submissions.c.team == _team, submissions.c.utc_day == sa.bindparam("day")).scalar_subquery(),
    sa.select(meta.c.value).where(meta.c.key == "closed_at").scalar_subquery(),
)
TEAM_ENTRIES_AFTER = (sa.select(*submissions.c)
                      .where(submissions.c.team == _team, submissions.c.team_sequence > sa.bindparam("sequence"))
                      .order_by(submissions.c.team_sequence))
ENTRIES_AFTER = (sa.select(*submissions.c).where(submissions.c.submission_id > sa.bindparam("after"))
                 .order_by(submissions.c.submission_id))
BY_IDEMPOTENCY_KEYS = (sa.select(*submissions.c)
                       .where(submissions.c.team == _team,
                              submissions.c.idempotency_key.in_(sa.bindparam("keys", expanding=True)))
                       .order_by(submissions.c.submission_id))
LOCK_TEAM = sa.select(teams.c.name).where(teams.c.name == _team).with_for_update()
LOCK_TEAMS = sa.select(teams.c.name).order_by(teams.c.name).with_for_update()
LINKS_AFTER = (sa.select(links.c.submission_id, links.c.other, links.c.differing)
               .where(links.c.submission_id > sa.bindparam("after")).order_by(links.c.submission_id, links.c.position))
HEAD = sa.select(chain.c.last_id, chain.c.last_hash).where(chain.c.singleton == 1)
HEAD_FOR_UPDATE = HEAD.with_for_update()
INSERT_ENTRY = submissions.insert()
MOVE_HEAD = chain.update().where(chain.c.singleton == 1).values(last_id=sa.bindparam("last_id"),
                                                                  last_hash=sa.bindparam("last_hash"))


@dataclass(frozen=True)
class SubmissionState:
    """What the caps and the close of one team's submission depend on."""

    total: int
    """The team's submissions so far (its last sequence number)."""
    today: int
    """The team's submissions on the UTC day asked about."""
    closed_at: str | None
    """When the organiser closed the challenge (ISO 8601), None if not."""


class StorageError(RuntimeError):
    """The database holds another challenge, or its log does not verify; the message says how."""


@dataclass(frozen=True)
class Entry:
    """One line of the log."""

    submission_id: int
    team: str
    team_sequence: int
    submitted_at_us: int
    utc_day: str
    prediction_sha256: str
    public_score: float
    private_score: float
    released: float
    decision: str
    idempotency_key: str | None
    previous_hash: str
    entry_hash: str
    links: tuple[tuple[str, int], ...] = ()
    """The links this submission made: (other team, differing holdout rows), in order."""

    def expected_hash(self) -> str:
        """The hash this entry must carry: SHA-256 of its fields (floats as exact hex), its links
        and the previous entry's hash."""
        return entry_hash(self.submission_id, self.team, self.team_sequence, self.submitted_at_us,
                          self.prediction_sha256, self.public_score, self.private_score, self.released,
                          self.decision, self.idempotency_key, self.previous_hash, self.links)


def entry_hash(submission_id: int, team: str, team_sequence: int, submitted_at_us: int, prediction_sha256: str,
               public_score: float, private_score: float, released: float, decision: str,
               idempotency_key: str | None, previous_hash: str, links: tuple[tuple[str, int], ...] = ()) -> str:
    fields: list[Any] = [submission_id, team, team_sequence, submitted_at_us, prediction_sha256,
                         float(public_score).hex(), float(private_score).hex(), float(released).hex(), decision,
                         idempotency_key, previous_hash]
    if links:  # an entry without links hashes as before links were logged
        fields.append([[other, int(differing)] for other, differing in links])
    return hashlib.sha256(json.dumps(fields, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Event:
    """One recorded action of the chain (:mod:`ladderlab.serve.events`): its id (gapless from 1), the
    submissions logged before it, its kind, the team and submission it concerns, its time (µs)."""

    event_id: int
    after_submission: int
    kind: str
    team: str | None
    submission_id: int | None
    at_us: int
    previous_hash: str
    event_hash: str

    def expected_hash(self) -> str:
        return event_hash(self.event_id, self.after_submission, self.kind, self.team, self.submission_id, self.at_us,
                          self.previous_hash)


def event_hash(event_id: int, after_submission: int, kind: str, team: str | None, submission_id: int | None,
               at_us: int, previous_hash: str) -> str:
    """SHA-256 of an event's fields and the hash before it (marked as an event, so that no entry
    hashes the same)."""
    fields = ["event", event_id, after_submission, kind, team, submission_id, at_us, previous_hash]
    return hashlib.sha256(json.dumps(fields, separators=(",", ":")).encode()).hexdigest()


def genesis_hash(challenge_identity: str) -> str:
    """The hash the first entry links to: the challenge's identity."""
    return hashlib.sha256(f"ladderlab serve {challenge_identity}".encode()).hexdigest()


def prediction_sha256(row: NDArray[np.float64]) -> str:
    """SHA-256 of a prediction's float64 bytes in the published order of the holdout."""
    return hashlib.sha256(np.ascontiguousarray(row, dtype=np.float64).tobytes()).hexdigest()


STORED_DTYPES = (np.int8, np.int16, np.float32)
"""Narrower types a prediction is stored in when they hold every value bit for bit (labels
as int8: an eighth of the bytes to compress, which was most of a submission's CPU time)."""


def encode_prediction(row: NDArray[np.float64]) -> tuple[str, bytes]:
    """A prediction as its layout (shape and stored type, JSON) and zlib-compressed bytes, in
    the narrowest of :data:`STORED_DTYPES` (else float64) that gives back the same float64 bits."""
    row = np.ascontiguousarray(row, dtype=np.float64)
    stored = row
    for dtype in STORED_DTYPES:
        with np.errstate(invalid="ignore", over="ignore"):
            narrow = row.astype(dtype)
        if np.array_equal(narrow.astype(np.float64).view(np.int64), row.view(np.int64)):
            stored = narrow
            break
    layout = json.dumps({"shape": list(row.shape), "dtype": stored.dtype.name})
    return layout, zlib.compress(stored.tobytes(), 1)


def decode_prediction(layout: str, data: bytes) -> NDArray[np.float64]:
    described = json.loads(layout)
    stored = np.frombuffer(zlib.decompress(data), dtype=np.dtype(described["dtype"]))
    return stored.astype(np.float64).reshape(described["shape"])


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def checked_url(url: str) -> sa.URL:
    """``url`` parsed as a SQLAlchemy database URL of SQLite or PostgreSQL, whose SQLite file
    lies in an existing folder; ``ValueError`` naming ``--database`` and the value if not."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise ValueError(f"--database {url!r}: not a database URL; give e.g. sqlite:///PATH or "
                         "postgresql+psycopg://user@host/db") from None
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ValueError(f"--database {parsed.render_as_string(hide_password=True)!r}: ladderlab keeps its log in SQLite or PostgreSQL, "
                         f"not {parsed.get_backend_name()!r}")
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        folder = Path(parsed.database).parent
        if not folder.is_dir():
            raise ValueError(f"--database {parsed.render_as_string(hide_password=True)!r}: the folder {folder} "
                             "does not exist")
    return parsed


class Storage:
    """The log in one database; every method that writes runs in one transaction.

    ``background_checkpoints`` (SQLite, for a server): a thread of this object copies the
    WAL into the database every :data:`CHECKPOINT_SECONDS`, instead of the commit that
    fills the WAL doing it (and its disk flush) while an upload waits for its answer.
    """

    def __init__(self, url: str, full_sync: bool = False, background_checkpoints: bool = False):
        checked_url(url)
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self._checkpointer: threading.Thread | None = None
        self._closing = threading.Event()
        if self.is_sqlite:
            self.engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False},
                                           isolation_level=None)
            synchronous = "FULL" if full_sync else "NORMAL"
            pragmas = functools.partial(_sqlite_pragmas, synchronous=synchronous,
                                        autocheckpoint=not background_checkpoints)
            sa.event.listen(self.engine, "connect", lambda connection, _: pragmas(connection))
            if background_checkpoints:
                self._checkpointer = threading.Thread(target=self._checkpoints, name="sqlite-checkpoints", daemon=True)
                self._checkpointer.start()
        else:
            self.engine = sa.create_engine(url, pool_size=8, max_overflow=32, pool_pre_ping=True)
        dialect = sqlite if self.is_sqlite else postgresql
        self._store_prediction = dialect.insert(predictions).on_conflict_do_nothing()

    def close(self) -> None:
        self._closing.set()
        if self._checkpointer is not None:
            self._checkpointer.join()
        self.engine.dispose()

    def _checkpoints(self) -> None:
        """PASSIVE checkpoints (they never wait for or block a writer) until :meth:`close`."""
        while not self._closing.wait(CHECKPOINT_SECONDS):
            with self.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")

    @contextmanager
    def transaction(self) -> Iterator[sa.Connection]:
        """A write transaction: SQLite's write lock is taken at its start (``BEGIN IMMEDIATE``),
        so that reads inside it see what no other writer can change before the commit."""
        with self.engine.connect() as connection:
            if self.is_sqlite:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
                try:
                    yield connection
                except BaseException:
                    connection.exec_driver_sql("ROLLBACK")
                    raise
                connection.exec_driver_sql("COMMIT")
            else:
                with connection.begin():
                    yield connection

    @contextmanager
    def reading(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as connection:
            yield connection

    def lock_team(self, connection: sa.Connection, team: str) -> None:
        """Hold the team's row until the transaction ends (SQLite: already held)."""
        if not self.is_sqlite:
            connection.execute(LOCK_TEAM, {"team": team})

    def take_upload(self, connection: sa.Connection, team: str, now_us: int, rate: float, burst: int) -> float:
        """Count one upload in the team's token bucket and return 0, or return the seconds to
        wait before one is allowed (counting nothing). Call it holding the team's lock."""
        return _take(connection, rate_buckets.c.team, team, now_us, rate, burst)

    def take_attempt(self, connection: sa.Connection, address: str, now_us: int, rate: float, burst: int) -> float:
        """:meth:`take_upload` for a registration attempt from a client address (in a write
        transaction); buckets that have refilled are dropped, so that addresses do not pile up."""
        connection.execute(address_buckets.delete().where(address_buckets.c.updated_us < now_us - int(burst / rate * 1e6)))
        return _take(connection, address_buckets.c.address, address[:64], now_us, rate, burst)

    def length(self) -> int:
        """The number of entries in the log (the chain head's id)."""
        return self.chain_head()[0]

    def head(self, connection: sa.Connection) -> tuple[int, str]:
        """The chain's last submission id and last hash (an entry's or an event's), locked until the
        transaction ends."""
        last_id, last_hash = connection.execute(HEAD if self.is_sqlite else HEAD_FOR_UPDATE).one()
        return int(last_id), str(last_hash)

    def lock_all_teams(self, connection: sa.Connection) -> None:
        """Hold every team's row until the transaction ends, in name order (SQLite: already held):
        a submission in progress holds its team's row until it is logged, so this waits for them."""
        if not self.is_sqlite:
            connection.execute(LOCK_TEAMS).all()

    # --- setting up ---------------------------------------------------------------------

    def initialise(self, identity: str, secret_fingerprint: str, organiser_token_hash: str) -> bool:
        """Create the tables for a new log (True), or check that the existing one belongs to this
        challenge and secret (False); raise :class:`StorageError` if not."""
        metadata.create_all(self.engine)
        with self.transaction() as connection:
            stored = dict(connection.execute(sa.select(meta.c.key, meta.c.value)).all())
            if not stored:
                connection.execute(meta.insert(), [
                    {"key": "schema_version", "value": SCHEMA_VERSION},
                    {"key": "challenge_identity", "value": identity},
                    {"key": "secret_fingerprint", "value": secret_fingerprint},
                    {"key": "organiser_token_hash", "value": organiser_token_hash},
                ])
                connection.execute(chain.insert().values(singleton=1, last_id=0, last_hash=genesis_hash(identity)))
                return True
            while stored.get("schema_version") in MIGRATIONS:
                if stored["schema_version"] == "3":
                    self._record_earlier_actions(connection, stored.get("closed_at"))
                stored["schema_version"] = MIGRATIONS[stored["schema_version"]]
                connection.execute(meta.update().where(meta.c.key == "schema_version").values(
                    value=stored["schema_version"]))
        self._check_schema(stored.get("schema_version"))
        if stored.get("challenge_identity") != identity:
            raise StorageError(f"{self.display_url()} holds the log of another challenge (or of this one with other "
                               "labels, split, scorer or mechanism): its releases could not be replayed; "
                               "use a new database")
        if stored.get("secret_fingerprint") != secret_fingerprint:
            raise StorageError(f"{self.display_url()} was written with another secret: give the secret file it was "
                               "started with (--secret)")
        return False

    def _record_earlier_actions(self, connection: sa.Connection, closed_at: str | None) -> None:
        """A log of schema 3 kept its selections and its close outside the chain: record them as events
        (the selections now, the close at its time), so that the chain covers them from here on."""
        now_us = microseconds(datetime.now(timezone.utc))
        for team, submission_id in connection.execute(sa.select(selections.c.team, selections.c.submission_id)
                                                      .order_by(selections.c.team, selections.c.submission_id)):
            self.append_event(connection, "select", now_us, team, int(submission_id))
        if closed_at is not None:
            self.append_event(connection, "close", microseconds(datetime.fromisoformat(closed_at)))

    def _check_schema(self, version: str | None) -> None:
        if version != SCHEMA_VERSION:
            raise StorageError(f"{self.display_url()}: log schema version {version!r}, "
                               f"this ladderlab reads and writes {SCHEMA_VERSION!r}")

    def has_table(self, name: str) -> bool:
        return sa.inspect(self.engine).has_table(name)

    def has_log(self) -> bool:
        """Whether the database holds a log (its metadata table), without creating anything."""
        return sa.inspect(self.engine).has_table(meta.name)

    def display_url(self) -> str:
        return sa.make_url(self.url).render_as_string(hide_password=True)

    def meta_value(self, key: str, connection: sa.Connection | None = None) -> str | None:
        query = sa.select(meta.c.value).where(meta.c.key == key)
        if connection is None:
            with self.reading() as reader:
                return reader.execute(query).scalar_one_or_none()
        return connection.execute(query).scalar_one_or_none()

    def set_meta(self, key: str, value: str, connection: sa.Connection | None = None) -> None:
        """Set a metadata value, in ``connection``'s transaction or a transaction of its own."""
        if connection is None:
            with self.transaction() as writer:
                return self.set_meta(key, value, writer)
        if connection.execute(sa.select(meta.c.key).where(meta.c.key == key)).first():
            connection.execute(meta.update().where(meta.c.key == key).values(value=value))
        else:
            connection.execute(meta.insert().values(key=key, value=value))
        return None

    def team_hashes(self) -> dict[str, str]:
        with self.reading() as connection:
            return dict(connection.execute(sa.select(teams.c.name, teams.c.token_hash)).all())

    def team_count(self) -> int:
        with self.reading() as connection:
            return int(connection.execute(sa.select(sa.func.count()).select_from(teams)).scalar_one())

    def add_team(self, name: str, token_hash: str, connection: sa.Connection | None = None) -> None:
        """Add a team, in ``connection``'s transaction or a transaction of its own."""
        if connection is None:
            with self.transaction() as writer:
                return self.add_team(name, token_hash, writer)
        connection.execute(teams.insert().values(name=name, token_hash=token_hash))
        return None

    def set_token_hash(self, name: str, token_hash: str) -> None:
        with self.transaction() as connection:
            connection.execute(teams.update().where(teams.c.name == name).values(token_hash=token_hash))

    # --- the log ------------------------------------------------------------------------

    def entries(self, connection: sa.Connection | None = None, team: str | None = None) -> list[Entry]:
        """Log entries in order: all, or one team's."""
        query = sa.select(*submissions.c)
        if team is not None:
            query = query.where(submissions.c.team == team)
        query = query.order_by(submissions.c.submission_id)
        if connection is None:
            with self.reading() as reader:
                return [Entry(**row._mapping) for row in reader.execute(query)]
        return [Entry(**row._mapping) for row in connection.execute(query)]

    def counts(self, connection: sa.Connection, team: str, utc_day: str) -> tuple[int, int]:
        """The team's submissions: in total and on ``utc_day``."""
        state = self.submission_state(connection, team, utc_day)
        return state.total, state.today

    def submission_state(self, connection: sa.Connection, team: str, utc_day: str) -> SubmissionState:
        """What a submission of ``team`` on ``utc_day`` checks, in one query: the team's
        submissions in total (its last sequence number) and on that day, and the closing time."""
        total, today, closed_at = connection.execute(SUBMISSION_STATE, {"team": team, "day": utc_day}).one()
        return SubmissionState(int(total), int(today), closed_at)

    def team_entries_after(self, connection: sa.Connection, team: str, sequence: int) -> list[Entry]:
        """The team's entries after its sequence number ``sequence``, in order."""
        rows = connection.execute(TEAM_ENTRIES_AFTER, {"team": team, "sequence": sequence})
        return [Entry(**row._mapping) for row in rows]

    def entries_after(self, connection: sa.Connection, submission_id: int, with_links: bool = False) -> list[Entry]:
        """Every entry after ``submission_id``, in order (``with_links``: with the links they made)."""
        entries = [Entry(**row._mapping) for row in connection.execute(ENTRIES_AFTER, {"after": submission_id})]
        return self._with_links(connection, entries, submission_id) if with_links and entries else entries

    def _with_links(self, connection: sa.Connection, entries: list[Entry], after: int) -> list[Entry]:
        """``entries`` (every entry after ``after``, in order) with the links they made."""
        made: dict[int, list[tuple[str, int]]] = {}
        for submission_id, other, differing in connection.execute(LINKS_AFTER, {"after": after}):
            made.setdefault(int(submission_id), []).append((str(other), int(differing)))
        return [replace(entry, links=tuple(made[entry.submission_id])) if entry.submission_id in made else entry
                for entry in entries]

    def by_idempotency_key(self, connection: sa.Connection, team: str, key: str, rows: int) -> list[Entry]:
        """The entries an upload of ``rows`` rows with this key made (row i carries ``key#i``)."""
        keys = [f"{key}#{i}" for i in range(rows)]
        return [Entry(**row._mapping) for row in connection.execute(BY_IDEMPOTENCY_KEYS, {"team": team, "keys": keys})]

    def store_predictions(self, connection: sa.Connection, encoded: dict[str, tuple[str, bytes]]) -> None:
        """Store predictions (``encode_prediction``'s, by SHA-256) not stored yet."""
        values = [{"sha256": digest, "layout": layout, "data": data} for digest, (layout, data) in encoded.items()]
        connection.execute(self._store_prediction, values)

    def load_predictions(self, digests: list[str], connection: sa.Connection | None = None) -> dict[str, NDArray[np.float64]]:
        """The stored predictions of these digests, each checked against its digest."""
        query = sa.select(predictions.c.sha256, predictions.c.layout, predictions.c.data).where(
            predictions.c.sha256.in_(sorted(set(digests))))
        if connection is None:
            with self.reading() as reader:
                rows = reader.execute(query).all()
        else:
            rows = connection.execute(query).all()
        loaded = {digest: decode_prediction(layout, data) for digest, layout, data in rows}
        for digest, row in loaded.items():
            if prediction_sha256(row) != digest:
                raise StorageError(f"the prediction stored under {digest} was changed after it was written "
                                   "(its bytes no longer have that SHA-256)")
        return loaded

    def append(self, connection: sa.Connection, rows: list[dict[str, Any]]) -> list[Entry]:
        """Append entries (dicts without id and hashes, ``links`` optional) to the chain, in order;
        return them."""
        last_id, last_hash = self.head(connection)
        entries = []
        for row in rows:
            last_id += 1
            made = tuple(row.get("links", ()))
            digest = entry_hash(last_id, row["team"], row["team_sequence"], row["submitted_at_us"],
                                row["prediction_sha256"], row["public_score"], row["private_score"], row["released"],
                                row["decision"], row["idempotency_key"], last_hash, made)
            entries.append(Entry(submission_id=last_id, previous_hash=last_hash, entry_hash=digest,
                                 **{**row, "links": made}))
            last_hash = digest
        connection.execute(INSERT_ENTRY, [{key: value for key, value in entry.__dict__.items() if key != "links"}
                                          for entry in entries])
        made_links = [{"submission_id": entry.submission_id, "position": position, "other": other,
                       "differing": differing}
                      for entry in entries for position, (other, differing) in enumerate(entry.links)]
        if made_links:
            connection.execute(links.insert(), made_links)
        connection.execute(MOVE_HEAD, {"last_id": last_id, "last_hash": last_hash})
        return entries

    def append_event(self, connection: sa.Connection, kind: str, at_us: int, team: str | None = None,
                     submission_id: int | None = None) -> Event:
        """Append an event to the chain after the submissions logged so far; return it."""
        last_id, last_hash = self.head(connection)
        number = connection.execute(sa.select(sa.func.coalesce(sa.func.max(events.c.event_id), 0))).scalar_one() + 1
        event = Event(int(number), last_id, kind, team, submission_id, at_us, last_hash,
                      event_hash(int(number), last_id, kind, team, submission_id, at_us, last_hash))
        connection.execute(events.insert().values(**event.__dict__))
        connection.execute(MOVE_HEAD, {"last_id": last_id, "last_hash": event.event_hash})
        return event

    def events(self, connection: sa.Connection | None = None, kind: str | None = None) -> list[Event]:
        """The recorded events in order: all, or those of one kind (none in a log of schema 3)."""
        query = sa.select(*events.c).order_by(events.c.event_id)
        if kind is not None:
            query = query.where(events.c.kind == kind)
        if connection is None:
            with self.reading() as reader:
                return [Event(**row._mapping) for row in reader.execute(query)]
        return [Event(**row._mapping) for row in connection.execute(query)]

    def registered_teams(self, connection: sa.Connection | None = None) -> list[str]:
        """The teams that registered themselves, in the order they did."""
        return [str(event.team) for event in self.events(connection, kind="register")]

    def add_session(self, session_hash: str, holder: str, token_hash: str, expires_us: int, now_us: int) -> None:
        """Record a signed-in browser (its cookie's hash), dropping the sessions that have expired."""
        with self.transaction() as connection:
            connection.execute(sessions.delete().where(sessions.c.expires_us <= now_us))
            connection.execute(sessions.insert().values(session_hash=session_hash, holder=holder, token_hash=token_hash,
                                                        expires_us=expires_us))

    def session(self, session_hash: str) -> tuple[str, str, int] | None:
        """Who holds the session of this cookie hash, with the token hash it signed in with and
        when it expires (µs), or None."""
        query = sa.select(sessions.c.holder, sessions.c.token_hash, sessions.c.expires_us).where(
            sessions.c.session_hash == session_hash)
        with self.reading() as connection:
            row = connection.execute(query).first()
        return None if row is None else (str(row[0]), str(row[1]), int(row[2]))

    def drop_session(self, session_hash: str) -> None:
        with self.transaction() as connection:
            connection.execute(sessions.delete().where(sessions.c.session_hash == session_hash))

    def team_summaries(self) -> dict[str, tuple[int, int, float, float, float]]:
        """Per team with submissions the mechanism answered (not ``refused``): their count, the time
        of the last (µs), the lowest, highest and last release."""
        query = sa.select(submissions.c.team, sa.func.count(), sa.func.max(submissions.c.submitted_at_us),
                          sa.func.min(submissions.c.released), sa.func.max(submissions.c.released),
                          sa.func.max(submissions.c.submission_id)).where(submissions.c.decision != REFUSED
                                                                           ).group_by(submissions.c.team)
        with self.reading() as connection:
            rows = connection.execute(query).all()
            last_ids = [row[5] for row in rows]
            last = dict(connection.execute(sa.select(submissions.c.submission_id, submissions.c.released).where(
                submissions.c.submission_id.in_(last_ids))).all()) if last_ids else {}
        return {team: (int(count), int(last_us), float(lowest), float(highest), float(last[last_id]))
                for team, count, last_us, lowest, highest, last_id in rows}

    def submission_counts(self) -> dict[str, tuple[int, int]]:
        """Per team with submissions: how many (refused ones included), and the time of the last (µs)."""
        query = sa.select(submissions.c.team, sa.func.count(), sa.func.max(submissions.c.submitted_at_us)).group_by(
            submissions.c.team)
        with self.reading() as connection:
            return {team: (int(count), int(last_us)) for team, count, last_us in connection.execute(query)}

    def chain_head(self) -> tuple[int, str]:
        """The chain's last submission id and last hash, as they are now (not locked)."""
        with self.reading() as connection:
            last_id, last_hash = connection.execute(HEAD).one()
        return int(last_id), str(last_hash)

    def selected(self, connection: sa.Connection | None = None) -> dict[str, set[int]]:
        query = sa.select(selections.c.team, selections.c.submission_id)
        if connection is None:
            with self.reading() as reader:
                rows = reader.execute(query).all()
        else:
            rows = connection.execute(query).all()
        chosen: dict[str, set[int]] = {}
        for team, submission_id in rows:
            chosen.setdefault(team, set()).add(int(submission_id))
        return chosen

    def select(self, connection: sa.Connection, team: str, submission_id: int, selected: bool) -> None:
        where = (selections.c.team == team) & (selections.c.submission_id == submission_id)
        connection.execute(selections.delete().where(where))
        if selected:
            connection.execute(selections.insert().values(team=team, submission_id=submission_id))

    def check_anchor(self, submission_id: int, expected_hash: str) -> None:
        """Refuse (:class:`StorageError`) a log in which neither entry ``submission_id`` nor an event
        recorded after it carries ``expected_hash`` (the head ``verify`` printed earlier): a chain
        rewritten from there on, or cut back with its head row, is consistent in itself, so only a
        hash kept outside the database finds it."""
        anchor = f"--anchor {submission_id}:{expected_hash}"
        with self.reading() as connection:
            found = connection.execute(sa.select(submissions.c.entry_hash)
                                       .where(submissions.c.submission_id == submission_id)).scalar()
            later = (connection.execute(sa.select(events.c.event_hash).where(
                events.c.after_submission == submission_id)).scalars().all() if self.has_table("events") else [])
            length = int(connection.execute(HEAD).one()[0])
        if expected_hash == found or expected_hash in later:
            return
        if submission_id > length:
            raise StorageError(f"{anchor}: the log has no submission {submission_id}: entries were removed from its end")
        if submission_id == length and found is not None and not later:
            raise StorageError(f"{anchor}: no event after submission {submission_id} has that hash, and the log ends "
                               "with that submission: events were removed from its end")
        what = f"submission {submission_id}" if found is not None else "the log's start"
        raise StorageError(f"{anchor}: neither {what} nor an event recorded after it has that hash now: the log was "
                           "rewritten")

    def verify_chain(self, identity: str) -> list[Entry]:
        """Every entry, after checking the whole chain (:meth:`verified_log`)."""
        return self.verified_log(identity)[0]

    def verified_log(self, identity: str) -> tuple[list[Entry], list[Event]]:
        """Every entry and every event, after checking that their ids are gapless from 1, that each
        hash is the hash of its record and links to the record before it (entries and events in the
        order they were logged), that the head is the last record, and that every prediction is
        stored under its hash; :class:`StorageError` names the first record that is not (or a log
        of another schema version)."""
        version = self.meta_value("schema_version")
        if version not in MIGRATIONS:  # a log not opened since its migration is checked as it was written
            self._check_schema(version)
        with self.reading() as connection:
            entries = self.entries(connection)
            if entries and self.has_table(links.name):
                entries = self._with_links(connection, entries, 0)
            recorded = self.events(connection) if self.has_table(events.name) else []
            last_id, last_hash = connection.execute(HEAD).one()
        previous = genesis_hash(identity)
        position = 0
        for number in range(len(entries) + 1):
            while position < len(recorded) and recorded[position].after_submission <= number:
                previous = _checked_event(recorded[position], position + 1, number, previous)
                position += 1
            if number == len(entries):
                break
            entry = entries[number]
            if entry.submission_id != number + 1:
                raise StorageError(f"the log skips from submission {number} to {entry.submission_id}")
            if entry.previous_hash != previous:
                raise StorageError(f"submission {entry.submission_id} does not link to the entry or event before it")
            if entry.expected_hash() != entry.entry_hash:
                raise StorageError(f"submission {entry.submission_id} was changed after it was written "
                                   "(its hash does not match its contents)")
            previous = entry.entry_hash
        if position < len(recorded):
            event = recorded[position]
            raise StorageError(f"event {event.event_id} ({event.kind}) names {event.after_submission} submissions before "
                               f"it, but the log ends at {len(entries)}: entries were removed")
        if (int(last_id), last_hash) != (len(entries), previous):
            ends = f"{len(entries)} and {len(recorded)} events" if recorded else f"{len(entries)}"
            raise StorageError(f"the chain's head names submission {last_id}, but the log ends at {ends}: "
                               f"{'entries or events' if recorded else 'entries'} were removed")
        return entries, recorded


def _checked_event(event: Event, number: int, submissions_before: int, previous: str) -> str:
    """The hash of ``event``, the ``number``-th, recorded after ``submissions_before`` submissions,
    once it is checked to be in its place and unchanged, linked to ``previous``."""
    if event.event_id != number:
        raise StorageError(f"the log's events skip from {number - 1} to {event.event_id}")
    if event.after_submission != submissions_before:
        raise StorageError(f"event {event.event_id} ({event.kind}) is out of its place: it names "
                           f"{event.after_submission} submissions before it, there are {submissions_before}")
    if event.previous_hash != previous:
        raise StorageError(f"event {event.event_id} ({event.kind}) does not link to the entry or event before it")
    if event.expected_hash() != event.event_hash:
        raise StorageError(f"event {event.event_id} ({event.kind}) was changed after it was written (its hash does not "
                           "match its contents)")
    return event.event_hash


def _take(connection: sa.Connection, key_column: sa.Column, key: str, now_us: int, rate: float, burst: int) -> float:
    """Count one request in the token bucket of ``key`` (a row of ``key_column``'s table) and return 0,
    or return the seconds to wait before one is allowed (counting nothing)."""
    table = key_column.table
    stored = connection.execute(sa.select(table.c.level, table.c.updated_us).where(key_column == key)).first()
    level, then = (float(burst), now_us) if stored is None else (float(stored[0]), int(stored[1]))
    level, wait = token_bucket(level, (now_us - then) / 1e6, rate, burst)
    if not wait:
        values = {key_column.name: key, "level": level, "updated_us": now_us}
        if stored is None:
            connection.execute(table.insert(), values)
        else:
            connection.execute(table.update().where(key_column == key), values)
    return wait


def microseconds(when: datetime) -> int:
    """A time with a zone as µs since the epoch (the log's times)."""
    return (when - EPOCH) // timedelta(microseconds=1)


def moment(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def _sqlite_pragmas(connection: Any, synchronous: str, autocheckpoint: bool) -> None:
    """WAL (readers never block the writer). ``synchronous=NORMAL``: a commit is in the WAL file
    when it returns and survives the server being killed; ``FULL`` also flushes it to disk, so
    that it survives a crash of the machine, at the cost of a disk flush per submission.
    Without ``autocheckpoint`` no commit copies the WAL into the database (a thread does)."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA synchronous={synchronous}")
    cursor.execute("PRAGMA foreign_keys=ON")
    if not autocheckpoint:
        cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.close()
