"""The actions the events chain records (registrations, selections, the close and the head it
sealed), replayed by ``ladderlab serve verify`` under the service's own rules: a log whose chain
and tables agree but which holds an action the service would have refused is found and named;
the close waits for the submissions in progress. SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ladderlab.cli.commands import main
from ladderlab.serve.events import verify_actions
from ladderlab.serve.storage import StorageError, selections, teams
from tests.serve_helpers import (
    ThreadServer,
    open_service,
    request,
    upload,
    write_challenge,
    write_secret,
)

SECRET = 1234
INVITE = "open-sesame-42"


def _challenge_with_a_life(tmp_path, database):
    """A challenge lived through: a registration, uploads, selections and an unselection, the close."""
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 2",
                           extra=f'[registration]\ninvite = "{INVITE}"\n')
    (tmp_path / "state").mkdir(exist_ok=True)
    write_secret(tmp_path / "state" / "secret", SECRET)
    service, tokens = open_service(path, database, SECRET)
    token = service.register("Newcomer", INVITE, "192.0.2.1")
    with ThreadServer(service) as server:
        for team_token in (tokens["alpha"], token, token):
            rows = np.random.default_rng(len(team_token)).random((1, 200)) > .5
            assert upload(server.url, team_token, rows)[0] == 201
        for submission, method in ((2, "PUT"), (3, "PUT"), (2, "DELETE"), (2, "PUT")):
            assert request(server.url, token, method, f"/api/submissions/{submission}/selection")[0] == 200
        assert request(server.url, token, "PUT", "/api/submissions/1/selection")[0] == 404, "alpha's"
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        assert request(server.url, token, "DELETE", "/api/submissions/2/selection")[2]["reason"] == "closed"
    return service, ["serve", "verify", str(path), "--state", str(tmp_path / "state"), "--database", database]


def test_verify_replays_the_recorded_actions(tmp_path, database, capsys):
    service, verify = _challenge_with_a_life(tmp_path, database)
    actions = [(event.kind, event.name, event.value) for event in service.storage.events() if event.kind != "token"]
    head = "{}:{}".format(*service.storage.chain_head())
    assert actions == [("register", "Newcomer", service.storage.team_hashes()["Newcomer"]),
                       ("select", "Newcomer", "2"), ("select", "Newcomer", "3"), ("unselect", "Newcomer", "2"),
                       ("select", "Newcomer", "2"), ("close", "organiser", service.closed_at().isoformat()),
                       ("seal", "organiser", head)]
    assert main(verify) == 0
    out = capsys.readouterr().out
    assert (": 3 submissions of 2 mechanism state(s) and 1 registration, 3 selections, 1 unselection, the close at "
            in out) and f"every recorded action keeps the rules; its head is {head} " in out


def _forge(service, kind: str, name: str, value: str) -> None:
    """Append an event as the service would write it, the tables kept in agreement: a chain that verifies."""
    storage = service.storage
    with storage.transaction() as connection:
        storage._record(connection, [(kind, name, value)], 0)
        if kind == "select":
            connection.execute(selections.insert().values(team=name, submission_id=int(value)))
        elif kind == "register":
            connection.execute(teams.insert().values(name=name, token_hash=value))


@pytest.mark.parametrize(("forged", "words"), [
    (("select", "alpha", "3"), "(select alpha 3) breaks the rules: the challenge closed at"),
    (("register", "NEWCOMER", "0" * 64), f"(register NEWCOMER {'0' * 64}) breaks the rules: the challenge closed at"),
    ("after-close", "submission 4 was logged after the close, which sealed the log at submission 3"),
])
def test_an_action_the_service_would_refuse_does_not_verify(tmp_path, database, capsys, forged, words):
    service, verify = _challenge_with_a_life(tmp_path, database)
    storage = service.storage
    if forged == "after-close":
        with storage.transaction() as connection:  # a submission slipped in after the close, its chain consistent
            row = {**storage.entries(connection)[0].__dict__, "team_sequence": 2, "idempotency_key": None}
            for key in ("submission_id", "previous_hash", "entry_hash", "links"):
                row.pop(key)
            storage.append(connection, [row])
    else:
        _forge(service, *forged)
    assert main(verify) == 1
    assert words in capsys.readouterr().err
    with pytest.raises(StorageError, match="breaks the rules|logged after the close"):
        open_service(service.challenge.path, database, SECRET)


@pytest.mark.parametrize(("forged", "words"), [
    ([("select", "beta", "1")], "(select beta 1) breaks the rules: team beta has no submission 1"),
    ([("select", "alpha", "1"), ("select", "alpha", "2"), ("select", "alpha", "3")],
     "(select alpha 3) breaks the rules: a team selects at most 2 submissions; unselect one of [1, 2] first"),
    ([("register", "Alpha", "0" * 64)], "breaks the rules: team name 'Alpha' is taken (as 'alpha'"),
    ([("register", "no/slash", "0" * 64)], "breaks the rules: team name 'no/slash': use 1 to 64 letters"),
])
def test_a_selection_or_registration_against_the_rules_does_not_verify(tmp_path, forged, words):
    from ladderlab.serve.storage import sqlite_url

    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 2")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.zeros((3, 200)))[0] == 201
    for event in forged:
        _forge(service, *event)
    with pytest.raises(StorageError) as refused:
        service.replay_log()
    assert words in str(refused.value)


def test_the_close_waits_for_the_submissions_in_progress(tmp_path, database):
    """Four teams upload as fast as they can while the organiser closes: every upload answered 201 is
    logged before the close, every later one is refused, and the seal the close recorded is the
    head of the log, which verifies."""
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
    entries = service.storage.verify_chain(service.challenge.identity())
    [seal] = [event for event in service.storage.events() if event.kind == "seal"]
    assert seal.value == f"{len(entries)}:{entries[-1].entry_hash}" and len(entries) == sum(map(len, accepted.values()))
    assert verify_actions(service.challenge, entries, service.storage.events()).closed_at == service.closed_at()
