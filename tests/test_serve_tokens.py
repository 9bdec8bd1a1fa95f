"""The organiser gets the teams' tokens in a file: ``ladderlab serve CHALLENGE --tokens FILE``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ladderlab.serve.launch import ServerProcess
from tests.serve_helpers import TEAMS, request, upload, write_challenge

pytest.importorskip("uvicorn")


@pytest.mark.slow
def test_the_tokens_go_to_a_file_only_the_organiser_can_read_and_a_team_submits_with_its_own(tmp_path):
    path = write_challenge(tmp_path, n=100)
    tokens_file = tmp_path / "tokens.csv"
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state"), "--tokens", str(tokens_file)) as server:
        tokens = pd.read_csv(tokens_file).set_index("team").token.to_dict()
        status, answer = upload(server.url, tokens["beta"], np.zeros((1, 100)))
        assert status == 201 and answer["team"] == "beta"
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
    assert sorted(tokens) == sorted(["organiser", "scorer", *TEAMS])
    assert tokens_file.stat().st_mode & 0o777 == 0o600
    output = "".join(server.output)
    assert not any(token in output for token in tokens.values()) and f"tokens of the organiser, the scorer and 4 team(s) written to {tokens_file}" in output
    again = tmp_path / "again.csv"
    with ServerProcess(path, "--uncertified", "--state", str(tmp_path / "state"), "--tokens", str(again)) as server:
        pass
    assert not again.exists() and "not written" in "".join(server.output)


def test_an_existing_tokens_file_is_refused_before_any_token_is_issued(tmp_path):
    path = write_challenge(tmp_path, n=100)
    tokens_file = tmp_path / "tokens.csv"
    tokens_file.write_text("team,token\nalpha,ll_earlier\n")
    done = subprocess.run([sys.executable, "-m", "ladderlab", "serve", str(path), "--port", "0", "--uncertified",
                           "--state", str(tmp_path / "state"), "--tokens", str(tokens_file)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"ladderlab: error: --tokens {tokens_file}: the file exists and may hold tokens that were shown once; "
        "move it away or name another file"]
    assert tokens_file.read_text() == "team,token\nalpha,ll_earlier\n" and not (tmp_path / "state").exists()


@pytest.mark.slow
def test_a_start_that_forgets_the_database_it_was_served_from_is_refused_instead_of_issuing_new_tokens(tmp_path):
    path = write_challenge(tmp_path, n=100)
    state, log = tmp_path / "state", tmp_path / "elsewhere.sqlite"
    with ServerProcess(path, "--uncertified", "--state", str(state), "--database", f"sqlite:///{log}"):
        pass
    forgot = subprocess.run([sys.executable, "-m", "ladderlab", "serve", str(path), "--port", "0", "--uncertified",
                             "--state", str(state)], capture_output=True, text=True, timeout=120)
    assert forgot.returncode == 2 and forgot.stderr.strip().splitlines() == [
        f"ladderlab: error: --database: the log of test is in sqlite:///{log} (recorded in {state / 'database'} when it "
        f"was served there); give --database with that URL, or remove {state / 'database'} to begin a new SQLite log "
        "with new tokens"]
    assert sorted(child.name for child in state.iterdir()) == ["database", "secret"]  # no second log was begun
    with ServerProcess(path, "--uncertified", "--state", str(state), "--database", f"sqlite:///{log}") as server:
        pass
    assert "tokens (shown once" not in "".join(server.output)  # given its database, it serves the log it had
