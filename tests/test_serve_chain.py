"""Every field the service acts on is in a hash chain, or derived from one (issue 45): a change made
behind the server to the day a submission counts on, a selection, a token hash, a team row or the
close is found by ``ladderlab serve verify`` in one line; a log written before the events chain
still verifies, says what its chain does not cover, and is migrated by the next start; a damaged
database is refused in one line, never a traceback."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
import sqlalchemy as sa

from ladderlab.cli.commands import main
from ladderlab.serve.security import new_token, token_hash
from ladderlab.serve.storage import chain, events, meta, selections, submissions, teams
from tests.serve_helpers import ThreadServer, open_service, request, upload, write_challenge, write_secret

SECRET = 1234


def _served(tmp_path, database: str, rules: str = "per_day = 2\ntotal = 100\nselection = 2"):
    """A challenge whose daily cap is 2, alpha's two submissions of today (one selected) over HTTP, and
    the verify command of its log."""
    path = write_challenge(tmp_path, rules=rules)
    (tmp_path / "state").mkdir()
    write_secret(tmp_path / "state" / "secret", SECRET)
    service, tokens = open_service(path, database, SECRET)
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.eye(2, service.challenge.ids.size))[0] == 201
        assert request(server.url, tokens["alpha"], "PUT", "/api/submissions/1/selection")[0] == 200
    verify = ["serve", "verify", str(path), "--state", str(tmp_path / "state"), "--database", database]
    return service, tokens, verify


def _refused(verify: list[str], capsys, *words: str, codes: tuple[int, ...] = (1,)) -> str:
    capsys.readouterr()
    assert main(verify) in codes
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith("ladderlab: error: "), error
    for word in words:
        assert word in error, error
    return error


TAMPERING = {
    "a submission moved to another day": (
        lambda c: c.execute(submissions.update().where(submissions.c.team == "alpha").values(utc_day="2026-11-28")),
        ("submission 1", "utc_day '2026-11-28'", "the row was changed")),
    "a selection added": (
        lambda c: c.execute(selections.insert().values(team="alpha", submission_id=2)),
        ("team 'alpha'", "selections [1, 2]", "events select [1]")),
    "a selection removed": (
        lambda c: c.execute(selections.delete()), ("team 'alpha'", "selections []", "events select [1]")),
    "a team's token hash changed": (
        lambda c: c.execute(teams.update().where(teams.c.name == "beta").values(token_hash=token_hash(new_token()))),
        ("team 'beta' has a token hash no event gave it",)),
    "a team row added": (
        lambda c: c.execute(teams.insert().values(name="mallory", token_hash=token_hash(new_token()))),
        ("team 'mallory' was added without an event",)),
    "the organiser's token hash changed": (
        lambda c: c.execute(meta.update().where(meta.c.key == "organiser_token_hash").values(value="0" * 64)),
        ("the organiser's token hash",)),
    "a close added": (
        lambda c: c.execute(meta.insert().values(key="closed_at", value="2026-01-01T00:00:00+00:00")),
        ("closing time", "'2026-01-01T00:00:00+00:00'", "None")),
    "an event changed": (
        lambda c: c.execute(events.update().where(events.c.kind == "select").values(value="2")),
        ("event", "was changed after it was written")),
    "the last event removed": (
        lambda c: c.execute(events.delete().where(events.c.kind == "select")),
        ("the chain's head names event", "entries were removed")),
    "a garbage chain head": (
        lambda c: c.execute(chain.update().where(chain.c.singleton == 1).values(last_hash="garbage")),
        ("the chain's head names submission 2 with the hash 'garbage'", "that submission's hash is")),
}


@pytest.mark.parametrize("change", sorted(TAMPERING))
def test_verify_finds_every_field_the_service_acts_on_changed_behind_it(tmp_path, database, capsys, change):
    service, _, verify = _served(tmp_path, database)
    assert main(verify) == 0
    tamper, words = TAMPERING[change]
    with service.storage.transaction() as connection:
        tamper(connection)
    _refused(verify, capsys, *words)
    service.storage.close()


def test_a_day_rewritten_behind_the_server_gives_no_cap_back(tmp_path, database):
    """The daily cap counts the submissions whose chained time falls on the day, not the column."""
    service, tokens, _ = _served(tmp_path, database)
    with service.storage.transaction() as connection:
        connection.execute(submissions.update().where(submissions.c.team == "alpha").values(utc_day="2026-11-28"))
    with ThreadServer(service) as server:
        mine = request(server.url, tokens["alpha"], "GET", "/api/me")[2]
        status, answer = upload(server.url, tokens["alpha"], np.zeros((1, service.challenge.ids.size)))
    assert mine["remaining_today"] == 0 and status == 429 and answer["reason"] == "cap"
    service.storage.close()


def test_selections_reissues_and_the_close_made_through_the_service_verify(tmp_path, database, capsys):
    service, tokens, verify = _served(tmp_path, database)
    with ThreadServer(service) as server:
        assert request(server.url, tokens["alpha"], "PUT", "/api/submissions/2/selection")[0] == 200
        assert request(server.url, tokens["alpha"], "DELETE", "/api/submissions/1/selection")[0] == 200
        assert request(server.url, tokens["alpha"], "DELETE", "/api/submissions/1/selection")[0] == 200
        service.reissue("beta"), service.reissue("organiser")
    service.close()
    with service.storage.reading() as connection:
        kinds = connection.execute(sa.select(events.c.kind).order_by(events.c.event_id)).scalars().all()
    # the organiser's, four teams' and the scorer's tokens, then what the service did
    assert kinds == ["token"] * 6 + ["select", "select", "unselect", "token", "token", "close", "seal"]
    capsys.readouterr()
    assert main(verify) == 0
    assert "warning" not in capsys.readouterr().err
    service.storage.close()


def _as_schema_3(connection) -> None:
    """The log as version 3 wrote it: no events, one head."""
    connection.execute(meta.update().where(meta.c.key == "schema_version").values(value="3"))
    connection.execute(events.delete())
    connection.execute(chain.delete().where(chain.c.singleton == 2))


def test_a_log_written_before_the_events_chain_verifies_says_so_and_is_migrated_by_the_next_start(
        tmp_path, database, capsys):
    service, _, verify = _served(tmp_path, database)
    with service.storage.transaction() as connection:
        _as_schema_3(connection)
    capsys.readouterr()
    assert main(verify) == 0
    warning = capsys.readouterr().err.strip()
    assert "\n" not in warning and "schema version 3" in warning and "start the server on it once" in warning
    path = service.challenge.path
    service.storage.close()
    reopened, _ = open_service(path, database, SECRET)
    assert main(verify) == 0
    assert "migrated from schema version 3" in capsys.readouterr().err
    with reopened.storage.transaction() as connection:  # from now on a selection changed behind it is found
        connection.execute(selections.delete())
    _refused(verify, capsys, "team 'alpha'", "selections []")
    reopened.storage.close()


SQLITE_DAMAGE = {
    "a file that is not a database": lambda path: path.write_bytes(b"not a database at all, " * 400),
    "a truncated database": lambda path: path.write_bytes(path.read_bytes()[: 3 * 4096 + 100]),
    "a dropped table": lambda path: _sqlite(path, "DROP TABLE predictions"),
    "an unreadable prediction": lambda path: _sqlite(path, "UPDATE predictions SET data = x'00ff00ff'"),
    "a prediction of another type": lambda path: _sqlite(path, """UPDATE predictions SET layout = '{"dtype": "object"}'"""),
    "a head that is not a number": lambda path: _sqlite(path, "UPDATE chain SET last_id = 'seven' WHERE singleton = 1"),
    "no head": lambda path: _sqlite(path, "DELETE FROM chain"),
}


def _sqlite(path, statement: str) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(statement)


@pytest.mark.parametrize("damage", sorted(SQLITE_DAMAGE))
def test_a_damaged_sqlite_log_is_refused_in_one_line(tmp_path, capsys, damage):
    from ladderlab.serve.storage import sqlite_url

    database = tmp_path / "log.sqlite"
    service, _, verify = _served(tmp_path, sqlite_url(database))
    service.storage.close()
    SQLITE_DAMAGE[damage](database)
    for leftover in (tmp_path / "log.sqlite-wal", tmp_path / "log.sqlite-shm"):
        leftover.unlink(missing_ok=True)
    _refused(verify, capsys, codes=(1, 2))  # 2: refused before the database is opened
    start = ["serve", str(service.challenge.path), "--uncertified", "--state", str(tmp_path / "state"), "--database",
             sqlite_url(database), "--port", "0"]
    capsys.readouterr()
    assert main(start) == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("ladderlab: error: ") and "nothing was served" in error, error
