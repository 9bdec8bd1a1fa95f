"""Signing in on the page, over HTTP against a running server: the session cookie's attributes, no
token in any URL or page after signing in, state-changing requests refused without the session or
from another origin (changing nothing), signing out, and a reissued token ending its sessions.
The sessions live in the log's database: SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from ladderlab.serve.sessions import SESSION_SECONDS, check_same_origin
from ladderlab.serve.service import ServiceError
from tests.serve_helpers import (
    ThreadServer,
    open_service,
    page_request,
    request,
    set_cookies,
    sign_in,
    upload,
    write_challenge,
)

NAME = "ladderlab-session-test"


def _attributes(header: str) -> dict[str, str]:
    parts = [part.strip() for part in header.split(";")]
    return {key.lower(): value for key, _, value in (part.partition("=") for part in parts[1:])}


def test_signing_in_sets_an_httponly_strict_cookie_that_is_not_the_token_and_no_page_holds_the_token(
        tmp_path, database):
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 1")
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        upload(server.url, tokens["alpha"], np.zeros((1, 200)))
        pages = []
        for who, home in (("alpha", "team"), ("organiser", "organiser")):
            status, headers, body = page_request(server.url, "POST", "/login", {"token": tokens[who]})
            assert status == 303 and dict(headers)["location"] == home
            [cookie] = set_cookies(headers)
            name, _, value = cookie.split(";")[0].partition("=")
            attributes = _attributes(cookie)
            assert name == NAME and len(value) == 43 and value != tokens[who] and tokens[who] not in cookie
            assert "httponly" in attributes and attributes["samesite"].lower() == "strict"
            assert attributes["path"] == "/" and attributes["max-age"] == str(SESSION_SECONDS)
            assert "secure" not in attributes, "plain HTTP (loopback): a Secure cookie would not be sent back"
            pages.append(body)
            for page in ("/", f"/{home}", "/register", "/api/organiser/final" if who == "organiser" else "/team"):
                status, headers, body = page_request(server.url, "GET", page, cookie=f"{name}={value}", origin=None)
                assert status in (200, 409), (page, status)
                pages.append(body + str(headers).encode())
            status, headers, body = page_request(server.url, "GET", f"/{home}", cookie=f"{name}={value}", origin=None)
            assert (status, dict(headers)["cache-control"]) == (200, "no-store")
            assert b"Signed in as " + who.encode() in body
    for body in pages:
        assert not any(token.encode() in body for token in tokens.values())


def _state(service) -> tuple:
    return (len(service.storage.entries()), service.storage.selected(), service.closed_at(),
            service.storage.meta_value("invite_code_hash"))


def test_a_state_changing_request_without_the_session_or_from_another_origin_is_refused_and_changes_nothing(
        tmp_path, database):
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 1",
                           extra='[registration]\ninvite = "open-sesame-42"\n')
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        url = server.url
        upload(url, tokens["alpha"], np.zeros((1, 200)))
        team, organiser = sign_in(url, tokens["alpha"]), sign_in(url, tokens["organiser"])
        before = _state(service)
        forms = [("/select", {"submission_id": "1", "selected": "yes"}, team),
                 ("/close", {"confirm": "yes"}, organiser),
                 ("/invite", {"action": "set", "code": "a-new-code-123"}, organiser),
                 ("/logout", {}, team)]
        for path_, fields, cookie in forms:
            for origin in (None, "https://evil.example", "null", url.replace("127.0.0.1", "localhost")):
                status, _, body = page_request(url, "POST", path_, fields, cookie=cookie, origin=origin)
                assert status == 403 and b"must be sent from the leaderboard&#39;s own page" in body, (path_, origin)
            if path_ != "/logout":
                status, _, body = page_request(url, "POST", path_, fields)
                assert status == 401 and b"sign in with" in body, path_
        status, _, _ = page_request(url, "POST", "/register", {"team": "mallory", "invite": "open-sesame-42"},
                                    origin="https://evil.example")
        assert status == 403
        status, _, _ = page_request(url, "POST", "/login", {"token": tokens["alpha"]}, origin="https://evil.example")
        assert status == 403, "signing in from another site (login CSRF) is refused"
        status, _, _ = page_request(url, "POST", "/close", {"confirm": "yes"}, cookie=team)
        assert status == 401, "a team's session is not the organiser's"
        status, _, _ = page_request(url, "POST", "/select", {"submission_id": "1", "selected": "yes"},
                                    cookie=organiser)
        assert status == 401, "nor the organiser's a team's"
        assert _state(service) == before and service.team_names() == ["alpha", "beta", "gamma", "delta"]
        status, _, _ = page_request(url, "POST", "/select", {"submission_id": "1", "selected": "yes"}, cookie=team,
                                    origin=None, headers={"Referer": url + "/team"})
        assert status == 200, "a browser that sends no Origin but its Referer"
        assert service.storage.selected() == {"alpha": {1}}


def test_signing_out_clears_the_cookie_and_ends_the_session_and_a_reissued_token_ends_its_sessions(
        tmp_path, database):
    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        url = server.url
        first, second = sign_in(url, tokens["alpha"]), sign_in(url, tokens["alpha"])
        status, headers, body = page_request(url, "POST", "/logout", {}, cookie=first)
        [cleared] = set_cookies(headers)
        assert status == 200 and cleared.startswith(f'{NAME}=""') and _attributes(cleared)["max-age"] == "0"
        assert page_request(url, "GET", "/team", cookie=first, origin=None)[0] == 401, "the session is gone"
        assert page_request(url, "GET", "/team", cookie=second, origin=None)[0] == 200, "another browser's is not"
        service.reissue("alpha")
        service._hashes_read = -np.inf  # the server's hashes are read again every few seconds: now
        assert page_request(url, "GET", "/team", cookie=second, origin=None)[0] == 401
        assert page_request(url, "POST", "/login", {"token": tokens["alpha"]})[0] == 401
    from ladderlab.serve.security import token_hash

    assert service.storage.session(token_hash(first.partition("=")[2])) is None, "deleted on the server, not only cleared"
    assert service.storage.session(token_hash(second.partition("=")[2]))[0] == "alpha"


def test_a_session_expires(tmp_path):
    from ladderlab.serve.sessions import sign_in as start, signed_in
    from ladderlab.serve.storage import sqlite_url

    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    service.clock = lambda: now
    cookie, who = start(service, tokens["organiser"])
    assert who == "organiser" and signed_in(service, cookie) == "organiser"
    now += timedelta(seconds=SESSION_SECONDS - 1)
    assert signed_in(service, cookie) == "organiser"
    now += timedelta(seconds=1)
    assert signed_in(service, cookie) is None
    assert signed_in(service, cookie + "x") is None and signed_in(service, "") is None


@pytest.mark.parametrize(("headers", "allowed"), [
    ({"host": "board.example:8443", "origin": "https://board.example:8443"}, True),
    ({"host": "Board.Example", "origin": "https://board.example"}, True),
    ({"host": "board.example", "referer": "https://board.example/team"}, True),
    ({"host": "board.example", "origin": "https://board.example.evil.example"}, False),
    ({"host": "board.example", "origin": "https://board.example:444"}, False),
    ({"host": "board.example", "referer": "https://evil.example/?https://board.example"}, False),
    ({"host": "board.example"}, False),
])
def test_the_origin_check_compares_the_host_exactly(headers, allowed):
    if allowed:
        check_same_origin(headers)
    else:
        with pytest.raises(ServiceError, match="own page"):
            check_same_origin(headers)


def test_the_organiser_s_downloads_take_the_session_but_no_team_s(tmp_path):
    from ladderlab.serve.storage import sqlite_url

    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        url = server.url
        request(url, tokens["organiser"], "POST", "/api/organiser/close")
        organiser, team = sign_in(url, tokens["organiser"]), sign_in(url, tokens["alpha"])
        assert page_request(url, "GET", "/api/organiser/export", cookie=organiser, origin=None)[0] == 200
        assert page_request(url, "GET", "/api/organiser/export", cookie=team, origin=None)[0] == 401
        assert page_request(url, "GET", "/api/organiser/export", origin=None)[0] == 401
        assert request(url, tokens["alpha"], "GET", "/api/organiser/export")[0] == 401
