"""``ladderlab serve`` holds a bounded number of connections and requests (:mod:`ladderlab.serve.limits`):
against a running server, connections beyond the bound and requests beyond theirs are refused with
503, the reason and ``Retry-After``; a connection that sends no headers is closed, one whose body
trickles is answered 408 and closed; honest requests succeed afterwards."""

from __future__ import annotations

import json
import socket
import threading
import time

import numpy as np
import pytest

from ladderlab.serve.launch import ServerProcess
from ladderlab.serve.limits import ConnectionLimits
from tests.serve_helpers import npy, request, upload, write_challenge

CONNECTIONS, REQUESTS = 12, 3
BODY_SECONDS = 5


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _refusal(data: bytes) -> tuple[str, dict[str, str], dict]:
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines)}
    return status, headers, json.loads(body)


@pytest.fixture
def bounded_server(tmp_path):
    path = write_challenge(tmp_path)
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state"), "--quiet-access",
                       "--max-connections", str(CONNECTIONS), "--max-requests", str(REQUESTS),
                       "--header-timeout", "2", "--body-timeout", str(BODY_SECONDS),
                       "--per-address", str(CONNECTIONS + 5)) as server:
        yield server


def test_connections_beyond_the_bound_are_refused_with_the_reason_and_honest_requests_then_succeed(bounded_server):
    server = bounded_server
    held = [_connect(server.url) for _ in range(CONNECTIONS)]
    time.sleep(0.2)  # every one accepted before the next ones
    extra = [_connect(server.url) for _ in range(5)]
    answers = [_answer(sock) for sock in extra]
    for sock in held + extra:
        sock.close()
    for data in answers:
        status, headers, body = _refusal(data)
        assert status.startswith("HTTP/1.1 503") and headers["retry-after"] == "1", data
        assert body["reason"] == "connections" and f"holds {CONNECTIONS} connections" in body["error"]
    time.sleep(0.2)
    assert request(server.url, "", "GET", "/api/leaderboard")[0] == 200


def test_a_connection_that_sends_no_headers_is_closed_and_its_place_freed(bounded_server):
    server = bounded_server
    silent = [_connect(server.url) for _ in range(CONNECTIONS)]
    started = time.monotonic()
    assert all(_answer(sock) == b"" for sock in silent), "closed without an answer: it asked nothing"
    assert time.monotonic() - started < 30
    for sock in silent:
        sock.close()
    assert request(server.url, "", "GET", "/api/challenge")[0] == 200


def test_requests_in_progress_beyond_the_bound_get_busy_and_the_next_ones_succeed(bounded_server):
    server = bounded_server
    token = server.tokens["alpha"]
    body = npy(np.zeros((1, 400)))
    host = server.url.removeprefix("http://").rstrip("/")
    slow = []
    for _ in range(REQUESTS):  # uploads whose bodies have not arrived: each a request in progress
        sock = _connect(server.url)
        sock.sendall(f"POST /api/submissions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                     f"Content-Type: application/x-npy\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        slow.append(sock)
    time.sleep(0.5)
    status, headers, answer = request(server.url, "", "GET", "/api/leaderboard")
    assert status == 503 and headers["retry-after"] == "1" and answer["reason"] == "busy", (status, answer)
    for sock in slow:
        sock.sendall(body[10:])
        assert _answer_status(sock) == 201
        sock.close()
    assert request(server.url, "", "GET", "/api/leaderboard")[0] == 200


def _trickle(sock: socket.socket, head: bytes, every: float = 0.25, patience: float = 60) -> tuple[bytes, float]:
    """Send ``head``, then a body byte every ``every`` seconds (it declares 10⁵) until the server
    closes the connection; what it answered, and how long after the headers it closed."""
    sock.sendall(head)
    started = time.monotonic()
    sock.settimeout(every)
    answer = b""
    while time.monotonic() - started < patience:
        try:
            sock.sendall(b"0")
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:  # reset: the server closed it
            break
        if not chunk:
            break
        answer += chunk
    return answer, time.monotonic() - started


@pytest.mark.slow
def test_bodies_that_trickle_in_get_408_and_free_their_places_in_time(bounded_server):
    """Uploads on every request place, trickling a byte every quarter second: each is answered 408
    and closed within the body time (not when its 10⁵ bytes would have come), and the team then
    uploads at once (no request place, connection or database lock was kept). A body sent to a
    route that does not read it cannot hold the connection either."""
    server = bounded_server
    token = server.tokens["alpha"]
    host = server.url.removeprefix("http://").rstrip("/")
    upload_head = (f"POST /api/submissions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                   "Content-Type: application/x-npy\r\nContent-Length: 100000\r\n\r\n").encode()
    unread_head = (f"GET /api/leaderboard HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100000\r\n\r\n").encode()
    results: dict[int, tuple[bytes, float]] = {}

    def trickle(index: int) -> None:
        with _connect(server.url) as sock:
            results[index] = _trickle(sock, upload_head)

    threads = [threading.Thread(target=trickle, args=(index,)) for index in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for answer, seconds in results.values():
        status, headers, body = _refusal(answer)
        assert status.startswith("HTTP/1.1 408") and headers["connection"] == "close", answer
        assert body["reason"] == "body-timeout" and f"within {BODY_SECONDS:g} s" in body["error"]
        assert BODY_SECONDS - 1 < seconds < BODY_SECONDS + 10
    with _connect(server.url) as sock:
        answer, seconds = _trickle(sock, unread_head)
    assert answer.startswith(b"HTTP/1.1 200") and BODY_SECONDS - 1 < seconds < BODY_SECONDS + 10
    assert upload(server.url, token, np.zeros((1, 400)))[0] == 201


def _answer_status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        data += sock.recv(4096)
    return int(data.split(b" ", 2)[1])


def test_the_defaults_follow_the_challenge_and_the_descriptor_limit():
    small = ConnectionLimits.for_challenge(teams=4, max_upload_bytes=100_000, descriptors=1024)
    assert (small.connections, small.requests, small.backlog) == (64, 10, 64)
    large = ConnectionLimits.for_challenge(teams=2000, max_upload_bytes=50 << 20, descriptors=1024)
    assert large.connections == 1024 - 64 and large.requests == 20
    assert small.body_timeout == 30 and large.body_timeout == 400  # 50 MiB at 128 KiB/s
    with pytest.raises(ValueError, match="requests \\(5\\) cannot exceed connections \\(4\\)"):
        ConnectionLimits(connections=4, requests=5, backlog=4)


def test_the_pages_give_the_default_timeouts():
    from ladderlab.serve.limits import BODY_SECONDS, HEADER_SECONDS, KEEP_ALIVE_SECONDS, SLOWEST_UPLOAD_BYTES_PER_SECOND
    from tests.docs_helpers import ROOT

    serve = (ROOT / "docs" / "serve-internals.md").read_text().split("## Connections", 1)[1].split("\n## ", 1)[0]
    decisions = (ROOT / "docs" / "decisions.md").read_text().split("### Bounded connections", 1)[1].split("\n### ", 1)[0]
    for page in (serve, decisions):
        assert f"{HEADER_SECONDS:g} s" in page and f"{KEEP_ALIVE_SECONDS:g} s" in page
        assert f"{BODY_SECONDS:g} s" in page and f"{SLOWEST_UPLOAD_BYTES_PER_SECOND >> 10} KiB/s" in page
