"""Attacks against a live server: the same transcript as in process, value for value; and the
``ladderlab serve`` and ``ladderlab serve attack`` commands."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ladderlab.certification import challenge as challenges
from ladderlab.cli.commands import main
from ladderlab.registry import ATTACKS
from ladderlab.runs.duel import play
from ladderlab.scoring import get_scorer
from ladderlab.serve.client import RemoteBoard, attack_stream, play_remote
from ladderlab.serve.replay import mechanism_stream
from ladderlab.serve.storage import sqlite_url
from tests.serve_helpers import ThreadServer, open_service, request, write_challenge, write_secret

SECRET = 1234
FAST = "uploads_per_second = 1000\nburst = 1000"


@pytest.mark.parametrize("mechanism, params, attack, scorer", [
    ("ladder", "eta = 0.01", {"block": 32, "k": 120}, "zero-one"),
    ("ladder-boot", "b = 20, alpha = 0.15", {"block": 16, "k": 80}, "zero-one"),
    ("noisy", "scale = 0.02", {"block": 8, "k": 60, "repeats": 3}, "squared"),
])
def test_an_attack_through_the_server_gets_the_transcript_it_gets_in_process(tmp_path, mechanism, params, attack, scorer):
    path = write_challenge(tmp_path, n=600, mechanism=mechanism, params=params, scorer=scorer, limits=FAST)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        board, remote_final = play_remote(server.url, tokens["beta"], ATTACKS.make("hill-climbing", **attack), 100, seed=7)
    challenge = challenges.load(path)
    local_attack = ATTACKS.make("hill-climbing", **attack)
    result = play(challenge.split, challenge.mechanism(), local_attack, mechanism_stream(SECRET, challenge, "beta"),
                  attack_stream(7, local_attack), budget=100)
    assert board.submissions == result.submissions > 10
    assert np.array_equal(board.transcript, result.released[:-1])
    split = challenge.split
    scores = [get_scorer(scorer).score_many(labels, remote_final[None, rows])[0]
              for labels, rows in ((split.y_public, split.public_rows), (split.y_final, split.final_rows))]
    assert scores == [result.final_public, result.final_final]


def test_remote_board_caps_and_refusals_are_the_boards_exceptions(tmp_path):
    from ladderlab.board import BudgetExceeded

    path = write_challenge(tmp_path, n=50, rules="per_day = 3", limits=FAST)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        board = RemoteBoard(server.url, tokens["alpha"])
        assert (board.holdout_size, board.remaining, board.classes.tolist(), board.prediction_ndim) == (50, 3, [0.0, 1.0], 1)
        with pytest.raises(ValueError, match="not one of the task's labels"):
            board.submit(np.full(50, 3.0))
        with pytest.raises(ValueError, match="a served leaderboard takes predictions only"):
            board.submit(np.zeros(50), guess=0.5)
        assert board.remaining == 3, "a refused guess submits nothing"
        assert board.submit_many(np.zeros((2, 50)), guesses=[np.nan, np.nan]).size == 2 and board.remaining == 1
        with pytest.raises(BudgetExceeded):
            board.submit_many(np.zeros((2, 50)))
        board.close()
        other = RemoteBoard(server.url, tokens["beta"], budget=1)
        other.submit(np.zeros(50))
        with pytest.raises(BudgetExceeded, match="exceed the budget"):
            other.submit(np.zeros(50))
        other.close()


def test_serve_refuses_what_the_certificate_does_not_cover_naming_it_unless_uncertified(tmp_path, capsys):
    path = write_challenge(tmp_path, n=40, rules="total = 50")
    (tmp_path / "cert.json").write_text('{"mechanism": "ladder", "params": {"eta": 0.02}, "n": 10, "safe_budget": 40, '
                                        '"budgets": [40]}')
    path.write_text(path.read_text().replace("params = { eta = 0.01 }", 'params = { eta = 0.01 }\ncertificate = "cert.json"'))
    assert main(["serve", str(path)]) == 2
    error = capsys.readouterr().err
    assert "mechanism parameter eta = 0.01 is not the certified 0.02" in error
    assert "a team may make 50 submissions, more than the certificate's safe budget of 40" in error
    assert len(error.strip().splitlines()) == 1
    assert main(["serve", str(path), "--uncertified", "--reissue", "alpha"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("alpha: ll_") and len(captured.out.split()[1]) == 46
    assert captured.err.count("warning: uncertified") == 2


def test_serve_warns_when_the_challenge_has_already_closed(tmp_path, capsys):
    ended = write_challenge(tmp_path, n=40, rules="per_day = 5\nstart = 2020-01-01T00:00:00Z\nend = 2020-03-01T00:00:00Z")
    assert main(["serve", str(ended), "--uncertified", "--reissue", "alpha"]) == 0
    assert "warning: the challenge closed at 2020-03-01T00:00:00+00:00: every upload is refused" in capsys.readouterr().err
    running = write_challenge(tmp_path / "running", n=40, rules="per_day = 5\nend = 2100-01-01T00:00:00Z")
    assert main(["serve", str(running), "--uncertified", "--reissue", "alpha"]) == 0
    assert "closed" not in capsys.readouterr().err

def test_the_attack_command_says_when_the_caps_left_it_nothing_to_submit(tmp_path, capsys):
    path = write_challenge(tmp_path, n=40, rules="per_day = 2", limits=FAST)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        command = ["serve", "attack", server.url, "--token", tokens["alpha"], "--attack", "boosting(k=2)"]
        assert main(command) == 0
        played = capsys.readouterr()
        assert played.out.startswith("boosting: 2 submissions") and "warning" not in played.err
        assert main(command) == 0
        refused = capsys.readouterr()
        assert refused.out.startswith("boosting: 0 submissions")
        assert "warning: no submission made: the server's caps leave this team none" in refused.err


def test_the_attack_command_says_when_the_caps_cut_its_budget_short(tmp_path, capsys):
    path = write_challenge(tmp_path, n=40, rules="per_day = 2", limits=FAST)
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        assert main(["serve", "attack", server.url, "--token", tokens["alpha"], "--attack", "hill-climbing", "--budget", "5"]) == 0
        played = capsys.readouterr()
        assert played.out.startswith("hill-climbing: 2 submissions")
        assert "warning: the server's caps stopped the attack after 2 submissions of the 5 asked" in played.err
        assert main(["serve", "attack", server.url, "--token", tokens["beta"], "--attack", "boosting(k=1)", "--budget", "1"]) == 0
        exact = capsys.readouterr()
        assert exact.out.startswith("boosting: 1 submission;") and "warning" not in exact.err

def test_a_plain_install_is_told_which_extra_serve_needs():
    code = ("import sys; sys.modules['fastapi'] = None; from ladderlab.cli.commands import main; "
            "sys.exit(main(['serve', '--demo']))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert completed.stderr.strip() == ("ladderlab: error: ladderlab serve needs the optional extra 'serve' "
                                        "(missing: fastapi): pip install 'ladderlab[serve]'")


def test_verify_reports_an_intact_log_and_the_changed_entry_of_a_damaged_one(tmp_path, capsys):
    path = write_challenge(tmp_path, n=40)
    state = tmp_path / "state"
    state.mkdir()
    write_secret(state / "secret", SECRET)
    service, _ = open_service(path, sqlite_url(state / "log.sqlite"), SECRET)
    service.submit("alpha", np.zeros((3, 40)))
    assert main(["serve", "verify", str(path), "--state", str(state)]) == 0
    assert "3 submissions of 1 mechanism state(s): the chain is intact" in capsys.readouterr().out
    import sqlite3

    with sqlite3.connect(state / "log.sqlite") as connection:
        connection.execute("UPDATE submissions SET public_score = 0.0 WHERE submission_id = 2")
    assert main(["serve", "verify", str(path), "--state", str(state)]) == 1
    assert "submission 2 was changed after it was written" in capsys.readouterr().err


def test_the_rate_limit_answers_429_with_the_wait_and_remote_board_waits_it_out(tmp_path):
    import time

    from tests.serve_helpers import upload

    path = write_challenge(tmp_path, n=30, limits="uploads_per_second = 4\nburst = 2")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        statuses = [upload(server.url, tokens["alpha"], np.zeros((1, 30))) for _ in range(3)]
        assert [status for status, _ in statuses] == [201, 201, 429]
        refused = statuses[2][1]
        assert refused["reason"] == "rate" and 0 < refused["retry_after"] <= 0.25
        assert "at most 4 per second (bursts of 2)" in refused["error"]
        board = RemoteBoard(server.url, tokens["beta"])
        start = time.monotonic()
        board.submit_many(np.zeros((1, 30)))
        for _ in range(4):
            board.submit(np.zeros(30))
        assert board.submissions == 5 and time.monotonic() - start >= 0.5
        board.close()
    assert len(service.storage.entries()) == 7


def test_remote_board_fails_fast_naming_an_address_no_server_ever_answered_at():
    import socket
    import time

    from ladderlab.serve.client import RemoteError

    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(RemoteError, match=rf"no server answered at 127\.0\.0\.1:{port} .*ladderlab serve"):
        RemoteBoard(f"http://127.0.0.1:{port}", "token")
    assert time.monotonic() - start < 5, "a dead address is not retried like a restarting server"


@pytest.mark.slow
def test_a_server_whose_rules_allow_more_or_unlinked_accounts_than_certified_does_not_start(tmp_path):
    from ladderlab.serve.launch import ServerProcess

    path = write_challenge(tmp_path, n=40, rules="total = 40\naccounts = 2")
    path.write_text(path.read_text().replace("params = { eta = 0.01 }", 'params = { eta = 0.01 }\ncertificate = "cert.json"'))
    certificate = {"mechanism": "ladder", "params": {"eta": 0.01}, "n": 10, "safe_budget": 40, "budgets": [40]}
    state = ("--state", str(tmp_path / "state"))

    def certify_as(**settings) -> None:
        (tmp_path / "cert.json").write_text(json.dumps({**certificate, **settings}))

    certify_as(accounts=2)
    with ServerProcess(path, *state) as server:
        status, _, described = request(server.url, "", "GET", "/api/challenge")
    assert (status, described["rules"]["accounts"]) == (200, 2)
    for settings, named in (({"accounts": 1}, "hold 2 accounts (rules.accounts), more than the certificate's 1"),
                            ({"accounts": 3, "link": "linked"}, "(certify --accounts 3 --link), the rules link "
                                                                "none of the 2 accounts")):
        certify_as(**settings)
        with pytest.raises(RuntimeError, match="did not start") as refused:
            ServerProcess(path, *state)
        error = [line for line in str(refused.value).splitlines() if "error" in line]
        assert len(error) == 1 and named in error[0] and "the certificate does not cover" in error[0]
