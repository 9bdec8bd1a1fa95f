"""The final leaderboard the page shows after the close: none before it, then every team's private
score with the rank certificate's intervals and P(best), exactly what ``ladderlab stats rank-certificate``
gives on the organiser's private losses; computed once and kept, again when the log moves on; under
the organiser's linked-teams policy; for a metric that does not split into samples too."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from ladderlab.serve import final_board
from ladderlab.serve.storage import sqlite_url
from tests.serve_helpers import (
    TEAMS,
    Browser,
    ThreadServer,
    open_service,
    page_request,
    request,
    upload,
    write_challenge,
)


def _submit_noisy_copies(url: str, tokens: dict[str, str], labels: np.ndarray, real: bool = False) -> None:
    for index, team in enumerate(TEAMS):
        rng = np.random.default_rng(index)
        rows = np.where(rng.random((3, labels.size)) < 0.15 * (index + 1), 1 - labels, labels)
        assert upload(url, tokens[team], rows * rng.random(rows.shape) if real else rows)[0] == 201


def test_the_board_is_the_final_ranking_with_the_intervals_rank_certificate_gives(tmp_path, database, capsys):
    from ladderlab.cli.commands import main

    path = write_challenge(tmp_path, n=300, rules="per_day = 10\nselection = 2")
    service, tokens = open_service(path, database)
    with ThreadServer(service) as server:
        url = server.url
        _submit_noisy_copies(url, tokens, service.challenge.split.y_holdout)
        assert request(url, "", "GET", "/api/final-leaderboard")[:3:2] == (
            409, {"error": "the challenge is still open: the final leaderboard is published at the close",
                  "reason": "open"})
        before = page_request(url, "GET", "/")[2]
        request(url, tokens["organiser"], "POST", "/api/organiser/close")
        board = request(url, "", "GET", "/api/final-leaderboard")[2]
        page = page_request(url, "GET", "/")[2].decode()
        public = request(url, "", "GET", "/api/leaderboard")[2]
        final = request(url, tokens["organiser"], "GET", "/api/organiser/final")[2]
        (tmp_path / "losses.parquet").write_bytes(request(url, tokens["organiser"], "GET",
                                                          "/api/organiser/private-losses")[2])
    assert b"final-leaderboard" not in before and b'id="leaderboard"' in before
    assert [row["team"] for row in board["teams"]] == [row["team"] for row in final["teams"]]
    assert [row["private"] for row in board["teams"]] == [row["private"] for row in final["teams"]]
    assert [row["rank"] for row in board["teams"]] == [row["private_rank"] for row in final["teams"]]
    assert [row["public_rank"] for row in board["teams"]] == [row["public_rank"] for row in final["teams"]]
    assert main(["stats", "rank-certificate", str(tmp_path / "losses.parquet"), "--format", "json"]) == 0
    certified = json.loads(capsys.readouterr().out)
    by_team = {row["team"]: row for row in certified["ranking"]}
    for row in board["teams"]:
        expected = by_team[row["team"]]
        assert (row["low"], row["high"], row["rank_low"], row["rank_high"], row["arena_rank"], row["p_best"]) == (
            expected["score_low"], expected["score_high"], expected["rank_low"], expected["rank_high"],
            expected["arena_rank"], expected["p_best"])
    assert board["certificate"]["p_winner_best"] == certified["p_winner_best"]
    assert board["certificate"]["fewest_removals"]["count"] == certified["fewest_removals"]["count"]
    assert 0 < board["certificate"]["p_winner_best"] <= 1 and board["teams"][0]["rank_low"] == 1
    assert "rank" in public["teams"][0] and "private" not in public["teams"][0], "the API's public board is unchanged"
    shown = re.findall(r"<tr><td>(\d+)</td><td>([^<]+)</td><td class=\"number\">([^<]+)</td>"
                       r"<td class=\"number\">\[([^,]+), ([^\]]+)\]</td><td class=\"number\">([^<]+)</td>"
                       r"<td class=\"number\">([^<]+)</td>", page)
    assert [(team, rank) for rank, team, *_ in shown] == [(row["team"], str(row["rank"])) for row in board["teams"]]
    for (_, _, private, low, high, ranks, p_best), row in zip(shown, board["teams"]):
        assert float(private) == pytest.approx(row["private"], abs=5e-5)
        assert float(low) == pytest.approx(row["low"], abs=5e-5) and float(high) == pytest.approx(row["high"], abs=5e-5)
        shown_range = [str(row["rank_low"])] + ([str(row["rank_high"])] if row["rank_high"] != row["rank_low"] else [])
        assert ranks.split("–") == shown_range
        assert p_best == f"{row['p_best']:.3f}"


def test_the_board_is_computed_once_and_again_when_the_log_moves_on(tmp_path, monkeypatch):
    """Closed by the clock at ``end``: the first request computes the board, the next ones (and a
    restarted server) read it; moving ``end`` later reopens the challenge, and a new submission makes
    the next close compute it again."""
    now = datetime(2030, 1, 10, tzinfo=timezone.utc)
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nstart = 2030-01-01T00:00:00Z\n"
                                                  "end = 2030-01-20T00:00:00Z")
    url = sqlite_url(tmp_path / "log.sqlite")
    service, tokens = open_service(path, url)
    service.clock = lambda: now
    computed = []
    real = final_board.final_board
    monkeypatch.setattr(final_board, "final_board", lambda *args: computed.append(1) or real(*args))
    with ThreadServer(service) as server:
        _submit_noisy_copies(server.url, tokens, service.challenge.split.y_holdout)
        assert service.public_final() is None
        now = datetime(2030, 1, 21, tzinfo=timezone.utc)
        first = service.public_final()
        assert service.public_final() is first and computed == [1]
        restarted, _ = open_service(path, url)
        restarted.clock = lambda: now
        assert restarted.public_final() == first and computed == [1], "read from the log, not computed again"
        path.write_text(path.read_text().replace("2030-01-20", "2030-02-20"))
        reopened, _ = open_service(path, url)
        reopened.clock = lambda: now
        server.app = None
        with ThreadServer(reopened) as again:
            assert reopened.public_final() is None
            upload(again.url, tokens["alpha"], np.ones((1, 200)))
        now = datetime(2030, 2, 21, tzinfo=timezone.utc)
        second = reopened.public_final()
    assert computed == [1, 1] and second["teams"] != first["teams"]
    assert {row["team"]: row["submissions"] for row in second["teams"]}["alpha"] == 4


def test_the_organiser_s_linked_policy_is_the_public_board_s(tmp_path):
    path = write_challenge(tmp_path, n=200, rules="per_day = 1000\naccounts = 2\nlink = true")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    labels = service.challenge.split.y_holdout
    with ThreadServer(service) as server:
        copy = np.where(np.random.default_rng(1).random(200) < 0.1, 1 - labels, labels)[None]
        for team in ("alpha", "beta"):
            upload(server.url, tokens[team], copy)
        upload(server.url, tokens["gamma"], (1 - labels)[None])
        status, _, answer = request(server.url, tokens["organiser"], "POST", "/api/organiser/close?linked=sideways")
        assert status == 400 and "linked must be one of flag, merge, disqualify" in answer["error"]
        closed = request(server.url, tokens["organiser"], "POST", "/api/organiser/close?linked=disqualify")[2]
        board = request(server.url, "", "GET", "/api/final-leaderboard")[2]
        page = page_request(server.url, "GET", "/")[2]
        again = request(server.url, tokens["organiser"], "POST", "/api/organiser/close?linked=flag")[2]
        flagged = request(server.url, "", "GET", "/api/final-leaderboard")[2]
    assert board["linked"] == "disqualify" and board["disqualified"] == ["alpha", "beta"]
    assert [row["team"] for row in board["teams"]] == ["gamma"]
    assert b"Not ranked (linked accounts): alpha, beta." in page
    assert again == closed, "closing again changes only the public board's policy"
    assert flagged["linked"] == "flag" and sorted(row["team"] for row in flagged["teams"]) == ["alpha", "beta", "gamma"]


def test_the_organiser_changes_the_public_board_s_linked_policy_on_the_page_only_after_the_close(tmp_path):
    """A challenge the clock closed, or one closed under the wrong policy: the organiser's page
    changes the public board's policy, and never closes an open challenge doing so."""
    path = write_challenge(tmp_path, n=200, rules="per_day = 1000\naccounts = 2\nlink = true")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    labels = service.challenge.split.y_holdout
    with ThreadServer(service) as server:
        for team in ("alpha", "beta"):
            upload(server.url, tokens[team], labels[None])
        upload(server.url, tokens["gamma"], (1 - labels)[None])
        organiser = Browser(server.url).sign_in(tokens["organiser"])
        early = organiser.post("/public-linked", {"linked": "disqualify"})
        still_open = service.closed_at()
        assert organiser.post("/close", {"confirm": "yes", "linked": "disqualify"})[0] == 200
        closed_at = service.closed_at()
        page = organiser.get("/organiser")[2]
        sideways = organiser.post("/public-linked", {"linked": "sideways"})
        merged = organiser.post("/public-linked", {"linked": "merge"})
        board = request(server.url, "", "GET", "/api/final-leaderboard")[2]
        team = Browser(server.url).sign_in(tokens["gamma"]).post("/public-linked", {"linked": "flag"})
    assert early[0] == 409 and b"the challenge is still open" in early[2] and still_open is None
    assert re.search(rb'id="public-policy">disqualify<', page)
    assert sideways[0] == 422 and b"linked must be one of flag, merge, disqualify" in sideways[2]
    assert merged[0] == 200 and re.search(rb'id="public-policy">merge<', merged[2])
    assert board["linked"] == "merge" and board["disqualified"] == [] and service.closed_at() == closed_at
    assert team[0] == 401 and service.public_linked() == "merge"


def test_a_metric_that_does_not_split_into_samples_gets_intervals_and_no_removal_search(tmp_path):
    path = write_challenge(tmp_path, n=200, scorer="roc-auc", rules="per_day = 10")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        _submit_noisy_copies(server.url, tokens, service.challenge.split.y_holdout, real=True)
        request(server.url, tokens["organiser"], "POST", "/api/organiser/close")
        board = request(server.url, "", "GET", "/api/final-leaderboard")[2]
        page = page_request(server.url, "GET", "/")[2]
    removal = board["certificate"]["fewest_removals"]
    assert removal["count"] is None and removal["method"].startswith("not searched: the roc-auc is not a mean")
    assert all(row["low"] <= row["private"] <= row["high"] for row in board["teams"])
    assert board["certificate"]["winner"] == board["teams"][0]["team"] and b"P(best)" in page


def test_a_board_without_teams_and_one_without_a_certificate(tmp_path, monkeypatch):
    path = write_challenge(tmp_path, n=200, scorer="pearson", rules="per_day = 10")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    service.close()
    assert service.public_final()["teams"] == []
    assert b"No team submitted." in page_request_of(service, "/")
    other = write_challenge(tmp_path / "other", n=200, scorer="pearson", rules="per_day = 10")
    service, tokens = open_service(other, sqlite_url(tmp_path / "other.sqlite"))
    constant_on_final = np.arange(200.0)
    constant_on_final[service.challenge.split.final_rows] = 0.0
    with ThreadServer(service) as server:
        status, answer = upload(server.url, tokens["alpha"], constant_on_final[None])
        assert status == 422 and "the pearson score of submission 0 is nan" in answer["error"], "not a 500"
        assert upload(server.url, tokens["beta"], np.arange(200.0)[None])[0] == 201
    service.close()

    def uncertifiable(*_args, **_kwargs):
        raise ValueError("the pearson is undefined in every bootstrap resample")

    monkeypatch.setattr(final_board, "certify_ranking", uncertifiable)
    board = service.public_final()
    assert board["certificate"] is None and [row["team"] for row in board["teams"]] == ["beta"]
    assert board["note"] == "no rank certificate: the pearson is undefined in every bootstrap resample"
    page = page_request_of(service, "/")
    assert b"no rank certificate" in page and b"P(best)" not in page


def page_request_of(service, path: str) -> bytes:
    with ThreadServer(service) as server:
        return page_request(server.url, "GET", path)[2]


def test_the_close_by_the_clock_needs_no_organiser(tmp_path):
    path = write_challenge(tmp_path, n=200, rules="per_day = 10\nend = 2030-01-02T00:00:00Z")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    service.clock = lambda: datetime(2030, 1, 1, tzinfo=timezone.utc)
    with ThreadServer(service) as server:
        upload(server.url, tokens["alpha"], np.zeros((1, 200)))
        service.clock = lambda: datetime(2030, 1, 2, tzinfo=timezone.utc) + timedelta(microseconds=1)
        page = page_request(server.url, "GET", "/")[2]
    assert b"final-leaderboard" in page and b"The challenge closed at 2030-01-02T00:00:00Z" in page
    assert "close" not in {event.kind for event in service.storage.events()}, "a close by the clock is no one's action"


def test_the_serve_page_states_the_board_s_resamples_and_level():
    from ladderlab.final_rankings.certificate import LEVEL, REPLICATES
    from tests.docs_helpers import ROOT

    text = " ".join((ROOT / "docs" / "serve.md").read_text().split())
    assert f"from {REPLICATES:,} bootstrap resamples of the private rows" in text
    assert f"the {LEVEL:.0%} interval of its score" in text
