"""Signing in on the page, over HTTP against a running server: the session cookie's attributes, no
token in any URL or page after signing in, state-changing requests refused without the session or
without the page's own form field (changing nothing), signing out, a reissued token and the expiry
ending a session. The sessions live in the log's database: SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from ladderlab.serve.security import token_hash
from ladderlab.serve.sessions import SESSION_SECONDS
from ladderlab.serve.storage import sqlite_url
from tests.serve_helpers import (
    Browser,
    ThreadServer,
    open_service,
    page_request,
    request,
    set_cookies,
    sign_in,
    upload,
    write_challenge,
)

SESSION, FORM = "ladderlab-session-test", "ladderlab-form-test"


def _attributes(header: str) -> dict[str, str]:
    parts = [part.strip() for part in header.split(";")]
    return {key.lower(): value for key, _, value in (part.partition("=") for part in parts[1:])}


def test_signing_in_sets_httponly_strict_cookies_that_are_not_the_token_and_no_page_holds_the_token(
        tmp_path, database):
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nselection = 1")
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        upload(server.url, tokens["alpha"], np.zeros((1, 200)))
        pages = []
        for who, home in (("alpha", "team"), ("organiser", "organiser")):
            browser = Browser(server.url)
            status, headers, _ = browser.get("/")
            [form_cookie] = set_cookies(headers)
            status, headers, body = browser.post("/login", {"token": tokens[who]})
            assert status == 303 and dict(headers)["location"] == home
            [session] = set_cookies(headers)
            for cookie, name, max_age in ((form_cookie, FORM, None), (session, SESSION, str(SESSION_SECONDS))):
                attributes = _attributes(cookie)
                assert cookie.startswith(f"{name}=") and len(cookie.split(";")[0]) == len(name) + 44
                assert tokens[who] not in cookie and "httponly" in attributes
                assert attributes["samesite"].lower() == "strict" and attributes["path"] == "/"
                assert attributes.get("max-age") == max_age, "the form cookie lasts as long as the browser's session"
                assert "secure" not in attributes, "plain HTTP (loopback): a Secure cookie would not be sent back"
            pages.append(body + str(headers).encode())
            for page in ("/", f"/{home}", "/register", "/api/organiser/final" if who == "organiser" else "/team"):
                status, headers, body = browser.get(page)
                assert status in (200, 409), (page, status)
                pages.append(body + str(headers).encode())
            status, headers, body = browser.get(f"/{home}")
            assert (status, dict(headers)["cache-control"]) == (200, "no-store")
            assert b"Signed in as " + who.encode() in body
    for body in pages:
        assert not any(token.encode() in body for token in tokens.values())


def _state(service) -> tuple:
    return (len(service.storage.entries()), service.storage.selected(), service.closed_at(),
            service.storage.meta_value("invite_code_hash"), len(service.storage.events()))


def test_a_state_changing_request_without_the_session_or_the_page_s_form_field_is_refused_and_changes_nothing(
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
                 ("/public-linked", {"linked": "merge"}, organiser),
                 ("/invite", {"action": "set", "code": "a-new-code-123"}, organiser),
                 ("/logout", {}, team)]
        other = Browser(url)
        foreign = other.csrf()  # the field of another browser's page: an attacker's own
        for path_, fields, browser in forms:
            session = f"{SESSION}={browser.cookies[SESSION]}"
            for cookie, field in ((browser.cookie(), None), (browser.cookie(), foreign), (browser.cookie(), "0" * 64),
                                  (session, browser.csrf()), (f"{session}; {FORM}={other.cookies[FORM]}", None)):
                sent = {**fields, **({} if field is None else {"csrf": field})}
                status, _, body = page_request(url, "POST", path_, sent, cookie)
                assert status == 403 and b"must be sent from the leaderboard&#39;s own page" in body, (path_, cookie)
            if path_ != "/logout":
                status, _, body = Browser(url).post(path_, fields)
                assert status == 401 and b"sign in with" in body, path_
        status, _, _ = page_request(url, "POST", "/register", {"team": "mallory", "invite": "open-sesame-42"})
        assert status == 403
        status, _, _ = page_request(url, "POST", "/login", {"token": tokens["alpha"], "csrf": foreign},
                                    f"{FORM}=forged")
        assert status == 403, "signing in from another site's form (login CSRF) is refused"
        assert team.post("/close", {"confirm": "yes"})[0] == 401, "a team's session is not the organiser's"
        assert organiser.post("/select", {"submission_id": "1", "selected": "yes"})[0] == 401, "nor the reverse"
        assert _state(service) == before and service.team_names() == ["alpha", "beta", "gamma", "delta"]
        assert team.post("/select", {"submission_id": "1", "selected": "yes"})[0] == 200
        assert service.storage.selected() == {"alpha": {1}}


def test_an_upload_without_the_form_cookie_is_refused_before_its_body_is_read(tmp_path):
    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        team = sign_in(server.url, tokens["alpha"])
        status, _, body = page_request(server.url, "POST", "/upload", None, f"{SESSION}={team.cookies[SESSION]}",
                                       {"Content-Type": "multipart/form-data; boundary=b", "Content-Length": "1000000"})
    assert status == 403 and b"own page" in body, "answered at once: a body that is never sent was not waited for"
    assert service.storage.entries() == []


def test_signing_out_clears_the_cookie_and_ends_the_session_and_a_reissued_token_ends_its_sessions(
        tmp_path, database):
    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        url = server.url
        first, second = sign_in(url, tokens["alpha"]), sign_in(url, tokens["alpha"])
        ended = first.cookies[SESSION]
        status, headers, body = first.post("/logout", {})
        [cleared] = set_cookies(headers)
        assert status == 200 and cleared.startswith(f'{SESSION}=""') and _attributes(cleared)["max-age"] == "0"
        assert SESSION not in first.cookies
        assert page_request(url, "GET", "/team", cookie=f"{SESSION}={ended}")[0] == 401, "the session is gone"
        assert second.get("/team")[0] == 200, "another browser's is not"
        service.reissue("alpha")
        service._hashes_read = -np.inf  # the server's hashes are read again every few seconds: now
        assert second.get("/team")[0] == 401
        assert Browser(url).post("/login", {"token": tokens["alpha"]})[0] == 401
    assert service.storage.session(token_hash(ended)) is None, "deleted on the server, not only cleared"


def test_a_session_expires(tmp_path):
    from ladderlab.serve.sessions import sign_in as start
    from ladderlab.serve.sessions import signed_in

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


def test_the_organiser_s_downloads_take_the_session_but_no_team_s(tmp_path):
    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        url = server.url
        request(url, tokens["organiser"], "POST", "/api/organiser/close")
        organiser, team = sign_in(url, tokens["organiser"]), sign_in(url, tokens["alpha"])
        assert organiser.get("/api/organiser/export")[0] == 200
        assert team.get("/api/organiser/export")[0] == 401
        assert Browser(url).get("/api/organiser/export")[0] == 401
        assert request(url, tokens["alpha"], "GET", "/api/organiser/export")[0] == 401


def test_the_serve_page_states_how_long_a_session_lasts():
    from tests.docs_helpers import ROOT

    assert SESSION_SECONDS == 12 * 3600
    assert "A session lasts half a day (`ladderlab.serve.sessions.SESSION_SECONDS`)" in " ".join(
        (ROOT / "docs" / "serve.md").read_text().split())
