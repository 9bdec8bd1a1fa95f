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
- ``selections``: the submissions a team selected for the final ranking (rule k);
- ``events``: a second hash chain of everything else the service acts on: each token hash a
  team or the organiser was given (a team added, a team that registered itself, a token
  reissued), each selection and unselection, the close, and the submissions' head it sealed.
  ``teams``, ``selections`` and the closing time in ``meta`` are what the events add up to;
  :meth:`Storage.verify_chain` refuses a log where they are not (and
  :func:`ladderlab.serve.events.verify_actions` one where an event breaks the service's rules);
- ``rate_buckets``: each team's upload rate-limit bucket (level, last update), so that
  the limit holds across processes (not part of either chain: it decides only when an upload
  may come, never what is released or counted, which the caps of chained entries decide), and
  ``address_buckets``, the same for registration attempts by client address;
- ``sessions``: the page's signed-in browsers (the SHA-256 of their cookie, who, the hash of the
  token they signed in with, until when; :mod:`ladderlab.serve.sessions`);
- ``chain``: the heads of the chains (row 1: the submissions', row 2: the events'), last id
  and hash. Appending locks the head, so ids are gapless and each chain is linear under any
  number of server processes.

An entry's UTC day (``utc_day``, which the daily cap counts) is the day of its time, which is
in the chain; the column is kept for people reading the table, and a log whose column says
another day is refused.

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
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from numpy.typing import NDArray

from ladderlab.serve.security import token_bucket

SCHEMA_VERSION = "4"
MIGRATIONS = {"2": "4", "3": "4"}
"""Older schema versions a server opens by adding what they lack (version 3 added ``links``; the
hashes of entries without links are what version 2 wrote; version 4 added ``events``, begun at the
migration with the tokens, selections and close the log held then). ``serve verify`` checks a log
not migrated yet as it was written, and says what its chain does not cover."""
SUBMISSIONS_HEAD, EVENTS_HEAD = 1, 2
TOKEN, REGISTER, SELECT, UNSELECT, CLOSE, SEAL, MIGRATED = (
    "token", "register", "select", "unselect", "close", "seal", "migrated")
"""The kinds of events: a token hash given to a team or the organiser, a team that registered
itself with its token hash, a selection and an unselection, the close, the submissions' head at the
close (``ID:HASH``, recorded with it: no submission comes after it), and the migration that began
the events of an older log."""
ORGANISER, SCORER = "organiser", "scorer"
CREDENTIALS = (ORGANISER, SCORER)
"""The tokens that are no team's (their hashes are kept in ``meta``): the organiser's, and the scorer
credential of a platform's scoring program (ladderlab export), which uploads for a team it names and
sees what the team would see."""
CHECKPOINT_SECONDS = 0.5
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
    sa.Index("submissions_team_time", "team", "submitted_at_us"),
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
events = sa.Table(
    "events", metadata,
    sa.Column("event_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("value", sa.Text, nullable=False),
    sa.Column("at_us", sa.BigInteger, nullable=False),
    sa.Column("previous_hash", sa.String(64), nullable=False),
    sa.Column("event_hash", sa.String(64), nullable=False),
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
    .where(submissions.c.team == _team, submissions.c.submitted_at_us >= sa.bindparam("day_start"),
           submissions.c.submitted_at_us < sa.bindparam("day_end")).scalar_subquery(),
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
HEAD = sa.select(chain.c.last_id, chain.c.last_hash).where(chain.c.singleton == SUBMISSIONS_HEAD)
HEAD_FOR_UPDATE = HEAD.with_for_update()
EVENTS_HEAD_ROW = sa.select(chain.c.last_id, chain.c.last_hash).where(chain.c.singleton == EVENTS_HEAD)
EVENTS_HEAD_FOR_UPDATE = EVENTS_HEAD_ROW.with_for_update()
INSERT_ENTRY = submissions.insert()
MOVE_HEAD = chain.update().where(chain.c.singleton == SUBMISSIONS_HEAD).values(last_id=sa.bindparam("last_id"),
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

    @property
    def day(self) -> str:
        """The UTC day of the submission's time (ISO 8601), which the daily caps count."""
        return utc_day(self.submitted_at_us)

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


def genesis_hash(challenge_identity: str) -> str:
    """The hash the first entry links to: the challenge's identity."""
    return hashlib.sha256(f"ladderlab serve {challenge_identity}".encode()).hexdigest()


def events_genesis_hash(challenge_identity: str) -> str:
    """The hash the first event links to: the challenge's identity."""
    return hashlib.sha256(f"ladderlab serve events {challenge_identity}".encode()).hexdigest()


def event_hash(event_id: int, kind: str, name: str, value: str, at_us: int, previous_hash: str) -> str:
    return hashlib.sha256(json.dumps([event_id, kind, name, value, at_us, previous_hash],
                                     separators=(",", ":")).encode()).hexdigest()


def utc_day(microseconds: int) -> str:
    """The UTC day (ISO 8601) of a time in microseconds since the epoch."""
    return (EPOCH + timedelta(microseconds=microseconds)).date().isoformat()


def day_bounds(day: str) -> tuple[int, int]:
    """The first microsecond of the UTC day ``day`` and of the next, since the epoch."""
    start = datetime.combine(date.fromisoformat(day), datetime.min.time(), timezone.utc)
    first = (start - EPOCH) // timedelta(microseconds=1)
    return first, first + 86_400_000_000


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def microseconds(when: datetime) -> int:
    """A time with a zone as µs since the epoch (the log's times)."""
    return (when - EPOCH) // timedelta(microseconds=1)


def moment(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


@dataclass(frozen=True)
class Event:
    """One event of the events chain, as the service wrote it."""

    event_id: int
    kind: str
    name: str
    value: str
    at_us: int


@dataclass
class Recorded:
    """What the events add up to: every name's token hash, each team's selections, the closing time."""

    tokens: dict[str, str]
    selections: dict[str, set[int]]
    closed_at: str | None
    migrated: str | None
    """The schema version the events began from by a migration (None: they began with the log)."""

    def apply(self, kind: str, name: str, value: str, number: int) -> None:
        if kind in (TOKEN, REGISTER):
            self.tokens[name] = value
        elif kind == SEAL and self.closed_at is not None:
            pass
        elif kind in (SELECT, UNSELECT) and value.isdigit():
            chosen = self.selections.setdefault(name, set())
            chosen.add(int(value)) if kind == SELECT else chosen.discard(int(value))
            if not chosen:
                del self.selections[name]
        elif kind == CLOSE and self.closed_at is None:
            self.closed_at = value
        elif kind == MIGRATED and number == 1:
            self.migrated = value
        else:
            raise StorageError(f"event {number} is {kind} {name} {value!r}, which the service never writes")


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
        connection.execute(address_buckets.delete().where(
            address_buckets.c.updated_us < now_us - int(burst / rate * 1e6)))
        return _take(connection, address_buckets.c.address, address[:64], now_us, rate, burst)

    def lock_all_teams(self, connection: sa.Connection) -> None:
        """Hold every team's row until the transaction ends, in name order (SQLite: already held):
        a submission in progress holds its team's row until it is logged, so this waits for them."""
        if not self.is_sqlite:
            connection.execute(LOCK_TEAMS).all()

    def length(self) -> int:
        """The number of entries in the log (the chain head's id)."""
        return self.chain_head()[0]

    def chain_head(self) -> tuple[int, str]:
        """The submissions chain's last id and hash, as they are now (not locked)."""
        with self.reading() as connection:
            last_id, last_hash = connection.execute(HEAD).one()
        return int(last_id), str(last_hash)

    def head(self, connection: sa.Connection) -> tuple[int, str]:
        """The chain's last id and hash, locked until the transaction ends."""
        last_id, last_hash = connection.execute(HEAD if self.is_sqlite else HEAD_FOR_UPDATE).one()
        return int(last_id), str(last_hash)

    # --- setting up ---------------------------------------------------------------------

    def initialise(self, identity: str, secret_fingerprint: str, organiser_token_hash: str, at_us: int = 0) -> bool:
        """Create the tables for a new log (True), or check that the existing one belongs to this
        challenge and secret (False), migrating an older schema (:data:`MIGRATIONS`); raise
        :class:`StorageError` if not. ``at_us``: the time of the events written now."""
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
                connection.execute(chain.insert(), [
                    {"singleton": SUBMISSIONS_HEAD, "last_id": 0, "last_hash": genesis_hash(identity)},
                    {"singleton": EVENTS_HEAD, "last_id": 0, "last_hash": events_genesis_hash(identity)}])
                self._record(connection, [(TOKEN, ORGANISER, organiser_token_hash)], at_us)
                return True
            if stored.get("schema_version") in MIGRATIONS and stored.get("challenge_identity") == identity:
                self._migrate(connection, stored, identity, at_us)
        self._check_schema(stored.get("schema_version"))
        if stored.get("challenge_identity") != identity:
            raise StorageError(f"{self.display_url()} holds the log of another challenge (or of this one with other "
                               "labels, split, scorer or mechanism): its releases could not be replayed; "
                               "use a new database")
        if stored.get("secret_fingerprint") != secret_fingerprint:
            raise StorageError(f"{self.display_url()} was written with another secret: give the secret file it was "
                               "started with (--secret)")
        return False

    def _migrate(self, connection: sa.Connection, stored: dict[str, str], identity: str, at_us: int) -> None:
        """Bring a log of an older schema to this one: the events chain begins with a ``migrated``
        event and the tokens, selections and close the log holds now, which it cannot vouch for."""
        connection.execute(chain.insert().values(singleton=EVENTS_HEAD, last_id=0,
                                                 last_hash=events_genesis_hash(identity)))
        tokens = dict(connection.execute(sa.select(teams.c.name, teams.c.token_hash).order_by(teams.c.name)).all())
        chosen = connection.execute(sa.select(selections.c.team, selections.c.submission_id)
                                    .order_by(selections.c.team, selections.c.submission_id)).all()
        made = [(MIGRATED, ORGANISER, stored["schema_version"]),
                *[(TOKEN, name, stored[f"{name}_token_hash"]) for name in CREDENTIALS if f"{name}_token_hash" in stored],
                *[(TOKEN, name, digest) for name, digest in tokens.items()],
                *[(SELECT, team, str(submission_id)) for team, submission_id in chosen]]
        if stored.get("closed_at") is not None:
            made.append((CLOSE, ORGANISER, stored["closed_at"]))
        self._record(connection, made, at_us)
        connection.execute(meta.update().where(meta.c.key == "schema_version").values(value=SCHEMA_VERSION))
        stored["schema_version"] = SCHEMA_VERSION

    def _record(self, connection: sa.Connection, made: list[tuple[str, str, str]], at_us: int) -> None:
        """Append events (kind, name, value) at ``at_us`` to the events chain, holding its head."""
        last_id, last_hash = connection.execute(EVENTS_HEAD_ROW if self.is_sqlite else EVENTS_HEAD_FOR_UPDATE).one()
        rows = []
        for kind, name, value in made:
            last_id += 1
            digest = event_hash(last_id, kind, name, value, at_us, last_hash)
            rows.append({"event_id": last_id, "kind": kind, "name": name, "value": value, "at_us": at_us,
                         "previous_hash": last_hash, "event_hash": digest})
            last_hash = digest
        if rows:
            connection.execute(events.insert(), rows)
            connection.execute(chain.update().where(chain.c.singleton == EVENTS_HEAD).values(
                last_id=last_id, last_hash=last_hash))

    def _check_schema(self, version: str | None) -> None:
        if version != SCHEMA_VERSION:
            raise StorageError(f"{self.display_url()}: log schema version {version!r}, "
                               f"this ladderlab reads and writes {SCHEMA_VERSION!r}")

    def has_table(self, name: str) -> bool:
        return sa.inspect(self.engine).has_table(name)

    def has_log(self) -> bool:
        """Whether the database holds a log (its metadata table), without creating anything."""
        with self.readable():
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
        if connection is None:
            with self.transaction() as writing:
                self.set_meta(key, value, writing)
            return
        if connection.execute(sa.select(meta.c.key).where(meta.c.key == key)).first():
            connection.execute(meta.update().where(meta.c.key == key).values(value=value))
        else:
            connection.execute(meta.insert().values(key=key, value=value))

    def team_hashes(self, connection: sa.Connection | None = None) -> dict[str, str]:
        """Every team's token hash, by name."""
        if connection is None:
            with self.reading() as reader:
                return self.team_hashes(reader)
        return dict(connection.execute(sa.select(teams.c.name, teams.c.token_hash)).all())

    def team_count(self) -> int:
        with self.reading() as connection:
            return int(connection.execute(sa.select(sa.func.count()).select_from(teams)).scalar_one())

    def add_team(self, name: str, token_hash: str, at_us: int) -> None:
        with self.transaction() as connection:
            connection.execute(teams.insert().values(name=name, token_hash=token_hash))
            self._record(connection, [(TOKEN, name, token_hash)], at_us)

    def hold_events(self, connection: sa.Connection) -> None:
        """Hold the events chain's head until the transaction ends (SQLite: already held): actions
        that check what earlier ones recorded (registrations: the names taken) go one at a time."""
        if not self.is_sqlite:
            connection.execute(EVENTS_HEAD_FOR_UPDATE).one()

    def register_team(self, connection: sa.Connection, name: str, token_hash: str, at_us: int) -> None:
        """Add a team that registered itself (in ``connection``'s transaction), recorded as such."""
        connection.execute(teams.insert().values(name=name, token_hash=token_hash))
        self._record(connection, [(REGISTER, name, token_hash)], at_us)

    def registered_teams(self, connection: sa.Connection | None = None) -> list[str]:
        """The teams that registered themselves, in the order they did."""
        return [event.name for event in self.events(connection) if event.kind == REGISTER]

    def events(self, connection: sa.Connection | None = None) -> list[Event]:
        """The events in order (none in a log of an older schema)."""
        query = sa.select(events.c.event_id, events.c.kind, events.c.name, events.c.value,
                          events.c.at_us).order_by(events.c.event_id)
        if connection is None:
            with self.reading() as reader:
                return self.events(reader)
        if not sa.inspect(connection).has_table(events.name):
            return []
        return [Event(*row) for row in connection.execute(query)]

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

    def set_token_hash(self, name: str, token_hash: str, at_us: int) -> None:
        """Give a team (or :data:`ORGANISER`, or :data:`SCORER`) a new token hash; the old token stops working."""
        with self.transaction() as connection:
            if name in CREDENTIALS:
                self.set_meta(f"{name}_token_hash", token_hash, connection)
            else:
                connection.execute(teams.update().where(teams.c.name == name).values(token_hash=token_hash))
            self._record(connection, [(TOKEN, name, token_hash)], at_us)

    def close_challenge(self, closed_at: str, at_us: int) -> str:
        """Record the close at ``closed_at`` (ISO 8601) unless the log has one; return the one it has.
        It waits for the submissions in progress (:meth:`lock_all_teams`), and records with it the
        submissions chain's head (``seal``): none may come after it."""
        with self.transaction() as connection:
            self.lock_all_teams(connection)
            recorded = self.meta_value("closed_at", connection)
            if recorded is not None:
                return recorded
            self.set_meta("closed_at", closed_at, connection)
            last_id, last_hash = self.head(connection)
            self._record(connection, [(CLOSE, ORGANISER, closed_at), (SEAL, ORGANISER, f"{last_id}:{last_hash}")],
                         at_us)
            return closed_at

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

    def submission_state(self, connection: sa.Connection, team: str, day: str) -> SubmissionState:
        """What a submission of ``team`` on the UTC day ``day`` checks, in one query: the team's
        submissions in total (its last sequence number) and on that day (by their chained times,
        not the ``utc_day`` column), and the closing time."""
        start, end = day_bounds(day)
        total, today, closed_at = connection.execute(SUBMISSION_STATE, {"team": team, "day_start": start,
                                                                        "day_end": end}).one()
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
        loaded = {}
        for digest, layout, data in rows:
            try:
                loaded[digest] = decode_prediction(layout, data)
            except (zlib.error, ValueError, TypeError, KeyError) as error:
                raise StorageError(f"the prediction stored under {digest} cannot be read ({type(error).__name__}: "
                                   f"{str(error)[:120]}): the table 'predictions' was changed") from None
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

    def submission_counts(self) -> dict[str, tuple[int, int]]:
        """Per team with submissions: how many (refused ones included), and the time of the last (µs)."""
        query = sa.select(submissions.c.team, sa.func.count(), sa.func.max(submissions.c.submitted_at_us)).group_by(
            submissions.c.team)
        with self.reading() as connection:
            return {team: (int(count), int(last_us)) for team, count, last_us in connection.execute(query)}

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

    def select(self, connection: sa.Connection, team: str, submission_id: int, selected: bool, at_us: int) -> None:
        """Select (or unselect) a submission of ``team``, recorded as an event if it changes anything."""
        where = (selections.c.team == team) & (selections.c.submission_id == submission_id)
        if connection.execute(selections.delete().where(where)).rowcount:
            if not selected:
                self._record(connection, [(UNSELECT, team, str(submission_id))], at_us)
        elif selected:
            self._record(connection, [(SELECT, team, str(submission_id))], at_us)
        if selected:
            connection.execute(selections.insert().values(team=team, submission_id=submission_id))

    def check_anchor(self, submission_id: int, expected_hash: str) -> None:
        """Refuse (:class:`StorageError`) a log whose entry ``submission_id`` is gone or has another hash
        than one recorded earlier: a chain rewritten from there on, or cut back with its head row, is
        consistent in itself, so only a hash kept outside the database finds it."""
        with self.reading() as connection:
            found = connection.execute(sa.select(submissions.c.entry_hash)
                                       .where(submissions.c.submission_id == submission_id)).scalar()
        if found is None:
            raise StorageError(f"--anchor {submission_id}:{expected_hash}: the log has no submission {submission_id}: "
                               "entries were removed from its end")
        if found != expected_hash:
            raise StorageError(f"--anchor {submission_id}:{expected_hash}: submission {submission_id} now has the hash "
                               f"{found}: the log was rewritten")

    def verify_chain(self, identity: str) -> list[Entry]:
        """Every entry, after checking that ids are gapless from 1, each hash is the hash of its
        entry and links to the one before, each entry's ``utc_day`` is the day of its time, the head
        is the last entry, and every prediction is stored under its hash; then the events chain
        likewise, and that the teams' token hashes, the organiser's, the selections and the closing
        time are what its events add up to. :class:`StorageError` names the first that is not (or a
        log of another schema version, or a database that cannot be read)."""
        with self.readable():
            version = self.meta_value("schema_version")
            if version not in MIGRATIONS:  # a log not opened since its migration is checked as it was written
                self._check_schema(version)
            with self.reading() as connection:
                entries = self.entries(connection)
                if entries and version != "2":
                    entries = self._with_links(connection, entries, 0)
                head = connection.execute(HEAD).one_or_none()
            previous = genesis_hash(identity)
            for number, entry in enumerate(entries, start=1):
                if entry.submission_id != number:
                    raise StorageError(f"the log skips from submission {number - 1} to {entry.submission_id}")
                if entry.previous_hash != previous:
                    raise StorageError(f"submission {entry.submission_id} does not link to the entry before it")
                if entry.expected_hash() != entry.entry_hash:
                    raise StorageError(f"submission {entry.submission_id} was changed after it was written "
                                       "(its hash does not match its contents)")
                if entry.utc_day != entry.day:
                    raise StorageError(f"submission {entry.submission_id}: its utc_day {entry.utc_day!r} is not the "
                                       f"UTC day of its time ({entry.day}), which the chain holds: the row was changed")
                previous = entry.entry_hash
            self._check_head("submission", head, len(entries), previous)
            if version == SCHEMA_VERSION:
                self._verify_events(identity)
        return entries

    def _check_head(self, what: str, head: Any, length: int, last_hash: str) -> None:
        """Refuse a chain whose head row is missing or does not name its last element and hash."""
        if head is None:
            raise StorageError(f"the chain has no head row for its {what}s: the table 'chain' was changed")
        last_id, recorded = head
        if not isinstance(last_id, int) or isinstance(last_id, bool):
            raise StorageError(f"the chain's head names {what} {last_id!r}, not a number: the table 'chain' was changed")
        if last_id > length:
            raise StorageError(f"the chain's head names {what} {last_id}, but the log ends at {length}: "
                               "entries were removed")
        if last_id < length:
            raise StorageError(f"the chain's head names {what} {last_id}, but the log goes on to {length}: "
                               "the head was moved back, or rows were added without it")
        if recorded != last_hash:
            raise StorageError(f"the chain's head names {what} {last_id} with the hash {str(recorded)[:80]!r}, but "
                               f"that {what}'s hash is {last_hash}: the head or the entries were changed")

    def _verify_events(self, identity: str) -> Recorded:
        """Check the events chain and that the tables of what it records agree with it."""
        with self.reading() as connection:
            rows = connection.execute(sa.select(*events.c).order_by(events.c.event_id)).all()
            head = connection.execute(EVENTS_HEAD_ROW).one_or_none()
            team_rows = dict(connection.execute(sa.select(teams.c.name, teams.c.token_hash)).all())
            chosen_rows = connection.execute(sa.select(selections.c.team, selections.c.submission_id)).all()
            stored = dict(connection.execute(sa.select(meta.c.key, meta.c.value)).all())
        previous = events_genesis_hash(identity)
        recorded = Recorded({}, {}, None, None)
        for number, row in enumerate(rows, start=1):
            if row.event_id != number:
                raise StorageError(f"the log's events skip from event {number - 1} to {row.event_id}")
            if row.previous_hash != previous:
                raise StorageError(f"event {row.event_id} does not link to the event before it")
            if event_hash(row.event_id, row.kind, row.name, row.value, row.at_us, row.previous_hash) != row.event_hash:
                raise StorageError(f"event {row.event_id} ({row.kind} {row.name}) was changed after it was written "
                                   "(its hash does not match its contents)")
            recorded.apply(row.kind, row.name, row.value, number)
            previous = row.event_hash
        self._check_head("event", head, len(rows), previous)
        for name in CREDENTIALS:
            if stored.get(f"{name}_token_hash") != recorded.tokens.pop(name, None):
                raise StorageError(f"the {name}'s token hash is not the one its events gave it: the table 'meta' was "
                                   f"changed (--reissue {name} gives it one the chain records)")
        for name in sorted(set(team_rows) | set(recorded.tokens)):
            if team_rows.get(name) != recorded.tokens.get(name):
                change = ("was added without an event" if name not in recorded.tokens else
                          "was removed" if name not in team_rows else "has a token hash no event gave it")
                raise StorageError(f"team {name!r} {change}: the table 'teams' was changed")
        chosen: dict[str, set[int]] = {}
        for team, submission_id in chosen_rows:
            chosen.setdefault(team, set()).add(int(submission_id))
        for team in sorted(set(chosen) | set(recorded.selections)):
            if chosen.get(team, set()) != recorded.selections.get(team, set()):
                raise StorageError(f"team {team!r} has the selections {sorted(chosen.get(team, set()))}, but its "
                                   f"events select {sorted(recorded.selections.get(team, set()))}: the table "
                                   "'selections' was changed")
        if stored.get("closed_at") != recorded.closed_at:
            raise StorageError(f"the log's closing time is {stored.get('closed_at')!r}, but its events close it at "
                               f"{recorded.closed_at!r}: the table 'meta' was changed")
        return recorded

    def events_migrated_from(self) -> str | None:
        """The schema version a log's events began from by a migration (None: with the log, or no events)."""
        with self.reading() as connection:
            return connection.execute(sa.select(events.c.value).where(events.c.kind == MIGRATED)).scalar()

    @contextmanager
    def readable(self) -> Iterator[None]:
        """Turn what a damaged database raises (a file that is not a database, a table dropped, a
        column of another type, an unreadable stored value) into one :class:`StorageError` line."""
        try:
            yield
        except StorageError:
            raise
        except sa.exc.DBAPIError as error:
            detail = str(error.orig).splitlines()[0] if error.orig is not None else type(error).__name__
            raise StorageError(f"the database cannot be read as a ladderlab log ({detail}): restore it from a "
                               "backup") from None
        except (sa.exc.NoResultFound, sa.exc.MultipleResultsFound, sa.exc.StatementError, ValueError, TypeError,
                KeyError, zlib.error) as error:
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise StorageError(f"the log holds a value it could not have written ({type(error).__name__}: "
                               f"{detail[:200]}): restore it from a backup") from None


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
