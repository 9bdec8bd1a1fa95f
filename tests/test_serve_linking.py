"""``ladderlab serve`` under ``[rules] link = true``, over HTTP, on SQLite and on PostgreSQL: accounts
that submit the same predictions are linked and share one state and one budget, accounts that do
not are left alone, the groups survive kill -9, and both databases log the same transcript."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladderlab.certification import challenge as challenges
from ladderlab.engines.linking import Linker
from ladderlab.serve import replay
from ladderlab.serve.launch import ServerProcess
from ladderlab.serve.linked import LinkedStates, Outcome
from ladderlab.serve.replay import SHARED
from ladderlab.serve.storage import REFUSED, Storage, StorageError, links, sqlite_url
from tests.serve_helpers import (
    write_secret,
    ThreadServer,
    open_service,
    request,
    upload,
    write_challenge,
)

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
    path.write_text(path.read_text().replace("link = true", "link = true\nlink_min_disagreement = 0.1"))
    with pytest.raises(StorageError, match=r"the log was written with the link rule \{\"min_disagreement\": 0.05, "
                                           r"\"rule\": \"differing-holdout-rows\", \"threshold\": 19"):
        open_service(path, url, SECRET)


def test_a_log_written_under_the_old_link_rule_on_public_rows_is_refused_with_the_reason(tmp_path, capsys):
    """Its links were decided on public rows; this version cannot replay them, and says why, when it
    serves and when ``serve verify`` replays the log."""
    path = write_challenge(tmp_path, rules=LINKED)
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url, SECRET)
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.zeros((1, 400)))[0] == 201
    service.storage.set_meta("link_rule", '{"alpha": 0.01, "min_disagreement": 0.05, "threshold": 2, "tolerance": 0.0}')
    service.storage.close()
    with pytest.raises(StorageError) as refused:
        open_service(path, url, SECRET)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and '"alpha": 0.01' in message
    assert "the old rule on differing public rows (its decision depended on the split)" in message
    from ladderlab.cli.commands import main

    write_secret(tmp_path / "secret", SECRET)
    capsys.readouterr()
    assert main(["serve", "verify", str(path), "--database", url, "--secret", str(tmp_path / "secret")]) == 1
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith("ladderlab: error: ") and message in error, error


@pytest.mark.slow
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
    from ladderlab.cli.commands import main

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
        connection.exec_driver_sql("DROP TABLE events")  # nor events (version 4)
        connection.exec_driver_sql("DELETE FROM chain WHERE singleton = 2")
    service.storage.close()
    reopened, _ = open_service(path, url, SECRET)
    assert reopened.storage.meta_value("schema_version") == SCHEMA_VERSION == "4"
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


def _row_by_row(states: LinkedStates, team: str, P: np.ndarray, day: date) -> list[Outcome]:
    """The service's answer before uploads were vectorised: each row observed, charged and scored
    on its own (the reference :meth:`LinkedStates.submit` must match bit for bit)."""
    account, outcomes = states.index[team], []
    for row in P:
        made = len(states.linker.links)
        keeper = states.linker.observe(account, row, day.toordinal())
        links = tuple((states.teams[link.other], link.differing) for link in states.linker.links[made:])
        key = SHARED if states.shared else states.teams[keeper]
        state = states._state(key)
        if states.linker.charge(keeper, day.toordinal(), states.cap, states.per_day):
            records, decisions = replay.score(state, row[None])
            states.last_release[key] = float(records["released"][0])
            outcomes.append(Outcome(states.teams[keeper], links, float(records["released"][0]),
                                    float(records["public"][0]), float(records["final"][0]), decisions[0]))
        else:
            public, final = state.leaderboard.exact_scores(row[None])
            outcomes.append(Outcome(states.teams[keeper], links, states.last_release[key], float(public[0]),
                                    float(final[0]), REFUSED))
    return outcomes


def _uploads(rng: np.random.Generator, teams: list[str], size: int, count: int) -> list[tuple[str, np.ndarray, date]]:
    """Uploads of 1 to 8 rows over a few days: fresh random rows, and copies (exact or with a few
    rows flipped) of rows another team uploaded, so that some link and some groups reach their caps."""
    made, uploads, day = [], [], date(2030, 1, 1)
    for _ in range(count):
        day = date.fromordinal(day.toordinal() + int(rng.random() < 0.2))
        rows = []
        for _ in range(int(rng.integers(1, 9))):
            if made and rng.random() < 0.4:
                row = made[int(rng.integers(len(made)))].copy()
                flipped = rng.choice(size, size=int(rng.integers(0, 4)), replace=False)
                row[flipped] = 1.0 - row[flipped]
            else:
                row = rng.integers(0, 2, size).astype(float)
            rows.append(row)
        made += rows
        uploads.append((teams[int(rng.integers(len(teams)))], np.array(rows), day))
    return uploads


def _compare_upload_paths(folder: Path, seed: int) -> tuple[int, int]:
    """Play one sequence of uploads through the batched and the row-by-row path and assert that they
    agree bit for bit; return how many links were made inside a multi-row upload, and how many rows refused."""
    path = write_challenge(folder, rules="per_day = 6\ntotal = 14\naccounts = 4\nlink = true")
    challenge = challenges.load(path)
    batched, reference = LinkedStates(challenge, SECRET), LinkedStates(challenge, SECRET)
    check, links_inside, refused = replay.fresh_state(challenge, SECRET, None).leaderboard.check, 0, 0
    for team, rows, day in _uploads(np.random.default_rng(seed), batched.teams, challenge.ids.size, 25):
        P = check(rows)
        got, expected = batched.submit(team, P, day), _row_by_row(reference, team, P, day)
        assert [(o.keeper, o.links, o.decision) for o in got] == [(o.keeper, o.links, o.decision) for o in expected]
        assert np.array_equal(np.array([(o.released, o.public, o.final) for o in got]).view(np.uint64),
                              np.array([(o.released, o.public, o.final) for o in expected]).view(np.uint64))
        links_inside += sum(bool(o.links) for o in got[1:])
        refused += sum(o.decision == REFUSED for o in got)
    linker, same = batched.linker, reference.linker
    assert (linker.groups(), linker.spent, linker.answered, linker.made) == (same.groups(), same.spent, same.answered,
                                                                             same.made)
    assert batched.states.keys() == reference.states.keys()
    for key, state in batched.states.items():
        assert np.array_equal(state.leaderboard.mechanism.released_, reference.states[key].leaderboard.mechanism.released_,
                              equal_nan=True)
    return links_inside, refused


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_a_vectorised_upload_links_charges_and_releases_as_row_by_row(tmp_path, seed):
    """Uploads of several rows, some linking in their middle and some past their group's caps: the
    batched path gives every outcome (keeper, links, release, scores, decision) bit for bit as the
    row-by-row one, and leaves the same groups, caps and mechanism states."""
    _compare_upload_paths(tmp_path / str(seed), seed)


def test_the_upload_comparison_links_inside_uploads_and_refuses_rows(tmp_path):
    links_inside, refused = _compare_upload_paths(tmp_path, 0)
    assert links_inside > 0 and refused > 0


def test_the_service_and_the_competition_engines_linker_form_the_same_groups(tmp_path, database):
    """One sequence of uploads (several rows each, copies of other teams' rows among them) over HTTP,
    and the same submissions fed to a Linker built and charged as the competition engine builds and
    charges it (:meth:`ladderlab.competition.engine`'s linked wave): the same links, the same
    refusals and the same groups with the same keepers."""
    path = write_challenge(tmp_path, rules="per_day = 1000\ntotal = 20\naccounts = 4\nlink = true")  # no team alone reaches 20
    service, tokens = open_service(path, database, SECRET)
    challenge = service.challenge
    teams = sorted(team.name for team in challenge.spec.teams)
    plan = _uploads(np.random.default_rng(5), teams, challenge.ids.size, 12)
    with ThreadServer(service) as server:
        statuses = [upload(server.url, tokens[team], rows)[0] for team, rows, _ in plan]
    rule = challenge.link_rule()
    engine = Linker(rule, len(teams), challenge.split.y_holdout.size)
    expected = []
    for team, rows, _ in plan:
        for row in rows:
            made = len(engine.links)
            keeper = engine.observe(teams.index(team), row, 0)
            refused = not engine.charge(keeper, 0, challenge.spec.rules.total, challenge.spec.rules.per_day)
            expected.append((team, tuple((teams[link.other], link.differing) for link in engine.links[made:]), refused))
    logged = _logged(service.storage)
    assert [(entry[0], entry[5], entry[4] == REFUSED) for entry in logged] == expected
    assert [service._linked.keeper(team) for team in teams] == [teams[keeper] for keeper in engine.groups()]
    assert any(links for _, links, _ in expected) and any(refused for *_, refused in expected) and 201 in statuses
