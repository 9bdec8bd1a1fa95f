"""``ladderlab serve`` over HTTP, on SQLite and on PostgreSQL: uploads, refusals, caps, idempotency,
the race for the last submission, restarts, several servers on one log, the close and the export."""

from __future__ import annotations

import io
import json
import threading

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from ladderlab.runs.duel import open_board
from ladderlab.serve import replay
from ladderlab.serve.replay import mechanism_stream
from ladderlab.serve.security import new_token
from ladderlab.serve.storage import Storage, StorageError
from tests.serve_helpers import (
    TEAMS,
    ThreadServer,
    open_service,
    request,
    upload,
    write_challenge,
)

SECRET = 1234


def _rows(seed: int, m: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, (m, n)).astype(float)


def _count(service) -> int:
    return len(service.storage.entries())


def test_no_token_looks_like_a_command_line_option():
    """``ladderlab serve attack URL --token TOKEN`` takes any issued token: none starts with '-' (a bare
    URL-safe token did, one in 64, and argparse refused it; 2,000 draws find that with
    probability 1 − 2·10⁻¹⁴)."""
    tokens = [new_token() for _ in range(2000)]
    assert not [token for token in tokens if token.startswith("-")]
    assert len(set(tokens)) == len(tokens)


def test_every_format_by_id_in_any_order_is_the_same_prediction(tmp_path, database):
    path = write_challenge(tmp_path)
    service, tokens = open_service(path, database)
    ids = service.challenge.ids
    prediction = _rows(1, 1, ids.size)[0]
    table = pd.DataFrame({"id": ids, "prediction": prediction}).sample(frac=1, random_state=3)
    parquet = io.BytesIO()
    table.to_parquet(parquet, index=False)
    bodies = {"text/csv": table.to_csv(index=False).encode(), "application/vnd.apache.parquet": parquet.getvalue(),
              "application/json": json.dumps({"id": table.id.tolist(), "prediction": table.prediction.tolist()}).encode()}
    with ThreadServer(service) as server:
        for content_type, body in bodies.items():
            status, _, answer = request(server.url, tokens["alpha"], "POST", "/api/submissions", body,
                                        {"Content-Type": content_type})
            assert status == 201, answer
        assert upload(server.url, tokens["alpha"], prediction[None])[0] == 201
        status, _, own = request(server.url, tokens["alpha"], "GET", "/api/submissions")
    digests = {row["prediction_sha256"] for row in own["submissions"]}
    assert status == 200 and len(own["submissions"]) == 4 and len(digests) == 1


def _bad_uploads(n: int, ids: np.ndarray) -> list[tuple[str, bytes, str, int, str]]:
    """(what, body, content type, status, words of the answer)."""
    good = pd.DataFrame({"id": ids, "prediction": 0.0})
    csv = lambda table: table.to_csv(index=False).encode()  # noqa: E731
    with_value = lambda value: csv(good.assign(prediction=[value] + [0.0] * (n - 1)))  # noqa: E731
    return [
        ("wrong length", _npy(np.zeros(n - 1)), "application/x-npy", 422, f"length {n}"),
        ("missing id", csv(good.iloc[1:]), "text/csv", 422, f"1 holdout id(s) missing, e.g. '{ids[0]}'"),
        ("unknown id", csv(pd.concat([good, pd.DataFrame({"id": ["nope"], "prediction": [0.0]})])), "text/csv", 422,
         "unknown id(s), e.g. 'nope'"),
        ("repeated id", csv(pd.concat([good, good.iloc[:1]])), "text/csv", 422, f"id '{ids[0]}' appears 2 times"),
        ("NaN", with_value(float("nan")), "text/csv", 422, f"id '{ids[0]}': predictions must be finite"),
        ("label outside the class set", with_value(2.0), "text/csv", 422, f"id '{ids[0]}': submission 0 has label 2"),
        ("not a number", with_value("abc"), "text/csv", 422, f"id '{ids[0]}': 'abc' is not a number"),
        ("no id column", csv(good.rename(columns={"id": "key"})), "text/csv", 422, "no 'id' column"),
        ("not CSV", b"\x00\x01\x02", "text/csv", 422, "the upload has no 'id' column (columns: '\\x00"),
        ("not Parquet", b"PAR1 no", "application/vnd.apache.parquet", 422, "cannot read the upload as PARQUET"),
        ("unknown type", b"x", "image/png", 415, "cannot read an upload of type 'image/png'"),
        ("a form (curl -F)", b"--b--", "multipart/form-data; boundary=b", 415, "post the file itself as the body with its "
         "type, not a form, e.g. curl --data-binary @submission.csv -H 'Content-Type: text/csv'"),
        ("curl's default type", csv(good), "application/x-www-form-urlencoded", 415, "post the file itself as the body"),
        ("empty", b"", "text/csv", 422, "the upload is empty"),
        ("too large", b"0" * 200_000, "text/csv", 413, "more than the limit of"),
    ]


def _npy(array: np.ndarray) -> bytes:
    from tests.serve_helpers import npy

    return npy(array)


def test_a_bad_upload_gets_a_4xx_that_names_the_problem_and_changes_nothing(tmp_path, database):
    path = write_challenge(tmp_path, n=300, limits="max_upload_bytes = 100000")
    service, tokens = open_service(path, database)
    ids = service.challenge.ids
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], _rows(0, 1, ids.size))[0] == 201
        before = service.storage.entries()
        for what, body, content_type, expected_status, words in _bad_uploads(ids.size, ids):
            status, _, answer = request(server.url, tokens["alpha"], "POST", "/api/submissions", body,
                                        {"Content-Type": content_type})
            assert (status, words in answer["error"]) == (expected_status, True), (what, answer)
        for token, words in (("not-a-token", "unknown team token"), ("", "Bearer")):
            status, _, answer = request(server.url, token, "POST", "/api/submissions", _npy(np.zeros(ids.size)),
                                        {"Content-Type": "application/x-npy"})
            assert status == 401 and words in answer["error"]
        assert service.storage.entries() == before
        assert upload(server.url, tokens["alpha"], _rows(0, 1, ids.size))[1]["submissions"][0]["sequence"] == 2


def test_caps_refuse_a_whole_batch_and_say_when_the_day_resets(tmp_path, database):
    path = write_challenge(tmp_path, rules="per_day = 3\ntotal = 4")
    service, tokens = open_service(path, database)
    n = service.challenge.ids.size
    with ThreadServer(service) as server:
        status, answer = upload(server.url, tokens["alpha"], _rows(0, 2, n))
        assert status == 201 and (answer["remaining_today"], answer["remaining_total"]) == (1, 2)
        status, answer = upload(server.url, tokens["alpha"], _rows(1, 2, n))
        assert status == 429 and answer["reason"] == "cap"
        assert "daily cap of 3" in answer["error"] and "resets at" in answer["error"] and "T00:00:00Z" in answer["error"]
        assert answer["retry_after"] > 0
        assert _count(service) == 2
        assert upload(server.url, tokens["alpha"], _rows(1, 1, n))[0] == 201
        status, answer = upload(server.url, tokens["beta"], _rows(2, 3, n))
        assert status == 201, "another team has its own caps"
    path.write_text(path.read_text().replace("per_day = 3", "per_day = 10"))
    service, _ = open_service(path, database)
    with ThreadServer(service) as server:
        status, answer = upload(server.url, tokens["alpha"], _rows(3, 2, n))
        assert status == 429 and "total cap of 4" in answer["error"]
        assert upload(server.url, tokens["alpha"], _rows(3, 1, n))[0] == 201


def test_a_retried_upload_with_its_idempotency_key_counts_once(tmp_path, database):
    path = write_challenge(tmp_path)
    service, tokens = open_service(path, database)
    rows = _rows(4, 2, service.challenge.ids.size)
    with ThreadServer(service) as server:
        first = upload(server.url, tokens["alpha"], rows, key="upload-1")
        again = upload(server.url, tokens["alpha"], rows, key="upload-1")
        other = upload(server.url, tokens["alpha"], rows[::-1], key="upload-1")
        elsewhere = upload(server.url, tokens["beta"], rows, key="upload-1")
    assert first[0] == 201 and again[0] == 200 and again[1]["repeated"]
    assert again[1]["submissions"] == first[1]["submissions"]
    assert other[0] == 409 and "used before for other predictions" in other[1]["error"]
    assert elsewhere[0] == 201, "keys belong to a team"
    assert _count(service) == 4


def test_two_servers_on_one_log_race_for_the_last_submission_of_the_day_and_one_wins(tmp_path, database):
    teams = tuple(f"team{i}" for i in range(8))
    path = write_challenge(tmp_path, rules="per_day = 1", teams=teams)
    first, tokens = open_service(path, database)
    second, _ = open_service(path, database)
    n = first.challenge.ids.size
    with ThreadServer(first) as one, ThreadServer(second) as two:
        for team in teams:
            barrier = threading.Barrier(2)
            statuses = []

            def race(url: str, seed: int) -> None:
                barrier.wait()
                statuses.append(upload(url, tokens[team], _rows(seed, 1, n))[0])

            racers = [threading.Thread(target=race, args=(url, seed)) for seed, url in enumerate((one.url, two.url))]
            for racer in racers:
                racer.start()
            for racer in racers:
                racer.join()
            assert sorted(statuses) == [201, 429], team
    counts = pd.Series([entry.team for entry in first.storage.entries()]).value_counts()
    assert (counts == 1).all() and len(counts) == len(teams)


def _reference(challenge, team: str, rows: np.ndarray) -> np.ndarray:
    """What an uninterrupted, single mechanism releases for the team's predictions, in process."""
    board = open_board(challenge.split, challenge.mechanism(), mechanism_stream(SECRET, challenge, team))
    return np.array([board.submit(row) for row in rows])


def test_the_rate_limit_holds_across_two_servers_on_one_log(tmp_path, database):
    from datetime import datetime, timedelta, timezone

    from ladderlab.certification import challenge as challenges
    from ladderlab.serve.service import Service, ServiceError

    path = write_challenge(tmp_path, n=30, limits="uploads_per_second = 2\nburst = 2")
    now = datetime(2026, 1, 5, tzinfo=timezone.utc)
    first, second = (Service(challenges.load(path), Storage(database), SECRET, clock=lambda: now) for _ in range(2))
    first.open(), second.open()
    row = np.zeros((1, 30))
    first.submit("alpha", row), first.submit("alpha", row)
    with pytest.raises(ServiceError, match=r"at most 2 per second \(bursts of 2\); try again in 0\.50 s") as refused:
        second.submit("alpha", row)
    assert (refused.value.status, refused.value.reason, refused.value.retry_after) == (429, "rate", 0.5)
    second.submit("beta", row)  # the bucket is the team's
    now += timedelta(seconds=0.5)
    second.submit("alpha", row)
    with pytest.raises(ServiceError, match="too many uploads"):
        first.submit("alpha", row)
    assert [entry.team for entry in first.storage.entries()] == ["alpha", "alpha", "beta", "alpha"]
    first.storage.close(), second.storage.close()


def test_an_upload_counts_in_the_rate_limit_before_it_is_read(tmp_path, database):
    """A team cannot make the server parse uploads without limit: the bucket is charged, and
    committed, before the upload is read, so uploads refused later (unreadable, invalid) count."""
    from datetime import datetime, timezone

    from ladderlab.certification import challenge as challenges
    from ladderlab.serve.service import Service, ServiceError

    path = write_challenge(tmp_path, n=30, limits="uploads_per_second = 2\nburst = 2")
    service = Service(challenges.load(path), Storage(database), SECRET, clock=lambda: datetime(2026, 1, 5, tzinfo=timezone.utc))
    service.open()
    service.admit("alpha"), service.admit("alpha")  # two uploads the reader then refused
    with pytest.raises(ServiceError, match="too many uploads"):
        service.submit("alpha", np.zeros((1, 30)))
    assert service.storage.entries() == []
    service.storage.close()


@pytest.mark.parametrize("mechanism, params", [("ladder-boot", "b = 20, alpha = 0.15"), ("noisy", "scale = 0.05")])
def test_two_servers_and_a_restart_release_what_one_uninterrupted_mechanism_would(tmp_path, database, mechanism, params):
    path = write_challenge(tmp_path, mechanism=mechanism, params=params)
    first, tokens = open_service(path, database)
    second, _ = open_service(path, database)
    n = first.challenge.ids.size
    rows = _rows(5, 12, n)
    released = []
    with ThreadServer(first) as one, ThreadServer(second) as two:
        for i, row in enumerate(rows[:8]):
            released.append(upload((one.url, two.url)[i % 3 == 0], tokens["alpha"], row[None])[1]["submissions"][0]["released"])
    restarted, _ = open_service(path, database)
    with ThreadServer(restarted) as server:
        for row in rows[8:]:
            released.append(upload(server.url, tokens["alpha"], row[None])[1]["submissions"][0]["released"])
    assert np.array_equal(np.array(released), _reference(first.challenge, "alpha", rows))


def test_verify_finds_an_entry_changed_or_removed_after_it_was_written(tmp_path, database):
    path = write_challenge(tmp_path)
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        for seed in range(3):
            upload(server.url, tokens["alpha"], _rows(seed, 2, service.challenge.ids.size))
    challenge, storage = service.challenge, Storage(database)
    assert replay.rebuild(challenge, storage, SECRET)[1] == 6
    from ladderlab.serve.storage import submissions

    with storage.transaction() as connection:
        connection.execute(submissions.update().where(submissions.c.submission_id == 4).values(released=0.25))
    with pytest.raises(StorageError, match="submission 4 was changed after it was written"):
        replay.rebuild(challenge, storage, SECRET)
    with storage.transaction() as connection:
        connection.execute(submissions.delete().where(submissions.c.submission_id >= 4))
    with pytest.raises(StorageError, match="entries were removed"):
        replay.rebuild(challenge, storage, SECRET)
    with pytest.raises(StorageError, match="another secret"):
        open_service(path, database, secret=SECRET + 1)


def test_a_log_whose_releases_do_not_replay_is_refused(tmp_path, database):
    path = write_challenge(tmp_path)
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        upload(server.url, tokens["alpha"], _rows(0, 3, service.challenge.ids.size))
    storage = Storage(database)
    from ladderlab.serve.storage import entry_hash, submissions

    with storage.transaction() as connection:  # a consistent chain whose second release is not the mechanism's
        entries = storage.entries(connection)
        previous = entries[0].entry_hash
        for entry in entries[1:]:
            released = 0.125 if entry.submission_id == 2 else entry.released
            digest = entry_hash(entry.submission_id, entry.team, entry.team_sequence, entry.submitted_at_us,
                                entry.prediction_sha256, entry.public_score, entry.private_score, released,
                                entry.decision, entry.idempotency_key, previous)
            connection.execute(submissions.update().where(submissions.c.submission_id == entry.submission_id).values(
                released=released, previous_hash=previous, entry_hash=digest))
            previous = digest
        connection.execute(sa.text("UPDATE chain SET last_hash = :h WHERE singleton = 1"), {"h": previous})
    with pytest.raises(StorageError, match=r"submission 2 \(alpha #2\) does not replay"):
        replay.rebuild(service.challenge, storage, SECRET)


def test_after_the_close_the_organiser_gets_the_final_ranking_and_the_log_as_parquet(tmp_path, database):
    path = write_challenge(tmp_path, rules="selection = 2")
    service, tokens = open_service(path, database)
    n = service.challenge.ids.size
    labels = service.challenge.split.y_holdout
    with ThreadServer(service) as server:
        url = server.url
        for index, team in enumerate(TEAMS[:3]):  # better teams copy more of the labels
            rows = np.where(np.random.default_rng(index).random((3, n)) < 0.2 * (index + 1), labels, 1 - labels)
            upload(url, tokens[team], rows)
        status, _, answer = request(url, tokens["organiser"], "GET", "/api/organiser/export")
        assert status == 409 and "still open" in answer["error"]
        assert request(url, tokens["alpha"], "POST", "/api/organiser/close")[0] == 401
        assert request(url, tokens["alpha"], "PUT", "/api/submissions/1/selection")[0] == 200
        assert request(url, tokens["alpha"], "PUT", "/api/submissions/2/selection")[0] == 200
        status, _, answer = request(url, tokens["alpha"], "PUT", "/api/submissions/3/selection")
        assert status == 409 and "at most 2" in answer["error"]
        assert request(url, tokens["alpha"], "PUT", "/api/submissions/4/selection")[0] == 404, "beta's submission"
        assert request(url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        assert upload(url, tokens["beta"], labels[None])[1]["reason"] == "closed"
        status, _, final = request(url, tokens["organiser"], "GET", "/api/organiser/final")
        status, _, exported = request(url, tokens["organiser"], "GET", "/api/organiser/export")
    table = pq.read_table(io.BytesIO(exported))
    assert table.column_names[:8] == ["team", "submission_id", "team_sequence", "submitted_at", "public_score",
                                      "private_score", "released", "selected"]
    assert [str(t) for t in table.schema.types[:8]] == ["string", "int64", "int64", "timestamp[us, tz=UTC]", "double",
                                                        "double", "double", "bool"]
    assert table.schema.metadata[b"ladderlab.scorer"] == b"zero-one"
    assert table.schema.metadata[b"ladderlab.greater_is_better"] == b"false"
    frame = table.to_pandas()
    entries = {entry.submission_id: entry for entry in service.storage.entries()}
    assert all(frame.private_score[i] == entries[sid].private_score for i, sid in enumerate(frame.submission_id))
    assert frame[frame.team == "alpha"].selected.tolist() == [True, True, False]
    for team in ("beta", "gamma"):  # automatic rule: the last one and the best released other
        assert frame[frame.team == team].selected.sum() == 2 and frame[frame.team == team].selected.iloc[-1]
    assert [row["team"] for row in final["teams"]] == ["gamma", "beta", "alpha"]
    gamma = final["teams"][0]
    assert gamma["private"] == frame[(frame.team == "gamma") & frame.selected].private_score.min()
    assert final["shake_up"]["winner_delta"] == pytest.approx(gamma["public"] - gamma["private"])


def test_the_exported_log_gives_replay_the_holdout_sizes_so_it_needs_no_size_options(tmp_path, capsys):
    from ladderlab.cli.commands import main
    from ladderlab.final_rankings.submission_log import read_log
    from ladderlab.serve.storage import sqlite_url

    path = write_challenge(tmp_path, n=300, rules="selection = 1")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    labels = service.challenge.split.y_holdout
    with ThreadServer(service) as server:
        for index, team in enumerate(TEAMS):
            rows = np.where(np.random.default_rng(index).random((2, labels.size)) < 0.2 * (index + 1), labels, 1 - labels)
            upload(server.url, tokens[team], rows)
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        _, _, exported = request(server.url, tokens["organiser"], "GET", "/api/organiser/export")
    (tmp_path / "export.parquet").write_bytes(exported)
    log = read_log(tmp_path / "export.parquet")
    assert (log.public_size, log.private_size) == (150, 150)
    assert main(["stats", "replay", str(tmp_path / "export.parquet"), "--format", "json",
                 "--mechanism", "noisy"]) == 0, "the noise scale is derived from the public size"
    report = json.loads(capsys.readouterr().out)
    assert report["unavailable"] == [] and report["state_of_the_art"]


@pytest.mark.parametrize("scorer, extra", [("zero-one", ""), ("log-loss", "prediction_range = [0.05, 0.95]")])
def test_the_private_losses_of_each_counted_submission_average_to_its_private_score_and_certify_the_ranking(
        tmp_path, database, capsys, scorer, extra):
    from ladderlab.cli.commands import main
    from ladderlab.final_rankings.private_samples import read_samples

    path = write_challenge(tmp_path, n=200, scorer=scorer, extra=extra, rules="selection = 2")
    service, tokens = open_service(path, database)
    labels = service.challenge.split.y_holdout
    with ThreadServer(service) as server:
        for index, team in enumerate(TEAMS):
            rng = np.random.default_rng(index)
            rows = np.where(rng.random((3, labels.size)) < 0.2 * (index + 1), labels, 1 - labels)
            upload(server.url, tokens[team], rows if scorer == "zero-one" else rows * rng.random(rows.shape))
        status, _, answer = request(server.url, tokens["organiser"], "GET", "/api/organiser/private-losses")
        assert status == 409 and answer["reason"] == "open"
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        assert request(server.url, tokens["alpha"], "GET", "/api/organiser/private-losses")[0] == 401
        _, _, final = request(server.url, tokens["organiser"], "GET", "/api/organiser/final")
        _, _, exported = request(server.url, tokens["organiser"], "GET", "/api/organiser/private-losses")
    (tmp_path / "losses.parquet").write_bytes(exported)
    samples = read_samples(tmp_path / "losses.parquet")
    private = {row["team"]: row["private"] for row in final["teams"]}
    assert samples.teams == list(private) and samples.size == service.challenge.split.final_rows.size
    assert samples.losses.mean(axis=1) == pytest.approx([private[team] for team in samples.teams], abs=1e-12)
    assert main(["stats", "rank-certificate", str(tmp_path / "losses.parquet"), "--format", "json", "--replicates", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["winner"] == final["teams"][0]["team"]


def test_a_scorer_that_does_not_split_into_samples_has_no_private_losses(tmp_path):
    from ladderlab.serve.storage import sqlite_url

    path = write_challenge(tmp_path, n=100, scorer="roc-auc")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        upload(server.url, tokens["alpha"], np.random.default_rng(0).random((1, 100)))
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        status, _, answer = request(server.url, tokens["organiser"], "GET", "/api/organiser/private-losses")
    assert status == 409 and answer["reason"] == "not-per-sample" and "'roc-auc'" in answer["error"]


def _named_classes(path, names: dict[float, str]) -> None:
    labels = pd.read_csv(path.parent / "labels.csv", dtype={"id": str})
    labels["label"] = labels.label.map(names)
    labels.to_csv(path.parent / "labels.csv", index=False)


@pytest.mark.parametrize("scorer, extra", [("zero-one", ""), ("multiclass-log-loss", "prediction_range = [0.01, 0.99]")])
def test_class_names_are_the_columns_and_values_of_an_upload_and_the_indices_of_npy_rows(tmp_path, scorer, extra):
    from ladderlab.serve.storage import sqlite_url

    path = write_challenge(tmp_path, n=60, scorer=scorer, extra=extra)
    _named_classes(path, {0.0: "malignant", 1.0: "benign"})
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    ids = service.challenge.ids
    indices = np.random.default_rng(5).integers(0, 2, ids.size)
    names = np.array(["benign", "malignant"])[indices]
    if scorer == "zero-one":
        rows, table = indices.astype(float), pd.DataFrame({"id": ids, "prediction": names})
        wrong = table.assign(prediction=["cow"] + names[1:].tolist())
    else:
        rows = np.stack([0.2 + 0.6 * (indices == 0), 0.2 + 0.6 * (indices == 1)], axis=1)
        table = pd.DataFrame({"id": ids, "benign": rows[:, 0], "malignant": rows[:, 1]})
        wrong = table.rename(columns={"benign": "0"})
    with ThreadServer(service) as server:
        status, _, described = request(server.url, "", "GET", "/api/challenge")
        assert described["class_names"] == ["benign", "malignant"] and described["classes"] == [0.0, 1.0]
        sample = request(server.url, "", "GET", "/sample_submission.csv")[2].decode().splitlines()
        assert sample[0] == ("id,prediction" if scorer == "zero-one" else "id,benign,malignant")
        assert sample[1].endswith(",benign" if scorer == "zero-one" else ",0.5,0.5")
        by_names = request(server.url, tokens["alpha"], "POST", "/api/submissions",
                           table.sample(frac=1, random_state=2).to_csv(index=False).encode(),
                           {"Content-Type": "text/csv"})
        by_indices = upload(server.url, tokens["alpha"], rows[None])
        status, _, refused = request(server.url, tokens["alpha"], "POST", "/api/submissions",
                                     wrong.to_csv(index=False).encode(), {"Content-Type": "text/csv"})
        own = request(server.url, tokens["alpha"], "GET", "/api/submissions")[2]["submissions"]
    assert (by_names[0], by_indices[0], status) == (201, 201, 422)
    assert own[0]["prediction_sha256"] == own[1]["prediction_sha256"] and len(own) == 2
    expected = (f"id '{ids[0]}': 'cow' is not one of the classes 'benign', 'malignant'" if scorer == "zero-one"
                else "the upload needs the column(s) 'benign', 'malignant'")
    assert expected in refused["error"]


def test_the_final_ranking_reports_identical_rankings_as_exactly_one(tmp_path, database):
    """Five teams, the k-th wrong on k public and k final rows: the public and final rankings are
    the same, and /api/organiser/final says 1.0, not scipy's 0.9999999999999999."""
    teams = ("t0", "t1", "t2", "t3", "t4")
    path = write_challenge(tmp_path, mechanism="full-disclosure", params="", rules="selection = 1", teams=teams)
    service, tokens = open_service(path, database)
    split = service.challenge.split
    with ThreadServer(service) as server:
        for k, team in enumerate(teams):
            row = split.y_holdout.copy()
            wrong = np.r_[split.public_rows[:k], split.final_rows[:k]]
            row[wrong] = 1 - row[wrong]
            assert upload(server.url, tokens[team], row[None])[0] == 201
        assert request(server.url, tokens["organiser"], "POST", "/api/organiser/close")[0] == 200
        final = request(server.url, tokens["organiser"], "GET", "/api/organiser/final")[2]
    assert [row["team"] for row in final["teams"]] == list(teams)
    assert (final["shake_up"]["spearman"], final["shake_up"]["kendall"]) == (1.0, 1.0)
