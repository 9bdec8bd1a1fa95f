"""The actions the log records between submissions (registrations, selections, the close): chained
with the submissions, replayed by ``ladderlab serve verify`` under the service's own rules, so that
a log changed outside the service, or one holding an action the service would have refused, is
found and named; the close waits for the submissions in progress; a log of schema 3 gets its
earlier selections and close recorded. SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import sqlalchemy as sa

from ladderlab.cli.commands import main
from ladderlab.serve.events import verify_events
from ladderlab.serve.storage import StorageError, events, meta, selections, submissions
from tests.serve_helpers import ThreadServer, open_service, request, upload, write_challenge

SECRET = 1234
INVITE = "open-sesame-42"


def _challenge_with_a_life(tmp_path, database):
    """A challenge lived through: a registration, uploads, selections and an unselection, the close."""
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 2",
                           extra=f'[registration]\ninvite = "{INVITE}"\n')
    (tmp_path / "state").mkdir(exist_ok=True)
    (tmp_path / "state" / "secret").write_text(f"{SECRET}\n")
    service, tokens = open_service(path, database, SECRET)
    token = service.register("Newcomer", INVITE, "192.0.2.1")
    with ThreadServer(service) as server:
        for team_token in (tokens["alpha"], token, token):
            assert upload(server.url, team_token, np.random.default_rng(len(team_token)).random((1, 200)) > .5)[0] == 201
        for submission, method in ((2, "PUT"), (3, "PUT"), (2, "DELETE"), (2, "PUT")):
            assert request(server.url, token, method, f"/api/submissions/{submission}/selection")[0] == 200
        assert request(server.url, token, "PUT", "/api/submissions/1/selection")[0] == 404, "alpha's"
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        assert request(server.url, token, "DELETE", "/api/submissions/2/selection")[2]["reason"] == "closed"
    return path, service, ["serve", "verify", str(path), "--state", str(tmp_path / "state"), "--database", database]


def test_verify_replays_the_recorded_actions_and_names_the_first_that_breaks_the_rules(tmp_path, database, capsys):
    path, service, verify = _challenge_with_a_life(tmp_path, database)
    kinds = [(event.kind, event.team, event.submission_id, event.after_submission) for event in service.storage.events()]
    assert kinds == [("register", "Newcomer", None, 0), ("select", "Newcomer", 2, 3), ("select", "Newcomer", 3, 3),
                     ("unselect", "Newcomer", 2, 3), ("select", "Newcomer", 2, 3), ("close", None, None, 3)]
    assert main(verify) == 0
    out = capsys.readouterr().out
    assert (": 3 submissions of 2 mechanism state(s) and 1 registration, 3 selections, 1 unselection, the close at "
            in out) and "every recorded action keeps the rules; its head is 3:" in out
    head = out.split("its head is ")[1].split()[0]
    assert head == "{}:{}".format(*service.storage.chain_head()) == f"3:{service.storage.events()[-1].event_hash}"
    assert main([*verify, "--anchor", head]) == 0
    capsys.readouterr()

    storage = service.storage
    with storage.transaction() as connection:  # a forged selection, consistent with its chain and table
        storage.append_event(connection, "select", 0, "alpha", 2)
        connection.execute(selections.insert().values(team="alpha", submission_id=2))
    assert main(verify) == 1
    assert ("event 7 (select alpha's submission 2) breaks the rules: the challenge closed at"
            in capsys.readouterr().err)
    with storage.transaction() as connection:
        connection.execute(events.delete().where(events.c.event_id == 7))
        connection.execute(selections.delete().where(selections.c.team == "alpha"))
        connection.execute(sa.text("UPDATE chain SET last_hash = :hash"), {"hash": storage.events(connection)[-1].event_hash})
    assert main(verify) == 0 and main([*verify, "--anchor", head]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("change", ["selections", "closed_at", "event", "register", "after-close"])
def test_a_log_changed_outside_the_service_does_not_verify(tmp_path, database, capsys, change):
    _, service, verify = _challenge_with_a_life(tmp_path, database)
    storage = service.storage
    with storage.transaction() as connection:
        if change == "selections":
            connection.execute(selections.delete().where(selections.c.submission_id == 3))
        elif change == "closed_at":
            connection.execute(meta.update().where(meta.c.key == "closed_at").values(value="2020-01-01T00:00:00+00:00"))
        elif change == "event":
            connection.execute(events.update().where(events.c.event_id == 4).values(kind="select"))
        elif change == "register":  # a consistent chain, but a name taken (case aside): the rules refuse it
            connection.execute(events.delete().where(events.c.kind == "close"))
            last = connection.execute(sa.select(events.c.event_hash).where(events.c.event_id == 5)).scalar_one()
            connection.execute(sa.text("UPDATE chain SET last_hash = :hash"), {"hash": last})
            storage.append_event(connection, "register", 0, "ALPHA")
        else:  # a submission slipped in after the close, its chain consistent
            entry = storage.entries(connection)[0]
            row = {**entry.__dict__, "team_sequence": 2, "idempotency_key": None}
            for key in ("submission_id", "previous_hash", "entry_hash", "links"):
                row.pop(key)
            storage.append(connection, [row])
    expected = {
        "selections": "the log's selections table gives team Newcomer the submissions [2], its events [2, 3]: it was "
                      "changed outside the service",
        "closed_at": "the log's closing time is 2020-01-01T00:00:00+00:00, its events close it at",
        "event": "event 4 (select) was changed after it was written",
        "register": "event 6 (register ALPHA) breaks the rules: team name 'ALPHA' is taken (as 'alpha'",
        "after-close": "submission 4 was logged after the close (event 6)",
    }[change]
    assert main(verify) == 1
    assert expected in capsys.readouterr().err
    with pytest.raises(StorageError, match="breaks|changed|logged after|closing time|selections table"):
        open_service(service.challenge.path, database, SECRET)


def test_the_close_waits_for_the_submissions_in_progress(tmp_path, database):
    """Four teams upload as fast as they can while the organiser closes: every upload answered 201 is
    logged before the close, every later one is refused, and the log verifies (its events' rules
    include: no submission after the close)."""
    path = write_challenge(tmp_path, n=200, rules="per_day = 100000", limits="uploads_per_second = 1000\nburst = 1000")
    service, tokens = open_service(path, database, SECRET)
    accepted: dict[str, list[int]] = {team: [] for team in ("alpha", "beta", "gamma", "delta")}
    with ThreadServer(service) as server:
        def keep_uploading(team: str) -> None:
            rng = np.random.default_rng(len(team))
            while True:
                status, answer = upload(server.url, tokens[team], rng.random((1, 200)) > .5)
                if status != 201:
                    assert answer["reason"] == "closed"
                    return
                accepted[team].append(answer["submissions"][0]["submission_id"])

        threads = [threading.Thread(target=keep_uploading, args=(team,)) for team in accepted]
        for thread in threads:
            thread.start()
        while len(service.storage.entries()) < 8:
            pass
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        for thread in threads:
            thread.join(60)
    entries, recorded = service.storage.verified_log(service.challenge.identity())
    [close] = recorded
    assert close.after_submission == len(entries) == sum(map(len, accepted.values()))
    verify_events(service.challenge, entries, recorded, service.storage.selected(),
                  service.storage.meta_value("closed_at"))


def test_a_log_of_schema_3_gets_its_selections_and_close_recorded(tmp_path, database):
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 2")
    service, tokens = open_service(path, database, SECRET)
    with ThreadServer(service) as server:
        for team in ("alpha", "beta"):
            upload(server.url, tokens[team], np.zeros((2, 200)))
    storage = service.storage
    with storage.transaction() as connection:  # what schema 3 left: selections and the close out of the chain
        connection.execute(selections.insert(), [{"team": "alpha", "submission_id": 2},
                                                 {"team": "beta", "submission_id": 3}])
        connection.execute(meta.insert().values(key="closed_at", value="2026-01-02T03:04:05+00:00"))
        connection.execute(meta.update().where(meta.c.key == "schema_version").values(value="3"))
    with storage.engine.begin() as connection:
        for table in ("events", "sessions", "address_buckets"):
            connection.exec_driver_sql(f"DROP TABLE {table}")
    assert storage.verify_chain(service.challenge.identity()), "schema 3 as it was written"
    storage.close()
    reopened, _ = open_service(path, database, SECRET)
    recorded = [(event.kind, event.team, event.submission_id) for event in reopened.storage.events()]
    assert recorded == [("select", "alpha", 2), ("select", "beta", 3), ("close", None, None)]
    assert reopened.storage.events()[-1].at_us == 1767323045 * 10**6
    assert reopened.replay_log()[2].text() == "2 selections, the close at 2026-01-02T03:04:05Z"
    with reopened.storage.reading() as connection:
        assert connection.execute(sa.select(sa.func.count()).select_from(submissions)).scalar_one() == 4
