"""Self-registration with the organiser's invite code, over HTTP: a new team's token shown once,
refused without the code, rate-limited by address, names validated in one line, the most teams, the
close, the organiser's own code; registered teams across restarts, a second server process and the
link rule. SQLite and PostgreSQL (the teams, the events and the address buckets are in the log)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ladderlab.serve.security import token_hash
from ladderlab.serve.storage import StorageError, sqlite_url
from tests.serve_helpers import (
    Browser,
    ThreadServer,
    open_service,
    page_request,
    request,
    sign_in,
    upload,
    write_challenge,
)

INVITE = "open-sesame-42"


def _registration(extra: str = "") -> str:
    return f'[registration]\ninvite = "{INVITE}"\n{extra}'


def _register(url: str, team: str, invite: str = INVITE) -> tuple[int, dict]:
    status, _, answer = request(url, "", "POST", "/api/register", json.dumps({"team": team, "invite": invite}).encode(),
                                {"Content-Type": "application/json"})
    return status, answer


def test_a_team_registers_with_the_code_and_its_token_submits(tmp_path, database):
    path = write_challenge(tmp_path, n=200, extra=_registration())
    service, _ = open_service(path, database)
    with ThreadServer(service) as server:
        status, answer = _register(server.url, "New Team")
        assert status == 201 and answer["team"] == "New Team" and answer["token"].startswith("ll_")
        assert upload(server.url, answer["token"], np.zeros((1, 200)))[0] == 201
        assert request(server.url, answer["token"], "GET", "/api/me")[2]["team"] == "New Team"
        board = request(server.url, "", "GET", "/api/leaderboard")[2]["teams"]
    assert [row["team"] for row in board] == ["New Team"]
    assert service.team_names() == ["alpha", "beta", "gamma", "delta", "New Team"]
    event = service.storage.events()[-1]
    assert (event.kind, event.name, event.value) == ("register", "New Team", token_hash(answer["token"]))


@pytest.mark.parametrize(("team", "invite", "status", "words"), [
    ("mallory", "", 403, "wrong invite code"),
    ("mallory", "open-sesame-43", 403, "wrong invite code"),
    (" spaced", INVITE, 422, "team name ' spaced': use 1 to 64 letters, digits, spaces"),
    ("a" * 65, INVITE, 422, "use 1 to 64 letters"),
    ("<script>", INVITE, 422, "team name '<script>'"),
    ("Organiser", INVITE, 422, "is the organiser's name"),
    ("ALPHA", INVITE, 409, "team name 'ALPHA' is taken (as 'alpha'; names are compared ignoring case)"),
])
def test_a_registration_is_refused_in_one_line_and_adds_nothing(tmp_path, team, invite, status, words):
    path = write_challenge(tmp_path, n=200, extra=_registration())
    service, _ = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        answered, answer = _register(server.url, team, invite)
    assert answered == status and words in answer["error"] and "\n" not in answer["error"]
    assert service.storage.registered_teams() == []
    assert set(service.storage.team_hashes()) == {"alpha", "beta", "gamma", "delta"}


def test_registrations_are_rate_limited_by_address_refused_or_not_and_bounded_in_number(tmp_path, database):
    path = write_challenge(tmp_path, n=200, extra=_registration("max_teams = 2\nattempts_per_hour = 4"))
    service, _ = open_service(path, database)
    with ThreadServer(service) as server:
        answers = [_register(server.url, "guess", f"wrong-code-{i}") for i in range(2)]
        answers += [_register(server.url, name) for name in ("first", "second", "third")]
    assert [status for status, _ in answers] == [403, 403, 201, 201, 429]
    assert answers[-1][1]["reason"] == "rate" and "at most 4 an hour" in answers[-1][1]["error"]
    service.storage.set_meta("invite_code_hash", "")  # nothing else: the bucket refills for another address
    with service.storage.transaction() as connection:
        assert service.storage.take_attempt(connection, "192.0.2.1", 0, 4 / 3600, 4) == 0
    service.set_invite(INVITE)
    with pytest.raises(Exception, match="2 teams have registered, the most this challenge allows"):
        service.register("third", INVITE, "192.0.2.2")


def test_the_organiser_sets_or_stops_the_invite_code_and_the_close_ends_registration(tmp_path):
    path = write_challenge(tmp_path, n=200, extra=_registration())
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        url = server.url
        organiser = sign_in(url, tokens["organiser"])
        status, _, page = organiser.post("/invite", {"action": "set", "code": ""})
        code = re.search(rb'id="invite-code">([^<]+)<', page).group(1).decode()
        assert status == 200 and len(code) == 16
        assert _register(url, "late", INVITE)[1]["error"] == "wrong invite code", "the file's code no longer works"
        assert _register(url, "late", code)[0] == 201
        assert b"id=\"invite-code\"" not in organiser.get("/organiser")[2]
        status, _, page = organiser.post("/invite", {"action": "set", "code": "short"})
        assert status == 422 and b"an invite code has 8 to 128 characters" in page
        organiser.post("/invite", {"action": "stop"})
        assert _register(url, "later", code)[1]["reason"] == "registration-closed"
        assert b"register-link" not in page_request(url, "GET", "/")[2]
        service.set_invite(code)
        assert b"register-link" in page_request(url, "GET", "/")[2]
        request(url, tokens["organiser"], "POST", "/api/organiser/close")
        assert _register(url, "after", code)[1]["reason"] == "closed"
        status, _, page = page_request(url, "GET", "/register")
        assert b"The challenge is closed." in page


def test_a_challenge_without_registration_refuses_it(tmp_path):
    path = write_challenge(tmp_path, n=200)
    service, _ = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        status, answer = _register(server.url, "someone")
        assert (status, answer["reason"]) == (404, "no-registration")
        assert b"has no self-registration" in page_request(server.url, "GET", "/register")[2]


def test_the_page_shows_the_new_team_its_token_once_and_signs_it_in(tmp_path):
    path = write_challenge(tmp_path, n=200, extra=_registration())
    service, _ = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        browser = Browser(server.url)
        status, headers, page = browser.post("/register", {"team": "Page Team", "invite": INVITE})
        token = re.search(rb'id="token">([^<]+)<', page).group(1).decode()
        again = browser.get("/team")
    assert status == 201 and dict(headers)["cache-control"] == "no-store" and service.team_of(token) == "Page Team"
    assert again[0] == 200 and token.encode() not in again[2] and b"Signed in as Page Team" in again[2]


def test_a_registered_team_is_known_after_a_restart_and_a_file_team_cannot_take_its_name(tmp_path, database):
    path = write_challenge(tmp_path, n=200, extra=_registration())
    service, _ = open_service(path, database)
    token = service.register("Sybil", INVITE, "192.0.2.7")
    service.storage.close()
    reopened, issued = open_service(path, database)
    assert reopened.team_of(token) == "Sybil" and "Sybil" not in issued
    reopened.storage.close()
    path.write_text(path.read_text() + '\n[[teams]]\nname = "sybil"\n')
    with pytest.raises(StorageError, match="team 'sybil' of .* has the name of a team that registered itself"):
        open_service(path, database)


def test_under_the_link_rule_a_team_registered_with_another_server_process_links_and_replays(tmp_path, database):
    """Process A registers a team; process B, whose linker knows only the file's teams, gets its
    first upload (a copy of alpha's): B rebuilds its linked states with the new team, links the two,
    and a restart replays the same."""
    path = write_challenge(tmp_path, n=200, rules="per_day = 1000\ntotal = 3\naccounts = 2\nlink = true",
                           extra=_registration())
    first, tokens = open_service(path, database)
    second, _ = open_service(path, database)
    row = np.random.default_rng(2).integers(0, 2, 200).astype(float)[None]
    with ThreadServer(second) as server:
        assert upload(server.url, tokens["alpha"], row)[0] == 201
        token = first.register("Sybil", INVITE, "192.0.2.8")
        copied = [upload(server.url, token, row)[0] for _ in range(3)]
    assert copied == [201, 201, 429], "alpha and Sybil share one total cap of 3"
    links = second.links()["groups"]
    assert [group["teams"] for group in links] == [["Sybil", "alpha"]]
    reopened, _ = open_service(path, database)
    assert reopened.replay_log()[1] == 4 and reopened.links() == second.links()


def test_under_the_link_rule_a_team_a_platform_enrolled_links_and_replays(tmp_path):
    """A platform's scorer enrols its teams by name (``evalai:7``): the linker counts them among the
    accounts, as it counts the registered ones, live and on replay."""
    path = write_challenge(tmp_path, n=200, rules="per_day = 1000\ntotal = 3\naccounts = 2\nlink = true")
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url)
    row = np.random.default_rng(4).integers(0, 2, 200).astype(float)[None]
    service.submit("alpha", row)
    enrolled = service.scored_team(tokens["scorer"], None, "evalai:7")
    service.submit(enrolled, row)
    assert [group["teams"] for group in service.links()["groups"]] == [["alpha", "evalai:7"]]
    assert "evalai:7" in service.team_names()
    assert {row["team"]: row["source"] for row in service.overview()}["evalai:7"] == "platform"
    reopened, _ = open_service(path, url)
    assert reopened.replay_log()[1] == 2 and reopened.links() == service.links()
