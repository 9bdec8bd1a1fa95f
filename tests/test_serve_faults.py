"""The server as a process: nothing it sends or prints before the close holds an exact score or
a label, and kill -9 under load loses and changes nothing."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time

import numpy as np
import pandas as pd
import pytest

from ladderlab.certification import challenge as challenges
from ladderlab.serve import replay
from ladderlab.serve.client import Connection
from ladderlab.serve.launch import ServerProcess
from ladderlab.serve.storage import Storage, sqlite_url
from tests.serve_helpers import Browser, npy, sign_in, write_challenge

FAST = "uploads_per_second = 1000\nburst = 1000"


def _exact_forms(value: float) -> set[str]:
    """The texts an exact score would take if it leaked: repr and the common roundings."""
    forms = {repr(value), str(value)}
    forms |= {f"{value:.{digits}f}" for digits in range(2, 11)}
    forms |= {f"{value:.{digits}g}" for digits in range(3, 11)}
    forms |= {f"{value:.{digits}e}" for digits in range(2, 10)}
    return forms


def _found(text: str, form: str) -> bool:
    """``form`` as a whole number in ``text`` (not a part of a longer one)."""
    return re.search(rf"(?<![0-9.]){re.escape(form)}(?![0-9])", text) is not None


def _session(url: str, tokens: dict[str, str], ids: np.ndarray, rng: np.random.Generator) -> list[bytes]:
    """A team's and an organiser's session before the close; every byte the server sent."""
    sent: list[bytes] = []

    def call(token: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> None:
        connection = Connection(url, token)
        status, answer_headers, data = connection.request(method, path, body, headers)
        connection.close()
        sent.append(f"{status} {answer_headers}".encode() + data)

    n = ids.size
    for team in ("alpha", "beta"):
        for _ in range(6):
            call(tokens[team], "POST", "/api/submissions", npy(rng.standard_normal(n)), {"Content-Type": "application/x-npy"})
        table = pd.DataFrame({"id": ids, "prediction": rng.standard_normal(n)})
        call(tokens[team], "POST", "/api/submissions", table.to_csv(index=False).encode(), {"Content-Type": "text/csv"})
        browser = Browser(url)
        csrf = browser.csrf()
        form = (f"--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{csrf}\r\n".encode()
                + b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.csv\"\r\nContent-Type: text/csv\r\n\r\n"
                + table.to_csv(index=False).encode() + b"\r\n--b--\r\n")
        pages = [browser.post("/login", {"token": tokens[team]})]
        pages.append(browser.request("POST", "/upload", None, {"Content-Type": "multipart/form-data; boundary=b"}, form))
        pages += [browser.get("/team"), browser.post("/select", {"submission_id": "1", "selected": "yes"})]
        sent += [f"{status} {headers}".encode() + page for status, headers, page in pages]
        call(tokens[team], "GET", "/api/submissions")
        call(tokens[team], "GET", "/api/me")
        call(tokens[team], "POST", "/api/submissions", npy(np.full(n, np.nan)), {"Content-Type": "application/x-npy"})
        call(tokens[team], "POST", "/api/submissions", b"id,prediction\n1,0\n", {"Content-Type": "text/csv"})
    for path in ("/", "/api/leaderboard", "/api/challenge", "/api/public-data", "/sample_submission.csv", "/openapi.json",
                 "/api/final-leaderboard", "/register"):
        call("", "GET", path)
    for path in ("/api/organiser/final", "/api/organiser/export"):
        call(tokens["organiser"], "GET", path)
    organiser = sign_in(url, tokens["organiser"])
    for path in ("/organiser", "/", "/api/organiser/final", "/api/organiser/private-losses"):
        status, headers, page = organiser.get(path)
        sent.append(f"{status} {headers}".encode() + page)
    return sent


def test_nothing_served_or_printed_before_the_close_holds_an_exact_score_or_a_label(tmp_path):
    path = write_challenge(tmp_path, n=300, scorer="squared", mechanism="ladder-boot", params="b = 20, alpha = 0.15",
                           limits=FAST)
    challenge = challenges.load(path)
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state")) as server:
        sent = _session(server.url, server.tokens, challenge.ids, np.random.default_rng(0))
    written = "".join(server.output)
    entries = Storage(sqlite_url(tmp_path / "state" / "log.sqlite")).entries()
    assert len(entries) == 16 and any(line.startswith("INFO:") and "POST /api/submissions" in line
                                      for line in server.output), "the session and its access log happened"
    binary = b"".join(sent)
    text = binary.decode("latin-1") + written
    exact = [value for entry in entries for value in (entry.public_score, entry.private_score)]
    released = {entry.released for entry in entries}
    assert not released & set(exact), "the mechanism released no exact score"
    # a release is shown to four significant digits (ladderlab.runs.display), so a short form of an exact
    # score can coincide with a release's own text: that text is the release's, not a leak
    shown = {form for value in released for form in _exact_forms(value)}
    for value in exact:
        leaked = [form for form in _exact_forms(value) - shown if _found(text, form)]
        assert not leaked, f"exact score {value!r} found as {leaked}"
        assert struct.pack("<d", value) not in binary
    labels = challenge.split.y_holdout
    for value in labels:
        assert not [form for form in (repr(value), f"{value:.6f}", f"{value:.8g}") if _found(text, form)]
        assert struct.pack("<d", value) not in binary
    assert challenge.path.parent.joinpath("labels.csv").read_bytes()[:200] not in binary


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # a soak: three kills under load; the demo's kill -9 and restart below is its default sibling
def test_kill_9_under_load_then_restart_loses_and_changes_nothing(tmp_path, seed=11):
    teams, per_team = ("alpha", "beta", "gamma", "delta"), 30
    path = write_challenge(tmp_path, n=300, mechanism="ladder-boot", params="b = 10, alpha = 0.15", limits=FAST)
    challenge = challenges.load(path)
    rng = np.random.default_rng(seed)
    rows = {team: rng.integers(0, 2, (per_team, challenge.ids.size)).astype(float) for team in teams}
    kill_after = np.sort(rng.choice(np.arange(8, len(teams) * per_team - 8), size=3, replace=False))
    port = _free_port()
    options = ("--uncertified", "--state", str(tmp_path / "state"), "--port", str(port), "--quiet-access")
    server = ServerProcess(path, *options)
    tokens = server.tokens
    answers: dict[str, list[float]] = {team: [] for team in teams}

    def client(team: str) -> None:
        connection = Connection(f"http://127.0.0.1:{port}", tokens[team])
        for i, row in enumerate(rows[team]):
            while True:  # a refused connection while the server is down is retried by Connection itself
                status, _, data = connection.request("POST", "/api/submissions", npy(row),
                                                     {"Content-Type": "application/x-npy", "Idempotency-Key": f"{team}-{i}"})
                if status in (200, 201):
                    answers[team].append(json.loads(data)["submissions"][0]["released"])
                    break
                assert status >= 500, data
        connection.close()

    clients = [threading.Thread(target=client, args=(team,)) for team in teams]
    for thread in clients:
        thread.start()
    for count in kill_after:  # after `count` acknowledged submissions, while the clients still have some to make
        while sum(map(len, answers.values())) < count:
            assert any(thread.is_alive() for thread in clients), "a client stopped before the kills were done"
            time.sleep(0.002)
        assert server.process.poll() is None, "the server is up when it is killed"
        server.kill()
        server = ServerProcess(path, *options)
    for thread in clients:
        thread.join(300)
    server.stop()
    storage = Storage(sqlite_url(tmp_path / "state" / "log.sqlite"))
    secret = int((tmp_path / "state" / "secret").read_text())
    states, count = replay.rebuild(challenge, storage, secret)
    assert count == len(teams) * per_team
    for team in teams:
        logged = [entry.released for entry in storage.entries(team=team)]
        board = replay.fresh_state(challenge, secret, team).board
        uninterrupted = [board.submit(row) for row in rows[team]]
        assert np.array_equal(np.array(logged), np.array(uninterrupted)), team
        assert np.array_equal(np.array(answers[team]), np.array(uninterrupted)), team
    storage.close()


@pytest.mark.slow
def test_the_demo_takes_an_attack_and_a_kill_9_and_serves_the_same_leaderboard_after_a_restart(tmp_path):
    from ladderlab.cli.commands import main
    from ladderlab.registry import ATTACKS
    from ladderlab.serve.client import play_remote

    state = tmp_path / "demo"
    server = ServerProcess("--demo", "--state", str(state))
    assert set(server.tokens) == {"organiser", "scorer", "team-a", "team-b", "team-c"}
    board, _ = play_remote(server.url, server.tokens["team-a"], ATTACKS.make("hill-climbing", block=32), 60, seed=0)
    connection = Connection(server.url, "")
    before = connection.request("GET", "/api/leaderboard")[2]
    connection.close()
    server.kill()
    server = ServerProcess("--demo", "--state", str(state))
    connection = Connection(server.url, "")
    after = connection.request("GET", "/api/leaderboard")[2]
    connection.close()
    server.stop()
    assert board.submissions == 60 and json.loads(after) == json.loads(before)
    assert server.tokens == {}, "tokens are shown only when they are issued"
    assert main(["serve", "verify", str(state / "challenge.toml"), "--state", str(state)]) == 0
