"""The organiser sees the links and the final ranking acts on them, over HTTP to a running server on
SQLite and PostgreSQL: ``/api/organiser/links`` (JSON and Parquet), ``final?linked=…``,
``private-losses?linked=…`` and ``serve verify``/``serve links``."""

from __future__ import annotations

import io
import itertools
import json
import os

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.cli.commands import main
from ladderlab.serve.organiser_links import read_link_table
from ladderlab.serve.storage import sqlite_url
from tests.serve_helpers import (
    write_secret,
    ThreadServer,
    open_service,
    request,
    upload,
    write_challenge,
)

_databases = itertools.count()

SECRET = 1234
LINKED = "per_day = 1000\ntotal = 20\naccounts = 4\nlink = true"


def _copying_session(url: str, tokens: dict[str, str], rows: np.ndarray) -> None:
    """alpha submits row 0; beta copies it (linked to alpha); gamma and delta submit their own rows."""
    for team, index in (("alpha", 0), ("gamma", 1), ("beta", 0), ("delta", 2), ("gamma", 3)):
        assert upload(url, tokens[team], rows[index][None])[0] == 201


def test_the_organiser_sees_each_link_with_its_pair_and_count_and_the_ranking_acts_on_it(tmp_path, database):
    path = write_challenge(tmp_path, rules=LINKED)
    service, tokens = open_service(path, database, SECRET)
    rows = np.random.default_rng(0).integers(0, 2, (4, 400)).astype(float)
    with ThreadServer(service) as server:
        _copying_session(server.url, tokens, rows)
        assert request(server.url, tokens["alpha"], "GET", "/api/organiser/links")[0] == 401
        status, _, links = request(server.url, tokens["organiser"], "GET", "/api/organiser/links")
        parquet = request(server.url, tokens["organiser"], "GET", "/api/organiser/links.parquet")[2]
        request(server.url, tokens["organiser"], "POST", "/api/organiser/close")
        finals = {policy: request(server.url, tokens["organiser"], "GET", f"/api/organiser/final?linked={policy}")[2]
                  for policy in ("flag", "merge", "disqualify")}
        default = request(server.url, tokens["organiser"], "GET", "/api/organiser/final")[2]
        refused = request(server.url, tokens["organiser"], "GET", "/api/organiser/final?linked=drop")
        losses = request(server.url, tokens["organiser"], "GET", "/api/organiser/private-losses?linked=merge")[2]
    assert status == 200 and links["threshold"] == 19 and links["holdout_size"] == 400
    [group] = links["groups"]
    assert group["teams"] == ["alpha", "beta"] and len(group["links"]) == 1
    link = group["links"][0]
    assert (link["team"], link["other"], link["submission_id"], link["other_submission_id"], link["differing"],
            link["threshold"]) == ("beta", "alpha", 3, 1, 0, 19)
    assert group["first_linked_at"] == link["submitted_at"]
    (tmp_path / "links.parquet").write_bytes(parquet)
    table = read_link_table(tmp_path / "links.parquet").to_pylist()
    assert [(row["group"], row["team"], row["other"], row["differing"]) for row in table] == [(1, "beta", "alpha", 0)]

    assert default["linked"] == "flag" and default["teams"] == finals["flag"]["teams"]
    flagged = {row["team"]: row["linked_with"] for row in finals["flag"]["teams"]}
    assert flagged == {"alpha": ["beta"], "beta": ["alpha"], "gamma": [], "delta": []}
    merged = {row["team"] for row in finals["merge"]["teams"]}
    assert merged == {"alpha + beta", "gamma", "delta"}
    assert [row["private_rank"] for row in finals["merge"]["teams"]] == [1, 2, 3]
    assert {row["team"] for row in finals["disqualify"]["teams"]} == {"gamma", "delta"}
    reasons = {row["team"]: row["reason"] for row in finals["disqualify"]["disqualified"]}
    assert reasons["beta"].startswith("linked with alpha since ") and "on 0 of 400 holdout rows (at most 19" in reasons["beta"]
    assert refused[0] == 400 and "linked must be one of flag, merge, disqualify, got 'drop'" in refused[2]["error"]
    assert set(pq.read_table(io.BytesIO(losses)).column("team").to_pylist()) == merged


def test_verify_prints_the_groups_it_replayed_and_links_writes_them(tmp_path, capsys):
    path = write_challenge(tmp_path, rules=LINKED)
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url, SECRET)
    write_secret(tmp_path / "secret", SECRET)
    log = ["--database", url, "--secret", str(tmp_path / "secret")]
    rows = np.random.default_rng(0).integers(0, 2, (4, 400)).astype(float)
    with ThreadServer(service) as server:
        _copying_session(server.url, tokens, rows)
    service.storage.close()
    capsys.readouterr()
    assert main(["serve", "verify", str(path), *log]) == 0
    out = capsys.readouterr().out
    assert "1 linked group: alpha + beta (first linked at " in out and "beta's submission 3 differed from alpha's " \
                                                                     "submission 1 on 0 of 400 holdout rows" in out
    assert main(["serve", "links", str(path), *log, "--out", str(tmp_path / "links.json")]) == 0
    written = json.loads((tmp_path / "links.json").read_text())
    assert [group["teams"] for group in written["groups"]] == [["alpha", "beta"]]
    assert main(["serve", "links", str(path), *log, "--out", str(tmp_path / "links.parquet")]) == 0
    assert read_link_table(tmp_path / "links.parquet").num_rows == 1


def test_a_links_file_of_another_schema_is_refused_naming_the_column(tmp_path):
    import pyarrow as pa

    pq.write_table(pa.table({"team": ["a"]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad.parquet: no column 'group'"):
        read_link_table(tmp_path / "bad.parquet")


@pytest.fixture(params=["sqlite", "postgresql"])
def new_log(request):
    """A function of a folder giving the URL of a new, empty log: SQLite there, or PostgreSQL."""
    if request.param == "sqlite":
        return lambda folder: sqlite_url(folder / "log.sqlite")
    cluster = request.getfixturevalue("postgres_cluster")
    return lambda folder: cluster.database(f"merge_{os.getpid()}_{next(_databases)}")


def test_the_ranking_merges_exactly_the_groups_the_mechanism_answered_as_one(tmp_path_factory, new_log):
    """Whatever the teams copy from each other, ``final?linked=merge`` has one entry per group of the
    linker that answered them, and ``/links`` lists those groups."""
    teams = ["alpha", "beta", "gamma", "delta"]

    @settings(max_examples=4, deadline=None)
    @given(seed=st.integers(0, 2**32 - 1))
    def check(seed: int) -> None:
        folder = tmp_path_factory.mktemp("merge")
        path = write_challenge(folder, rules=LINKED)
        service, tokens = open_service(path, new_log(folder), SECRET)
        rng = np.random.default_rng(seed)
        rows = rng.integers(0, 2, (4, 400)).astype(float)
        with ThreadServer(service) as server:
            for team, index in zip(rng.choice(teams, 8), rng.integers(0, 4, 8)):
                assert upload(server.url, tokens[team], rows[index][None])[0] in (201, 429)
            links = request(server.url, tokens["organiser"], "GET", "/api/organiser/links")[2]
            request(server.url, tokens["organiser"], "POST", "/api/organiser/close")
            merged = request(server.url, tokens["organiser"], "GET", "/api/organiser/final?linked=merge")[2]
        groups: dict[str, set[str]] = {}
        for team in teams:
            groups.setdefault(service._linked.keeper(team), set()).add(team)
        answered = {entry.team for entry in service.storage.entries() if entry.decision != "refused"}
        service.storage.close()
        assert {frozenset(row["team"].split(" + ")) for row in merged["teams"]} == {
            frozenset(group & answered) for group in groups.values() if group & answered}
        assert {frozenset(group["teams"]) for group in links["groups"]} == {
            frozenset(group) for group in groups.values() if len(group) > 1}

    check()


def _rewrite_links(storage, changed: dict[int, tuple[tuple[str, int], ...]]) -> None:
    """Give the entries ``changed`` names other links and rewrite the chain from them on, as someone
    with the database could: the chain is consistent again, so only the replay can tell."""
    import sqlalchemy as sa

    from ladderlab.serve.storage import chain, entry_hash, links, submissions

    entries = storage.verify_chain(storage.meta_value("challenge_identity") or "")
    with storage.transaction() as connection:
        previous = entries[0].previous_hash
        for entry in entries:
            made = changed.get(entry.submission_id, entry.links)
            digest = entry_hash(entry.submission_id, entry.team, entry.team_sequence, entry.submitted_at_us,
                                entry.prediction_sha256, entry.public_score, entry.private_score, entry.released,
                                entry.decision, entry.idempotency_key, previous, made)
            connection.execute(sa.update(submissions).where(submissions.c.submission_id == entry.submission_id)
                               .values(previous_hash=previous, entry_hash=digest))
            if entry.submission_id in changed:
                connection.execute(sa.delete(links).where(links.c.submission_id == entry.submission_id))
                for position, (other, differing) in enumerate(made):
                    connection.execute(links.insert().values(submission_id=entry.submission_id, position=position,
                                                             other=other, differing=differing))
            previous = digest
        connection.execute(sa.update(chain).where(chain.c.singleton == 1).values(last_hash=previous))


@pytest.mark.parametrize("changed", [{3: ()}, {4: (("alpha", 3),)}], ids=["link-removed", "link-added"])
def test_verify_refuses_a_log_whose_links_differ_from_the_ones_the_rule_makes(tmp_path, capsys, changed):
    path = write_challenge(tmp_path, rules=LINKED)
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url, SECRET)
    write_secret(tmp_path / "secret", SECRET)
    rows = np.random.default_rng(0).integers(0, 2, (4, 400)).astype(float)
    with ThreadServer(service) as server:
        _copying_session(server.url, tokens, rows)
    _rewrite_links(service.storage, changed)
    assert len(service.storage.verify_chain(service.challenge.identity())) == 5, "the rewritten chain is consistent"
    service.storage.close()
    capsys.readouterr()
    assert main(["serve", "verify", str(path), "--database", url, "--secret", str(tmp_path / "secret")]) == 1
    [number] = changed
    error = capsys.readouterr().err
    assert f"submission {number} (" in error and "does not replay" in error, error
