"""``ladderlab serve`` under ``[rules] link = true``, over HTTP, on SQLite and on PostgreSQL: accounts
that submit the same predictions are linked and share one state and one budget, accounts that do
not are left alone, the groups survive kill -9, and both databases log the same transcript."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sqlalchemy as sa

from ladderlab.serve import replay
from ladderlab.serve.launch import ServerProcess
from ladderlab.serve.storage import REFUSED, Storage, StorageError, links, sqlite_url
from tests.serve_helpers import ThreadServer, open_service, request, upload, write_challenge

SECRET = 1234
LINKED = "per_day = 1000\ntotal = 4\naccounts = 4\nlink = true"


def _released(answer: dict) -> float:
    return answer["submissions"][0]["released"]


def _logged(storage: Storage) -> list[tuple]:
    """The log as the mechanism and the link rule made it: team, sequence, release and scores (as
    bits), decision and links."""
    with storage.reading() as connection:
        entries = storage.entries_after(connection, 0, with_links=True)
    return [(entry.team, entry.team_sequence, np.float64(entry.released).tobytes(),
             np.float64(entry.public_score).tobytes(), entry.decision, entry.links) for entry in entries]


def test_two_accounts_submitting_the_same_predictions_are_linked_and_share_one_state_and_budget(tmp_path, database):
    path = write_challenge(tmp_path, rules=LINKED)
    service, tokens = open_service(path, database, SECRET)
    truth = service.challenge.split.y_holdout
    guess = np.random.default_rng(0).integers(0, 2, truth.size).astype(float)
    with ThreadServer(service) as server:
        alpha = [upload(server.url, tokens["alpha"], row[None]) for row in (truth, guess, guess)]
        beta = upload(server.url, tokens["beta"], guess[None])  # the group's 4th submission: alpha's state answers
        refused = upload(server.url, tokens["beta"], truth[None])  # its 5th: beta alone has made 1 of 4
        retried_status = request(server.url, tokens["beta"], "GET", "/api/me")[0]
        own = request(server.url, tokens["beta"], "GET", "/api/submissions")[2]
    assert [status for status, _ in alpha] == [201] * 3 and beta[0] == 201, (alpha, beta)
    shared = replay.fresh_state(service.challenge, SECRET, "alpha").board
    expected = [shared.submit(row) for row in (truth, guess, guess, guess)]
    alone = replay.fresh_state(service.challenge, SECRET, "beta").board.submit(guess)
    assert alone != expected[-1], "beta's own state would have released another value"
    assert [_released(answer) for _, answer in alpha] + [_released(beta[1])] == expected
    assert refused[0] == 429 and refused[1]["reason"] == "linked-cap" and "total cap of 4" in refused[1]["error"]
    assert "alpha" not in refused[1]["error"], "the refusal does not name the account it is linked to"
    assert retried_status == 200 and [row["released"] for row in own["submissions"]] == [expected[-1], None]
    logged = _logged(service.storage)
    assert [entry[4] for entry in logged] == ["accepted", "rejected", "rejected", "rejected", REFUSED]
    assert logged[3][5] == (("alpha", 0),) and all(entry[5] == () for entry in logged[:3] + logged[4:])


def test_two_accounts_with_different_predictions_are_not_linked(tmp_path, database):
    path = write_challenge(tmp_path, rules=LINKED)
    service, tokens = open_service(path, database, SECRET)
    rng = np.random.default_rng(1)
    rows = {team: rng.integers(0, 2, (4, service.challenge.ids.size)).astype(float) for team in ("alpha", "beta")}
    with ThreadServer(service) as server:
        answers = {team: [upload(server.url, tokens[team], row[None]) for row in rows[team]] for team in rows}
    for team, team_rows in rows.items():
        assert [status for status, _ in answers[team]] == [201] * 4
        own = replay.fresh_state(service.challenge, SECRET, team).board
        assert [_released(answer) for _, answer in answers[team]] == [own.submit(row) for row in team_rows]
    assert all(entry[5] == () for entry in _logged(service.storage))
    assert service._linked.keeper("beta") == "beta"


def _session(url: str, tokens: dict[str, str], rows: np.ndarray) -> list[int]:
    """Links, a daily cap shared by three teams, refusals: each upload's status."""
    plan = [("alpha", 0), ("beta", 1), ("gamma", 0), ("beta", 0), ("delta", 2), ("gamma", 3), ("alpha", 3),
            ("delta", 1), ("beta", 4), ("delta", 5), ("gamma", 6)]
    return [upload(url, tokens[team], rows[index][None])[0] for team, index in plan]


def test_sqlite_and_postgresql_log_the_same_transcript_and_replay_it(tmp_path, postgres_cluster):
    path = write_challenge(tmp_path, rules="per_day = 3\ntotal = 10\naccounts = 4\nlink = true",
                           mechanism="ladder-boot", params="b = 10, alpha = 0.15")
    rows = np.random.default_rng(2).integers(0, 2, (7, 400)).astype(float)
    transcripts, statuses = [], []
    for url in (sqlite_url(tmp_path / "log.sqlite"), postgres_cluster.database(f"linking_{os.getpid()}")):
        service, tokens = open_service(path, url, SECRET)
        with ThreadServer(service) as server:
            statuses.append(_session(server.url, tokens, rows))
        transcripts.append(_logged(service.storage))
        reopened, _ = open_service(path, url, SECRET)  # verifies the chain and replays every entry and link
        assert reopened._linked.linker.groups() == service._linked.linker.groups()
        service.storage.close()
        reopened.storage.close()
    assert statuses[0] == statuses[1] and 429 in statuses[0] and statuses[0].count(201) >= 6, statuses
    assert transcripts[0] == transcripts[1]
    assert any(entry[5] for entry in transcripts[0]) and any(entry[4] == REFUSED for entry in transcripts[0])


def test_the_chain_covers_the_links(tmp_path, database):
    path = write_challenge(tmp_path, rules=LINKED)
    service, tokens = open_service(path, database, SECRET)
    row = np.random.default_rng(3).integers(0, 2, 400).astype(float)
    with ThreadServer(service) as server:
        assert [upload(server.url, tokens[team], row[None])[0] for team in ("alpha", "beta")] == [201, 201]
    service.storage.verify_chain(service.challenge.identity())
    with service.storage.transaction() as connection:
        connection.execute(sa.update(links).values(differing=1))
    with pytest.raises(StorageError, match="submission 2 was changed after it was written"):
        service.storage.verify_chain(service.challenge.identity())
    service.storage.close()


def test_rules_that_change_the_link_rule_of_a_written_log_are_refused(tmp_path):
    path = write_challenge(tmp_path, rules=LINKED)
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url, SECRET)
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.zeros((1, 400)))[0] == 201
    path.write_text(path.read_text().replace("link = true", "link = true\nlink_alpha = 0.05"))
    with pytest.raises(StorageError, match=r"the log was written with the link rule \{\"alpha\": 0.01"):
        open_service(path, url, SECRET)


def test_a_restart_after_kill_9_keeps_the_groups(tmp_path):
    path = write_challenge(tmp_path, rules=LINKED, limits="uploads_per_second = 1000\nburst = 1000")
    options = ("--uncertified", "--state", str(tmp_path / "state"), "--quiet-access")
    row, other, far = np.random.default_rng(4).integers(0, 2, (3, 400)).astype(float)
    server = ServerProcess(path, *options)
    tokens = server.tokens
    try:
        statuses = [upload(server.url, tokens[team], row[None])[0] for team in ("alpha", "beta", "alpha", "beta")]
        server.kill()
        server = ServerProcess(path, *options)
        after = [upload(server.url, tokens[team], prediction[None])[0] for team, prediction in (("beta", row),
                                                                                                ("gamma", other))]
        distinct = upload(server.url, tokens["beta"], far[None])  # linked for good: far predictions stay in the group
    finally:
        server.stop()
    assert statuses == [201] * 4 and after == [429, 201] and distinct[0] == 429, (statuses, after, distinct)
    storage = Storage(sqlite_url(tmp_path / "state" / "log.sqlite"))
    assert [entry.decision for entry in storage.entries(team="beta")][-2:] == [REFUSED, REFUSED]
    storage.close()
    from ladderlab.cli import main

    assert main(["serve", "verify", str(path), "--state", str(tmp_path / "state")]) == 0


def test_a_log_of_schema_version_2_is_migrated_and_its_entries_still_verify(tmp_path):
    from ladderlab.serve.storage import SCHEMA_VERSION, meta

    path = write_challenge(tmp_path)
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url, SECRET)
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.zeros((2, 400)))[0] == 201
    with service.storage.transaction() as connection:  # the log as version 2 wrote it: no links table
        connection.execute(sa.update(meta).where(meta.c.key == "schema_version").values(value="2"))
        connection.exec_driver_sql("DROP TABLE links")
    service.storage.close()
    reopened, _ = open_service(path, url, SECRET)
    assert reopened.storage.meta_value("schema_version") == SCHEMA_VERSION == "3"
    assert len(reopened.storage.verify_chain(reopened.challenge.identity())) == 2
    reopened.storage.close()


def test_a_refused_submission_is_never_selected_ranked_or_on_the_leaderboard(tmp_path, database):
    import io

    import pyarrow.parquet as pq

    path = write_challenge(tmp_path, rules="per_day = 1000\ntotal = 2\naccounts = 2\nlink = true\nselection = 1")
    service, tokens = open_service(path, database, SECRET)
    row = np.random.default_rng(5).integers(0, 2, 400).astype(float)
    with ThreadServer(service) as server:
        statuses = [upload(server.url, tokens[team], row[None])[0] for team in ("alpha", "beta", "beta")]
        selecting = request(server.url, tokens["beta"], "PUT", "/api/submissions/3/selection")
        board = request(server.url, "", "GET", "/api/leaderboard")[2]
        request(server.url, tokens["organiser"], "POST", "/api/organiser/close")
        final = request(server.url, tokens["organiser"], "GET", "/api/organiser/final")[2]
        export = request(server.url, tokens["organiser"], "GET", "/api/organiser/export")[2]
    assert statuses == [201, 201, 429] and selecting[0] == 409 and "was refused" in selecting[2]["error"]
    assert {team["team"]: team["submissions"] for team in board["teams"]} == {"alpha": 1, "beta": 1}
    assert {team["team"]: team["counted_submission"] for team in final["teams"]} == {"alpha": 1, "beta": 2}
    table = pq.read_table(io.BytesIO(export)).to_pydict()
    assert table["decision"][2] == REFUSED and table["selected"] == [True, True, False]


def test_two_servers_on_one_log_link_across_them(tmp_path, database):
    path = write_challenge(tmp_path, rules="per_day = 1000\ntotal = 2\naccounts = 2\nlink = true")
    first, tokens = open_service(path, database, SECRET)
    second, _ = open_service(path, database, SECRET)
    row = np.random.default_rng(6).integers(0, 2, 400).astype(float)
    with ThreadServer(first) as one, ThreadServer(second) as two:
        statuses = [upload(one.url, tokens["alpha"], row[None])[0], upload(two.url, tokens["beta"], row[None])[0],
                    upload(one.url, tokens["alpha"], row[None])[0]]
    assert statuses == [201, 201, 429]  # the second server linked beta to alpha; the first learnt it from the log
    assert first._linked.keeper("beta") == second._linked.keeper("beta") == "alpha"
