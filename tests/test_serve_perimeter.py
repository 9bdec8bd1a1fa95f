"""The service's perimeter (issue 45): security headers on every answer, checked over HTTP and in
Chromium; one client address cannot hold the server's places with sockets that send half a request,
nor with requests without a token, while a team's requests get through; no token, wherever a client
puts it, reaches a line the server writes; a secret file others can read is warned about."""

from __future__ import annotations

import socket
import time
import urllib.parse

import numpy as np
import pytest

from ladderlab.serve.launch import ServerProcess
from ladderlab.serve.storage import sqlite_url
from tests.helpers import CHROMIUM, launch_chromium
from tests.serve_helpers import Browser, ThreadServer, open_service, request, sign_in, upload, write_challenge


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _is_closed(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except (TimeoutError, BlockingIOError):
        return False
    except OSError:
        return True


def test_every_answer_carries_the_security_headers_and_team_data_is_never_cached(tmp_path):
    path = write_challenge(tmp_path, rules="per_day = 5\nselection = 1")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    team = tokens["alpha"]
    n = service.challenge.ids.size
    with ThreadServer(service) as server:
        upload(server.url, team, np.zeros((1, n)))
        answers = {
            "page": request(server.url, "", "GET", "/"),
            "submissions": request(server.url, team, "GET", "/api/submissions"),
            "me": request(server.url, team, "GET", "/api/me"),
            "refused upload": request(server.url, team, "POST", "/api/submissions", b"x", {"Content-Type": "text/csv"}),
            "unknown token": request(server.url, "ll_wrong", "GET", "/api/me"),
            "leaderboard": request(server.url, "", "GET", "/api/leaderboard"),
            "challenge": request(server.url, "", "GET", "/api/challenge"),
            "sample": request(server.url, "", "GET", "/sample_submission.csv"),
            "no such page": request(server.url, "", "GET", "/nothing-here"),
            "my page": _as_request(sign_in(server.url, team).get("/team")),
        }
        style = request(server.url, "", "GET", "/static/ladderlab.css")
    for name, (status, headers, _) in answers.items():
        policy = headers.get("content-security-policy", "")
        directives = dict((part.strip().split(" ", 1) + [""])[:2] for part in policy.split(";"))
        assert directives.get("frame-ancestors") == "'none'" and directives.get("default-src") == "'none'", name
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy and "*" not in policy, name
        assert headers.get("x-content-type-options") == "nosniff", name
        assert headers.get("referrer-policy") == "no-referrer", name
        assert headers.get("cache-control") == "no-store", name
    assert "<style" not in answers["page"][2].decode() and "<script" not in answers["page"][2].decode()
    assert "style=" not in answers["page"][2].decode() and "style=" not in answers["my page"][2].decode()
    assert style[0] == 200 and style[1]["content-type"].startswith("text/css") and "no-store" not in style[1]["cache-control"]
    service.storage.close()


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_in_chromium_the_page_is_styled_breaks_no_policy_and_refuses_to_be_framed(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = write_challenge(tmp_path, n=200)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    problems: list[str] = []
    with ThreadServer(service) as server, sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page()
        page.on("console", lambda message: problems.append(message.text))
        page.on("pageerror", lambda error: problems.append(str(error)))
        for address in ("/", "/team"):
            if address == "/":
                page.goto(server.url + address)
            else:
                page.fill("#login input[name=token]", tokens["alpha"])
                page.click("#login button")
                page.wait_for_selector("#upload")
            background = page.eval_on_selector("form, p", "element => getComputedStyle(document.body).maxWidth")
            assert background == "960px", f"the style sheet applies on {address}"
        framing = browser.new_page()
        framed: list[str] = []
        framing.on("console", lambda message: framed.append(message.text))
        framing.set_content(f'<iframe id="board" src="{server.url}/" width="600" height="400"></iframe>')
        framing.wait_for_timeout(1500)
        inner = framing.frames[1].evaluate("document.body ? document.body.innerText : ''") if len(framing.frames) > 1 else ""
        browser.close()
    assert problems == [], problems
    assert "Public leaderboard" not in inner, "the page was shown inside another site's frame"
    service.storage.close()


PARTIAL = b"GET /api/leaderboard HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Waiting: "


@pytest.mark.slow
def test_sockets_of_half_a_request_from_one_address_cannot_keep_a_team_out(tmp_path):
    """One client opened partial-header sockets on all 72 places and every team got 503 until they
    timed out. Now one address holds at most --per-address such sockets: the next closes its oldest."""
    path = write_challenge(tmp_path)
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state"), "--quiet-access",
                       "--max-connections", "24", "--header-timeout", "30") as server:
        held = []
        for _ in range(72):
            sock = _connect(server.url)
            sock.sendall(PARTIAL)
            held.append(sock)
        time.sleep(0.5)
        started = time.monotonic()
        status, answer = upload(server.url, server.tokens["alpha"], np.zeros((1, 400)))
        waited = time.monotonic() - started
        public = request(server.url, "", "GET", "/api/leaderboard")[0]
        still_open = sum(not _is_closed(sock) for sock in held)
        for sock in held:
            sock.close()
    assert status == 201 and waited < 5, (status, answer, waited)
    assert public == 200
    assert still_open <= 8, f"{still_open} half-sent sockets of one address still held"


def _as_request(answer: tuple) -> tuple:
    """A page answer (headers as a list) as ``request`` gives it (headers by lower-case name)."""
    status, headers, body = answer
    return status, {name.lower(): value for name, value in headers}, body


def test_requests_without_a_token_cannot_take_the_places_kept_for_teams(tmp_path):
    path = write_challenge(tmp_path)
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state"), "--quiet-access",
                       "--max-requests", "4", "--per-address", "8") as server:
        host = server.url.removeprefix("http://").rstrip("/")
        browser = sign_in(server.url, server.tokens["beta"])  # a team on the page: its session is a team's
        slow = []
        for _ in range(3):  # sign-in forms whose bodies have not arrived: requests in progress, no token in a header
            sock = _connect(server.url)
            sock.sendall(f"POST /login HTTP/1.1\r\nHost: {host}\r\nContent-Type: multipart/form-data; "
                         "boundary=b\r\nCookie: ladderlab-form-test=x\r\nContent-Length: 5000\r\n\r\n--b\r\n"
                         .encode())
            slow.append(sock)
        time.sleep(0.5)
        anonymous = request(server.url, "", "GET", "/api/leaderboard")
        guessed = request(server.url, "ll_guess", "GET", "/api/me")
        team = request(server.url, server.tokens["alpha"], "GET", "/api/me")
        organiser = request(server.url, server.tokens["organiser"], "GET", "/api/organiser/links")
        page = browser.get("/team")
        stranger = Browser(server.url).get("/team")
        for sock in slow:
            sock.close()
    assert anonymous[0] == 503 and anonymous[2]["reason"] == "busy" and anonymous[1]["retry-after"] == "1"
    assert guessed[0] == 503, "a wrong token takes no kept place"
    assert team[0] == 200 and organiser[0] == 200
    assert page[0] == 200 and stranger[0] == 503, "a signed-in browser takes a kept place, a stranger's does not"


def test_no_token_reaches_any_line_the_server_writes_wherever_the_client_puts_it(tmp_path):
    path = write_challenge(tmp_path, rules="per_day = 50\nselection = 1")
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state")) as server:
        team, organiser = server.tokens["alpha"], server.tokens["organiser"]
        foreign = "ll_" + "Q" * 43  # no one's: refused, and still never logged
        host = server.url.removeprefix("http://").rstrip("/")
        for token in (team, organiser, foreign):
            quoted = urllib.parse.quote(token, safe="")
            for path_and_query in (f"/api/me?token={token}", f"/api/me?access_token={quoted}", f"/{token}",
                                   f"/api/submissions/{token}/selection", f"/static/{token}.css",
                                   f"/api/organiser/final?linked={token}", f"/?{token}"):
                request(server.url, "", "GET", path_and_query)
            request(server.url, token, "GET", "/api/me", headers={"Idempotency-Key": token, "User-Agent": token,
                                                                  "Referer": f"http://x/?t={token}",
                                                                  "Cookie": f"token={token}"})
            request(server.url, token, "POST", "/api/submissions", f"id,prediction\n{token},1\n".encode(),
                    {"Content-Type": "text/csv", "Idempotency-Key": token})
            request(server.url, "", "POST", "/mine", urllib.parse.urlencode({"token": token}).encode(),
                    {"Content-Type": "application/x-www-form-urlencoded"})
            for line in (f"GET /{token} HTTP/1.1", f"GET /?{token} HTTP/1.1", f"{token} / HTTP/1.1",
                         f"GET / HTTP/1.1\r\nHost: {host}\r\n{token}"):
                sock = _connect(server.url)  # request lines the parser refuses
                sock.sendall(line.encode() + b"\r\n\r\n")
                sock.settimeout(5)
                try:
                    sock.recv(65536)
                except OSError:
                    pass
                sock.close()
        assert request(server.url, team, "GET", "/api/me")[0] == 200
    issued = [line for line in server.output if line.startswith("  ") and ": ll_" in line]  # shown once, at start
    lines = [line for line in server.output if line not in issued]
    assert len(issued) == 6 and any('"GET /api/me HTTP/1.1" 200' in line for line in lines), "the access log is on"
    for token in (team, organiser, foreign):
        for form in (token, urllib.parse.quote(token, safe=""), token[3:], token[-20:]):
            assert not [line for line in lines if form in line], form


def test_a_secret_file_others_can_read_is_warned_about_and_a_missing_folder_named(tmp_path, capsys):
    from ladderlab.seeding import read_secret_seed

    secret = tmp_path / "secret"
    secret.write_text("12345\n")
    secret.chmod(0o644)
    assert read_secret_seed(secret) == 12345
    warning = capsys.readouterr().err.strip()
    assert "\n" not in warning and "can be read by other users (mode 0644)" in warning and "chmod 600" in warning
    secret.chmod(0o600)
    read_secret_seed(secret)
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError) as refused:
        read_secret_seed(tmp_path / "missing" / "secret")
    message = str(refused.value)
    assert "the folder" in message and str(tmp_path / "missing") in message and ".tmp" not in message
